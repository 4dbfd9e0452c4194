/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin.c -- backend-independent origin code: validating an embedder's ops
 * table and synchronous I/O on top of the asynchronous submit/poll pair.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "origin/origin.h"

/*
 * How long one poll() inside wc_origin_rw_sync may block.  Another thread
 * polling the same origin (the write-back thread, say) may reap our
 * completion and run our callback while we sleep in poll() waiting for an
 * event that will never come to us; only the end of the slice tells us.
 * So the slice starts short and doubles up to a cap: a stolen completion
 * costs at most about the request's own latency again (bounded by the cap),
 * and a slow device does not turn the wait into a busy loop.  A completion
 * we reap ourselves wakes us at once, whatever the slice.
 */
#define SYNC_POLL_SLICE_MIN_NS 50000ull   /* 50 us */
#define SYNC_POLL_SLICE_MAX_NS 1000000ull /* 1 ms */

/* After a failing poll(), pause before retrying so that a persistent error
 * does not spin a core (it is retried: see wc_origin_rw_sync). */
#define SYNC_POLL_ERROR_PAUSE_NS 100000L /* 100 us */

int wc_origin_check(struct wc_origin *o)
{
	const struct wc_origin_ops *ops;
	uint64_t bytes = 0;
	uint32_t align;
	int ret;

	if (!o || !o->ops)
		return wc_err(-EINVAL, "origin: no ops table");
	ops = o->ops;
	if (!ops->size)
		return wc_err(-EINVAL, "origin %s: ops table lacks size()", wc_origin_describe(o));
	if (!ops->submit)
		return wc_err(-EINVAL, "origin %s: ops table lacks submit()", wc_origin_describe(o));
	if (!ops->poll)
		return wc_err(-EINVAL, "origin %s: ops table lacks poll()", wc_origin_describe(o));
	if (!ops->flush)
		return wc_err(-EINVAL, "origin %s: ops table lacks flush()", wc_origin_describe(o));
	if (!ops->close)
		return wc_err(-EINVAL, "origin %s: ops table lacks close()", wc_origin_describe(o));
	align = wc_origin_alignment(o);
	if (align == 0 || (align & (align - 1)) != 0)
		return wc_err(-EINVAL, "origin %s: alignment() returned %u, not a power of two",
		              wc_origin_describe(o), align);
	ret = wc_origin_size(o, &bytes);
	if (ret < 0)
		return ret;
	if (bytes == 0)
		return wc_err(-EINVAL, "origin %s: size is 0 bytes", wc_origin_describe(o));
	return 0;
}

/*
 * What the built-in backends (and the tests' fault origin) can do beyond
 * wcache.h's ops table, declared when one of their origins opens: whether
 * it takes WC_ORIGIN_FLUSH, and how it names its origin (identity.c).
 * One table under a lock: an entry's fields are set together, declared once
 * per origin open and read once per cache open.
 */
#define TRAITS_MAX 8
static pthread_mutex_t traits_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const struct wc_origin_ops *ops;
	bool async_flush;
	wc_origin_identify_fn identify;
} traits[TRAITS_MAX];

/* The entry of `ops`, made if new; TRAITS_MAX when the table is full (then the
 * backend flushes synchronously and is named by describe(): correct, but
 * slower and weaker).  Under traits_lock. */
static unsigned traits_find(const struct wc_origin_ops *ops, bool make)
{
	unsigned i;

	for (i = 0; i < TRAITS_MAX && traits[i].ops; i++)
		if (traits[i].ops == ops)
			return i;
	if (!make || i == TRAITS_MAX)
		return TRAITS_MAX;
	traits[i].ops = ops;
	return i;
}

void wc_origin_declare_async_flush(const struct wc_origin_ops *ops)
{
	unsigned i;

	pthread_mutex_lock(&traits_lock);
	i = traits_find(ops, true);
	if (i < TRAITS_MAX)
		traits[i].async_flush = true;
	pthread_mutex_unlock(&traits_lock);
}

bool wc_origin_async_flush(const struct wc_origin *o)
{
	bool yes;
	unsigned i;

	pthread_mutex_lock(&traits_lock);
	i = traits_find(o->ops, false);
	yes = i < TRAITS_MAX && traits[i].async_flush;
	pthread_mutex_unlock(&traits_lock);
	return yes;
}

void wc_origin_declare_identity(const struct wc_origin_ops *ops, wc_origin_identify_fn fn)
{
	unsigned i;

	pthread_mutex_lock(&traits_lock);
	i = traits_find(ops, true);
	if (i < TRAITS_MAX)
		traits[i].identify = fn;
	pthread_mutex_unlock(&traits_lock);
}

int wc_origin_identify(struct wc_origin *o, struct wc_origin_identity *out, bool may_tag)
{
	wc_origin_identify_fn fn = NULL;
	unsigned i;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&traits_lock);
	i = traits_find(o->ops, false);
	if (i < TRAITS_MAX)
		fn = traits[i].identify;
	pthread_mutex_unlock(&traits_lock);
	if (fn)
		return fn(o->ctx, out, may_tag);
	/* An embedder's origin: its size (checked by the cache) and its name. */
	out->kind = WC_OID_CUSTOM;
	wc_origin_identity_set(out->name, sizeof(out->name), wc_origin_describe(o));
	return 0;
}

struct sync_request {
	struct wc_origin_io io;
	struct iovec iov;
	ssize_t res;
	atomic_int completed;
};

static void sync_request_done(struct wc_origin_io *io, ssize_t res)
{
	struct sync_request *req = io->priv;

	req->res = res;
	/* Release: publishes res.  This is the callback's last touch of req:
	 * the waiter may return (and its stack frame vanish) right after. */
	atomic_store_explicit(&req->completed, 1, memory_order_release);
}

static void sync_request_wait(struct wc_origin *o, struct sync_request *req)
{
	static const struct timespec pause = { 0, SYNC_POLL_ERROR_PAUSE_NS };
	uint64_t slice = SYNC_POLL_SLICE_MIN_NS;

	while (!atomic_load_explicit(&req->completed, memory_order_acquire)) {
		if (wc_origin_poll(o, 1, slice) < 0)
			nanosleep(&pause, NULL);
		slice = slice * 2 < SYNC_POLL_SLICE_MAX_NS ? slice * 2 : SYNC_POLL_SLICE_MAX_NS;
	}
}

int wc_origin_rw_sync(struct wc_origin *o, enum wc_origin_op op, void *buf, size_t len,
                      uint64_t off)
{
	struct sync_request req;
	size_t done_bytes = 0;
	int ret;

	if (op != WC_ORIGIN_READ && op != WC_ORIGIN_WRITE)
		return wc_err(-EINVAL, "origin %s: sync I/O: unknown op %d", wc_origin_describe(o),
		              (int)op);
	while (done_bytes < len) {
		size_t want = len - done_bytes;

		req.iov.iov_base = (char *)buf + done_bytes;
		req.iov.iov_len = want;
		req.io = (struct wc_origin_io){
			.op = op,
			.iov = &req.iov,
			.iovcnt = 1,
			.offset = off + done_bytes,
			.done = sync_request_done,
			.priv = &req,
		};
		req.res = 0;
		atomic_init(&req.completed, 0);
		ret = wc_origin_submit(o, &req.io);
		if (ret < 0)
			return ret; /* the backend's message names path and offset */
		sync_request_wait(o, &req);
		if (req.res < 0)
			return wc_err_sys((int)req.res, "origin %s: %s of %zu bytes at offset %llu",
			                  wc_origin_describe(o), wc_origin_op_name(op), want,
			                  (unsigned long long)(off + done_bytes));
		if (req.res == 0)
			return wc_err(-EIO, "origin %s: %s of %zu bytes at offset %llu transferred 0 bytes",
			              wc_origin_describe(o), wc_origin_op_name(op), want,
			              (unsigned long long)(off + done_bytes));
		if ((size_t)req.res > want)
			return wc_err(-EIO, "origin %s: %s of %zu bytes at offset %llu reported %zd bytes",
			              wc_origin_describe(o), wc_origin_op_name(op), want,
			              (unsigned long long)(off + done_bytes), req.res);
		done_bytes += (size_t)req.res;
	}
	return 0;
}

int wc_origin_rw_many(struct wc_origin *o, enum wc_origin_op op, const struct wc_origin_range *r,
                      unsigned n)
{
	struct sync_request one, *req = n > 1 ? calloc(n, sizeof(*req)) : &one;
	int ret = 0;

	if (!req)
		return wc_err(-ENOMEM, "origin %s: %u requests", wc_origin_describe(o), n);
	if (op != WC_ORIGIN_READ && op != WC_ORIGIN_WRITE)
		ret = wc_err(-EINVAL, "origin %s: I/O: unknown op %d", wc_origin_describe(o), (int)op);
	/* All in flight first: the origin sees them together (a remote one
	 * pays its latency once, not n times). */
	for (unsigned i = 0; i < n && !ret; i++) {
		req[i].iov.iov_base = r[i].buf;
		req[i].iov.iov_len = r[i].len;
		req[i].io = (struct wc_origin_io){
			.op = op,
			.iov = &req[i].iov,
			.iovcnt = 1,
			.offset = r[i].offset,
			.done = sync_request_done,
			.priv = &req[i],
		};
		atomic_init(&req[i].completed, 0);
		ret = wc_origin_submit(o, &req[i].io);
		if (ret) {
			/* Not in flight: nothing to wait for from here on. */
			n = i;
			break;
		}
	}
	/* Then each waited for (never return with one in flight: the buffers
	 * are the caller's); a short or failed one is finished or reported
	 * by the synchronous path, which names the offset. */
	for (unsigned i = 0; i < n; i++) {
		sync_request_wait(o, &req[i]);
		if (ret || req[i].res == (ssize_t)r[i].len)
			continue;
		if (req[i].res > 0 && (size_t)req[i].res < r[i].len)
			ret = wc_origin_rw_sync(o, op, (char *)r[i].buf + req[i].res,
			                        r[i].len - (size_t)req[i].res,
			                        r[i].offset + (uint64_t)req[i].res);
		else
			ret = wc_origin_rw_sync(o, op, r[i].buf, r[i].len, r[i].offset);
	}
	if (req != &one)
		free(req);
	return ret;
}

enum wc_origin_kind wc_origin_kind_of(const char *name)
{
	/* libnbd's URI schemes (nbd_connect_uri(3)); a path never has "://". */
	static const char *const nbd_schemes[] = {
		"nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://", "nbds+vsock://",
	};

	for (size_t i = 0; i < sizeof(nbd_schemes) / sizeof(nbd_schemes[0]); i++)
		if (strncmp(name, nbd_schemes[i], strlen(nbd_schemes[i])) == 0)
			return WC_ORIGIN_KIND_NBD;
	/* qemu's syntax; a relative path starting "rbd:" must be written ./rbd:... */
	if (strncmp(name, "rbd:", 4) == 0)
		return WC_ORIGIN_KIND_RBD;
	return WC_ORIGIN_KIND_PATH;
}

int wc_origin_open(struct wc_origin *out, const char *name)
{
	if (!out)
		return wc_err(-EINVAL, "wc_origin_open: no output origin");
	if (!name || !*name)
		return wc_err(-EINVAL, "wc_origin_open: empty origin name");
	switch (wc_origin_kind_of(name)) {
	case WC_ORIGIN_KIND_NBD:
		return wc_origin_open_nbd(out, name);
	case WC_ORIGIN_KIND_RBD:
		return wc_origin_open_rbd(out, name);
	case WC_ORIGIN_KIND_PATH:
		break;
	}
	return wc_origin_open_aio(out, name, 0);
}
