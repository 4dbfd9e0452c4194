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
/* wc_writeback and wc_set_cleaner on pmem (the api layer checks
 * the arguments and picks the medium). */
int wc_writeback_everything(struct wc_cache *c);
void wc_writeback_set_cleaner(struct wc_cache *c, bool on);
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

/*
 * The origin failing (outage.c), for both media: each write-back attempt
 * -- a round on pmem, a segment on the block medium -- reports how it went.
 * A streak of failures is logged when it begins and when it ends, shown in
 * wc_stats, and paced by backoff; it never makes the cache's error sticky.
 */
/* `blocks` could not be written back: the origin said `err`. */
void wc_wb_attempt_failed(struct wc_cache *c, int err, unsigned blocks);
/* An attempt got through: a streak ends. */
void wc_wb_attempt_ok(struct wc_cache *c);
bool wc_wb_origin_failing(struct wc_cache *c);
/* Nanoseconds until the next attempt is due (0: now). */
uint64_t wc_wb_retry_in_ns(struct wc_cache *c);
/* Sleep until then; wc_wb_retry_now ends the sleep early. */
void wc_wb_backoff_wait(struct wc_cache *c);
/* wc_clear_error: the backoff starts again from its first step, and the
 * next attempt is due now (the caller wakes the write-back thread). */
void wc_wb_retry_now(struct wc_cache *c);
/* wc_writeback after an attempt failed with `err`: true = try again, the
 * backoff waited out; false = stop (the cache's error, or the origin has
 * failed for a minute: the message says so). */
bool wc_wb_drain_retries(struct wc_cache *c, int err);
/* A writer found no free block and nothing but write-back can free one:
 * -ENOSPC, with a message saying since when the origin fails, once the
 * streak has outlasted the writers' patience; else 0 (wait on). */
int wc_wb_refuse_full(struct wc_cache *c, const char *op);
/* The streak has outlasted the writers' patience (no side effect: a writer
 * looks for blocks freed meanwhile before it asks to be refused). */
bool wc_wb_past_patience(struct wc_cache *c);
/* The same for a writer that makes room itself (no_threads): 0 once an
 * attempt is due (at once when none is pending: a host that never polls
 * still sees the origin come back, one attempt per backoff at most), or
 * -ENOSPC past the patience while the next attempt is not due. */
int wc_wb_room_wait(struct wc_cache *c, const char *op);

#endif /* WC_WRITEBACK_H */
