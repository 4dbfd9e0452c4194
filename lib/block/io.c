/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * io.c -- the block medium's data path, top-down.
 *
 * A write of up to WC_BLK_REC_MAX_BLOCKS blocks is one record:
 *   entries    popped from the free lists (core/alloc.c), one per block;
 *   copy       the data into this thread's aligned buffer, after the
 *              header's place, and its CRC32C (no lock);
 *   reserve    a seq and an offset in the open segment (log.c, log.lock);
 *   write      header + data in ONE device write, RWF_DSYNC when FUA: the
 *              record proves itself by its CRC, so no other write is needed
 *              to make it recoverable;
 *   publish    each block in its shard: the newest seq wins, the version it
 *              supersedes is freed (its data stays on the device until the
 *              segment is reclaimed; order makes it dead there too);
 *   done       the record counts as ended for its segment's summary and
 *              write-back, which therefore see it published.
 * A write without FUA is durable at the next device flush: wc_flush, the
 * autocommit (writeback.c) or a FUA write's flush.
 *
 * A read looks each block up under its shard lock, reads cached blocks from
 * the device with no lock held, and checks the entry's generation after:
 * a changed generation means the version was freed meanwhile (superseded,
 * or its segment reclaimed and maybe rewritten) and the block is read again.
 * Misses go to the origin, a run of them as one request.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "block/block.h"
#include "core/cache.h"
#include "util/crc32c.h"
#include "util/error.h"
#include "writeback/writeback.h"

/* ---- this thread's record buffer ---------------------------------------- */

static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

struct tbuf {
	void *p;
	size_t cap;
};

static void tbuf_free(void *arg)
{
	struct tbuf *t = arg;

	free(t->p);
	free(t);
}

static void buf_key_make(void)
{
	pthread_key_create(&buf_key, tbuf_free);
}

static void *thread_buf(size_t len)
{
	struct tbuf *t;

	pthread_once(&buf_once, buf_key_make);
	t = pthread_getspecific(buf_key);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		pthread_setspecific(buf_key, t);
	}
	if (t->cap < len) {
		void *p = NULL;

		if (posix_memalign(&p, 4096, len))
			return NULL;
		free(t->p);
		t->p = p;
		t->cap = len;
	}
	return t->p;
}

/* ---- publication --------------------------------------------------------- */

void wc_blk_drop(struct wc_cache *c, struct wc_shard *s, uint32_t idx, uint32_t *out, unsigned *n_out)
{
	struct wc_entry *e = &c->e[idx];
	unsigned flags = e->flags;

	WC_ASSERT(wc_spin_held_by_me(&s->lock));
	if (flags & WC_E_INDEXED)
		wc_index_remove(c, s, idx);
	if ((flags & WC_E_CURRENT) && !(flags & WC_E_CLEAN))
		s->current--;
	if (flags & WC_E_WB) {
		/* Write-back's finish frees it. */
		wc_entry_set_flags(e, WC_E_WB | WC_E_SUPERSEDED);
		return;
	}
	wc_entry_set_flags(e, 0);
	out[(*n_out)++] = idx;
}

/* Publish the n blocks of record `seq` whose data is at data_off.  A block
 * that already shows a newer version (a concurrent writer's record with a
 * higher seq finished first) is dead on arrival: recovery would say the
 * same. */
static void publish(struct wc_cache *c, const uint32_t *idx, uint64_t block, unsigned n, uint64_t seq,
                    uint64_t data_off, unsigned flags)
{
	uint32_t dead[2 * WC_BLK_REC_MAX_BLOCKS];
	unsigned n_dead = 0;
	uint32_t bs = c->layout.block_size;

	for (unsigned i = 0; i < n; i++) {
		struct wc_shard *s = wc_shard_of(c, block + i);
		struct wc_entry *e = &c->e[idx[i]];
		uint16_t gen = (uint16_t)(__atomic_load_n(&e->gen, __ATOMIC_RELAXED) + 1);
		uint32_t old;

		wc_spin_lock(&s->lock);
		old = wc_index_find(c, s, block + i);
		s->st.writes++;
		if (old != WC_NIL && c->e[old].seq > seq) {
			/* Even for a moment, so that the free makes it odd again. */
			__atomic_store_n(&e->gen, gen, __ATOMIC_RELEASE);
			dead[n_dead++] = idx[i];
			s->st.write_hits_committed++;
			wc_spin_unlock(&s->lock);
			continue;
		}
		if (old != WC_NIL) {
			wc_blk_drop(c, s, old, dead, &n_dead);
			s->st.write_hits_committed++;
		} else {
			s->st.writes_allocate++;
		}
		wc_entry_set_origin(e, block + i);
		e->seq = seq;
		wc_blk_set_where(e, data_off + (uint64_t)i * bs);
		wc_entry_set_flags(e, WC_E_CURRENT | flags);
		__atomic_store_n(&e->gen, gen, __ATOMIC_RELEASE);
		wc_index_insert(c, s, idx[i]);
		s->current++;
		wc_spin_unlock(&s->lock);
	}
	wc_free_batch(c, dead, n_dead);
}

/* Entries for up to `want` blocks: the ring fills before the entries run
 * out (each version takes its block of the ring), so waiting here is rare:
 * write-back and reclaim free both. */
static int take_entries(struct wc_cache *c, uint32_t *idx, unsigned want)
{
	for (;;) {
		unsigned got = wc_alloc_pop(c, idx, want);
		int ret;

		if (got)
			return (int)got;
		if (wc_has_error(c))
			return wc_err(-EIO, "%s write: the cache is in error state (%d)", c->cache_path,
			              wc_has_error(c));
		if (c->cfg.no_threads) {
			ret = wc_wb_room_wait(c, "write");
			if (ret)
				return ret;
		} else if (wc_wb_past_patience(c)) {
			/* Not if write-back freed entries since the pop above. */
			got = wc_alloc_pop(c, idx, want);
			if (got)
				return (int)got;
			ret = wc_wb_refuse_full(c, "write");
			if (ret)
				return ret;
		}
		atomic_fetch_add(&c->alloc.blocked, 1);
		if (c->cfg.no_threads) {
			/* A loop turns: wait for its steps; none: the host's
			 * steps, here. */
			ret = c->room_step(c, "write");
			if (ret < 0)
				return ret;
			if (ret > 0)
				wc_alloc_wait(c);
		} else {
			wc_blk_wb_kick(c);
			wc_alloc_wait(c);
		}
	}
}

static void give_back(struct wc_cache *c, uint32_t *idx, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct wc_entry *e = &c->e[idx[i]];

		__atomic_store_n(&e->gen, (uint16_t)(e->gen + 1), __ATOMIC_RELEASE);
	}
	wc_free_batch(c, idx, n);
}

/* The header of a record of n blocks whose data follows it in buf. */
static void build_header(struct wc_cache *c, char *buf, const struct wc_blk_resv *r,
                         const uint64_t *origin, unsigned n)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_rec *h = (struct wc_blk_rec *)buf;
	uint32_t lba = b->g.lba;

	memset(h, 0, lba);
	h->magic = WC_BLK_REC_MAGIC;
	h->cache_id = b->cache_id;
	h->seq = r->seq;
	h->seg = r->seg;
	h->count = n;
	h->data_crc = wc_crc32c(0, buf + lba, (size_t)n * c->layout.block_size);
	memcpy(h->origin, origin, n * sizeof(origin[0]));
	h->crc = wc_blk_rec_crc(h, lba);
}

void wc_blk_record_written(struct wc_cache *c, unsigned n, size_t len)
{
	struct wc_blk *b = c->blk;

	atomic_fetch_add_explicit(&b->written, 1, memory_order_release);
	if (atomic_fetch_add_explicit(&b->unflushed_blocks, n, memory_order_relaxed) == 0)
		atomic_store_explicit(&b->first_unflushed_ms, wc_now_ms(c), memory_order_relaxed);
	atomic_fetch_add_explicit(&b->st.records, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->st.record_bytes, len, memory_order_relaxed);
}

/* A record without FUA: built in a slot, published as in flight, submitted;
 * aio.c completes it. */
static int write_record_async(struct wc_cache *c, const char *src, uint64_t block, unsigned n)
{
	struct wc_blk *b = c->blk;
	uint32_t bs = c->layout.block_size, lba = b->g.lba;
	uint64_t origin[WC_BLK_REC_MAX_BLOCKS];
	struct wc_blk_aslot *s;
	int got, ret;

	ret = wc_blk_aio_get(c, lba + (size_t)n * bs, &s);
	if (ret)
		return ret;
	got = take_entries(c, s->idx, n);
	if (got < 0) {
		wc_blk_aio_put(c, s);
		return got;
	}
	n = (unsigned)got;
	memcpy(s->buf + lba, src, (size_t)n * bs);
	for (unsigned i = 0; i < n; i++)
		origin[i] = block + i;
	ret = wc_blk_reserve(c, s->idx, origin, n, 0, 0, &s->r);
	if (ret) {
		give_back(c, s->idx, n);
		wc_blk_aio_put(c, s);
		return ret;
	}
	build_header(c, s->buf, &s->r, origin, n);
	s->block = block;
	s->n = n;
	s->len = lba + (size_t)n * bs;
	__atomic_store_n(&s->data_off, s->r.off + lba, __ATOMIC_RELAXED);
	__atomic_store_n(&s->data_bytes, (uint64_t)n * bs, __ATOMIC_RELAXED);
	wc_blk_aio_mark_busy(s);
	publish(c, s->idx, block, n, s->r.seq, s->r.off + lba, WC_E_INFLIGHT);
	wc_blk_aio_submit(c, s);
	return (int)n;
}

/* One record: n blocks from src for origin blocks block.. */
static int write_record(struct wc_cache *c, const char *src, uint64_t block, unsigned n, bool dsync)
{
	struct wc_blk *b = c->blk;
	uint32_t bs = c->layout.block_size, lba = b->g.lba;
	uint32_t idx[WC_BLK_REC_MAX_BLOCKS];
	uint64_t origin[WC_BLK_REC_MAX_BLOCKS];
	struct wc_blk_resv r;
	char *buf;
	int got, ret;

	if (!dsync && wc_blk_aio_on(c))
		return write_record_async(c, src, block, n);
	got = take_entries(c, idx, n);
	if (got < 0)
		return got;
	n = (unsigned)got;
	buf = thread_buf(lba + (size_t)WC_BLK_REC_MAX_BYTES);
	if (!buf) {
		give_back(c, idx, n);
		return wc_err(-ENOMEM, "%s write: record buffer", c->cache_path);
	}
	memcpy(buf + lba, src, (size_t)n * bs);
	for (unsigned i = 0; i < n; i++)
		origin[i] = block + i;
	ret = wc_blk_reserve(c, idx, origin, n, 0, 0, &r);
	if (ret) {
		give_back(c, idx, n);
		return ret;
	}
	build_header(c, buf, &r, origin, n);
	atomic_fetch_add_explicit(&b->st.record_writes, 1, memory_order_relaxed);
	ret = wc_blk_pwrite(c, buf, lba + (size_t)n * bs, r.off, dsync, "record");
	if (ret) {
		/* The cache's own medium failed: sticky, as dm-writecache's. */
		wc_set_error(c, -EIO, wc_errmsg());
		give_back(c, idx, n);
		wc_blk_record_done(c, &r);
		return ret;
	}
	/* Counted before it is published: once it supersedes a version, a
	 * flush (reclaim's) must cover it. */
	if (dsync) {
		atomic_fetch_add_explicit(&b->st.records, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->st.record_bytes, lba + (uint64_t)n * bs, memory_order_relaxed);
	} else {
		wc_blk_record_written(c, n, lba + (size_t)n * bs);
	}
	publish(c, idx, block, n, r.seq, r.off + lba, 0);
	wc_blk_record_done(c, &r);
	return (int)n;
}

/* Cleaner mode: a block the cache does not hold goes to the origin, made
 * durable there before the write returns. */
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

static int write_around(struct wc_cache *c, const void *src, uint64_t block, unsigned n)
{
	uint32_t align = c->origin_align ? c->origin_align : 1;
	size_t len = (size_t)n << c->block_shift;
	void *bounce = NULL;
	int ret;

	if ((uintptr_t)src % align) {
		if (posix_memalign(&bounce, align < 4096 ? 4096 : align, len))
			return wc_err(-ENOMEM, "%s write-around: %zu-byte bounce buffer", c->cache_path, len);
		memcpy(bounce, src, len);
		src = bounce;
	}
	ret = wc_origin_rw_sync(&c->origin, WC_ORIGIN_WRITE, (void *)src, len, block << c->block_shift);
	free(bounce);
	if (!ret)
		ret = wc_origin_flush(&c->origin);
	return ret;
}

bool wc_blk_write_has_room(struct wc_cache *c, uint64_t len)
{
	uint64_t blocks = len >> c->block_shift;

	return wc_free_count(c) >= blocks && wc_blk_log_room(c, c->blk->g.lba + len);
}

ssize_t wc_blk_write(struct wc_cache *c, const void *buf, size_t len, uint64_t offset, bool fua)
{
	struct wc_blk *b = c->blk;
	uint32_t bs = c->layout.block_size;
	unsigned max = WC_BLK_REC_MAX_BYTES / bs < WC_BLK_REC_MAX_BLOCKS ? WC_BLK_REC_MAX_BYTES / bs
	                                                                  : WC_BLK_REC_MAX_BLOCKS;
	uint64_t block = offset >> c->block_shift, end = block + (len >> c->block_shift);
	uint64_t fits = (b->g.seg_data_bytes - b->g.lba) / bs;
	const char *src = buf;
	bool dsync = fua && c->cfg.fua;
	int ret;

	/* A record must also fit an empty segment: a small cache's segments
	 * (64 KiB) hold fewer blocks than one record may name. */
	if (fits < max)
		max = (unsigned)fits;
	while (block < end) {
		unsigned n = end - block < max ? (unsigned)(end - block) : max;

		if (wc_writeback_cleaning(c) && !cached(c, block)) {
			unsigned k = 1;

			while (k < n && !cached(c, block + k))
				k++;
			ret = write_around(c, src, block, k);
			n = k;
		} else {
			ret = write_record(c, src, block, n, dsync);
			if (ret > 0) {
				n = (unsigned)ret;
				ret = 0;
			}
		}
		if (ret)
			return ret;
		src += (size_t)n * bs;
		block += n;
	}
	return (ssize_t)len;
}

/* ---- reads --------------------------------------------------------------- */

#define READ_BATCH 64u

static void look_up(struct wc_cache *c, uint64_t block, unsigned n, struct wc_blk_found *f)
{
	for (unsigned i = 0; i < n; i++) {
		struct wc_shard *s = wc_shard_of(c, block + i);
		uint32_t idx;

		wc_spin_lock(&s->lock);
		idx = wc_index_find(c, s, block + i);
		s->st.reads++;
		f[i].idx = idx;
		if (idx != WC_NIL) {
			s->st.read_hits++;
			f[i].gen = __atomic_load_n(&c->e[idx].gen, __ATOMIC_ACQUIRE);
			f[i].where = wc_blk_where(&c->e[idx]);
			f[i].inflight = c->e[idx].flags & WC_E_INFLIGHT;
		}
		wc_spin_unlock(&s->lock);
	}
}

static bool still(struct wc_cache *c, const struct wc_blk_found *f)
{
	return __atomic_load_n(&c->e[f->idx].gen, __ATOMIC_ACQUIRE) == f->gen;
}

bool wc_blk_find(struct wc_cache *c, uint64_t block, struct wc_blk_found *f)
{
	look_up(c, block, 1, f);
	return f->idx != WC_NIL;
}

bool wc_blk_found_still(struct wc_cache *c, const struct wc_blk_found *f)
{
	return still(c, f);
}

/* Read `len` bytes from the device at `off` into dst, through an aligned
 * bounce buffer when dst is not aligned for O_DIRECT. */
static int device_read(struct wc_cache *c, char *dst, size_t len, uint64_t off)
{
	struct wc_blk *b = c->blk;
	void *bounce;
	int ret;

	if ((uintptr_t)dst % b->lba == 0)
		return wc_blk_pread(c, dst, len, off, "read");
	bounce = thread_buf(b->g.lba + (size_t)WC_BLK_REC_MAX_BYTES);
	if (!bounce)
		return wc_err(-ENOMEM, "%s read: bounce buffer", c->cache_path);
	for (size_t done = 0; done < len; done += WC_BLK_REC_MAX_BYTES) {
		size_t k = len - done < WC_BLK_REC_MAX_BYTES ? len - done : WC_BLK_REC_MAX_BYTES;

		ret = wc_blk_pread(c, bounce, k, off + done, "read");
		if (ret)
			return ret;
		memcpy(dst + done, bounce, k);
	}
	return 0;
}

static int origin_read(struct wc_cache *c, char *dst, uint64_t block, unsigned n)
{
	uint32_t align = c->origin_align ? c->origin_align : 1;
	size_t len = (size_t)n << c->block_shift;
	void *bounce = NULL;
	int ret;

	if ((uintptr_t)dst % align && posix_memalign(&bounce, align < 4096 ? 4096 : align, len))
		return wc_err(-ENOMEM, "%s read: %zu-byte bounce buffer", c->cache_path, len);
	ret = wc_origin_rw_sync(&c->origin, WC_ORIGIN_READ, bounce ? bounce : dst, len,
	                        block << c->block_shift);
	if (!ret && bounce)
		memcpy(dst, bounce, len);
	free(bounce);
	return ret;
}

/* One hit: from its record's buffer while the record is in flight, else
 * (or once it completed during the copy) from the device. */
static int read_hit(struct wc_cache *c, char *dst, const struct wc_blk_found *f)
{
	if (f->inflight && wc_blk_aio_read(c, dst, f->where, c->layout.block_size))
		return 0;
	return device_read(c, dst, c->layout.block_size, f->where);
}

/* Up to READ_BATCH blocks: runs of hits contiguous on the device are one
 * read, runs of misses one origin request; a hit whose generation moved
 * during its read is read again alone. */
static int read_batch(struct wc_cache *c, char *dst, uint64_t block, unsigned n)
{
	uint32_t bs = c->layout.block_size;
	struct wc_blk_found f[READ_BATCH];
	int ret;

	look_up(c, block, n, f);
	for (unsigned i = 0, j; i < n; i = j) {
		if (f[i].idx == WC_NIL) {
			for (j = i + 1; j < n && f[j].idx == WC_NIL; j++)
				;
			ret = origin_read(c, dst + (size_t)i * bs, block + i, j - i);
		} else if (f[i].inflight) {
			j = i + 1;
			ret = read_hit(c, dst + (size_t)i * bs, &f[i]);
		} else {
			for (j = i + 1; j < n && f[j].idx != WC_NIL && !f[j].inflight &&
			                f[j].where == f[j - 1].where + bs &&
			                (size_t)(j - i) * bs < WC_BLK_REC_MAX_BYTES; j++)
				;
			ret = device_read(c, dst + (size_t)i * bs, (size_t)(j - i) * bs, f[i].where);
		}
		if (ret)
			return ret;
	}
	for (unsigned i = 0; i < n; i++) {
		while (f[i].idx != WC_NIL && !still(c, &f[i])) {
			look_up(c, block + i, 1, &f[i]);
			ret = f[i].idx == WC_NIL ? origin_read(c, dst + (size_t)i * bs, block + i, 1)
			                         : read_hit(c, dst + (size_t)i * bs, &f[i]);
			if (ret)
				return ret;
		}
	}
	return 0;
}

ssize_t wc_blk_read(struct wc_cache *c, void *buf, size_t len, uint64_t offset)
{
	uint64_t block = offset >> c->block_shift, end = block + (len >> c->block_shift);
	char *dst = buf;

	while (block < end) {
		unsigned n = end - block < READ_BATCH ? (unsigned)(end - block) : READ_BATCH;
		int ret = read_batch(c, dst, block, n);

		if (ret)
			return ret;
		dst += (size_t)n << c->block_shift;
		block += n;
	}
	return (ssize_t)len;
}

/* ---- flush and discard --------------------------------------------------- */

int wc_blk_flush(struct wc_cache *c, bool count)
{
	struct wc_blk *b = c->blk;
	uint64_t target = atomic_load_explicit(&b->written, memory_order_acquire), now;
	int ret = 0;

	if (count) {
		wc_storelock_lock(&c->commit.lock);
		c->commit.flushes++;
		wc_storelock_unlock(&c->commit.lock);
	}
	/* The records of writes that returned are on the device first. */
	ret = wc_blk_aio_drain(c);
	if (ret)
		return ret;
	target = atomic_load_explicit(&b->written, memory_order_acquire);
	pthread_mutex_lock(&b->flush_lock);
	/* A concurrent caller's flush, started after our writes, covered us. */
	if (b->durable < target) {
		now = atomic_load_explicit(&b->written, memory_order_acquire);
		atomic_store_explicit(&b->unflushed_blocks, 0, memory_order_relaxed);
		ret = wc_blk_fdatasync(c, "flush");
		if (ret) {
			atomic_fetch_add(&b->unflushed_blocks, 1);
			wc_set_error(c, -EIO, wc_errmsg());
		} else {
			b->durable = now;
			wc_storelock_lock(&c->commit.lock);
			c->commit.commits++;
			wc_storelock_unlock(&c->commit.lock);
		}
	}
	pthread_mutex_unlock(&b->flush_lock);
	return ret;
}

int wc_blk_discard(struct wc_cache *c, uint64_t offset, uint64_t len)
{
	uint64_t first = offset >> c->block_shift, n = len >> c->block_shift;
	uint32_t dead[256];
	unsigned n_dead = 0;
	int ret;

	/* The discard records first, synced: once they are durable no older
	 * version of these blocks comes back at recovery. */
	for (uint64_t done = 0; done < n;) {
		uint32_t k = n - done < 0x7fffffffu ? (uint32_t)(n - done) : 0x7fffffffu;
		struct wc_blk_resv r;
		struct wc_blk_rec *h;
		struct wc_blk *b = c->blk;

		h = thread_buf(b->g.lba + (size_t)WC_BLK_REC_MAX_BYTES);
		if (!h)
			return wc_err(-ENOMEM, "%s discard: record buffer", c->cache_path);
		pthread_mutex_lock(&b->log.discard_lock);
		ret = wc_blk_reserve_discard(c, first + done, k, &r);
		if (ret) {
			pthread_mutex_unlock(&b->log.discard_lock);
			return ret;
		}
		memset(h, 0, b->g.lba);
		h->magic = WC_BLK_REC_MAGIC;
		h->cache_id = b->cache_id;
		h->seq = r.seq;
		h->seg = r.seg;
		h->flags = WC_BLK_REC_DISCARD;
		h->origin[0] = first + done;
		h->origin[1] = k;
		h->crc = wc_blk_rec_crc(h, b->g.lba);
		ret = wc_blk_pwrite(c, h, b->g.lba, r.off, true, "discard record");
		if (ret)
			wc_set_error(c, -EIO, wc_errmsg());
		else
			for (uint64_t i = 0; i < k; i++) {
				struct wc_shard *s = wc_shard_of(c, first + done + i);
				uint32_t cur;

				wc_spin_lock(&s->lock);
				cur = wc_index_find(c, s, first + done + i);
				if (cur != WC_NIL && c->e[cur].seq < r.seq) {
					s->st.discards++;
					wc_blk_drop(c, s, cur, dead, &n_dead);
				}
				wc_spin_unlock(&s->lock);
				if (n_dead >= 255) {
					wc_free_batch(c, dead, n_dead);
					n_dead = 0;
				}
			}
		wc_free_batch(c, dead, n_dead);
		n_dead = 0;
		wc_blk_record_done(c, &r);
		pthread_mutex_unlock(&b->log.discard_lock);
		if (ret)
			return ret;
		done += k;
	}
	ret = wc_origin_discard(&c->origin, offset, len);
	return ret == -EOPNOTSUPP ? 0 : ret;
}
