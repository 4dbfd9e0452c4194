/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c -- the ring of segments.
 *
 * A writer reserves room for its record in the open segment (log.lock, a
 * few dozen instructions: a record seq, an offset, its summary entries),
 * then writes with no lock.  Seq and offset are taken together, so record
 * order on the device is seq order: what recovery and write-back rely on.
 *
 * A full segment is closed and the next opened.  A segment may only hold
 * records once the durable state says so (open_limit): recovery reads no
 * segment past it, so it is raised -- one 4 KiB synced write -- a few
 * segments ahead, before a record could land beyond it.
 *
 * A closed segment whose records are all done gets its summary, after one
 * device flush: a summary only ever names records that are durable.  The
 * summary itself is not synced: lost, recovery reads the segment whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"
#include "writeback/writeback.h"

/* Segments opened ahead of the durable state's limit (one state write per
 * this many segments opened). */
#define OPEN_AHEAD 4u

int wc_blk_log_init(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	pthread_mutex_init(&b->log.lock, NULL);
	pthread_mutex_init(&b->log.state_lock, NULL);
	pthread_cond_init(&b->log.space, NULL);
	pthread_cond_init(&b->log.epoch_done, NULL);
	pthread_mutex_init(&b->log.discard_lock, NULL);
	b->log.segs = calloc(b->g.n_segments, sizeof(*b->log.segs));
	if (!b->log.segs)
		return wc_err(-ENOMEM, "%s: %llu segments", c->cache_path,
		              (unsigned long long)b->g.n_segments);
	c->dram_bytes += b->g.n_segments * sizeof(*b->log.segs);
	return 0;
}

void wc_blk_log_fini(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	if (!b->log.segs)
		return;
	for (uint64_t i = 0; i < b->g.n_segments; i++) {
		free(b->log.segs[i].live);
		free(b->log.segs[i].sum);
	}
	free(b->log.segs);
	b->log.segs = NULL;
}

/* Make segment slot `sg` hold segment `seg`, empty. */
int wc_blk_seg_alloc(struct wc_cache *c, struct wc_blk_seg *sg, uint64_t seg)
{
	struct wc_blk *b = c->blk;
	uint32_t cap = (uint32_t)(b->g.seg_data_bytes / b->g.block_size);

	if (!sg->live) {
		sg->live = malloc((size_t)cap * sizeof(*sg->live));
		if (!sg->live)
			return wc_err(-ENOMEM, "%s: segment list", c->cache_path);
		sg->live_cap = cap;
		c->dram_bytes += (size_t)cap * sizeof(*sg->live);
	}
	if (!sg->sum) {
		sg->sum = malloc(b->g.sum_cap * sizeof(*sg->sum));
		if (!sg->sum)
			return wc_err(-ENOMEM, "%s: segment summary", c->cache_path);
	}
	sg->seg = seg;
	sg->used = 0;
	sg->n_live = 0;
	sg->n_sum = 0;
	atomic_store(&sg->pending, 0);
	sg->closed = false;
	sg->summarized = false;
	sg->closed_ms = 0;
	return 0;
}

uint64_t wc_blk_free_segments(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	return b->g.n_segments - (b->log.head - b->log.tail + 1);
}

void wc_blk_seg_close_locked(struct wc_cache *c, struct wc_blk_seg *sg)
{
	if (sg->closed)
		return;
	sg->closed = true;
	sg->closed_ms = wc_now_ms(c);
	if (atomic_load(&sg->pending) == 0)
		wc_blk_wb_kick(c); /* its summary is due */
}

void wc_blk_close_head(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_seg *sg;

	pthread_mutex_lock(&b->log.lock);
	sg = &b->log.segs[b->log.head % b->g.n_segments];
	if (sg->used)
		wc_blk_seg_close_locked(c, sg);
	pthread_mutex_unlock(&b->log.lock);
}

/* Raise the durable open limit above `seg` (log.lock held; dropped and
 * taken again around the write: the caller looks at the head again).
 * Writers that need it meanwhile wait for the state write here. */
static int raise_open_limit(struct wc_cache *c, uint64_t seg)
{
	struct wc_blk *b = c->blk;
	int ret;

	pthread_mutex_unlock(&b->log.lock);
	ret = wc_blk_state_write(c, seg + OPEN_AHEAD, 0);
	pthread_mutex_lock(&b->log.lock);
	return ret;
}

/* Open the segment after the head (log.lock held): waits while the ring is
 * full.  May drop the lock: the caller looks at the head again. */
static int open_next(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	uint64_t next = b->log.head + 1;
	struct wc_blk_seg *sg;
	int ret;

	if (next - b->log.tail >= b->g.n_segments) {
		struct timespec ts;

		if (wc_has_error(c))
			return wc_err(-EIO, "%s: the cache is in error state (%d)", c->cache_path,
			              wc_has_error(c));
		/* The ring is full of what the origin will not take: a failure
		 * older than the writers' patience refuses the write. */
		if (!c->cfg.no_threads) {
			ret = wc_wb_refuse_full(c, "write");
			if (ret)
				return ret;
		}
		atomic_fetch_add_explicit(&b->st.waits_for_space, 1, memory_order_relaxed);
		b->log.waiters++;
		if (c->cfg.no_threads) {
			/* The host drives write-back: its loop's steps, waited
			 * for below, or this thread's when no loop turns (a
			 * failing origin's attempt when it is due). */
			pthread_mutex_unlock(&b->log.lock);
			ret = wc_wb_room_wait(c, "write");
			/* 0: a step taken here, look again at once; 1: a
			 * loop drives, wait below. */
			if (!ret)
				ret = c->room_step(c, "write");
			pthread_mutex_lock(&b->log.lock);
			if (ret <= 0) {
				b->log.waiters--;
				return ret < 0 ? ret : 0;
			}
		} else {
			wc_blk_wb_kick(c);
		}
		ts = wc_clock_deadline_ms(100);
		/* (Without threads the lock was let go above: the room may be
		 * there already.) */
		if (b->log.head + 1 - b->log.tail >= b->g.n_segments)
			pthread_cond_timedwait(&b->log.space, &b->log.lock, &ts);
		b->log.waiters--;
		return 0;
	}
	if (next > b->log.open_limit)
		return raise_open_limit(c, next);
	sg = &b->log.segs[next % b->g.n_segments];
	ret = wc_blk_seg_alloc(c, sg, next);
	if (ret)
		return ret;
	b->log.head = next;
	return 0;
}

bool wc_blk_log_room(struct wc_cache *c, uint64_t bytes)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_seg *sg;
	bool room;

	pthread_mutex_lock(&b->log.lock);
	sg = &b->log.segs[b->log.head % b->g.n_segments];
	room = (!sg->closed && sg->used + bytes <= b->g.seg_data_bytes) ||
	       b->log.head + 1 - b->log.tail < b->g.n_segments;
	pthread_mutex_unlock(&b->log.lock);
	return room;
}

int wc_blk_reserve(struct wc_cache *c, const uint32_t *idx, const uint64_t *origin, unsigned count,
                   uint64_t discard_first, uint32_t discard_len, struct wc_blk_resv *r)
{
	struct wc_blk *b = c->blk;
	uint64_t need = b->g.lba + (uint64_t)count * b->g.block_size;
	unsigned entries = count ? count : 1;
	struct wc_blk_seg *sg;
	int ret;

	pthread_mutex_lock(&b->log.lock);
	for (;;) {
		sg = &b->log.segs[b->log.head % b->g.n_segments];
		if (!sg->closed && sg->used + need <= b->g.seg_data_bytes &&
		    sg->n_sum + entries <= b->g.sum_cap && b->log.head <= b->log.open_limit)
			break;
		if (!sg->closed && sg->used)
			wc_blk_seg_close_locked(c, sg);
		if (b->log.head > b->log.open_limit)
			ret = raise_open_limit(c, b->log.head);
		else if (sg->closed || sg->used)
			ret = open_next(c);
		else
			ret = wc_err(-EINVAL, "%s: a record of %u blocks does not fit a segment",
			             c->cache_path, count);
		if (ret) {
			pthread_mutex_unlock(&b->log.lock);
			return ret;
		}
	}
	r->seg = b->log.head;
	r->seg_slot = (uint32_t)(b->log.head % b->g.n_segments);
	r->seq = b->log.next_seq++;
	r->off = wc_blk_seg_offset(&b->g, r->seg) + sg->used;
	if (count) {
		uint32_t off = (uint32_t)((sg->used + b->g.lba) / b->g.lba);

		for (unsigned i = 0; i < count; i++) {
			sg->sum[sg->n_sum + i] = (struct wc_blk_sum_ent){
				origin[i], r->seq, off + i * (b->g.block_size / b->g.lba), 0 };
			sg->live[sg->n_live + i] = (struct wc_blk_live){ idx[i], (uint32_t)r->seq };
		}
		sg->n_live += count;
	} else {
		sg->sum[sg->n_sum] = (struct wc_blk_sum_ent){
			discard_first, r->seq, (uint32_t)(sg->used / b->g.lba), WC_BLK_SUM_DISCARD | discard_len };
	}
	sg->n_sum += entries;
	sg->used += need;
	atomic_fetch_add(&sg->pending, 1);
	if (!count)
		b->log.epoch ^= 1u; /* a discard: its record starts the next epoch */
	r->epoch = b->log.epoch;
	b->log.inflight[r->epoch]++;
	pthread_mutex_unlock(&b->log.lock);
	return 0;
}

int wc_blk_reserve_discard(struct wc_cache *c, uint64_t first, uint32_t len, struct wc_blk_resv *r)
{
	struct wc_blk *b = c->blk;
	int ret = wc_blk_reserve(c, NULL, NULL, 0, first, len, r);

	if (ret)
		return ret;
	/* Writes reserved before the discard have lower seqs: recovery lets
	 * the discard hide them, so DRAM must too, and a write still in
	 * flight would publish after the drop pass.  Discards are rare; the
	 * wait is for device writes already issued, never for the origin. */
	pthread_mutex_lock(&b->log.lock);
	while (b->log.inflight[r->epoch ^ 1u]) {
		struct timespec ts;

		if (wc_blk_aio_reaper(c)) {
			pthread_cond_wait(&b->log.epoch_done, &b->log.lock);
			continue;
		}
		/* Without threads no one else may reap them. */
		pthread_mutex_unlock(&b->log.lock);
		wc_blk_aio_wait(c, 1);
		pthread_mutex_lock(&b->log.lock);
		ts = wc_clock_deadline_ms(1);
		if (b->log.inflight[r->epoch ^ 1u])
			pthread_cond_timedwait(&b->log.epoch_done, &b->log.lock, &ts);
	}
	pthread_mutex_unlock(&b->log.lock);
	return 0;
}

void wc_blk_record_done(struct wc_cache *c, const struct wc_blk_resv *r)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_seg *sg = &b->log.segs[r->seg_slot];
	bool due;

	pthread_mutex_lock(&b->log.lock);
	due = atomic_fetch_sub(&sg->pending, 1) == 1 && sg->closed;
	if (--b->log.inflight[r->epoch] == 0 && r->epoch != b->log.epoch)
		pthread_cond_broadcast(&b->log.epoch_done);
	pthread_mutex_unlock(&b->log.lock);
	if (due)
		wc_blk_wb_kick(c);
}

/* Write one segment's summary (not synced: see the top of this file). */
static int write_summary(struct wc_cache *c, struct wc_blk_seg *sg)
{
	struct wc_blk *b = c->blk;
	size_t bytes = sizeof(struct wc_blk_sum_head) + (size_t)sg->n_sum * sizeof(struct wc_blk_sum_ent);
	size_t len = (bytes + WC_BLK_UNIT - 1) / WC_BLK_UNIT * WC_BLK_UNIT;
	struct wc_blk_sum_head *h = wc_blk_alloc_buf(c, len);
	int ret;

	if (!h)
		return wc_err(-ENOMEM, "%s: summary buffer", c->cache_path);
	memset(h, 0, len);
	h->magic = WC_BLK_SUM_MAGIC;
	h->cache_id = b->cache_id;
	h->seg = sg->seg;
	h->n = sg->n_sum;
	memcpy(h + 1, sg->sum, (size_t)sg->n_sum * sizeof(struct wc_blk_sum_ent));
	h->crc = wc_blk_sum_crc(h, (const struct wc_blk_sum_ent *)(h + 1));
	ret = wc_blk_pwrite(c, h, len, wc_blk_seg_offset(&b->g, sg->seg) + b->g.seg_data_bytes, false,
	                    "segment summary");
	free(h);
	if (!ret)
		atomic_fetch_add_explicit(&b->st.summaries, 1, memory_order_relaxed);
	return ret;
}

/* Up to 64 at a time, behind one device flush each time. */
static int write_summaries_batch(struct wc_cache *c, bool *more)
{
	struct wc_blk *b = c->blk;
	uint64_t due[64];
	unsigned n = 0;
	int ret = 0;

	*more = false;
	pthread_mutex_lock(&b->log.lock);
	for (uint64_t s = b->log.tail; s <= b->log.head; s++) {
		struct wc_blk_seg *sg = &b->log.segs[s % b->g.n_segments];

		if (sg->closed && !sg->summarized && atomic_load(&sg->pending) == 0) {
			if (n == 64) {
				*more = true;
				break;
			}
			due[n++] = s;
		}
	}
	pthread_mutex_unlock(&b->log.lock);
	if (!n)
		return 0;
	/* Only durable records may be named by a summary. */
	ret = wc_blk_flush(c, false);
	for (unsigned i = 0; i < n && !ret; i++) {
		struct wc_blk_seg *sg = &b->log.segs[due[i] % b->g.n_segments];

		ret = write_summary(c, sg);
		if (!ret)
			sg->summarized = true;
		else
			/* The cache device refused a write: sticky, as a
			 * record's failure (and write-back, which waits for
			 * summaries, would stall with the ring filling). */
			wc_set_error(c, -EIO, wc_errmsg());
	}
	return ret ? ret : (int)n;
}

int wc_blk_write_summaries(struct wc_cache *c)
{
	bool more = true;
	int total = 0;

	while (more) {
		int ret = write_summaries_batch(c, &more);

		if (ret < 0)
			return ret;
		total += ret;
	}
	return total;
}
