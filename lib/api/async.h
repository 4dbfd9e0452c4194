/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async.h -- the request machinery's life with the cache (async.c), and
 * the host's share of the work without threads (poll.c).
 */
#ifndef WC_API_ASYNC_H
#define WC_API_ASYNC_H

#include <stdbool.h>
#include <stdint.h>

struct wc_cache;

/* At open; its state is freed by wc_async_fini. */
int wc_async_init(struct wc_cache *c);
/* wc_close, first: the queued requests run, the I/O threads stop, the
 * origin's reads complete, and every accepted request's done() runs. */
void wc_async_drain(struct wc_cache *c);
void wc_async_fini(struct wc_cache *c);
/* no_threads: reads of misses at the origin. */
bool wc_async_origin_busy(struct wc_cache *c);

/* no_threads: has another thread polled within the last `within_ms`?
 * (A writer that finds no room then waits for that thread's progress.) */
bool wc_async_polled_elsewhere(struct wc_cache *c, uint32_t within_ms);
/* no_threads, a synchronous writer that found no room: true when another
 * thread's loop drives the cache (it polled lately) -- wait for its
 * progress; false -- take the host's steps here (wc_host_work_for_room). */
bool wc_host_loop_drives(struct wc_cache *c);
/* One call of the host's work in this thread, then a wait of at most a
 * millisecond for the origin.  0 = look again, -ENOSPC when nothing is
 * left to make room with, or -errno. */
int wc_host_work_for_room(struct wc_cache *c, const char *what);
/* The two above as one step: the cache's room_step. */
int wc_host_room_step(struct wc_cache *c, const char *what);

/* no_threads: up to `budget` units of the cache's own work, none of which
 * waits for the origin (poll.c).  Units done or -errno. */
int wc_host_work(struct wc_cache *c, unsigned budget);
/* Milliseconds until wc_host_work has something to do (0 = now, -1 =
 * nothing until the host's next request). */
int wc_host_work_deadline_ms(struct wc_cache *c);

/* Write back the dirty blocks of [offset, offset + len) and make the
 * origin durable; invalidate: then drop the range from the cache. */
int wc_writeback_range(struct wc_cache *c, uint64_t offset, uint64_t len);
int wc_invalidate_range(struct wc_cache *c, uint64_t offset, uint64_t len);

#endif
