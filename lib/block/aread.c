/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aread.c -- without threads (the host's loop drives the cache), the
 * device reads of a read's cached blocks are requests in flight: wc_submit
 * returns before the device answers, and the host's polls complete them.
 * Read synchronously, each cached block held the loop for the device's
 * latency (a virtio disk: 0.1-0.2 ms on average, up to 15 ms), many per
 * turn.
 *
 * A read finds the block's version and its generation, reads its data,
 * then checks the generation: moved, the version was freed meanwhile
 * (superseded, or its segment reclaimed and maybe written again) and the
 * block is looked up again -- now perhaps a miss, which the caller reads
 * from the origin (a version leaves the cache only once the origin holds
 * it).  A version whose record is still in flight is copied from the
 * record's buffer (aio.c), as a synchronous read does.
 *
 * The device's completions may signal an eventfd (the host's, from
 * wc_event_fd): the loop wakes when the data is there, not at its next
 * deadline.  With the test hooks (the power-failure simulator), or when
 * the system has no aio context left, reads are synchronous.
 */
#include <errno.h>
#include <libaio.h>
#include <time.h>

#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"

/* Reads in flight at most; past it a read is synchronous. */
#define AREAD_MAX 256
/* A block whose version keeps moving under the read is read this many
 * times before the read waits for the device (each pass saw a newer
 * version freed: a write storm on one block). */
#define AREAD_TRIES 8

int wc_blk_aread_start(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	if (!c->cfg.no_threads || b->io)
		return 0;
	if (io_setup(AREAD_MAX, &b->rd.ctx) < 0)
		b->rd.ctx = 0; /* fs.aio-max-nr spent: synchronous, still correct */
	return 0;
}

void wc_blk_aread_stop(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	if (!b || !b->rd.ctx)
		return;
	/* wc_close drained them (their buffers are the caller's); an open
	 * that failed never had any. */
	while (atomic_load(&b->rd.in_flight) && wc_blk_aread_poll(c, 10) >= 0)
		;
	io_destroy(b->rd.ctx);
	b->rd.ctx = 0;
}

bool wc_blk_aread_busy(struct wc_cache *c)
{
	return atomic_load_explicit(&c->blk->rd.in_flight, memory_order_relaxed) != 0;
}

/* 2: submitted; -EAGAIN: not (the caller reads synchronously). */
static int submit(struct wc_cache *c, struct wc_blk_aread *r)
{
	struct wc_blk *b = c->blk;
	struct iocb *p = &r->iocb;
	int ret;

	if (!b->rd.ctx || atomic_load(&b->rd.in_flight) >= AREAD_MAX)
		return -EAGAIN;
	io_prep_pread(p, b->fd, r->buf, c->layout.block_size, (long long)r->f.where);
	if (r->resfd >= 0)
		io_set_eventfd(p, r->resfd);
	p->data = r;
	atomic_fetch_add(&b->rd.in_flight, 1);
	ret = io_submit(b->rd.ctx, 1, &p);
	if (ret == 1)
		return 2;
	atomic_fetch_sub(&b->rd.in_flight, 1);
	return -EAGAIN;
}

/* Look the block up and read it: 1 (read), 0 (a miss), 2 (in flight). */
static int start(struct wc_cache *c, struct wc_blk_aread *r, unsigned tries)
{
	uint32_t bs = c->layout.block_size;
	int ret;

	for (;;) {
		if (!wc_blk_find(c, r->block, &r->f))
			return 0;
		if (r->f.inflight && wc_blk_aio_read(c, r->buf, r->f.where, bs) &&
		    wc_blk_found_still(c, &r->f))
			return 1;
		if (tries++ < AREAD_TRIES && submit(c, r) == 2)
			return 2;
		ret = wc_blk_pread(c, r->buf, bs, r->f.where, "read");
		if (ret)
			return ret;
		if (wc_blk_found_still(c, &r->f))
			return 1;
	}
}

int wc_blk_aread(struct wc_cache *c, struct wc_blk_aread *r)
{
	return start(c, r, 0);
}

int wc_blk_aread_poll(struct wc_cache *c, unsigned wait_ms)
{
	struct wc_blk *b = c->blk;
	struct io_event ev[32];
	struct timespec ts = { wait_ms / 1000, (long)(wait_ms % 1000) * 1000000 };
	int n;

	if (!b->rd.ctx || !atomic_load(&b->rd.in_flight))
		return 0;
	n = io_getevents(b->rd.ctx, wait_ms ? 1 : 0, 32, ev, &ts);
	if (n == -EINTR)
		return 0;
	if (n < 0)
		return wc_err(n, "%s: reads in flight: io_getevents failed", c->cache_path);
	for (int i = 0; i < n; i++) {
		struct wc_blk_aread *r = ev[i].data;
		long res = (long)ev[i].res;
		int ret;

		atomic_fetch_sub(&b->rd.in_flight, 1);
		if (res < 0)
			ret = wc_err_sys((int)res, "%s read: block %llu, %u bytes at %llu on the device",
			                 c->cache_path, (unsigned long long)r->block, c->layout.block_size,
			                 (unsigned long long)r->f.where);
		else if ((size_t)res != c->layout.block_size)
			ret = wc_err(-EIO, "%s read: block %llu: short device read at %llu (%ld of %u bytes)",
			             c->cache_path, (unsigned long long)r->block,
			             (unsigned long long)r->f.where, res, c->layout.block_size);
		else if (wc_blk_found_still(c, &r->f))
			ret = 1;
		else
			ret = start(c, r, 1); /* freed meanwhile: again */
		if (ret != 2)
			r->done(r, ret);
	}
	return n;
}
