/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rbd.c -- the RBD origin backend: a Ceph RBD image through librbd's
 * asynchronous API (rbd_aio_*), named as qemu names it (rbd_spec.h).
 * With rbd_spec.c it makes the module wcache-rbd.so, loaded by the library
 * at the first RBD origin (module.h).
 *
 * Completions: librbd runs a request's callback in one of its own threads.
 * Calling done() there would run the cache's code in a thread the cache does
 * not know, possibly while librbd holds its own locks; so the callback only
 * parks the request on `ready` and wakes the pollers, and poll() runs done()
 * in the polling thread.  Each parked request is taken off the list by
 * exactly one poller, under `lock`, so done() runs exactly once however many
 * threads poll.  `lock` is never held across a librbd call or a done().
 *
 * Connecting: librados waits up to client_mount_timeout (300 s by default)
 * for a monitor; this backend sets 10 s unless the spec says otherwise, so
 * an unreachable cluster is an error in seconds.
 *
 * One writer: a write-back cache assumes the image changes only through
 * it.  When the image has the exclusive-lock feature the backend takes the
 * lock explicitly (rbd_lock_acquire), which also stops librbd from handing
 * it to another client that asks; a second cache on the image is refused
 * with -EBUSY naming the owner.
 *
 * librbd's own cache is turned off unless the spec turns it on: the cache
 * in front is persistent and already absorbs and orders writes, and
 * write-back flushes the origin before it lets blocks go, so librbd's
 * volatile copy would only add a memory copy per write.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "origin/module.h"
#include "origin/rbd_spec.h"
#include "util/clock.h"
#include "util/error.h"

#define RBD_ALIGN 512u
/* Seconds librados may spend finding a monitor and authenticating. */
#define RBD_DEFAULT_MOUNT_TIMEOUT "10"

struct rbd_origin {
	rados_t cluster;
	rados_ioctx_t ioctx;
	rbd_image_t image;
	uint64_t size;

	pthread_mutex_t lock;      /* guards ready_head/tail, waiters */
	pthread_cond_t cond;       /* a request was parked (CLOCK_MONOTONIC) */
	struct wc_origin_io *ready_head, *ready_tail;
	atomic_uint inflight;      /* submitted, callback not yet run */
	char *name;                /* "pool/image", for the identity */

	char desc[];               /* "librbd rbd:pool/image (conf ..., id ...)" */
};

/* io->backend[] while a request is with this backend. */
#define BK_NEXT   0  /* the ready list's link */
#define BK_RES    1  /* bytes requested, then the result for done() */
#define BK_ORIGIN 2  /* the struct rbd_origin */

/* ----------------------------------------------------------- completion */

/* In a librbd thread: park the request for poll(); nothing else. */
static void rbd_complete(rbd_completion_t comp, void *arg)
{
	struct wc_origin_io *io = arg;
	struct rbd_origin *r = (struct rbd_origin *)(uintptr_t)io->backend[BK_ORIGIN];
	ssize_t ret = rbd_aio_get_return_value(comp);
	uint64_t want = io->backend[BK_RES];
	ssize_t res;

	rbd_aio_release(comp);
	/* librbd reports a write as 0 and a read as the bytes read; done()
	 * takes bytes transferred for both. */
	if (ret < 0)
		res = ret;
	else if (io->op == WC_ORIGIN_FLUSH)
		res = 0;
	else if (io->op == WC_ORIGIN_WRITE)
		res = (ssize_t)want;
	else
		res = (uint64_t)ret > want ? -EIO : ret;
	io->backend[BK_RES] = (uint64_t)(int64_t)res;
	io->backend[BK_NEXT] = 0;

	pthread_mutex_lock(&r->lock);
	if (r->ready_tail)
		r->ready_tail->backend[BK_NEXT] = (uint64_t)(uintptr_t)io;
	else
		r->ready_head = io;
	r->ready_tail = io;
	/* Under the lock: close() may wait for inflight to reach 0 and
	 * free r as soon as it sees it. */
	atomic_fetch_sub_explicit(&r->inflight, 1, memory_order_release);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static int rbd_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	struct rbd_origin *r = ctx;
	uint64_t start = wc_clock_ns();
	/* Saturate: "wait forever" is a huge timeout, not an overflow. */
	uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
	struct timespec abs = { .tv_sec = (time_t)(deadline / 1000000000ull),
	                        .tv_nsec = (long)(deadline % 1000000000ull) };
	unsigned total = 0;

	for (;;) {
		struct wc_origin_io *io, *next;

		pthread_mutex_lock(&r->lock);
		while (!r->ready_head && total < min_events) {
			if (deadline == UINT64_MAX) {
				pthread_cond_wait(&r->cond, &r->lock);
			} else if (pthread_cond_timedwait(&r->cond, &r->lock, &abs) == ETIMEDOUT) {
				break;
			}
		}
		/* The whole list at once: a poll delivers what was parked
		 * when it looked, so callbacks that resubmit cannot keep a
		 * poll() from returning. */
		io = r->ready_head;
		r->ready_head = r->ready_tail = NULL;
		pthread_mutex_unlock(&r->lock);
		if (!io)
			return total > INT_MAX ? INT_MAX : (int)total;
		for (; io; io = next, total++) {
			next = (struct wc_origin_io *)(uintptr_t)io->backend[BK_NEXT];
			/* done() may free or reuse io: read everything first. */
			io->done(io, (ssize_t)(int64_t)io->backend[BK_RES]);
		}
		if (total >= min_events || wc_clock_ns() >= deadline)
			return total > INT_MAX ? INT_MAX : (int)total;
	}
}

/* ------------------------------------------------------------- requests */

static int check_request(struct rbd_origin *r, const struct wc_origin_io *io, uint64_t *lenp)
{
	uint64_t len = 0;

	if (io->op != WC_ORIGIN_READ && io->op != WC_ORIGIN_WRITE && io->op != WC_ORIGIN_FLUSH)
		return wc_err(-EINVAL, "origin %s: unknown op %d", r->desc, (int)io->op);
	if (!io->done)
		return wc_err(-EINVAL, "origin %s: %s at offset %llu: no done() callback", r->desc,
		              wc_origin_op_name(io->op), (unsigned long long)io->offset);
	if (io->op == WC_ORIGIN_FLUSH) {
		*lenp = 0;
		return 0;
	}
	if (io->iovcnt <= 0 || io->iovcnt > IOV_MAX || !io->iov)
		return wc_err(-EINVAL, "origin %s: %s at offset %llu: iovcnt %d outside 1..%d",
		              r->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset, io->iovcnt,
		              IOV_MAX);
	/* Lengths and offsets only: librbd copies from and to any buffer. */
	for (int i = 0; i < io->iovcnt; i++) {
		if (io->iov[i].iov_len & (RBD_ALIGN - 1))
			return wc_err(-EINVAL, "origin %s: %s at offset %llu: buffer %d is %zu bytes, not a multiple of %u",
			              r->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset, i,
			              io->iov[i].iov_len, RBD_ALIGN);
		len += io->iov[i].iov_len;
	}
	if (io->offset & (RBD_ALIGN - 1))
		return wc_err(-EINVAL, "origin %s: %s at offset %llu: offset not aligned to %u bytes",
		              r->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset, RBD_ALIGN);
	if (io->offset > r->size || len > r->size - io->offset)
		return wc_err(-EINVAL, "origin %s: %s of %llu bytes at offset %llu: beyond the end (%llu bytes)",
		              r->desc, wc_origin_op_name(io->op), (unsigned long long)len,
		              (unsigned long long)io->offset, (unsigned long long)r->size);
	*lenp = len;
	return 0;
}

static int rbd_submit(void *ctx, struct wc_origin_io *io)
{
	struct rbd_origin *r = ctx;
	rbd_completion_t comp;
	uint64_t len = 0;
	int ret;

	ret = check_request(r, io, &len);
	if (ret < 0)
		return ret;
	/* Set before the request starts: the callback may run before
	 * rbd_aio_* returns. */
	io->backend[BK_RES] = len;
	io->backend[BK_ORIGIN] = (uint64_t)(uintptr_t)r;
	ret = rbd_aio_create_completion(io, rbd_complete, &comp);
	if (ret < 0)
		return wc_err_sys(ret, "origin %s: %s at offset %llu: rbd_aio_create_completion",
		                  r->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset);
	atomic_fetch_add_explicit(&r->inflight, 1, memory_order_relaxed);
	if (io->op == WC_ORIGIN_FLUSH)
		ret = rbd_aio_flush(r->image, comp);
	else if (io->op == WC_ORIGIN_WRITE)
		ret = io->iovcnt == 1
		      ? rbd_aio_write(r->image, io->offset, io->iov[0].iov_len, io->iov[0].iov_base, comp)
		      : rbd_aio_writev(r->image, io->iov, io->iovcnt, io->offset, comp);
	else
		ret = io->iovcnt == 1
		      ? rbd_aio_read(r->image, io->offset, io->iov[0].iov_len, io->iov[0].iov_base, comp)
		      : rbd_aio_readv(r->image, io->iov, io->iovcnt, io->offset, comp);
	if (ret < 0) {
		/* Refused before it started: no callback will come. */
		atomic_fetch_sub_explicit(&r->inflight, 1, memory_order_relaxed);
		rbd_aio_release(comp);
		return wc_err_sys(ret, "origin %s: rbd_aio_%s of %llu bytes at offset %llu", r->desc,
		                  wc_origin_op_name(io->op), (unsigned long long)len,
		                  (unsigned long long)io->offset);
	}
	return 0;
}

/* ------------------------------------------------------------ other ops */

static int rbd_size_op(void *ctx, uint64_t *bytes)
{
	*bytes = ((struct rbd_origin *)ctx)->size;
	return 0;
}

/* Start `what` on a completion of its own and wait for it: flush and
 * discard are synchronous in the ops table. */
static ssize_t wait_own(rbd_completion_t comp, int started)
{
	ssize_t ret = started;

	if (started >= 0) {
		rbd_aio_wait_for_complete(comp);
		ret = rbd_aio_get_return_value(comp);
	}
	rbd_aio_release(comp);
	return ret;
}

static int rbd_flush_op(void *ctx)
{
	struct rbd_origin *r = ctx;
	rbd_completion_t comp;
	ssize_t ret = rbd_aio_create_completion(NULL, NULL, &comp);

	if (ret < 0)
		return wc_err_sys((int)ret, "origin %s: flush: rbd_aio_create_completion", r->desc);
	ret = wait_own(comp, rbd_aio_flush(r->image, comp));
	if (ret < 0)
		return wc_err_sys((int)ret, "origin %s: flush", r->desc);
	return 0;
}

static int rbd_discard_op(void *ctx, uint64_t offset, uint64_t len)
{
	struct rbd_origin *r = ctx;
	rbd_completion_t comp;
	ssize_t ret;

	if (len == 0)
		return 0;
	if (offset > r->size || len > r->size - offset)
		return wc_err(-EINVAL, "origin %s: discard of %llu bytes at offset %llu: beyond the end (%llu bytes)",
		              r->desc, (unsigned long long)len, (unsigned long long)offset,
		              (unsigned long long)r->size);
	ret = rbd_aio_create_completion(NULL, NULL, &comp);
	if (ret < 0)
		return wc_err_sys((int)ret, "origin %s: discard: rbd_aio_create_completion", r->desc);
	ret = wait_own(comp, rbd_aio_discard(r->image, offset, len, comp));
	if (ret < 0)
		return wc_err_sys((int)ret, "origin %s: discard of %llu bytes at offset %llu", r->desc,
		                  (unsigned long long)len, (unsigned long long)offset);
	return 0;
}

static void rbd_free(struct rbd_origin *r)
{
	if (r->image)
		rbd_close(r->image);
	if (r->ioctx)
		rados_ioctx_destroy(r->ioctx);
	if (r->cluster)
		rados_shutdown(r->cluster);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r->name);
	free(r);
}

static void rbd_close_op(void *ctx)
{
	struct rbd_origin *r = ctx;

	/* The contract says nothing is in flight; should a caller break it,
	 * wait for the callbacks rather than let them touch freed memory. */
	pthread_mutex_lock(&r->lock);
	while (atomic_load_explicit(&r->inflight, memory_order_acquire))
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	rbd_free(r);
}

static uint32_t rbd_alignment(void *ctx)
{
	(void)ctx;
	return RBD_ALIGN;
}

static const char *rbd_describe(void *ctx)
{
	return ((struct rbd_origin *)ctx)->desc;
}

/* The cluster, the pool and the image by their ids, which a rename of the
 * pool or the image keeps, and another image of the same name does not. */
static int rbd_identify(void *ctx, struct wc_origin_identity *out, unsigned flags)
{
	struct rbd_origin *r = ctx;
	char fsid[64] = "", image_id[96] = "";
	int ret;

	(void)flags;
	out->kind = WC_ORIGIN_IDENTITY_RBD;
	snprintf(out->name, sizeof(out->name), "rbd:%s", r->name);
	ret = rados_cluster_fsid(r->cluster, fsid, sizeof(fsid));
	if (ret < 0)
		return wc_err_sys(ret, "origin %s: rados_cluster_fsid", r->desc);
	ret = rbd_get_id(r->image, image_id, sizeof(image_id));
	/* A format-1 image has no id: its name is all there is. */
	if (ret == -EINVAL)
		return 0;
	if (ret < 0)
		return wc_err_sys(ret, "origin %s: rbd_get_id", r->desc);
	snprintf(out->id, sizeof(out->id), "cluster %s pool %lld image %s", fsid,
	         (long long)rados_ioctx_get_id(r->ioctx), image_id);
	return 0;
}

/* origin.c reads what follows the 0.4 ops only of tables it knows to have
 * it: this one is known through the module's descriptor (wc_module_self). */
static const struct wc_origin_ops rbd_ops = {
	WC_ORIGIN_OPS_INIT,
	.caps = WC_ORIGIN_CAP_ASYNC_FLUSH | WC_ORIGIN_CAP_IDENTIFY,
	.identify = rbd_identify,
	.size = rbd_size_op,
	.submit = rbd_submit,
	.poll = rbd_poll,
	.flush = rbd_flush_op,
	.discard = rbd_discard_op,
	.close = rbd_close_op,
	.alignment = rbd_alignment,
	.describe = rbd_describe,
};

/* ----------------------------------------------------------------- open */

/* The options this backend sets before the spec's own, which override them. */
static const struct wc_rbd_opt rbd_defaults[] = {
	{ "client_mount_timeout", RBD_DEFAULT_MOUNT_TIMEOUT },
	{ "rbd_cache", "false" },
};

static void conf_get(struct rbd_origin *r, const char *key, char *buf, size_t len)
{
	if (rados_conf_get(r->cluster, key, buf, len) < 0)
		snprintf(buf, len, "?");
}

static int connect_error(struct rbd_origin *r, int ret, const char *id)
{
	char timeout[32], mons[256];

	conf_get(r, "client_mount_timeout", timeout, sizeof(timeout));
	conf_get(r, "mon_host", mons, sizeof(mons));
	if (ret == -ETIMEDOUT)
		return wc_err(ret, "origin %s: no monitor answered within client_mount_timeout=%s s "
		              "(mon_host '%s')", r->desc, timeout, mons);
	if (ret == -EACCES || ret == -EPERM)
		return wc_err(ret, "origin %s: the cluster refused client.%s (wrong key or keyring?)",
		              r->desc, id);
	if (ret == -ENOENT && !*mons)
		return wc_err(ret, "origin %s: no monitor to connect to: give conf= or mon_host=",
		              r->desc);
	return wc_err_sys(ret, "origin %s: connecting to the cluster (mon_host '%s')", r->desc, mons);
}

/* Take the image's exclusive lock, if it has one, for good. */
static int lock_image(struct rbd_origin *r)
{
	uint64_t features = 0;
	rbd_lock_mode_t mode;
	char *owners[4];
	size_t n = 4;
	int ret;

	ret = rbd_get_features(r->image, &features);
	if (ret < 0)
		return wc_err_sys(ret, "origin %s: rbd_get_features", r->desc);
	if (!(features & RBD_FEATURE_EXCLUSIVE_LOCK))
		return 0;
	ret = rbd_lock_acquire(r->image, RBD_LOCK_MODE_EXCLUSIVE);
	if (ret == 0)
		return 0;
	if (rbd_lock_get_owners(r->image, &mode, owners, &n) == 0 && n > 0) {
		ret = wc_err(-EBUSY, "origin %s: the image is in use: its exclusive lock is held by %s "
		             "(another cache or client writing to it)", r->desc, owners[0]);
		rbd_lock_get_owners_cleanup(owners, n);
		return ret;
	}
	return wc_err_sys(ret, "origin %s: taking the image's exclusive lock", r->desc);
}

static int rbd_connect_open(struct rbd_origin *r, const struct wc_rbd_spec *s)
{
	const char *id = s->id;
	uint64_t size = 0;
	int ret;

	/* rados_create prefixes "client."; accept the full name too. */
	if (id && strncmp(id, "client.", 7) == 0)
		id += 7;
	ret = rados_create(&r->cluster, id);
	if (ret < 0) {
		r->cluster = NULL;
		return wc_err_sys(ret, "origin %s: rados_create", r->desc);
	}
	ret = rados_conf_read_file(r->cluster, s->conf);
	/* Without conf= a missing default ceph.conf is fine: mon_host may
	 * come from the spec or CEPH_ARGS. */
	if (ret < 0 && s->conf)
		return wc_err_sys(ret, "origin %s: reading conf %s", r->desc, s->conf);
	ret = rados_conf_parse_env(r->cluster, NULL);
	if (ret < 0)
		return wc_err_sys(ret, "origin %s: CEPH_ARGS", r->desc);
	for (size_t i = 0; i < sizeof(rbd_defaults) / sizeof(rbd_defaults[0]); i++) {
		ret = rados_conf_set(r->cluster, rbd_defaults[i].key, rbd_defaults[i].value);
		if (ret < 0)
			return wc_err_sys(ret, "origin %s: setting %s", r->desc, rbd_defaults[i].key);
	}
	for (size_t i = 0; i < s->nopts; i++) {
		ret = rados_conf_set(r->cluster, s->opts[i].key, s->opts[i].value);
		/* The value is not quoted: key= holds a secret. */
		if (ret == -ENOENT)
			return wc_err(-EINVAL, "origin %s: option '%s': no such librados/librbd option",
			              r->desc, s->opts[i].key);
		if (ret < 0)
			return wc_err_sys(ret, "origin %s: option '%s': librados refused its value",
			                  r->desc, s->opts[i].key);
	}
	ret = rados_connect(r->cluster);
	if (ret < 0)
		return connect_error(r, ret, id ? id : "admin");

	ret = rados_ioctx_create(r->cluster, s->pool, &r->ioctx);
	if (ret < 0) {
		r->ioctx = NULL;
		if (ret == -ENOENT)
			return wc_err(ret, "origin %s: pool '%s' does not exist", r->desc, s->pool);
		return wc_err_sys(ret, "origin %s: opening pool '%s'", r->desc, s->pool);
	}
	if (s->ns)
		rados_ioctx_set_namespace(r->ioctx, s->ns);
	ret = rbd_open(r->ioctx, s->image, &r->image, NULL);
	if (ret < 0) {
		r->image = NULL;
		if (ret == -ENOENT)
			return wc_err(ret, "origin %s: image '%s' does not exist in pool '%s'%s%s",
			              r->desc, s->image, s->pool, s->ns ? ", namespace " : "",
			              s->ns ? s->ns : "");
		return wc_err_sys(ret, "origin %s: opening image '%s'", r->desc, s->image);
	}
	ret = lock_image(r);
	if (ret < 0)
		return ret;
	ret = rbd_get_size(r->image, &size);
	if (ret < 0)
		return wc_err_sys(ret, "origin %s: rbd_get_size", r->desc);
	if (size == 0)
		return wc_err(-EINVAL, "origin %s: the image is 0 bytes (rbd resize it first)", r->desc);
	r->size = size;
	return 0;
}

/* The library's wc_origin_open_rbd (module.c), once it loaded this
 * module. */
static int rbd_origin_open(struct wc_origin *out, const char *spec_text)
{
	struct wc_rbd_spec spec;
	pthread_condattr_t attr;
	struct rbd_origin *r;
	size_t desc_len;
	char *name;
	int ret;

	if (!out || !spec_text)
		return wc_err(-EINVAL, "origin rbd: open: %s is NULL", out ? "spec" : "out");
	ret = wc_rbd_spec_parse(&spec, spec_text);
	if (ret < 0)
		return wc_err(ret, "origin %s", wc_errmsg());
	/* Every name below comes from spec_text, so this bounds them all. */
	desc_len = 3 * strlen(spec_text) + 64;
	name = malloc(desc_len);
	r = calloc(1, sizeof(*r) + desc_len);
	if (!name || !r) {
		free(name);
		free(r);
		wc_rbd_spec_free(&spec);
		return wc_err(-ENOMEM, "origin rbd: out of memory");
	}
	wc_rbd_spec_name(&spec, name, desc_len);
	snprintf(r->desc, desc_len, "librbd rbd:%s (conf %s, id %s)", name,
	         spec.conf ? spec.conf : "default", spec.id ? spec.id : "default");
	if (spec.snap) {
		ret = wc_err(-EROFS, "origin %s: @%s is a snapshot, and snapshots are read-only; a "
		             "write-back cache writes to its origin (name the image without @)",
		             r->desc, spec.snap);
		free(name);
		free(r);
		wc_rbd_spec_free(&spec);
		return ret;
	}
	r->name = name;
	pthread_mutex_init(&r->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &attr);
	pthread_condattr_destroy(&attr);
	atomic_init(&r->inflight, 0);

	ret = rbd_connect_open(r, &spec);
	wc_rbd_spec_free(&spec);
	if (ret < 0) {
		rbd_free(r);
		return ret;
	}
	out->ops = &rbd_ops;
	out->ctx = r;
	return 0;
}

const struct wc_module wc_module_self = {
	.size = sizeof(struct wc_module),
	.abi = WC_MODULE_ABI,
	.version = WCACHE_VERSION_STRING,
	.name = "rbd",
	.ops = &rbd_ops,
	.open_rbd = rbd_origin_open,
};
