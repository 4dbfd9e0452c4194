/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin.h -- how the cache reaches its origin: dispatchers over the ops
 * table of wcache.h, a synchronous helper, validation, and the options of
 * the default (libaio) backend.
 *
 * The cache never calls o->ops->... directly: the dispatchers give optional
 * ops (discard, alignment, describe) one documented default each.  They
 * read only the 8 ops every table has had since 0.1; what 0.5 added is
 * read by origin.c alone, from the tables known to have it.
 */
#ifndef WC_ORIGIN_H
#define WC_ORIGIN_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "wcache.h"

static inline int wc_origin_size(struct wc_origin *o, uint64_t *bytes)
{
	return o->ops->size(o->ctx, bytes);
}

/* 0 or -errno; on failure done() is not called. */
static inline int wc_origin_submit(struct wc_origin *o, struct wc_origin_io *io)
{
	return o->ops->submit(o->ctx, io);
}

/* Completions reaped (their done() ran in this thread) or -errno. */
static inline int wc_origin_poll(struct wc_origin *o, unsigned min_events, uint64_t timeout_ns)
{
	return o->ops->poll(o->ctx, min_events, timeout_ns);
}

static inline int wc_origin_flush(struct wc_origin *o)
{
	return o->ops->flush(o->ctx);
}

/* For messages. */
static inline const char *wc_origin_op_name(enum wc_origin_op op)
{
	return op == WC_ORIGIN_WRITE ? "write" : op == WC_ORIGIN_FLUSH ? "flush" : "read";
}

/*
 * Which tables have 0.5's fields (ops_size, caps, identify): the library's
 * own backends' (libaio below, NBD and RBD in their modules, module.h), and
 * an embedder's passed to wc_create_origin_sized or wc_open_origin_sized,
 * which wc_origin_adopt wraps.  Any other table
 * is read as 0.4's, its 8 ops and not a byte more: it may belong to a
 * program built before 0.5, whose table ends there (docs/ABI.md).
 */
extern const struct wc_origin_ops wc_origin_aio_ops;

/* The size of struct wc_origin_ops in 0.5, the first with ops_size. */
#define WC_ORIGIN_OPS_SIZE_0_5 (offsetof(struct wc_origin_ops, reserved) + 8 * sizeof(void (*)(void)))

/*
 * An embedder's origin for the 0.5 entry points: check its table as one of
 * 0.5 or later (ops_size, caps, identify, reserved; -EINVAL + message
 * naming the field), and the required ops as wc_origin_check does.  *out
 * is `in` itself when the table offers nothing beyond 0.4's (or is the
 * library's own), else `in` wrapped so that the cache knows its table has
 * the fields; the wrapper closes `in` when closed.  On failure *out is
 * `in`, and nothing was allocated.
 */
int wc_origin_adopt(struct wc_origin *out, struct wc_origin in);
/* Free the wrapper of an adopted origin whose cache did not take it (the
 * caller still owns the origin inside, which stays open). */
void wc_origin_adopt_undo(struct wc_origin *adopted);

/*
 * Whether `o` takes WC_ORIGIN_FLUSH requests (its table declares
 * WC_ORIGIN_CAP_ASYNC_FLUSH).  Write-back then keeps the origin writing
 * while a round's flush runs (an fdatasync on a virtio disk measured
 * ~20 ms, the time 5-10 MB of random writes take); without, it calls
 * flush() and waits.  The library's backends take them: libaio as an
 * IOCB_CMD_FDSYNC, NBD as NBD_CMD_FLUSH (begun in the submitting thread:
 * its flush reports a dropped connection's lost writes to the thread that
 * wrote them), RBD as rbd_aio_flush.  A table read as 0.4's does not.
 */
bool wc_origin_async_flush(const struct wc_origin *o);

/*
 * What names and fingerprints an origin (identity.c, and each backend's
 * identify op): the cache records it at create and refuses to open with an
 * origin whose identity differs (bind.c).  struct wc_origin_identity is in
 * wcache.h: embedders fill it too.
 *
 * The identity of `o`: its table's identify(), or for a table without one
 * (an embedder's, or one read as 0.4's), name only from describe().
 * `may_tag` allows identify() to leave a mark on the origin that makes the
 * identity stronger (WC_ORIGIN_IDENTIFY_MAY_TAG), as wc_create and a
 * re-bind do; an open only reads.  0 or -errno with a message. */
int wc_origin_identify(struct wc_origin *o, struct wc_origin_identity *out, bool may_tag);
/* The identity of the file or block device open as `fd` (the libaio
 * backend's identify). */
int wc_origin_identify_fd(int fd, const char *path, struct wc_origin_identity *out, bool may_tag);
/* Copy `src` into a fixed field, cut to fit and always terminated. */
void wc_origin_identity_set(char *dst, size_t len, const char *src);
/* "block device", "file", "NBD export", "RBD image", "origin". */
const char *wc_origin_kind_name(unsigned kind);

/* -EOPNOTSUPP when the backend has no discard (or its medium refuses it):
 * discard is advisory, so the cache may ignore that code. */
static inline int wc_origin_discard(struct wc_origin *o, uint64_t offset, uint64_t len)
{
	if (!o->ops->discard)
		return wc_err(-EOPNOTSUPP, "origin %s: discard: not supported by this backend",
		              o->ops->describe ? o->ops->describe(o->ctx) : "(custom)");
	return o->ops->discard(o->ctx, offset, len);
}

static inline void wc_origin_close(struct wc_origin *o)
{
	o->ops->close(o->ctx);
}

/* Without an alignment op the backend takes any alignment. */
static inline uint32_t wc_origin_alignment(struct wc_origin *o)
{
	return o->ops->alignment ? o->ops->alignment(o->ctx) : 1;
}

static inline const char *wc_origin_describe(struct wc_origin *o)
{
	const char *d = o->ops->describe ? o->ops->describe(o->ctx) : NULL;

	return d ? d : "custom origin";
}

/*
 * Check an embedder's origin before the cache uses it: the required ops
 * (size, submit, poll, flush, close) are present, alignment() is a power of
 * two, and size() succeeds with a non-zero size; an adopted origin's table
 * also as wc_origin_adopt checks it.  -EINVAL + message naming the missing
 * op or the bad field; size()'s own error otherwise.
 */
int wc_origin_check(struct wc_origin *o);

/*
 * Read or write [off, off + len) synchronously: submit one request and drive
 * poll() until it completes.  A short transfer is completed by resubmitting
 * the remainder; a transfer of zero bytes is -EIO.  Returns 0 or -errno with
 * a message naming the origin, offset and length.
 *
 * Safe while other threads submit to and poll the same origin: completions
 * of their requests reaped here just run their callbacks, and ours may be
 * reaped by them.  Never returns while the request is in flight (the buffer
 * is the caller's), so a failing poll() is retried rather than returned.
 */
int wc_origin_rw_sync(struct wc_origin *o, enum wc_origin_op op, void *buf, size_t len,
                      uint64_t off);

/* Several ranges at once: every request submitted, then each waited for,
 * so a remote origin pays its latency once.  A request that fails or
 * transfers short is retried alone by wc_origin_rw_sync (whose message
 * names it); returns 0 or the first error, never with one in flight. */
struct wc_origin_range {
	void *buf;
	size_t len;
	uint64_t offset;
};
int wc_origin_rw_many(struct wc_origin *o, enum wc_origin_op op, const struct wc_origin_range *r,
                      unsigned n);

/* Which backend wc_origin_open() gives a name to. */
enum wc_origin_kind { WC_ORIGIN_KIND_PATH, WC_ORIGIN_KIND_NBD, WC_ORIGIN_KIND_RBD };
enum wc_origin_kind wc_origin_kind_of(const char *name);

/* Options of the libaio backend beyond wcache.h's wc_origin_open_aio(). */
struct wc_origin_aio_opts {
	unsigned queue_depth; /* 0 = 256 */
	bool force_buffered;  /* skip O_DIRECT: buffered I/O + fdatasync (as when
	                         the file system refuses O_DIRECT) */
};
int wc_origin_open_aio_opts(struct wc_origin *out, const char *path,
                            const struct wc_origin_aio_opts *opts);

/* Options of the NBD backend beyond wcache.h's wc_origin_open_nbd(); every
 * 0 means the default.  The backend is a module (module.h): its layout is
 * part of the module interface. */
struct wc_origin_nbd_opts {
	unsigned connections;          /* when the server offers multi-conn: 4, at
	                                  most 16; without multi-conn always 1 */
	unsigned io_timeout_ms;        /* a connection with commands in flight and
	                                  no reply this long is dropped, and they
	                                  fail with ETIMEDOUT: 60000 */
	unsigned connect_timeout_ms;   /* connecting at open: 30000 */
	unsigned reconnect_timeout_ms; /* one reconnect attempt (inside a submit,
	                                  flush or discard): 1000 */
	unsigned reconnect_min_ms;     /* between failed attempts, doubling from */
	unsigned reconnect_max_ms;     /*   min up to max: 100 and 1000 */
};
int wc_origin_open_nbd_opts(struct wc_origin *out, const char *uri,
                            const struct wc_origin_nbd_opts *opts);

/* What describe() of the NBD backend starts with: "nbd <uri> (N
 * connections[, multi-conn])". */
#define WC_ORIGIN_NBD_MODE "nbd"

/* What describe() of the libaio backend starts with, per mode (the cache
 * copies the mode into wc_stats.origin_mode). */
#define WC_ORIGIN_AIO_MODE_DIRECT   "libaio O_DIRECT"
#define WC_ORIGIN_AIO_MODE_BUFFERED "libaio buffered+fdatasync"

#endif
