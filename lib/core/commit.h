/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * commit.h -- the commit (commit.c): an epoch's published blocks made
 * durable with one record and one drain, the superseded versions freed
 * after the next, and the dating of epochs for write-back's age rule.
 *
 * Lock order: the write-back lock -> commit.lock -> a shard lock -> a
 * free-list lock.
 */
#ifndef WC_COMMIT_H
#define WC_COMMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/storelock.h"

struct wc_cache;
struct wc_shard;

/* "Epoch `epoch` was committed at `ms`" (ms since the cache opened): a few
 * hundred marks date every entry by its epoch, so entries carry no time. */
struct wc_age_mark {
	uint64_t epoch;
	uint32_t ms;
};
#define WC_AGE_MARKS 256u

struct wc_commit_state {
	struct wc_storelock lock;            /* one commit at a time (storelock.h: why not a mutex) */
	atomic_uint_fast64_t epoch;          /* seq given to new writes */
	atomic_uint_fast64_t committed_seq;  /* the commit point (record or floor) */
	/* Blocks published since the last commit, as the writers report them
	 * in batches (api/io.c): only what triggers autocommit_blocks reads it. */
	atomic_uint_fast64_t published;
	uint64_t durable_floor;              /* sb->seq_count as last drained (lock) */
	atomic_uint_fast32_t last_ms;        /* when the last commit ended (autocommit_ms) */
	struct wc_age_mark age_marks[WC_AGE_MARKS]; /* a ring, under lock */
	uint64_t age_marks_n;                /* marks ever made */
	uint32_t age_mark_every_ms;          /* at most one mark per this */
	uint64_t commits, flushes;           /* under lock */
	/* Superseded blocks on their way to the free lists (under lock; the
	 * count is read lock-free): the first pending_durable were
	 * invalidated durably by the last commit and may be freed, the rest,
	 * which that commit found dead, are invalidated by the next. */
	uint32_t *pending;
	size_t pending_n, pending_cap, pending_durable;
	atomic_uint_fast64_t pending_count;
	/* Superseded versions that no logged block leads to (a failed
	 * write-back, no memory for a log): the next commit looks at every
	 * chain of every shard. */
	atomic_bool superseded_elsewhere;
};

int wc_commit(struct wc_cache *c, bool count_flush);
/* A FUA write's commit: `epoch` is the one its last block was published
 * into (io.c). */
int wc_commit_published(struct wc_cache *c, uint64_t epoch);
/* Persistently invalidate entry idx (seq := WC_NONE, no fence). */
void wc_entry_invalidate(struct wc_cache *c, uint32_t idx);
/* Drop every version of `origin` with seq <= seq_limit that is not under
 * write-back (shard lock held), oldest first and the
 * newest only once the others' invalidations are durable; emit() gets each
 * dropped index (to free after the caller's drain).  Returns how many. */
unsigned wc_versions_drop(struct wc_cache *c, struct wc_shard *s, uint64_t origin, uint64_t seq_limit,
                          void (*emit)(struct wc_cache *, uint32_t, void *), void *emit_arg);
bool wc_autocommit_due(struct wc_cache *c);
/* Were blocks published into an epoch not yet committed?  (Read without
 * locks; exact for writes that completed before the call.) */
bool wc_uncommitted(struct wc_cache *c);
int wc_shard_logs_init(struct wc_cache *c);
/* Shard lock held: make room for n more blocks in s's log of parity par;
 * returns how many fit (fewer only when out of memory). */
unsigned wc_shard_log_room(struct wc_shard *s, unsigned par, unsigned n);
/* Start dating epochs: those below `epoch` count as committed now. */
void wc_age_init(struct wc_cache *c, uint64_t epoch);
/* Every entry with seq below the result was committed at least age_ms ago
 * (within age_ms / 64). */
uint64_t wc_age_horizon(struct wc_cache *c, uint32_t age_ms);
/* Drain and free the blocks the last commit invalidated (see commit.c);
 * for callers that need every free block now. */
void wc_release_freed(struct wc_cache *c);
/* The same with commit_lock held (invariant (8) of commit.c). */
void wc_release_freed_locked(struct wc_cache *c);
/* commit_lock held, before invalidating a committed entry outside a commit:
 * make the floor seq_count cover the last commit (invariant (10)) and the
 * pending invalidations durable. */
void wc_commit_confirm_locked(struct wc_cache *c);
/* Take commit_lock and the shard lock to drop versions of `origin` outside a
 * commit, with the pending invalidations durable (invariant (8)).  Release
 * with wc_unlock_for_drop. */
void wc_lock_for_drop(struct wc_cache *c, struct wc_shard *s);
void wc_unlock_for_drop(struct wc_cache *c, struct wc_shard *s);


#endif /* WC_COMMIT_H */
