/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writers.h -- writer slots (writers.c): how a commit learns, without a
 * lock on the write path, that no thread still publishes into the epoch it
 * closes, and which shards the epoch's writers published into.
 *
 * A thread takes a slot of a cache at its first publication there and
 * keeps it (a small thread-local table, wc_writer_slot_mine) until it
 * exits, when it gives the slot back to the cache if that is still open.
 */
#ifndef WC_WRITERS_H
#define WC_WRITERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct wc_cache;

/*
 * One per writing thread (wc_writers_wait_quiet): whether the thread
 * is inside a publication, and which shards it published into in the epoch
 * of each parity.  Its own line, stored by its thread alone with plain
 * stores and read by the committer.  The last slot is shared by threads
 * that came after the others were taken: they mark it with atomic ORs, and
 * a commit waits for them the way it did for every writer before slots, by
 * seeing each shard lock free.  A thread gives its slot back when it exits
 * (owned 0: the next new writer takes it, marks and all).
 */
#define WC_WRITER_SLOTS 64u
struct wc_writer_slot {
	uint32_t active;
	uint32_t owned; /* a live thread's; 0 once given back */
	bool shared;
	uint64_t shards[2];
} __attribute__((aligned(64)));

struct wc_writers {
	struct wc_writer_slot slot[WC_WRITER_SLOTS];
	atomic_uint used;        /* taken so far; > WC_WRITER_SLOTS - 1: the shared one too */
};

/* Every slot owned (none taken yet), the last one shared. */
void wc_writers_init(struct wc_cache *c);
/* The open caches, so that an exiting thread gives its slots back only to
 * caches still open: at open (it also numbers the open) and at close. */
void wc_writers_register(struct wc_cache *c);
void wc_writers_unregister(struct wc_cache *c);

/* The calling thread's slot of c, taken at its first publication. */
struct wc_writer_slot *wc_writer_slot_mine(struct wc_cache *c);
/* The threads that hold a slot of c now. */
unsigned wc_writer_slots_owned(struct wc_cache *c);
/* The shards some writer published into in the epoch of parity par. */
uint64_t wc_writers_logged(struct wc_cache *c, unsigned par);
/* Forget the marks of parity par (the commit of its epoch read them). */
void wc_writers_clear(struct wc_cache *c, unsigned par);
/* After the epoch moved on: wait until no slot's thread is inside a
 * publication.  True when threads beyond the slots share the last one:
 * the caller must then also see every shard lock free. */
bool wc_writers_wait_quiet(struct wc_cache *c);

/* A publication: enter before the shard lock's exchange (which orders the
 * store before the epoch is read), mark the shard once the epoch is read,
 * exit after the unlock (wc_writers_wait_quiet). */
static inline void wc_writer_enter(struct wc_writer_slot *w)
{
	if (w->shared)
		return;
	__atomic_store_n(&w->active, 1, __ATOMIC_RELAXED);
#if !defined(__x86_64__) && !defined(__i386__)
	/* On x86 the shard lock's exchange orders this store before the
	 * epoch's load; C11 alone does not. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static inline void wc_writer_mark(struct wc_writer_slot *w, unsigned par, unsigned shard)
{
	uint64_t bit = 1ull << shard;

	if (w->shared)
		__atomic_fetch_or(&w->shards[par], bit, __ATOMIC_RELAXED);
	else if (!(__atomic_load_n(&w->shards[par], __ATOMIC_RELAXED) & bit))
		__atomic_store_n(&w->shards[par], w->shards[par] | bit, __ATOMIC_RELAXED);
}

static inline void wc_writer_exit(struct wc_writer_slot *w)
{
	if (!w->shared)
		__atomic_store_n(&w->active, 0, __ATOMIC_RELEASE);
}

#endif /* WC_WRITERS_H */
