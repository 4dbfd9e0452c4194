/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state.c -- the cache's sticky error state.
 *
 * The cache's own media errors (a failed commit, a write-back that cannot
 * tell what the origin holds) leave it in an error state until it is
 * closed: the first error wins and stays, as in dm-writecache, so nothing
 * acknowledged afterwards can depend on state that may be wrong.
 */
#include <stdio.h>

#include "core/cache.h"

void wc_set_error(struct wc_cache *c, int err, const char *what)
{
	int expected = 0;

	if (atomic_compare_exchange_strong(&c->error, &expected, err ? err : -EIO))
		fprintf(stderr, "libwcache: %s: entering error state (%d, %s): writes and flushes now fail\n",
		        c->cache_path, err, what);
	/* A writer waiting for a free block must see it and fail. */
	wc_wake_freelist_waiters(c);
}
