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
	st->free_blocks = wc_free_count(c) + atomic_load(&c->pending_count);
	st->writeback_blocks = atomic_load(&c->wb_inflight);
	st->writes_blocked_on_freelist = atomic_load(&c->blocked_on_freelist);
	wc_storelock_lock(&c->commit_lock);
	st->flushes = c->flushes;
	st->commits = c->commits;
	wc_storelock_unlock(&c->commit_lock);
	st->writeback_ios = atomic_load_explicit(&c->wb_ios, memory_order_relaxed);
	st->writeback_bytes = atomic_load_explicit(&c->wb_bytes, memory_order_relaxed);
	st->writeback_errors = atomic_load_explicit(&c->wb_errors, memory_order_relaxed);
	st->writeback_window = wc_writeback_window(c, &st->writeback_latency_us);
	st->writeback_latency_us /= 1000;
	st->readahead_blocks = atomic_load_explicit(&c->ra_hits, memory_order_relaxed);
	st->writeback_last_error = atomic_load_explicit(&c->wb_last_errno, memory_order_relaxed);
	{
		uint64_t since = atomic_load_explicit(&c->wb_failing_since_ns, memory_order_relaxed);

		st->writeback_failing_ms = since ? (wc_wb_now_ns() - since) / 1000000 : 0;
	}
	st->dram_bytes = c->dram_bytes;
	st->writer_slots = wc_writer_slots_owned(c);
	st->granularity = wc_map_granularity_name(c);
	st->origin_mode = wc_origin_describe(&c->origin);
	st->origin_identity = c->bind.text;
	st->pmem = c->fp.info;
	st->pmem_source = c->policy_source ? c->policy_source : "engine";
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
	atomic_store(&c->blocked_on_freelist, 0);
	wc_storelock_lock(&c->commit_lock);
	c->flushes = c->commits = 0;
	wc_storelock_unlock(&c->commit_lock);
	atomic_store(&c->wb_ios, 0);
	atomic_store(&c->wb_bytes, 0);
	atomic_store(&c->wb_errors, 0);
}
