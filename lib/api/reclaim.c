/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim.c -- the out-of-blocks policy.
 *
 * The allocator (core/alloc.c) pops, pushes and waits; the commit
 * (core/commit.c) and write-back (writeback/) free blocks.  Deciding which
 * of them a writer that found no free block needs is this file's job, one
 * layer above all three, so none of them calls another to make room:
 *
 *   1. blocks published but not committed: commit (only committed blocks
 *      can be written back, and a commit frees the versions it supersedes);
 *   2. blocks the last commit invalidated: drain and free them;
 *   3. otherwise write back -- in this thread when the host drives the
 *      cache (no_threads: nobody else will), else kick the write-back
 *      thread and wait for a free.
 *
 * Write-back frees nothing while the origin fails: the writer waits while
 * the failure is young (outage.c's patience), then gets -ENOSPC at once --
 * never -EIO, and never a wait without end.  The cache is healthy; it is
 * full of what it acknowledged.
 */
#include <errno.h>

#include "api/reclaim.h"
#include "core/cache.h"
#include "util/error.h"
#include "writeback/writeback.h"

static __thread unsigned alloc_tick;

/* A round run for room failed: 1 = the origin's failure (its blocks are
 * dirty again; the next look waits for the next attempt, or refuses), or
 * the error. */
static int round_failed(struct wc_cache *c, int err)
{
	return !wc_has_error(c) && wc_wb_origin_failing(c) ? 1 : err;
}

/* no_threads: the host's thread is ours now.  1 = try again, 0 = something
 * was freed or is free, or -errno. */
static int writeback_here(struct wc_cache *c)
{
	int err;

	/* A failing origin: the attempt that is due, or refused past the
	 * patience, or the wait for the next attempt. */
	err = wc_wb_room_wait(c, "write");
	if (err)
		return err;
	err = wc_writeback_round(c, false);
	if (err < 0)
		return round_failed(c, err);
	if (err == 0 && wc_free_count(c) == 0) {
		/* Nothing was due by the watermarks and ages: take anything
		 * committed. */
		err = wc_writeback_round(c, true);
		if (err < 0)
			return round_failed(c, err);
		if (err == 0 && wc_free_count(c) == 0)
			return wc_err(-ENOSPC, "%s: no free block and nothing to write back", c->cache_path);
	}
	return 0;
}

int wc_reclaim_blocks(struct wc_cache *c, uint32_t *out, unsigned want)
{
	bool counted = false;

	for (;;) {
		unsigned n = wc_alloc_pop(c, out, want);
		int err;

		if (n) {
			/* The watermark check sums every stack's count (eight
			 * lines): look every 16th allocation of a thread, a
			 * hint only (a writer that finds no block kicks). */
			if ((++alloc_tick & 15) == 0 && wc_writeback_due(c))
				wc_writeback_kick(c);
			return (int)n;
		}
		err = wc_has_error(c);
		if (err)
			return wc_err(-EIO, "%s: no free cache block and the cache is in error state (%d)",
			              c->cache_path, err);
		if (!counted) {
			atomic_fetch_add(&c->alloc.blocked, 1);
			counted = true;
		}
		if (wc_uncommitted(c)) {
			err = wc_commit(c, false);
			if (err)
				return err;
			continue;
		}
		if (atomic_load(&c->commit.pending_count)) {
			wc_release_freed(c);
			continue;
		}
		if (c->cfg.no_threads) {
			err = writeback_here(c);
			if (err < 0)
				return err;
			continue;
		}
		if (wc_wb_past_patience(c)) {
			/* Not if write-back freed blocks since the pop above
			 * (the origin came back this instant). */
			unsigned got = wc_alloc_pop(c, out, want);

			if (got)
				return (int)got;
			err = wc_wb_refuse_full(c, "write");
			if (err)
				return err;
		}
		wc_writeback_kick(c);
		wc_alloc_wait(c);
	}
}
