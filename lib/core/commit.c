/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * commit.c -- the commit protocol (group commit, autocommit).
 *
 * NOTES ON THE DESIGN
 *
 * Definitions.
 *   epoch          the seq that new writes stamp into their entries (DRAM).
 *   record         a commit record (format.h): {E+1, count, digest, crc} in
 *                  slot E % 2 of the superblock, written by the commit of E.
 *   seq_count      the superblock's durable floor: every epoch below it is
 *                  committed, whatever the records say.
 *   commit point   of an image: the floor, or the newest record's E+1 if its
 *                  CRC holds and the entries with seq == E match its count
 *                  and digest (wc_commit_point).  committed = seq below it.
 *                  Recovery keeps, per origin block, the committed entry
 *                  with the highest seq and drops everything else.
 *
 * Invariants.
 *   (1) A writer's data is persistent before its entry is stored: it copies
 *       into a block nobody else can see, then its next locked instruction
 *       (the shard lock's exchange, after wc_persist_order_before_lock) orders
 *       the copy before the entry store.  It reads the epoch, stores the
 *       entries and logs them in the shard's log of
 *       the epoch (wc_shard.log) under that lock.
 *   (2) The commit of E first moves new writers to E+1, then waits until
 *       every writer's slot was seen outside a publication
 *       (wait_epoch_quiet): every entry of E is stored and logged, and by
 *       (1) its data is persistent.
 *   (3) The commit point moves atomically: a record is one line whose CRC
 *       and digest either match everything it claims or make it void, and
 *       seq_count is one aligned 8-byte store.
 *   (4) Committed entries are immutable until invalidated; a block is never
 *       written twice in one life (every write takes a fresh block).
 *   (5) An invalidation (seq := NONE) is drained BEFORE its block returns
 *       to a free list, so a reused block never pairs an old entry with new
 *       data.  Superseded blocks are invalidated with the next commit's
 *       entries and freed after its drain, by the commit after it
 *       (invalidate_pending, release_pending), or by wc_release_freed()
 *       sooner.
 *   (6) A commit with no block allocated in its epoch issues no fence.
 *   (7) Versions of one block are invalidated oldest first: an older
 *       version's invalidation is durable before a newer one's is issued,
 *       so no crash leaves an older version valid with the newer gone
 *       (wc_versions_drop; close, discard and write-back release the
 *       pending invalidations first).
 *   (8) A version that a commit unlinked (free_superseded) is no longer on
 *       its chain, so wc_versions_drop cannot order it, and it stays valid
 *       on pmem until the next commit invalidates it.  Whoever invalidates a
 *       newer version of a block outside a commit (write-back's finish,
 *       discard, close) therefore holds commit_lock while it does, and
 *       first invalidates and drains the pending blocks itself
 *       (wc_lock_for_drop -> wc_commit_confirm_locked).  Without this, a
 *       crash could keep the unlinked older version valid with the newer
 *       one invalidated, resurrecting stale data.
 *   (9) One drain per commit.  The commit of E flushes E's entries, the
 *       pending invalidations and its record, then drains once.  A crash
 *       before that drain completes leaves any subset durable: a record
 *       without all of E's entries does not match (count, digest) and the
 *       commit point stays at the other slot's record, which was durable
 *       before this commit began.  The record's entry count is read back
 *       from pmem, so a version superseded within its own epoch (already
 *       invalidated) is not counted, and a block that a discard dropped and
 *       a writer reused within one epoch counts once (its logged gen).
 *  (10) Nothing invalidates an entry that the newest record counts until
 *       seq_count covers that record: write-back and discard raise the
 *       floor and drain first (wc_commit_confirm_locked), and the entries a
 *       commit's pending invalidations hit are older than the record's
 *       epoch or were never counted.  Otherwise the record would stop
 *       matching and a crash would roll back an acknowledged commit.
 *       Recovery makes its commit point durable (floor up, records above it
 *       erased) before it invalidates anything.
 *  (11) The commit of e frees, per block its epoch wrote, only the versions
 *       older than the block's newest version with seq <= e (its chain
 *       lists versions newest first).  A version that a write of e + 1
 *       superseded -- another thread's, landing while this commit runs --
 *       is still what a crash before the next commit must show.  Nothing
 *       but the chains tracks superseded versions: no list per shard, no
 *       per-block link to unlink on the write path.
 *
 * The power-failure simulator checks (1), (9), (10) and (11) by mutation:
 * without the ordering of (1), the digest check of (9), the floor of (10)
 * or the committed-only rule of (11), the sweep finds violations
 * (tests/crash-regressions; (11) by the race workload).
 *
 * Why a writer need not fence (x86).  A locked instruction evicts the CPU's
 * write-combining buffers (non-temporal stores) and waits for its earlier
 * CLFLUSHOPT/CLWB (Intel SDM vol. 2, CLFLUSHOPT; vol. 3 11.3.1; AMD APM
 * vol. 2 7.4.2); the writer's first locked instruction after its copy comes
 * before its entry store, and the committer sees the writer's unlock before
 * it flushes the entries (the committer flushes them: a flush of another
 * CPU's dirty line is coherent).  dm-writecache leans on the same fact
 * ("wc_unlock serves as a memory barrier").  Elsewhere the writer drains
 * (wc_persist_order_before_lock).
 *
 * Transitions -> function:
 *   free -> uncommitted          io.c publish (under the shard lock)
 *   uncommitted -> committed     wc_commit
 *   committed -> superseded      io.c publish (a newer version)
 *   superseded -> pending        free_superseded (the commit, before its
 *                                drain; DRAM only)
 *   pending -> free              invalidate_pending (next commit), its
 *                                drain, release_pending (the commit after
 *                                it, or wc_release_freed)
 *   committed -> under wb -> free writeback.c, after the origin is durable
 *   any -> free                  io.c wc_discard (invalidate, drain, free)
 */
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/testhooks.h"
#include "util/debug.h"
#include "util/error.h"

/*
 * The commit state's invariants, checked in a debug build where commit_lock
 * is taken and released (as SQLite's assert_pager_state): the pending
 * blocks' bookkeeping, the epochs' order, the durable floor below the
 * commit point, and the age marks in epoch order.
 */
#ifdef WC_DEBUG
static bool commit_state_ok(struct wc_cache *c)
{
	struct wc_commit_state *cs = &c->commit;
	uint64_t epoch = atomic_load(&cs->epoch), committed = atomic_load(&cs->committed_seq);

	if (!wc_storelock_is_held(&cs->lock))
		return false;
	if (cs->pending_durable > cs->pending_n || cs->pending_n > cs->pending_cap)
		return false;
	if (atomic_load_explicit(&cs->pending_count, memory_order_relaxed) != cs->pending_n)
		return false;
	/* Epoch e is the writers' until its commit makes committed e + 1. */
	if (committed > epoch + 1 || cs->durable_floor > committed)
		return false;
	if (cs->age_marks_n >= 2) {
		const struct wc_age_mark *last = &cs->age_marks[(cs->age_marks_n - 1) % WC_AGE_MARKS];
		const struct wc_age_mark *prev = &cs->age_marks[(cs->age_marks_n - 2) % WC_AGE_MARKS];

		if (prev->epoch > last->epoch)
			return false;
	}
	return true;
}
#define ASSERT_COMMIT_STATE(c) WC_ASSERT(commit_state_ok(c))
#else
#define ASSERT_COMMIT_STATE(c) ((void)0)
#endif

void wc_entry_invalidate(struct wc_cache *c, uint32_t idx)
{
	struct wc_pmem_entry *pe = wc_pmem_entry(c->base, &c->layout, idx);

	wc_persist_store8(&c->fp, &pe->seq, WC_NONE);
}

/* version_drop without the invalidation, which the caller does later. */
static void version_unlink(struct wc_cache *c, struct wc_shard *s, uint32_t idx)
{
	struct wc_entry *e = &c->e[idx];

	WC_ASSERT(wc_spin_held_by_me(&s->lock));
	/* A current version is on its chain (reads find it there). */
	WC_ASSERT(!(e->flags & WC_E_CURRENT) || (e->flags & WC_E_INDEXED));
	WC_ASSERT(!(e->flags & WC_E_CURRENT) || s->current > 0);
	if (e->flags & WC_E_CURRENT)
		s->current--;
	if (e->flags & WC_E_INDEXED)
		wc_index_remove(c, s, idx);
	wc_entry_set_flags(e, e->flags & ~(WC_E_CURRENT | WC_E_SUPERSEDED));
}

/* Unlink a version (shard lock held) and invalidate it; the
 * caller drains before freeing it. */
static void version_drop(struct wc_cache *c, struct wc_shard *s, uint32_t idx)
{
	version_unlink(c, s, idx);
	wc_entry_invalidate(c, idx);
}

struct newest_arg {
	uint64_t limit;
	uint32_t newest;
};

static void find_newest(struct wc_cache *c, struct wc_shard *s, uint32_t idx, void *arg)
{
	struct newest_arg *a = arg;

	(void)s;
	if (c->e[idx].seq <= a->limit && !(c->e[idx].flags & WC_E_WB) &&
	    (a->newest == WC_NIL || c->e[idx].seq > c->e[a->newest].seq))
		a->newest = idx;
}

struct drop_arg {
	uint64_t limit;
	uint32_t keep;
	unsigned n;
	void (*emit)(struct wc_cache *, uint32_t, void *);
	void *emit_arg;
};

static void drop_older(struct wc_cache *c, struct wc_shard *s, uint32_t idx, void *arg)
{
	struct drop_arg *d = arg;

	if (idx == d->keep || c->e[idx].seq > d->limit || (c->e[idx].flags & WC_E_WB))
		return;
	/* Invariant (7): only versions older than the one kept for last. */
	WC_ASSERT(c->e[idx].seq <= c->e[d->keep].seq);
	version_drop(c, s, idx);
	d->emit(c, idx, d->emit_arg);
	d->n++;
}

unsigned wc_versions_drop(struct wc_cache *c, struct wc_shard *s, uint64_t origin, uint64_t seq_limit,
                          void (*emit)(struct wc_cache *, uint32_t, void *), void *emit_arg)
{
	struct newest_arg na = { seq_limit, WC_NIL };
	struct drop_arg d = { seq_limit, WC_NIL, 0, emit, emit_arg };

	wc_index_each_version(c, s, origin, find_newest, &na);
	if (na.newest == WC_NIL)
		return 0;
	d.keep = na.newest;
	wc_index_each_version(c, s, origin, drop_older, &d);
	/* The older versions' invalidations must be durable before the newest
	 * one's: otherwise a crash could keep an older version valid with the
	 * newest gone, and recovery would resurrect stale data. */
	if (d.n)
		wc_persist_drain(&c->fp);
	version_drop(c, s, na.newest);
	emit(c, na.newest, emit_arg);
	return d.n + 1;
}

static int pending_push(struct wc_cache *c, uint32_t idx)
{
	if (c->commit.pending_n == c->commit.pending_cap) {
		size_t cap = c->commit.pending_cap ? c->commit.pending_cap * 2 : 256;
		uint32_t *nv = realloc(c->commit.pending, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		c->commit.pending = nv;
		c->commit.pending_cap = cap;
	}
	c->commit.pending[c->commit.pending_n++] = idx;
	return 0;
}

/* commit_lock held, after a drain by this thread that followed the
 * invalidation of the first n pending blocks: they may be reused. */
static void release_pending(struct wc_cache *c, size_t n)
{
	WC_ASSERT(n <= c->commit.pending_n && c->commit.pending_durable <= c->commit.pending_n);
	if (!n)
		return;
#ifdef WC_DEBUG
	/* Invariant (5): a block returns to a free list only invalidated. */
	for (size_t i = 0; i < n; i++)
		WC_ASSERT(wc_pmem_entry(c->base, &c->layout, c->commit.pending[i])->seq == WC_NONE);
#endif
	wc_free_batch(c, c->commit.pending, n);
	memmove(c->commit.pending, c->commit.pending + n, (c->commit.pending_n - n) * sizeof(*c->commit.pending));
	c->commit.pending_n -= n;
	c->commit.pending_durable = c->commit.pending_durable > n ? c->commit.pending_durable - n : 0;
	atomic_store_explicit(&c->commit.pending_count, c->commit.pending_n, memory_order_relaxed);
}

/* Shard s's chain for origin block `origin`, after the commit of epoch e
 * (shard lock held): the versions older than the newest committed one are
 * dead.  The chain lists versions newest first (index.c), so every
 * superseded version after the first with seq <= e goes -- except one being
 * written back, which write-back's completion drops.  Returns false if out
 * of memory (the rest waits for a later commit). */
static bool free_dead_versions(struct wc_cache *c, struct wc_shard *s, uint64_t origin, uint64_t e)
{
	bool newest_seen = false;
	uint32_t i = *wc_bucket(s, origin), next;

	for (; i != WC_NIL; i = next) {
		struct wc_entry *v = &c->e[i];

		next = v->hash_next; /* version_unlink takes i off the chain */
		if (v->origin != origin || v->seq > e)
			continue;
		if (!newest_seen) {
			newest_seen = true;
			continue;
		}
		if (!(v->flags & WC_E_SUPERSEDED) || (v->flags & WC_E_WB))
			continue;
		if (pending_push(c, i))
			return false;
		version_unlink(c, s, i);
	}
	return true;
}

/* Every chain of shard s (shard lock held): the slow way, for versions that
 * no logged block leads to. */
static bool free_dead_everywhere(struct wc_cache *c, struct wc_shard *s, uint64_t e)
{
	for (uint32_t b = 0; b <= s->bucket_mask; b++) {
	again:
		for (uint32_t i = s->buckets[b]; i != WC_NIL; i = c->e[i].hash_next) {
			size_t before = c->commit.pending_n;

			if (!(c->e[i].flags & WC_E_SUPERSEDED) || (c->e[i].flags & WC_E_WB))
				continue;
			if (!free_dead_versions(c, s, c->e[i].origin, e))
				return false;
			if (c->commit.pending_n != before)
				goto again; /* the chain changed under i */
		}
	}
	return true;
}

/* The commit of epoch e, before its drain: the versions its writers
 * superseded are dead once that drain makes e's record durable.  Unlink them
 * into `pending` (DRAM only, under commit_lock, so nobody invalidates them
 * before the commit point: invariant (8)); their invalidations go out with
 * the next commit's entries and share its drain, and they join the free
 * lists only after that (invariant (5), release_pending).  Issuing them in
 * this commit would make a FUA write pay a third memory round trip (data
 * and entry, commit record, invalidations).  Until then they stay valid on
 * pmem, older than the committed newer version that recovery prefers.
 * Done before the drain so that nothing after it takes a locked
 * instruction (storelock.h). */
static void free_superseded(struct wc_cache *c, uint64_t e, uint64_t logged)
{
	unsigned par = e & 1;
	bool everywhere = atomic_exchange(&c->commit.superseded_elsewhere, false), ok = true;

	if (everywhere)
		logged = ~0ull;
	for (uint64_t m = logged; m; m &= m - 1) {
		struct wc_shard *s = &c->shards[__builtin_ctzll(m)];
		uint32_t n = __atomic_load_n(&s->log_n[par], __ATOMIC_RELAXED);

		wc_spin_lock(&s->lock);
		for (uint32_t i = 0; i < n && ok; i++) {
			const struct wc_logged *l = &s->log[par][i];
			const struct wc_entry *v = &c->e[l->idx];

			/* Still that life of the block, still indexed. */
			if (__atomic_load_n(&v->gen, __ATOMIC_RELAXED) == l->gen && (v->flags & WC_E_INDEXED))
				ok = free_dead_versions(c, s, v->origin, e);
		}
		if (ok && (s->log_lost[par] || everywhere)) /* under the lock */
			ok = free_dead_everywhere(c, s, e);
		wc_spin_unlock(&s->lock);
	}
	if (!ok)
		atomic_store(&c->commit.superseded_elsewhere, true); /* out of memory: later */
	atomic_store_explicit(&c->commit.pending_count, c->commit.pending_n, memory_order_relaxed);
}

/* Empty the shards' logs of e, once free_superseded and flush_entry_log
 * have read them, and the writers' marks of them.  No lock: the epoch of
 * this parity is the next writers' but one, and the commit of e + 1 must
 * end before anyone logs or marks here again. */
static void logs_reset(struct wc_cache *c, uint64_t e, uint64_t logged)
{
	for (uint64_t m = logged; m; m &= m - 1) {
		struct wc_shard *s = &c->shards[__builtin_ctzll(m)];

		__atomic_store_n(&s->log_n[e & 1], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->log_lost[e & 1], false, __ATOMIC_RELAXED);
	}
	wc_writers_clear(c, (unsigned)(e & 1));
}

/* commit_lock held: issue the invalidations of pending blocks [from, to);
 * the caller's next drain makes them durable. */
static void invalidate_pending(struct wc_cache *c, size_t from, size_t to)
{
	const void *flushed = NULL;

	/* Every store first, then each line's flush once: a flush may evict
	 * the line (CLFLUSHOPT; CLWB on some CPUs), and the next store into
	 * it would wait for a read-for-ownership (a group's entries share
	 * lines). */
	for (size_t i = from; i < to; i++)
		__atomic_store_n(&wc_pmem_entry(c->base, &c->layout, c->commit.pending[i])->seq, WC_NONE,
		                 __ATOMIC_RELAXED);
	for (size_t i = from; i < to; i++) {
		const void *line = wc_line_of(wc_pmem_entry(c->base, &c->layout, c->commit.pending[i]));

		if (line != flushed)
			wc_persist_range(&c->fp, line, 64);
		flushed = line;
	}
}

/* Invalidate what is not yet durably invalid, drain if that or the caller
 * stored anything, free every pending block. */
static void release_all_pending(struct wc_cache *c, bool stored)
{
	if (c->commit.pending_n > c->commit.pending_durable) {
		invalidate_pending(c, c->commit.pending_durable, c->commit.pending_n);
		stored = true;
	}
	if (stored)
		wc_persist_drain(&c->fp);
	release_pending(c, c->commit.pending_n);
}

void wc_release_freed_locked(struct wc_cache *c)
{
	release_all_pending(c, false);
}

void wc_release_freed(struct wc_cache *c)
{
	if (!atomic_load_explicit(&c->commit.pending_count, memory_order_relaxed))
		return;
	wc_storelock_lock(&c->commit.lock);
	wc_release_freed_locked(c);
	wc_storelock_unlock(&c->commit.lock);
}

/* Start write-back of the entries epoch e published and add up its record:
 * the entries that still hold seq == e (one superseded within its own epoch
 * was invalidated at once).  False if a block could not be logged: then not
 * every entry is known, and the commit falls back to the two-drain
 * protocol. */
static bool flush_entry_log(struct wc_cache *c, uint64_t e, uint64_t logged,
                            struct wc_pmem_record *rec)
{
	unsigned par = e & 1;
	bool complete = true;
	/* The last few lines flushed: blocks of one sweep line are published
	 * into different shards, so neighbours in a pmem line come from
	 * different logs. */
	const void *flushed[8] = {0};
	unsigned next = 0;

	rec->seq = e + 1;
	rec->count = rec->digest = 0;
	for (uint64_t m = logged; m; m &= m - 1) {
		const struct wc_shard *s = &c->shards[__builtin_ctzll(m)];
		uint32_t n = __atomic_load_n(&s->log_n[par], __ATOMIC_RELAXED);

		complete &= !__atomic_load_n(&s->log_lost[par], __ATOMIC_RELAXED);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t idx = s->log[par][i].idx;
			const struct wc_pmem_entry *pe = wc_pmem_entry(c->base, &c->layout, idx);

			/* A block a discard dropped (and freed) within its
			 * epoch may be logged twice; only its current life
			 * counts. */
			if (__atomic_load_n(&c->e[idx].gen, __ATOMIC_RELAXED) != s->log[par][i].gen)
				continue;
			if (pe->seq == e) {
				rec->count++;
				rec->digest += wc_entry_digest(idx, pe->origin_block, e);
			}
		}
	}
	/* Flushes after every read: a flush may evict the line (CLFLUSHOPT;
	 * CLWB on some CPUs), and neighbouring entries share lines. */
	for (uint64_t m = logged; m; m &= m - 1) {
		const struct wc_shard *s = &c->shards[__builtin_ctzll(m)];
		uint32_t n = __atomic_load_n(&s->log_n[par], __ATOMIC_RELAXED);

		for (uint32_t i = 0; i < n; i++) {
			const void *line = wc_line_of(wc_pmem_entry(c->base, &c->layout, s->log[par][i].idx));
			bool seen = false;

			for (unsigned j = 0; j < 8; j++)
				seen |= flushed[j] == line;
			if (seen)
				continue;
			wc_persist_range(&c->fp, line, 64);
			flushed[next++ % 8] = line;
		}
	}
	rec->crc = wc_record_crc(rec);
	return complete;
}

/* A writer marks its slot under the shard lock whenever it publishes,
 * logged or not (io.c, publish): a shard is marked in an epoch's parity
 * exactly when its log of that parity is not empty or lost a block. */
bool wc_uncommitted(struct wc_cache *c)
{
	return (wc_writers_logged(c, 0) | wc_writers_logged(c, 1)) != 0;
}

int wc_shard_logs_init(struct wc_cache *c)
{
	/* Room for four autocommit batches spread over the shards; a shard
	 * that needs more grows its log (wc_shard_log_room). */
	uint64_t cap = (uint64_t)c->cfg.autocommit_blocks * 4 / WC_SHARDS + WC_GROUP;

	for (unsigned k = 0; k < WC_SHARDS; k++)
		for (unsigned par = 0; par < 2; par++) {
			struct wc_shard *s = &c->shards[k];

			s->log[par] = malloc(cap * sizeof(struct wc_logged));
			if (!s->log[par])
				return wc_err(-ENOMEM, "%s: commit logs", c->cache_path);
			s->log_cap[par] = (uint32_t)cap;
		}
	c->dram_bytes += WC_SHARDS * 2 * cap * sizeof(struct wc_logged);
	return 0;
}

unsigned wc_shard_log_room(struct wc_shard *s, unsigned par, unsigned n)
{
	uint32_t need = s->log_n[par] + n;

	if (need > s->log_cap[par]) {
		/* Rare: once a shard's log fits its busiest epoch it stays. */
		uint32_t cap = s->log_cap[par] * 2 > need ? s->log_cap[par] * 2 : need;
		struct wc_logged *nl = realloc(s->log[par], cap * sizeof(*nl));

		if (!nl)
			return s->log_cap[par] - s->log_n[par];
		s->log[par] = nl;
		s->log_cap[par] = cap;
	}
	return n;
}

/*
 * After the epoch moved to e + 1: wait until no writer still publishes into
 * e, and return the shards that logged (or failed to log) a block of e.  A
 * writer marks its slot active (wc_writer_enter), then takes its shard
 * lock, whose exchange orders that store before its read of the epoch; we
 * stored e + 1 with a locked instruction before we look at the slot.  So
 * either the writer read e + 1, or we see its slot active and wait until it
 * exits, after its unlock, its entries, log slots and mark stored.  One line
 * per writing thread instead of one per shard: a FUA write's commit looked
 * at all sixty-four shard locks.
 */
static uint64_t wait_epoch_quiet(struct wc_cache *c, uint64_t e)
{
	/* The shared slot's writers: a writer reads the epoch after its shard
	 * lock's exchange, so if we see the lock free after our store of
	 * e + 1, the writer that read e has released it. */
	if (wc_writers_wait_quiet(c))
		for (unsigned i = 0; i < WC_SHARDS; i++) {
			unsigned spins = 0;

			while (wc_spin_is_held(&c->shards[i].lock))
				wc_spin_pause(&spins);
		}
	return wc_writers_logged(c, (unsigned)(e & 1));
}

/* commit_lock held: raise the durable floor seq_count to the last commit
 * (its own store, not yet drained; returns whether it stored). */
static bool floor_raise(struct wc_cache *c)
{
	uint64_t committed = atomic_load(&c->commit.committed_seq);

	if (c->commit.durable_floor >= committed)
		return false;
	wc_persist_store8(&c->fp, &wc_sb(c->base)->seq_count, committed);
	c->commit.durable_floor = committed;
	return true;
}

void wc_commit_confirm_locked(struct wc_cache *c)
{
	bool stored;

	WC_ASSERT(wc_storelock_is_held(&c->commit.lock));
	stored = floor_raise(c);
	release_all_pending(c, stored);
	/* Invariant (10): the floor covers the newest record now, so an entry
	 * it counts may be invalidated. */
	WC_ASSERT(c->commit.durable_floor == atomic_load(&c->commit.committed_seq));
	ASSERT_COMMIT_STATE(c);
}

/* commit_lock held, after the commit of `epoch` at `now`. */
static void age_mark(struct wc_cache *c, uint64_t epoch, uint32_t now)
{
	struct wc_age_mark *last = &c->commit.age_marks[(c->commit.age_marks_n - 1) % WC_AGE_MARKS];

	if (c->commit.age_marks_n && now - last->ms < c->commit.age_mark_every_ms)
		return;
	c->commit.age_marks[c->commit.age_marks_n % WC_AGE_MARKS] = (struct wc_age_mark){ epoch, now };
	c->commit.age_marks_n++;
}

void wc_age_init(struct wc_cache *c, uint64_t epoch)
{
	/* 256 marks span at least 4 x max_age_ms, to within 1/64 of it. */
	c->commit.age_mark_every_ms = c->cfg.max_age_ms / 64 ? c->cfg.max_age_ms / 64 : 1;
	c->commit.age_marks_n = 0;
	if (epoch) {
		c->commit.age_marks[0] = (struct wc_age_mark){ epoch - 1, 0 };
		c->commit.age_marks_n = 1;
	}
}

uint64_t wc_age_horizon(struct wc_cache *c, uint32_t age_ms)
{
	uint32_t now = wc_now_ms(c);
	uint64_t horizon = 0, n;

	if (now < age_ms)
		return 0;
	wc_storelock_lock(&c->commit.lock);
	n = c->commit.age_marks_n;
	/* Newest first: the first mark old enough dates its epoch and every
	 * epoch before it. */
	for (uint64_t k = 0; k < n && k < WC_AGE_MARKS; k++) {
		const struct wc_age_mark *m = &c->commit.age_marks[(n - 1 - k) % WC_AGE_MARKS];

		if (now - m->ms >= age_ms) {
			horizon = m->epoch + 1;
			break;
		}
	}
	wc_storelock_unlock(&c->commit.lock);
	return horizon;
}

/* Did any writer publish into epoch e?  Read before the epoch moves: a
 * write that completed before the commit was asked for is seen (its unlock
 * happened before); one still publishing belongs to no caller yet. */
static bool epoch_has_blocks(struct wc_cache *c, uint64_t e)
{
	return wc_writers_logged(c, (unsigned)(e & 1)) != 0;
}

/* Commit so that epoch `target` is committed.  `has_blocks`: the caller
 * published into it (a FUA write), so there is no need to look at every
 * shard for a block first. */
static int commit(struct wc_cache *c, uint64_t target, bool has_blocks, bool count_flush)
{
	uint64_t e;
	struct wc_pmem_record rec;
	uint64_t logged;
	size_t old_pending;
	bool complete;
	uint32_t now;
	int err, ret = 0;

	wc_storelock_lock(&c->commit.lock);
	ASSERT_COMMIT_STATE(c);
	if (count_flush)
		c->commit.flushes++;
	err = wc_has_error(c);
	if (err) {
		wc_storelock_unlock(&c->commit.lock);
		return wc_err(-EIO, "%s: commit refused: the cache is in error state (%d)",
		              c->cache_path, err);
	}
	/* Group commit: another thread committed our epoch while we waited. */
	if (atomic_load(&c->commit.committed_seq) > target)
		goto out;
	/* The epoch moves only here, under commit_lock: target not yet
	 * committed means it is still the writers' epoch. */
	e = atomic_load(&c->commit.epoch);
	if (!(has_blocks && e == target) && !epoch_has_blocks(c, e))
		goto out; /* invariant (6): nothing new, no fence */

	if (e + 1 >= WC_SEQ_MAX) {
		/* Unreachable in practice; refuse rather than wrap. */
		wc_set_error(c, -EOVERFLOW, "commit counter at its ceiling");
		ret = wc_err(-EOVERFLOW, "%s: commit counter reached 2^63", c->cache_path);
		goto out;
	}
	WC_ASSERT(atomic_load(&c->commit.committed_seq) <= e);
	atomic_store_explicit(&c->commit.epoch, e + 1, memory_order_seq_cst);
	logged = wait_epoch_quiet(c, e);
	/* The last commit's drain made these invalidations durable. */
	release_pending(c, c->commit.pending_durable);
	if (c->hooks && c->hooks->commit_quiet)
		c->hooks->commit_quiet(c->hooks->commit_quiet_arg);
	/* Those the last commit found: invalidated now, with e's entries. */
	old_pending = c->commit.pending_n;
	free_superseded(c, e, logged);               /* e's dead versions: next time */
	invalidate_pending(c, 0, old_pending);
	complete = flush_entry_log(c, e, logged, &rec);
	logs_reset(c, e, logged);
	if (complete) {
		/* Invariant (9): the record proves itself; one drain makes
		 * entries, record and invalidations durable together. */
		struct wc_pmem_record *slot = wc_pmem_record(c->base, (unsigned)(e & 1));

		memcpy(slot, &rec, offsetof(struct wc_pmem_record, pad));
		wc_persist_range(&c->fp, slot, offsetof(struct wc_pmem_record, pad));
		wc_persist_drain(&c->fp);              /* the commit point */
		/* Freed by the next commit, or by whoever needs blocks
		 * (wc_release_freed): a free list's lock taken here would
		 * wait for this drain to complete. */
		c->commit.pending_durable = old_pending;
	} else {
		/* Not every entry is listed: drain them first, then move the
		 * floor (invariant (3)), as version 1 committed every epoch. */
		wc_persist_drain(&c->fp);              /* the writers flushed the unlisted */
		release_pending(c, old_pending);
		wc_persist_store8(&c->fp, &wc_sb(c->base)->seq_count, e + 1);
		wc_persist_drain(&c->fp);              /* the commit point */
		c->commit.durable_floor = e + 1;
	}
	/* No locked instruction from the drain to the return (storelock.h):
	 * the caller runs on while the lines are written back. */
	atomic_store_explicit(&c->commit.committed_seq, e + 1, memory_order_release);
	now = wc_now_ms(c);
	age_mark(c, e, now);
	atomic_store_explicit(&c->commit.published, 0, memory_order_relaxed);
	atomic_store_explicit(&c->commit.last_ms, now, memory_order_relaxed);
	c->commit.commits++;
out:
	ASSERT_COMMIT_STATE(c);
	wc_storelock_unlock(&c->commit.lock);
	return ret;
}

int wc_commit(struct wc_cache *c, bool count_flush)
{
	return commit(c, atomic_load(&c->commit.epoch), false, count_flush);
}

int wc_commit_published(struct wc_cache *c, uint64_t epoch)
{
	return commit(c, epoch, true, false);
}

/* Every uncommitted write came after the last commit: if that was
 * autocommit_ms ago, the oldest of them is at most that old. */
bool wc_autocommit_due(struct wc_cache *c)
{
	uint32_t last = atomic_load_explicit(&c->commit.last_ms, memory_order_relaxed);

	return c->cfg.autocommit_ms && wc_now_ms(c) - last >= c->cfg.autocommit_ms &&
	       wc_uncommitted(c);
}

/* Dropping versions (write-back, discard) confirms the commit first
 * (invariant (8)): a commit's unlinked versions must be durably invalid
 * before a block they superseded is freed. */
void wc_lock_for_drop(struct wc_cache *c, struct wc_shard *s)
{
	/* Lock order: commit_lock before a shard lock (core/cache.h). */
	WC_ASSERT(!wc_spin_held_by_me(&s->lock));
	wc_storelock_lock(&c->commit.lock);
	wc_commit_confirm_locked(c);
	wc_spin_lock(&s->lock);
}

void wc_unlock_for_drop(struct wc_cache *c, struct wc_shard *s)
{
	wc_spin_unlock(&s->lock);
	wc_storelock_unlock(&c->commit.lock);
}
