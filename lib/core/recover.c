/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recover.c -- rebuild the DRAM state from pmem.
 *
 * NOTES ON THE DESIGN
 *
 * The commit point is the floor seq_count, or a commit record above it whose
 * epoch's entries match its count and digest (format.c, wc_commit_point;
 * commit.c invariant (9)).  It is made durable before anything else is
 * written (settle_commit_point).
 *
 * Recovery is one linear scan of the entries, in two passes:
 *   pass 1 (read only) classifies every entry and builds the index:
 *     seq == NONE             free
 *     seq >= seq_count        uncommitted: dropped, to invalidate
 *     origin outside origin   corruption: refuse (nothing was written)
 *     same origin, same seq   corruption: refuse
 *     same origin, lower seq  the older one is dropped, to invalidate
 *   pass 2 invalidates the dropped entries and drains once, before any block
 *   is reused: a stale uncommitted entry must never become committed by the
 *   next commit (new writes use seq_count as their epoch).
 * Recovery is idempotent: a crash during pass 2 leaves entries that the next
 * recovery classifies the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cache.h"
#include "util/error.h"

#define WC_E_DROP WC_E_SPARE /* pass 1 -> pass 2 marker; never set on a free entry otherwise */

/* Pass 1.  Builds the index; returns 0 or a refusal (nothing written). */
static int classify(struct wc_cache *c, uint64_t seq_count, uint64_t *n_drop)
{
	const struct wc_layout *l = &c->layout;

	for (uint64_t i = 0; i < l->n_blocks; i++) {
		const struct wc_pmem_entry *pe = wc_pmem_entry(c->base, l, i);
		uint64_t origin = pe->origin_block, seq = pe->seq;
		struct wc_entry *e = &c->e[i];
		struct wc_shard *s;
		uint32_t other;

		e->origin = origin;
		e->seq = seq;
		e->flags = 0;
		e->hash_next = WC_NIL;
		if (seq == WC_NONE)
			continue;
		if (seq >= seq_count) {
			e->flags = WC_E_DROP;
			(*n_drop)++;
			continue;
		}
		if (origin >= c->origin_blocks)
			return wc_err(-EUCLEAN, "%s: entry %llu (offset %llu) maps origin block %llu, beyond the origin's %llu blocks",
			              c->cache_path, (unsigned long long)i,
			              (unsigned long long)(l->entries_offset + i * sizeof(*pe)),
			              (unsigned long long)origin, (unsigned long long)c->origin_blocks);
		s = wc_shard_of(c, origin);
		other = wc_index_find(c, s, origin);
		if (other != WC_NIL && c->e[other].seq == seq)
			return wc_err(-EUCLEAN, "%s: entries %u and %llu both hold origin block %llu with seq %llu",
			              c->cache_path, other, (unsigned long long)i,
			              (unsigned long long)origin, (unsigned long long)seq);
		if (other != WC_NIL && c->e[other].seq > seq) {
			e->flags = WC_E_DROP;
			(*n_drop)++;
			continue;
		}
		if (other != WC_NIL) {
			wc_index_remove(c, s, other);
			c->e[other].flags = WC_E_DROP;
			s->current--;
			(*n_drop)++;
		}
		e->flags = WC_E_CURRENT;
		wc_index_insert(c, s, (uint32_t)i);
		s->current++;
	}
	return 0;
}

/*
 * The commit point (format.c, wc_commit_point), made durable before
 * anything else is written: the floor seq_count moves to it and a record
 * that claims more (torn, or its entries incomplete) is erased, so a crash
 * during recovery finds the same point, and a later epoch with the same
 * number can never match a stale record.
 */
static void settle_commit_point(struct wc_cache *c, const struct wc_commit_point *cp)
{
	struct wc_pmem_sb *sb = wc_sb(c->base);
	bool stored = false;

	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++) {
		struct wc_pmem_record *r = wc_pmem_record(c->base, i);

		if (r->seq > cp->seq || (r->seq && !wc_record_intact(r))) {
			wc_persist_set(&c->fp, r, 0, sizeof(*r));
			stored = true;
		}
	}
	if (cp->seq != sb->seq_count) {
		wc_persist_store8(&c->fp, &sb->seq_count, cp->seq);
		stored = true;
	}
	if (stored)
		wc_persist_drain(&c->fp);
	c->commit.durable_floor = cp->seq;
}

int wc_recover(struct wc_cache *c)
{
	const struct wc_layout *l = &c->layout;
	uint64_t seq_count, n_drop = 0, n_cur = 0;
	struct wc_commit_point cp;
	uint32_t *fre;
	size_t n_free = 0;
	int ret;

	/* Refusals (corrupt entries) must leave the image untouched: classify
	 * against the commit point first, write only once it passed. */
	wc_commit_point(wc_sb(c->base), wc_pmem_record(c->base, 0), wc_pmem_entry(c->base, l, 0),
	                l->n_blocks, &cp);
	seq_count = cp.seq;
	ret = classify(c, seq_count, &n_drop);
	if (ret)
		return ret;
	settle_commit_point(c, &cp);

	/* Pass 2. */
	if (n_drop) {
		for (uint64_t i = 0; i < l->n_blocks; i++)
			if (c->e[i].flags & WC_E_DROP)
				wc_entry_invalidate(c, (uint32_t)i);
		wc_persist_drain(&c->fp);
	}

	for (uint64_t i = 0; i < l->n_blocks; i++)
		n_cur += (c->e[i].flags & WC_E_CURRENT) != 0;
	fre = malloc(sizeof(*fre) * (l->n_blocks - n_cur ? l->n_blocks - n_cur : 1));
	if (!fre)
		return wc_err(-ENOMEM, "%s: recovery of %llu blocks", c->cache_path,
		              (unsigned long long)l->n_blocks);
	for (uint64_t i = 0; i < l->n_blocks; i++)
		if (!(c->e[i].flags & WC_E_CURRENT))
			fre[n_free++] = (uint32_t)i;
	wc_free_batch(c, fre, n_free);
	wc_freelist_mark_cold(c);
	free(fre);
	atomic_store(&c->commit.epoch, seq_count);
	atomic_store(&c->commit.committed_seq, seq_count);
	wc_age_init(c, seq_count);
	return 0;
}
