/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writeback.c -- the block medium's thread, or the host's steps without
 * threads, one step at a time:
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
 *               (wc_writeback) -- the segment's job is wbjob.c's;
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
	while (__atomic_load_n(&b->wb.job_out, __ATOMIC_RELAXED) ||
	       (!wc_wb_retry_in_ns(c) && wb_due(c, all, &b->wb.active))) {
		ret = wc_blk_wb_segment(c, all || !c->cfg.no_threads);
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
	/* A window of WC_BLK_WB_WINDOW versions with their record headers. */
	size_t len = (size_t)WC_BLK_WB_WINDOW * c->layout.block_size + 2u * (1u << 20);
	int ret;

	b->wb.buf = wc_blk_alloc_buf(c, len);
	if (!b->wb.buf)
		return wc_err(-ENOMEM, "%s: write-back buffer", c->cache_path);
	b->wb.buf_len = len;
	ret = wc_blk_wb_job_new(c);
	if (ret)
		return ret;
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
		/* The host's steps left a segment's reads or requests out: it
		 * ends here, waited for (its reads use the context below). */
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
