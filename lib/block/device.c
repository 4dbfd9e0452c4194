/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.c -- the block medium's device: opened with O_DIRECT (no page
 * cache: what a write returned is in the device, and a flush or RWF_DSYNC
 * makes it durable), its logical block size read from it, whole reads and
 * writes, and the 4 KiB slots written alone (state, identity).
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "block/block.h"
#include "core/cache.h"
#include "core/map.h"
#include "core/medium.h"
#include "core/testhooks.h"
#include "util/error.h"
#include "util/lock.h"

/* The offset, length and memory alignment O_DIRECT needs here. */
static uint32_t dio_alignment(struct wc_blk *b, const struct stat *st)
{
	if (S_ISBLK(st->st_mode)) {
		int ssz = 0;

		if (ioctl(b->fd, BLKSSZGET, &ssz) == 0 && ssz >= 512 && ssz <= 4096)
			return (uint32_t)ssz;
		return 4096;
	}
#ifdef STATX_DIOALIGN
	{
		struct statx sx;

		if (statx(b->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
		    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align >= 512 &&
		    sx.stx_dio_offset_align <= 4096)
			return sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align
			                                                      : (sx.stx_dio_mem_align > 512
			                                                         ? sx.stx_dio_mem_align : 512);
	}
#endif
	/* The file system's block device's sector size is what ext4 and XFS
	 * ask; unknown here, 4096 is safe on every device. */
	return 4096;
}

/* Store zeros over [from, to) with large O_DIRECT writes (`to` rounded
 * down to the logical block: a partial last block is not part of the
 * format). */
static int write_zeros(struct wc_cache *c, uint64_t from, uint64_t to)
{
	struct wc_blk *b = c->blk;
	size_t chunk = 8u << 20;
	void *z;
	int ret = 0;

	from = from / b->lba * b->lba;
	to = to / b->lba * b->lba;
	if (from >= to)
		return 0;
	z = wc_blk_alloc_buf(c, chunk);
	if (!z)
		return wc_err(-ENOMEM, "%s: zero buffer", c->cache_path);
	memset(z, 0, chunk);
	for (uint64_t off = from; off < to && !ret; off += chunk) {
		size_t n = to - off < chunk ? (size_t)(to - off) : chunk;

		ret = wc_blk_pwrite(c, z, n, off, false, "fill");
	}
	free(z);
	return ret;
}

/* Make every extent of the file's first `size` bytes written: ext4 and XFS
 * mark fallocated extents unwritten (and a sparse file has holes), and a
 * write into one must convert it -- a journal commit for a synced write,
 * and on ext4 a record write that is not a whole number of file-system
 * blocks takes the inode exclusively and waits for every direct write in
 * flight (measured: 4,608-byte writes at queue depth 32 over an fallocated
 * file, 16,764 IOPS; the same file written, 115,953).  Holes and unwritten
 * ranges only, found with FIEMAP; a file system without FIEMAP is left as
 * it is.  Their content reads as zeros before and after: nothing changes
 * but the extent state.  Returns the bytes written, or a negative errno. */
static int64_t fill_unwritten(struct wc_cache *c, uint64_t size)
{
	enum { N_EXT = 128 };
	const size_t q_len = sizeof(struct fiemap) + N_EXT * sizeof(struct fiemap_extent);
	struct fiemap *q = malloc(q_len);
	struct wc_blk *b = c->blk;
	uint64_t pos = 0, filled = 0;
	int64_t ret = 0;

	if (!q)
		return wc_err(-ENOMEM, "%s: extent list", c->cache_path);
	while (pos < size && !ret) {
		uint64_t was = pos;

		memset(q, 0, q_len);
		q->fm_start = pos;
		q->fm_length = size - pos;
		q->fm_extent_count = N_EXT;
		/* Written back first: an extent still unwritten on disk may hold
		 * data in the page cache (written through a mapping, or buffered
		 * and not yet flushed), which zeros written here would destroy
		 * -- before wc_create could even see it and refuse the file. */
		q->fm_flags = FIEMAP_FLAG_SYNC;
		if (ioctl(b->fd, FS_IOC_FIEMAP, q) < 0) {
			if (errno != EOPNOTSUPP && errno != ENOTTY && errno != EINVAL)
				ret = wc_err_sys(-errno, "%s: FIEMAP at %llu", c->cache_path,
				                 (unsigned long long)pos);
			break;
		}
		if (!q->fm_mapped_extents) {
			if (!(ret = write_zeros(c, pos, size))) /* a hole to the end */
				filled += size - pos;
			break;
		}
		for (unsigned i = 0; i < q->fm_mapped_extents && pos < size && !ret; i++) {
			const struct fiemap_extent *e = &q->fm_extents[i];
			uint64_t lo = e->fe_logical, hi = e->fe_logical + e->fe_length;

			if (hi > size)
				hi = size;
			if (lo > pos) { /* a hole before it */
				uint64_t to = lo < size ? lo : size;

				if ((ret = write_zeros(c, pos, to)))
					break;
				filled += to - pos;
				pos = to;
			}
			if ((e->fe_flags & FIEMAP_EXTENT_UNWRITTEN) && hi > pos) {
				if ((ret = write_zeros(c, pos, hi)))
					break;
				filled += hi - pos;
			}
			if (hi > pos)
				pos = hi;
			if ((e->fe_flags & FIEMAP_EXTENT_LAST) && pos < size) {
				if ((ret = write_zeros(c, pos, size)))
					break;
				filled += size - pos;
				pos = size;
			}
		}
		if (pos == was) /* an answer that does not move on: leave it */
			break;
	}
	free(q);
	return ret ? ret : (int64_t)filled;
}

/* A new file, or a file grown to `size` bytes, or an existing one with
 * unwritten extents: all of it written once, then durable. */
static int fill_file(struct wc_cache *c, uint64_t old_size, uint64_t size)
{
	struct wc_blk *b = c->blk;
	int64_t filled;
	int ret;

	if (old_size < size && ftruncate(b->fd, (off_t)size))
		return wc_err_sys(-errno, "%s: truncate to %llu", c->cache_path,
		                  (unsigned long long)size);
	if (b->io) /* the simulator's device: no extents, only the new bytes */
		filled = old_size < size ? write_zeros(c, old_size, size) : 0;
	else
		filled = fill_unwritten(c, size);
	if (filled < 0)
		return (int)filled;
	ret = old_size < size || filled ? wc_blk_fdatasync(c, "fill") : 0;
	return ret;
}

int wc_blk_device_open(struct wc_cache *c, bool create, uint64_t create_size)
{
	struct wc_blk *b = c->blk;
	struct stat st;
	int fl;

	if (c->fd < 0) {
		c->fd = open(c->cache_path, O_RDWR | O_CLOEXEC | (create && create_size ? O_CREAT : 0), 0644);
		if (c->fd < 0) {
			if (errno == ENOENT && create)
				return wc_err(-ENOENT, "%s: no such file (create it with the cache's size, "
				              "or set cache_size)", c->cache_path);
			return wc_err_sys(-errno, "%s: open", c->cache_path);
		}
		int ret = wc_lock_take(c->fd, "cache", c->cache_path);

		if (ret)
			return ret;
	}
	if (fstat(c->fd, &st))
		return wc_err_sys(-errno, "%s: fstat", c->cache_path);
	if (S_ISDIR(st.st_mode))
		return wc_err(-EISDIR, "%s: is a directory", c->cache_path);
	if (create) {
		int ret = wc_map_check_create_size(c->cache_path, &st, create_size);

		if (ret)
			return ret;
	}
	/* Our own descriptor for the data: the locked one stays as it is (the
	 * lock is on the open file description). */
	b->fd = open(c->cache_path, O_RDWR | O_CLOEXEC | O_DIRECT);
	b->direct = b->fd >= 0;
	if (b->fd < 0 && errno == EINVAL) {
		/* tmpfs (before Linux 6.6) and some FUSE file systems refuse
		 * O_DIRECT: written through the page cache, durable by
		 * fdatasync and RWF_DSYNC all the same. */
		b->fd = open(c->cache_path, O_RDWR | O_CLOEXEC);
	}
	if (b->fd < 0)
		return wc_err_sys(-errno, "%s: open for O_DIRECT I/O", c->cache_path);
	b->is_bdev = S_ISBLK(st.st_mode);
	if (wc_test_hooks && wc_test_hooks->blk_io)
		b->io = wc_test_hooks->blk_io;
	b->lba = dio_alignment(b, &st);
	if (b->is_bdev) {
		uint64_t sz = 0;

		if (ioctl(b->fd, BLKGETSIZE64, &sz))
			return wc_err_sys(-errno, "%s: BLKGETSIZE64", c->cache_path);
		b->dev_bytes = sz;
	} else {
		uint64_t size = (uint64_t)st.st_size;
		int ret;

		if (create && create_size > size)
			size = create_size;
		/* Also on open: a cache made on a preallocated file by an older
		 * version, or a file copied sparse, is filled once. */
		if ((ret = fill_file(c, (uint64_t)st.st_size, size)))
			return ret;
		b->dev_bytes = size;
	}
	fl = fcntl(b->fd, F_GETFL);
	snprintf(b->mode, sizeof(b->mode), "%s, %s, logical block %u B, records written with %s",
	         b->is_bdev ? "block device" : "file", (fl & O_DIRECT) ? "O_DIRECT" : "buffered (O_DIRECT refused)",
	         b->lba, "one pwrite each (RWF_DSYNC when FUA)");
	return 0;
}

void wc_blk_device_close(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	if (b && b->fd >= 0)
		close(b->fd);
	if (b)
		b->fd = -1;
}

void *wc_blk_alloc_buf(struct wc_cache *c, size_t len)
{
	void *p = NULL;

	(void)c;
	if (posix_memalign(&p, 4096, len ? len : 4096))
		return NULL;
	return p;
}

int wc_blk_pread(struct wc_cache *c, void *buf, size_t len, uint64_t off, const char *what)
{
	struct wc_blk *b = c->blk;
	size_t done = 0;

	if (b->io) {
		int ret = b->io->pread(b->io->ctx, buf, len, off);

		return ret ? wc_err(ret, "%s: %s: read of %zu bytes at %llu failed", c->cache_path, what,
		                    len, (unsigned long long)off) : 0;
	}
	while (done < len) {
		ssize_t n = pread(b->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return wc_err_sys(-errno, "%s: %s: read of %zu bytes at %llu", c->cache_path, what,
			                  len, (unsigned long long)off);
		if (n == 0)
			return wc_err(-EIO, "%s: %s: read at %llu is past the end of the device",
			              c->cache_path, what, (unsigned long long)(off + done));
		done += (size_t)n;
	}
	atomic_fetch_add_explicit(&b->st.device_reads, 1, memory_order_relaxed);
	return 0;
}

int wc_blk_pread_start(struct wc_cache *c, io_context_t ctx, struct wc_blk_rd_batch *rb, const char *what)
{
	struct wc_blk *b = c->blk;
	struct iocb *p[WC_BLK_RD_MAX];

	rb->out = 0;
	rb->err = 0;
	if (!ctx || b->io) {
		for (unsigned i = 0; i < rb->n && !rb->err; i++)
			rb->err = wc_blk_pread(c, rb->rd[i].buf, rb->rd[i].len, rb->rd[i].off, what);
		return rb->err;
	}
	for (unsigned i = 0; i < rb->n; i++) {
		io_prep_pread(&rb->cb[i], b->fd, rb->rd[i].buf, rb->rd[i].len, (long long)rb->rd[i].off);
		rb->cb[i].data = &rb->rd[i];
		if (b->host_efd >= 0)
			io_set_eventfd(&rb->cb[i], b->host_efd);
		p[i] = &rb->cb[i];
	}
	while (rb->out < rb->n) {
		int r = io_submit(ctx, (long)(rb->n - rb->out), p + rb->out);

		if (r > 0) {
			rb->out += (unsigned)r;
		} else if (r != -EAGAIN && r != -EINTR) {
			rb->err = wc_err_sys(r, "%s: %s: submitting %u reads", c->cache_path, what, rb->n - rb->out);
			break;
		}
	}
	atomic_fetch_add_explicit(&b->st.device_reads, rb->out, memory_order_relaxed);
	return rb->err;
}

bool wc_blk_pread_reaped(struct wc_cache *c, io_context_t ctx, struct wc_blk_rd_batch *rb, bool wait,
                         const char *what)
{
	struct io_event ev[WC_BLK_RD_MAX];
	struct timespec zero = { 0, 0 };

	while (rb->out) {
		int r = io_getevents(ctx, wait ? 1 : 0, (long)rb->out, ev, wait ? NULL : &zero);

		if (r == -EINTR)
			continue;
		if (r < 0) {
			/* The context failed and the reads may still land in
			 * the buffer: nothing in it can be trusted (sticky). */
			rb->err = wc_err_sys(r, "%s: %s: waiting for reads", c->cache_path, what);
			wc_set_error(c, -EIO, wc_errmsg());
			rb->out = 0;
			return true;
		}
		if (r == 0 && !wait)
			return false;
		for (int i = 0; i < r; i++) {
			const struct wc_blk_rd *d = ev[i].data;
			long res = (long)ev[i].res;

			if (rb->err)
				continue;
			if (res < 0)
				rb->err = wc_err_sys((int)res, "%s: %s: read of %zu bytes at %llu", c->cache_path,
				                     what, d->len, (unsigned long long)d->off);
			else if ((size_t)res != d->len) /* short: the rest here */
				rb->err = wc_blk_pread(c, (char *)d->buf + res, d->len - (size_t)res,
				                       d->off + (uint64_t)res, what);
		}
		rb->out -= (unsigned)r;
	}
	return true;
}

int wc_blk_pwrite(struct wc_cache *c, const void *buf, size_t len, uint64_t off, bool dsync,
                  const char *what)
{
	struct wc_blk *b = c->blk;
	size_t done = 0;

	if (b->io) {
		int ret = b->io->pwrite(b->io->ctx, buf, len, off, dsync);

		if (ret)
			return wc_err(ret, "%s: %s: write of %zu bytes at %llu failed", c->cache_path, what,
			              len, (unsigned long long)off);
		if (dsync)
			atomic_fetch_add_explicit(&b->st.dsync_writes, 1, memory_order_relaxed);
		return 0;
	}
	while (done < len) {
		struct iovec iov = { (char *)buf + done, len - done };
		/* RWF_DSYNC: the write and what makes it durable in one call
		 * (a FUA write where the device has FUA, else write + flush). */
		ssize_t n = pwritev2(b->fd, &iov, 1, (off_t)(off + done), dsync ? RWF_DSYNC : 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return wc_err_sys(-errno, "%s: %s: write of %zu bytes at %llu", c->cache_path, what,
			                  len, (unsigned long long)off);
		if (n == 0)
			return wc_err(-EIO, "%s: %s: write at %llu wrote nothing", c->cache_path, what,
			              (unsigned long long)(off + done));
		done += (size_t)n;
	}
	if (dsync)
		atomic_fetch_add_explicit(&b->st.dsync_writes, 1, memory_order_relaxed);
	return 0;
}

int wc_blk_fdatasync(struct wc_cache *c, const char *what)
{
	struct wc_blk *b = c->blk;

	if (b->io) {
		int ret = b->io->flush(b->io->ctx);

		if (ret)
			return wc_err(ret, "%s: %s: flush of the device failed", c->cache_path, what);
		atomic_fetch_add_explicit(&b->st.device_flushes, 1, memory_order_relaxed);
		return 0;
	}
	if (fdatasync(b->fd))
		return wc_err_sys(-errno, "%s: %s: flush of the device", c->cache_path, what);
	atomic_fetch_add_explicit(&b->st.device_flushes, 1, memory_order_relaxed);
	return 0;
}

/* Write the ring's state into the slot not in force (log.state_lock held by
 * the caller, or alone at open/close).  A tail moved to new_tail (reclaim)
 * takes effect only once the state saying so is durable: until then its
 * segment may not be written again, since recovery would still scan it. */
static int state_write_locked(struct wc_cache *c, uint64_t open_limit, uint64_t new_tail)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_state *st = wc_blk_alloc_buf(c, WC_BLK_UNIT);
	unsigned to = b->log.state_slot ^ 1u;
	uint64_t st_open_limit;
	int ret;

	if (!st)
		return wc_err(-ENOMEM, "%s: state buffer", c->cache_path);
	memset(st, 0, WC_BLK_UNIT);
	st->magic = WC_BLK_STATE_MAGIC;
	st->generation = b->log.state_gen + 1;
	pthread_mutex_lock(&b->log.lock);
	st->tail_seg = new_tail > b->log.tail ? new_tail : b->log.tail;
	st->clean_seg = b->log.clean;
	st->open_limit = open_limit > b->log.open_limit ? open_limit : b->log.open_limit;
	pthread_mutex_unlock(&b->log.lock);
	st->time = (uint64_t)time(NULL);
	st->crc = wc_blk_state_crc(st);
	st_open_limit = st->open_limit;
	ret = wc_blk_pwrite(c, st, WC_BLK_UNIT, WC_BLK_STATE_OFFSET + (uint64_t)to * WC_BLK_UNIT, true,
	                    "state");
	free(st);
	if (ret)
		return ret;
	b->log.state_gen++;
	b->log.state_slot = to;
	/* Durable now: writers may open segments up to it, and the segments
	 * below the new tail are free for the head. */
	pthread_mutex_lock(&b->log.lock);
	if (st_open_limit > b->log.open_limit)
		b->log.open_limit = st_open_limit;
	if (new_tail > b->log.tail) {
		for (uint64_t s = b->log.tail; s < new_tail; s++)
			b->log.segs[s % b->g.n_segments].seg = 0;
		b->log.tail = new_tail;
		pthread_cond_broadcast(&b->log.space);
	}
	pthread_mutex_unlock(&b->log.lock);
	return 0;
}

int wc_blk_state_write(struct wc_cache *c, uint64_t open_limit, uint64_t new_tail)
{
	struct wc_blk *b = c->blk;
	int ret;

	pthread_mutex_lock(&b->log.state_lock);
	ret = state_write_locked(c, open_limit, new_tail);
	pthread_mutex_unlock(&b->log.state_lock);
	return ret;
}

int wc_blk_id_write(struct wc_cache *c, unsigned slot, const struct wc_pmem_origin_id *id)
{
	struct wc_blk *b = c->blk;
	void *u = wc_blk_alloc_buf(c, WC_BLK_UNIT);
	int ret;

	if (!u)
		return wc_err(-ENOMEM, "%s: identity buffer", c->cache_path);
	memset(u, 0, WC_BLK_UNIT);
	memcpy(u, id, sizeof(*id));
	ret = wc_blk_pwrite(c, u, WC_BLK_UNIT, WC_BLK_ID_OFFSET + (uint64_t)slot * WC_BLK_UNIT, true,
	                    "origin identity");
	free(u);
	if (!ret)
		b->id_slots[slot] = *id;
	return ret;
}

static const struct wc_pmem_origin_id *blk_id_slots(struct wc_cache *c)
{
	return c->blk->id_slots;
}

static uint64_t blk_format_origin_size(struct wc_cache *c)
{
	return c->blk->sb.origin_size;
}

const struct wc_medium_ops wc_blk_medium_ops = {
	.name = "block",
	.id_offset = WC_BLK_ID_OFFSET,
	.id_stride = WC_BLK_UNIT,
	.id_slots = blk_id_slots,
	.format_origin_size = blk_format_origin_size,
	.write_id_slot = wc_blk_id_write,
	.dirty_in_image = wc_blk_dirty_in_image,
};

bool wc_blk_is_block_image(const char *path)
{
	uint64_t magic = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes;

	if (fd < 0)
		return false;
	/* A format that did not complete too: the block medium names it. */
	yes = pread(fd, &magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	      (magic == WC_BLK_MAGIC || magic == WC_BLK_MAGIC_FORMATTING);
	close(fd);
	return yes;
}
