/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wbjob.c -- the write-back of one segment (writeback.c decides when):
 * its current dirty versions marked under write-back, read from the device
 * a window at a time, written to the origin, the origin flushed, then
 * marked clean (or dirty again when the origin failed).
 *
 * It is a job that lives across steps: its windows' device reads and
 * origin writes, then the origin's flush, are requests in flight, so that
 * without threads (the host's wc_poll drives the cache) a step submits or
 * reaps and returns -- the epoll example's loop on the block medium spent
 * 5-20 ms per step waiting for a slow origin -- while the thread and
 * wc_writeback wait for each.  One job at a time (under wb.step): segments
 * reach the origin in ring order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"
#include "writeback/writeback.h"

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
	size_t src[WC_BLK_WB_WINDOW];   /* where each item's data lands in the buffer */
	struct wc_blk_rd_batch rb;
	bool flushing;
	struct wb_req flush;
	atomic_uint pending;         /* requests out; last touched by done() */
	struct wb_req req[WC_BLK_WB_WINDOW];
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

	while (k < n && k < WC_BLK_WB_WINDOW && (!k || it[k].where > it[k - 1].where)) {
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
 * is done again synchronously by a caller that may wait (its message names
 * it); without `wait` (the host's loop) it fails the attempt, retried with
 * backoff.  The window's items, or -errno. */
static int window_end(struct wc_cache *c, struct wb_job *j, bool wait)
{
	unsigned k = j->k;
	struct wc_blk *b = c->blk;
	int ret = j->submit_err;

	for (unsigned i = 0; i < j->nr && !ret; i++) {
		struct wb_req *r = &j->req[i];
		size_t len = r->iov.iov_len;

		if (r->res == (ssize_t)len)
			continue;
		if (!wait)
			ret = r->res < 0 ? wc_err_sys((int)r->res, "origin %s: write-back write of %zu bytes at %llu",
			                              wc_origin_describe(&c->origin), len,
			                              (unsigned long long)r->io.offset)
			                 : wc_err(-EIO, "origin %s: write-back write of %zu bytes at %llu: %zd bytes "
			                          "written", wc_origin_describe(&c->origin), len,
			                          (unsigned long long)r->io.offset, r->res);
		else if (r->res > 0 && (size_t)r->res < len)
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

int wc_blk_wb_segment(struct wc_cache *c, bool wait)
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
			ret = window_end(c, j, wait);
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
	return window_end(c, j, true);
}

void wc_blk_wb_job_settle(struct wc_cache *c)
{
	if (c->blk->wb.job->it)
		wc_blk_wb_segment(c, true);
}

int wc_blk_wb_job_new(struct wc_cache *c)
{
	c->blk->wb.job = calloc(1, sizeof(*c->blk->wb.job));
	if (!c->blk->wb.job)
		return wc_err(-ENOMEM, "%s: write-back state", c->cache_path);
	return 0;
}
