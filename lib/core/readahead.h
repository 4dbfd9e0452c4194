/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * readahead.h -- read-ahead of sequential read misses into DRAM
 * (readahead.c).
 */
#ifndef WC_READAHEAD_H
#define WC_READAHEAD_H

#include <stdint.h>

struct wc_cache;

int wc_ra_init(struct wc_cache *c);
/* No reader left; waits for loads in flight. */
void wc_ra_fini(struct wc_cache *c);
/* Blocks served from read-ahead since open. */
uint64_t wc_ra_hits(struct wc_cache *c);

/* Copy the longest prefix of origin blocks [block, block + n) that
 * read-ahead holds (waiting for a window still loading) into dst; returns
 * the blocks copied.  Only for blocks the cache just missed. */
uint64_t wc_ra_read(struct wc_cache *c, char *dst, uint64_t block, uint64_t n);

/* A read request missed in [block, block + n): follow its stream and read
 * ahead of it. */
void wc_ra_note(struct wc_cache *c, uint64_t block, uint64_t n);

/* The origin's blocks [block, block + n) change (readahead.c says when to
 * call it): no window read before may serve them again. */
void wc_ra_forget(struct wc_cache *c, uint64_t block, uint64_t n);

#endif
