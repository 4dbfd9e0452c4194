/* SPDX-License-Identifier: BSD-3-Clause */
/* map.h -- mapping the cache file with libpmem2. */
#ifndef WC_MAP_H
#define WC_MAP_H

#include <stdbool.h>
#include <stdint.h>

struct wc_cache;

/* Open `path` with `flags` (O_RDWR, O_CREAT ...) and take the owner's lock
 * (lib/lock.c) before anything reads or writes it.  Returns the descriptor,
 * or -1 with *err = -errno (-EBUSY: in use) and a message. */
int wc_map_lock_path(const char *path, int flags, int *err);
/* wc_create with cache_size: a regular file already larger than it is
 * refused (-EINVAL, with a message), not silently taken whole.  Both media
 * call it before they size the file. */
struct stat;
int wc_map_check_create_size(const char *path, const struct stat *st, uint64_t create_size);
/* Open (unless c->fd >= 0 already holds the locked file), lock and map
 * c->cache_path; with create_size > 0 a missing or smaller regular file is
 * created/extended to that size.  Sets c->fd, src, map, base, map_len and
 * adapts c->fp to the mapping's granularity. */
int wc_map_open(struct wc_cache *c, bool create, uint64_t create_size);
void wc_map_close(struct wc_cache *c);
/* Unmap, keeping the (locked) descriptor. */
void wc_map_unmap(struct wc_cache *c);
/* Does libpmem2 map c->fd with page granularity only (not persistent
 * memory)?  An empty file counts as page only.  Maps and unmaps. */
int wc_map_probe(struct wc_cache *c, bool *page_only);
const char *wc_map_granularity_name(const struct wc_cache *c);

#endif
