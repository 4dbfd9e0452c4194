/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alloc.h -- free cache blocks (alloc.c): WC_FREE_PARTS stacks of block
 * indices, popped and pushed in batches, and a wait for the next free.
 *
 * The allocator only pops, pushes and waits.  What to do when nothing is
 * free -- commit, release what the last commit freed, write back -- is
 * decided above it, by api/reclaim.c.  The free-list locks are innermost:
 * blocks are freed under every other lock.
 */
#ifndef WC_ALLOC_H
#define WC_ALLOC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "util/spinlock.h"

struct wc_cache;

#define WC_FREE_PARTS 8u

/* A stack of free block indices: a batch pops with one lock round and no
 * pointer chasing through the entries. */
struct wc_freelist {
	struct wc_spinlock lock;
	uint32_t *stack;           /* room for every block whose index selects it */
	uint64_t count;
	/* stack[0, cold): free since the cache was opened, on pages this
	 * process may not have touched; stack[cold, count): freed since
	 * (alloc.c). */
	uint64_t cold;
} __attribute__((aligned(64)));

struct wc_alloc {
	struct wc_freelist part[WC_FREE_PARTS];
	uint32_t *table;                 /* the stacks' storage, n_blocks */
	atomic_uint rr;                  /* the stack a batch tries first */
	pthread_mutex_t wait_lock;       /* wc_alloc_wait's sleep */
	pthread_cond_t cond;
	unsigned waiters;
	atomic_uint_fast64_t blocked;    /* writes that found no free block */
};

int wc_freelist_init(struct wc_cache *c);
void wc_freelist_fini(struct wc_cache *c);
/* Pop up to `want` free blocks into out[], one lock round per stack that
 * gives any; 0 when none is free (api/reclaim.c then decides what frees
 * some). */
unsigned wc_alloc_pop(struct wc_cache *c, uint32_t *out, unsigned want);
/* Sleep until a block is freed, 50 ms at most (the caller re-checks the
 * error state and the cleaner mode). */
void wc_alloc_wait(struct wc_cache *c);
/* Give back blocks whose invalidation is already durable. */
void wc_free_batch(struct wc_cache *c, const uint32_t *idx, size_t n);
void wc_freelist_mark_cold(struct wc_cache *c);
uint64_t wc_free_count(struct wc_cache *c);
void wc_wake_freelist_waiters(struct wc_cache *c);

#endif /* WC_ALLOC_H */
