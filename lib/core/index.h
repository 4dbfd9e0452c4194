/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * index.h -- the DRAM index (index.c): one 32-byte entry per cache block,
 * and WC_SHARDS shards of hash chains from origin block to entry, each
 * with its spinlock, its commit logs and its counters.
 *
 * shard->lock guards the chains, the state of every entry whose origin
 * block hashes to the shard, the shard's log of the current epoch and its
 * stats.  Never held across a data copy: a writer copies into a block
 * nobody else can see yet, a reader copies out with no lock and checks the
 * entry's generation afterwards (api/io.c).
 */
#ifndef WC_INDEX_H
#define WC_INDEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/spinlock.h"

struct wc_cache;

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
	WC_E_CLEAN = 1u << 5,      /* block medium: a current version the origin holds */
	WC_E_INFLIGHT = 1u << 6,   /* block medium: its record's write is in flight (block/aio.c) */
};

/* DRAM twin of one cache block: 32 bytes, two to a line (dm-writecache
 * spends 88).  No list links: its age is its epoch's (wc_age_horizon),
 * write-back finds it by its place in the cache (writeback/pick.c), and the
 * versions it supersedes are found on its hash chain (commit.c). */
struct wc_entry {
	uint64_t origin;       /* origin block number */
	uint64_t seq;          /* epoch it was written in */
	uint32_t hash_next;    /* shard hash chain, newest version first */
	uint32_t spare[2];     /* keeps an entry inside one line; the block medium keeps
	                          the device offset of the version's data here */
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

#endif /* WC_INDEX_H */
