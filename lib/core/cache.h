/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cache_impl.h -- the cache's DRAM state, shared by the files of lib/.
 *
 * Locking (no global lock on the I/O path):
 *  - shard->lock (a spinlock, spinlock.h): the index chains, the state of
 *    every entry whose origin block hashes to the shard, the shard's log of
 *    the current epoch, its stats, and for its holder the epoch it read.
 *    Never held across a data copy: a writer
 *    copies into a block nobody else can see yet, a reader copies out with
 *    no lock and checks the entry's generation afterwards (io.c).
 *  - freelist part->lock (a spinlock): one of WC_FREE_PARTS free stacks.
 *  - c->commit_lock (storelock.h): one commit at a time (group commit:
 *    waiters share it).
 *  - c->wb_lock: one write-back round at a time.
 * Order: wb_lock -> commit_lock -> shard lock -> free-list lock (the
 * free-list locks are innermost: blocks are freed under the others).
 */
#ifndef WC_CACHE_IMPL_H
#define WC_CACHE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/bind.h"
#include "flush/flush.h"
#include "core/format.h"
#include "origin/origin.h"
#include "util/spinlock.h"
#include "util/storelock.h"
#include "wcache.h"

#define WC_SHARDS 64u        /* power of two; > threads on any box we target */
_Static_assert(WC_SHARDS <= 64, "a commit keeps the shards it visits in a 64-bit mask");
/* Origin blocks are hashed in aligned groups of 16: a group shares a shard
 * (one lock round for a 64 KiB write of 4 KiB blocks) and one 64-byte line
 * of buckets (one cache miss for its lookups). */
#define WC_GROUP_SHIFT 4u
#define WC_GROUP (1u << WC_GROUP_SHIFT)
#define WC_FREE_PARTS 8u
#define WC_NIL UINT32_MAX

/* Entry flags. */
enum {
	WC_E_INDEXED = 1u << 0,    /* on its shard's hash chain */
	WC_E_CURRENT = 1u << 1,    /* the version reads see */
	WC_E_SUPERSEDED = 1u << 2, /* an older version, freed after the next commit */
	WC_E_WB = 1u << 3,         /* being written back */
	WC_E_SPARE = 1u << 4,      /* unused on the I/O path (recovery's marker) */
};

/* DRAM twin of one cache block: 32 bytes, two to a line (dm-writecache
 * spends 88).  No list links: its age is its epoch's (wc_age_horizon),
 * write-back finds it by its place in the cache (writeback.c), and the
 * versions it supersedes are found on its hash chain (commit.c). */
struct wc_entry {
	uint64_t origin;       /* origin block number */
	uint64_t seq;          /* epoch it was written in */
	uint32_t hash_next;    /* shard hash chain, newest version first */
	uint32_t spare[2];     /* keeps an entry inside one line */
	/* Odd from the block's free until its publication, even while it is
	 * published: a reader that copied out of it with no lock re-reads gen
	 * to learn whether the block was freed (and maybe reused) meanwhile.
	 * 16 bits: a wrap would take 32,768 reuses of one block during one
	 * block copy.  Atomic accesses only. */
	uint16_t gen;
	uint16_t flags;
};
_Static_assert(sizeof(struct wc_entry) == 32, "DRAM entry stays small");

/* Flags and origin change under the shard lock but are read without it as
 * hints (the lock-free read, write-back's scan): relaxed atomic stores,
 * plain moves on x86. */
static inline void wc_entry_set_flags(struct wc_entry *e, unsigned flags)
{
	__atomic_store_n(&e->flags, (uint16_t)flags, __ATOMIC_RELAXED);
}
static inline void wc_entry_set_origin(struct wc_entry *e, uint64_t origin)
{
	__atomic_store_n(&e->origin, origin, __ATOMIC_RELAXED);
}

/* "Epoch `epoch` was committed at `ms`" (ms since the cache opened): a few
 * hundred marks date every entry by its epoch, so entries carry no time. */
struct wc_age_mark {
	uint64_t epoch;
	uint32_t ms;
};
#define WC_AGE_MARKS 256u

struct wc_shard_stats {
	uint64_t reads, read_hits, writes, write_hits_uncommitted, write_hits_committed,
	         writes_around, writes_allocate, discards;
};

/* A block published in an epoch, and which life of it (gen). */
struct wc_logged {
	uint32_t idx;
	uint16_t gen;
};

struct wc_shard {
	struct wc_spinlock lock;
	/* The blocks published into the shard per epoch parity, for the
	 * commit of that epoch: it flushes their entries, adds up its record
	 * and frees the versions they superseded (commit.c).  In the lock's
	 * line, which the commit takes anyway. */
	uint32_t log_n[2];
	uint32_t log_cap[2];
	struct wc_logged *log[2];
	bool log_lost[2];          /* a block could not be logged (no memory) */
	uint32_t *buckets;
	uint32_t bucket_mask;
	uint64_t current;          /* current entries (dirty blocks) */
	struct wc_shard_stats st;
	/* Hits served with no lock (io.c read_block), counted apart. */
	atomic_uint_fast64_t lockless_hits;
} __attribute__((aligned(64)));

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

/*
 * One per writing thread (commit.c, wait_epoch_quiet): whether the thread
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

struct wc_cache {
	/* identity and geometry */
	uint64_t instance;               /* unique per open in this process */
	struct wc_cache *open_next;      /* the process's open caches (cache.c) */
	char *cache_path;
	struct wc_config cfg;
	struct wc_layout layout;
	uint64_t origin_blocks;
	uint32_t block_shift;
	uint64_t dram_bytes;

	/* mapping */
	int fd;
	struct pmem2_source *src;
	struct pmem2_map *map;
	void *base;
	size_t map_len;
	struct wc_persist_policy fp;
	const char *policy_source;     /* where fp came from (policy_line.c), for wc_stats */
	struct wc_test_hooks *hooks;   /* tests only (testhooks.h) */

	/* origin */
	struct wc_origin origin;
	uint32_t origin_align;

	/* blocks */
	struct wc_entry *e;              /* n_blocks, on huge pages (dram.c) */
	uint32_t *bucket_table;          /* every shard's buckets, likewise */
	size_t bucket_bytes;
	struct wc_shard shards[WC_SHARDS];
	struct wc_freelist free[WC_FREE_PARTS];
	uint32_t *free_table;            /* the stacks' storage, n_blocks */
	atomic_uint free_rr;
	pthread_mutex_t free_wait_lock;
	pthread_cond_t free_cond;
	unsigned free_waiters;
	atomic_uint_fast64_t blocked_on_freelist;

	/* commit state (commit.c) */
	struct wc_writer_slot writer_slots[WC_WRITER_SLOTS];
	atomic_uint writer_slots_used;       /* taken so far; > WC_WRITER_SLOTS - 1: the shared one too */
	struct wc_storelock commit_lock;     /* storelock.h: why not a mutex */
	atomic_uint_fast64_t epoch;          /* seq given to new writes */
	atomic_uint_fast64_t committed_seq;  /* the commit point (record or floor) */
	/* Blocks published since the last commit, as the writers report them
	 * in batches (io.c): only what triggers autocommit_blocks reads it. */
	atomic_uint_fast64_t published;
	uint64_t durable_floor;              /* sb->seq_count as last drained (commit_lock) */
	atomic_uint_fast32_t last_commit_ms; /* when the last commit ended (autocommit_ms) */
	struct wc_age_mark age_marks[WC_AGE_MARKS]; /* a ring, under commit_lock */
	uint64_t age_marks_n;                /* marks ever made */
	uint32_t age_mark_every_ms;          /* at most one mark per this */
	uint64_t commits, flushes;           /* under commit_lock */
	/* Superseded blocks on their way to the free lists (under
	 * commit_lock; the count is read lock-free): the first pending_durable
	 * were invalidated durably by the last commit and may be freed, the
	 * rest, which that commit found dead, are invalidated by the next. */
	uint32_t *pending;
	size_t pending_n, pending_cap, pending_durable;
	atomic_uint_fast64_t pending_count;
	/* Superseded versions that no logged block leads to (a failed
	 * write-back, no memory for a log): the next commit looks at every
	 * chain of every shard. */
	atomic_bool superseded_elsewhere;

	/* write-back (writeback.c) */
	pthread_mutex_t wb_lock;             /* one round at a time */
	pthread_mutex_t bg_lock;
	pthread_cond_t bg_cond;
	pthread_t bg_thread;
	bool bg_running, bg_stop, bg_kick;
	atomic_bool cleaner;
	atomic_uint_fast64_t wb_inflight;    /* blocks in flight */
	/* Written under wb_lock, read by wc_get_stats without it (a round
	 * may hold the lock for 16 MiB of I/O). */
	atomic_uint_fast64_t wb_ios, wb_bytes, wb_errors;
	/* Under wb_lock.  A failure streak: rounds that failed in a row (the
	 * backoff), those of them that failed for more than a lost
	 * connection (the sticky error), since when, and the last errno (the
	 * last two also read by wc_get_stats without the lock: atomics). */
	unsigned wb_failed_rounds, wb_failures;
	_Atomic uint64_t wb_failing_since_ns;
	atomic_int wb_last_errno;
	void *wb_state;                       /* writeback.c's buffers */

	/* read-ahead of sequential misses (readahead.c) */
	struct wc_readahead *ra;
	atomic_uint_fast64_t ra_hits;        /* blocks served from it */

	/* errors */
	atomic_int error;                     /* sticky, first one wins */
	uint64_t t0_ms;

	/* Which origin this is (bind.c): read at open, never on the I/O
	 * path, so last, where it moves none of the fields above. */
	struct wc_bind bind;
};

/* ---- cache.c ---- */
uint32_t wc_now_ms(const struct wc_cache *c);
void wc_set_error(struct wc_cache *c, int err, const char *what);
static inline int wc_has_error(struct wc_cache *c)
{
	return atomic_load_explicit(&c->error, memory_order_acquire);
}

#include "util/dram.h"

/* ---- index.c ---- */
static inline uint64_t wc_group_hash(uint64_t origin_block)
{
	/* Fibonacci hashing of the group: neighbouring groups spread over
	 * shards, so two threads streaming nearby ranges rarely share a lock. */
	return (origin_block >> WC_GROUP_SHIFT) * 0x9E3779B97F4A7C15ull;
}
static inline unsigned wc_shard_index(uint64_t origin_block)
{
	return (unsigned)(wc_group_hash(origin_block) >> 58 & (WC_SHARDS - 1));
}
static inline struct wc_shard *wc_shard_of(struct wc_cache *c, uint64_t origin_block)
{
	return &c->shards[wc_shard_index(origin_block)];
}
/* The bucket of `origin` (the shard took the hash's top bits; a group's 16
 * buckets are adjacent). */
static inline uint32_t *wc_bucket(const struct wc_shard *s, uint64_t origin)
{
	uint32_t b = (uint32_t)(wc_group_hash(origin) >> 20) << WC_GROUP_SHIFT |
	             (uint32_t)(origin & (WC_GROUP - 1));

	return &s->buckets[b & s->bucket_mask];
}
int wc_index_init(struct wc_cache *c);
void wc_index_fini(struct wc_cache *c);
/* The current version of `origin`, or WC_NIL.  Shard lock held. */
uint32_t wc_index_find(struct wc_cache *c, struct wc_shard *s, uint64_t origin);
void wc_index_insert(struct wc_cache *c, struct wc_shard *s, uint32_t idx);
void wc_index_remove(struct wc_cache *c, struct wc_shard *s, uint32_t idx);
/* True if a version of `origin` other than `skip` is under write-back. */
bool wc_index_wb_busy(struct wc_cache *c, struct wc_shard *s, uint64_t origin, uint32_t skip);
/* Calls fn for every indexed version of `origin` (current and superseded). */
void wc_index_each_version(struct wc_cache *c, struct wc_shard *s, uint64_t origin,
                           void (*fn)(struct wc_cache *, struct wc_shard *, uint32_t, void *),
                           void *arg);

/* ---- alloc.c ---- */
int wc_freelist_init(struct wc_cache *c);
void wc_freelist_fini(struct wc_cache *c);
/* Pop between 1 and `want` free blocks into out[] in one lock round; waits
 * for write-back when none is free.  Returns how many, or a negative errno
 * (sticky error; -ENOSPC with no_threads and nothing to write back). */
int wc_alloc_blocks(struct wc_cache *c, uint32_t *out, unsigned want);
/* Give back blocks whose invalidation is already durable. */
void wc_free_batch(struct wc_cache *c, const uint32_t *idx, size_t n);
void wc_freelist_mark_cold(struct wc_cache *c);
uint64_t wc_free_count(struct wc_cache *c);
void wc_wake_freelist_waiters(struct wc_cache *c);

/* ---- commit.c ---- */
int wc_commit(struct wc_cache *c, bool count_flush);
/* A FUA write's commit: `epoch` is the one its last block was published
 * into (io.c). */
int wc_commit_published(struct wc_cache *c, uint64_t epoch);
/* The epoch new entries stamp: read under the shard lock that publishes
 * them, between wc_writer_enter and wc_writer_exit (commit.c,
 * wait_epoch_quiet). */
static inline uint64_t wc_epoch_current(struct wc_cache *c)
{
	return atomic_load_explicit(&c->epoch, memory_order_seq_cst);
}
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
/* A writer slot for the calling thread's first publication into c (io.c
 * keeps it per thread), and the slot's return when the thread exits or
 * forgets c: outside any publication, by the thread that took it. */
struct wc_writer_slot *wc_writer_slot_take(struct wc_cache *c);
void wc_writer_slot_give_back(struct wc_writer_slot *w);
/* The threads that hold a slot of c now. */
unsigned wc_writer_slots_owned(struct wc_cache *c);
/* cache.c: give w back to the cache opened as `instance`, if it is still
 * open (a thread may outlive the caches it wrote to). */
void wc_writer_slot_return(uint64_t instance, struct wc_writer_slot *w);

/* A publication: enter before the shard lock's exchange (which orders the
 * store before the epoch is read), mark the shard once the epoch is read,
 * exit after the unlock (commit.c, wait_epoch_quiet). */
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

static inline bool wc_is_committed(struct wc_cache *c, uint64_t seq)
{
	return seq < atomic_load_explicit(&c->committed_seq, memory_order_acquire);
}

/* ---- format.c ---- */
/* Write a fresh, empty format (torn-safe: see format.c). */
int wc_format(struct wc_cache *c, uint64_t origin_size, const struct wc_pmem_origin_id *id);

/* ---- recover.c ---- */
int wc_recover(struct wc_cache *c);

/* ---- writeback.c ---- */
int wc_writeback_start(struct wc_cache *c);
void wc_writeback_stop(struct wc_cache *c);
/* One round: pick and write, settling (flush, free) the round before once
 * the origin has this one's first writes; no_threads: settle this one too.
 * May commit first and may sleep (backoff).  Returns blocks written, 0 if
 * nothing was due (then nothing is left unsettled), or a negative errno. */
int wc_writeback_round(struct wc_cache *c, bool all);
void wc_writeback_kick(struct wc_cache *c);
bool wc_writeback_due(struct wc_cache *c);
/* The window write-back keeps in flight now (blocks) and the mean latency
 * of its last measured round's origin writes: a snapshot, for stats. */
unsigned wc_writeback_window(struct wc_cache *c, uint64_t *mean_latency_ns);

#endif /* WC_CACHE_IMPL_H */
