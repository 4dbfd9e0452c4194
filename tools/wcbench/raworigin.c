/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * raworigin.c -- raw write bandwidth of an origin that is not a local path
 * (an NBD export, ...): the loop of rawaio.c, but through the origin's own
 * backend (wc_origin_open, submit, poll, flush).  The baseline of `wcbench
 * writeback --origin URI`.
 *
 * Unlike rawaio it shares the backend with the cache, on purpose: there is
 * no local file to write around it, and what it then measures -- the
 * backend and the server under write-back's load, `qd` requests in flight
 * and one flush at the end -- is what write-back itself runs on, so
 * drain / raw is the cache's own cost.  The loop runs in one thread: done()
 * only ever runs inside our own poll().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rawaio.h"
#include "wcadmin.h"
#include "wctools.h"

#define RAWORIGIN_FILL 0x5a
#define RAWORIGIN_SEED 0x2545f4914f6cdd1dull /* rawaio's: the same permutation */
#define RAWORIGIN_POLL_NS 1000000000ull

struct raworigin;

struct raw_slot {
	struct wc_origin_io io;
	struct iovec iov;
	struct raworigin *r;
};

struct raworigin {
	const char *name;
	struct wc_origin o;
	size_t io_size;
	unsigned qd, nfree;
	struct raw_slot *slots;
	unsigned *free;
	uint8_t *bufs;
	uint64_t *order, nios, submitted, completed;
	int err;
	uint64_t err_off;
};

static void slot_done(struct wc_origin_io *io, ssize_t res)
{
	struct raw_slot *s = io->priv;
	struct raworigin *r = s->r;

	if (res != (ssize_t)r->io_size && !r->err) {
		r->err = res < 0 ? (int)res : -EIO;
		r->err_off = io->offset;
	}
	r->completed++;
	r->free[r->nfree++] = (unsigned)(s - r->slots);
}

static int setup(struct raworigin *r, uint64_t bytes, bool sequential)
{
	uint64_t size = 0;
	uint32_t align;
	int ret = wc_origin_open(&r->o, r->name);

	if (ret)
		return ret;
	wcadm_origin_size(&r->o, &size);
	align = wcadm_origin_alignment(&r->o);
	if (r->io_size == 0 || r->qd == 0 || bytes == 0 || bytes % r->io_size)
		return wcadm_err(-EINVAL, "raw origin %s: bytes (%llu) must be a positive multiple of "
		                 "io_size (%zu), qd > 0", r->name, (unsigned long long)bytes, r->io_size);
	if (r->io_size % align)
		return wcadm_err(-EINVAL, "raw origin %s: io_size %zu is not a multiple of its alignment %u",
		                 r->name, r->io_size, align);
	if (bytes > size)
		return wcadm_err(-EINVAL, "raw origin %s: %llu bytes requested but it holds %llu", r->name,
		                 (unsigned long long)bytes, (unsigned long long)size);
	r->nios = bytes / r->io_size;
	if (r->qd > r->nios)
		r->qd = (unsigned)r->nios;
	r->slots = calloc(r->qd, sizeof(*r->slots));
	r->free = calloc(r->qd, sizeof(*r->free));
	if (!r->slots || !r->free || posix_memalign((void **)&r->bufs, 4096, (size_t)r->qd * r->io_size))
		return wcadm_err(-ENOMEM, "raw origin %s: out of memory for %u x %zu-byte buffers", r->name,
		                 r->qd, r->io_size);
	memset(r->bufs, RAWORIGIN_FILL, (size_t)r->qd * r->io_size);
	for (unsigned i = 0; i < r->qd; i++)
		r->free[r->nfree++] = r->qd - 1 - i;
	if (!sequential) {
		r->order = wc_rawaio_permutation(r->nios, RAWORIGIN_SEED);
		if (!r->order)
			return wcadm_err(-ENOMEM, "raw origin %s: out of memory", r->name);
	}
	return 0;
}

static int submit_next(struct raworigin *r)
{
	unsigned si = r->free[--r->nfree];
	struct raw_slot *s = &r->slots[si];
	uint8_t *buf = r->bufs + (size_t)si * r->io_size;
	uint64_t i = r->submitted, off = (r->order ? r->order[i] : i) * r->io_size;
	int ret;

	for (int b = 0; b < 8; b++) /* the offset, little-endian, as rawaio */
		buf[b] = (uint8_t)(off >> (8 * b));
	s->r = r;
	s->iov = (struct iovec){ buf, r->io_size };
	s->io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = &s->iov, .iovcnt = 1,
	                               .offset = off, .done = slot_done, .priv = s };
	ret = wcadm_origin_submit(&r->o, &s->io);
	if (ret) {
		r->free[r->nfree++] = si;
		return ret;
	}
	r->submitted++;
	return 0;
}

static int run(struct raworigin *r, double *seconds)
{
	double t0 = wct_now_ns();
	int ret = 0;

	while (!ret && !r->err && r->completed < r->nios) {
		while (!ret && r->nfree && r->submitted < r->nios)
			ret = submit_next(r);
		if (!ret && wcadm_origin_poll(&r->o, 1, RAWORIGIN_POLL_NS) < 0)
			ret = wcadm_err(-EIO, "raw origin %s: poll: %s", r->name, wc_errmsg());
	}
	/* After an error, what is in flight still completes into our buffers. */
	while (r->completed < r->submitted)
		if (wcadm_origin_poll(&r->o, 1, RAWORIGIN_POLL_NS) < 0)
			break;
	if (!ret && r->err)
		ret = wcadm_err_sys(r->err, "raw origin %s: write at offset %llu", r->name,
		                    (unsigned long long)r->err_off);
	if (!ret)
		ret = wcadm_origin_flush(&r->o);
	*seconds = (wct_now_ns() - t0) / 1e9;
	return ret;
}

int wc_raworigin_write_bw(const char *name, uint64_t bytes, size_t io_size, unsigned qd,
                          bool sequential, double *mbps_out)
{
	struct raworigin r = { .name = name, .io_size = io_size, .qd = qd };
	double seconds = 0;
	int ret;

	if (!name || !mbps_out)
		return wcadm_err(-EINVAL, "raw origin: name and mbps_out are required");
	ret = setup(&r, bytes, sequential);
	if (!ret)
		ret = run(&r, &seconds);
	if (!ret)
		*mbps_out = (double)bytes / seconds / 1e6;
	if (r.o.ops)
		wcadm_origin_close(&r.o);
	free(r.slots);
	free(r.free);
	free(r.bufs);
	free(r.order);
	return ret;
}
