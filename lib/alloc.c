/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alloc.c -- free cache blocks.
 *
 * The free blocks are spread over WC_FREE_PARTS stacks, each with its own
 * lock; a thread starts at "its" stack and steals from the others when it is
 * empty, so two writers rarely touch the same lock or cache line.  A write
 * takes all the blocks of a request's group in one lock round.  A block enters a
 * free list only after its pmem entry was invalidated AND drained: otherwise a
 * crash after reuse could pair the old entry with new data.
 */
#include <time.h>

#include "cache_impl.h"
#include "error.h"

static __thread unsigned thread_part = ~0u;

int wc_freelist_init(struct wc_cache *c)
{
	/* Block idx goes to stack idx % WC_FREE_PARTS. */
	uint64_t per = (c->layout.n_blocks + WC_FREE_PARTS - 1) / WC_FREE_PARTS;

	c->free_table = wc_dram_table(per * WC_FREE_PARTS * sizeof(uint32_t));
	if (!c->free_table)
		return wc_err(-ENOMEM, "%s: free lists of %llu blocks", c->cache_path,
		              (unsigned long long)c->layout.n_blocks);
	c->dram_bytes += per * WC_FREE_PARTS * sizeof(uint32_t);
	for (unsigned i = 0; i < WC_FREE_PARTS; i++) {
		pthread_mutex_init(&c->free[i].lock, NULL);
		c->free[i].stack = c->free_table + i * per;
		c->free[i].count = 0;
	}
	pthread_mutex_init(&c->free_wait_lock, NULL);
	pthread_cond_init(&c->free_cond, NULL);
	return 0;
}

void wc_freelist_fini(struct wc_cache *c)
{
	uint64_t per = (c->layout.n_blocks + WC_FREE_PARTS - 1) / WC_FREE_PARTS;

	if (c->free_table)
		wc_dram_table_free(c->free_table, per * WC_FREE_PARTS * sizeof(uint32_t));
	c->free_table = NULL;
}

uint64_t wc_free_count(struct wc_cache *c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < WC_FREE_PARTS; i++)
		n += __atomic_load_n(&c->free[i].count, __ATOMIC_RELAXED);
	return n;
}

/* Up to `want` blocks from the first list that has any, in one lock round. */
static unsigned pop_some(struct wc_cache *c, uint32_t *out, unsigned want)
{
	if (thread_part == ~0u)
		thread_part = atomic_fetch_add(&c->free_rr, 1);
	for (unsigned k = 0; k < WC_FREE_PARTS; k++) {
		struct wc_freelist *p = &c->free[(thread_part + k) % WC_FREE_PARTS];
		unsigned n = 0;

		if (!__atomic_load_n(&p->count, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_lock(&p->lock);
		while (n < want && p->count > n) {
			out[n] = p->stack[p->count - 1 - n];
			n++;
		}
		__atomic_store_n(&p->count, p->count - n, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&p->lock);
		if (n)
			return n;
	}
	return 0;
}

void wc_wake_freelist_waiters(struct wc_cache *c)
{
	/* Pairs with wait_for_free: it counts itself in, then re-checks the
	 * free count; we published the blocks, then look for waiters.  Its
	 * timed wait bounds any wake-up lost to the race. */
	if (!__atomic_load_n(&c->free_waiters, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&c->free_wait_lock);
	if (c->free_waiters)
		pthread_cond_broadcast(&c->free_cond);
	pthread_mutex_unlock(&c->free_wait_lock);
}

static void wait_for_free(struct wc_cache *c)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 50 * 1000 * 1000; /* re-check errors and cleaner mode */
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&c->free_wait_lock);
	__atomic_fetch_add(&c->free_waiters, 1, __ATOMIC_SEQ_CST);
	if (wc_free_count(c) == 0)
		pthread_cond_timedwait(&c->free_cond, &c->free_wait_lock, &ts);
	__atomic_fetch_sub(&c->free_waiters, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->free_wait_lock);
}

int wc_alloc_blocks(struct wc_cache *c, uint32_t *out, unsigned want)
{
	bool counted = false;

	for (;;) {
		unsigned n = pop_some(c, out, want);
		int err;

		if (n) {
			if (wc_writeback_due(c))
				wc_writeback_kick(c);
			return (int)n;
		}
		err = wc_has_error(c);
		if (err)
			return wc_err(-EIO, "%s: no free cache block and the cache is in error state (%d)",
			              c->cache_path, err);
		if (!counted) {
			atomic_fetch_add(&c->blocked_on_freelist, 1);
			counted = true;
		}
		/* Only committed blocks can be written back: a cache full of
		 * uncommitted blocks needs a commit before anything frees up. */
		if (atomic_load(&c->uncommitted[0]) || atomic_load(&c->uncommitted[1])) {
			err = wc_commit(c, false);
			if (err)
				return err;
			continue;
		}
		if (atomic_load(&c->pending_count)) {
			wc_release_freed(c);
			continue;
		}
		if (c->cfg.no_threads) {
			/* The host's thread is ours now: nobody else will free. */
			/* A failed round leaves its blocks dirty and backs off:
			 * retry until it succeeds or turns into the sticky error. */
			err = wc_writeback_round(c, false);
			if (err == -EIO && !wc_has_error(c))
				continue;
			if (err < 0)
				return err;
			if (err == 0 && wc_free_count(c) == 0) {
				err = wc_writeback_round(c, true);
				if (err == -EIO && !wc_has_error(c))
					continue;
				if (err < 0)
					return err;
				if (err == 0 && wc_free_count(c) == 0)
					return wc_err(-ENOSPC, "%s: no free block and nothing to write back",
					              c->cache_path);
			}
			continue;
		}
		wc_writeback_kick(c);
		wait_for_free(c);
	}
}

static void push_locked(struct wc_cache *c, struct wc_freelist *p, uint32_t idx)
{
	struct wc_entry *e = &c->e[idx];

	e->flags = 0;
	/* Before the block can be handed out again: a reader that copied out
	 * of it with no lock sees the change (io.c, read_block). */
	__atomic_store_n(&e->gen, __atomic_load_n(&e->gen, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
	e->origin = WC_NONE;
	e->seq = WC_NONE;
	e->prev = e->next = WC_NIL;
	p->stack[p->count] = idx;
	__atomic_store_n(&p->count, p->count + 1, __ATOMIC_RELAXED);
}

void wc_free_batch(struct wc_cache *c, const uint32_t *idx, size_t n)
{
	if (!n)
		return;
	/* A block goes back to the list its index selects, so frees spread
	 * evenly and no list runs dry while another hoards; one lock per list
	 * per batch, not per block. */
	for (unsigned p = 0; p < WC_FREE_PARTS; p++) {
		struct wc_freelist *fl = &c->free[p];
		bool locked = false;

		/* Pushed last to first, so a batch pops in the order given
		 * (recovery and write-back free in ascending order: the next
		 * writes land on neighbouring blocks and entry lines). */
		for (size_t i = n; i-- > 0;) {
			if (idx[i] % WC_FREE_PARTS != p)
				continue;
			if (!locked) {
				pthread_mutex_lock(&fl->lock);
				locked = true;
			}
			push_locked(c, fl, idx[i]);
		}
		if (locked)
			pthread_mutex_unlock(&fl->lock);
	}
	wc_wake_freelist_waiters(c);
}
