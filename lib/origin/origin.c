/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin.c -- backend-independent origin code: validating an embedder's ops
 * table, what a table offers beyond 0.4's, and synchronous I/O on top of
 * the asynchronous submit/poll pair.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "origin/module.h"
#include "origin/origin.h"
#include "util/bytes.h"

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

/* ---------------------------------------------------------------------
 * Tables with 0.5's fields
 *
 * A table handed to the 0.4 entry points may be one of a program built
 * before 0.5: its 8 ops may end the allocation.  So the library reads
 * ops_size and what follows only from tables it knows have them: its own
 * backends', and an embedder's table that the 0.5 entry points checked and
 * wrapped (sized_ops below, whose ctx is the embedder's origin).
 * --------------------------------------------------------------------- */

_Static_assert(WC_ORIGIN_OPS_SIZE_0_5 == sizeof(struct wc_origin_ops),
               "struct wc_origin_ops grew past 0.5's: check_sized must know the sizes of "
               "both, and docs/ABI.md the release that grew it");

/* Beyond this an ops_size is garbage (a table not initialised), not a
 * table of a later release. */
#define OPS_SIZE_MAX 4096u

static bool library_table(const struct wc_origin_ops *ops)
{
	return ops == &wc_origin_aio_ops || wc_module_ops_known(ops);
}

static int sized_size(void *ctx, uint64_t *bytes)
{
	return wc_origin_size(ctx, bytes);
}

static int sized_submit(void *ctx, struct wc_origin_io *io)
{
	return wc_origin_submit(ctx, io);
}

static int sized_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	return wc_origin_poll(ctx, min_events, timeout_ns);
}

static int sized_flush(void *ctx)
{
	return wc_origin_flush(ctx);
}

static int sized_discard(void *ctx, uint64_t offset, uint64_t len)
{
	return wc_origin_discard(ctx, offset, len);
}

static void sized_close(void *ctx)
{
	wc_origin_close(ctx);
	free(ctx);
}

static uint32_t sized_alignment(void *ctx)
{
	return wc_origin_alignment(ctx);
}

static const char *sized_describe(void *ctx)
{
	struct wc_origin *in = ctx;

	return in->ops->describe ? in->ops->describe(in->ctx) : NULL;
}

/* The wrapper of an embedder's checked table: it forwards every op, and
 * tells the cache to read the table inside as 0.5's.  Its own caps are
 * not read. */
static const struct wc_origin_ops sized_ops = {
	WC_ORIGIN_OPS_INIT,
	.size = sized_size,
	.submit = sized_submit,
	.poll = sized_poll,
	.flush = sized_flush,
	.discard = sized_discard,
	.close = sized_close,
	.alignment = sized_alignment,
	.describe = sized_describe,
};

/* The table of `o` that has 0.5's fields, with the ctx its ops take, into
 * *t; false for a table read as 0.4's. */
static bool sized_table(const struct wc_origin *o, struct wc_origin *t)
{
	if (o->ops == &sized_ops) {
		*t = *(const struct wc_origin *)o->ctx;
		return true;
	}
	if (library_table(o->ops)) {
		*t = *o;
		return true;
	}
	return false;
}

/* The fields 0.5 added, of a table that has them (`o` is not wrapped). */
static int check_sized(struct wc_origin *o)
{
	const struct wc_origin_ops *ops = o->ops;
	const uint64_t known = WC_ORIGIN_CAP_ASYNC_FLUSH | WC_ORIGIN_CAP_IDENTIFY;
	const char *d = wc_origin_describe(o);
	size_t size = ops->ops_size;

	if (size == 0) {
		/* Source written for 0.4, built with this header: the fields
		 * are there, zeroed by the initializer, unless set by hand. */
		if (ops->caps || ops->identify || !wc_all_zero(ops->reserved, sizeof(ops->reserved)))
			return wc_err(-EINVAL, "origin %s: struct wc_origin_ops: ops_size is 0 (a table "
			              "written for libwcache 0.4 or before) but caps, identify or "
			              "reserved are set: set ops_size to sizeof(struct wc_origin_ops) "
			              "(WC_ORIGIN_OPS_INIT)", d);
		return 0;
	}
	if (size < WC_ORIGIN_OPS_SIZE_0_5 || size > OPS_SIZE_MAX || size % 8)
		return wc_err(-EINVAL, "origin %s: struct wc_origin_ops: ops_size %zu is not the size "
		              "of the table in any release (%zu in 0.5, the first with ops_size; "
		              "%zu in libwcache %s): set it to sizeof(struct wc_origin_ops) "
		              "(WC_ORIGIN_OPS_INIT)", d, size,
		              (size_t)WC_ORIGIN_OPS_SIZE_0_5, sizeof(*ops), WCACHE_VERSION_STRING);
	if (size > sizeof(*ops) && !wc_all_zero((const char *)ops + sizeof(*ops), size - sizeof(*ops)))
		return wc_err(-EINVAL, "origin %s: struct wc_origin_ops: ops_size %zu, and ops past "
		              "the %zu bytes libwcache %s knows are set (the program was built "
		              "against a newer libwcache)", d,
		              size, sizeof(*ops), WCACHE_VERSION_STRING);
	if (ops->caps & ~known)
		return wc_err(-EINVAL, "origin %s: struct wc_origin_ops: caps 0x%llx has bits 0x%llx "
		              "that libwcache %s does not know (the program was built against a "
		              "newer libwcache)", d,
		              (unsigned long long)ops->caps, (unsigned long long)(ops->caps & ~known),
		              WCACHE_VERSION_STRING);
	if ((ops->caps & WC_ORIGIN_CAP_IDENTIFY) && !ops->identify)
		return wc_err(-EINVAL, "origin %s: struct wc_origin_ops: caps has "
		              "WC_ORIGIN_CAP_IDENTIFY but identify is NULL",
		              d);
	if (!(ops->caps & WC_ORIGIN_CAP_IDENTIFY) && ops->identify)
		return wc_err(-EINVAL, "origin %s: struct wc_origin_ops: identify is set but caps "
		              "lacks WC_ORIGIN_CAP_IDENTIFY (the cache would not call it)",
		              d);
	for (unsigned i = 0; i < sizeof(ops->reserved) / sizeof(ops->reserved[0]); i++)
		if (ops->reserved[i])
			return wc_err(-EINVAL, "origin %s: struct wc_origin_ops: reserved[%u] is set "
			              "(an op of a newer libwcache, or a table not zeroed)",
			              d, i);
	return 0;
}

/* The ops every table must have (`o` is not wrapped). */
static int check_required(struct wc_origin *o)
{
	const struct wc_origin_ops *ops = o->ops;

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
	return 0;
}

int wc_origin_adopt(struct wc_origin *out, struct wc_origin in)
{
	struct wc_origin *w;
	int ret;

	*out = in;
	if (!in.ops)
		return wc_err(-EINVAL, "origin: no ops table");
	if (library_table(in.ops))
		return 0;
	ret = check_required(&in);
	if (!ret)
		ret = check_sized(&in);
	if (ret || !in.ops->caps)
		return ret; /* nothing to read beyond 0.4's table (identify needs its cap) */
	w = malloc(sizeof(*w));
	if (!w)
		return wc_err(-ENOMEM, "origin %s: out of memory", wc_origin_describe(&in));
	*w = in;
	*out = (struct wc_origin){ .ops = &sized_ops, .ctx = w };
	return 0;
}

void wc_origin_adopt_undo(struct wc_origin *adopted)
{
	if (adopted->ops == &sized_ops)
		free(adopted->ctx);
	adopted->ops = NULL;
	adopted->ctx = NULL;
}

int wc_origin_check(struct wc_origin *o)
{
	struct wc_origin in;
	uint64_t bytes = 0;
	uint32_t align;
	int ret;

	if (!o || !o->ops)
		return wc_err(-EINVAL, "origin: no ops table");
	in = *o;
	if (o->ops == &sized_ops)
		in = *(struct wc_origin *)o->ctx;
	ret = check_required(&in);
	if (!ret && o->ops == &sized_ops)
		ret = check_sized(&in);
	if (ret)
		return ret;
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

bool wc_origin_async_flush(const struct wc_origin *o)
{
	struct wc_origin t;

	return sized_table(o, &t) && (t.ops->caps & WC_ORIGIN_CAP_ASYNC_FLUSH);
}

int wc_origin_identify(struct wc_origin *o, struct wc_origin_identity *out, bool may_tag)
{
	struct wc_origin t;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!sized_table(o, &t) || !(t.ops->caps & WC_ORIGIN_CAP_IDENTIFY)) {
		/* Its size (checked by the cache) and its name. */
		out->kind = WC_ORIGIN_IDENTITY_CUSTOM;
		wc_origin_identity_set(out->name, sizeof(out->name), wc_origin_describe(o));
		return 0;
	}
	ret = t.ops->identify(t.ctx, out, may_tag ? WC_ORIGIN_IDENTIFY_MAY_TAG : 0);
	if (ret && library_table(t.ops))
		return ret; /* its message names the origin */
	if (ret)
		return wc_err_sys(ret < 0 ? ret : -EIO, "origin %s: identify()", wc_origin_describe(o));
	if (out->kind > WC_ORIGIN_IDENTITY_RBD)
		return wc_err(-EINVAL, "origin %s: identify() gave kind %u, not a "
		              "WC_ORIGIN_IDENTITY_* value", wc_origin_describe(o), (unsigned)out->kind);
	/* Whatever identify() wrote, the cache reads strings. */
	out->id[sizeof(out->id) - 1] = '\0';
	out->name[sizeof(out->name) - 1] = '\0';
	if (!out->name[0])
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
