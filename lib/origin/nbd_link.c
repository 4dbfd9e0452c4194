/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nbd_link.c -- the NBD backend's connections: connecting one within
 * a time bound, losing it, reconnecting with backoff, and driving libnbd's
 * state machines (nbd.h has the objects and the locking).
 *
 * Driving: libnbd makes progress only when told that its socket is ready
 * (nbd_aio_notify_read/write); its completion callbacks run inside those
 * calls.  One thread at a time drives every connection of the origin: it
 * ppolls their sockets plus an eventfd, notifies libnbd, and the callbacks
 * queue the completed requests.  The other pollers meanwhile sleep on a
 * condition variable that a queued completion, or the driver stepping
 * down, wakes.  One driver keeps the ordering simple; the data themselves
 * move in the kernel's recv/send, which libnbd does inside the driver's
 * notify calls.  The eventfd brings a sleeping driver back when a submit
 * leaves bytes to send (libnbd wants POLLOUT, which the driver did not ask
 * for) or when a reconnect adds a socket.
 *
 * A server that goes away: its socket reads EOF or an error, libnbd marks
 * the handle dead and fails every command on it with ENOTCONN (the
 * callbacks run, so in-flight requests complete with an error, never
 * hang).  The slot is then empty; the next request that finds no
 * connection reconnects it, at once the first time, then no more often
 * than every reconnect_min_ns doubling up to reconnect_max_ns, so that a
 * server that stays down costs a refused connect now and then, not one per
 * request.  A server that hangs (stopped, partitioned) is caught by the
 * driver: a connection with commands in flight and no reply for
 * io_timeout_ns is shut down, which libnbd then sees as above; its
 * commands fail with ETIMEDOUT.
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "origin/nbd.h"

/* The longest single ppoll of the driver: new sockets and timeouts are
 * looked at between two. */
#define NBD_DRIVE_SLICE_NS 100000000ull /* 100 ms */
/* How long a polite disconnect (NBD_CMD_DISC) may take at close. */
#define NBD_CLOSE_WAIT_NS 200000000ull  /* 200 ms */

static _Thread_local const struct nbd_origin *driving_now;

static struct timespec ns_timespec(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
	                          .tv_nsec = (long)(ns % 1000000000ull) };
}

static short poll_events(unsigned dir)
{
	return (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
	               ((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0));
}

/* Tell libnbd what ppoll saw; -1 when libnbd failed (nbd_get_error says). */
static int notify(struct nbd_handle *h, short revents)
{
	unsigned dir = nbd_aio_get_direction(h);

	/* Both ways ready: read first, a reply may change what to send. */
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && (dir & LIBNBD_AIO_DIRECTION_READ))
		return nbd_aio_notify_read(h);
	if ((revents & (POLLOUT | POLLHUP | POLLERR)) && (dir & LIBNBD_AIO_DIRECTION_WRITE))
		return nbd_aio_notify_write(h);
	return 0;
}

/* ------------------------------------------------------------ connecting */

static void link_free(struct nbd_link *l)
{
	nbd_close(l->h);
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}

/* Drive the handshake of `h` until it is ready for commands. */
static int handshake(struct nbd_handle *h, uint64_t deadline, unsigned long long timeout_ms,
                     char *why, size_t why_len)
{
	while (!nbd_aio_is_ready(h)) {
		struct pollfd pfd;
		struct timespec ts;
		uint64_t now = wc_clock_ns();
		unsigned dir;
		int r;

		if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h)) {
			snprintf(why, why_len, "the server closed the connection during the handshake");
			return -ECONNRESET;
		}
		if (now >= deadline) {
			snprintf(why, why_len, "no answer within %llu ms", timeout_ms);
			return -ETIMEDOUT;
		}
		dir = nbd_aio_get_direction(h);
		pfd = (struct pollfd){ .fd = nbd_aio_get_fd(h), .events = poll_events(dir) };
		if (pfd.fd < 0 || !pfd.events) {
			snprintf(why, why_len, "libnbd is in no state to connect (%s)",
			         nbd_connection_state(h) ? nbd_connection_state(h) : "?");
			return -EIO;
		}
		ts = ns_timespec(deadline - now < NBD_DRIVE_SLICE_NS ? deadline - now : NBD_DRIVE_SLICE_NS);
		r = ppoll(&pfd, 1, &ts, NULL);
		if (r < 0 && errno != EINTR) {
			r = -errno;
			snprintf(why, why_len, "ppoll: %s", strerror(-r));
			return r;
		}
		if (r > 0 && notify(h, pfd.revents) == -1) {
			r = wc_nbd_errno();
			snprintf(why, why_len, "%s", nbd_get_error());
			return r;
		}
	}
	return 0;
}

/* Is what we reached the export the origin was opened on, usable as slot
 * `conn`? */
static int check_export(const struct nbd_origin *o, unsigned conn, struct nbd_handle *h,
                        char *why, size_t why_len)
{
	int64_t size = nbd_get_size(h);

	if (size < 0) {
		snprintf(why, why_len, "%s", nbd_get_error());
		return wc_nbd_errno();
	}
	if (nbd_is_read_only(h) == 1) {
		snprintf(why, why_len, "the export is read-only, and a write-back cache writes its "
		         "blocks to the origin (serve it writable: nbdkit without -r)");
		return -EROFS;
	}
	if (o->size && (uint64_t)size < o->size) {
		snprintf(why, why_len, "the export has %lld bytes now, %llu when the origin was opened",
		         (long long)size, (unsigned long long)o->size);
		return -EIO;
	}
	/* Without multi-conn, a second connection may cache writes the
	 * first one's flush does not cover (the NBD spec). */
	if (conn > 0 && nbd_can_multi_conn(h) != 1) {
		snprintf(why, why_len, "the server no longer offers multi-conn, so only one connection is safe");
		return -EIO;
	}
	return 0;
}

int wc_nbd_link_connect(struct nbd_origin *o, unsigned conn, uint64_t timeout_ns,
                        struct nbd_link **out, char *why, size_t why_len)
{
	uint64_t deadline = wc_clock_ns() + timeout_ns;
	struct nbd_link *l = calloc(1, sizeof(*l));
	char name[32];
	int ret;

	*out = NULL;
	if (!l) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	l->fd = -1;
	l->conn = conn;
	l->h = nbd_create();
	if (!l->h) {
		snprintf(why, why_len, "nbd_create: %s", nbd_get_error());
		free(l);
		return wc_nbd_errno();
	}
	snprintf(name, sizeof(name), "wcache-%u", conn);
	nbd_set_handle_name(l->h, name);
	/* The asynchronous connect, so that a host that never answers costs
	 * timeout_ns, not the kernel's SYN retries (minutes). */
	if (nbd_aio_connect_uri(l->h, o->uri) == -1) {
		ret = wc_nbd_errno();
		snprintf(why, why_len, "%s", nbd_get_error());
		goto fail;
	}
	ret = handshake(l->h, deadline, (unsigned long long)(timeout_ns / 1000000), why, why_len);
	if (!ret)
		ret = check_export(o, conn, l->h, why, why_len);
	if (ret)
		goto fail;
	/* Our own descriptor of the socket: libnbd closes its own when the
	 * connection dies, and the number may then be reused by anyone; ours
	 * stays ours until link_free (ppoll and the timeout's shutdown use it). */
	l->fd = fcntl(nbd_aio_get_fd(l->h), F_DUPFD_CLOEXEC, 0);
	if (l->fd < 0) {
		ret = -errno;
		snprintf(why, why_len, "dup of the socket: %s", strerror(errno));
		goto fail;
	}
	l->can_flush = nbd_can_flush(l->h) == 1;
	l->can_trim = nbd_can_trim(l->h) == 1;
	atomic_init(&l->refs, 1);
	atomic_init(&l->inflight, 0);
	atomic_init(&l->progress_ns, wc_clock_ns());
	atomic_init(&l->timed_out, false);
	*out = l;
	return 0;
fail:
	link_free(l);
	return ret;
}

/* ------------------------------------------------------- slots and links */

struct nbd_link *wc_nbd_link_get(struct nbd_origin *o, unsigned conn)
{
	struct nbd_conn *c = &o->conns[conn];
	struct nbd_link *l;

	pthread_mutex_lock(&c->lock);
	l = c->cur;
	if (l)
		atomic_fetch_add(&l->refs, 1);
	pthread_mutex_unlock(&c->lock);
	return l;
}

void wc_nbd_link_put(struct nbd_link *l)
{
	if (l && atomic_fetch_sub(&l->refs, 1) == 1)
		link_free(l);
}

void wc_nbd_conn_install(struct nbd_origin *o, unsigned conn, struct nbd_link *l)
{
	struct nbd_conn *c = &o->conns[conn];

	pthread_mutex_lock(&c->lock);
	c->cur = l;
	c->backoff_ns = o->opts.reconnect_min_ns;
	pthread_mutex_unlock(&c->lock);
}

void wc_nbd_link_lost(struct nbd_origin *o, struct nbd_link *l, const char *why)
{
	struct nbd_conn *c = &o->conns[l->conn];
	bool mine = false;

	pthread_mutex_lock(&c->lock);
	if (c->cur == l) {
		c->cur = NULL;
		mine = true;
		/* The first attempt at once: the server may be back already
		 * (a restart), or it fails fast. */
		c->next_attempt_ns = wc_clock_ns();
		c->backoff_ns = o->opts.reconnect_min_ns;
		if (atomic_load(&l->timed_out))
			snprintf(c->why, sizeof(c->why), "connection %u dropped: no reply for %llu ms",
			         l->conn, (unsigned long long)(o->opts.io_timeout_ns / 1000000));
		else
			snprintf(c->why, sizeof(c->why), "connection %u lost: %s", l->conn, why);
	}
	pthread_mutex_unlock(&c->lock);
	if (mine) {
		wc_nbd_writers_poison(o, l->conn);
		wc_nbd_link_put(l);
	}
}

struct nbd_link *wc_nbd_conn_reconnect(struct nbd_origin *o, unsigned conn, int *err,
                                       bool *attempted)
{
	struct nbd_conn *c = &o->conns[conn];
	struct nbd_link *l = NULL;
	char why[NBD_WHY_LEN - 64], was[NBD_WHY_LEN];
	uint64_t now, wait_ns;
	int ret;

	pthread_mutex_lock(&c->lock);
	if (c->cur) { /* another thread got there first */
		l = c->cur;
		atomic_fetch_add(&l->refs, 1);
		pthread_mutex_unlock(&c->lock);
		return l;
	}
	now = wc_clock_ns();
	if (conn > 0 && !atomic_load(&o->multi_conn)) {
		pthread_mutex_unlock(&c->lock);
		*err = wc_err(-ENOTCONN, "origin %s: connection %u stays closed: the server no longer "
		              "offers multi-conn", o->desc, conn);
		return NULL;
	}
	if (c->connecting || now < c->next_attempt_ns) {
		wait_ns = c->connecting ? 0 : c->next_attempt_ns - now;
		snprintf(was, sizeof(was), "%s", c->why);
		pthread_mutex_unlock(&c->lock);
		*err = wc_err(-ENOTCONN, "origin %s: not connected (%s); %s%llu ms", o->desc, was,
		              wait_ns ? "next reconnect attempt in " : "reconnecting now, for up to ",
		              (unsigned long long)((wait_ns ? wait_ns : o->opts.reconnect_timeout_ns) / 1000000));
		return NULL;
	}
	c->connecting = true;
	pthread_mutex_unlock(&c->lock);

	*attempted = true;
	ret = wc_nbd_link_connect(o, conn, o->opts.reconnect_timeout_ns, &l, why, sizeof(why));

	pthread_mutex_lock(&c->lock);
	c->connecting = false;
	if (ret == 0) {
		c->cur = l;
		c->backoff_ns = o->opts.reconnect_min_ns;
		atomic_fetch_add(&l->refs, 1); /* the caller's */
		if (conn == 0)
			atomic_store(&o->multi_conn, nbd_can_multi_conn(l->h) == 1);
	} else {
		wait_ns = c->backoff_ns;
		c->next_attempt_ns = wc_clock_ns() + wait_ns;
		c->backoff_ns = wait_ns * 2 < o->opts.reconnect_max_ns ? wait_ns * 2 : o->opts.reconnect_max_ns;
		snprintf(c->why, sizeof(c->why), "connection %u: reconnect failed: %s", conn, why);
	}
	pthread_mutex_unlock(&c->lock);
	if (ret == 0) {
		wc_nbd_wake(o); /* a socket for the driver to watch */
		return l;
	}
	*err = wc_err(ret, "origin %s: connection %u: reconnect failed: %s; next attempt in %llu ms",
	              o->desc, conn, why, (unsigned long long)(wait_ns / 1000000));
	return NULL;
}

void wc_nbd_link_shutdown(struct nbd_link *l)
{
	struct nbd_handle *h = l->h;

	if (nbd_aio_is_ready(h) && nbd_aio_disconnect(h, 0) == 0) {
		uint64_t deadline = wc_clock_ns() + NBD_CLOSE_WAIT_NS;

		while (!nbd_aio_is_dead(h) && !nbd_aio_is_closed(h)) {
			struct pollfd pfd = { .fd = l->fd,
			                      .events = poll_events(nbd_aio_get_direction(h)) };
			uint64_t now = wc_clock_ns();
			struct timespec ts;

			if (now >= deadline || !pfd.events)
				break;
			ts = ns_timespec(deadline - now);
			if (ppoll(&pfd, 1, &ts, NULL) > 0 && notify(h, pfd.revents) == -1)
				break;
		}
	}
	wc_nbd_link_put(l);
}

/* --------------------------------------------------------------- driving */

void wc_nbd_wake(struct nbd_origin *o)
{
	uint64_t one = 1;
	/* Nothing to do on failure: EAGAIN means the counter is full, so the
	 * driver wakes anyway. */
	ssize_t w = write(o->wakefd, &one, sizeof(one));

	(void)w;
}

bool wc_nbd_is_driver(const struct nbd_origin *o)
{
	return driving_now == o;
}

/* Shut down a link that had commands in flight and no reply for the
 * timeout; returns how long the driver may sleep before it checks again. */
static uint64_t check_timeout(struct nbd_origin *o, struct nbd_link *l, uint64_t now, uint64_t wait)
{
	uint64_t since, last, limit = o->opts.io_timeout_ns;

	if (!limit || !atomic_load(&l->inflight))
		return wait;
	/* Another thread may have made progress since `now` was read. */
	last = atomic_load(&l->progress_ns);
	since = now > last ? now - last : 0;
	if (since >= limit) {
		/* libnbd's next read then sees the end of the stream, marks
		 * the handle dead and fails its commands. */
		if (!atomic_exchange(&l->timed_out, true))
			shutdown(l->fd, SHUT_RDWR);
		return wait;
	}
	return limit - since < wait ? limit - since : wait;
}

static void drive(struct nbd_origin *o, uint64_t wait_ns)
{
	struct pollfd pfd[NBD_MAX_CONNS + 1];
	struct nbd_link *links[NBD_MAX_CONNS];
	uint64_t now = wc_clock_ns(), wait = wait_ns < NBD_DRIVE_SLICE_NS ? wait_ns : NBD_DRIVE_SLICE_NS;
	struct timespec ts;
	unsigned n = 0;
	int r;

	for (unsigned i = 0; i < o->nconns; i++) {
		struct nbd_link *l = wc_nbd_link_get(o, i);

		if (!l)
			continue;
		if (nbd_aio_is_dead(l->h) || nbd_aio_is_closed(l->h)) {
			/* Died in another thread's call (a submit's send). */
			wc_nbd_link_lost(o, l, "the connection died while sending");
			wc_nbd_link_put(l);
			continue;
		}
		wait = check_timeout(o, l, now, wait);
		pfd[n] = (struct pollfd){ .fd = l->fd, .events = poll_events(nbd_aio_get_direction(l->h)) };
		links[n++] = l;
	}
	pfd[n] = (struct pollfd){ .fd = o->wakefd, .events = POLLIN };
	ts = ns_timespec(wait);
	driving_now = o;
	r = ppoll(pfd, n + 1, &ts, NULL);
	if (r > 0 && (pfd[n].revents & POLLIN)) {
		uint64_t v;
		ssize_t got = read(o->wakefd, &v, sizeof(v)); /* reset the counter */

		(void)got;
	}
	for (unsigned k = 0; r > 0 && k < n; k++) {
		struct nbd_handle *h = links[k]->h;
		char why[NBD_WHY_LEN];
		int rc;

		if (!pfd[k].revents)
			continue;
		rc = notify(h, pfd[k].revents);
		if (rc == -1)
			snprintf(why, sizeof(why), "%s", nbd_get_error());
		if (rc == -1 || nbd_aio_is_dead(h) || nbd_aio_is_closed(h))
			wc_nbd_link_lost(o, links[k], rc == -1 ? why : "the server closed the connection");
	}
	driving_now = NULL;
	for (unsigned k = 0; k < n; k++)
		wc_nbd_link_put(links[k]);
}

void wc_nbd_step(struct nbd_origin *o, uint64_t wait_ns, struct nbd_req *own)
{
	pthread_mutex_lock(&o->lock);
	/* Checked under the lock that completions are queued under: no
	 * wake-up is lost between the caller's last look and the wait. */
	if (own ? atomic_load(&own->done) != 0 : o->done_head != NULL) {
		pthread_mutex_unlock(&o->lock);
		return;
	}
	if (o->driving) {
		if (wait_ns) {
			struct timespec ts = ns_timespec(wc_clock_ns() +
			                                 (wait_ns < NBD_DRIVE_SLICE_NS ? wait_ns : NBD_DRIVE_SLICE_NS));

			pthread_cond_timedwait(&o->cond, &o->lock, &ts);
		}
		pthread_mutex_unlock(&o->lock);
		return;
	}
	o->driving = true;
	pthread_mutex_unlock(&o->lock);
	drive(o, wait_ns);
	pthread_mutex_lock(&o->lock);
	o->driving = false;
	/* Waiters may take over: one of them may be waiting for more. */
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
}
