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
 *       (the shard lock's exchange, after wc_flush_order_before_lock) orders
 *       the copy before the entry store.  It reads the epoch, stores the
 *       entries and counts them (uncommitted, entry_log) under that lock.
 *   (2) The commit of E first moves new writers to E+1, then waits until
 *       every shard lock was seen free (wait_epoch_quiet): every entry of E
 *       is stored and logged, and by (1) its data is persistent.
 *   (3) The commit point moves atomically: a record is one line whose CRC
 *       and digest either match everything it claims or make it void, and
 *       seq_count is one aligned 8-byte store.
 *   (4) Committed entries are immutable until invalidated; a block is never
 *       written twice in one life (every write takes a fresh block).
 *   (5) An invalidation (seq := NONE) is drained BEFORE its block returns
 *       to a free list, so a reused block never pairs an old entry with new
 *       data.  Superseded blocks are invalidated with the next commit's
 *       entries and freed after its drain (invalidate_pending,
 *       release_pending), or by wc_release_freed() sooner.
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
 *
 * The power-failure simulator checks (1), (9) and (10) by mutation: without
 * the ordering of (1), the digest check of (9) or the floor of (10), the
 * sweep finds violations (tests/crash-regressions).
 *
 * Why a writer need not fence (x86).  A locked instruction evicts the CPU's
 * write-combining buffers (non-temporal stores) and waits for its earlier
 * CLFLUSHOPT/CLWB (Intel SDM vol. 2, CLFLUSHOPT; vol. 3 11.3.1; AMD APM
 * vol. 2 7.4.2); the writer's first locked instruction after its copy comes
 * before its entry store, and the committer sees the writer's unlock before
 * it flushes the entries (the committer flushes them: a flush of another
 * CPU's dirty line is coherent).  dm-writecache leans on the same fact
 * ("wc_unlock serves as a memory barrier").  Elsewhere the writer drains
 * (wc_flush_order_before_lock).
 *
 * Transitions -> function:
 *   free -> uncommitted          io.c publish (under the shard lock)
 *   uncommitted -> committed     wc_commit
 *   committed -> superseded      io.c publish (a newer version)
 *   superseded -> pending        free_superseded (after the commit point)
 *   pending -> free              invalidate_pending, the next drain,
 *                                release_pending (next commit or
 *                                wc_release_freed)
 *   committed -> under wb -> free writeback.c, after the origin is durable
 *   any -> free                  io.c wc_discard (invalidate, drain, free)
 */
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cache_impl.h"
#include "error.h"

void wc_entry_invalidate(struct wc_cache *c, uint32_t idx)
{
	struct wc_pmem_entry *pe = wc_pmem_entry(c->base, &c->layout, idx);

	wc_flush_store8(&c->fp, &pe->seq, WC_NONE);
}

/* version_drop without the invalidation, which the caller does later. */
static void version_unlink(struct wc_cache *c, struct wc_shard *s, uint32_t idx)
{
	struct wc_entry *e = &c->e[idx];

	if (e->flags & WC_E_ON_LRU)
		wc_list_remove(c, &s->lru, idx);
	if (e->flags & WC_E_ON_SUPERSEDED)
		wc_list_remove(c, &s->superseded[(e->flags & WC_E_SUP1) ? 1 : 0], idx);
	if (e->flags & WC_E_CURRENT)
		s->current--;
	if (e->flags & WC_E_INDEXED)
		wc_index_remove(c, s, idx);
	e->flags &= ~(WC_E_ON_LRU | WC_E_ON_SUPERSEDED | WC_E_SUP1 | WC_E_CURRENT);
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
		wc_flush_drain(&c->fp);
	version_drop(c, s, na.newest);
	emit(c, na.newest, emit_arg);
	return d.n + 1;
}

static int pending_push(struct wc_cache *c, uint32_t idx)
{
	if (c->pending_n == c->pending_cap) {
		size_t cap = c->pending_cap ? c->pending_cap * 2 : 256;
		uint32_t *nv = realloc(c->pending, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		c->pending = nv;
		c->pending_cap = cap;
	}
	c->pending[c->pending_n++] = idx;
	return 0;
}

/* commit_lock held, right after a drain by this thread that followed
 * invalidate_pending: the invalidations are durable, the blocks may be
 * reused. */
static void release_pending(struct wc_cache *c)
{
	if (!c->pending_n)
		return;
	wc_free_batch(c, c->pending, c->pending_n);
	c->pending_n = 0;
	atomic_store_explicit(&c->pending_count, 0, memory_order_relaxed);
}

/* After the commit of an epoch of parity `par`: the versions its writers
 * superseded are dead.  Unlink them into `pending`; their invalidations go
 * out with the next commit's data and share its first drain (invariant (5)
 * holds: they join the free lists only in release_pending).  Issuing them
 * here would make this commit's last unlock wait for their write-back: a
 * FUA write would pay three memory round trips (data and entry, commit
 * record, invalidations) instead of two.  Until then they stay valid on
 * pmem, older than the committed newer version that recovery prefers. */
static void free_superseded(struct wc_cache *c, unsigned par, uint64_t shards)
{
	if (atomic_exchange(&c->superseded_elsewhere[par], false))
		shards = ~0ull;
	for (unsigned i = 0; i < WC_SHARDS; i++) {
		struct wc_shard *s = &c->shards[i];
		uint32_t idx, next;

		if (!(shards >> i & 1) || !__atomic_load_n(&s->superseded[par].count, __ATOMIC_RELAXED))
			continue;
		wc_spin_lock(&s->lock);
		for (idx = s->superseded[par].head; idx != WC_NIL; idx = next) {
			next = c->e[idx].next;
			if (pending_push(c, idx)) {
				/* Out of memory: the rest waits for a later commit. */
				atomic_store(&c->superseded_elsewhere[par], true);
				break;
			}
			version_unlink(c, s, idx);
		}
		wc_spin_unlock(&s->lock);
	}
	atomic_store_explicit(&c->pending_count, c->pending_n, memory_order_relaxed);
}

/* commit_lock held: issue the invalidations of the pending blocks; the
 * caller's next drain makes them durable. */
static void invalidate_pending(struct wc_cache *c)
{
	const void *flushed = NULL;

	/* Every store first, then each line's flush once: a flush may evict
	 * the line (CLFLUSHOPT; CLWB on some CPUs), and the next store into
	 * it would wait for a read-for-ownership (a group's entries share
	 * lines). */
	for (size_t i = 0; i < c->pending_n; i++)
		__atomic_store_n(&wc_pmem_entry(c->base, &c->layout, c->pending[i])->seq, WC_NONE,
		                 __ATOMIC_RELAXED);
	for (size_t i = 0; i < c->pending_n; i++) {
		const void *line = wc_line_of(wc_pmem_entry(c->base, &c->layout, c->pending[i]));

		if (line != flushed)
			wc_flush_range(&c->fp, line, 64);
		flushed = line;
	}
}

void wc_release_freed_locked(struct wc_cache *c)
{
	if (c->pending_n) {
		invalidate_pending(c);
		wc_flush_drain(&c->fp);
		release_pending(c);
	}
}

void wc_release_freed(struct wc_cache *c)
{
	if (!atomic_load_explicit(&c->pending_count, memory_order_relaxed))
		return;
	pthread_mutex_lock(&c->commit_lock);
	wc_release_freed_locked(c);
	pthread_mutex_unlock(&c->commit_lock);
}

/* Start write-back of the entries epoch e published and add up its record:
 * the entries that still hold seq == e (one superseded within its own epoch
 * was invalidated at once).  False if the log overflowed: then not every
 * entry is known, and the commit falls back to the two-drain protocol. */
static bool flush_entry_log(struct wc_cache *c, uint64_t e, struct wc_pmem_record *rec,
                            uint64_t *shards)
{
	uint64_t n = atomic_load(&c->uncommitted[e & 1]);
	bool complete = n <= c->entry_log_cap;
	const void *flushed = NULL;

	if (!complete)
		n = c->entry_log_cap;
	rec->seq = e + 1;
	rec->count = rec->digest = 0;
	*shards = complete ? 0 : ~0ull;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t idx = c->entry_log[e & 1][i].idx;
		const struct wc_pmem_entry *pe = wc_pmem_entry(c->base, &c->layout, idx);

		/* A block a discard dropped (and freed) within its epoch may
		 * be logged twice; only its current life counts. */
		if (__atomic_load_n(&c->e[idx].gen, __ATOMIC_RELAXED) != c->entry_log[e & 1][i].gen)
			continue;
		if (pe->seq == e) {
			rec->count++;
			rec->digest += wc_entry_digest(idx, pe->origin_block, e);
		}
		/* The versions epoch e superseded sit in the shards of its
		 * own entries (same origin block). */
		*shards |= 1ull << wc_shard_index(pe->origin_block);
	}
	/* Flushes after every read: a flush may evict the line (CLFLUSHOPT;
	 * CLWB on some CPUs), and a group's entries share lines. */
	for (uint64_t i = 0; i < n; i++) {
		const void *line = wc_line_of(wc_pmem_entry(c->base, &c->layout, c->entry_log[e & 1][i].idx));

		if (line != flushed)
			wc_flush_range(&c->fp, line, 64);
		flushed = line;
	}
	rec->crc = wc_record_crc(rec);
	return complete;
}

/*
 * After the epoch moved to e + 1: wait until no writer still publishes into
 * e.  A writer reads the epoch under its shard lock (publish in io.c), after
 * the lock's exchange, so in the single order of sequentially consistent
 * operations its acquisition precedes its read of e, which precedes our
 * store of e + 1, which precedes our look at the lock word: if we see the
 * lock free, that writer has released it, its entries and log slots stored.
 * No writer counts itself in or out: the shard lock it takes anyway is the
 * only locked instruction of its publication.
 */
static void wait_epoch_quiet(struct wc_cache *c)
{
	for (unsigned i = 0; i < WC_SHARDS; i++) {
		unsigned spins = 0;

		while (wc_spin_is_held(&c->shards[i].lock))
			wc_spin_pause(&spins);
	}
}

/* commit_lock held: raise the durable floor seq_count to the last commit
 * (its own store, not yet drained; returns whether it stored). */
static bool floor_raise(struct wc_cache *c)
{
	uint64_t committed = atomic_load(&c->committed_seq);

	if (c->durable_floor >= committed)
		return false;
	wc_flush_store8(&c->fp, &wc_sb(c->base)->seq_count, committed);
	c->durable_floor = committed;
	return true;
}

void wc_commit_confirm_locked(struct wc_cache *c)
{
	bool stored = floor_raise(c);

	if (c->pending_n)
		wc_release_freed_locked(c); /* drains the floor too */
	else if (stored)
		wc_flush_drain(&c->fp);
}

/* commit_lock held, after the commit of `epoch` at `now`. */
static void age_mark(struct wc_cache *c, uint64_t epoch, uint32_t now)
{
	struct wc_age_mark *last = &c->age_marks[(c->age_marks_n - 1) % WC_AGE_MARKS];

	if (c->age_marks_n && now - last->ms < c->age_mark_every_ms)
		return;
	c->age_marks[c->age_marks_n % WC_AGE_MARKS] = (struct wc_age_mark){ epoch, now };
	c->age_marks_n++;
}

void wc_age_init(struct wc_cache *c, uint64_t epoch)
{
	/* 256 marks span at least 4 x max_age_ms, to within 1/64 of it. */
	c->age_mark_every_ms = c->cfg.max_age_ms / 64 ? c->cfg.max_age_ms / 64 : 1;
	c->age_marks_n = 0;
	if (epoch) {
		c->age_marks[0] = (struct wc_age_mark){ epoch - 1, 0 };
		c->age_marks_n = 1;
	}
}

uint64_t wc_age_horizon(struct wc_cache *c, uint32_t age_ms)
{
	uint32_t now = wc_now_ms(c);
	uint64_t horizon = 0, n;

	if (now < age_ms)
		return 0;
	pthread_mutex_lock(&c->commit_lock);
	n = c->age_marks_n;
	/* Newest first: the first mark old enough dates its epoch and every
	 * epoch before it. */
	for (uint64_t k = 0; k < n && k < WC_AGE_MARKS; k++) {
		const struct wc_age_mark *m = &c->age_marks[(n - 1 - k) % WC_AGE_MARKS];

		if (now - m->ms >= age_ms) {
			horizon = m->epoch + 1;
			break;
		}
	}
	pthread_mutex_unlock(&c->commit_lock);
	return horizon;
}

int wc_commit(struct wc_cache *c, bool count_flush)
{
	uint64_t target = atomic_load(&c->epoch), e;
	struct wc_pmem_record rec;
	uint64_t shards;
	int err, ret = 0;

	pthread_mutex_lock(&c->commit_lock);
	if (count_flush)
		c->flushes++;
	err = wc_has_error(c);
	if (err) {
		pthread_mutex_unlock(&c->commit_lock);
		return wc_err(-EIO, "%s: commit refused: the cache is in error state (%d)",
		              c->cache_path, err);
	}
	/* Group commit: another thread committed our epoch while we waited. */
	if (atomic_load(&c->committed_seq) > target)
		goto out;
	e = atomic_load(&c->epoch);
	if (atomic_load(&c->uncommitted[e & 1]) == 0)
		goto out; /* invariant (6): nothing new, no fence */

	if (e + 1 >= WC_SEQ_MAX) {
		/* Unreachable in practice; refuse rather than wrap. */
		wc_set_error(c, -EOVERFLOW, "commit counter at its ceiling");
		ret = wc_err(-EOVERFLOW, "%s: commit counter reached 2^63", c->cache_path);
		goto out;
	}
	atomic_store_explicit(&c->epoch, e + 1, memory_order_seq_cst);
	wait_epoch_quiet(c);
	invalidate_pending(c);                       /* the last commit's frees */
	if (flush_entry_log(c, e, &rec, &shards)) {
		/* Invariant (9): the record proves itself; one drain makes
		 * entries, record and invalidations durable together. */
		struct wc_pmem_record *slot = wc_pmem_record(c->base, (unsigned)(e & 1));

		memcpy(slot, &rec, offsetof(struct wc_pmem_record, pad));
		wc_flush_range(&c->fp, slot, offsetof(struct wc_pmem_record, pad));
		wc_flush_drain(&c->fp);              /* the commit point */
		release_pending(c);
	} else {
		/* Not every entry is listed: drain them first, then move the
		 * floor (invariant (3)), as version 1 committed every epoch. */
		wc_flush_drain(&c->fp);              /* the writers flushed the unlisted */
		release_pending(c);
		wc_flush_store8(&c->fp, &wc_sb(c->base)->seq_count, e + 1);
		wc_flush_drain(&c->fp);              /* the commit point */
		c->durable_floor = e + 1;
	}
	atomic_store_explicit(&c->committed_seq, e + 1, memory_order_release);
	age_mark(c, e, wc_now_ms(c));
	atomic_store_explicit(&c->uncommitted[e & 1], 0, memory_order_relaxed);
	if (atomic_load(&c->uncommitted[(e + 1) & 1]) == 0)
		atomic_store_explicit(&c->first_dirty_ms, 0, memory_order_relaxed);
	c->commits++;
	free_superseded(c, e & 1, shards);
out:
	pthread_mutex_unlock(&c->commit_lock);
	return ret;
}

bool wc_autocommit_due(struct wc_cache *c)
{
	uint64_t first = atomic_load(&c->first_dirty_ms);

	return first && wc_now_ms(c) + 1 - first >= c->cfg.autocommit_ms;
}
