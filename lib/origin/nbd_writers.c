/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nbd_writers.c -- the NBD backend's durability across a lost
 * connection (nbd.h has the objects).
 *
 * A write the server acknowledged is durable only after a flush; if the
 * connection (and maybe the server with its cache) is lost in between, a
 * flush on the next connection says nothing about it.  So each thread that
 * issued writes is noted with the connection slots they went through,
 * until a flush of its own succeeds; losing a slot marks the threads noted
 * on it, and the next flush of such a thread fails with -EIO, once: it must
 * write again what it wrote since its last flush (the cache's write-back
 * does: a failed round keeps its blocks dirty).  The cache issues its
 * writes and their flush from one thread (the write-back round, the
 * write-around), which is what makes the thread the right key.  A lost
 * connection costs at worst one needless round of rewrites (two with a
 * pipelining caller: lib/writeback.c also rewrites the round whose writes
 * were completing when a flush failed).
 *
 * A flush covers the writes that completed before it was sent.  So it
 * forgets a thread only if every write the thread issued had completed when
 * the flush began and none was issued since: writes still in flight (a
 * pipelined caller) stay noted, and a later loss still reaches them.  A
 * flush that succeeds covers those writes even if a connection was lost
 * while it ran: with multi-conn the server answered it after making every
 * completed write durable, without it the flush went to every connection.
 * A flush that fails tells its thread as much as the -EIO would, which
 * clears the mark of a loss.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "origin/nbd.h"

static struct nbd_writer *writer_find(struct nbd_origin *o, pthread_t self)
{
	for (size_t i = 0; i < o->nwriters; i++)
		if (pthread_equal(o->writers[i].tid, self))
			return &o->writers[i];
	return NULL;
}

static void writer_remove(struct nbd_origin *o, struct nbd_writer *w)
{
	*w = o->writers[--o->nwriters];
}

int wc_nbd_writer_note(struct nbd_origin *o, unsigned conn)
{
	pthread_t self = pthread_self();
	struct nbd_writer *w;

	pthread_mutex_lock(&o->wlock);
	w = writer_find(o, self);
	if (!w) {
		if (o->nwriters == o->capwriters) {
			size_t cap = o->capwriters ? o->capwriters * 2 : 8;
			struct nbd_writer *grown = realloc(o->writers, cap * sizeof(*grown));

			if (!grown) {
				pthread_mutex_unlock(&o->wlock);
				return wc_err(-ENOMEM, "origin %s: out of memory for the writer table", o->desc);
			}
			o->writers = grown;
			o->capwriters = cap;
		}
		w = &o->writers[o->nwriters++];
		*w = (struct nbd_writer){ .tid = self };
	}
	w->issued++;
	w->conns |= 1u << conn;
	pthread_mutex_unlock(&o->wlock);
	return 0;
}

/* Runs inside libnbd callbacks too (under the handle's lock): wlock is never
 * held across a libnbd call. */
void wc_nbd_writer_done(struct nbd_origin *o, pthread_t tid)
{
	struct nbd_writer *w;

	pthread_mutex_lock(&o->wlock);
	w = writer_find(o, tid);
	if (w)
		w->completed++;
	pthread_mutex_unlock(&o->wlock);
}

void wc_nbd_writers_poison(struct nbd_origin *o, unsigned conn)
{
	pthread_mutex_lock(&o->wlock);
	for (size_t i = 0; i < o->nwriters; i++)
		if (o->writers[i].conns & (1u << conn))
			o->writers[i].poisoned = true;
	pthread_mutex_unlock(&o->wlock);
}

/* No write count is this large: "something was in flight". */
#define SNAP_IN_FLIGHT UINT64_MAX

int wc_nbd_writer_flush_begin(struct nbd_origin *o, uint64_t *snap)
{
	struct nbd_writer *w;

	*snap = 0;
	pthread_mutex_lock(&o->wlock);
	w = writer_find(o, pthread_self());
	if (w && w->poisoned) {
		writer_remove(o, w);
		pthread_mutex_unlock(&o->wlock);
		return wc_err(-EIO, "origin %s: flush: a connection was lost after writes of this thread "
		              "completed on it and before they were flushed; the server may not hold them "
		              "durably: write them again", o->desc);
	}
	if (w)
		*snap = w->issued == w->completed ? w->issued : SNAP_IN_FLIGHT;
	pthread_mutex_unlock(&o->wlock);
	return 0;
}

void wc_nbd_writer_flush_end(struct nbd_origin *o, uint64_t snap, int ret)
{
	wc_nbd_writer_flush_end_of(o, pthread_self(), snap, ret);
}

void wc_nbd_writer_flush_end_of(struct nbd_origin *o, pthread_t tid, uint64_t snap, int ret)
{
	struct nbd_writer *w;

	pthread_mutex_lock(&o->wlock);
	w = writer_find(o, tid);
	if (w && w->issued == snap && w->completed == snap)
		writer_remove(o, w);   /* all of it covered, or all of it reported */
	else if (w && ret)
		w->poisoned = false;   /* reported; what was in flight stays noted */
	pthread_mutex_unlock(&o->wlock);
}
