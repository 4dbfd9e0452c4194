/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pick.c -- which committed blocks go to the origin next.
 *
 * Blocks are picked in the order the cache holds them, from where the last
 * pick stopped: the allocator sweeps the cache like a log (alloc.c), so this
 * is roughly the order they were written, oldest first, as dm-pcache writes
 * back in log order.  Each pick is grown into a run of its dirty origin
 * neighbours.
 */
#include <limits.h>
#include <stdlib.h>

#include "writeback/internal.h"

/* horizon: in WC_PICK_AGE, only entries with seq below it are old enough. */
static bool eligible(struct wc_cache *c, struct wc_shard *s, uint32_t idx, enum wc_wb_pick_mode mode,
                     uint64_t horizon)
{
	struct wc_entry *e = &c->e[idx];

	if (!wc_is_committed(c, e->seq))
		return false;
	if (mode == WC_PICK_AGE && e->seq >= horizon)
		return false;
	if (mode == WC_PICK_ALL && c->wb->state->range_hi &&
	    (e->origin < c->wb->state->range_lo || e->origin >= c->wb->state->range_hi))
		return false;
	return !wc_index_wb_busy(c, s, e->origin, idx);
}

/* The longest run one origin request carries: writeback_max_io_kib, and
 * never more buffers than one vectored request may have (IOV_MAX: with
 * 512-byte blocks a 1 MiB run would need 2048). */
unsigned wc_wb_max_run_blocks(struct wc_cache *c)
{
	uint64_t n = (uint64_t)c->cfg.writeback_max_io_kib * 1024 / c->layout.block_size;

	return n == 0 ? 1 : n > IOV_MAX ? IOV_MAX : (unsigned)n;
}

/* Take idx for write-back (its shard lock held). */
static void take(struct wc_cache *c, uint32_t *out, unsigned *n, uint32_t idx)
{
	wc_entry_set_flags(&c->e[idx], c->e[idx].flags | WC_E_WB);
	out[(*n)++] = idx;
}

/* Take origin block `block` too if it is dirty, committed and not being
 * written back.  One shard lock at a time, as everywhere. */
static bool take_neighbour(struct wc_cache *c, uint32_t *out, unsigned *n, uint64_t block)
{
	struct wc_shard *s = wc_shard_of(c, block);
	uint32_t idx;
	bool ok;

	wc_spin_lock(&s->lock);
	idx = wc_index_find(c, s, block);
	ok = idx != WC_NIL && !(c->e[idx].flags & WC_E_WB) && eligible(c, s, idx, WC_PICK_ALL, 0);
	if (ok)
		take(c, out, n, idx);
	wc_spin_unlock(&s->lock);
	return ok;
}

/*
 * Grow a run of consecutive origin blocks around a seed, as dm-writecache
 * does from each entry it picks.  Needed because the seeds come in cache
 * order, and concurrent writers interleave their blocks in the cache: taking
 * seeds alone picked every other block of a sequential stream when the
 * seeds came per shard, so nothing merged (measured: 4 KiB per I/O for a
 * sequential working set, 0.40 of the raw bandwidth on /dev/shm).
 */
static void extend_run(struct wc_cache *c, uint32_t *out, unsigned *n, unsigned want,
                       uint64_t seed)
{
	unsigned room = wc_wb_max_run_blocks(c) - 1;

	for (uint64_t b = seed + 1; room && *n < want && b < c->origin_blocks; b++, room--)
		if (!take_neighbour(c, out, n, b))
			break;
	for (uint64_t b = seed; room && *n < want && b > 0; b--, room--)
		if (!take_neighbour(c, out, n, b - 1))
			break;
}

/* Each cache block is looked at with no lock first (free, not current or
 * already being written back: skipped without a lock round), then taken
 * under its shard's lock if it is still what it seemed. */
unsigned wc_wb_pick(struct wc_cache *c, uint64_t *scan, enum wc_wb_pick_mode mode, unsigned want,
                    uint32_t *out)
{
	uint64_t horizon = mode == WC_PICK_AGE ? wc_age_horizon(c, c->cfg.max_age_ms) : 0;
	uint64_t n_blocks = c->layout.n_blocks;
	unsigned n = 0;

	if (mode == WC_PICK_AGE && horizon == 0)
		return 0; /* nothing is that old yet */
	for (uint64_t looked = 0; n < want && looked < n_blocks; looked++) {
		uint32_t idx = (uint32_t)*scan;
		struct wc_entry *e = &c->e[idx];
		unsigned flags = __atomic_load_n(&e->flags, __ATOMIC_RELAXED);
		uint64_t origin = __atomic_load_n(&e->origin, __ATOMIC_RELAXED);
		struct wc_shard *s;
		bool ok;

		*scan = *scan + 1 < n_blocks ? *scan + 1 : 0;
		if (!(flags & WC_E_CURRENT) || (flags & WC_E_WB) || origin >= c->origin_blocks)
			continue;
		s = wc_shard_of(c, origin);
		wc_spin_lock(&s->lock);
		/* Until the origin matches, the entry may belong to another
		 * shard, whose writers change it under their own lock: atomic
		 * loads.  Once it matches and is current, our lock holds it. */
		flags = __atomic_load_n(&e->flags, __ATOMIC_RELAXED);
		ok = __atomic_load_n(&e->origin, __ATOMIC_RELAXED) == origin &&
		     (flags & WC_E_CURRENT) && !(flags & WC_E_WB) && eligible(c, s, idx, mode, horizon);
		if (ok)
			take(c, out, &n, idx);
		wc_spin_unlock(&s->lock);
		if (ok)
			extend_run(c, out, &n, want, origin);
	}
	return n;
}

static int by_origin(const void *a, const void *b, void *arg)
{
	const struct wc_entry *e = arg;
	uint64_t x = e[*(const uint32_t *)a].origin, y = e[*(const uint32_t *)b].origin;

	return x < y ? -1 : x > y;
}

void wc_wb_sort_by_origin(struct wc_cache *c, uint32_t *v, unsigned n)
{
	qsort_r(v, n, sizeof(*v), by_origin, c->e);
}
