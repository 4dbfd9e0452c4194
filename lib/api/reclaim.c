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
 *   3. otherwise write back: without threads, the host's steps -- the
 *      loop's, waited for, or this thread's when no loop turns
 *      (api/poll.c) -- else kick the write-back thread and wait for a
 *      free.
 *
 * Write-back frees nothing while the origin fails: the writer waits while
 * the failure is young (outage.c's patience), then gets -ENOSPC at once --
 * never -EIO, and never a wait without end.  The cache is healthy; it is
 * full of what it acknowledged.
 */
#include <errno.h>

#include "api/async.h"
#include "api/reclaim.h"
#include "core/cache.h"
#include "util/error.h"
#include "writeback/writeback.h"

static __thread unsigned alloc_tick;

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
			/* A failing origin: the attempt that is due, or
			 * refused past the patience. */
			err = wc_wb_room_wait(c, "write");
			if (err)
				return err;
			if (wc_host_loop_drives(c))
				wc_alloc_wait(c); /* a free wakes it */
			else if ((err = wc_host_work_for_room(c, "write")) < 0)
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
