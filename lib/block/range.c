/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * range.c -- write-back of a range of the origin, and its invalidation from
 * the cache only, on the block medium.
 *
 * Segment write-back goes oldest segment first so that the origin never
 * gets a version after a newer one of the same block.  A range's
 * write-back takes the current versions of its blocks wherever they are in
 * the ring instead: a current version is the newest one, so the origin
 * still never goes back in time.  Each pass (a bounded run of blocks)
 * holds wb.step, the write-back step's turn, and first ends a segment's
 * write-back the host's steps left with requests out (without threads):
 * no segment write-back is in flight meanwhile (no version carries
 * WC_E_WB) and no reclaim either (a version's data stays where the index
 * says while it is read).  What it writes becomes clean in DRAM only; its
 * segment's write-back later skips it (it takes dirty versions), reclaim
 * takes it as any clean version, and after a crash it is dirty again and
 * written once more: the same data, still the newest.
 *
 * An invalidation drops the range from the cache, durably, with a discard
 * record marked cache-only (format.h).  The record is reserved first, in a
 * new epoch as a discard's is: writes reserved before it are waited for
 * (recovery lets it hide them), so they are all published when the range
 * is written back next.  Then the record is written, synced, and the
 * versions older than it leave the index.  wb.step is held from the
 * write-back to the drop, so nothing else writes back or reclaims in
 * between: what the record hides is what was just written back.  A write
 * to the range reserved after the record has a higher seq: the record does
 * not hide it and the drop leaves it.  When the write-back fails the record
 * still has to be written (a reservation is not taken back), with no
 * block: neither it nor its summary entry may hide dirty data.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"

/* Versions per pass: one origin flush each, and a bounded list. */
#define RANGE_BATCH 1024u
/* Blocks looked up per pass at most: a plain range write-back lets the
 * write-back thread take its turn between passes, however large the
 * range. */
#define RANGE_SCAN 65536u
/* A version to write back has WC_E_CURRENT alone of these. */
#define DIRTY_MASK (WC_E_CURRENT | WC_E_CLEAN | WC_E_WB | WC_E_INFLIGHT)

static int by_where(const void *a, const void *b)
{
	const struct wc_blk_wb_item *x = a, *y = b;

	return x->where < y->where ? -1 : x->where > y->where;
}

/* Mark the dirty versions of blocks [*next, end) as under write-back, at
 * most `max`; *next moves past the blocks looked at. */
static unsigned collect_range(struct wc_cache *c, uint64_t *next, uint64_t end, struct wc_blk_wb_item *out,
                              unsigned max)
{
	unsigned n = 0;
	uint64_t blk;

	if (end - *next > RANGE_SCAN)
		end = *next + RANGE_SCAN;
	for (blk = *next; blk < end && n < max; blk++) {
		struct wc_shard *s = wc_shard_of(c, blk);
		uint32_t idx;

		wc_spin_lock(&s->lock);
		idx = wc_index_find(c, s, blk);
		/* One in flight was acknowledged after this write-back began
		 * (its flush drained the others): its data is not on the
		 * device yet. */
		if (idx != WC_NIL && (c->e[idx].flags & DIRTY_MASK) == WC_E_CURRENT) {
			wc_entry_set_flags(&c->e[idx], c->e[idx].flags | WC_E_WB);
			out[n++] = (struct wc_blk_wb_item){ idx, blk, wc_blk_where(&c->e[idx]) };
		}
		wc_spin_unlock(&s->lock);
	}
	*next = blk;
	return n;
}

/* The write-back of blocks [first, end), wb.step held; `yield`: let it go
 * between passes (an invalidation keeps it to the end: see the top). */
static int range_locked(struct wc_cache *c, uint64_t first, uint64_t end, bool yield)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_wb_item *it;
	int ret = 0;

	if (wc_has_error(c))
		return wc_err(-EIO, "%s write-back of blocks %llu..%llu: the cache is in error state (%d)",
		              c->cache_path, (unsigned long long)first, (unsigned long long)end - 1,
		              wc_has_error(c));
	it = malloc(RANGE_BATCH * sizeof(*it));
	if (!it)
		return wc_err(-ENOMEM, "%s write-back of blocks %llu..%llu: list", c->cache_path,
		              (unsigned long long)first, (unsigned long long)end - 1);
	for (uint64_t next = first; next < end && !ret;) {
		uint64_t from = next;
		unsigned n;

		if (yield && next > first) {
			pthread_mutex_unlock(&b->wb.step);
			pthread_mutex_lock(&b->wb.step);
			wc_blk_wb_job_settle(c);
		}
		n = collect_range(c, &next, end, it, RANGE_BATCH);
		if (!n)
			continue;
		/* Device order: what the window reads expect, and the fewest
		 * requests. */
		qsort(it, n, sizeof(*it), by_where);
		/* Versions published since the caller's flush have their
		 * records written but perhaps not durable: the origin only
		 * ever gets what the cache holds durably. */
		ret = wc_blk_flush(c, false);
		for (unsigned i = 0; i < n && !ret;) {
			int k = wc_blk_wb_write_window(c, it + i, n - i);

			if (k < 0)
				ret = k;
			else
				i += (unsigned)k;
		}
		if (!ret)
			ret = wc_origin_flush(&c->origin);
		wc_blk_wb_finish(c, it, n, ret == 0);
		if (ret && !wc_has_error(c)) {
			/* The origin's: the versions stay dirty, the cache goes
			 * on, and the caller hears of it; the write-back thread's
			 * own attempts keep their streak. */
			char why[256];

			snprintf(why, sizeof(why), "%s", wc_errmsg());
			pthread_mutex_lock(&b->wb.lock);
			b->wb.errors++;
			pthread_mutex_unlock(&b->wb.lock);
			ret = wc_err(ret, "%s write-back of blocks %llu..%llu: the origin failed, the blocks "
			             "stay dirty: %s", c->cache_path, (unsigned long long)from,
			             (unsigned long long)next - 1, why);
		}
	}
	free(it);
	return ret;
}

int wc_blk_writeback_range(struct wc_cache *c, uint64_t offset, uint64_t len)
{
	struct wc_blk *b = c->blk;
	uint64_t first = offset >> c->block_shift, end = first + (len >> c->block_shift);
	int ret;

	if (!len)
		return 0;
	/* Writes acknowledged before the call: their records done (none in
	 * flight is skipped) and durable. */
	ret = wc_blk_flush(c, false);
	if (ret)
		return ret;
	pthread_mutex_lock(&b->wb.step);
	wc_blk_wb_job_settle(c);
	ret = range_locked(c, first, end, true);
	pthread_mutex_unlock(&b->wb.step);
	return ret;
}

/* Drop the versions of blocks [first, first + n) older than the record
 * `seq` from the index (wb.step held: they are all clean). */
static void drop_older(struct wc_cache *c, uint64_t first, uint64_t n, uint64_t seq)
{
	uint32_t dead[256];
	unsigned n_dead = 0;

	for (uint64_t i = 0; i < n; i++) {
		struct wc_shard *s = wc_shard_of(c, first + i);
		uint32_t cur;

		wc_spin_lock(&s->lock);
		cur = wc_index_find(c, s, first + i);
		if (cur != WC_NIL && c->e[cur].seq < seq) {
			WC_ASSERT((c->e[cur].flags & (WC_E_CLEAN | WC_E_WB | WC_E_INFLIGHT)) == WC_E_CLEAN);
			wc_blk_drop(c, s, cur, dead, &n_dead);
		}
		wc_spin_unlock(&s->lock);
		if (n_dead == 256) {
			wc_free_batch(c, dead, n_dead);
			n_dead = 0;
		}
	}
	wc_free_batch(c, dead, n_dead);
}

/* The record reserved as `r` hides nothing after all: its summary entry
 * (written once the segment's records are done, so not yet) says so. */
static void hide_nothing(struct wc_cache *c, const struct wc_blk_resv *r)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_seg *sg = &b->log.segs[r->seg_slot];

	pthread_mutex_lock(&b->log.lock);
	for (uint32_t i = sg->n_sum; i-- > 0;)
		if (sg->sum[i].seq == r->seq && (sg->sum[i].len & WC_BLK_SUM_DISCARD)) {
			sg->sum[i].len = WC_BLK_SUM_DISCARD;
			break;
		}
	pthread_mutex_unlock(&b->log.lock);
}

static int invalidate_chunk(struct wc_cache *c, uint64_t first, uint32_t n, struct wc_blk_rec *h)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_resv r;
	int ret, wret;

	pthread_mutex_lock(&b->log.discard_lock);
	ret = wc_blk_reserve_discard(c, first, n, &r);
	if (ret) {
		pthread_mutex_unlock(&b->log.discard_lock);
		return ret;
	}
	pthread_mutex_lock(&b->wb.step);
	wc_blk_wb_job_settle(c);
	ret = range_locked(c, first, first + n, false);
	memset(h, 0, b->g.lba);
	h->magic = WC_BLK_REC_MAGIC;
	h->cache_id = b->cache_id;
	h->seq = r.seq;
	h->seg = r.seg;
	h->flags = WC_BLK_REC_DISCARD;
	h->origin[0] = first;
	h->origin[1] = ret ? 0 : n;
	h->origin[WC_BLK_REC_DISCARD_ORIGIN] = WC_BLK_DISCARD_CACHE_ONLY;
	h->crc = wc_blk_rec_crc(h, b->g.lba);
	if (ret)
		hide_nothing(c, &r);
	wret = wc_blk_pwrite(c, h, b->g.lba, r.off, true, "invalidate record");
	if (wret) {
		/* The cache's own medium: sticky, as a discard record's. */
		wc_set_error(c, -EIO, wc_errmsg());
		if (!ret)
			ret = wret;
	} else if (!ret) {
		drop_older(c, first, n, r.seq);
	}
	pthread_mutex_unlock(&b->wb.step);
	wc_blk_record_done(c, &r);
	pthread_mutex_unlock(&b->log.discard_lock);
	return ret;
}

int wc_blk_invalidate(struct wc_cache *c, uint64_t offset, uint64_t len)
{
	struct wc_blk *b = c->blk;
	uint64_t first = offset >> c->block_shift, n = len >> c->block_shift;
	struct wc_blk_rec *h;
	int ret = 0;

	if (!n)
		return 0;
	/* Writes acknowledged before the call: durable before the origin
	 * gets them (the write-back's own flush covers the rest). */
	ret = wc_blk_flush(c, false);
	if (ret)
		return ret;
	h = wc_blk_alloc_buf(c, b->g.lba);
	if (!h)
		return wc_err(-ENOMEM, "%s invalidate: record buffer", c->cache_path);
	for (uint64_t done = 0; done < n && !ret;) {
		uint32_t k = n - done < 0x7fffffffu ? (uint32_t)(n - done) : 0x7fffffffu;

		ret = invalidate_chunk(c, first + done, k, h);
		done += k;
	}
	free(h);
	return ret;
}
