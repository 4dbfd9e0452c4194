/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim.h -- free blocks for a write, whatever it takes.
 */
#ifndef WC_RECLAIM_H
#define WC_RECLAIM_H

#include <stdint.h>

struct wc_cache;

/* Between 1 and `want` free blocks into out[] (core/alloc.c pops them);
 * when none is free, commit, release what the last commit freed, or write
 * back, and wait.  Returns how many, or a negative errno: -EIO in the
 * sticky error; -ENOSPC when the origin has failed past the writers'
 * patience (writeback/outage.c), or with no_threads and nothing to write
 * back. */
int wc_reclaim_blocks(struct wc_cache *c, uint32_t *out, unsigned want);

#endif /* WC_RECLAIM_H */
