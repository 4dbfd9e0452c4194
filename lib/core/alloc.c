/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alloc.c -- free cache blocks.
 *
 * The free blocks are spread over WC_FREE_PARTS stacks, each with its own
 * lock; a thread starts at "its" stack and takes from the others when it has
 * nothing to give, so two writers rarely touch the same lock or cache line.
 * A write takes all the blocks of a request's group at once, one lock round
 * per stack that gives any.  A block enters a free list only after its pmem entry was invalidated AND
 * drained: otherwise a crash after reuse could pair the old entry with new
 * data.  What to do when no block is free (commit, release, write back)
 * is not the allocator's to decide: api/reclaim.c does.
 *
 * Recently freed blocks first, from any stack, before a block that has been
 * free since the cache was opened.  The blocks a writer frees are the
 * versions it superseded, in pages it touched when it wrote them; the blocks
 * free since open lie anywhere in the cache.  A thread that took the latter
 * whenever its own stack had no fresh block (a stack gets one free in
 * WC_FREE_PARTS) walked the whole cache: with a quarter of it written, it
 * touched four times the pages the same writes touch in place, and under a
 * hypervisor whose page translation is costly (this project's VM, 4 KiB
 * pages) QD1 FUA writes ran at two thirds of the rate they reach on
 * reused blocks (wcbench run --fua --no-floor, 6 interleaved pairs: 0.84 M
 * vs 1.29 M IOPS, medians).  Each stack keeps its blocks free since open at its bottom,
 * stack[0, cold), and the recently freed above them.
 */
#include <time.h>

#include "core/cache.h"
#include "util/debug.h"
#include "util/error.h"

static __thread unsigned thread_part = ~0u;

#define WC_FREE_RUN_SHIFT 6u /* runs of 64 blocks: 16 lines of entries */

static unsigned wc_free_part(uint32_t idx)
{
	return (idx >> WC_FREE_RUN_SHIFT) % WC_FREE_PARTS;
}

/* How many blocks of n_blocks one stack may hold. */
static uint64_t wc_free_part_room(uint64_t n_blocks)
{
	uint64_t runs = (n_blocks + (1u << WC_FREE_RUN_SHIFT) - 1) >> WC_FREE_RUN_SHIFT;

	return ((runs + WC_FREE_PARTS - 1) / WC_FREE_PARTS) << WC_FREE_RUN_SHIFT;
}

int wc_freelist_init(struct wc_cache *c)
{
	/* Stack p holds at most the blocks whose wc_free_part() is p. */
	uint64_t per = wc_free_part_room(c->layout.n_blocks);

	c->alloc.table = wc_dram_table(per * WC_FREE_PARTS * sizeof(uint32_t));
	if (!c->alloc.table)
		return wc_err(-ENOMEM, "%s: free lists of %llu blocks", c->cache_path,
		              (unsigned long long)c->layout.n_blocks);
	c->dram_bytes += per * WC_FREE_PARTS * sizeof(uint32_t);
	for (unsigned i = 0; i < WC_FREE_PARTS; i++) {
		atomic_init(&c->alloc.part[i].lock.held, 0);
		c->alloc.part[i].stack = c->alloc.table + i * per;
		c->alloc.part[i].count = 0;
		c->alloc.part[i].cold = 0;
	}
	pthread_mutex_init(&c->alloc.wait_lock, NULL);
	pthread_cond_init(&c->alloc.cond, NULL);
	return 0;
}

void wc_freelist_fini(struct wc_cache *c)
{
	uint64_t per = wc_free_part_room(c->layout.n_blocks);

	if (c->alloc.table)
		wc_dram_table_free(c->alloc.table, per * WC_FREE_PARTS * sizeof(uint32_t));
	c->alloc.table = NULL;
}

uint64_t wc_free_count(struct wc_cache *c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < WC_FREE_PARTS; i++)
		n += __atomic_load_n(&c->alloc.part[i].count, __ATOMIC_RELAXED);
	return n;
}

void wc_freelist_mark_cold(struct wc_cache *c)
{
	for (unsigned i = 0; i < WC_FREE_PARTS; i++) {
		wc_spin_lock(&c->alloc.part[i].lock);
		__atomic_store_n(&c->alloc.part[i].cold, c->alloc.part[i].count, __ATOMIC_RELAXED);
		wc_spin_unlock(&c->alloc.part[i].lock);
	}
}

/* Up to `want` blocks of stack p (lock held): recently freed ones, from its
 * top; or ones free since open, from the top of stack[0, cold), each hole
 * filled with the topmost recent block, so both parts stay contiguous and
 * the old blocks still pop in the order they were pushed.  The counts are
 * also read without the lock (a hint), so they are stored whole. */
static unsigned pop_locked(struct wc_freelist *p, uint32_t *out, unsigned want, bool from_cold)
{
	uint64_t count = p->count, cold = p->cold;
	unsigned n = 0;

	WC_ASSERT(wc_spin_held_by_me(&p->lock));
	WC_ASSERT(cold <= count);

	if (!from_cold)
		while (n < want && count > cold)
			out[n++] = p->stack[--count];
	else
		while (n < want && cold) {
			out[n++] = p->stack[cold - 1];
			p->stack[cold - 1] = p->stack[count - 1];
			cold--;
			count--;
		}
	__atomic_store_n(&p->count, count, __ATOMIC_RELAXED);
	__atomic_store_n(&p->cold, cold, __ATOMIC_RELAXED);
	return n;
}

/* Up to `want` blocks, one lock round per stack that gives any: recently
 * freed ones (this thread's stack first), then ones free since open.  A
 * request's group gets all its blocks here when the cache has them, so it
 * is copied and published in one round: a stack holds only an eighth of the
 * recent frees. */
unsigned wc_alloc_pop(struct wc_cache *c, uint32_t *out, unsigned want)
{
	unsigned got = 0;

	if (thread_part == ~0u)
		thread_part = atomic_fetch_add(&c->alloc.rr, 1);
	for (unsigned from_cold = 0; from_cold < 2 && got < want; from_cold++)
		for (unsigned k = 0; k < WC_FREE_PARTS && got < want; k++) {
			struct wc_freelist *p = &c->alloc.part[(thread_part + k) % WC_FREE_PARTS];
			uint64_t count = __atomic_load_n(&p->count, __ATOMIC_RELAXED);
			uint64_t cold = __atomic_load_n(&p->cold, __ATOMIC_RELAXED);

			if (from_cold ? !cold : count <= cold)
				continue;
			wc_spin_lock(&p->lock);
			got += pop_locked(p, out + got, want - got, from_cold);
			wc_spin_unlock(&p->lock);
		}
#ifdef WC_DEBUG
	/* A popped block is free: unindexed, no flags, odd generation
	 * (push_locked). */
	for (unsigned i = 0; i < got; i++)
		WC_ASSERT(out[i] < c->layout.n_blocks && c->e[out[i]].flags == 0 &&
		          (__atomic_load_n(&c->e[out[i]].gen, __ATOMIC_RELAXED) & 1));
#endif
	return got;
}

void wc_wake_freelist_waiters(struct wc_cache *c)
{
	/* Pairs with wait_for_free: it counts itself in, then re-checks the
	 * free count; we published the blocks, then look for waiters.  Its
	 * timed wait bounds any wake-up lost to the race. */
	if (!__atomic_load_n(&c->alloc.waiters, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&c->alloc.wait_lock);
	if (c->alloc.waiters)
		pthread_cond_broadcast(&c->alloc.cond);
	pthread_mutex_unlock(&c->alloc.wait_lock);
}

void wc_alloc_wait(struct wc_cache *c)
{
	/* Timed: re-check errors and cleaner mode, and bound any wake-up lost
	 * to the race with wc_wake_freelist_waiters. */
	struct timespec ts = wc_clock_deadline_ms(50);

	pthread_mutex_lock(&c->alloc.wait_lock);
	__atomic_fetch_add(&c->alloc.waiters, 1, __ATOMIC_SEQ_CST);
	if (wc_free_count(c) == 0)
		pthread_cond_timedwait(&c->alloc.cond, &c->alloc.wait_lock, &ts);
	__atomic_fetch_sub(&c->alloc.waiters, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->alloc.wait_lock);
}

static void push_locked(struct wc_cache *c, struct wc_freelist *p, uint32_t idx)
{
	struct wc_entry *e = &c->e[idx];

	/* Nothing frees a block still indexed, current or under write-back
	 * (a version under write-back is freed by write-back's finish). */
	WC_ASSERT(!(e->flags & (WC_E_INDEXED | WC_E_CURRENT | WC_E_WB)));
	WC_ASSERT(wc_spin_held_by_me(&p->lock));
	WC_ASSERT(p->count < wc_free_part_room(c->layout.n_blocks));
	wc_entry_set_flags(e, 0);
	/* Before the block can be handed out again: a reader that copied out
	 * of it with no lock sees the change (io.c, read_block). */
	__atomic_store_n(&e->gen, (uint16_t)(__atomic_load_n(&e->gen, __ATOMIC_RELAXED) + 1),
	                 __ATOMIC_RELEASE);
	/* Odd while free (io.c, read_block). */
	WC_ASSERT(__atomic_load_n(&e->gen, __ATOMIC_RELAXED) & 1);
	wc_entry_set_origin(e, WC_NONE);
	e->seq = WC_NONE;
	p->stack[p->count] = idx;
	__atomic_store_n(&p->count, p->count + 1, __ATOMIC_RELAXED);
}

/* A block goes back to the stack its index selects (runs of WC_FREE_RUN
 * blocks per stack, so frees spread evenly and no stack runs dry while
 * another hoards, yet a stack hands out neighbours).  Pushed last to first,
 * so a batch pops in the order given: recovery and write-back free in
 * ascending order, and the next writes land on neighbouring blocks, data
 * and entry lines.  One lock round per stack per chunk. */
static void free_chunk(struct wc_cache *c, const uint32_t *idx, size_t n)
{
	uint32_t sorted[256];
	size_t count[WC_FREE_PARTS] = {0}, at[WC_FREE_PARTS];

	for (size_t i = 0; i < n; i++)
		count[wc_free_part(idx[i])]++;
	at[0] = 0;
	for (unsigned p = 1; p < WC_FREE_PARTS; p++)
		at[p] = at[p - 1] + count[p - 1];
	for (size_t i = n; i-- > 0;)
		sorted[at[wc_free_part(idx[i])]++] = idx[i];
	for (unsigned p = 0, first = 0; p < WC_FREE_PARTS; first += (unsigned)count[p], p++) {
		struct wc_freelist *fl = &c->alloc.part[p];

		if (!count[p])
			continue;
		wc_spin_lock(&fl->lock);
		for (size_t i = first; i < first + count[p]; i++)
			push_locked(c, fl, sorted[i]);
		wc_spin_unlock(&fl->lock);
	}
}

void wc_free_batch(struct wc_cache *c, const uint32_t *idx, size_t n)
{
	if (!n)
		return;
	/* Chunks from the end, so the order given survives across chunks. */
	while (n) {
		size_t k = n < 256 ? n : 256;

		free_chunk(c, idx + n - k, k);
		n -= k;
	}
	wc_wake_freelist_waiters(c);
}
