/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aio.c -- the default origin backend: libaio on a regular file or a
 * block device.
 *
 * Mode: O_DIRECT where the file system takes it (the cache's blocks then go
 * from its buffers to the device without a page-cache copy); where open()
 * refuses O_DIRECT with EINVAL, buffered I/O (libaio then completes inside
 * io_submit) and flush() = fdatasync.  describe() names the mode.  In both
 * modes a flush request (WC_ORIGIN_FLUSH) is an IOCB_CMD_FDSYNC, which the
 * kernel runs beside the writes still in flight.
 *
 * Requests and slots: each submitted request owns one of `queue_depth` iocb
 * slots, so at most queue_depth requests are in the kernel and io_submit
 * never overruns the ring sized by io_setup.  When every slot is taken,
 * submit() reaps completions itself -- but it never calls done(): the cache
 * may hold locks around submit() that its callbacks take.  Reaped requests
 * wait on the `stash` list (linked through io->backend[]) and the next
 * poll() runs their callbacks.
 *
 * Locking: `lock` guards the free slots and the stash and is never held
 * across a system call or a callback.  io_getevents() runs unlocked: the
 * kernel hands each event to exactly one caller (the ring is consumed under
 * its own lock), so concurrent pollers are safe, and a poll() with timeout 0
 * is never stuck behind another thread's long wait.
 */
#include <fcntl.h>
#include <libaio.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "util/lock.h"
#include "origin/origin.h"
#include "util/clock.h"

#define AIO_DEFAULT_QUEUE_DEPTH 256u
/* The default /proc/sys/fs/aio-max-nr: one context may not exceed it. */
#define AIO_MAX_QUEUE_DEPTH 65536u
/* Events taken per io_getevents() call. */
#define AIO_REAP_BATCH 64
/* submit() with every slot taken waits for a completion in slices this
 * long, re-checking the slots in between: another thread may have reaped
 * the completions we wait for. */
#define AIO_SUBMIT_WAIT_SLICE_NS 1000000ull /* 1 ms */
/* io_submit() -EAGAIN (kernel out of aio resources) is retried this often,
 * one slice apart, before it is reported. */
#define AIO_SUBMIT_EAGAIN_RETRIES 1000
/* Alignment when the file system does not report STATX_DIOALIGN: 4096
 * suits both 512-byte and 4Kn devices.  tmpfs enforces none at all, so
 * there 512 (the smallest cache block) keeps every block size usable. */
#define AIO_FALLBACK_ALIGN 4096u
#define AIO_TMPFS_ALIGN 512u

struct aio_slot {
	struct iocb cb;
	/* Release-stored before io_submit, acquire-loaded after the event is
	 * reaped: the kernel orders the two, but only these atomics tell the
	 * C memory model (and ThreadSanitizer) that the request's fields,
	 * written by the submitter, are visible to the reaping thread. */
	_Atomic(struct wc_origin_io *) io;
};

struct aio_origin {
	int fd;
	io_context_t ctx;
	bool direct;
	bool blockdev;
	uint32_t align;
	uint64_t size;
	unsigned queue_depth;

	pthread_mutex_t lock;        /* guards free_slots, nfree, stash */
	struct aio_slot *slots;
	unsigned *free_slots;        /* stack of free slot indices */
	unsigned nfree;
	struct wc_origin_io *stash_head, *stash_tail; /* reaped by submit() */

	const char *path;            /* inside desc */
	char desc[];                 /* "<mode> <path>" */
};

/* io->backend[] while a request sits on the stash. */
#define STASH_NEXT 0
#define STASH_RES  1

static struct timespec ns_to_timespec(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
	                          .tv_nsec = (long)(ns % 1000000000ull) };
}

/* ---------------------------------------------------------------- slots */

static struct aio_slot *slot_get(struct aio_origin *a)
{
	struct aio_slot *slot = NULL;

	pthread_mutex_lock(&a->lock);
	if (a->nfree)
		slot = &a->slots[a->free_slots[--a->nfree]];
	pthread_mutex_unlock(&a->lock);
	return slot;
}

static void slot_put_locked(struct aio_origin *a, struct aio_slot *slot)
{
	a->free_slots[a->nfree++] = (unsigned)(slot - a->slots);
}

static void slot_put(struct aio_origin *a, struct aio_slot *slot)
{
	pthread_mutex_lock(&a->lock);
	slot_put_locked(a, slot);
	pthread_mutex_unlock(&a->lock);
}

/* ----------------------------------------------------------- completion */

struct reaped {
	struct wc_origin_io *io;
	ssize_t res;
};

/* Free the slots of `n` kernel events and describe them in `out`. */
static void events_release(struct aio_origin *a, const struct io_event *ev, int n,
                           struct reaped *out)
{
	pthread_mutex_lock(&a->lock);
	for (int i = 0; i < n; i++) {
		struct aio_slot *slot = ev[i].data;

		out[i].io = atomic_load_explicit(&slot->io, memory_order_acquire);
		out[i].res = (ssize_t)(long)ev[i].res;
		slot_put_locked(a, slot);
	}
	pthread_mutex_unlock(&a->lock);
}

/* Wait up to timeout_ns for at least one completion and park what arrives
 * on the stash (no callbacks: see the head comment).  Returns events
 * parked, 0 on timeout, or -errno from io_getevents. */
static int reap_to_stash(struct aio_origin *a, uint64_t timeout_ns)
{
	struct io_event ev[AIO_REAP_BATCH];
	struct reaped got[AIO_REAP_BATCH];
	struct timespec ts = ns_to_timespec(timeout_ns);
	int n = io_getevents(a->ctx, 1, AIO_REAP_BATCH, ev, &ts);

	if (n <= 0)
		return n == -EINTR ? 0 : n;
	events_release(a, ev, n, got);
	pthread_mutex_lock(&a->lock);
	for (int i = 0; i < n; i++) {
		got[i].io->backend[STASH_NEXT] = 0;
		got[i].io->backend[STASH_RES] = (uint64_t)(int64_t)got[i].res;
		if (a->stash_tail)
			a->stash_tail->backend[STASH_NEXT] = (uint64_t)(uintptr_t)got[i].io;
		else
			a->stash_head = got[i].io;
		a->stash_tail = got[i].io;
	}
	pthread_mutex_unlock(&a->lock);
	return n;
}

/* Run the callbacks of every stashed completion; returns how many. */
static int stash_deliver(struct aio_origin *a)
{
	struct wc_origin_io *io, *next;
	int n = 0;

	pthread_mutex_lock(&a->lock);
	io = a->stash_head;
	a->stash_head = a->stash_tail = NULL;
	pthread_mutex_unlock(&a->lock);
	for (; io; io = next, n++) {
		next = (struct wc_origin_io *)(uintptr_t)io->backend[STASH_NEXT];
		/* done() may free or reuse io: read everything first. */
		io->done(io, (ssize_t)(int64_t)io->backend[STASH_RES]);
	}
	return n;
}

static int aio_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	struct aio_origin *a = ctx;
	uint64_t start = wc_clock_ns();
	/* Saturate: "wait forever" is a huge timeout, not an overflow. */
	uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
	unsigned total = 0;

	for (;;) {
		struct io_event ev[AIO_REAP_BATCH];
		struct reaped got[AIO_REAP_BATCH];
		unsigned want;
		uint64_t now;
		struct timespec ts = { 0, 0 };
		int n;

		total += (unsigned)stash_deliver(a);
		want = total < min_events ? min_events - total : 0;
		now = wc_clock_ns();
		if (want && deadline > now)
			ts = ns_to_timespec(deadline - now);
		else
			want = 0;
		n = io_getevents(a->ctx, want < AIO_REAP_BATCH ? want : AIO_REAP_BATCH,
		                 AIO_REAP_BATCH, ev, &ts);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			if (total)
				return (int)total;
			return wc_err_sys(n, "origin %s: io_getevents", a->desc);
		}
		events_release(a, ev, n, got);
		for (int i = 0; i < n; i++)
			got[i].io->done(got[i].io, got[i].res);
		total += (unsigned)n;
		/* A full batch: more may be waiting.  Capped at a queue's
		 * worth, so callbacks that resubmit cannot keep one poll()
		 * (a non-blocking one included) from returning. */
		if (n == AIO_REAP_BATCH && total < a->queue_depth)
			continue;
		if (total >= min_events || wc_clock_ns() >= deadline) {
			/* submit() may have stashed completions meanwhile. */
			total += (unsigned)stash_deliver(a);
			return total > INT_MAX ? INT_MAX : (int)total;
		}
	}
}

/* ------------------------------------------------------------- requests */

static int check_request(struct aio_origin *a, const struct wc_origin_io *io)
{
	uint64_t len = 0;

	if (io->op != WC_ORIGIN_READ && io->op != WC_ORIGIN_WRITE && io->op != WC_ORIGIN_FLUSH)
		return wc_err(-EINVAL, "origin %s: unknown op %d", a->desc, (int)io->op);
	if (!io->done)
		return wc_err(-EINVAL, "origin %s: %s at offset %llu: no done() callback", a->desc,
		              wc_origin_op_name(io->op), (unsigned long long)io->offset);
	if (io->op == WC_ORIGIN_FLUSH)
		return 0;
	if (io->iovcnt <= 0 || io->iovcnt > IOV_MAX || !io->iov)
		return wc_err(-EINVAL, "origin %s: %s at offset %llu: iovcnt %d outside 1..%d",
		              a->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset, io->iovcnt,
		              IOV_MAX);
	for (int i = 0; i < io->iovcnt; i++) {
		const struct iovec *v = &io->iov[i];

		if ((((uintptr_t)v->iov_base | v->iov_len) & (a->align - 1)) != 0)
			return wc_err(-EINVAL,
			              "origin %s: %s at offset %llu: buffer %d (%p, %zu bytes) not aligned to %u bytes",
			              a->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset, i,
			              v->iov_base, v->iov_len, a->align);
		len += v->iov_len;
	}
	if (io->offset & (a->align - 1))
		return wc_err(-EINVAL, "origin %s: %s at offset %llu: offset not aligned to %u bytes",
		              a->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset, a->align);
	if (io->offset > a->size || len > a->size - io->offset)
		return wc_err(-EINVAL, "origin %s: %s of %llu bytes at offset %llu: beyond the end (%llu bytes)",
		              a->desc, wc_origin_op_name(io->op), (unsigned long long)len,
		              (unsigned long long)io->offset, (unsigned long long)a->size);
	return 0;
}

/* "write at offset 4096", or "flush": a flush has no offset. */
static const char *op_where(char *buf, size_t len, const struct wc_origin_io *io)
{
	if (io->op == WC_ORIGIN_FLUSH)
		snprintf(buf, len, "flush");
	else
		snprintf(buf, len, "%s at offset %llu", wc_origin_op_name(io->op),
		         (unsigned long long)io->offset);
	return buf;
}

static int aio_submit(void *ctx, struct wc_origin_io *io)
{
	struct aio_origin *a = ctx;
	struct aio_slot *slot;
	struct iocb *cbs[1];
	char where[48];
	int ret, eagain = 0;

	ret = check_request(a, io);
	if (ret < 0)
		return ret;
	while (!(slot = slot_get(a))) {
		ret = reap_to_stash(a, AIO_SUBMIT_WAIT_SLICE_NS);
		if (ret < 0)
			return wc_err_sys(ret, "origin %s: %s: io_getevents while waiting for a free slot",
			                  a->desc, op_where(where, sizeof(where), io));
	}
	if (io->op == WC_ORIGIN_WRITE)
		io_prep_pwritev(&slot->cb, a->fd, io->iov, io->iovcnt, (long long)io->offset);
	else if (io->op == WC_ORIGIN_FLUSH)
		/* The kernel runs an fdatasync for it (Linux 4.18 on; older
		 * kernels refuse it with EINVAL and the caller falls back to
		 * flush()). */
		io_prep_fdsync(&slot->cb, a->fd);
	else
		io_prep_preadv(&slot->cb, a->fd, io->iov, io->iovcnt, (long long)io->offset);
	slot->cb.data = slot;
	atomic_store_explicit(&slot->io, io, memory_order_release);
	cbs[0] = &slot->cb;
	for (;;) {
		ret = io_submit(a->ctx, 1, cbs);
		if (ret == 1)
			return 0;
		if (ret == -EINTR)
			continue;
		if (ret == -EAGAIN && ++eagain <= AIO_SUBMIT_EAGAIN_RETRIES) {
			/* The kernel is short of aio resources: completions
			 * free them. */
			int r = reap_to_stash(a, AIO_SUBMIT_WAIT_SLICE_NS);

			if (r >= 0)
				continue;
			ret = r;
		}
		break;
	}
	slot_put(a, slot);
	if (ret >= 0)
		ret = -EIO; /* io_submit took none of one request */
	return wc_err_sys(ret, "origin %s: io_submit %s", a->desc, op_where(where, sizeof(where), io));
}

/* ------------------------------------------------------------ other ops */

static int aio_size(void *ctx, uint64_t *bytes)
{
	struct aio_origin *a = ctx;

	*bytes = a->size;
	return 0;
}

/* fdatasync in both modes: O_DIRECT bypasses the page cache, not a volatile
 * device write cache, and fdatasync is what sends the cache flush. */
static int aio_flush(void *ctx)
{
	struct aio_origin *a = ctx;

	if (fdatasync(a->fd) < 0)
		return wc_err_sys(-errno, "origin %s: fdatasync", a->desc);
	return 0;
}

static int aio_discard(void *ctx, uint64_t offset, uint64_t len)
{
	struct aio_origin *a = ctx;

	if (len == 0)
		return 0;
	if (offset > a->size || len > a->size - offset)
		return wc_err(-EINVAL, "origin %s: discard of %llu bytes at offset %llu: beyond the end (%llu bytes)",
		              a->desc, (unsigned long long)len, (unsigned long long)offset,
		              (unsigned long long)a->size);
	if (a->blockdev) {
		uint64_t range[2] = { offset, len };

		if (((offset | len) & (a->align - 1)) != 0)
			return wc_err(-EINVAL, "origin %s: discard of %llu bytes at offset %llu: not aligned to %u bytes",
			              a->desc, (unsigned long long)len, (unsigned long long)offset, a->align);
		if (ioctl(a->fd, BLKDISCARD, range) < 0)
			return wc_err_sys(-errno, "origin %s: BLKDISCARD %llu bytes at offset %llu", a->desc,
			                  (unsigned long long)len, (unsigned long long)offset);
		return 0;
	}
	if (fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)len) < 0)
		return wc_err_sys(-errno, "origin %s: punch hole of %llu bytes at offset %llu", a->desc,
		                  (unsigned long long)len, (unsigned long long)offset);
	return 0;
}

static void aio_free(struct aio_origin *a)
{
	pthread_mutex_destroy(&a->lock);
	free(a->slots);
	free(a->free_slots);
	free(a);
}

static void aio_close(void *ctx)
{
	struct aio_origin *a = ctx;

	/* io_destroy waits for anything still in flight (the contract says
	 * nothing is), so no completion can land in freed memory. */
	io_destroy(a->ctx);
	close(a->fd);
	aio_free(a);
}

static uint32_t aio_alignment(void *ctx)
{
	return ((struct aio_origin *)ctx)->align;
}

static const char *aio_describe(void *ctx)
{
	return ((struct aio_origin *)ctx)->desc;
}

static int aio_identify(void *ctx, struct wc_origin_identity *out, unsigned flags)
{
	struct aio_origin *a = ctx;

	return wc_origin_identify_fd(a->fd, a->path, out, flags & WC_ORIGIN_IDENTIFY_MAY_TAG);
}

/* Not static: origin.c reads what follows the 0.4 ops only of tables it
 * knows to have it, and this is one. */
const struct wc_origin_ops wc_origin_aio_ops = {
	WC_ORIGIN_OPS_INIT,
	.caps = WC_ORIGIN_CAP_ASYNC_FLUSH | WC_ORIGIN_CAP_IDENTIFY,
	.identify = aio_identify,
	.size = aio_size,
	.submit = aio_submit,
	.poll = aio_poll,
	.flush = aio_flush,
	.discard = aio_discard,
	.close = aio_close,
	.alignment = aio_alignment,
	.describe = aio_describe,
};

/* ----------------------------------------------------------------- open */

/* O_DIRECT alignment of a regular file: what the file system reports
 * (STATX_DIOALIGN, Linux 6.1+), else a safe default. */
static uint32_t file_dio_alignment(int fd)
{
	struct statx stx;
	struct statfs sfs;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
		uint32_t align = stx.stx_dio_offset_align;

		return stx.stx_dio_mem_align > align ? stx.stx_dio_mem_align : align;
	}
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC)
		return AIO_TMPFS_ALIGN;
	return AIO_FALLBACK_ALIGN;
}

/* Size and alignment of the open origin; -errno + message on failure. */
static int probe_geometry(struct aio_origin *a, const char *path)
{
	struct stat st;

	if (fstat(a->fd, &st) < 0)
		return wc_err_sys(-errno, "origin %s: fstat", path);
	if (S_ISBLK(st.st_mode)) {
		int lbs = 0;

		a->blockdev = true;
		if (ioctl(a->fd, BLKGETSIZE64, &a->size) < 0)
			return wc_err_sys(-errno, "origin %s: BLKGETSIZE64", path);
		if (ioctl(a->fd, BLKSSZGET, &lbs) < 0)
			return wc_err_sys(-errno, "origin %s: BLKSSZGET", path);
		if (lbs <= 0 || (lbs & (lbs - 1)) != 0)
			return wc_err(-EINVAL, "origin %s: logical block size %d is not a power of two",
			              path, lbs);
		a->align = a->direct ? (uint32_t)lbs : 1;
	} else if (S_ISREG(st.st_mode)) {
		a->size = (uint64_t)st.st_size;
		a->align = a->direct ? file_dio_alignment(a->fd) : 1;
	} else {
		return wc_err(-EINVAL, "origin %s: not a regular file or block device", path);
	}
	if (a->size == 0)
		return wc_err(-EINVAL, "origin %s: size is 0 bytes (extend the file first)", path);
	return 0;
}

static int open_error(const char *path)
{
	if (errno == EBUSY)
		return wc_err(-EBUSY, "origin %s: open: device in use (mounted or opened exclusively)",
		              path);
	return wc_err_sys(-errno, "origin %s: open", path);
}

static int open_fd(const char *path, bool force_buffered, bool *direct)
{
	struct stat st;
	int fd = -1, flags = O_RDWR | O_CLOEXEC;

	*direct = false;
	/* O_EXCL on a block device fails with EBUSY while it is mounted or
	 * held by another exclusive user: write-back onto a mounted file
	 * system would destroy it. */
	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		flags |= O_EXCL;
	if (!force_buffered) {
		fd = open(path, flags | O_DIRECT);
		if (fd >= 0) {
			*direct = true;
			return fd;
		}
		/* EINVAL: this file system refuses O_DIRECT; anything else
		 * (ENOENT, EISDIR, EACCES ...) fails without O_DIRECT too. */
		if (errno != EINVAL)
			return open_error(path);
	}
	fd = open(path, flags);
	if (fd < 0)
		return open_error(path);
	return fd;
}

int wc_origin_open_aio_opts(struct wc_origin *out, const char *path,
                            const struct wc_origin_aio_opts *opts)
{
	static const struct wc_origin_aio_opts defaults = { 0 };
	struct aio_origin *a;
	size_t desc_len;
	bool direct;
	unsigned qd;
	int fd, ret;

	if (!out || !path)
		return wc_err(-EINVAL, "origin: open: %s is NULL", out ? "path" : "out");
	if (!opts)
		opts = &defaults;
	qd = opts->queue_depth ? opts->queue_depth : AIO_DEFAULT_QUEUE_DEPTH;
	if (qd > AIO_MAX_QUEUE_DEPTH)
		return wc_err(-EINVAL, "origin %s: queue depth %u exceeds %u", path, qd,
		              AIO_MAX_QUEUE_DEPTH);
	fd = open_fd(path, opts->force_buffered, &direct);
	if (fd < 0)
		return fd;
	/* O_EXCL guards a block device; a regular file needs a lock: two
	 * caches writing back over one origin file overwrite each other's
	 * blocks.  Block devices take it too, which names the holder. */
	ret = wc_lock_take(fd, "origin", path);
	if (ret) {
		close(fd);
		return ret;
	}

	desc_len = strlen(WC_ORIGIN_AIO_MODE_BUFFERED) + 1 + strlen(path) + 1;
	a = calloc(1, sizeof(*a) + desc_len);
	if (!a) {
		close(fd);
		return wc_err(-ENOMEM, "origin %s: out of memory", path);
	}
	a->fd = fd;
	a->direct = direct;
	a->queue_depth = qd;
	snprintf(a->desc, desc_len, "%s %s",
	         direct ? WC_ORIGIN_AIO_MODE_DIRECT : WC_ORIGIN_AIO_MODE_BUFFERED, path);
	a->path = a->desc + strlen(a->desc) - strlen(path);
	pthread_mutex_init(&a->lock, NULL);
	ret = probe_geometry(a, path);
	if (ret < 0)
		goto fail;

	a->slots = calloc(qd, sizeof(*a->slots));
	a->free_slots = calloc(qd, sizeof(*a->free_slots));
	if (!a->slots || !a->free_slots) {
		ret = wc_err(-ENOMEM, "origin %s: out of memory for %u request slots", path, qd);
		goto fail;
	}
	for (unsigned i = 0; i < qd; i++)
		a->free_slots[i] = qd - 1 - i;
	a->nfree = qd;

	ret = io_setup((int)qd, &a->ctx);
	if (ret < 0) {
		if (ret == -EAGAIN)
			ret = wc_err(ret, "origin %s: io_setup(%u): the system's aio limit (/proc/sys/fs/aio-max-nr) is used up",
			             path, qd);
		else
			ret = wc_err_sys(ret, "origin %s: io_setup(%u)", path, qd);
		goto fail;
	}
	out->ops = &wc_origin_aio_ops;
	out->ctx = a;
	return 0;
fail:
	close(fd);
	aio_free(a);
	return ret;
}

int wc_origin_open_aio(struct wc_origin *out, const char *path, unsigned queue_depth)
{
	struct wc_origin_aio_opts opts = { .queue_depth = queue_depth };

	return wc_origin_open_aio_opts(out, path, &opts);
}
