/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aio.c -- records of writes without FUA in flight: the write returns once
 * its record is built, published and submitted, not once the device has it.
 *
 * Such a write is not durable before the next device flush anyway, so
 * waiting for its device write bought nothing but latency: one writer
 * thread could keep one record in flight, and 4 writer threads got half of
 * what raw libaio at queue depth 32 gets from the same disk.  Now a thread
 * keeps up to WC_BLK_AIO_SLOTS records in flight (shared by all threads).
 *
 * A slot holds one record's buffer from its build to its completion.  Its
 * versions are published with WC_E_INFLIGHT: a read finds the slot by the
 * version's device offset and copies from its buffer.  `use` is odd from
 * the slot's submission to its completion (a seqlock): a reader that saw
 * it change during its copy reads the device instead, which has the data
 * by then.  The completion clears the flags first, then counts the record
 * written (for wc_flush and the autocommit) and done (for its segment's
 * summary and write-back), then makes `use` even and frees the slot.
 *
 * wc_flush first waits for the slots busy when it was called: a write that
 * returned before the flush is then on the device before the device flush.
 *
 * With the test hooks (the power-failure simulator) or without threads
 * (wc_poll drives the cache: no thread would reap completions) the record
 * is written at once and completed inline, through the same steps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"

static void complete(struct wc_cache *c, struct wc_blk_aslot *s, int err)
{
	struct wc_blk *b = c->blk;

	if (err) {
		/* The cache's own device failed: sticky, as a synchronous
		 * record's failure.  The slot keeps its buffer and its versions
		 * their flag, so reads still see what the writes returned. */
		wc_set_error(c, -EIO, wc_errmsg());
		pthread_mutex_lock(&b->aio.lock);
		s->failed = true;
		b->aio.n_failed++;
		pthread_cond_broadcast(&b->aio.cond);
		pthread_mutex_unlock(&b->aio.lock);
		wc_blk_record_done(c, &s->r);
		return;
	}
	for (unsigned i = 0; i < s->n; i++) {
		struct wc_entry *e = &c->e[s->idx[i]];
		struct wc_shard *sh = wc_shard_of(c, s->block + i);

		wc_spin_lock(&sh->lock);
		if ((e->flags & WC_E_INFLIGHT) && e->seq == s->r.seq && e->origin == s->block + i)
			wc_entry_set_flags(e, e->flags & ~WC_E_INFLIGHT);
		wc_spin_unlock(&sh->lock);
	}
	wc_blk_record_written(c, s->n, s->len);
	wc_blk_record_done(c, &s->r);
	pthread_mutex_lock(&b->aio.lock);
	atomic_fetch_add_explicit(&s->use, 1, memory_order_release); /* even: free */
	b->aio.free[b->aio.n_free++] = (unsigned)(s - b->aio.slots);
	pthread_cond_broadcast(&b->aio.cond);
	pthread_mutex_unlock(&b->aio.lock);
}

static void *reaper(void *arg)
{
	struct wc_cache *c = arg;
	struct wc_blk *b = c->blk;
	struct io_event ev[WC_BLK_AIO_SLOTS];

	for (;;) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		int n = io_getevents(b->aio.ctx, 1, WC_BLK_AIO_SLOTS, ev, &ts);

		if (n < 0 && n != -EINTR) {
			wc_set_error(c, -EIO, "block medium: io_getevents failed");
			/* Writers waiting for a slot see the error state. */
			pthread_mutex_lock(&b->aio.lock);
			pthread_cond_broadcast(&b->aio.cond);
			pthread_mutex_unlock(&b->aio.lock);
			break;
		}
		for (int i = 0; i < n; i++) {
			struct wc_blk_aslot *s = ev[i].data;
			long res = (long)ev[i].res;
			int err = 0;

			if (res < 0)
				err = wc_err_sys((int)res, "%s: record: write of %zu bytes at %llu",
				                 c->cache_path, s->len, (unsigned long long)s->r.off);
			else if ((size_t)res != s->len)
				err = wc_err(-EIO, "%s: record: short write at %llu (%ld of %zu bytes)",
				             c->cache_path, (unsigned long long)s->r.off, res, s->len);
			complete(c, s, err);
		}
		if (n <= 0 && atomic_load(&b->aio.stop)) {
			bool idle;

			pthread_mutex_lock(&b->aio.lock);
			idle = b->aio.n_free + b->aio.n_failed == WC_BLK_AIO_SLOTS;
			pthread_mutex_unlock(&b->aio.lock);
			if (idle)
				break;
		}
	}
	return NULL;
}

int wc_blk_aio_start(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	int ret;

	b->aio.slots = calloc(WC_BLK_AIO_SLOTS, sizeof(*b->aio.slots));
	if (!b->aio.slots)
		return wc_err(-ENOMEM, "%s: record slots", c->cache_path);
	pthread_mutex_init(&b->aio.lock, NULL);
	pthread_cond_init(&b->aio.cond, NULL);
	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++)
		b->aio.free[b->aio.n_free++] = WC_BLK_AIO_SLOTS - 1 - i;
	b->aio.inline_io = b->io || c->cfg.no_threads;
	if (b->aio.inline_io)
		return 0;
	ret = io_setup(WC_BLK_AIO_SLOTS, &b->aio.ctx);
	if (ret < 0) {
		/* Out of the system's aio contexts (fs.aio-max-nr): slower,
		 * still correct. */
		b->aio.inline_io = true;
		return 0;
	}
	ret = pthread_create(&b->aio.thread, NULL, reaper, c);
	if (ret) {
		io_destroy(b->aio.ctx);
		return wc_err(-ret, "%s: record completion thread", c->cache_path);
	}
	b->aio.running = true;
	return 0;
}

void wc_blk_aio_stop(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	if (!b || !b->aio.slots)
		return;
	if (b->aio.running) {
		atomic_store(&b->aio.stop, true);
		pthread_join(b->aio.thread, NULL);
		io_destroy(b->aio.ctx);
		b->aio.running = false;
	}
	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++)
		free(b->aio.slots[i].buf);
	free(b->aio.slots);
	b->aio.slots = NULL;
}

bool wc_blk_aio_on(struct wc_cache *c)
{
	return c->blk->aio.slots != NULL;
}

int wc_blk_aio_get(struct wc_cache *c, size_t len, struct wc_blk_aslot **out)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_aslot *s;

	pthread_mutex_lock(&b->aio.lock);
	while (!b->aio.n_free) {
		if (wc_has_error(c)) {
			pthread_mutex_unlock(&b->aio.lock);
			return wc_err(-EIO, "%s write: the cache is in error state (%d)", c->cache_path,
			              wc_has_error(c));
		}
		/* Every slot is in flight: the device's queue is full. */
		pthread_cond_wait(&b->aio.cond, &b->aio.lock);
	}
	s = &b->aio.slots[b->aio.free[--b->aio.n_free]];
	pthread_mutex_unlock(&b->aio.lock);
	if (s->cap < len) {
		void *p = NULL;

		if (posix_memalign(&p, 4096, len)) {
			wc_blk_aio_put(c, s);
			return wc_err(-ENOMEM, "%s write: %zu-byte record buffer", c->cache_path, len);
		}
		free(s->buf);
		s->buf = p;
		s->cap = len;
	}
	*out = s;
	return 0;
}

void wc_blk_aio_put(struct wc_cache *c, struct wc_blk_aslot *s)
{
	struct wc_blk *b = c->blk;

	pthread_mutex_lock(&b->aio.lock);
	b->aio.free[b->aio.n_free++] = (unsigned)(s - b->aio.slots);
	pthread_cond_broadcast(&b->aio.cond);
	pthread_mutex_unlock(&b->aio.lock);
}

void wc_blk_aio_mark_busy(struct wc_blk_aslot *s)
{
	atomic_fetch_add_explicit(&s->use, 1, memory_order_release); /* odd: in flight */
}

void wc_blk_aio_submit(struct wc_cache *c, struct wc_blk_aslot *s)
{
	struct wc_blk *b = c->blk;
	struct iocb *p = &s->iocb;

	if (!b->aio.inline_io) {
		io_prep_pwrite(p, b->fd, s->buf, s->len, (long long)s->r.off);
		p->data = s;
		for (;;) {
			int ret = io_submit(b->aio.ctx, 1, &p);

			if (ret == 1)
				return;
			if (ret != -EAGAIN && ret != -EINTR)
				break; /* written below instead */
		}
	}
	complete(c, s, wc_blk_pwrite(c, s->buf, s->len, s->r.off, false, "record"));
}

bool wc_blk_aio_read(struct wc_cache *c, void *dst, uint64_t where, size_t len)
{
	struct wc_blk *b = c->blk;

	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++) {
		struct wc_blk_aslot *s = &b->aio.slots[i];
		unsigned u = atomic_load_explicit(&s->use, memory_order_acquire);
		uint64_t lo = __atomic_load_n(&s->data_off, __ATOMIC_RELAXED);
		uint64_t bytes = __atomic_load_n(&s->data_bytes, __ATOMIC_RELAXED);

		if (!(u & 1) || where < lo || where + len > lo + bytes)
			continue;
		memcpy(dst, s->buf + c->blk->g.lba + (where - lo), len);
		atomic_thread_fence(memory_order_acquire);
		return atomic_load_explicit(&s->use, memory_order_relaxed) == u;
	}
	return false;
}

int wc_blk_aio_drain(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	unsigned seen[WC_BLK_AIO_SLOTS];
	int ret = 0;

	if (!b->aio.slots)
		return 0;
	pthread_mutex_lock(&b->aio.lock);
	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++)
		seen[i] = atomic_load(&b->aio.slots[i].use);
	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++) {
		struct wc_blk_aslot *s = &b->aio.slots[i];

		while ((seen[i] & 1) && atomic_load(&s->use) == seen[i]) {
			if (s->failed) {
				ret = wc_err(-EIO, "%s flush: a record's write failed", c->cache_path);
				goto out;
			}
			if (wc_has_error(c)) {
				ret = wc_err(-EIO, "%s flush: the cache is in error state (%d)", c->cache_path,
				             wc_has_error(c));
				goto out;
			}
			pthread_cond_wait(&b->aio.cond, &b->aio.lock);
		}
	}
out:
	pthread_mutex_unlock(&b->aio.lock);
	return ret;
}
