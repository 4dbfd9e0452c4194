/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nbd.h -- the NBD backend's state, shared by its files:
 * nbd.c (reads and writes, poll, open/close), nbd_sync.c
 * (flush and trim), nbd_link.c (connections: connecting, losing and
 * regaining them, driving libnbd) and nbd_writers.c (durability
 * across a lost connection).
 *
 * Objects:
 *  - nbd_origin  the origin: up to NBD_MAX_CONNS connection slots, the queue
 *                of completed requests waiting for a poll(), and the table
 *                of threads whose writes a lost connection may have lost;
 *  - nbd_conn    one slot: the current link (NULL while disconnected) and
 *                when to try again;
 *  - nbd_link    one libnbd handle, i.e. one connection.  Reference
 *                counted, so that a thread may use the handle while another
 *                replaces the slot's link;
 *  - nbd_req     one request: a caller's wc_origin_io, or the backend's own
 *                flush or trim; split into nbd_cmds (one NBD command each).
 *
 * Locks (none is held across a callback of the cache, and none but libnbd's
 * own across a libnbd call):
 *  - nbd_conn.lock   the slot's fields;
 *  - nbd_origin.lock the completion queue and the driver flag; taken inside
 *                    libnbd's completion callbacks, i.e. under the handle's
 *                    lock, so libnbd is never called with it held;
 *  - nbd_origin.wlock the writer table.
 *
 * Invariant: a link's handle is closed (nbd_close, by the last reference)
 * only once libnbd reports it dead or closed -- by then libnbd has retired
 * every command on it -- or when the origin closes, with nothing in flight.
 * So a command never outlives its link, and commands hold no reference.
 */
#ifndef WC_ORIGIN_NBD_H
#define WC_ORIGIN_NBD_H

#include <libnbd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "origin/origin.h"
#include "util/clock.h"

#define NBD_MAX_CONNS 16
#define NBD_WHY_LEN 256

struct nbd_origin;

struct nbd_link {
	struct nbd_handle *h;
	int fd;
	unsigned conn;                 /* index of its slot */
	atomic_int refs;               /* users + 1 while it is the slot's link */
	atomic_uint inflight;          /* commands issued, not yet retired */
	_Atomic uint64_t progress_ns;  /* last retirement, or issue from idle */
	atomic_bool timed_out;         /* dropped for want of a reply */
	bool can_flush, can_trim;
};

struct nbd_conn {
	pthread_mutex_t lock;
	struct nbd_link *cur;          /* NULL while disconnected */
	bool connecting;               /* a thread is reconnecting it */
	uint64_t next_attempt_ns;      /* no reconnect attempt before this */
	uint64_t backoff_ns;           /* the wait after the next failed attempt */
	char why[NBD_WHY_LEN];         /* how it was lost, or the last attempt failed */
};

struct nbd_cmd {
	struct nbd_req *req;
	struct nbd_link *link;
	int err;                       /* libnbd's, for this command */
	bool ran;                      /* the completion callback was reached */
};

struct nbd_req {
	struct wc_origin_io *io;       /* NULL: the backend's own (flush, trim) */
	struct nbd_origin *o;
	struct nbd_req *next;          /* in the completion queue */
	void *bounce;                  /* a contiguous copy of a scattered buffer */
	uint64_t len;
	atomic_int refs;               /* commands outstanding + the issuer's */
	atomic_int err;                /* first error, a positive errno */
	atomic_int done;               /* own requests: complete */
	bool tracked;                  /* a write noted in the writer table */
	pthread_t writer;              /* ... issued by this thread (or the flush) */
	bool flush;                    /* a caller's flush request */
	uint64_t flush_snap;           /* its wc_nbd_writer_flush_begin snapshot */
	unsigned ncmds;
	struct nbd_cmd cmds[];
};

/* A thread that issued writes and has not flushed them all since. */
struct nbd_writer {
	pthread_t tid;
	uint64_t issued, completed;    /* its write requests (trims included) */
	uint32_t conns;                /* slots its writes went through */
	bool poisoned;                 /* one of those slots was lost since */
};

struct nbd_opts_resolved {
	unsigned connections;
	uint64_t io_timeout_ns, open_timeout_ns, reconnect_timeout_ns;
	uint64_t reconnect_min_ns, reconnect_max_ns;
};

struct nbd_origin {
	char *uri;
	uint64_t size;
	uint32_t align;
	uint64_t max_cmd;              /* bytes one read or write command carries */
	unsigned nconns;
	atomic_bool multi_conn;        /* as the server said at the last connect */
	struct nbd_opts_resolved opts;
	struct nbd_conn conns[NBD_MAX_CONNS];

	pthread_mutex_t lock;
	pthread_cond_t cond;           /* completions queued, a driver stopped */
	struct nbd_req *done_head, *done_tail;
	atomic_bool driving;           /* a thread drives the connections (set
	                                  under lock; read without it as a hint) */
	int wakefd;                    /* eventfd: wakes the driver out of ppoll */

	pthread_mutex_t wlock;
	struct nbd_writer *writers;
	size_t nwriters, capwriters;

	char desc[];                   /* "nbd <uri> (N connections, multi-conn)" */
};


/* ---- origin_nbd_link.c ---- */

/* Connect a new handle for slot `conn` within `timeout_ns` and check it
 * against what the origin was opened with (size, writable, multi-conn for
 * any slot but the first; at open, o->size is 0 and only writable counts).
 * 0 and *out, or -errno with `why` saying what happened. */
int wc_nbd_link_connect(struct nbd_origin *o, unsigned conn, uint64_t timeout_ns,
                        struct nbd_link **out, char *why, size_t why_len);
/* The slot's link with a reference, or NULL while it is disconnected. */
struct nbd_link *wc_nbd_link_get(struct nbd_origin *o, unsigned conn);
void wc_nbd_link_put(struct nbd_link *l);
/* libnbd found the link dead or closed: empty its slot, mark the writers
 * that went through it, allow a reconnect attempt at once. */
void wc_nbd_link_lost(struct nbd_origin *o, struct nbd_link *l, const char *why);
/* Reconnect slot `conn` if it is down and its next attempt is due (no other
 * thread attempting it): its link with a reference, or NULL and -errno in
 * *err with a message (wc_err) saying why, the next attempt included.
 * *attempted is set when it tried to connect (and may have waited up to
 * reconnect_timeout_ns for it). */
struct nbd_link *wc_nbd_conn_reconnect(struct nbd_origin *o, unsigned conn, int *err,
                                       bool *attempted);
/* Install a connected link as slot `conn`'s (at open). */
void wc_nbd_conn_install(struct nbd_origin *o, unsigned conn, struct nbd_link *l);
/* Disconnect politely within a short bound, then close (at origin close). */
void wc_nbd_link_shutdown(struct nbd_link *l);

/* Make progress on every connection for up to wait_ns, or -- while another
 * thread does that -- wait for it to deliver something.  Returns early when
 * `own` completes (own != NULL) or the completion queue is not empty. */
void wc_nbd_step(struct nbd_origin *o, uint64_t wait_ns, struct nbd_req *own);
/* Wake a driver sleeping in ppoll (a link to add, data to send). */
void wc_nbd_wake(struct nbd_origin *o);
/* Is this thread the one driving `o` (inside libnbd's notify calls)? */
bool wc_nbd_is_driver(const struct nbd_origin *o);

/* ---- origin_nbd.c: requests ---- */

enum cmd_kind { CMD_READ, CMD_WRITE, CMD_FLUSH, CMD_TRIM };

/* libnbd's errno of the call that just failed in this thread, negated
 * (-EIO when it gave none). */
static inline int wc_nbd_errno(void)
{
	int e = nbd_get_errno();

	return e > 0 ? -e : -EIO;
}

/* A request of `ncmds` commands; io NULL for the backend's own.  Holds
 * ncmds + 1 references: one per command and the issuer's. */
struct nbd_req *wc_nbd_req_new(struct nbd_origin *o, struct wc_origin_io *io, unsigned ncmds);
void wc_nbd_req_put(struct nbd_req *r);
/* Commands [issued, ncmds) never went out: drop their references, record
 * `err` (a negative errno) as the request's. */
void wc_nbd_req_abandon_rest(struct nbd_req *r, unsigned issued, int err);
/* Issue command c (c->req and c->link set) on its link; -1 as libnbd
 * returns it (nbd_get_error says why, in this thread). */
int64_t wc_nbd_cmd_issue(struct nbd_cmd *c, enum cmd_kind kind, void *buf, uint64_t len,
                         uint64_t off);
/* The least loaded connection (reconnecting a slot if due), with a
 * reference; NULL and *err with a message when there is none. */
struct nbd_link *wc_nbd_pick_link(struct nbd_origin *o, int *err);
/* After a failed issue: drop the link if libnbd says it is dead. */
bool wc_nbd_link_failed(struct nbd_origin *o, struct nbd_link *l, const char *why);

/* ---- origin_nbd_sync.c: the ops flush and discard, and flush requests ---- */

int wc_nbd_flush(void *ctx);
int wc_nbd_discard(void *ctx, uint64_t offset, uint64_t len);
/* A WC_ORIGIN_FLUSH request of the calling thread: begun now, its io's
 * done() run by poll() like a write's. */
int wc_nbd_flush_submit(struct nbd_origin *o, struct wc_origin_io *io);

/* ---- origin_nbd_writers.c ---- */

/* Before a write-like request through slot `conn`: note the calling
 * thread (0, or -ENOMEM with a message).  Each note is matched by one
 * wc_nbd_writer_done(), when the request completed or never went out. */
int wc_nbd_writer_note(struct nbd_origin *o, unsigned conn);
void wc_nbd_writer_done(struct nbd_origin *o, pthread_t tid);
/* The writers that went through slot `conn` may have lost data. */
void wc_nbd_writers_poison(struct nbd_origin *o, unsigned conn);
/* A flush by the calling thread: -EIO with a message if a loss touched
 * its writes (then it must not be sent), else 0 and *snap to pass to
 * ..._end with the flush's result. */
int wc_nbd_writer_flush_begin(struct nbd_origin *o, uint64_t *snap);
void wc_nbd_writer_flush_end(struct nbd_origin *o, uint64_t snap, int ret);
/* The same end for a flush request begun by thread `tid` (it completes in
 * whichever thread polls). */
void wc_nbd_writer_flush_end_of(struct nbd_origin *o, pthread_t tid, uint64_t snap, int ret);


#endif
