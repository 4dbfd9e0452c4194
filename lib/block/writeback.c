/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writeback.c -- the block medium's thread, one step at a time:
 *
 *   autocommit  a device flush once writes without FUA have waited
 *               autocommit_ms, or autocommit_blocks of them (65,536 by
 *               default here, dm-writecache's ssd-mode default);
 *   summaries   of the closed segments whose records are all done;
 *   write-back  of the oldest segment not yet clean, whole: its current
 *               versions read from the device and written to the origin,
 *               the origin flushed, the versions marked clean -- when dirty
 *               blocks pass high_watermark % of the cache's blocks (down to
 *               low_watermark %), when the ring runs short of free
 *               segments and none is clean, when the oldest one is older
 *               than max_age_ms, in cleaner mode, or when asked
 *               (wc_writeback);
 *   reclaim     of the tail once it is clean and free segments run short:
 *               its versions leave the index, the state records the new
 *               tail (synced), and the segment is free for the head.
 *
 * Segments are written back in ring order, so a version never reaches the
 * origin after a newer one of the same block.  A range's write-back
 * (range.c) writes current versions out of that order -- the newest, so
 * still never an older over a newer -- and leaves them clean: a segment's
 * write-back skips what is clean.  The origin's failures are
 * retried with backoff and do not stop the cache: what it cannot take stays
 * dirty in the ring, and the streak is the pmem write-back's
 * (writeback/outage.c): its messages, its stats, and -ENOSPC for a writer
 * once the ring is full of it.  The cache device's own failures -- a read
 * of the data to write back, a summary, the state -- are sticky.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"
#include "writeback/writeback.h"

#define WB_MAX_BLOCKS 256u

static unsigned autocommit_blocks(struct wc_cache *c)
{
	/* The pmem default (64) would flush a disk every 64 writes. */
	return c->cfg.autocommit_blocks == 64 ? 65536u : c->cfg.autocommit_blocks;
}

static bool autocommit_due(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	uint64_t n = atomic_load_explicit(&b->unflushed_blocks, memory_order_relaxed);

	if (!n)
		return false;
	return n >= autocommit_blocks(c) ||
	       wc_now_ms(c) - atomic_load_explicit(&b->first_unflushed_ms, memory_order_relaxed) >=
	               c->cfg.autocommit_ms;
}

/* Segments holding dirty versions (the head counts once it has records). */
static uint64_t dirty_segments(struct wc_blk *b)
{
	struct wc_blk_seg *h = &b->log.segs[b->log.head % b->g.n_segments];
	uint64_t last = h->used ? b->log.head : b->log.head - 1;

	return last + 1 > b->log.clean ? last + 1 - b->log.clean : 0;
}

/* Dirty versions: current, not yet on the origin (wc_stats' dirty_blocks).
 * The watermarks count these, not the ring's segments: a segment whose
 * blocks were mostly written again holds little dirty data, and written
 * back early it sends the origin versions a later write supersedes. */
static uint64_t dirty_versions(struct wc_cache *c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < WC_SHARDS; i++)
		n += __atomic_load_n(&c->shards[i].current, __ATOMIC_RELAXED);
	return n;
}

static bool wb_due(struct wc_cache *c, bool all, bool *active)
{
	struct wc_blk *b = c->blk;
	uint64_t n = b->g.n_segments, free_segs, reserve = n / 8 > 2 ? n / 8 : 2;
	uint64_t dirty = dirty_versions(c), blocks = c->layout.n_blocks;
	struct wc_blk_seg *sg;
	bool due;

	pthread_mutex_lock(&b->log.lock);
	free_segs = wc_blk_free_segments(c);
	sg = &b->log.segs[b->log.clean % n];
	if (!dirty_segments(b)) {
		*active = false;
		pthread_mutex_unlock(&b->log.lock);
		return false;
	}
	if (dirty * 100 >= (uint64_t)c->cfg.high_watermark * blocks)
		*active = true;
	else if (dirty * 100 <= (uint64_t)c->cfg.low_watermark * blocks)
		*active = false;
	due = all || *active || wc_writeback_cleaning(c) ||
	      /* a failure streak ends only with a segment that gets through */
	      wc_wb_origin_failing(c) ||
	      /* the ring is short of room and nothing clean is left to reclaim */
	      ((free_segs < reserve || b->log.waiters) && b->log.tail == b->log.clean) ||
	      (c->cfg.max_age_ms && sg->closed && wc_now_ms(c) - sg->closed_ms >= c->cfg.max_age_ms);
	pthread_mutex_unlock(&b->log.lock);
	return due;
}

/* Mark the current dirty versions of segment sg as under write-back. */
static unsigned collect(struct wc_cache *c, struct wc_blk_seg *sg, struct wc_blk_wb_item *out)
{
	struct wc_blk *b = c->blk;
	uint64_t lo = wc_blk_seg_offset(&b->g, sg->seg), hi = lo + b->g.seg_data_bytes;
	unsigned n = 0;

	for (uint32_t i = 0; i < sg->n_live; i++) {
		struct wc_entry *e = &c->e[sg->live[i].idx];
		uint64_t origin = __atomic_load_n(&e->origin, __ATOMIC_RELAXED);
		struct wc_shard *s;

		if (origin >= c->origin_blocks)
			continue;
		s = wc_shard_of(c, origin);
		wc_spin_lock(&s->lock);
		if (e->origin == origin && (uint32_t)e->seq == sg->live[i].seq_lo &&
		    (e->flags & (WC_E_CURRENT | WC_E_CLEAN | WC_E_WB)) == WC_E_CURRENT &&
		    wc_blk_where(e) >= lo && wc_blk_where(e) < hi) {
			wc_entry_set_flags(e, e->flags | WC_E_WB);
			out[n++] = (struct wc_blk_wb_item){ sg->live[i].idx, origin, wc_blk_where(e) };
		}
		wc_spin_unlock(&s->lock);
	}
	return n;
}

void wc_blk_wb_finish(struct wc_cache *c, const struct wc_blk_wb_item *it, unsigned n, bool ok)
{
	uint32_t dead[256];
	unsigned n_dead = 0;

	for (unsigned i = 0; i < n; i++) {
		struct wc_entry *e = &c->e[it[i].idx];
		struct wc_shard *s = wc_shard_of(c, it[i].origin);

		wc_spin_lock(&s->lock);
		if (e->flags & WC_E_SUPERSEDED) {
			wc_entry_set_flags(e, 0);
			dead[n_dead++] = it[i].idx;
		} else if (ok) {
			wc_entry_set_flags(e, (e->flags & ~WC_E_WB) | WC_E_CLEAN);
			s->current--;
		} else {
			wc_entry_set_flags(e, e->flags & ~WC_E_WB);
		}
		wc_spin_unlock(&s->lock);
		if (n_dead == 256) {
			wc_free_batch(c, dead, n_dead);
			n_dead = 0;
		}
	}
	wc_free_batch(c, dead, n_dead);
}

/* Reads of one window that a gap of this many bytes or less does not
 * split: reading the gap (headers, superseded versions) costs less than
 * one more request.  A segment written back soon after it was written is
 * dense (one sequential read: one 4 KiB read per version drained 12 MB/s
 * where raw libaio wrote 227); one written back after most of its blocks
 * were written again is sparse (a hot set a quarter of the ring: about 3 %
 * of its versions current), and one read over all of it read 400-600 MB/s
 * from the cache device to write back 20. */
#define WB_READ_GAP (16u << 10)

/*
 * A segment's write-back is a job that lives across steps: its windows'
 * origin writes, then the origin's flush, are requests in flight, so that
 * without threads (the host's wc_poll drives the cache) a step submits or
 * reaps and returns -- the epoll example's loop on the block medium spent
 * 5-20 ms per step waiting for a slow origin -- while the thread and
 * wc_writeback wait for each.  One job at a time (under wb.step): segments
 * reach the origin in ring order.
 */
struct wb_req {
	struct wc_origin_io io; /* first: done() gets it */
	struct iovec iov;
	struct wb_job *job;
	ssize_t res;
};

struct wb_job {
	uint64_t seg;
	struct wc_blk_wb_item *it;          /* NULL: no job */
	unsigned n, next;            /* its items; the first not yet written */
	unsigned k, nr;              /* the window out: its items, its requests */
	int submit_err;              /* the window's submission stopped on it */
	const struct wc_blk_wb_item *win; /* the window's items */
	bool reading;                /* its device reads are out */
	size_t src[WB_MAX_BLOCKS];   /* where each item's data lands in the buffer */
	struct wc_blk_rd_batch rb;
	bool flushing;
	struct wb_req flush;
	atomic_uint pending;         /* requests out; last touched by done() */
	struct wb_req req[WB_MAX_BLOCKS];
};

/* In whatever thread polls the origin. */
static void req_done(struct wc_origin_io *io, ssize_t res)
{
	struct wb_req *r = (struct wb_req *)io;

	r->res = res;
	atomic_fetch_sub_explicit(&r->job->pending, 1, memory_order_release);
}

static int req_submit(struct wc_cache *c, struct wb_job *j, struct wb_req *r)
{
	int ret;

	r->io.done = req_done;
	r->io.priv = r;
	r->job = j;
	r->res = 0;
	atomic_fetch_add_explicit(&j->pending, 1, memory_order_relaxed);
	ret = wc_origin_submit(&c->origin, &r->io);
	if (ret)
		atomic_fetch_sub_explicit(&j->pending, 1, memory_order_relaxed);
	return ret;
}

/* Reads of one window that a gap of this many bytes or less does not
 * split: reading the gap (headers, superseded versions) costs less than
 * one more request.  A segment written back soon after it was written is
 * dense (one sequential read: one 4 KiB read per version drained 12 MB/s
 * where raw libaio wrote 227); one written back after most of its blocks
 * were written again is sparse (a hot set a quarter of the ring: about 3 %
 * of its versions current), and one read over all of it read 400-600 MB/s
 * from the cache device to write back 20. */
#define WB_READ_GAP (16u << 10)

/* Start reading a window of items -- their data, runs closer than
 * WB_READ_GAP read as one, all reads submitted together; window_send
 * sends them to the origin once read. */
static void window_read(struct wc_cache *c, struct wb_job *j, const struct wc_blk_wb_item *it, unsigned n)
{
	struct wc_blk *b = c->blk;
	uint32_t bs = c->layout.block_size;
	struct wc_blk_rd *rd = j->rb.rd;
	size_t used = 0;
	unsigned n_rd = 0, k = 0;
	char *buf = b->wb.buf;

	while (k < n && k < WB_MAX_BLOCKS && (!k || it[k].where > it[k - 1].where)) {
		struct wc_blk_rd *last = n_rd ? &rd[n_rd - 1] : NULL;
		uint64_t w = it[k].where;

		if (last && w - (last->off + last->len) <= WB_READ_GAP) {
			size_t grow = (size_t)(w + bs - (last->off + last->len));

			if (used + grow > b->wb.buf_len)
				break;
			last->len += grow;
			used += grow;
		} else {
			if (n_rd == WC_BLK_RD_MAX || used + bs > b->wb.buf_len)
				break;
			rd[n_rd++] = (struct wc_blk_rd){ buf + used, bs, w };
			last = &rd[n_rd - 1];
			used += bs;
		}
		j->src[k++] = (size_t)((char *)last->buf - buf) + (size_t)(w - last->off);
	}
	j->win = it;
	j->k = k;
	j->nr = 0;
	j->submit_err = 0;
	j->rb.n = n_rd;
	wc_blk_pread_start(c, b->wb.ctx, &j->rb, "write-back read");
	j->reading = true;
}

/* The window is read: send its items to the origin, runs contiguous
 * there as one request.  A refused submission is kept for window_end
 * (the requests sent before it are out). */
static void window_send(struct wc_cache *c, struct wb_job *j)
{
	uint32_t bs = c->layout.block_size;
	const struct wc_blk_wb_item *it = j->win;
	char *buf = c->blk->wb.buf;
	unsigned nr = 0;
	int ret;

	j->reading = false;
	if (j->rb.err) {
		/* Dirty data the cache cannot read back: its own medium's
		 * failure, not the origin's. */
		wc_set_error(c, -EIO, wc_errmsg());
		j->submit_err = j->rb.err;
		return;
	}
	for (unsigned i = 0; i < j->k; i++) {
		/* Packed to the front, in order (each moves down, never over
		 * one not yet moved): a run of origin blocks written one after
		 * the other becomes one origin request. */
		char *data = buf + (size_t)i * bs;
		struct iovec *last = nr ? &j->req[nr - 1].iov : NULL;

		if (j->src[i] != (size_t)i * bs)
			memmove(data, buf + j->src[i], bs);
		if (last && j->req[nr - 1].io.offset + last->iov_len == (it[i].origin << c->block_shift) &&
		    (char *)last->iov_base + last->iov_len == data &&
		    last->iov_len < ((size_t)c->cfg.writeback_max_io_kib << 10)) {
			last->iov_len += bs;
			continue;
		}
		j->req[nr].iov = (struct iovec){ data, bs };
		j->req[nr].io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = &j->req[nr].iov,
		                                       .iovcnt = 1, .offset = it[i].origin << c->block_shift };
		nr++;
	}
	/* All out first: a remote origin pays its latency once per window. */
	for (unsigned i = 0; i < nr; i++) {
		ret = req_submit(c, j, &j->req[i]);
		if (ret) {
			j->submit_err = wc_err(ret, "origin %s: write-back write at %llu refused: %s",
			                       wc_origin_describe(&c->origin),
			                       (unsigned long long)j->req[i].io.offset, wc_errmsg());
			break;
		}
		j->nr++;
	}
}

/* The window's requests are all back: one that failed or came back short
 * is done again synchronously (its message names it), as a failure that
 * lasts is a failed attempt.  The window's items, or -errno. */
static int window_end(struct wc_cache *c, struct wb_job *j)
{
	unsigned k = j->k;
	struct wc_blk *b = c->blk;
	int ret = j->submit_err;

	for (unsigned i = 0; i < j->nr && !ret; i++) {
		struct wb_req *r = &j->req[i];
		size_t len = r->iov.iov_len;

		if (r->res == (ssize_t)len)
			continue;
		if (r->res > 0 && (size_t)r->res < len)
			ret = wc_origin_rw_sync(&c->origin, WC_ORIGIN_WRITE, (char *)r->iov.iov_base + r->res,
			                        len - (size_t)r->res, r->io.offset + (uint64_t)r->res);
		else
			ret = wc_origin_rw_sync(&c->origin, WC_ORIGIN_WRITE, r->iov.iov_base, len, r->io.offset);
	}
	if (!ret) {
		b->wb.ios += j->nr;
		b->wb.bytes += (uint64_t)k * c->layout.block_size;
	}
	j->nr = j->k = 0;
	j->submit_err = 0;
	return ret ? ret : (int)k;
}

/* True once none of the job's requests is out; with `wait`, waits. */
static bool job_reaped(struct wc_cache *c, struct wb_job *j, bool wait)
{
	static const struct timespec pause = { 0, 100 * 1000 };

	while (atomic_load_explicit(&j->pending, memory_order_acquire)) {
		int r = wc_origin_poll(&c->origin, wait, wait ? 1000000 : 0);

		if (!wait)
			return !atomic_load_explicit(&j->pending, memory_order_acquire);
		if (r < 0)
			nanosleep(&pause, NULL);
	}
	return true;
}

static void note_failure(struct wc_cache *c, int err, unsigned blocks)
{
	struct wc_blk *b = c->blk;

	pthread_mutex_lock(&b->wb.lock);
	b->wb.errors++;
	pthread_mutex_unlock(&b->wb.lock);
	wc_wb_attempt_failed(c, err, blocks);
}

/* Begin the write-back of the oldest dirty segment.  1: begun, 0: not
 * ready yet (records in flight, or its summary not written), -errno. */
static int job_begin(struct wc_cache *c, struct wb_job *j)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_seg *sg;
	uint64_t seg;
	int ret;

	pthread_mutex_lock(&b->log.lock);
	seg = b->log.clean;
	sg = &b->log.segs[seg % b->g.n_segments];
	if (seg > b->log.head || sg->seg != seg) {
		pthread_mutex_unlock(&b->log.lock);
		return 0;
	}
	if (!sg->closed && sg->used)
		wc_blk_seg_close_locked(c, sg); /* the head: written back whole */
	if (!sg->closed && !sg->used && seg == b->log.head) {
		pthread_mutex_unlock(&b->log.lock);
		return 0;
	}
	pthread_mutex_unlock(&b->log.lock);
	/* Its summary is written once its records are done and durable: the
	 * origin then only ever gets what the cache holds durably. */
	if (!sg->summarized) {
		ret = wc_blk_write_summaries(c);
		if (ret < 0)
			return ret;
		if (!sg->summarized)
			return 0;
	}
	j->it = malloc(sg->n_live * sizeof(*j->it) + 1);
	if (!j->it)
		return wc_err(-ENOMEM, "%s: write-back list", c->cache_path);
	j->seg = seg;
	j->n = collect(c, sg, j->it);
	j->next = j->k = j->nr = 0;
	j->submit_err = 0;
	j->flushing = false;
	j->reading = false;
	__atomic_store_n(&b->wb.job_out, true, __ATOMIC_RELAXED);
	return 1;
}

/* The job's end: its versions clean (ret 0) or dirty again. */
static int job_end(struct wc_cache *c, struct wb_job *j, int ret)
{
	struct wc_blk *b = c->blk;
	unsigned n = j->n;

	wc_blk_wb_finish(c, j->it, n, ret == 0);
	free(j->it);
	j->it = NULL;
	__atomic_store_n(&b->wb.job_out, false, __ATOMIC_RELAXED);
	if (ret) {
		if (!wc_has_error(c))
			note_failure(c, ret, n);
		return ret;
	}
	wc_wb_attempt_ok(c);
	pthread_mutex_lock(&b->log.lock);
	b->log.clean = j->seg + 1;
	pthread_mutex_unlock(&b->log.lock);
	return 1;
}

/* Write back the oldest dirty segment, or go on with the one begun.  1:
 * done, 0: not ready yet, -EINPROGRESS: its requests are out (without
 * `wait`), -errno. */
static int writeback_segment(struct wc_cache *c, bool wait)
{
	struct wb_job *j = c->blk->wb.job;
	int ret;

	if (!j->it) {
		ret = job_begin(c, j);
		if (ret <= 0)
			return ret;
		if (j->n)
			window_read(c, j, j->it, j->n); /* a failure: window_end's */
	}
	for (;;) {
		if (j->reading) {
			if (!wc_blk_pread_reaped(c, c->blk->wb.ctx, &j->rb, wait, "write-back read"))
				return -EINPROGRESS;
			window_send(c, j);
		}
		if (!job_reaped(c, j, wait))
			return -EINPROGRESS;
		if (j->flushing)
			return job_end(c, j, j->flush.res < 0 ? (int)j->flush.res : 0);
		if (j->nr || j->submit_err) {
			ret = window_end(c, j);
			if (ret < 0)
				return job_end(c, j, ret);
			j->next += (unsigned)ret;
		}
		if (j->next < j->n) {
			window_read(c, j, j->it + j->next, j->n - j->next);
			continue;
		}
		if (!j->n)
			return job_end(c, j, 0);
		if (wc_origin_async_flush(&c->origin)) {
			j->flush.io = (struct wc_origin_io){ .op = WC_ORIGIN_FLUSH };
			ret = req_submit(c, j, &j->flush);
			if (!ret) {
				j->flushing = true;
				continue;
			}
			if (ret != -EINVAL && ret != -EOPNOTSUPP)
				return job_end(c, j, ret);
			/* Refused (an old kernel's aio has no fdsync): flush()
			 * here. */
		}
		return job_end(c, j, wc_origin_flush(&c->origin));
	}
}

int wc_blk_wb_write_window(struct wc_cache *c, const struct wc_blk_wb_item *it, unsigned n)
{
	struct wb_job *j = c->blk->wb.job; /* idle: wc_blk_wb_job_settle */

	window_read(c, j, it, n);
	wc_blk_pread_reaped(c, c->blk->wb.ctx, &j->rb, true, "write-back read");
	window_send(c, j);
	job_reaped(c, j, true);
	return window_end(c, j);
}

void wc_blk_wb_job_settle(struct wc_cache *c)
{
	if (c->blk->wb.job->it)
		writeback_segment(c, true);
}

static bool reclaim_due(struct wc_cache *c, bool all)
{
	struct wc_blk *b = c->blk;
	uint64_t n = b->g.n_segments, reserve = n / 8 > 2 ? n / 8 : 2;
	bool due;

	(void)all;
	pthread_mutex_lock(&b->log.lock);
	due = b->log.tail < b->log.clean && b->log.tail < b->log.head &&
	      (wc_blk_free_segments(c) < reserve || b->log.waiters);
	pthread_mutex_unlock(&b->log.lock);
	return due;
}

/* Reclaim the tail segment (clean): its versions leave the cache. */
static int reclaim_tail(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_seg *sg = &b->log.segs[b->log.tail % b->g.n_segments];
	uint64_t lo = wc_blk_seg_offset(&b->g, sg->seg), hi = lo + b->g.seg_data_bytes, evicted = 0;
	uint32_t dead[256];
	unsigned n_dead = 0;
	int ret;

	for (uint32_t i = 0; i < sg->n_live; i++) {
		uint32_t idx = sg->live[i].idx;
		struct wc_entry *e = &c->e[idx];
		uint64_t origin = __atomic_load_n(&e->origin, __ATOMIC_RELAXED);
		struct wc_shard *s;

		if (origin >= c->origin_blocks)
			continue;
		s = wc_shard_of(c, origin);
		wc_spin_lock(&s->lock);
		if (e->origin == origin && (uint32_t)e->seq == sg->live[i].seq_lo &&
		    (e->flags & WC_E_INDEXED) && wc_blk_where(e) >= lo && wc_blk_where(e) < hi) {
			WC_ASSERT((e->flags & (WC_E_CLEAN | WC_E_WB)) == WC_E_CLEAN);
			wc_blk_drop(c, s, idx, dead, &n_dead);
			evicted++;
		}
		wc_spin_unlock(&s->lock);
		if (n_dead == 256) {
			wc_free_batch(c, dead, n_dead);
			n_dead = 0;
		}
	}
	wc_free_batch(c, dead, n_dead);
	/* Write-back skipped the versions a newer record superseded: that
	 * record must be durable before the segment's copy is gone (a crash
	 * would bring back the origin's older version of the block). */
	ret = wc_blk_flush(c, false);
	/* The entries are free (their generations moved) before the new tail
	 * is durable and the segment can be written again. */
	if (!ret)
		ret = wc_blk_state_write(c, 0, sg->seg + 1);
	if (ret) {
		wc_set_error(c, -EIO, wc_errmsg());
		return ret;
	}
	atomic_fetch_add_explicit(&b->st.segments_reclaimed, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->st.evicted, evicted, memory_order_relaxed);
	return 1;
}

int wc_blk_wb_step(struct wc_cache *c, bool all)
{
	struct wc_blk *b = c->blk;
	int units = 0, ret;

	if (wc_has_error(c))
		return -EIO;
	/* Without threads the records' completions are the host's polls'. */
	ret = wc_blk_aio_poll(c);
	if (ret < 0)
		return ret;
	units += ret > 0;
	pthread_mutex_lock(&b->wb.step);
	if (autocommit_due(c)) {
		ret = wc_blk_flush(c, false);
		if (ret)
			goto out;
		units++;
	}
	ret = wc_blk_write_summaries(c);
	if (ret < 0)
		goto out;
	units += ret;
	ret = 0;
	/* A failing origin is tried again once its backoff passed (the rest
	 * of the step -- autocommit, summaries, reclaim -- goes on);
	 * wc_writeback waits it out. */
	if (all)
		wc_wb_backoff_wait(c);
	b->wb.waiting = false;
	/* A job begun goes on whatever is due now: its versions are marked
	 * under write-back until it ends. */
	while (b->wb.job->it || (!wc_wb_retry_in_ns(c) && wb_due(c, all, &b->wb.active))) {
		ret = writeback_segment(c, all || !c->cfg.no_threads);
		if (ret == -EINPROGRESS) {
			ret = 0;
			break;
		}
		b->wb.waiting = ret == 0;
		if (ret <= 0)
			break;
		units++;
	}
	if (ret < 0 && !all)
		ret = 0; /* retried with backoff; the cache goes on */
	while (ret >= 0 && reclaim_due(c, all)) {
		int r = reclaim_tail(c);

		if (r < 0) {
			ret = r;
			break;
		}
		units++;
	}
out:
	pthread_mutex_unlock(&b->wb.step);
	return ret < 0 ? ret : units;
}

/* Write-back that waits for records in flight is looked at again in a
 * millisecond (aio.c's completions are reaped by the same polls). */
#define WB_NOT_READY_MS 1

int wc_blk_wb_deadline_ms(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	bool active = b->wb.active; /* the step's to change */
	uint64_t unflushed = atomic_load(&b->unflushed_blocks);
	int due = -1;

	if (wc_has_error(c))
		return -1;
	if (autocommit_due(c) || reclaim_due(c, false))
		return 0;
	if (__atomic_load_n(&b->wb.job_out, __ATOMIC_RELAXED))
		return WB_NOT_READY_MS; /* its reads or requests are out */
	if (wb_due(c, false, &active)) {
		uint64_t ns = wc_wb_retry_in_ns(c);

		if (ns)
			return (int)((ns + 999999) / 1000000);
		return b->wb.waiting ? WB_NOT_READY_MS : 0;
	}
	if (unflushed && c->cfg.autocommit_ms) {
		uint32_t since = wc_now_ms(c) - (uint32_t)atomic_load(&b->first_unflushed_ms);

		due = since >= c->cfg.autocommit_ms ? 0 : (int)(c->cfg.autocommit_ms - since);
	}
	if (c->cfg.max_age_ms) {
		struct wc_blk_seg *sg;
		int left = -1;

		pthread_mutex_lock(&b->log.lock);
		sg = &b->log.segs[b->log.clean % b->g.n_segments];
		if (dirty_segments(b) && sg->closed) {
			uint32_t age = wc_now_ms(c) - sg->closed_ms;

			left = age >= c->cfg.max_age_ms ? 0 : (int)(c->cfg.max_age_ms - age);
		}
		pthread_mutex_unlock(&b->log.lock);
		if (left >= 0 && (due < 0 || left < due))
			due = left;
	}
	return due;
}

/* ---- the thread ---------------------------------------------------------- */

void wc_blk_wb_kick(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	pthread_mutex_lock(&b->wb.lock);
	b->wb.kick = true;
	pthread_cond_broadcast(&b->wb.cond);
	pthread_mutex_unlock(&b->wb.lock);
}

static void *wb_thread(void *arg)
{
	struct wc_cache *c = arg;
	struct wc_blk *b = c->blk;

	pthread_mutex_lock(&b->wb.lock);
	while (!b->wb.stop) {
		struct timespec ts;
		uint64_t retry_ms = (wc_wb_retry_in_ns(c) + 999999) / 1000000;
		unsigned wait_ms = retry_ms && retry_ms < 50 ? (unsigned)retry_ms : 50;

		if (!b->wb.kick) {
			ts = wc_clock_deadline_ms(wait_ms);
			pthread_cond_timedwait(&b->wb.cond, &b->wb.lock, &ts);
		}
		if (b->wb.stop)
			break;
		b->wb.kick = false;
		pthread_mutex_unlock(&b->wb.lock);
		wc_blk_wb_step(c, false);
		pthread_mutex_lock(&b->wb.lock);
	}
	pthread_mutex_unlock(&b->wb.lock);
	return NULL;
}

int wc_blk_wb_start(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	/* A window of WB_MAX_BLOCKS versions with their record headers. */
	size_t len = (size_t)WB_MAX_BLOCKS * c->layout.block_size + 2u * (1u << 20);
	int ret;

	b->wb.buf = wc_blk_alloc_buf(c, len);
	if (!b->wb.buf)
		return wc_err(-ENOMEM, "%s: write-back buffer", c->cache_path);
	b->wb.buf_len = len;
	b->wb.job = calloc(1, sizeof(*b->wb.job));
	if (!b->wb.job)
		return wc_err(-ENOMEM, "%s: write-back state", c->cache_path);
	/* Its own context: the records' completions are reaped elsewhere.
	 * Without one (fs.aio-max-nr spent), reads go one by one. */
	if (!b->io && io_setup(WC_BLK_RD_MAX, &b->wb.ctx) < 0)
		b->wb.ctx = 0;
	if (c->cfg.no_threads)
		return 0;
	ret = pthread_create(&b->wb.thread, NULL, wb_thread, c);
	if (ret)
		return wc_err(-ret, "%s: write-back thread", c->cache_path);
	b->wb.running = true;
	return 0;
}

void wc_blk_wb_stop(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	if (!b)
		return;
	if (b->wb.running) {
		pthread_mutex_lock(&b->wb.lock);
		b->wb.stop = true;
		pthread_cond_broadcast(&b->wb.cond);
		pthread_mutex_unlock(&b->wb.lock);
		pthread_join(b->wb.thread, NULL);
		b->wb.running = false;
	}
	if (b->wb.job) {
		/* The host's steps left a segment's requests out: it ends
		 * here, waited for (its reads use the context below). */
		pthread_mutex_lock(&b->wb.step);
		wc_blk_wb_job_settle(c);
		pthread_mutex_unlock(&b->wb.step);
	}
	if (b->wb.ctx) {
		io_destroy(b->wb.ctx);
		b->wb.ctx = 0;
	}
}

int wc_blk_writeback_all(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	int ret;

	for (;;) {
		uint64_t clean, head;
		bool head_empty;

		ret = wc_blk_wb_step(c, true);
		if (ret < 0 && wc_wb_drain_retries(c, ret))
			continue;
		if (ret < 0)
			return ret;
		pthread_mutex_lock(&b->log.lock);
		clean = b->log.clean;
		head = b->log.head;
		head_empty = !b->log.segs[head % b->g.n_segments].used;
		pthread_mutex_unlock(&b->log.lock);
		if (clean > head || (clean == head && head_empty))
			break;
		if (ret == 0 && wc_blk_aio_busy(c) && !wc_blk_aio_reaper(c)) {
			wc_blk_aio_wait(c, 1); /* ours to reap */
		} else if (ret == 0) {
			/* Records of the head still in flight: let them end. */
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
	}
	return wc_origin_flush(&c->origin);
}

void wc_blk_wb_stats(struct wc_cache *c, struct wc_stats *st)
{
	struct wc_blk *b = c->blk;

	pthread_mutex_lock(&b->wb.lock);
	st->writeback_ios = b->wb.ios;
	st->writeback_bytes = b->wb.bytes;
	st->writeback_errors = b->wb.errors;
	pthread_mutex_unlock(&b->wb.lock);
}
