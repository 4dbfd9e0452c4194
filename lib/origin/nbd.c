/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nbd.c -- the NBD origin backend: an NBD export through libnbd's
 * asynchronous API (nbd.h has the objects and the locking,
 * nbd_link.c the connections).  Its files make the module wcache-nbd.so,
 * loaded by the library at the first NBD origin (module.h).
 *
 * Requests: submit() turns a wc_origin_io into NBD commands on one
 * connection -- the least loaded -- and returns; it never waits for the
 * network (but see reconnecting, in nbd_link.c).  A scattered
 * buffer that is not contiguous in memory goes through one bounce copy:
 * NBD has no vectored write, and one command of a run costs less than a
 * command per block.  A request longer than the server takes in one
 * command becomes several.  libnbd's callbacks only queue the completed
 * request; poll() runs done(), never submit() (the cache may hold locks
 * around submit() that its callbacks take).
 *
 * Flush and trim, which the backend waits for itself: nbd_sync.c.
 * Durability across a lost connection: nbd_writers.c.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "origin/module.h"
#include "origin/nbd.h"
#include "util/error.h"

#define NBD_DEFAULT_CONNECTIONS 4
#define NBD_DEFAULT_IO_TIMEOUT_MS 60000
#define NBD_DEFAULT_CONNECT_TIMEOUT_MS 30000
#define NBD_DEFAULT_RECONNECT_TIMEOUT_MS 1000
#define NBD_DEFAULT_RECONNECT_MIN_MS 100
#define NBD_DEFAULT_RECONNECT_MAX_MS 1000
/* Without a server constraint: the NBD spec warns that a server may drop a
 * client sending more than 32 MiB at once, and libnbd refuses 64 MiB. */
#define NBD_MAX_CMD_BYTES (32u << 20)
/* Without a server constraint, NBD clients assume 512 (nbd_get_block_size). */
#define NBD_DEFAULT_ALIGN 512u

/* -------------------------------------------------------------- requests */

struct nbd_req *wc_nbd_req_new(struct nbd_origin *o, struct wc_origin_io *io, unsigned ncmds)
{
	struct nbd_req *r = calloc(1, sizeof(*r) + ncmds * sizeof(r->cmds[0]));

	if (!r)
		return NULL;
	r->io = io;
	r->o = o;
	r->ncmds = ncmds;
	atomic_init(&r->refs, (int)ncmds + 1);
	atomic_init(&r->err, 0);
	atomic_init(&r->done, 0);
	return r;
}

static void req_set_error(struct nbd_req *r, int err)
{
	int none = 0;

	atomic_compare_exchange_strong(&r->err, &none, err);
}

/* The last reference went: queue a caller's request for poll(), or mark
 * one of ours done.  Runs inside libnbd callbacks too. */
static void req_finish(struct nbd_req *r)
{
	struct nbd_origin *o = r->o;
	bool kick;

	if (r->tracked)
		wc_nbd_writer_done(o, r->writer);
	pthread_mutex_lock(&o->lock);
	if (r->io) {
		r->next = NULL;
		if (o->done_tail)
			o->done_tail->next = r;
		else
			o->done_head = r;
		o->done_tail = r;
	} else {
		atomic_store(&r->done, 1);
	}
	pthread_cond_broadcast(&o->cond);
	/* Completed outside the driver (a command failed inside another
	 * thread's libnbd call): the driver may sleep in ppoll. */
	kick = atomic_load(&o->driving) && !wc_nbd_is_driver(o);
	pthread_mutex_unlock(&o->lock);
	if (kick)
		wc_nbd_wake(o);
}

void wc_nbd_req_put(struct nbd_req *r)
{
	if (atomic_fetch_sub(&r->refs, 1) == 1)
		req_finish(r);
}

static int cmd_complete(void *user_data, int *error)
{
	struct nbd_cmd *c = user_data;

	c->err = *error;
	c->ran = true;
	return 1; /* retire it: nobody asks nbd_aio_command_completed */
}

/* libnbd's free callback: reached exactly once per command, after the
 * completion callback -- or without it, when the issuing call failed, and
 * then before that call returns -1 (its caller accounts for it). */
static void cmd_retire(void *user_data)
{
	struct nbd_cmd *c = user_data;
	struct nbd_link *l = c->link;
	int err = c->err;

	if (!c->ran)
		return;
	if (err == ENOTCONN && atomic_load(&l->timed_out))
		err = ETIMEDOUT;
	atomic_store(&l->progress_ns, wc_clock_ns());
	atomic_fetch_sub(&l->inflight, 1);
	if (err)
		req_set_error(c->req, err);
	wc_nbd_req_put(c->req);
}

/* Issue command `c` on its link; -1 as libnbd returns it (nbd_get_error
 * then says why, in this thread). */
int64_t wc_nbd_cmd_issue(struct nbd_cmd *c, enum cmd_kind kind, void *buf, uint64_t len,
                         uint64_t off)
{
	nbd_completion_callback cb = { .callback = cmd_complete, .user_data = c, .free = cmd_retire };
	struct nbd_link *l = c->link;
	int64_t cookie;

	c->ran = false;
	c->err = 0;
	/* The timeout runs from the last reply, or from leaving idle. */
	if (atomic_fetch_add(&l->inflight, 1) == 0)
		atomic_store(&l->progress_ns, wc_clock_ns());
	switch (kind) {
	case CMD_READ:
		cookie = nbd_aio_pread(l->h, buf, len, off, cb, 0);
		break;
	case CMD_WRITE:
		cookie = nbd_aio_pwrite(l->h, buf, len, off, cb, 0);
		break;
	case CMD_FLUSH:
		cookie = nbd_aio_flush(l->h, cb, 0);
		break;
	default:
		cookie = nbd_aio_trim(l->h, len, off, cb, 0);
		break;
	}
	if (cookie == -1)
		atomic_fetch_sub(&l->inflight, 1);
	return cookie;
}

/* After cmds [0, issued) of r went out and the next one failed: the rest
 * will never be retired by libnbd. */
void wc_nbd_req_abandon_rest(struct nbd_req *r, unsigned issued, int err)
{
	req_set_error(r, -err);
	atomic_fetch_sub(&r->refs, (int)(r->ncmds - issued));
}

/* The least loaded connection, reconnecting slots whose attempt is due;
 * NULL and *err (with wc_err's message) when there is none.  One failed
 * attempt is enough for one call: the other slots lead to the same server,
 * and each attempt may wait for a host that does not answer. */
struct nbd_link *wc_nbd_pick_link(struct nbd_origin *o, int *err)
{
	unsigned n = atomic_load(&o->multi_conn) ? o->nconns : 1;
	struct nbd_link *best = NULL;
	bool failed = false;
	char msg[512] = "";
	int first_err = 0;

	for (unsigned i = 0; i < n; i++) {
		struct nbd_link *l = wc_nbd_link_get(o, i);
		bool attempted = false;
		int e;

		if (!l && failed)
			continue;
		if (!l) {
			l = wc_nbd_conn_reconnect(o, i, &e, &attempted);
			if (!l) {
				failed |= attempted;
				if (!first_err) {
					first_err = e;
					snprintf(msg, sizeof(msg), "%s", wc_errmsg());
				}
				continue;
			}
		}
		if (!best || atomic_load(&l->inflight) < atomic_load(&best->inflight)) {
			wc_nbd_link_put(best);
			best = l;
		} else {
			wc_nbd_link_put(l);
		}
	}
	if (!best)
		*err = wc_err(first_err ? first_err : -ENOTCONN, "%s", msg);
	return best;
}

/* A link failed to take a command: if libnbd says it is dead, drop it and
 * say so (the caller may try another). */
bool wc_nbd_link_failed(struct nbd_origin *o, struct nbd_link *l, const char *why)
{
	if (!nbd_aio_is_dead(l->h) && !nbd_aio_is_closed(l->h))
		return false;
	wc_nbd_link_lost(o, l, why);
	return true;
}

/* ------------------------------------------------------ reads and writes */

static int check_request(struct nbd_origin *o, const struct wc_origin_io *io, uint64_t *len_out)
{
	uint64_t len = 0;

	if (io->op != WC_ORIGIN_READ && io->op != WC_ORIGIN_WRITE)
		return wc_err(-EINVAL, "origin %s: unknown op %d", o->desc, (int)io->op);
	if (!io->done)
		return wc_err(-EINVAL, "origin %s: %s at offset %llu: no done() callback", o->desc,
		              wc_origin_op_name(io->op), (unsigned long long)io->offset);
	if (io->iovcnt <= 0 || io->iovcnt > IOV_MAX || !io->iov)
		return wc_err(-EINVAL, "origin %s: %s at offset %llu: iovcnt %d outside 1..%d",
		              o->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset, io->iovcnt,
		              IOV_MAX);
	for (int i = 0; i < io->iovcnt; i++) {
		if (io->iov[i].iov_len && !io->iov[i].iov_base)
			return wc_err(-EINVAL, "origin %s: %s at offset %llu: buffer %d is NULL", o->desc,
			              wc_origin_op_name(io->op), (unsigned long long)io->offset, i);
		len += io->iov[i].iov_len;
	}
	/* NBD constrains offsets and lengths only; any buffer will do. */
	if ((io->offset | len) & (o->align - 1))
		return wc_err(-EINVAL, "origin %s: %s of %llu bytes at offset %llu: not aligned to %u bytes "
		              "(the server's block size)", o->desc, wc_origin_op_name(io->op),
		              (unsigned long long)len, (unsigned long long)io->offset, o->align);
	if (io->offset > o->size || len > o->size - io->offset)
		return wc_err(-EINVAL, "origin %s: %s of %llu bytes at offset %llu: beyond the end (%llu bytes)",
		              o->desc, wc_origin_op_name(io->op), (unsigned long long)len,
		              (unsigned long long)io->offset, (unsigned long long)o->size);
	*len_out = len;
	return 0;
}

/* The request's bytes as one buffer: the caller's when its pieces are
 * contiguous in memory, else a bounce copy (filled now for a write). */
static char *flat_buffer(const struct wc_origin_io *io, uint64_t len, void **bounce)
{
	const struct iovec *v = io->iov;
	char *b, *p;
	bool contiguous = true;

	*bounce = NULL;
	for (int i = 1; i < io->iovcnt && contiguous; i++)
		contiguous = (char *)v[i - 1].iov_base + v[i - 1].iov_len == (char *)v[i].iov_base;
	if (contiguous)
		return v[0].iov_base;
	b = malloc(len);
	if (!b)
		return NULL;
	p = b;
	if (io->op == WC_ORIGIN_WRITE)
		for (int i = 0; i < io->iovcnt; i++) {
			memcpy(p, v[i].iov_base, v[i].iov_len);
			p += v[i].iov_len;
		}
	*bounce = b;
	return b;
}

/* Issue r's commands on one connection; 0 once the first went out. */
static int issue_rw(struct nbd_origin *o, struct nbd_req *r, char *buf)
{
	const struct wc_origin_io *io = r->io;
	bool write = io->op == WC_ORIGIN_WRITE;

	/* A connection found dead here is dropped and the next one tried
	 * (with a reconnect), at most once per slot. */
	for (unsigned attempt = 0;; attempt++) {
		char why[NBD_WHY_LEN];
		struct nbd_link *l;
		unsigned i;
		int ret;

		l = wc_nbd_pick_link(o, &ret);
		if (!l)
			return wc_err(ret, "%s (%s of %llu bytes at offset %llu not sent)", wc_errmsg(),
			              wc_origin_op_name(io->op), (unsigned long long)r->len,
			              (unsigned long long)io->offset);
		if (write) {
			ret = wc_nbd_writer_note(o, l->conn);
			if (ret) {
				wc_nbd_link_put(l);
				return ret;
			}
		}
		for (i = 0; i < r->ncmds; i++) {
			uint64_t off = (uint64_t)i * o->max_cmd;
			uint64_t n = r->len - off < o->max_cmd ? r->len - off : o->max_cmd;

			r->cmds[i].req = r;
			r->cmds[i].link = l;
			if (wc_nbd_cmd_issue(&r->cmds[i], write ? CMD_WRITE : CMD_READ, buf + off, n,
			              io->offset + off) == -1)
				break;
		}
		if (i == r->ncmds || i > 0) {
			if (i < r->ncmds)
				wc_nbd_req_abandon_rest(r, i, wc_nbd_errno());
			if (write) { /* its completion balances the note */
				r->tracked = true;
				r->writer = pthread_self();
			}
			/* Bytes left to send, and a driver that polls only
			 * for replies: bring it round to ask for POLLOUT. */
			if ((nbd_aio_get_direction(l->h) & LIBNBD_AIO_DIRECTION_WRITE) &&
			    atomic_load(&o->driving))
				wc_nbd_wake(o);
			wc_nbd_link_put(l);
			return 0;
		}
		ret = wc_nbd_errno();
		snprintf(why, sizeof(why), "%s", nbd_get_error());
		if (write) /* nothing went out */
			wc_nbd_writer_done(o, pthread_self());
		if (wc_nbd_link_failed(o, l, why) && attempt < o->nconns) {
			wc_nbd_link_put(l);
			continue;
		}
		wc_nbd_link_put(l);
		return wc_err(ret, "origin %s: %s of %llu bytes at offset %llu: %s", o->desc,
		              wc_origin_op_name(io->op), (unsigned long long)r->len,
		              (unsigned long long)io->offset, why);
	}
}

static int onbd_submit(void *ctx, struct wc_origin_io *io)
{
	struct nbd_origin *o = ctx;
	struct nbd_req *r;
	uint64_t len = 0;
	void *bounce;
	char *buf;
	int ret;

	if (io->op == WC_ORIGIN_FLUSH) {
		if (!io->done)
			return wc_err(-EINVAL, "origin %s: flush request: no done() callback", o->desc);
		return wc_nbd_flush_submit(o, io);
	}
	ret = check_request(o, io, &len);
	if (ret)
		return ret;
	r = wc_nbd_req_new(o, io, (unsigned)((len + o->max_cmd - 1) / o->max_cmd));
	if (!r)
		return wc_err(-ENOMEM, "origin %s: %s at offset %llu: out of memory", o->desc,
		              wc_origin_op_name(io->op), (unsigned long long)io->offset);
	r->len = len;
	buf = flat_buffer(io, len, &bounce);
	if (!buf && len) {
		free(r);
		return wc_err(-ENOMEM, "origin %s: %s at offset %llu: no memory for a %llu-byte bounce buffer",
		              o->desc, wc_origin_op_name(io->op), (unsigned long long)io->offset,
		              (unsigned long long)len);
	}
	r->bounce = bounce;
	if (r->ncmds) {
		ret = issue_rw(o, r, buf);
		if (ret) {
			free(bounce);
			free(r);
			return ret;
		}
	}
	wc_nbd_req_put(r); /* the issuer's reference: the request may complete here */
	return 0;
}

/* Run the callbacks of the completed requests; returns how many. */
static unsigned deliver(struct nbd_origin *o)
{
	struct nbd_req *r, *next;
	unsigned n = 0;

	pthread_mutex_lock(&o->lock);
	r = o->done_head;
	o->done_head = o->done_tail = NULL;
	pthread_mutex_unlock(&o->lock);
	for (; r; r = next, n++) {
		struct wc_origin_io *io = r->io;
		int err = atomic_load(&r->err);
		ssize_t res = err ? -err : (ssize_t)r->len;

		next = r->next;
		if (r->flush)
			wc_nbd_writer_flush_end_of(o, r->writer, r->flush_snap, err ? -err : 0);
		if (!err && r->bounce && io->op == WC_ORIGIN_READ) {
			const char *p = r->bounce;

			for (int i = 0; i < io->iovcnt; i++) {
				memcpy(io->iov[i].iov_base, p, io->iov[i].iov_len);
				p += io->iov[i].iov_len;
			}
		}
		free(r->bounce);
		free(r);
		io->done(io, res); /* may free or reuse io */
	}
	return n;
}

static int onbd_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	struct nbd_origin *o = ctx;
	uint64_t start = wc_clock_ns();
	/* Saturate: "wait forever" is a huge timeout, not an overflow. */
	uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
	unsigned total = deliver(o);

	if (!min_events || total < min_events) {
		/* Without waiting: whatever the sockets hold already. */
		wc_nbd_step(o, 0, NULL);
		total += deliver(o);
	}
	while (total < min_events) {
		uint64_t now = wc_clock_ns();

		if (now >= deadline)
			break;
		wc_nbd_step(o, deadline - now, NULL);
		total += deliver(o);
	}
	return total > INT_MAX ? INT_MAX : (int)total;
}

/* ------------------------------------------------------------ other ops */

static int onbd_size(void *ctx, uint64_t *bytes)
{
	*bytes = ((struct nbd_origin *)ctx)->size;
	return 0;
}

static uint32_t onbd_alignment(void *ctx)
{
	return ((struct nbd_origin *)ctx)->align;
}

static const char *onbd_describe(void *ctx)
{
	return ((struct nbd_origin *)ctx)->desc;
}

static void origin_free(struct nbd_origin *o)
{
	struct nbd_req *r = o->done_head;

	/* The contract says nothing is in flight at close; what a poll()
	 * never delivered is dropped. */
	while (r) {
		struct nbd_req *next = r->next;

		free(r->bounce);
		free(r);
		r = next;
	}
	for (unsigned i = 0; i < NBD_MAX_CONNS; i++)
		pthread_mutex_destroy(&o->conns[i].lock);
	pthread_mutex_destroy(&o->lock);
	pthread_cond_destroy(&o->cond);
	pthread_mutex_destroy(&o->wlock);
	if (o->wakefd >= 0)
		close(o->wakefd);
	free(o->writers);
	free(o->uri);
	free(o);
}

static void onbd_close(void *ctx)
{
	struct nbd_origin *o = ctx;

	for (unsigned i = 0; i < o->nconns; i++) {
		struct nbd_conn *c = &o->conns[i];
		struct nbd_link *l;

		pthread_mutex_lock(&c->lock);
		l = c->cur;
		c->cur = NULL;
		pthread_mutex_unlock(&c->lock);
		if (l)
			wc_nbd_link_shutdown(l);
	}
	origin_free(o);
}

/* An NBD export has nothing stable to give beyond what it is called: its
 * URI, which names the server and the export. */
static int onbd_identify(void *ctx, struct wc_origin_identity *out, unsigned flags)
{
	struct nbd_origin *o = ctx;

	(void)flags;
	out->kind = WC_ORIGIN_IDENTITY_NBD;
	wc_origin_identity_set(out->name, sizeof(out->name), o->uri);
	return 0;
}

/* origin.c reads what follows the 0.4 ops only of tables it knows to have
 * it: this one is known through the module's descriptor (wc_module_self). */
static const struct wc_origin_ops nbd_ops = {
	WC_ORIGIN_OPS_INIT,
	.caps = WC_ORIGIN_CAP_ASYNC_FLUSH | WC_ORIGIN_CAP_IDENTIFY,
	.identify = onbd_identify,
	.size = onbd_size,
	.submit = onbd_submit,
	.poll = onbd_poll,
	.flush = wc_nbd_flush,
	.discard = wc_nbd_discard,
	.close = onbd_close,
	.alignment = onbd_alignment,
	.describe = onbd_describe,
};

/* ----------------------------------------------------------------- open */

static uint64_t ms_or(unsigned ms, unsigned dflt)
{
	return (uint64_t)(ms ? ms : dflt) * 1000000ull;
}

static struct nbd_origin *origin_alloc(const char *uri, const struct wc_origin_nbd_opts *opts)
{
	size_t desc_len = strlen(WC_ORIGIN_NBD_MODE) + strlen(uri) + 48;
	struct nbd_origin *o = calloc(1, sizeof(*o) + desc_len);
	pthread_condattr_t ca;

	if (!o)
		return NULL;
	o->wakefd = -1;
	o->uri = strdup(uri);
	o->opts = (struct nbd_opts_resolved){
		.connections = opts->connections ? opts->connections : NBD_DEFAULT_CONNECTIONS,
		.io_timeout_ns = ms_or(opts->io_timeout_ms, NBD_DEFAULT_IO_TIMEOUT_MS),
		.open_timeout_ns = ms_or(opts->connect_timeout_ms, NBD_DEFAULT_CONNECT_TIMEOUT_MS),
		.reconnect_timeout_ns = ms_or(opts->reconnect_timeout_ms, NBD_DEFAULT_RECONNECT_TIMEOUT_MS),
		.reconnect_min_ns = ms_or(opts->reconnect_min_ms, NBD_DEFAULT_RECONNECT_MIN_MS),
		.reconnect_max_ns = ms_or(opts->reconnect_max_ms, NBD_DEFAULT_RECONNECT_MAX_MS),
	};
	if (o->opts.reconnect_max_ns < o->opts.reconnect_min_ns)
		o->opts.reconnect_max_ns = o->opts.reconnect_min_ns;
	for (unsigned i = 0; i < NBD_MAX_CONNS; i++) {
		pthread_mutex_init(&o->conns[i].lock, NULL);
		snprintf(o->conns[i].why, sizeof(o->conns[i].why), "connection %u not made yet", i);
	}
	pthread_mutex_init(&o->lock, NULL);
	pthread_mutex_init(&o->wlock, NULL);
	/* Waits are timed on the monotonic clock, as every deadline here. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&o->cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&o->driving, false);
	atomic_init(&o->multi_conn, false);
	o->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	snprintf(o->desc, desc_len, "%s %s", WC_ORIGIN_NBD_MODE, uri);
	if (!o->uri || o->wakefd < 0) {
		origin_free(o);
		return NULL;
	}
	return o;
}

/* What the first connection learnt: size, block sizes, multi-conn. */
static int read_geometry(struct nbd_origin *o, struct nbd_handle *h, const char *uri)
{
	int64_t size = nbd_get_size(h);
	int64_t min = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
	int64_t max = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);

	if (size <= 0)
		return wc_err(-EINVAL, "origin nbd %s: the export is %lld bytes", uri, (long long)size);
	if (min > 65536 || (min > 0 && (min & (min - 1))))
		return wc_err(-EINVAL, "origin nbd %s: the server's minimum block size %lld is not a power "
		              "of two up to 64 KiB", uri, (long long)min);
	o->size = (uint64_t)size;
	o->align = min > 0 ? (uint32_t)min : NBD_DEFAULT_ALIGN;
	o->max_cmd = max > 0 && max < NBD_MAX_CMD_BYTES ? (uint64_t)max : NBD_MAX_CMD_BYTES;
	o->max_cmd &= ~(uint64_t)(o->align - 1);
	if (o->max_cmd == 0)
		o->max_cmd = o->align;
	atomic_store(&o->multi_conn, nbd_can_multi_conn(h) == 1);
	return 0;
}

/* The library's wc_origin_open_nbd_opts (module.c), once it loaded this
 * module. */
static int onbd_open(struct wc_origin *out, const char *uri, const struct wc_origin_nbd_opts *opts)
{
	static const struct wc_origin_nbd_opts defaults = { 0 };
	char why[NBD_WHY_LEN];
	struct nbd_origin *o;
	struct nbd_link *l;
	size_t desc_len;
	bool mc;
	int ret;

	if (!out || !uri || !*uri)
		return wc_err(-EINVAL, "origin nbd: open: %s", !out ? "no output origin" : "empty URI");
	if (!opts)
		opts = &defaults;
	if (opts->connections > NBD_MAX_CONNS)
		return wc_err(-EINVAL, "origin nbd %s: %u connections asked, at most %u", uri,
		              opts->connections, NBD_MAX_CONNS);
	o = origin_alloc(uri, opts);
	if (!o)
		return wc_err(-ENOMEM, "origin nbd %s: out of memory (or of file descriptors)", uri);
	ret = wc_nbd_link_connect(o, 0, o->opts.open_timeout_ns, &l, why, sizeof(why));
	if (ret) {
		origin_free(o);
		return wc_err(ret, "origin nbd %s: %s", uri, why);
	}
	ret = read_geometry(o, l->h, uri);
	if (ret) {
		wc_nbd_link_shutdown(l);
		origin_free(o);
		return ret;
	}
	wc_nbd_conn_install(o, 0, l);
	mc = atomic_load(&o->multi_conn);
	o->nconns = mc ? o->opts.connections : 1;
	for (unsigned i = 1; i < o->nconns; i++) {
		ret = wc_nbd_link_connect(o, i, o->opts.open_timeout_ns, &l, why, sizeof(why));
		if (ret) {
			ret = wc_err(ret, "origin nbd %s: connection %u of %u: %s", uri, i + 1, o->nconns, why);
			o->nconns = i;
			onbd_close(o);
			return ret;
		}
		wc_nbd_conn_install(o, i, l);
	}
	desc_len = strlen(WC_ORIGIN_NBD_MODE) + strlen(uri) + 48;
	snprintf(o->desc, desc_len, "%s %s (%u connection%s%s)", WC_ORIGIN_NBD_MODE, uri, o->nconns,
	         o->nconns == 1 ? "" : "s", mc ? ", multi-conn" : "");
	out->ops = &nbd_ops;
	out->ctx = o;
	return 0;
}

const struct wc_module wc_module_self = {
	.size = sizeof(struct wc_module),
	.abi = WC_MODULE_ABI,
	.version = WCACHE_VERSION_STRING,
	.name = "nbd",
	.ops = &nbd_ops,
	.open_nbd = onbd_open,
};
