/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state.c -- the cache's sticky error state.
 *
 * The cache's own media errors -- a failed commit, a write or flush of the
 * cache device that failed, dirty data it cannot read back for write-back,
 * a write-back whose requests it can no longer account for -- leave it in
 * an error state until it is closed: the first error wins and stays, as in
 * dm-writecache, so nothing acknowledged afterwards can depend on state
 * that may be wrong.  Reopening rebuilds the state from the medium alone.
 *
 * The origin's failures never come here: the data they concern is intact
 * in the cache, and write-back retries it (writeback/outage.c).
 */
#include "core/cache.h"
#include "util/log.h"

void wc_set_error(struct wc_cache *c, int err, const char *what)
{
	int expected = 0;

	if (atomic_compare_exchange_strong(&c->error, &expected, err ? err : -EIO))
		wc_log(WC_LOG_ERR, "%s: entering error state (%d, %s): writes and flushes now fail until the "
		       "cache is closed and reopened", c->cache_path, err, what);
	/* A writer waiting for a free block must see it and fail. */
	wc_wake_freelist_waiters(c);
}
