/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crashsim.h -- the power-failure simulator's persistent-image engine.
 *
 * The engine watches one mapping through the flush engine's observer
 * (lib/flush/flush.h) and keeps a *persistent image*: what the media would
 * hold if power failed now.  It knows nothing of the cache's layout; it
 * works on the 64-byte lines of the mapping.
 *
 * Model (x86 ADR, the contract of flush.h):
 *  - attach: the persistent image is the mapping's current content (a
 *    fresh file is all zero, a crash image is what is on the media);
 *  - written(addr, n): every line touched is snapshotted as it is NOW; that
 *    snapshot becomes persistent at the calling thread's next drain.  A
 *    later store to the line without another written() is not covered;
 *  - drained(): the calling thread's snapshots are copied into the
 *    persistent image (SFENCE orders only the issuing thread's stores);
 *  - a crash image is the persistent image plus, for every line that
 *    differs from it in memory (pending or not: the CPU may evict any dirty
 *    line at any time), a random choice of old / flushed snapshot / current
 *    content, either per line or per aligned 8-byte word (torn).  x86
 *    never tears an aligned 8-byte store, so the word is the smallest unit.
 *
 * Crash points: a callback runs before and after every drain takes effect
 * and, with a chosen probability, after written() events (points between
 * drains).  It runs inside the observed code (locks of the cache may be
 * held): capture images there, verify them later.
 */
#ifndef WC_CRASHSIM_H
#define WC_CRASHSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flush/flush.h"
#include "core/testhooks.h"

#define WC_CRASH_LINE 64

struct wc_crashsim;

enum wc_crash_event {
	WC_CRASH_BEFORE_DRAIN, /* drain number `drain` (1-based) is about to take effect */
	WC_CRASH_AFTER_DRAIN,  /* drain number `drain` took effect */
	WC_CRASH_WRITTEN,      /* a point between drains, after a written() event */
	WC_CRASH_UNMAP,        /* the mapping is about to go away */
};

enum wc_crash_mode {
	WC_CRASH_OLD,   /* the persistent image alone: nothing unfenced survived */
	WC_CRASH_NEW,   /* memory as it is: every dirty line was evicted in time */
	WC_CRASH_LINES, /* each differing line: old, flushed snapshot or new */
	WC_CRASH_TORN,  /* each aligned 8-byte word of a differing line chosen alone */
};

/* `drain` is the number of drains that took effect so far (for
 * WC_CRASH_BEFORE_DRAIN: the number of the drain about to). */
typedef void (*wc_crash_point_fn)(void *ctx, struct wc_crashsim *sim,
                                  enum wc_crash_event ev, uint64_t drain);

struct wc_crashsim_config {
	uint64_t seed;               /* random choices of the images */
	unsigned written_per_mille;  /* chance that a written() event is a crash point */
	bool global_drain;           /* a drain by any thread persists every thread's
	                                snapshots (weaker than x86; off by default) */
	unsigned skip_every_nth_drain; /* sabotage, to prove a sweep can fail: every
	                                Nth drain takes no effect, as if its fence
	                                were missing (0 = off) */
	wc_crash_point_fn point;     /* NULL = no callbacks */
	void *ctx;
};

int wc_crashsim_new(struct wc_crashsim **out, const struct wc_crashsim_config *cfg);
void wc_crashsim_free(struct wc_crashsim *sim);

/* The observer to install into a flush policy, and hooks for the cache
 * (lib/testhooks.h) that attach at mapped() and detach at unmapped(). */
const struct wc_persist_observer *wc_crashsim_observer(struct wc_crashsim *sim);
struct wc_test_hooks *wc_crashsim_hooks(struct wc_crashsim *sim);

/* Start watching [base, base+len).  If the previous mapping was detached
 * with the same length and wc_crashsim_forget() was not called since, its
 * persistent image carries over (the same file reopened without a power
 * failure: what was never fenced is still not persistent). */
int wc_crashsim_attach(struct wc_crashsim *sim, void *base, size_t len);
void wc_crashsim_detach(struct wc_crashsim *sim);
void wc_crashsim_forget(struct wc_crashsim *sim);
bool wc_crashsim_attached(struct wc_crashsim *sim);
size_t wc_crashsim_len(struct wc_crashsim *sim);

/* A crash image of the mapping, `len` bytes, into `out`.  -ENODEV when
 * nothing is attached. */
int wc_crashsim_image(struct wc_crashsim *sim, enum wc_crash_mode mode, void *out);
/* The same, written to a new file `path` (created or truncated). */
int wc_crashsim_write_image(struct wc_crashsim *sim, enum wc_crash_mode mode, const char *path);

/* Counters. */
uint64_t wc_crashsim_drains(struct wc_crashsim *sim);
uint64_t wc_crashsim_writes(struct wc_crashsim *sim);   /* written() events */
size_t wc_crashsim_pending(struct wc_crashsim *sim);    /* snapshots not yet drained */
size_t wc_crashsim_dirty_lines(struct wc_crashsim *sim); /* lines differing from the image */
/* written() ranges outside the mapping, misaligned atomic8 stores, events
 * while detached: each is a bug in the observed code or in the test. */
uint64_t wc_crashsim_strays(struct wc_crashsim *sim);

/* The engine's random generator (xoshiro256**), for the test's own choices
 * so that one seed reproduces a whole run.  Thread-safe. */
uint64_t wc_crashsim_random(struct wc_crashsim *sim);
/* A generator on its own, for code that has no simulator. */
struct wc_rng { uint64_t s[4]; };
void wc_rng_seed(struct wc_rng *r, uint64_t seed);
uint64_t wc_rng_next(struct wc_rng *r);

#endif
