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
 */
#include <errno.h>

#include "api/reclaim.h"
#include "core/cache.h"
#include "util/error.h"
#include "writeback/writeback.h"

static __thread unsigned alloc_tick;

/* no_threads: the host's thread is ours now.  A failed round leaves its
 * blocks dirty and backs off: 1 = try again (until it succeeds or turns
 * into the sticky error), 0 = something was freed or is free, or -errno. */
static int writeback_here(struct wc_cache *c)
{
	int err = wc_writeback_round(c, false);

	if (err == -EIO && !wc_has_error(c))
		return 1;
	if (err < 0)
		return err;
	if (err == 0 && wc_free_count(c) == 0) {
		/* Nothing was due by the watermarks and ages: take anything
		 * committed. */
		err = wc_writeback_round(c, true);
		if (err == -EIO && !wc_has_error(c))
			return 1;
		if (err < 0)
			return err;
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
		wc_writeback_kick(c);
		wc_alloc_wait(c);
	}
}
