/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writeback.h -- write-back, as the layers above it see it: started and
 * stopped with the cache, run in rounds, kicked when blocks run short.
 *
 * Its state (struct wc_writeback, writeback/internal.h) is its own: the
 * core holds a pointer to it and never looks inside.
 */
#ifndef WC_WRITEBACK_H
#define WC_WRITEBACK_H

#include <stdbool.h>
#include <stdint.h>

struct wc_cache;
struct wc_stats;

/* The state, allocated with the cache (before anything can stop it) and
 * freed with it. */
int wc_writeback_init(struct wc_cache *c);
void wc_writeback_fini(struct wc_cache *c);
/* Rounds' buffers and, unless no_threads, the write-back thread. */
int wc_writeback_start(struct wc_cache *c);
void wc_writeback_stop(struct wc_cache *c);
/* One round: pick and write, settling (flush, free) the round before once
 * the origin has this one's first writes; no_threads: settle this one too.
 * May commit first and may sleep (backoff).  Returns blocks written, 0 if
 * nothing was due (then nothing is left unsettled), or a negative errno. */
int wc_writeback_round(struct wc_cache *c, bool all);
void wc_writeback_kick(struct wc_cache *c);
bool wc_writeback_due(struct wc_cache *c);
/* Cleaner mode: writes go around the cache and everything is written back. */
bool wc_writeback_cleaning(struct wc_cache *c);
/* wc_writeback, wc_set_cleaner and wc_poll on pmem (the api layer checks
 * the arguments and picks the medium). */
int wc_writeback_everything(struct wc_cache *c);
void wc_writeback_set_cleaner(struct wc_cache *c, bool on);
int wc_writeback_poll(struct wc_cache *c, unsigned budget);
/* no_threads, the host's event loop: one step of write-back that never
 * waits for the origin (submit what the window has room for, reap, flush,
 * free).  Returns units of progress, 0 if there was nothing to do now. */
int wc_writeback_step(struct wc_cache *c);
/* Milliseconds until a step has something to do: 0 now, -1 nothing due. */
int wc_writeback_step_deadline_ms(struct wc_cache *c);
/* Write back the dirty blocks of origin blocks [first, first + n) and make
 * the origin durable (a step's round under way is finished first). */
int wc_writeback_blocks(struct wc_cache *c, uint64_t first, uint64_t n);
/* Write-back's part of wc_stats, and the reset of its counters. */
void wc_writeback_stats(struct wc_cache *c, struct wc_stats *st);
void wc_writeback_stats_reset(struct wc_cache *c);

#endif /* WC_WRITEBACK_H */
