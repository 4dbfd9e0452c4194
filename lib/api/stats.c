/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stats.c -- counters.  The hot path only bumps counters of the shard whose
 * lock it already holds; reading sums the shards (OCF lost ~700K IOPS to
 * shared statistics counters: we keep none on the I/O path).
 */
#include <stddef.h>
#include <string.h>

#include "core/cache.h"
#include "util/error.h"
#include "core/map.h"
#include "core/readahead.h"
#include "block/block.h"
#include "writeback/writeback.h"

/* The 0.1 struct ended where 0.3's write-back window begins, at 0.2's
 * reserved space (docs/ABI.md). */
#define WC_STATS_SIZE_0_1 offsetof(struct wc_stats, writeback_window)

static int stats_fill(wc_cache *c, struct wc_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < WC_SHARDS; i++) {
		struct wc_shard *s = &c->shards[i];

		wc_spin_lock(&s->lock);
		st->reads += s->st.reads + atomic_load_explicit(&s->lockless_hits, memory_order_relaxed);
		st->read_hits += s->st.read_hits +
		                 atomic_load_explicit(&s->lockless_hits, memory_order_relaxed);
		st->writes += s->st.writes;
		st->write_hits_uncommitted += s->st.write_hits_uncommitted;
		st->write_hits_committed += s->st.write_hits_committed;
		st->writes_around += s->st.writes_around;
		st->writes_allocate += s->st.writes_allocate;
		st->discards += s->st.discards;
		st->dirty_blocks += s->current;
		wc_spin_unlock(&s->lock);
	}
	st->error = wc_has_error(c);
	st->blocks = c->layout.n_blocks;
	/* Blocks the last commit freed count as free: they hold no data and
	 * join the free lists at the next fence. */
	st->free_blocks = wc_free_count(c) + atomic_load(&c->commit.pending_count);
	st->writes_blocked_on_freelist = atomic_load(&c->alloc.blocked);
	wc_storelock_lock(&c->commit.lock);
	st->flushes = c->commit.flushes;
	st->commits = c->commit.commits;
	wc_storelock_unlock(&c->commit.lock);
	wc_writeback_stats(c, st);
	st->readahead_blocks = wc_ra_hits(c);
	st->dram_bytes = c->dram_bytes;
	st->writer_slots = wc_writer_slots_owned(c);
	st->granularity = wc_map_granularity_name(c);
	st->origin_mode = wc_origin_describe(&c->origin);
	st->origin_identity = c->bind.text;
	st->pmem = c->fp.info;
	st->pmem_source = c->policy_source ? c->policy_source : "engine";
	st->medium = c->blk ? "block" : "pmem";
	st->medium_reason = c->blk ? c->blk->reason : c->pmem_reason ? c->pmem_reason : "";
	if (c->blk) {
		struct wc_blk *b = c->blk;

		pthread_mutex_lock(&b->log.lock);
		st->free_blocks = wc_blk_free_segments(c) * (b->g.seg_data_bytes / b->g.block_size) +
		                  (b->g.seg_data_bytes - b->log.segs[b->log.head % b->g.n_segments].used) /
		                          b->g.block_size;
		pthread_mutex_unlock(&b->log.lock);
		st->granularity = "block";
		st->origin_mode = wc_origin_describe(&c->origin);
		wc_blk_wb_stats(c, st);
		st->medium_records = atomic_load(&b->st.records);
		st->medium_dsync_writes = atomic_load(&b->st.dsync_writes);
		st->medium_flushes = atomic_load(&b->st.device_flushes);
		st->medium_segments_reclaimed = atomic_load(&b->st.segments_reclaimed);
		st->recovery_us = b->recover_ns / 1000;
		st->medium_record_writes = atomic_load(&b->st.record_writes);
		st->medium_reads = atomic_load(&b->st.device_reads);
		st->pmem_source = "none (block medium)";
	}
	return 0;
}

/* Writes only the caller's `size` bytes: a program built against an older
 * header has a shorter struct. */
int wc_get_stats_size(wc_cache *c, struct wc_stats *st, size_t size)
{
	struct wc_stats full;
	int ret;

	if (!c || !st)
		return wc_err(-EINVAL, "wc_get_stats: NULL %s", c ? "stats" : "cache");
	if (size < WC_STATS_SIZE_0_1)
		return wc_err(-EINVAL, "wc_get_stats: struct size %zu is below the smallest (%zu)",
		              size, (size_t)WC_STATS_SIZE_0_1);
	ret = stats_fill(c, &full);
	if (ret)
		return ret;
	if (size > sizeof(full)) {
		memset((char *)st + sizeof(full), 0, size - sizeof(full));
		size = sizeof(full);
	}
	memcpy(st, &full, size);
	return 0;
}

int (wc_get_stats)(wc_cache *c, struct wc_stats *st)
{
	return wc_get_stats_size(c, st, WC_STATS_SIZE_0_1);
}

void wc_clear_stats(wc_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < WC_SHARDS; i++) {
		struct wc_shard *s = &c->shards[i];

		wc_spin_lock(&s->lock);
		memset(&s->st, 0, sizeof(s->st));
		wc_spin_unlock(&s->lock);
	}
	atomic_store(&c->alloc.blocked, 0);
	wc_storelock_lock(&c->commit.lock);
	c->commit.flushes = c->commit.commits = 0;
	wc_storelock_unlock(&c->commit.lock);
	wc_writeback_stats_reset(c);
}
