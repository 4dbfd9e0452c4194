/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * readahead.c -- sequential read misses, read ahead from the origin into
 * DRAM (never into pmem: what is read ahead may never be read, and pmem
 * holds what was written).
 *
 * A *stream* is a run of read misses, each starting where the one before
 * ended.  From its second request on, the stream keeps a window of origin
 * blocks loading ahead of the reader, and the one after it as soon as the
 * reader enters the first -- two windows, so the origin reads the next one
 * while the reader copies out of this one.  A window starts at
 * WC_RA_MIN_BYTES and doubles per window up to WC_RA_MAX_BYTES, as the
 * kernel's read-ahead grows.  WC_RA_STREAMS streams at a time, the least
 * recently used one replaced.
 *
 * Coherence: a window holds the origin's data as it was when it was read.
 * The origin changes under the cache in three places -- write-back, a write
 * around the cache, a discard -- and each calls wc_ra_forget() for its
 * blocks at the point after which a reader that misses the cache must see
 * the new data: write-back before it drops the written blocks from the
 * cache (its origin writes are durable then, so a window read later is
 * fresh), a write around after its origin write, a discard before it drops
 * the cached versions.  A window forgotten while loading is thrown away when
 * it completes.
 *
 * The lock (ra->lock) guards the streams' bookkeeping only: no copy and no
 * wait happens under it -- a window in use by readers has users > 0 and is
 * not reused until they are done.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cache.h"
#include "util/error.h"
#include "core/readahead.h"

#define WC_RA_STREAMS 8
#define WC_RA_MIN_BYTES (128u << 10)
#define WC_RA_MAX_BYTES (2u << 20)
#define RA_POLL_SLICE_NS 1000000ull /* see writeback.c's WB_POLL_SLICE_NS */

enum ra_state { RA_EMPTY, RA_LOADING, RA_READY };

struct ra_window {
	struct wc_origin_io io;  /* first: the completion finds the window */
	struct iovec iov;
	struct wc_cache *c;
	uint64_t block, nblocks; /* the origin blocks it holds (or will) */
	char *buf;
	size_t cap;              /* bytes allocated */
	enum ra_state state;     /* under ra->lock, but RA_LOADING -> done by `done` */
	bool forgotten;          /* the origin changed under it */
	unsigned users;          /* readers copying out or waiting (under the lock) */
	atomic_int done;         /* the load completed (then res is set) */
	ssize_t res;
};

struct ra_stream {
	uint64_t next;           /* the block a sequential reader asks for next */
	uint64_t last_use;       /* the lock's tick at its last request */
	size_t size;             /* the next window's size, bytes */
	bool sequential;         /* its last request followed the one before */
	struct ra_window win[2];
};

struct wc_readahead {
	pthread_mutex_t lock;
	atomic_uint_fast64_t hits;   /* blocks served from it (wc_stats) */
	uint64_t tick;
	struct ra_stream s[WC_RA_STREAMS];
};

static void load_done(struct wc_origin_io *io, ssize_t res)
{
	struct ra_window *w = (struct ra_window *)io;

	w->res = res;
	atomic_store_explicit(&w->done, 1, memory_order_release);
}

int wc_ra_init(struct wc_cache *c)
{
	struct wc_readahead *ra = calloc(1, sizeof(*ra));

	if (!ra)
		return wc_err(-ENOMEM, "%s: read-ahead state", c->cache_path);
	pthread_mutex_init(&ra->lock, NULL);
	for (unsigned i = 0; i < WC_RA_STREAMS; i++)
		for (unsigned k = 0; k < 2; k++)
			ra->s[i].win[k].c = c;
	c->ra = ra;
	return 0;
}

/* Drive the origin until the window's load completed (no lock held). */
static void wait_loaded(struct wc_cache *c, struct ra_window *w)
{
	while (!atomic_load_explicit(&w->done, memory_order_acquire))
		wc_origin_poll(&c->origin, 1, RA_POLL_SLICE_NS);
}

/* Lock held: a loaded window's state follows its completion. */
static void settle(struct ra_window *w)
{
	if (w->state != RA_LOADING || !atomic_load_explicit(&w->done, memory_order_acquire))
		return;
	w->state = w->res == (ssize_t)w->iov.iov_len && !w->forgotten ? RA_READY : RA_EMPTY;
}

uint64_t wc_ra_hits(struct wc_cache *c)
{
	return c->ra ? atomic_load_explicit(&c->ra->hits, memory_order_relaxed) : 0;
}

void wc_ra_fini(struct wc_cache *c)
{
	struct wc_readahead *ra = c->ra;

	if (!ra)
		return;
	/* No reader is left; loads still in flight write into our buffers. */
	for (unsigned i = 0; i < WC_RA_STREAMS; i++)
		for (unsigned k = 0; k < 2; k++) {
			struct ra_window *w = &ra->s[i].win[k];

			if (w->state == RA_LOADING)
				wait_loaded(c, w);
			free(w->buf);
		}
	pthread_mutex_destroy(&ra->lock);
	free(ra);
	c->ra = NULL;
}

static bool overlaps(const struct ra_window *w, uint64_t block, uint64_t n)
{
	return w->state != RA_EMPTY && block < w->block + w->nblocks && w->block < block + n;
}

void wc_ra_forget(struct wc_cache *c, uint64_t block, uint64_t n)
{
	struct wc_readahead *ra = c->ra;

	if (!ra)
		return;
	pthread_mutex_lock(&ra->lock);
	for (unsigned i = 0; i < WC_RA_STREAMS; i++)
		for (unsigned k = 0; k < 2; k++) {
			struct ra_window *w = &ra->s[i].win[k];

			settle(w);
			if (!overlaps(w, block, n))
				continue;
			/* Readers copying out now began before the change:
			 * what they get is what a read concurrent with it may
			 * return.  Later ones must not find it. */
			w->forgotten = true;
			if (w->state == RA_READY)
				w->state = RA_EMPTY;
		}
	pthread_mutex_unlock(&ra->lock);
}

/* Lock held.  Start loading [block, block + bytes) into w, if w is free
 * and holds nothing of [keep, keep + keep_n) (the request being served:
 * its reader copies out of w next). */
static void load(struct wc_cache *c, struct ra_window *w, uint64_t block, size_t bytes,
                 uint64_t keep, uint64_t keep_n)
{
	uint64_t end = c->origin_blocks;
	uint64_t n = bytes >> c->block_shift;

	if (w->users || w->state == RA_LOADING || block >= end ||
	    (overlaps(w, keep, keep_n) && !w->forgotten))
		return;
	if (n > end - block)
		n = end - block;
	bytes = (size_t)n << c->block_shift;
	if (w->cap < bytes) {
		void *buf = NULL;

		/* Page-aligned: O_DIRECT origins need it. */
		if (posix_memalign(&buf, 4096, bytes))
			return; /* no memory: no read-ahead, nothing else lost */
		free(w->buf);
		w->buf = buf;
		w->cap = bytes;
	}
	w->block = block;
	w->nblocks = n;
	w->forgotten = false;
	w->res = 0;
	atomic_store_explicit(&w->done, 0, memory_order_relaxed);
	w->iov.iov_base = w->buf;
	w->iov.iov_len = bytes;
	w->io = (struct wc_origin_io){
		.op = WC_ORIGIN_READ,
		.iov = &w->iov,
		.iovcnt = 1,
		.offset = block << c->block_shift,
		.done = load_done,
		.priv = w,
	};
	w->state = RA_LOADING;
	if (wc_origin_submit(&c->origin, &w->io) != 0)
		w->state = RA_EMPTY; /* read-ahead is a hint: the reader reads itself */
}

/* Lock held: the window of `s` holding `block`, or NULL. */
static struct ra_window *window_of(struct ra_stream *s, uint64_t block)
{
	for (unsigned k = 0; k < 2; k++) {
		settle(&s->win[k]);
		if (overlaps(&s->win[k], block, 1) && !s->win[k].forgotten)
			return &s->win[k];
	}
	return NULL;
}

uint64_t wc_ra_read(struct wc_cache *c, char *dst, uint64_t block, uint64_t n)
{
	struct wc_readahead *ra = c->ra;
	uint64_t served = 0;

	if (!ra)
		return 0;
	while (served < n) {
		struct ra_window *w = NULL;
		uint64_t from, count;
		bool ok;

		bool loading = false;

		pthread_mutex_lock(&ra->lock);
		for (unsigned i = 0; i < WC_RA_STREAMS && !w; i++)
			w = window_of(&ra->s[i], block + served);
		if (w) {
			w->users++;
			loading = w->state == RA_LOADING;
		}
		pthread_mutex_unlock(&ra->lock);
		if (!w)
			break;
		if (loading)
			wait_loaded(c, w);
		pthread_mutex_lock(&ra->lock);
		settle(w);
		ok = w->state == RA_READY && !w->forgotten;
		pthread_mutex_unlock(&ra->lock);
		if (ok) {
			/* Its blocks do not change while users > 0. */
			from = block + served - w->block;
			count = w->nblocks - from < n - served ? w->nblocks - from : n - served;
			memcpy(dst + (served << c->block_shift), w->buf + (from << c->block_shift),
			       (size_t)count << c->block_shift);
			served += count;
		}
		pthread_mutex_lock(&ra->lock);
		w->users--;
		pthread_mutex_unlock(&ra->lock);
		if (!ok)
			break;
	}
	if (served)
		atomic_fetch_add_explicit(&c->ra->hits, served, memory_order_relaxed);
	return served;
}

/* Lock held: the stream whose next block is `block`, else the least
 * recently used one, restarted there. */
static struct ra_stream *stream_for(struct wc_readahead *ra, uint64_t block)
{
	struct ra_stream *lru = &ra->s[0];

	for (unsigned i = 0; i < WC_RA_STREAMS; i++) {
		struct ra_stream *s = &ra->s[i];

		if (s->last_use && s->next == block) {
			s->sequential = true;
			return s;
		}
		if (s->last_use < lru->last_use)
			lru = s;
	}
	lru->sequential = false;
	lru->size = WC_RA_MIN_BYTES;
	return lru;
}

void wc_ra_note(struct wc_cache *c, uint64_t block, uint64_t n)
{
	struct wc_readahead *ra = c->ra;
	struct ra_stream *s;
	uint64_t end = block + n;
	struct ra_window *here, *ahead;

	if (!ra)
		return;
	pthread_mutex_lock(&ra->lock);
	s = stream_for(ra, block);
	s->next = end;
	s->last_use = ++ra->tick;
	if (!s->sequential || end >= c->origin_blocks) {
		pthread_mutex_unlock(&ra->lock);
		return;
	}
	/* The window the reader is about to enter, and the one after it. */
	here = window_of(s, end);
	if (!here) {
		here = s->win[0].state == RA_EMPTY || s->win[0].block < s->win[1].block ? &s->win[0]
		                                                                        : &s->win[1];
		load(c, here, end, s->size, block, n);
		if (here->state != RA_LOADING) {
			pthread_mutex_unlock(&ra->lock);
			return;
		}
		s->size = s->size * 2 < WC_RA_MAX_BYTES ? s->size * 2 : WC_RA_MAX_BYTES;
	}
	ahead = here == &s->win[0] ? &s->win[1] : &s->win[0];
	settle(ahead);
	if (!(ahead->state != RA_EMPTY && !ahead->forgotten &&
	      ahead->block == here->block + here->nblocks)) {
		load(c, ahead, here->block + here->nblocks, s->size, block, n);
		if (ahead->state == RA_LOADING)
			s->size = s->size * 2 < WC_RA_MAX_BYTES ? s->size * 2 : WC_RA_MAX_BYTES;
	}
	pthread_mutex_unlock(&ra->lock);
}
