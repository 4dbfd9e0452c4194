/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * io.c -- wc_write, wc_read, wc_discard: the data path, top-down.
 *
 * A write never overwrites a block in place: each block of a request goes
 * to a fresh cache block.  The blocks of one request that share an index
 * group (WC_GROUP origin blocks, one shard) are written together:
 *   allocate   all of them in one free-list lock round (core/alloc.c);
 *              when none is free, reclaim.c commits, releases or writes
 *              back until one is;
 *   prefetch   the lines their publication will write, so the misses
 *              overlap the copy instead of following it;
 *   copy       with the flush engine, no lock held, no fence;
 *   publish    in one shard lock round: look each block up once, supersede
 *              the older version (a flag: the commit frees it), index the
 *              new one, store its pmem entry, log it for the commit.
 * Cleaner mode writes a block the cache does not hold around it, to the
 * origin.  The commit (core/commit.c) drains once for the whole epoch.
 *
 * A read hit takes no lock: it copies the version at the head of the
 * block's bucket chain and checks afterwards, by the entry's generation
 * (odd from a free until the next publication), that this version was
 * published for the block and not freed during the copy.  Anything else
 * looks the block up under the shard lock, copies with no lock, and checks
 * the generation the same way; a changed generation means look again.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "util/error.h"
#include "core/readahead.h"
#include "api/io.h"
#include "api/reclaim.h"
#include "block/block.h"
#include "writeback/writeback.h"

static int check_range(struct wc_cache *c, const char *op, const void *buf, size_t len,
                       uint64_t offset)
{
	uint64_t bs = c->layout.block_size, size = c->origin_blocks << c->block_shift;

	if (!buf && len)
		return wc_err(-EINVAL, "%s %s: NULL buffer", c->cache_path, op);
	if (len == 0 || len % bs)
		return wc_err(-EINVAL, "%s %s: length %zu is not a positive multiple of the block size %llu",
		              c->cache_path, op, len, (unsigned long long)bs);
	if (offset % bs)
		return wc_err(-EINVAL, "%s %s: offset %llu is not a multiple of the block size %llu",
		              c->cache_path, op, (unsigned long long)offset, (unsigned long long)bs);
	if (offset >= size || len > size - offset)
		return wc_err(-EINVAL, "%s %s: [%llu, +%zu) is past the end of the origin (%llu bytes)",
		              c->cache_path, op, (unsigned long long)offset, len, (unsigned long long)size);
	return 0;
}

static void *block_data(struct wc_cache *c, uint32_t idx)
{
	return wc_pmem_data(c->base, &c->layout, idx);
}

/* Store the entry with cached stores (its neighbours in the line are stored
 * the same way, so a line never mixes non-temporal and cached stores).  Its
 * write-back is started by the commit of `seq` (the shard's log), or here
 * when it could not be logged; until that commit the entry is uncommitted
 * anyway. */
static void store_entry(struct wc_cache *c, uint32_t idx, uint64_t origin, uint64_t seq)
{
	struct wc_pmem_entry *pe = wc_pmem_entry(c->base, &c->layout, idx);

	pe->origin_block = origin;
	__atomic_store_n(&pe->seq, seq, __ATOMIC_RELEASE);
}

/* Supersede the current version `old` by a write of epoch `epoch` (shard
 * lock held).  A version of our own epoch can be invalidated at once (it was
 * never committed); an older one stays valid until our epoch commits, since
 * it is what a crash before that commit must show.  Either way it stays on
 * its chain, behind ours: the commit of our epoch finds it there and frees
 * it (commit.c, free_superseded), or write-back's completion does if it is
 * being written back. */
static void supersede(struct wc_cache *c, struct wc_shard *s, uint32_t old, uint64_t epoch)
{
	struct wc_entry *e = &c->e[old];

	WC_ASSERT(wc_spin_held_by_me(&s->lock));
	WC_ASSERT((e->flags & (WC_E_CURRENT | WC_E_INDEXED)) == (WC_E_CURRENT | WC_E_INDEXED));
	WC_ASSERT(s->current > 0);
	wc_entry_set_flags(e, (e->flags & ~WC_E_CURRENT) | WC_E_SUPERSEDED);
	s->current--;
	if (e->seq == epoch) {
		wc_entry_invalidate(c, old);
		s->st.write_hits_uncommitted++;
	} else {
		s->st.write_hits_committed++;
		/* The commit after next stores its invalidation: fetch the
		 * line now, so that commit does not wait for a
		 * read-for-ownership per block. */
		if (!(e->flags & WC_E_WB))
			__builtin_prefetch(wc_pmem_entry(c->base, &c->layout, old), 1);
	}
}

/* Cleaner mode: blocks the cache does not hold go straight to the origin,
 * and are made durable before we return.  Both steps keep the crash contract
 * (one commit point, no later write without the earlier ones): the commit
 * orders every earlier cached write before these, and the origin flush
 * orders them before anything later; the crash simulator's cleaner workload
 * found the unordered variant.  A request's adjacent write-arounds go as one
 * origin write and one flush (a 64 KiB write around the cache paid sixteen
 * of each).  Concurrent writers' flushes are left to the kernel, which
 * groups concurrent fdatasync calls itself: a group flush in here measured
 * 0.75x its throughput (wcbench run --threads 4 --options cleaner=1 --bs
 * 4096 --no-prefill, origin on ext4 on a virtio disk: 3,100 vs 4,100 IOPS,
 * two runs each). */
static int write_around(struct wc_cache *c, const void *src, uint64_t block, unsigned n)
{
	uint32_t align = c->origin_align ? c->origin_align : 1;
	size_t len = (size_t)n << c->block_shift;
	void *bounce = NULL;
	int ret;

	if (wc_uncommitted(c)) {
		ret = wc_commit(c, false);
		if (ret)
			return ret;
	}
	/* The caller's buffer need not suit O_DIRECT: bounce it if not. */
	if ((uintptr_t)src % align) {
		if (posix_memalign(&bounce, align < 4096 ? 4096 : align, len))
			return wc_err(-ENOMEM, "%s write-around: %zu-byte bounce buffer", c->cache_path, len);
		memcpy(bounce, src, len);
		src = bounce;
	}
	ret = wc_origin_rw_sync(&c->origin, WC_ORIGIN_WRITE, (void *)src, len, block << c->block_shift);
	free(bounce);
	/* Even after a failed write: part of it may have landed. */
	wc_ra_forget(c, block, n);
	if (!ret)
		ret = wc_origin_flush(&c->origin);
	return ret;
}

/*
 * A reader's copy may race with a writer that reuses the block meanwhile:
 * the generation check below throws such a copy away, as a seqlock reader
 * does.  ThreadSanitizer cannot know that, so its builds copy with a loop
 * it does not watch.
 */
#if defined(__SANITIZE_THREAD__)
#define WC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WC_TSAN 1
#endif
#endif
#ifdef WC_TSAN
__attribute__((no_sanitize("thread"))) static void copy_out(void *dst, const void *src, size_t n)
{
	for (size_t i = 0; i < n / 8; i++)
		((uint64_t *)dst)[i] = ((const volatile uint64_t *)src)[i];
}
#else
#define copy_out memcpy
#endif

/* Start the misses the publication would take: the new blocks' DRAM and
 * pmem entries and the group's bucket line.  The copy that follows (and the
 * drain of its non-temporal stores that the shard lock's locked instruction
 * waits for) hides them. */
static void prefetch_publish(struct wc_cache *c, struct wc_shard *s, uint64_t block,
                             const uint32_t *idx, unsigned n)
{
	__builtin_prefetch(wc_bucket(s, block), 1);
	for (unsigned i = 0; i < n; i++) {
		__builtin_prefetch(&c->e[idx[i]], 1);
		__builtin_prefetch(wc_pmem_entry(c->base, &c->layout, idx[i]), 1);
	}
}

/* After the copy, before the shard lock: the first entry of the first
 * block's chain, which the lookup under the lock reads (most often the
 * version it supersedes) -- read with no lock as a hint, checked before use.
 * The load runs while the copy's non-temporal stores drain (loads pass older
 * stores), which the lock's exchange waits for anyway. */
static void prefetch_chain(struct wc_cache *c, struct wc_shard *s, uint64_t block)
{
#ifndef WC_TSAN
	uint32_t i = __atomic_load_n(wc_bucket(s, block), __ATOMIC_RELAXED);

	if (i < c->layout.n_blocks)
		__builtin_prefetch(&c->e[i], 1);
#endif
}

/* Autocommit by count: each thread reports its publications to the shared
 * counter in batches, so writers do not share that line per write.  A batch
 * is 1/16 of autocommit_blocks: a commit comes at most 15 blocks per thread
 * late, and the count never decides whether a commit is needed (the shard
 * logs do, wc_uncommitted). */
static __thread struct {
	const struct wc_cache *cache;
	uint64_t epoch;
	uint32_t n;
} unreported;

static int count_published(struct wc_cache *c, uint64_t epoch, unsigned n)
{
	uint32_t batch = c->cfg.autocommit_blocks / 16 ? c->cfg.autocommit_blocks / 16 : 1;
	__typeof__(unreported) *u = &unreported; /* one thread-local lookup, not one per use */
	uint64_t before;

	if (u->cache != c || u->epoch != epoch) {
		u->cache = c;
		u->epoch = epoch;
		u->n = 0;
	}
	u->n += n;
	if (u->n < batch)
		return 0;
	before = atomic_fetch_add_explicit(&c->commit.published, u->n, memory_order_relaxed);
	n = u->n;
	u->n = 0;
	if (before < c->cfg.autocommit_blocks && before + n >= c->cfg.autocommit_blocks)
		return wc_commit(c, false);
	return 0;
}

/* Publish n freshly copied blocks for origin blocks block..block+n-1 (one
 * group, shard s): one epoch (stored in *published), one shard lock round. */
static int publish(struct wc_cache *c, struct wc_shard *s, uint64_t block, const uint32_t *idx,
                   unsigned n, uint64_t *published)
{
	struct wc_writer_slot *w = wc_writer_slot_mine(c);
	uint64_t epoch;
	unsigned allocated = 0, par, logged;
	bool unlogged = false;

	wc_writer_enter(w);
	/* The data is persistent before its entry can be (invariant (1) of
	 * commit.c): the shard lock's exchange is the fence on x86. */
	wc_persist_order_before_lock(&c->fp);
	wc_spin_lock(&s->lock);
	epoch = wc_epoch_current(c);
	*published = epoch;
	par = epoch & 1;
	wc_writer_mark(w, par, (unsigned)(s - c->shards));
	logged = wc_shard_log_room(s, par, n);
	for (unsigned i = 0; i < n; i++) {
		uint32_t old = wc_index_find(c, s, block + i);
		struct wc_entry *e = &c->e[idx[i]];
		uint16_t gen = (uint16_t)(__atomic_load_n(&e->gen, __ATOMIC_RELAXED) + 1);

		/* Freed (odd) until now: this publication makes it even. */
		WC_ASSERT(!(gen & 1));

		if (old != WC_NIL)
			supersede(c, s, old, epoch);
		else
			allocated++;
		wc_entry_set_origin(e, block + i);
		e->seq = epoch;
		wc_entry_set_flags(e, WC_E_CURRENT);
		/* Even: published (read_block); before it is indexed. */
		__atomic_store_n(&e->gen, gen, __ATOMIC_RELEASE);
		store_entry(c, idx[i], block + i, epoch);
		wc_index_insert(c, s, idx[i]);
		if (i < logged) {
			s->log[par][s->log_n[par] + i] = (struct wc_logged){ idx[i], gen };
			continue;
		}
		/* No memory to log it: this commit falls back to two drains,
		 * and the entry must be persistent before our unlock, a plain
		 * store. */
		wc_persist_range(&c->fp, wc_pmem_entry(c->base, &c->layout, idx[i]),
		               sizeof(struct wc_pmem_entry));
		unlogged = true;
	}
	if (unlogged) {
		wc_persist_drain(&c->fp);
		__atomic_store_n(&s->log_lost[par], true, __ATOMIC_RELAXED);
	}
	/* Counted before the unlock, which the commit waits for. */
	__atomic_store_n(&s->log_n[par], s->log_n[par] + logged, __ATOMIC_RELAXED);
	s->current += n;
	s->st.writes += n;
	s->st.writes_allocate += allocated;
	wc_spin_unlock(&s->lock);
	wc_writer_exit(w);
	return count_published(c, epoch, n);
}

/* Cleaner mode: is `block` in the cache?  (Counted as a write-around if
 * not.) */
static bool cached(struct wc_cache *c, uint64_t block)
{
	struct wc_shard *s = wc_shard_of(c, block);
	bool hit;

	wc_spin_lock(&s->lock);
	hit = wc_index_find(c, s, block) != WC_NIL;
	if (!hit) {
		s->st.writes++;
		s->st.writes_around++;
	}
	wc_spin_unlock(&s->lock);
	return hit;
}

/* Write n blocks of one group: as many fresh blocks as the free lists give
 * at a time (a cache smaller than a group still makes progress).  *published:
 * the epoch of the last publication, WC_NONE if the group went around the
 * cache. */
static int write_group(struct wc_cache *c, const char *src, uint64_t block, unsigned n,
                       uint64_t *published, bool nowait)
{
	struct wc_shard *s = wc_shard_of(c, block);
	uint32_t bs = c->layout.block_size, idx[WC_GROUP];

	while (n) {
		int got, ret;

		bool cleaner = wc_writeback_cleaning(c);

		if (nowait && cleaner)
			return -EAGAIN; /* the origin's latency */
		if (cleaner && !cached(c, block)) {
			got = 1;
			while ((unsigned)got < n && !cached(c, block + (unsigned)got))
				got++;
			ret = write_around(c, src, block, (unsigned)got);
			*published = WC_NONE;
		} else {
			/* Cleaner mode decides block by block. */
			/* nowait: only what the free lists hold now; making
			 * room may wait for a commit or the origin. */
			got = nowait ? (int)wc_alloc_pop(c, idx, n) : wc_reclaim_blocks(c, idx, cleaner ? 1 : n);
			if (got == 0)
				return -EAGAIN;
			if (got < 0)
				return got;
			prefetch_publish(c, s, block, idx, (unsigned)got);
			/* One engine call per run of adjacent cache blocks. */
			for (int i = 0, j; i < got; i = j) {
				for (j = i + 1; j < got && idx[j] == idx[j - 1] + 1; j++)
					;
				wc_persist_copy(&c->fp, block_data(c, idx[i]), src + (size_t)i * bs,
				              (size_t)(j - i) * bs);
			}
			prefetch_chain(c, s, block);
			ret = publish(c, s, block, idx, (unsigned)got, published);
		}
		if (ret)
			return ret;
		src += (size_t)got * bs;
		block += (unsigned)got;
		n -= (unsigned)got;
	}
	return 0;
}

int wc_io_check(struct wc_cache *c, const char *op, const void *buf, size_t len, uint64_t offset)
{
	return check_range(c, op, buf, len, offset);
}

int wc_io_write_checked(struct wc_cache *c, const char *op, uint64_t offset)
{
	int err = wc_has_error(c);

	if (err)
		return wc_err(-EIO, "%s %s at %llu: the cache is in error state (%d); reads still work",
		              c->cache_path, op, (unsigned long long)offset, err);
	return 0;
}

ssize_t wc_io_write(struct wc_cache *c, const void *buf, size_t len, uint64_t offset, unsigned flags,
                    bool nowait)
{
	uint64_t published = WC_NONE;
	int ret;

	if (c->blk)
		return nowait ? -EAGAIN : wc_blk_write(c, buf, len, offset, flags & WC_FUA);
	for (uint64_t block = offset >> c->block_shift, end = block + (len >> c->block_shift);
	     block < end;) {
		uint64_t group_end = (block | (WC_GROUP - 1)) + 1;
		unsigned n = (unsigned)((end < group_end ? end : group_end) - block);

		ret = write_group(c, (const char *)buf + ((block << c->block_shift) - offset), block, n,
		                  &published, nowait);
		if (ret)
			return ret;
		block += n;
	}
	if ((flags & WC_FUA) && c->cfg.fua) {
		/* Epochs only grow: committing the last block's commits all. */
		ret = published != WC_NONE ? wc_commit_published(c, published) : wc_commit(c, false);
		if (ret)
			return ret;
	}
	return (ssize_t)len;
}

ssize_t wc_write(wc_cache *c, const void *buf, size_t len, uint64_t offset, unsigned flags)
{
	int ret;

	if (!c)
		return wc_err(-EINVAL, "wc_write: NULL cache");
	ret = check_range(c, "write", buf, len, offset);
	if (ret)
		return ret;
	if (flags & ~WC_FUA)
		return wc_err(-EINVAL, "%s write: unknown flags 0x%x", c->cache_path, flags);
	ret = wc_io_write_checked(c, "write", offset);
	if (ret)
		return ret;
	return wc_io_write(c, buf, len, offset, flags, false);
}

/*
 * A request's misses, read from the origin together: each run of
 * consecutive missing blocks is one origin request, all of a request's runs
 * in flight at once (a remote origin pays its latency once per request, not
 * once per run).  What read-ahead holds is copied from DRAM instead.
 */
#define MISS_BATCH 16

struct miss_batch {
	struct wc_origin_range r[MISS_BATCH];
	void *bounce[MISS_BATCH]; /* O_DIRECT wants aligned memory */
	char *dst[MISS_BATCH];
	unsigned n;
};

static int miss_flush(struct wc_cache *c, struct miss_batch *b)
{
	int ret = b->n ? wc_origin_rw_many(&c->origin, WC_ORIGIN_READ, b->r, b->n) : 0;

	for (unsigned i = 0; i < b->n; i++) {
		if (b->bounce[i]) {
			if (!ret)
				memcpy(b->dst[i], b->bounce[i], b->r[i].len);
			free(b->bounce[i]);
		}
	}
	b->n = 0;
	return ret;
}

static int miss_add(struct wc_cache *c, struct miss_batch *b, char *dst, uint64_t block,
                    uint64_t nblocks)
{
	uint32_t align = c->origin_align ? c->origin_align : 1;
	uint64_t ahead = wc_ra_read(c, dst, block, nblocks);
	size_t len;

	if (ahead == nblocks)
		return 0;
	dst += ahead << c->block_shift;
	block += ahead;
	len = (size_t)(nblocks - ahead) << c->block_shift;
	if (b->n == MISS_BATCH) {
		int ret = miss_flush(c, b);

		if (ret)
			return ret;
	}
	b->dst[b->n] = dst;
	b->bounce[b->n] = NULL;
	b->r[b->n] = (struct wc_origin_range){ .buf = dst, .len = len,
	                                       .offset = block << c->block_shift };
	if ((uintptr_t)dst % align) {
		if (posix_memalign(&b->bounce[b->n], align < 4096 ? 4096 : align, len))
			return wc_err(-ENOMEM, "%s read: %zu-byte bounce buffer", c->cache_path, len);
		b->r[b->n].buf = b->bounce[b->n];
	}
	b->n++;
	return 0;
}

#ifndef WC_TSAN
/*
 * The common hit, with no lock: the version at the head of the block's
 * bucket chain (writers insert there) is looked at, copied and checked.
 * Its entry and its data are loaded together, so the read waits for two
 * misses (bucket, then entry and data) instead of three in a row.  Valid if
 * the entry was published for `block` and current before the copy (gen even,
 * read first: x86 does not reorder loads with older loads) and the same
 * life of the block after it (gen unchanged): then the data is that
 * version's, written before its publication.  Anything else goes the
 * locked way.  Off under ThreadSanitizer, which would see the benign races.
 */
static bool read_hit_lockless(struct wc_cache *c, struct wc_shard *s, char *dst, uint64_t block)
{
	uint32_t idx = __atomic_load_n(wc_bucket(s, block), __ATOMIC_RELAXED);
	uint16_t gen;
	const struct wc_entry *e;
	bool ours;

	/* WC_NIL, or a torn read of a changing bucket: the locked way. */

	if (idx >= c->layout.n_blocks)
		return false;
	e = &c->e[idx];
	gen = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE);
	ours = (gen & 1) == 0 && __atomic_load_n(&e->origin, __ATOMIC_RELAXED) == block &&
	       (__atomic_load_n(&e->flags, __ATOMIC_RELAXED) & WC_E_CURRENT);
	/* Predicted taken: the copy's loads start while the entry's miss is
	 * outstanding. */
	if (!__builtin_expect(ours, 1))
		return false;
	/* Counted before the copy, taken back if the check fails: a locked
	 * instruction after it would wait for the copy's stores to the
	 * caller's buffer, which otherwise drain while the caller runs on
	 * (10 interleaved pairs of wcbench run --workload randread --no-floor:
	 * 0.97 M -> 1.18 M hits/s, medians). */
	atomic_fetch_add_explicit(&s->lockless_hits, 1, memory_order_relaxed);
	copy_out(dst, block_data(c, idx), c->layout.block_size);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != gen) {
		atomic_fetch_sub_explicit(&s->lockless_hits, 1, memory_order_relaxed);
		return false;
	}
	return true;
}
#endif

/* Look `block` up and, on a hit, copy it to dst with no lock held.  Returns
 * true on a hit.  The copy is valid only if the block was not freed (and so
 * possibly reused) before it ended: a free bumps the entry's generation
 * before the block can be handed out again, and a change means look again
 * (the block now has a newer version, or was written back and dropped). */
static bool read_block(struct wc_cache *c, char *dst, uint64_t block)
{
	struct wc_shard *s = wc_shard_of(c, block);

#ifndef WC_TSAN
	if (read_hit_lockless(c, s, dst, block))
		return true;
#endif
	for (;;) {
		uint32_t idx;
		uint16_t gen;

		wc_spin_lock(&s->lock);
		s->st.reads++;
		idx = wc_index_find(c, s, block);
		if (idx == WC_NIL) {
			wc_spin_unlock(&s->lock);
			return false;
		}
		gen = __atomic_load_n(&c->e[idx].gen, __ATOMIC_RELAXED);
		s->st.read_hits++;
		wc_spin_unlock(&s->lock);
		copy_out(dst, block_data(c, idx), c->layout.block_size);
		/* The copy's loads before the check (a seqlock reader's order;
		 * on x86 loads are not reordered with older loads). */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&c->e[idx].gen, __ATOMIC_RELAXED) == gen)
			return true;
		wc_spin_lock(&s->lock);
		s->st.reads--;  /* counted once per block read */
		s->st.read_hits--;
		wc_spin_unlock(&s->lock);
	}
}

bool wc_io_read_hit(struct wc_cache *c, void *dst, uint64_t block)
{
	return read_block(c, dst, block);
}

ssize_t wc_read(wc_cache *c, void *buf, size_t len, uint64_t offset)
{
	int ret;

	if (!c)
		return wc_err(-EINVAL, "wc_read: NULL cache");
	ret = check_range(c, "read", buf, len, offset);
	if (ret)
		return ret;
	return wc_io_read(c, buf, len, offset, 0);
}

ssize_t wc_io_read(struct wc_cache *c, void *buf, size_t len, uint64_t offset, unsigned flags)
{
	uint64_t first = offset >> c->block_shift, n, miss_start = 0, misses = 0;
	struct miss_batch batch;
	/* A reader that asked for none is not a stream to read ahead of. */
	bool noted = flags & WC_REQ_NO_READAHEAD;
	char *dst = buf;
	int ret = 0;

	if (c->blk)
		return wc_blk_read(c, buf, len, offset);
	batch.n = 0;
	n = len >> c->block_shift;
	for (uint64_t i = 0; i <= n && !ret; i++) {
		if (i < n && !read_block(c, dst + (i << c->block_shift), first + i)) {
			if (!misses++)
				miss_start = i;
			/* Before our own misses go out: the next window
			 * loads while they do. */
			if (!noted) {
				wc_ra_note(c, first, n);
				noted = true;
			}
			continue;
		}
		if (misses)
			ret = miss_add(c, &batch, dst + (miss_start << c->block_shift),
			               first + miss_start, misses);
		misses = 0;
	}
	if (!ret)
		ret = miss_flush(c, &batch);
	else
		miss_flush(c, &batch); /* never return with a read in flight */
	return ret ? ret : (ssize_t)len;
}

#define DISCARD_BATCH 4096

struct discard_ctx {
	uint32_t dead[DISCARD_BATCH];
	size_t n;
};

/* The invalidations are the discard: durable before we return and before
 * the blocks are reused. */
static void discard_flush(struct wc_cache *c, struct discard_ctx *d)
{
	if (!d->n)
		return;
	wc_persist_drain(&c->fp);
	wc_free_batch(c, d->dead, d->n);
	d->n = 0;
}

static void discard_emit(struct wc_cache *c, uint32_t idx, void *arg)
{
	struct discard_ctx *d = arg;

	d->dead[d->n++] = idx;
	if (d->n == DISCARD_BATCH)
		discard_flush(c, d);
}

/* Versions under write-back are left to it: its completion frees them. */
static void discard_block(struct wc_cache *c, struct wc_shard *s, uint64_t block, struct discard_ctx *d)
{
	uint32_t cur = wc_index_find(c, s, block);

	if (cur != WC_NIL && !(c->e[cur].flags & WC_E_WB))
		s->st.discards++;
	wc_versions_drop(c, s, block, WC_NONE - 1, discard_emit, d);
}

int wc_discard(wc_cache *c, uint64_t offset, uint64_t len)
{
	struct discard_ctx *d;
	uint64_t first, n;
	int ret, err;

	if (!c)
		return wc_err(-EINVAL, "wc_discard: NULL cache");
	ret = check_range(c, "discard", c, len, offset);
	if (ret)
		return ret;
	err = wc_has_error(c);
	if (err)
		return wc_err(-EIO, "%s discard: the cache is in error state (%d)", c->cache_path, err);
	if (c->blk)
		return wc_blk_discard(c, offset, len);
	/* Commit first: the discard is then ordered after every write that
	 * completed before it, so a crash shows one commit point with none,
	 * some or all of the discard applied - never the discard applied over
	 * an older commit point (found by the crash simulator, see
	 * tests/crash-regressions/discard-before-commit). */
	ret = wc_commit(c, false);
	if (ret)
		return ret;
	d = malloc(sizeof(*d));
	if (!d)
		return wc_err(-ENOMEM, "%s discard: batch", c->cache_path);
	d->n = 0;
	first = offset >> c->block_shift;
	n = len >> c->block_shift;
	/* Before the cached versions go (readahead.c, coherence). */
	wc_ra_forget(c, first, n);
	for (uint64_t i = 0; i < n; i++) {
		struct wc_shard *s = wc_shard_of(c, first + i);

		wc_lock_for_drop(c, s);
		discard_block(c, s, first + i, d);
		wc_unlock_for_drop(c, s);
	}
	discard_flush(c, d);
	free(d);
	ret = wc_origin_discard(&c->origin, offset, len);
	wc_ra_forget(c, first, n); /* and what the origin's discard changed */
	if (ret == -EOPNOTSUPP)
		ret = 0;
	return ret;
}
