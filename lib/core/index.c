/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * index.c -- the sharded map origin block -> cache block.
 *
 * Each shard is a chained hash table of 32-bit entry indices.  Older versions
 * of a block stay on the chain (flagged SUPERSEDED) until a commit frees them,
 * as dm-writecache keeps duplicates in its tree: write-back uses them to keep
 * two versions of one block in order, discard to drop them all, and the
 * commit to find what its epoch superseded.  A version is inserted at the
 * head of its chain, so a chain lists a block's versions newest first.
 */
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "util/debug.h"
#include "util/error.h"

#ifdef WC_DEBUG
/* The chain `origin` hashes to, checked in a debug build after every change
 * to it: everything on it is indexed, and `origin`'s versions appear newest
 * first with at most one of them current (what reads, the commit's
 * free_superseded and write-back's ordering rely on). */
static bool chain_ok(struct wc_cache *c, struct wc_shard *s, uint64_t origin)
{
	uint64_t prev_seq = UINT64_MAX;
	unsigned current = 0, steps = 0;

	for (uint32_t i = *wc_bucket(s, origin); i != WC_NIL; i = c->e[i].hash_next) {
		if (!(c->e[i].flags & WC_E_INDEXED) || ++steps > c->layout.n_blocks)
			return false;
		if (c->e[i].origin != origin)
			continue;
		if (c->e[i].seq > prev_seq)
			return false;
		prev_seq = c->e[i].seq;
		current += (c->e[i].flags & WC_E_CURRENT) != 0;
	}
	return current <= 1;
}
#define ASSERT_CHAIN(c, s, origin) WC_ASSERT(chain_ok(c, s, origin))
#else
#define ASSERT_CHAIN(c, s, origin) ((void)0)
#endif

int wc_index_init(struct wc_cache *c)
{
	uint64_t per = c->layout.n_blocks / WC_SHARDS + 1, nb = WC_GROUP;

	while (nb < per)
		nb <<= 1;
	/* One table for all shards, on huge pages (dram.c). */
	c->bucket_bytes = WC_SHARDS * nb * sizeof(uint32_t);
	c->bucket_table = wc_dram_table(c->bucket_bytes); /* page-aligned: a group's buckets share a line */
	if (!c->bucket_table)
		return wc_err(-ENOMEM, "%s: index of %llu buckets", c->cache_path,
		              (unsigned long long)nb * WC_SHARDS);
	memset(c->bucket_table, 0xff, c->bucket_bytes); /* WC_NIL */
	for (unsigned i = 0; i < WC_SHARDS; i++) {
		struct wc_shard *s = &c->shards[i];

		atomic_init(&s->lock.held, 0);
		s->buckets = c->bucket_table + i * nb;
		s->bucket_mask = (uint32_t)(nb - 1);
	}
	c->dram_bytes += WC_SHARDS * (nb * sizeof(uint32_t) + sizeof(struct wc_shard));
	return 0;
}

void wc_index_fini(struct wc_cache *c)
{
	wc_dram_table_free(c->bucket_table, c->bucket_bytes);
	c->bucket_table = NULL;
	for (unsigned i = 0; i < WC_SHARDS; i++) {
		c->shards[i].buckets = NULL;
	}
}

/* find, insert and remove also serve recovery, which runs alone and takes
 * no shard lock: their callers on the I/O path assert the lock. */
uint32_t wc_index_find(struct wc_cache *c, struct wc_shard *s, uint64_t origin)
{
	for (uint32_t i = *wc_bucket(s, origin); i != WC_NIL; i = c->e[i].hash_next)
		if (c->e[i].origin == origin && (c->e[i].flags & WC_E_CURRENT))
			return i;
	return WC_NIL;
}

void wc_index_insert(struct wc_cache *c, struct wc_shard *s, uint32_t idx)
{
	uint32_t *head = wc_bucket(s, c->e[idx].origin);

	WC_ASSERT(!(c->e[idx].flags & WC_E_INDEXED));
	c->e[idx].hash_next = *head;
	*head = idx;
	wc_entry_set_flags(&c->e[idx], c->e[idx].flags | WC_E_INDEXED);
	ASSERT_CHAIN(c, s, c->e[idx].origin);
}

void wc_index_remove(struct wc_cache *c, struct wc_shard *s, uint32_t idx)
{
	uint32_t *p = wc_bucket(s, c->e[idx].origin);

	while (*p != WC_NIL && *p != idx)
		p = &c->e[*p].hash_next;
	if (*p == idx)
		*p = c->e[idx].hash_next;
	c->e[idx].hash_next = WC_NIL;
	wc_entry_set_flags(&c->e[idx], c->e[idx].flags & ~WC_E_INDEXED);
	ASSERT_CHAIN(c, s, c->e[idx].origin);
}

bool wc_index_wb_busy(struct wc_cache *c, struct wc_shard *s, uint64_t origin, uint32_t skip)
{
	for (uint32_t i = *wc_bucket(s, origin); i != WC_NIL; i = c->e[i].hash_next)
		if (i != skip && c->e[i].origin == origin && (c->e[i].flags & WC_E_WB))
			return true;
	return false;
}

void wc_index_each_version(struct wc_cache *c, struct wc_shard *s, uint64_t origin,
                           void (*fn)(struct wc_cache *, struct wc_shard *, uint32_t, void *),
                           void *arg)
{
	uint32_t i = *wc_bucket(s, origin);

	WC_ASSERT(wc_spin_held_by_me(&s->lock));
	while (i != WC_NIL) {
		uint32_t next = c->e[i].hash_next; /* fn may unlink i */

		if (c->e[i].origin == origin)
			fn(c, s, i, arg);
		i = next;
	}
}
