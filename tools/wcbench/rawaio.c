/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawaio.c -- raw libaio write bandwidth of a file or device (see rawaio.h).
 *
 * Deliberately independent of lib/origin/aio.c: a baseline that shared the
 * backend's code would share its mistakes.  The loop keeps `qd` requests in
 * flight, refilling every slot as soon as its completion is reaped, and
 * submits refills in one io_submit per reap (as fio's libaio engine does
 * with iodepth_batch_complete).
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rawaio.h"
#include "wcadmin.h"

#define RAWAIO_FILL 0x5a
/* Fixed seed: every run (and the cache's run it is compared with) writes
 * the same permutation. */
#define RAWAIO_SEED 0x2545f4914f6cdd1dull
/* Minimum O_DIRECT alignment assumed when the file system does not say;
 * a stricter device makes the kernel fail the first write with EINVAL. */
#define RAWAIO_MIN_ALIGN 512u
#define RAWAIO_BUF_ALIGN 4096u

struct rawaio {
	const char *path;
	int fd;
	bool direct;
	uint64_t dev_size;
	uint32_t align;
	io_context_t ctx;
	bool ctx_live;
	unsigned qd;
	size_t io_size;
	uint8_t *bufs;            /* qd buffers of io_size */
	struct iocb *cbs;         /* one per buffer */
	struct iocb **batch;      /* refills gathered for one io_submit */
	uint64_t *order;          /* random: slot permutation; NULL = sequential */
	uint64_t nios;
	uint64_t flush_every;     /* bytes between fdatasync requests; 0 = none */
	struct iocb fsync_cb;     /* the one fdatasync request, tagged qd */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int rawaio_open(struct rawaio *r)
{
	struct stat st;

	r->fd = open(r->path, O_RDWR | O_CLOEXEC | O_DIRECT);
	r->direct = r->fd >= 0;
	if (r->fd < 0 && errno == EINVAL) /* the file system refuses O_DIRECT */
		r->fd = open(r->path, O_RDWR | O_CLOEXEC);
	if (r->fd < 0)
		return wcadm_err_sys(-errno, "rawaio %s: open", r->path);
	if (fstat(r->fd, &st) < 0)
		return wcadm_err_sys(-errno, "rawaio %s: fstat", r->path);
	r->align = RAWAIO_MIN_ALIGN;
	if (S_ISBLK(st.st_mode)) {
		int lbs = 0;

		if (ioctl(r->fd, BLKGETSIZE64, &r->dev_size) < 0)
			return wcadm_err_sys(-errno, "rawaio %s: BLKGETSIZE64", r->path);
		if (ioctl(r->fd, BLKSSZGET, &lbs) == 0 && lbs > 0)
			r->align = (uint32_t)lbs;
	} else if (S_ISREG(st.st_mode)) {
		struct statx stx;

		r->dev_size = (uint64_t)st.st_size;
		if (statx(r->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
		    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align > r->align)
			r->align = stx.stx_dio_offset_align;
	} else {
		return wcadm_err(-EINVAL, "rawaio %s: not a regular file or block device", r->path);
	}
	if (!r->direct)
		r->align = 1;
	return 0;
}

static int rawaio_check(const struct rawaio *r, uint64_t bytes)
{
	if (r->io_size == 0 || r->qd == 0 || bytes == 0)
		return wcadm_err(-EINVAL, "rawaio %s: bytes (%llu), io_size (%zu) and qd (%u) must be > 0",
		                 r->path, (unsigned long long)bytes, r->io_size, r->qd);
	if (bytes % r->io_size)
		return wcadm_err(-EINVAL, "rawaio %s: %llu bytes is not a multiple of io_size %zu",
		                 r->path, (unsigned long long)bytes, r->io_size);
	if (r->io_size % r->align)
		return wcadm_err(-EINVAL, "rawaio %s: io_size %zu is not a multiple of the O_DIRECT alignment %u",
		                 r->path, r->io_size, r->align);
	if (bytes > r->dev_size)
		return wcadm_err(-EINVAL, "rawaio %s: %llu bytes requested but it holds %llu (create it first)",
		                 r->path, (unsigned long long)bytes, (unsigned long long)r->dev_size);
	return 0;
}

uint64_t wc_rawaio_xorshift64(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

uint64_t *wc_rawaio_permutation(uint64_t n, uint64_t seed)
{
	uint64_t *order = malloc((n ? n : 1) * sizeof(*order));

	if (!order)
		return NULL;
	for (uint64_t i = 0; i < n; i++)
		order[i] = i;
	for (uint64_t i = n - 1; n > 1 && i > 0; i--) { /* Fisher-Yates */
		uint64_t j = wc_rawaio_xorshift64(&seed) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	return order;
}

static int rawaio_setup(struct rawaio *r, bool sequential)
{
	size_t buf_bytes;
	int ret;

	if (r->qd > r->nios)
		r->qd = (unsigned)r->nios; /* more slots than requests is waste */
	buf_bytes = (size_t)r->qd * r->io_size;
	if (posix_memalign((void **)&r->bufs, RAWAIO_BUF_ALIGN, buf_bytes) != 0)
		return wcadm_err(-ENOMEM, "rawaio %s: out of memory for %u x %zu-byte buffers", r->path,
		                 r->qd, r->io_size);
	memset(r->bufs, RAWAIO_FILL, buf_bytes);
	r->cbs = calloc(r->qd, sizeof(*r->cbs));
	r->batch = calloc(r->qd, sizeof(*r->batch));
	if (!r->cbs || !r->batch)
		return wcadm_err(-ENOMEM, "rawaio %s: out of memory", r->path);
	if (!sequential) {
		r->order = wc_rawaio_permutation(r->nios, RAWAIO_SEED);
		if (!r->order)
			return wcadm_err(-ENOMEM, "rawaio %s: out of memory for %llu offsets", r->path,
			                 (unsigned long long)r->nios);
	}
	ret = io_setup((int)r->qd + 1, &r->ctx); /* + the fdatasync request */
	if (ret < 0)
		return wcadm_err_sys(ret, "rawaio %s: io_setup(%u)", r->path, r->qd);
	r->ctx_live = true;
	return 0;
}

/* Point slot `s` at request number `i`. */
static struct iocb *rawaio_prep(struct rawaio *r, unsigned s, uint64_t i)
{
	uint8_t *buf = r->bufs + (size_t)s * r->io_size;
	uint64_t off = (r->order ? r->order[i] : i) * r->io_size;

	for (int b = 0; b < 8; b++) /* the offset, little-endian */
		buf[b] = (uint8_t)(off >> (8 * b));
	io_prep_pwrite(&r->cbs[s], r->fd, buf, r->io_size, (long long)off);
	r->cbs[s].data = (void *)(uintptr_t)s;
	return &r->cbs[s];
}

static int rawaio_submit(struct rawaio *r, unsigned n)
{
	unsigned done = 0;

	while (done < n) {
		int ret = io_submit(r->ctx, (long)(n - done), r->batch + done);

		if (ret == -EINTR || ret == -EAGAIN)
			continue;
		if (ret <= 0)
			return wcadm_err_sys(ret < 0 ? ret : -EIO, "rawaio %s: io_submit", r->path);
		done += (unsigned)ret;
	}
	return 0;
}

/* An fdatasync as an aio request, as write-back flushes each round of
 * writes while the next round's writes run. */
static int rawaio_submit_fsync(struct rawaio *r)
{
	struct iocb *cb = &r->fsync_cb;
	int ret;

	io_prep_fdsync(cb, r->fd);
	cb->data = (void *)(uintptr_t)r->qd;
	do
		ret = io_submit(r->ctx, 1, &cb);
	while (ret == -EINTR || ret == -EAGAIN);
	return ret == 1 ? 0 : wcadm_err_sys(ret < 0 ? ret : -EIO, "rawaio %s: io_submit fdatasync",
	                                    r->path);
}

static int rawaio_run(struct rawaio *r, double *seconds)
{
	struct io_event *ev = calloc(r->qd + 1, sizeof(*ev));
	uint64_t next = 0, completed = 0, flushed = 0;
	bool fsync_busy = false;
	unsigned n = 0;
	double t0;
	int ret = 0;

	if (!ev)
		return wcadm_err(-ENOMEM, "rawaio %s: out of memory", r->path);
	t0 = now_s();
	for (; n < r->qd && next < r->nios; n++, next++)
		r->batch[n] = rawaio_prep(r, n, next);
	ret = rawaio_submit(r, n);
	while (ret == 0 && (completed < r->nios || fsync_busy)) {
		int got = io_getevents(r->ctx, 1, r->qd + 1, ev, NULL);

		if (got == -EINTR)
			continue;
		if (got < 0) {
			ret = wcadm_err_sys(got, "rawaio %s: io_getevents", r->path);
			break;
		}
		n = 0;
		for (int e = 0; e < got; e++) {
			long res = (long)ev[e].res;
			unsigned s = (unsigned)(uintptr_t)ev[e].data;

			if (s == r->qd) {
				fsync_busy = false;
				if (res < 0) {
					ret = wcadm_err_sys((int)res, "rawaio %s: fdatasync request", r->path);
					break;
				}
				continue;
			}
			if (res != (long)r->io_size) {
				ret = res < 0 ? wcadm_err_sys((int)res, "rawaio %s: write at offset %lld",
				                              r->path, r->cbs[s].u.c.offset)
				              : wcadm_err(-EIO, "rawaio %s: short write (%ld of %zu bytes) at offset %lld",
				                          r->path, res, r->io_size, r->cbs[s].u.c.offset);
				break;
			}
			completed++;
			if (next < r->nios)
				r->batch[n++] = rawaio_prep(r, s, next++);
		}
		if (ret == 0 && n)
			ret = rawaio_submit(r, n);
		/* Writes completed before the request are what it covers. */
		if (ret == 0 && r->flush_every && !fsync_busy && completed < r->nios &&
		    (completed - flushed) * r->io_size >= r->flush_every) {
			flushed = completed;
			ret = rawaio_submit_fsync(r);
			fsync_busy = ret == 0;
		}
	}
	if (ret == 0 && fdatasync(r->fd) < 0)
		ret = wcadm_err_sys(-errno, "rawaio %s: fdatasync", r->path);
	*seconds = now_s() - t0;
	free(ev);
	return ret;
}

static void rawaio_release(struct rawaio *r)
{
	if (r->ctx_live)
		io_destroy(r->ctx); /* waits for requests still in flight after an error */
	if (r->fd >= 0)
		close(r->fd);
	free(r->bufs);
	free(r->cbs);
	free(r->batch);
	free(r->order);
}

int wc_rawaio_write_bw(const char *path, uint64_t bytes, size_t io_size, unsigned qd,
                       bool sequential, double *mbps_out)
{
	return wc_rawaio_write_bw_flushing(path, bytes, io_size, qd, sequential, 0, mbps_out);
}

int wc_rawaio_write_bw_flushing(const char *path, uint64_t bytes, size_t io_size, unsigned qd,
                                bool sequential, uint64_t flush_every, double *mbps_out)
{
	struct rawaio r = { .path = path, .fd = -1, .qd = qd, .io_size = io_size,
	                    .flush_every = flush_every };
	double seconds = 0;
	int ret;

	if (!path || !mbps_out)
		return wcadm_err(-EINVAL, "rawaio: path and mbps_out are required");
	ret = rawaio_open(&r);
	if (ret == 0)
		ret = rawaio_check(&r, bytes);
	if (ret == 0) {
		r.nios = bytes / io_size;
		ret = rawaio_setup(&r, sequential);
	}
	if (ret == 0)
		ret = rawaio_run(&r, &seconds);
	rawaio_release(&r);
	if (ret == 0)
		*mbps_out = seconds > 0 ? (double)bytes / seconds / 1e6 : 0;
	return ret;
}
