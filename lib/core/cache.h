/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cache.h -- struct wc_cache: the cache's DRAM state, composed of the
 * modules' own parts, each declared in its module's header:
 *
 *   index.h      the entries and the shards of hash chains (shard->lock)
 *   alloc.h      the free stacks (their locks are innermost)
 *   writers.h    the writer slots a commit waits on
 *   commit.h     the commit state (commit.lock: one commit at a time)
 *   readahead.h  read-ahead of sequential misses (a pointer: its own)
 *   writeback/   write-back's state (a pointer: that module sits above
 *                this one and owns its struct; core code never looks in)
 *
 * No global lock on the I/O path.  Lock order: the write-back lock ->
 * commit.lock -> a shard lock -> a free-list lock.
 *
 * The few inline helpers the hot path needs that look into more than one
 * part are at the end of this file.
 */
#ifndef WC_CORE_CACHE_H
#define WC_CORE_CACHE_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/alloc.h"
#include "core/bind.h"
#include "core/commit.h"
#include "core/format.h"
#include "core/index.h"
#include "core/writers.h"
#include "flush/flush.h"
#include "origin/origin.h"
#include "util/clock.h"
#include "util/dram.h"
#include "wcache.h"

struct wc_readahead;
struct wc_async;
struct wc_writeback;
struct wc_blk;
struct wc_medium_ops;
struct wc_test_hooks;
struct pmem2_source;
struct pmem2_map;

struct wc_cache {
	/* identity and geometry */
	uint64_t instance;               /* unique per open in this process (writers.c) */
	struct wc_cache *open_next;      /* the process's open caches (writers.c) */
	char *cache_path;
	bool path_was_absent;            /* wc_create found no file there: a failed create removes
	                                    the one it made */
	struct wc_config cfg;
	struct wc_layout layout;
	uint64_t origin_blocks;
	uint32_t block_shift;
	uint64_t dram_bytes;

	/* mapping (map.c) */
	int fd;
	struct pmem2_source *src;
	struct pmem2_map *map;
	void *base;
	size_t map_len;
	struct wc_persist_policy fp;
	const char *policy_source;     /* where fp came from (policy_line.c), for wc_stats */
	struct wc_test_hooks *hooks;   /* tests only (testhooks.h) */

	/* The block medium (lib/block/): set instead of the mapping when the
	 * cache is on a device or file that is not persistent memory; the
	 * api layer hands the data path to it. */
	struct wc_blk *blk;
	const struct wc_medium_ops *medium; /* NULL: pmem */
	const char *pmem_reason;           /* why pmem (wc_stats.medium_reason) */

	/* origin */
	struct wc_origin origin;
	uint32_t origin_align;

	/* blocks (index.h) */
	struct wc_entry *e;              /* n_blocks, on huge pages (util/dram.c) */
	uint32_t *bucket_table;          /* every shard's buckets, likewise */
	size_t bucket_bytes;
	struct wc_shard shards[WC_SHARDS];

	struct wc_alloc alloc;           /* alloc.h */
	struct wc_writers writers;       /* writers.h */
	struct wc_commit_state commit;   /* commit.h */
	struct wc_writeback *wb;         /* writeback/writeback.h */
	struct wc_readahead *ra;         /* readahead.h; NULL when off */
	struct wc_async *async;          /* api/async.c: wc_submit's requests */
	/* no_threads: what a writer that found no room does, set at open by
	 * the API layer, which knows the host's loop (api/poll.c): 1 =
	 * another thread's loop drives the cache, wait for its progress; 0 =
	 * this thread took the host's steps, look again; or -errno. */
	int (*room_step)(struct wc_cache *c, const char *what);

	/* errors */
	atomic_int error;                /* sticky, first one wins */
	uint64_t t0_ms;

	/* Which origin this is (bind.c): read at open, never on the I/O
	 * path, so last, where it moves none of the fields above. */
	struct wc_bind bind;
};

/* Milliseconds since the cache opened (the coarse clock: ages and
 * autocommit deadlines need milliseconds, and it costs a few ns on the
 * write path instead of ~20). */
static inline uint32_t wc_now_ms(const struct wc_cache *c)
{
	return (uint32_t)(wc_clock_coarse_ms() - c->t0_ms);
}

/* Enter the sticky error state (state.c): the first error wins and stays,
 * as in dm-writecache; writes and flushes fail from then on. */
void wc_set_error(struct wc_cache *c, int err, const char *what);
static inline int wc_has_error(struct wc_cache *c)
{
	return atomic_load_explicit(&c->error, memory_order_acquire);
}

static inline struct wc_shard *wc_shard_of(struct wc_cache *c, uint64_t origin_block)
{
	return &c->shards[wc_shard_index(origin_block)];
}

/* The epoch new entries stamp: read under the shard lock that publishes
 * them, between wc_writer_enter and wc_writer_exit (commit.c,
 * wait_epoch_quiet). */
static inline uint64_t wc_epoch_current(struct wc_cache *c)
{
	return atomic_load_explicit(&c->commit.epoch, memory_order_seq_cst);
}

static inline bool wc_is_committed(struct wc_cache *c, uint64_t seq)
{
	return seq < atomic_load_explicit(&c->commit.committed_seq, memory_order_acquire);
}

#endif /* WC_CORE_CACHE_H */
