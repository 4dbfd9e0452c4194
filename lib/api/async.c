/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async.c -- wc_submit and the event loop's side: requests that complete
 * at once, requests that complete later, and their delivery.
 *
 * A request is first tried where it stands, with nothing that may wait: on
 * persistent memory a read of cached blocks, a write the free lists have
 * room for and a flush (one drain) are a few microseconds of stores, cheaper
 * than any hand-off, so done() runs before wc_submit returns.  Anything else
 * -- a miss, a write that needs write-back to make room, the block medium's
 * device I/O, a discard, a write-back -- completes later:
 *
 *   threads (the default)  the cache's I/O threads (async_threads, started
 *                          at the first such request) run it as the
 *                          synchronous call would, and queue its completion;
 *   no_threads             no thread of ours: a read's misses go to the
 *                          origin as asynchronous requests, completed by the
 *                          host's wc_poll_timeout() (on the block medium its
 *                          cached blocks are device reads in flight, the
 *                          same way); a write that needs room
 *                          is refused with -EAGAIN until the host's polls
 *                          have written enough back.
 *
 * Completions are delivered in the thread that calls wc_poll_timeout(), so
 * an event loop's callbacks run on the loop; the eventfd turns readable when
 * the stack of completions goes from empty to not empty (the poller reads
 * the eventfd before it takes the stack, so none is missed).  Completing
 * threads push without a lock: with a mutex there, a completing thread
 * preempted while holding it stalled the loop (examples/epoll_cache
 * --no-threads on 2 busy vCPUs: 96 of 14,728 turns over 1 ms with the
 * mutex, 5-7 of 8,600-21,600 without).
 *
 * A request's internal words: [0] the next request in a queue, [1] its
 * result, [2] origin reads still out (no_threads misses), [3] the message of
 * a failure (malloc'd; set as the poller's wc_errmsg when done() runs).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api/async.h"
#include "api/io.h"
#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"
#include "writeback/writeback.h"

#define ASYNC_THREADS_DEFAULT 4u
#define ASYNC_THREADS_MAX 256u
#define WC_ASYNC_THREAD_NAME "wc-io" /* <= 15 characters */

struct wc_async {
	pthread_mutex_t lock;
	pthread_cond_t work;          /* a request queued, or stop */
	pthread_cond_t idle;          /* the queue ran dry and no worker is busy */
	struct wc_request *queue, *queue_tail;  /* for the I/O threads */
	/* Completed requests: pushed by whichever thread completes them
	 * (an I/O thread, the origin's) without a lock, taken whole by a
	 * poller into `ready`, in completion order, under reap_lock -- so a
	 * completing thread preempted mid-push never holds up the loop. */
	_Atomic(struct wc_request *) incoming;
	pthread_mutex_t reap_lock;
	struct wc_request *ready, *ready_tail;
	unsigned busy;                /* I/O threads running a request */
	unsigned nthreads;
	pthread_t *threads;
	bool stop;
	int efd;                      /* -1 until asked for or needed */
	atomic_uint_fast64_t inflight;      /* accepted, done() not yet run */
	atomic_uint_fast64_t origin_reads;  /* no_threads: miss reads out */
	/* no_threads: the thread that last polled, and when (wc_now_ms). */
	_Atomic uintptr_t poller;
	_Atomic uint32_t poll_ms;
};

/* What the library keeps in a request's internal words while it is in
 * flight; only ever accessed as this struct (memset by wc_submit). */
struct req_state {
	struct wc_request *next;
	int64_t res;
	_Atomic uint64_t pending;
	char *msg;
};
_Static_assert(sizeof(struct req_state) <= sizeof(((struct wc_request *)0)->internal),
               "struct wc_request's internal words hold the library's state");

static inline struct req_state *rs(struct wc_request *r)
{
	return (struct req_state *)(void *)r->internal;
}
#define REQ_NEXT(r) (rs(r)->next)
#define REQ_RES(r) (rs(r)->res)
#define REQ_PENDING(r) (rs(r)->pending)
#define REQ_MSG(r) (rs(r)->msg)

int wc_async_init(struct wc_cache *c)
{
	struct wc_async *a = calloc(1, sizeof(*a));

	if (!a)
		return wc_err(-ENOMEM, "%s: request state", c->cache_path);
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->reap_lock, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->idle, NULL);
	a->efd = -1;
	c->async = a;
	return 0;
}

/* eventfd under a->lock: created once, kept until the cache closes. */
static int efd_locked(struct wc_cache *c, struct wc_async *a)
{
	if (a->efd < 0) {
		a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (a->efd < 0)
			return wc_err_sys(-errno, "%s: eventfd", c->cache_path);
		if (c->blk)
			__atomic_store_n(&c->blk->host_efd, a->efd, __ATOMIC_RELEASE);
	}
	return a->efd;
}

static void efd_signal(struct wc_async *a)
{
	uint64_t one = 1;

	if (a->efd >= 0 && write(a->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is at its ceiling, readable anyway. */
	}
}

static void efd_clear(struct wc_async *a)
{
	uint64_t v;

	if (a->efd >= 0 && read(a->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing was signalled. */
	}
}

/* The request is finished: queue its completion for the poller.  The
 * descriptor is signalled when the stack was empty: a poller reads the
 * descriptor before it takes the stack, so it either takes this request or
 * finds the descriptor readable again. */
static void complete_later(struct wc_cache *c, struct wc_request *req)
{
	struct wc_async *a = c->async;
	struct wc_request *head = atomic_load_explicit(&a->incoming, memory_order_relaxed);

	do
		REQ_NEXT(req) = head;
	while (!atomic_compare_exchange_weak_explicit(&a->incoming, &head, req, memory_order_release,
	                                              memory_order_relaxed));
	if (!head)
		efd_signal(a);
}

/* A failure's message goes with the request to the thread that delivers. */
static void keep_message(struct wc_request *req, ssize_t res)
{
	if (res < 0 && !REQ_MSG(req))
		REQ_MSG(req) = strdup(wc_errmsg());
}

static void deliver(struct wc_cache *c, struct wc_request *req)
{
	int64_t res = REQ_RES(req);
	char *msg = REQ_MSG(req);

	REQ_MSG(req) = NULL;
	if (res < 0)
		wc_err((int)res, "%s", msg ? msg : "request failed");
	free(msg);
	atomic_fetch_sub_explicit(&c->async->inflight, 1, memory_order_relaxed);
	req->done(req, (ssize_t)res);
}

/* ---- the synchronous work, as the I/O threads run it ---- */

static ssize_t run(struct wc_cache *c, struct wc_request *req)
{
	ssize_t ret;

	switch (req->op) {
	case WC_REQ_READ:
		return wc_io_readv(c, req->iov, req->iovcnt, req->offset, (size_t)req->len, req->flags);
	case WC_REQ_WRITE:
		ret = wc_io_write_checked(c, "write", req->offset);
		return ret ? ret
		           : wc_io_writev(c, req->iov, req->iovcnt, req->offset, (size_t)req->len, req->flags,
		                          false);
	case WC_REQ_FLUSH:
		return wc_flush(c);
	case WC_REQ_DISCARD:
		return wc_discard(c, req->offset, req->len);
	case WC_REQ_WRITEBACK:
		return req->len ? wc_writeback_range(c, req->offset, req->len) : wc_writeback(c);
	case WC_REQ_INVALIDATE:
		return wc_invalidate_range(c, req->offset, req->len);
	}
	return wc_err(-EINVAL, "%s: request op %u", c->cache_path, req->op);
}

static void *io_thread(void *arg)
{
	struct wc_cache *c = arg;
	struct wc_async *a = c->async;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct wc_request *req;
		ssize_t res;

		while (!a->queue && !a->stop)
			pthread_cond_wait(&a->work, &a->lock);
		if (!a->queue)
			break; /* stopping, and nothing left */
		req = a->queue;
		a->queue = REQ_NEXT(req);
		if (!a->queue)
			a->queue_tail = NULL;
		a->busy++;
		pthread_mutex_unlock(&a->lock);
		res = run(c, req);
		if (req->op != WC_REQ_READ && req->op != WC_REQ_WRITE && res > 0)
			res = 0;
		REQ_RES(req) = res;
		keep_message(req, res);
		complete_later(c, req);
		pthread_mutex_lock(&a->lock);
		if (--a->busy == 0 && !a->queue)
			pthread_cond_broadcast(&a->idle);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* Under a->lock: the I/O threads, at the first request that needs them. */
static int start_threads_locked(struct wc_cache *c, struct wc_async *a)
{
	unsigned want = c->cfg.async_threads ? c->cfg.async_threads : ASYNC_THREADS_DEFAULT;

	if (a->nthreads)
		return 0;
	a->threads = calloc(want, sizeof(*a->threads));
	if (!a->threads)
		return wc_err(-ENOMEM, "%s: %u I/O threads", c->cache_path, want);
	for (unsigned i = 0; i < want; i++) {
		int ret = pthread_create(&a->threads[i], NULL, io_thread, c);

		if (ret) {
			if (a->nthreads)
				break; /* fewer threads still serve */
			free(a->threads);
			a->threads = NULL;
			return wc_err(-ret, "%s: cannot start an I/O thread", c->cache_path);
		}
		pthread_setname_np(a->threads[i], WC_ASYNC_THREAD_NAME);
		a->nthreads++;
	}
	return 0;
}

static int queue_for_threads(struct wc_cache *c, struct wc_request *req)
{
	struct wc_async *a = c->async;
	int ret;

	REQ_NEXT(req) = NULL;
	pthread_mutex_lock(&a->lock);
	ret = efd_locked(c, a);
	if (ret >= 0)
		ret = start_threads_locked(c, a);
	if (ret < 0) {
		pthread_mutex_unlock(&a->lock);
		return ret;
	}
	if (a->queue_tail)
		REQ_NEXT(a->queue_tail) = req;
	else
		a->queue = req;
	a->queue_tail = req;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

/* ---- no_threads: a read's misses as asynchronous origin requests ---- */

/* Copy n bytes of src into the request's buffers at byte `roff`. */
static void scatter(const struct wc_request *req, uint64_t roff, const char *src, size_t n)
{
	for (int i = 0; i < req->iovcnt && n; i++) {
		size_t l = req->iov[i].iov_len, m;

		if (roff >= l) {
			roff -= l;
			continue;
		}
		m = l - roff < n ? l - roff : n;
		memcpy((char *)req->iov[i].iov_base + roff, src, m);
		src += m;
		n -= m;
		roff = 0;
	}
}

/* Where byte `roff` of the request lands, if n bytes from there are in one
 * buffer; NULL if they are split. */
static char *flat_at(const struct wc_request *req, uint64_t roff, size_t n)
{
	for (int i = 0; i < req->iovcnt; i++) {
		size_t l = req->iov[i].iov_len;

		if (roff < l)
			return l - roff >= n ? (char *)req->iov[i].iov_base + roff : NULL;
		roff -= l;
	}
	return NULL;
}

struct miss_io {
	struct wc_origin_io io;   /* first: done() gets it */
	struct iovec iov;
	struct wc_cache *c;
	struct wc_request *req;
	uint64_t roff;            /* where in the request */
	bool bounced;
};

static void read_part_done(struct wc_cache *c, struct wc_request *req)
{
	if (atomic_fetch_sub_explicit(&REQ_PENDING(req), 1, memory_order_acq_rel) == 1)
		complete_later(c, req);
}

static void miss_done(struct wc_origin_io *io, ssize_t res)
{
	struct miss_io *m = (struct miss_io *)io;
	struct wc_request *req = m->req;
	struct wc_cache *c = m->c;

	if (res == (ssize_t)m->iov.iov_len) {
		if (m->bounced)
			scatter(req, m->roff, m->iov.iov_base, m->iov.iov_len);
	} else if (REQ_RES(req) >= 0) {
		REQ_RES(req) = res < 0 ? res : -EIO;
		wc_err((int)REQ_RES(req), "%s read: origin read at %llu (%zu bytes) %s", c->cache_path,
		       (unsigned long long)(req->offset + m->roff), m->iov.iov_len,
		       res < 0 ? "failed" : "came back short");
		keep_message(req, REQ_RES(req));
	}
	if (m->bounced)
		free(m->iov.iov_base);
	atomic_fetch_sub_explicit(&c->async->origin_reads, 1, memory_order_relaxed);
	free(m);
	read_part_done(c, req);
}

/* One run of missing blocks, bytes [roff, roff + len) of the request. */
static int miss_submit(struct wc_cache *c, struct wc_request *req, uint64_t roff, size_t len)
{
	uint32_t align = c->origin_align ? c->origin_align : 1;
	struct miss_io *m = calloc(1, sizeof(*m));
	char *dst = flat_at(req, roff, len);
	int ret;

	if (!m)
		return wc_err(-ENOMEM, "%s read: miss state", c->cache_path);
	m->c = c;
	m->req = req;
	m->roff = roff;
	m->iov.iov_len = len;
	if (dst && (uintptr_t)dst % align == 0) {
		m->iov.iov_base = dst;
	} else {
		if (posix_memalign(&m->iov.iov_base, align < 4096 ? 4096 : align, len)) {
			free(m);
			return wc_err(-ENOMEM, "%s read: %zu-byte bounce buffer", c->cache_path, len);
		}
		m->bounced = true;
	}
	m->io.op = WC_ORIGIN_READ;
	m->io.iov = &m->iov;
	m->io.iovcnt = 1;
	m->io.offset = req->offset + roff;
	m->io.done = miss_done;
	m->io.priv = m;
	atomic_fetch_add_explicit(&REQ_PENDING(req), 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->async->origin_reads, 1, memory_order_relaxed);
	ret = wc_origin_submit(&c->origin, &m->io);
	if (ret) {
		atomic_fetch_sub_explicit(&c->async->origin_reads, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&REQ_PENDING(req), 1, memory_order_relaxed);
		if (m->bounced)
			free(m->iov.iov_base);
		free(m);
		return wc_err(ret, "%s read: origin refused a read at %llu: %s", c->cache_path,
		              (unsigned long long)(req->offset + roff), wc_errmsg());
	}
	return 0;
}

/*
 * Copy the cached blocks of a read; with `misses`, send each run of missing
 * blocks to the origin (no_threads), else stop at the first miss.  Returns 1
 * if every block was a hit, 0 if misses went out (or, without `misses`,
 * one was found), -errno.
 */
static int blk_read_hits(struct wc_cache *c, struct wc_request *req);

static int read_hits(struct wc_cache *c, struct wc_request *req, bool misses)
{
	uint32_t bs = c->layout.block_size;
	uint64_t first = req->offset >> c->block_shift, n = req->len >> c->block_shift;
	uint64_t run_start = 0, run_n = 0;
	char *bounce = NULL;
	int ret = 0;
	bool all = true;

	if (c->blk)
		return misses ? blk_read_hits(c, req) : 0;
	for (uint64_t i = 0; i <= n; i++) {
		bool hit = false;

		if (i < n) {
			char *dst = flat_at(req, i * bs, bs);

			if (dst) {
				hit = wc_io_read_hit(c, dst, first + i);
			} else {
				if (!bounce && !(bounce = malloc(bs))) {
					ret = wc_err(-ENOMEM, "%s read: bounce block", c->cache_path);
					break;
				}
				hit = wc_io_read_hit(c, bounce, first + i);
				if (hit)
					scatter(req, i * bs, bounce, bs);
			}
			if (!hit) {
				all = false;
				if (!misses)
					break;
				if (!run_n++)
					run_start = i;
				continue;
			}
		}
		if (run_n) {
			ret = miss_submit(c, req, run_start * bs, (size_t)run_n * bs);
			run_n = 0;
			if (ret)
				break;
		}
	}
	free(bounce);
	return ret ? ret : all;
}

/* The block medium's: each cached block a device read in flight
 * (lib/block/aread.c), completed by the host's polls; runs of misses go to
 * the origin as on pmem.  A block found cached whose version is freed
 * before its read ends becomes a miss of its own. */
struct hit_io {
	struct wc_blk_aread r;    /* first: done() gets it */
	struct wc_cache *c;
	struct wc_request *req;
	uint64_t roff;            /* where in the request */
	bool bounced;
};

static void hit_end(struct hit_io *h, int res)
{
	struct wc_request *req = h->req;
	struct wc_cache *c = h->c;
	uint32_t bs = c->layout.block_size;

	if (res == 1 && h->bounced)
		scatter(req, h->roff, h->r.buf, bs);
	else if (res == 0)
		res = miss_submit(c, req, h->roff, bs);
	if (res < 0 && REQ_RES(req) >= 0) {
		REQ_RES(req) = res;
		keep_message(req, res);
	}
	if (h->bounced)
		free(h->r.buf);
	free(h);
}

static void hit_done(struct wc_blk_aread *r, int res)
{
	struct hit_io *h = (struct hit_io *)r;
	struct wc_request *req = h->req;
	struct wc_cache *c = h->c;

	hit_end(h, res);
	read_part_done(c, req);
}

static int blk_read_hits(struct wc_cache *c, struct wc_request *req)
{
	uint32_t bs = c->layout.block_size;
	uint64_t first = req->offset >> c->block_shift, n = req->len >> c->block_shift;
	uint64_t run_start = 0, run_n = 0;
	int efd = c->async->efd, ret = 0;
	bool all = true;

	for (uint64_t i = 0; i < n && !ret; i++) {
		char *dst = flat_at(req, i * bs, bs);
		struct hit_io *h = calloc(1, sizeof(*h));

		if (!h) {
			ret = wc_err(-ENOMEM, "%s read: read state", c->cache_path);
			break;
		}
		h->c = c;
		h->req = req;
		h->roff = i * bs;
		h->r.block = first + i;
		h->r.done = hit_done;
		h->r.resfd = efd;
		/* O_DIRECT: the device's sector alignment, which 4096 covers. */
		if (dst && (uintptr_t)dst % 4096 == 0) {
			h->r.buf = dst;
		} else if (posix_memalign(&h->r.buf, 4096, bs)) {
			free(h);
			ret = wc_err(-ENOMEM, "%s read: %u-byte bounce buffer", c->cache_path, bs);
			break;
		} else {
			h->bounced = true;
		}
		atomic_fetch_add_explicit(&REQ_PENDING(req), 1, memory_order_relaxed);
		ret = wc_blk_aread(c, &h->r);
		if (ret != 2)
			atomic_fetch_sub_explicit(&REQ_PENDING(req), 1, memory_order_relaxed);
		if (ret == 0) { /* a miss: into the run */
			if (h->bounced)
				free(h->r.buf);
			free(h);
			all = false;
			if (!run_n++)
				run_start = i;
			continue;
		}
		if (ret == 2) { /* in flight: hit_done later */
			all = false;
			ret = 0;
		} else if (ret == 1) { /* read now */
			hit_end(h, 1);
			ret = 0;
		} else {
			if (h->bounced)
				free(h->r.buf);
			free(h);
		}
		if (run_n && !ret) {
			ret = miss_submit(c, req, run_start * bs, (size_t)run_n * bs);
			run_n = 0;
		}
	}
	if (run_n && !ret)
		ret = miss_submit(c, req, run_start * bs, (size_t)run_n * bs);
	return ret ? ret : all;
}

/* ---- submit ---- */

static int check_request(struct wc_cache *c, struct wc_request *req)
{
	ssize_t len;
	int ret;

	if (req->size != sizeof(*req))
		return wc_err(-EINVAL, "%s submit: request size %u, this library's is %zu (wc_request_init "
		              "sets it)", c->cache_path, req->size, sizeof(*req));
	if (!req->done)
		return wc_err(-EINVAL, "%s submit: no done() callback", c->cache_path);
	for (unsigned i = 0; i < sizeof(req->reserved) / sizeof(req->reserved[0]); i++)
		if (req->reserved[i])
			return wc_err(-EINVAL, "%s submit: reserved[%u] is not 0", c->cache_path, i);
	switch (req->op) {
	case WC_REQ_READ:
	case WC_REQ_WRITE: {
		const char *op = req->op == WC_REQ_READ ? "read" : "write";
		unsigned known = req->op == WC_REQ_READ ? WC_REQ_NO_READAHEAD : WC_FUA;

		if (req->flags & ~known)
			return wc_err(-EINVAL, "%s submit %s: unknown flags 0x%x", c->cache_path, op,
			              req->flags & ~known);
		len = wc_iov_total(c, op, req->iov, req->iovcnt);
		if (len < 0)
			return (int)len;
		ret = wc_io_check(c, op, req->iov, (size_t)len, req->offset);
		if (ret)
			return ret;
		req->len = (uint64_t)len;
		return req->op == WC_REQ_WRITE ? wc_io_write_checked(c, "write", req->offset) : 0;
	}
	case WC_REQ_FLUSH:
		if (req->flags)
			return wc_err(-EINVAL, "%s submit flush: unknown flags 0x%x", c->cache_path, req->flags);
		return 0;
	case WC_REQ_WRITEBACK:
		if (req->len == 0 && req->offset == 0)
			goto flags;
		/* fall through */
	case WC_REQ_DISCARD:
	case WC_REQ_INVALIDATE:
		ret = wc_io_check(c, req->op == WC_REQ_DISCARD ? "discard" : req->op == WC_REQ_INVALIDATE
		                  ? "invalidate" : "write-back", req, (size_t)req->len, req->offset);
		if (ret)
			return ret;
	flags:
		if (req->flags)
			return wc_err(-EINVAL, "%s submit: unknown flags 0x%x", c->cache_path, req->flags);
		return 0;
	}
	return wc_err(-EINVAL, "%s submit: unknown op %u", c->cache_path, req->op);
}

/* What may complete here without waiting: 1 = done (result in the
 * request), 0 = not without waiting. */
static int try_now(struct wc_cache *c, struct wc_request *req)
{
	ssize_t res;

	if (c->blk)
		return 0;
	switch (req->op) {
	case WC_REQ_READ:
		res = read_hits(c, req, false);
		if (res == 0)
			return 0;
		res = res > 0 ? (ssize_t)req->len : res;
		break;
	case WC_REQ_WRITE:
		res = wc_io_writev(c, req->iov, req->iovcnt, req->offset, (size_t)req->len, req->flags, true);
		if (res == -EAGAIN)
			return 0;
		break;
	case WC_REQ_FLUSH:
		res = wc_flush(c);
		break;
	default:
		return 0;
	}
	REQ_RES(req) = res;
	keep_message(req, res);
	return 1;
}

void wc_request_init_size(struct wc_request *req, size_t size)
{
	if (!req)
		return;
	memset(req, 0, size < sizeof(*req) ? size : sizeof(*req));
	req->size = (uint32_t)size;
}

int wc_submit(wc_cache *c, struct wc_request *req)
{
	struct wc_async *a;
	int ret;

	if (!c)
		return wc_err(-EINVAL, "wc_submit: NULL cache");
	if (!req)
		return wc_err(-EINVAL, "%s submit: NULL request", c->cache_path);
	ret = check_request(c, req);
	if (ret)
		return ret;
	a = c->async;
	memset(req->internal, 0, sizeof(req->internal));
	atomic_fetch_add_explicit(&a->inflight, 1, memory_order_relaxed);
	if (try_now(c, req)) {
		deliver(c, req);
		return 0;
	}
	if (!c->cfg.no_threads) {
		ret = queue_for_threads(c, req);
		if (ret)
			atomic_fetch_sub_explicit(&a->inflight, 1, memory_order_relaxed);
		return ret;
	}
	/* No thread of ours: only what the host's polls can finish. */
	if (req->op == WC_REQ_READ) {
		pthread_mutex_lock(&a->lock);
		ret = efd_locked(c, a);
		pthread_mutex_unlock(&a->lock);
		if (ret >= 0) {
			/* One share for this call: done() cannot run before
			 * every miss went out. */
			REQ_PENDING(req) = 1;
			ret = read_hits(c, req, true);
			if (ret < 0) {
				REQ_RES(req) = ret;
				keep_message(req, ret);
			} else {
				REQ_RES(req) = (int64_t)req->len;
			}
			read_part_done(c, req);
			return 0;
		}
	} else if (req->op == WC_REQ_WRITE && !wc_writeback_cleaning(c) &&
	           (!c->blk || !wc_blk_write_has_room(c, req->len))) {
		ret = wc_err(-EAGAIN, "%s submit write at %llu: no free block; the host's wc_poll_timeout "
		             "calls make room (write-back)", c->cache_path, (unsigned long long)req->offset);
	} else {
		/* The block medium's writes and flushes, writes around the
		 * cache in cleaner mode, discards, write-back: the
		 * synchronous call, here. */
		ssize_t res = run(c, req);

		if (req->op != WC_REQ_READ && req->op != WC_REQ_WRITE && res > 0)
			res = 0;
		REQ_RES(req) = res;
		keep_message(req, res);
		deliver(c, req);
		return 0;
	}
	atomic_fetch_sub_explicit(&a->inflight, 1, memory_order_relaxed);
	return ret;
}

/* ---- delivery and the event loop ---- */

int wc_event_fd(wc_cache *c)
{
	int ret;

	if (!c)
		return wc_err(-EINVAL, "wc_event_fd: NULL cache");
	pthread_mutex_lock(&c->async->lock);
	ret = efd_locked(c, c->async);
	pthread_mutex_unlock(&c->async->lock);
	return ret;
}

/* Under reap_lock: move what completed since into `ready`, oldest first
 * (the stack holds the newest first). */
static void take_incoming(struct wc_async *a)
{
	struct wc_request *r = atomic_exchange_explicit(&a->incoming, NULL, memory_order_acquire);
	struct wc_request *first = NULL, *last = r;

	while (r) {
		struct wc_request *next = REQ_NEXT(r);

		REQ_NEXT(r) = first;
		first = r;
		r = next;
	}
	if (!first)
		return;
	if (a->ready_tail)
		REQ_NEXT(a->ready_tail) = first;
	else
		a->ready = first;
	a->ready_tail = last;
}

static bool completions_waiting(struct wc_async *a)
{
	bool any;

	if (atomic_load_explicit(&a->incoming, memory_order_relaxed))
		return true;
	pthread_mutex_lock(&a->reap_lock);
	any = a->ready != NULL;
	pthread_mutex_unlock(&a->reap_lock);
	return any;
}

/* Run up to `budget` completions' done() here. */
static unsigned deliver_some(struct wc_cache *c, unsigned budget)
{
	struct wc_async *a = c->async;
	unsigned n = 0;

	while (n < budget) {
		struct wc_request *req;

		pthread_mutex_lock(&a->reap_lock);
		if (!a->ready)
			take_incoming(a);
		req = a->ready;
		if (req) {
			a->ready = REQ_NEXT(req);
			if (!a->ready)
				a->ready_tail = NULL;
		}
		pthread_mutex_unlock(&a->reap_lock);
		if (!req)
			break;
		deliver(c, req);
		n++;
	}
	/* Some may be left: keep the descriptor readable. */
	if (n == budget && completions_waiting(a))
		efd_signal(a);
	return n;
}

/* A per-thread address: who polls. */
static __thread char this_thread;

static void note_poller(struct wc_cache *c)
{
	atomic_store_explicit(&c->async->poll_ms, wc_now_ms(c), memory_order_relaxed);
	atomic_store_explicit(&c->async->poller, (uintptr_t)&this_thread, memory_order_relaxed);
}

bool wc_async_polled_elsewhere(struct wc_cache *c, uint32_t within_ms)
{
	struct wc_async *a = c->async;
	uintptr_t who = atomic_load_explicit(&a->poller, memory_order_relaxed);

	return who && who != (uintptr_t)&this_thread &&
	       wc_now_ms(c) - atomic_load_explicit(&a->poll_ms, memory_order_relaxed) < within_ms;
}

bool wc_async_origin_busy(struct wc_cache *c)
{
	return atomic_load_explicit(&c->async->origin_reads, memory_order_relaxed) != 0;
}

int wc_next_deadline_ms(wc_cache *c)
{
	struct wc_async *a;
	bool pending;

	if (!c)
		return wc_err(-EINVAL, "wc_next_deadline_ms: NULL cache");
	a = c->async;
	pending = completions_waiting(a);
	if (pending)
		return 0;
	if (!c->cfg.no_threads)
		return -1;
	return wc_host_work_deadline_ms(c);
}

int wc_poll_timeout(wc_cache *c, unsigned budget, int timeout_ms)
{
	struct wc_async *a;
	int units = 0, ret;

	if (!c)
		return wc_err(-EINVAL, "wc_poll_timeout: NULL cache");
	if (timeout_ms < -1)
		return wc_err(-EINVAL, "%s poll: timeout %d ms (-1 = wait, 0 = never)", c->cache_path,
		              timeout_ms);
	a = c->async;
	if (c->cfg.no_threads)
		note_poller(c);
	for (int round = 0; round < 2; round++) {
		efd_clear(a);
		if (c->cfg.no_threads && budget) {
			ret = wc_host_work(c, budget);
			if (ret < 0)
				return ret;
			units += ret;
		}
		if ((unsigned)units < budget)
			units += (int)deliver_some(c, budget - (unsigned)units);
		if (units || timeout_ms == 0 || round)
			break;
		/* Nothing to do: wait for a completion, or for the cache's own
		 * deadline without threads. */
		{
			int wait = timeout_ms, due = c->cfg.no_threads ? wc_host_work_deadline_ms(c) : -1;
			struct pollfd p;

			if (due >= 0 && (wait < 0 || due < wait))
				wait = due;
			pthread_mutex_lock(&a->lock);
			ret = efd_locked(c, a);
			pthread_mutex_unlock(&a->lock);
			if (ret < 0)
				return ret;
			p = (struct pollfd){ .fd = ret, .events = POLLIN };
			if (wait != 0 && poll(&p, 1, wait) < 0 && errno != EINTR)
				return wc_err_sys(-errno, "%s poll: waiting for completions", c->cache_path);
		}
	}
	return units;
}

int wc_poll(wc_cache *c, unsigned budget)
{
	int n;

	if (!c)
		return wc_err(-EINVAL, "wc_poll: NULL cache");
	n = wc_poll_timeout(c, budget, 0);
	if (n != 0 || c->cfg.no_threads)
		return n;
	/* With requests in flight a 0 is "none completed yet", not "nothing
	 * to poll for". */
	if (!atomic_load_explicit(&c->async->inflight, memory_order_relaxed))
		return wc_err(-EOPNOTSUPP, "%s poll: the cache runs its own write-back thread (no_threads is "
		              "off): it needs no polling; wc_poll_timeout delivers wc_submit's completions",
		              c->cache_path);
	return 0;
}

/* ---- close ---- */

void wc_async_drain(struct wc_cache *c)
{
	struct wc_async *a = c->async;

	if (!a)
		return;
	/* The I/O threads finish what is queued. */
	pthread_mutex_lock(&a->lock);
	while (a->queue || a->busy)
		pthread_cond_wait(&a->idle, &a->lock);
	a->stop = true;
	pthread_cond_broadcast(&a->work);
	pthread_mutex_unlock(&a->lock);
	for (unsigned i = 0; i < a->nthreads; i++)
		pthread_join(a->threads[i], NULL);
	free(a->threads);
	a->threads = NULL;
	a->nthreads = 0;
	/* Misses still at the origin, and on the block medium hits still at
	 * the device (one may become a miss): their buffers are the
	 * caller's. */
	while (wc_async_origin_busy(c) || (c->blk && wc_blk_aread_busy(c))) {
		int ret;

		if (c->blk && wc_blk_aread_busy(c) && wc_blk_aread_poll(c, 1) < 0)
			break;
		if (!wc_async_origin_busy(c))
			continue;
		ret = wc_origin_poll(&c->origin, 1, 1000000);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN)
			break;
	}
	/* Every accepted request's done() runs before wc_close returns. */
	while (deliver_some(c, UINT32_MAX))
		;
}

void wc_async_fini(struct wc_cache *c)
{
	struct wc_async *a = c->async;

	if (!a)
		return;
	if (a->efd >= 0)
		close(a->efd);
	pthread_mutex_destroy(&a->lock);
	pthread_mutex_destroy(&a->reap_lock);
	pthread_cond_destroy(&a->work);
	pthread_cond_destroy(&a->idle);
	free(a);
	c->async = NULL;
}
