/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * io.c -- wc_write, wc_read, wc_discard: the data path, top-down.
 *
 * A write of one block decides under its shard lock, then acts with no lock:
 *   WRITE_IN_PLACE  the block is uncommitted and of our epoch: pin, copy over it;
 *   WRITE_NEW       allocate a block, copy into it, then publish the entry
 *                   (which supersedes the older version, if any);
 *   WRITE_AROUND    cleaner mode and not cached: straight to the origin.
 * Every copy into pmem goes through the flush engine; no fence here: the
 * commit (commit.c) drains once for the whole epoch.
 */
#include <stdlib.h>
#include <string.h>

#include "cache_impl.h"
#include "error.h"

enum write_action { WRITE_IN_PLACE, WRITE_NEW, WRITE_AROUND };

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
 * write-back is started by the commit of `seq` (entry_log), or here when the
 * log is full; until that commit the entry is uncommitted anyway. */
static void store_entry(struct wc_cache *c, uint32_t idx, uint64_t origin, uint64_t seq)
{
	struct wc_pmem_entry *pe = wc_pmem_entry(c->base, &c->layout, idx);

	pe->origin_block = origin;
	__atomic_store_n(&pe->seq, seq, __ATOMIC_RELEASE);
}

/* Supersede the current version `old` by a write of epoch `epoch` (shard
 * lock held).  A version of our own epoch can be invalidated at once (it was
 * never committed); an older one stays valid until our epoch commits, since
 * it is what a crash before that commit must show. */
static void supersede(struct wc_cache *c, struct wc_shard *s, uint32_t old, uint64_t epoch)
{
	struct wc_entry *e = &c->e[old];
	unsigned par = epoch & 1;

	if (e->flags & WC_E_ON_LRU) {
		wc_list_remove(c, &s->lru, old);
		e->flags &= ~WC_E_ON_LRU;
	}
	e->flags &= ~WC_E_CURRENT;
	e->flags |= WC_E_SUPERSEDED;
	s->current--;
	if (e->seq == epoch) {
		wc_entry_invalidate(c, old);
		s->st.write_hits_uncommitted++;
	} else {
		s->st.write_hits_committed++;
	}
	if (e->flags & WC_E_WB)
		return; /* write-back completion frees it */
	e->flags |= WC_E_ON_SUPERSEDED | (par ? WC_E_SUP1 : 0);
	wc_list_push_tail(c, &s->superseded[par], old);
}

/* Cleaner mode: a block the cache does not hold goes straight to the origin,
 * and is made durable before we return.  Both steps keep the crash contract
 * (one commit point, no later write without the earlier ones): the commit
 * orders every earlier cached write before this one, and the origin flush
 * orders this one before anything later.  The price, one origin flush per
 * write-around, is paid only while draining the cache (cleaner mode); the
 * crash simulator's cleaner workload found the unordered variant. */
static int write_around(struct wc_cache *c, const void *src, uint64_t block)
{
	uint32_t bs = c->layout.block_size, align = c->origin_align ? c->origin_align : 1;
	void *bounce = NULL;
	int ret;

	if (atomic_load(&c->uncommitted[0]) || atomic_load(&c->uncommitted[1])) {
		ret = wc_commit(c, false);
		if (ret)
			return ret;
	}
	/* The caller's buffer need not suit O_DIRECT: bounce it if not. */
	if ((uintptr_t)src % align) {
		if (posix_memalign(&bounce, align < 4096 ? 4096 : align, bs))
			return wc_err(-ENOMEM, "%s write-around: %u-byte bounce buffer", c->cache_path, bs);
		memcpy(bounce, src, bs);
		src = bounce;
	}
	ret = wc_origin_rw_sync(&c->origin, WC_ORIGIN_WRITE, (void *)src, bs, block << c->block_shift);
	free(bounce);
	if (!ret)
		ret = wc_origin_flush(&c->origin);
	return ret;
}

static int write_block(struct wc_cache *c, const void *src, uint64_t block)
{
	struct wc_shard *s = wc_shard_of(c, block);
	uint32_t bs = c->layout.block_size, idx;
	enum write_action act;
	uint64_t epoch, n;
	int64_t fresh;

	/* Decide. */
	epoch = wc_epoch_enter(c, s);
	pthread_mutex_lock(&s->lock);
	for (;;) {
		idx = wc_index_find(c, s, block);
		if (idx == WC_NIL || c->e[idx].seq != epoch) {
			act = (idx == WC_NIL && atomic_load(&c->cleaner)) ? WRITE_AROUND : WRITE_NEW;
			break;
		}
		if (!c->e[idx].pins && !(c->e[idx].flags & WC_E_WPIN)) {
			act = WRITE_IN_PLACE;
			break;
		}
		wc_wait_unpin(s); /* then look again: it may be gone */
	}
	s->st.writes++;
	if (act == WRITE_IN_PLACE) {
		c->e[idx].flags |= WC_E_WPIN;
		s->st.write_hits_uncommitted++;
		pthread_mutex_unlock(&s->lock);
		wc_flush_copy(&c->fp, block_data(c, idx), src, bs);
		wc_unpin(c, s, idx, true);
		wc_epoch_exit(c, s, epoch);
		return 0;
	}
	if (act == WRITE_AROUND)
		s->st.writes_around++;
	pthread_mutex_unlock(&s->lock);
	wc_epoch_exit(c, s, epoch);
	if (act == WRITE_AROUND)
		return write_around(c, src, block);

	/* Act: copy into a fresh block with no lock held, then publish. */
	fresh = wc_alloc_block(c);
	if (fresh < 0)
		return (int)fresh;
	idx = (uint32_t)fresh;
	wc_flush_copy(&c->fp, block_data(c, idx), src, bs);

	epoch = wc_epoch_enter(c, s);
	pthread_mutex_lock(&s->lock);
	{
		uint32_t old = wc_index_find(c, s, block);
		struct wc_entry *e = &c->e[idx];

		if (old != WC_NIL)
			supersede(c, s, old, epoch);
		else
			s->st.writes_allocate++;
		e->origin = block;
		e->seq = epoch;
		e->age_ms = wc_now_ms(c);
		e->flags = WC_E_CURRENT | WC_E_ON_LRU;
		store_entry(c, idx, block, epoch);
		wc_index_insert(c, s, idx);
		wc_list_push_tail(c, &s->lru, idx);
		s->current++;
	}
	pthread_mutex_unlock(&s->lock);
	n = atomic_fetch_add(&c->uncommitted[epoch & 1], 1);
	if (n < c->entry_log_cap)
		c->entry_log[epoch & 1][n] = idx;
	else
		wc_flush_range(&c->fp, wc_pmem_entry(c->base, &c->layout, idx),
		               sizeof(struct wc_pmem_entry));
	if (n == 0)
		atomic_store(&c->first_dirty_ms, (uint64_t)wc_now_ms(c) + 1);
	wc_epoch_exit(c, s, epoch);
	if (n + 1 == c->cfg.autocommit_blocks)
		return wc_commit(c, false);
	return 0;
}

ssize_t wc_write(wc_cache *c, const void *buf, size_t len, uint64_t offset, unsigned flags)
{
	uint32_t bs;
	int ret, err;

	if (!c)
		return wc_err(-EINVAL, "wc_write: NULL cache");
	ret = check_range(c, "write", buf, len, offset);
	if (ret)
		return ret;
	if (flags & ~WC_FUA)
		return wc_err(-EINVAL, "%s write: unknown flags 0x%x", c->cache_path, flags);
	err = wc_has_error(c);
	if (err)
		return wc_err(-EIO, "%s write at %llu: the cache is in error state (%d); reads still work",
		              c->cache_path, (unsigned long long)offset, err);
	bs = c->layout.block_size;
	for (size_t done = 0; done < len; done += bs) {
		ret = write_block(c, (const char *)buf + done, (offset + done) >> c->block_shift);
		if (ret)
			return ret;
	}
	if ((flags & WC_FUA) && c->cfg.fua) {
		ret = wc_commit(c, false);
		if (ret)
			return ret;
	}
	return (ssize_t)len;
}

/* Read `nblocks` consecutive missing blocks from the origin; O_DIRECT wants
 * aligned memory, so an unaligned caller buffer goes through a bounce. */
static int read_misses(struct wc_cache *c, char *dst, uint64_t block, uint64_t nblocks)
{
	size_t len = nblocks << c->block_shift;
	uint32_t align = c->origin_align ? c->origin_align : 1;
	void *bounce = NULL;
	int ret;

	if ((uintptr_t)dst % align == 0)
		return wc_origin_rw_sync(&c->origin, WC_ORIGIN_READ, dst, len, block << c->block_shift);
	if (posix_memalign(&bounce, align < 4096 ? 4096 : align, len))
		return wc_err(-ENOMEM, "%s read: %zu-byte bounce buffer", c->cache_path, len);
	ret = wc_origin_rw_sync(&c->origin, WC_ORIGIN_READ, bounce, len, block << c->block_shift);
	if (!ret)
		memcpy(dst, bounce, len);
	free(bounce);
	return ret;
}

ssize_t wc_read(wc_cache *c, void *buf, size_t len, uint64_t offset)
{
	uint64_t first = offset >> (c ? c->block_shift : 0), n, miss_start = 0, misses = 0;
	char *dst = buf;
	int ret;

	if (!c)
		return wc_err(-EINVAL, "wc_read: NULL cache");
	ret = check_range(c, "read", buf, len, offset);
	if (ret)
		return ret;
	n = len >> c->block_shift;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t block = first + i;
		struct wc_shard *s = wc_shard_of(c, block);
		uint32_t idx;

		pthread_mutex_lock(&s->lock);
		s->st.reads++;
		for (;;) {
			idx = wc_index_find(c, s, block);
			if (idx == WC_NIL || !(c->e[idx].flags & WC_E_WPIN))
				break;
			/* An in-place write is copying into it: wait, then look
			 * again, so we never return a half-written block. */
			s->pin_waiters++;
			pthread_cond_wait(&s->unpinned, &s->lock);
			s->pin_waiters--;
		}
		if (idx == WC_NIL) {
			pthread_mutex_unlock(&s->lock);
			if (!misses++)
				miss_start = i;
			continue;
		}
		c->e[idx].pins++;
		s->st.read_hits++;
		pthread_mutex_unlock(&s->lock);
		if (misses) {
			ret = read_misses(c, dst + (miss_start << c->block_shift), first + miss_start, misses);
			misses = 0;
			if (ret) {
				wc_unpin(c, s, idx, false);
				return ret;
			}
		}
		memcpy(dst + (i << c->block_shift), block_data(c, idx), c->layout.block_size);
		wc_unpin(c, s, idx, false);
	}
	if (misses) {
		ret = read_misses(c, dst + (miss_start << c->block_shift), first + miss_start, misses);
		if (ret)
			return ret;
	}
	return (ssize_t)len;
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
	wc_flush_drain(&c->fp);
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
	for (uint64_t i = 0; i < n; i++) {
		struct wc_shard *s = wc_shard_of(c, first + i);

		wc_lock_for_drop(c, s, first + i);
		discard_block(c, s, first + i, d);
		wc_unlock_for_drop(c, s);
	}
	discard_flush(c, d);
	free(d);
	ret = wc_origin_discard(&c->origin, offset, len);
	if (ret == -EOPNOTSUPP)
		ret = 0;
	return ret;
}
