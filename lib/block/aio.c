/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aio.c -- records of writes without FUA in flight: the write returns once
 * its record is built, published and queued for the device, not once the
 * device has it.
 *
 * Such a write is not durable before the next device flush anyway, so
 * waiting for its device write bought nothing but latency: one writer
 * thread could keep one record in flight, and 4 writer threads got half of
 * what raw libaio at queue depth 32 gets from the same disk.  Now a thread
 * keeps up to WC_BLK_AIO_SLOTS records in flight (shared by all threads).
 *
 * A slot holds one record's buffer from its build to its completion.  Its
 * versions are published with WC_E_INFLIGHT: a read finds the slot by the
 * version's device offset and copies from its buffer.  `use` is odd from
 * the slot's queueing to its completion (a seqlock): a reader that saw it
 * change during its copy reads the device instead, which has the data by
 * then.  The completion clears the flags first, then counts the record
 * written (for wc_flush and the autocommit) and done (for its segment's
 * summary and write-back), then makes `use` even and frees the slot.
 *
 * Submission: one writer at a time submits the queue, its own record and
 * those other writers queued meanwhile (they return at once); records
 * adjacent on the device -- reserved one after the other -- go as one
 * request.  Each request costs a system call, a doorbell and an interrupt
 * (on this project's VM ~12 us of CPU per request): 4 fio jobs through the
 * engine went from 0.70 to 0.82 of raw libaio at queue depth 32, about 3
 * records per device write.
 *
 * Completion: by the writers, in batches -- the submitter takes what the
 * device has finished once REAP_AT records are in flight, without
 * waiting, and a writer that finds no free slot waits for the device in
 * io_getevents.  A completion thread asleep in io_getevents would be woken
 * by every completion (twice the context switches, measured); it only
 * sweeps up, every REAP_BUSY_MS, what no writer took (the last records of
 * a burst).
 *
 * wc_flush first waits for the slots busy when it was called: a write that
 * returned before the flush is then on the device before the device flush.
 *
 * Without threads (no_threads: the host's wc_poll drives the cache) there
 * is no completion thread: the host's polls take what the device finished
 * (wc_blk_aio_poll), as do the writers past REAP_AT and wc_flush.  Records
 * wait in the queue (up to PLUG_RECORDS) for the host's next poll, or for
 * anything that waits for records (wc_blk_aio_unplug), and its submitter
 * submits the whole queue.  A write then costs a copy into its slot, not
 * its device write: the epoll example's loop on the block medium, whose
 * every write was a synchronous O_DIRECT write, spent most of its blocked
 * time in them.
 *
 * With the test hooks (the power-failure simulator), or when the system has
 * no aio context left, the record is written at once and completed inline,
 * through the same steps.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block/block.h"
#include "core/cache.h"
#include "core/testhooks.h"
#include "util/error.h"

/* Records in flight at which a writer takes the finished ones itself. */
#define REAP_AT 16
/* Without threads, records queued before a writer submits them: the host's
 * next poll (or a flush, or anything that waits for records) submits the
 * rest, a loop's turn of writes as one request per run adjacent in the
 * ring.  One io_submit per record cost the epoll example's loop ~25 us of
 * each request. */
#define PLUG_RECORDS 32
/* The completion thread's sweep while records are in flight (with none,
 * it sleeps until one is submitted). */
#define REAP_BUSY_MS 1

/* A record's end: its versions leave the slot, it counts as written and
 * done.  True when the slot is to be freed (the caller frees a batch). */
static bool complete_record(struct wc_cache *c, struct wc_blk_aslot *s, int err)
{
	struct wc_blk *b = c->blk;

	if (err) {
		/* The cache's own device failed: sticky, as a synchronous
		 * record's failure.  The slot keeps its buffer and its versions
		 * their flag, so reads still see what the writes returned. */
		wc_set_error(c, -EIO, wc_errmsg());
		pthread_mutex_lock(&b->aio.lock);
		s->failed = true;
		b->aio.n_failed++;
		pthread_cond_broadcast(&b->aio.cond);
		pthread_mutex_unlock(&b->aio.lock);
		wc_blk_record_done(c, &s->r);
		return false;
	}
	for (unsigned i = 0; i < s->n; i++) {
		struct wc_entry *e = &c->e[s->idx[i]];
		struct wc_shard *sh = wc_shard_of(c, s->block + i);

		wc_spin_lock(&sh->lock);
		if ((e->flags & WC_E_INFLIGHT) && e->seq == s->r.seq && e->origin == s->block + i)
			wc_entry_set_flags(e, e->flags & ~WC_E_INFLIGHT);
		wc_spin_unlock(&sh->lock);
	}
	wc_blk_record_written(c, s->n, s->len);
	wc_blk_record_done(c, &s->r);
	return true;
}

static void free_slots(struct wc_cache *c, struct wc_blk_aslot *const *done, unsigned n)
{
	struct wc_blk *b = c->blk;

	if (!n)
		return;
	pthread_mutex_lock(&b->aio.lock);
	for (unsigned i = 0; i < n; i++) {
		atomic_fetch_add_explicit(&done[i]->use, 1, memory_order_release); /* even: free */
		b->aio.free[b->aio.n_free++] = (unsigned)(done[i] - b->aio.slots);
	}
	atomic_fetch_sub_explicit(&b->aio.in_flight, n, memory_order_relaxed);
	pthread_cond_broadcast(&b->aio.cond);
	pthread_mutex_unlock(&b->aio.lock);
}

static void complete(struct wc_cache *c, struct wc_blk_aslot *s, int err)
{
	if (complete_record(c, s, err))
		free_slots(c, &s, 1);
}

/* Complete the records the device has finished: at least min_nr, waiting
 * up to `ts` for them (NULL: not at all).  Any thread may: io_getevents
 * hands each event to one caller.  Returns the count, or -errno when the
 * context failed (the cache is then in error state). */
static int reap(struct wc_cache *c, long min_nr, const struct timespec *ts)
{
	struct wc_blk *b = c->blk;
	struct io_event ev[32];
	struct wc_blk_aslot *done[WC_BLK_AIO_SLOTS];
	struct timespec zero = { 0, 0 }, wait = ts ? *ts : zero;
	unsigned n_done = 0;
	int n = io_getevents(b->aio.ctx, min_nr, 32, ev, &wait);

	if (n == -EINTR)
		return 0;
	if (n < 0) {
		wc_set_error(c, -EIO, "block medium: io_getevents failed");
		/* Writers waiting for a slot see the error state. */
		pthread_mutex_lock(&b->aio.lock);
		pthread_cond_broadcast(&b->aio.cond);
		pthread_mutex_unlock(&b->aio.lock);
		return n;
	}
	for (int i = 0; i < n; i++) {
		struct wc_blk_aslot *s = ev[i].data;
		long res = (long)ev[i].res;
		int err = 0;

		if (res < 0)
			err = wc_err_sys((int)res, "%s: record: write of %zu bytes at %llu",
			                 c->cache_path, s->run_len, (unsigned long long)s->r.off);
		else if ((size_t)res != s->run_len)
			err = wc_err(-EIO, "%s: record: short write at %llu (%ld of %zu bytes)",
			             c->cache_path, (unsigned long long)s->r.off, res, s->run_len);
		for (struct wc_blk_aslot *next; s; s = next) {
			next = s->run_next;
			if (complete_record(c, s, err))
				done[n_done++] = s;
		}
	}
	free_slots(c, done, n_done);
	return n;
}

static void submit_queue(struct wc_cache *c, unsigned max_rounds);

static void *reaper(void *arg)
{
	struct wc_cache *c = arg;
	struct wc_blk *b = c->blk;

	for (;;) {
		struct timespec ts = wc_clock_deadline_ms(REAP_BUSY_MS);
		int n;

		bool handoff;

		pthread_mutex_lock(&b->aio.lock);
		if (!atomic_load(&b->aio.stop) && !b->aio.handoff) {
			if (atomic_load(&b->aio.in_flight))
				pthread_cond_timedwait(&b->aio.sweep, &b->aio.lock, &ts);
			else
				pthread_cond_wait(&b->aio.sweep, &b->aio.lock);
		}
		handoff = b->aio.handoff;
		b->aio.handoff = false;
		pthread_mutex_unlock(&b->aio.lock);
		if (handoff) {
			/* A writer left records queued: submit them (unless a
			 * writer became the submitter meanwhile). */
			pthread_mutex_lock(&b->aio.sub_lock);
			if (!b->aio.submitting && b->aio.n_queued) {
				b->aio.submitting = true;
				submit_queue(c, UINT_MAX);
			}
			pthread_mutex_unlock(&b->aio.sub_lock);
		}
		while ((n = reap(c, 0, NULL)) > 0)
			;
		if (n < 0)
			break;
		if (atomic_load(&b->aio.stop)) {
			bool idle;

			pthread_mutex_lock(&b->aio.lock);
			idle = b->aio.n_free + b->aio.n_failed == WC_BLK_AIO_SLOTS;
			pthread_mutex_unlock(&b->aio.lock);
			if (idle)
				break;
			/* Closing: wait for the device, not the clock. */
			ts = (struct timespec){ 0, 10 * 1000 * 1000 };
			if (reap(c, 1, &ts) < 0)
				break;
		}
	}
	return NULL;
}

int wc_blk_aio_start(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	int ret;

	b->aio.slots = calloc(WC_BLK_AIO_SLOTS, sizeof(*b->aio.slots));
	if (!b->aio.slots)
		return wc_err(-ENOMEM, "%s: record slots", c->cache_path);
	pthread_mutex_init(&b->aio.lock, NULL);
	pthread_cond_init(&b->aio.cond, NULL);
	pthread_cond_init(&b->aio.sweep, NULL);
	pthread_mutex_init(&b->aio.sub_lock, NULL);
	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++)
		b->aio.free[b->aio.n_free++] = WC_BLK_AIO_SLOTS - 1 - i;
	b->aio.inline_io = b->io != NULL;
	wc_blk_aread_start(c);
	if (b->aio.inline_io)
		return 0;
	ret = io_setup(WC_BLK_AIO_SLOTS, &b->aio.ctx);
	if (ret < 0) {
		/* Out of the system's aio contexts (fs.aio-max-nr): slower,
		 * still correct. */
		b->aio.inline_io = true;
		return 0;
	}
	if (c->cfg.no_threads)
		return 0; /* the host's polls reap */
	ret = pthread_create(&b->aio.thread, NULL, reaper, c);
	if (ret) {
		io_destroy(b->aio.ctx);
		return wc_err(-ret, "%s: record completion thread", c->cache_path);
	}
	b->aio.running = true;
	return 0;
}

void wc_blk_aio_stop(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	if (!b)
		return;
	wc_blk_aread_stop(c);
	if (!b->aio.slots)
		return;
	if (b->aio.running) {
		pthread_mutex_lock(&b->aio.lock);
		atomic_store(&b->aio.stop, true);
		pthread_cond_signal(&b->aio.sweep);
		pthread_mutex_unlock(&b->aio.lock);
		pthread_join(b->aio.thread, NULL);
		io_destroy(b->aio.ctx);
		b->aio.running = false;
	} else if (b->aio.ctx) {
		/* no_threads: what is still queued or in flight completes
		 * here. */
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		wc_blk_aio_unplug(c);
		while (atomic_load(&b->aio.in_flight) && reap(c, 1, &ts) >= 0)
			;
		io_destroy(b->aio.ctx);
	}
	b->aio.ctx = 0;
	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++)
		free(b->aio.slots[i].buf);
	free(b->aio.slots);
	b->aio.slots = NULL;
}

bool wc_blk_aio_on(struct wc_cache *c)
{
	return c->blk->aio.slots != NULL;
}

int wc_blk_aio_get(struct wc_cache *c, size_t len, struct wc_blk_aslot **out)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_aslot *s;

	pthread_mutex_lock(&b->aio.lock);
	while (!b->aio.n_free) {
		struct timespec ts = { 0, 1000 * 1000 };

		if (wc_has_error(c)) {
			pthread_mutex_unlock(&b->aio.lock);
			return wc_err(-EIO, "%s write: the cache is in error state (%d)", c->cache_path,
			              wc_has_error(c));
		}
		/* Every slot is in flight: the device's queue is full.  Wait
		 * for the device ourselves (another writer may take the event:
		 * then the slot it freed is seen here within the timeout). */
		if (b->aio.inline_io) {
			pthread_cond_wait(&b->aio.cond, &b->aio.lock);
			continue;
		}
		pthread_mutex_unlock(&b->aio.lock);
		wc_blk_aio_unplug(c);
		reap(c, 1, &ts);
		pthread_mutex_lock(&b->aio.lock);
	}
	s = &b->aio.slots[b->aio.free[--b->aio.n_free]];
	pthread_mutex_unlock(&b->aio.lock);
	if (s->cap < len) {
		void *p = NULL;

		if (posix_memalign(&p, 4096, len)) {
			wc_blk_aio_put(c, s);
			return wc_err(-ENOMEM, "%s write: %zu-byte record buffer", c->cache_path, len);
		}
		free(s->buf);
		s->buf = p;
		s->cap = len;
	}
	*out = s;
	return 0;
}

void wc_blk_aio_put(struct wc_cache *c, struct wc_blk_aslot *s)
{
	struct wc_blk *b = c->blk;

	pthread_mutex_lock(&b->aio.lock);
	b->aio.free[b->aio.n_free++] = (unsigned)(s - b->aio.slots);
	pthread_cond_broadcast(&b->aio.cond);
	pthread_mutex_unlock(&b->aio.lock);
}

void wc_blk_aio_mark_busy(struct wc_blk_aslot *s)
{
	atomic_fetch_add_explicit(&s->use, 1, memory_order_release); /* odd: in flight */
}

/* One record written at once, by this thread. */
static int write_now(struct wc_cache *c, struct wc_blk_aslot *s)
{
	atomic_fetch_add_explicit(&c->blk->st.record_writes, 1, memory_order_relaxed);
	return wc_blk_pwrite(c, s->buf, s->len, s->r.off, false, "record");
}

static int by_offset(const void *a, const void *b)
{
	const struct wc_blk_aslot *x = *(struct wc_blk_aslot *const *)a;
	const struct wc_blk_aslot *y = *(struct wc_blk_aslot *const *)b;

	return x->r.off < y->r.off ? -1 : x->r.off > y->r.off;
}

/* Write queued records: those adjacent on the device (reserved one after
 * the other) as one request of up to WC_BLK_AIO_MERGE, all requests with
 * one io_submit. */
static void submit_batch(struct wc_cache *c, struct wc_blk_aslot **q, unsigned n)
{
	struct wc_blk *b = c->blk;
	struct iocb *reqs[WC_BLK_AIO_SLOTS];
	unsigned n_reqs = 0, done = 0;

	qsort(q, n, sizeof(*q), by_offset);
	for (unsigned i = 0; i < n;) {
		struct wc_blk_aslot *head = q[i], *last = head;
		unsigned k = 1;

		head->iov[0] = (struct iovec){ head->buf, head->len };
		head->run_len = head->len;
		head->run_next = NULL;
		while (i + k < n && k < WC_BLK_AIO_MERGE &&
		       q[i + k]->r.off == last->r.off + last->len) {
			struct wc_blk_aslot *s = q[i + k];

			head->iov[k] = (struct iovec){ s->buf, s->len };
			head->run_len += s->len;
			s->run_next = NULL;
			last->run_next = s;
			last = s;
			k++;
		}
		if (k == 1)
			io_prep_pwrite(&head->iocb, b->fd, head->buf, head->len, (long long)head->r.off);
		else
			io_prep_pwritev(&head->iocb, b->fd, head->iov, (int)k, (long long)head->r.off);
		head->iocb.data = head;
		reqs[n_reqs++] = &head->iocb;
		i += k;
	}
	if (atomic_fetch_add(&b->aio.in_flight, n) == 0) {
		/* The completion thread sleeps while nothing is in flight. */
		pthread_mutex_lock(&b->aio.lock);
		pthread_cond_signal(&b->aio.sweep);
		pthread_mutex_unlock(&b->aio.lock);
	}
	atomic_fetch_add_explicit(&b->st.record_writes, n_reqs, memory_order_relaxed);
	while (done < n_reqs) {
		int ret = io_submit(b->aio.ctx, (long)(n_reqs - done), reqs + done);

		if (ret > 0) {
			done += (unsigned)ret;
			continue;
		}
		if (ret == -EAGAIN || ret == -EINTR)
			continue;
		break;
	}
	/* What the kernel refused is written here instead. */
	for (unsigned i = done; i < n_reqs; i++) {
		struct wc_blk_aslot *s = reqs[i]->data;

		for (struct wc_blk_aslot *next; s; s = next) {
			next = s->run_next;
			complete(c, s, write_now(c, s));
		}
	}
}

/* Submit the queue, as its one submitter: until it is empty, or for a
 * writer after SUBMIT_ROUNDS rounds -- the others, returning at once and
 * queueing again, could keep it busy without end -- then the completion
 * thread takes over what is left.  Entered with sub_lock held and the
 * submitter's place taken; returns with sub_lock held, the place left. */
#define SUBMIT_ROUNDS 4
static void submit_queue(struct wc_cache *c, unsigned max_rounds)
{
	struct wc_blk *b = c->blk;
	struct wc_blk_aslot *batch[WC_BLK_AIO_SLOTS];
	unsigned n, rounds = 0;

	while ((n = b->aio.n_queued) && rounds++ < max_rounds) {
		memcpy(batch, b->aio.queue, n * sizeof(batch[0]));
		b->aio.n_queued = 0;
		pthread_mutex_unlock(&b->aio.sub_lock);
		submit_batch(c, batch, n);
		pthread_mutex_lock(&b->aio.sub_lock);
	}
	b->aio.submitting = false;
	if (b->aio.n_queued) {
		pthread_mutex_lock(&b->aio.lock);
		b->aio.handoff = true;
		pthread_cond_signal(&b->aio.sweep);
		pthread_mutex_unlock(&b->aio.lock);
	}
}

/* Without threads: submit what the writers queued (wc_blk_aio_submit
 * leaves up to PLUG_RECORDS queued), before anything waits for records. */
void wc_blk_aio_unplug(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	if (b->aio.running || b->aio.inline_io || !b->aio.slots)
		return;
	pthread_mutex_lock(&b->aio.sub_lock);
	if (!b->aio.submitting && b->aio.n_queued) {
		b->aio.submitting = true;
		submit_queue(c, UINT_MAX);
	}
	pthread_mutex_unlock(&b->aio.sub_lock);
}

/* The record is queued for submission, and the writer returns: one
 * writer at a time submits the queue -- its own record and those that
 * arrived meanwhile -- and no record waits for a submitter that left
 * (see submit_queue).  Concurrent writers' records, adjacent on the
 * device, then go as one request: fewer system calls, device requests and
 * interrupts per record. */
void wc_blk_aio_submit(struct wc_cache *c, struct wc_blk_aslot *s)
{
	struct wc_blk *b = c->blk;

	if (b->aio.inline_io) {
		atomic_fetch_add(&b->aio.in_flight, 1); /* complete() counts it down */
		complete(c, s, write_now(c, s));
		return;
	}
	pthread_mutex_lock(&b->aio.sub_lock);
	b->aio.queue[b->aio.n_queued++] = s;
	if (b->aio.submitting || (!b->aio.running && b->aio.n_queued < PLUG_RECORDS)) {
		pthread_mutex_unlock(&b->aio.sub_lock);
		return;
	}
	b->aio.submitting = true;
	/* Without a completion thread no one would take over. */
	submit_queue(c, !b->aio.running ? UINT_MAX
	                : wc_test_hooks && wc_test_hooks->blk_submit_rounds ? wc_test_hooks->blk_submit_rounds
	                                                                    : SUBMIT_ROUNDS);
	pthread_mutex_unlock(&b->aio.sub_lock);
	if (atomic_load_explicit(&b->aio.in_flight, memory_order_relaxed) >= REAP_AT)
		reap(c, 0, NULL);
}

int wc_blk_aio_poll(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	int n, total = 0;

	if (b->aio.inline_io || !b->aio.ctx)
		return 0;
	wc_blk_aio_unplug(c);
	if (!atomic_load(&b->aio.in_flight))
		return 0;
	while ((n = reap(c, 0, NULL)) > 0)
		total += n;
	return n < 0 ? n : total;
}

void wc_blk_aio_wait(struct wc_cache *c, unsigned ms)
{
	struct wc_blk *b = c->blk;
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	wc_blk_aio_unplug(c);
	if (!b->aio.inline_io && b->aio.ctx && !b->aio.running && atomic_load(&b->aio.in_flight))
		reap(c, 1, &ts);
}

bool wc_blk_aio_reaper(struct wc_cache *c)
{
	return c->blk->aio.running || c->blk->aio.inline_io;
}

bool wc_blk_aio_busy(struct wc_cache *c)
{
	return c->blk->aio.slots && (atomic_load_explicit(&c->blk->aio.in_flight, memory_order_relaxed) ||
	                             __atomic_load_n(&c->blk->aio.n_queued, __ATOMIC_RELAXED));
}

bool wc_blk_aio_read(struct wc_cache *c, void *dst, uint64_t where, size_t len)
{
	struct wc_blk *b = c->blk;

	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++) {
		struct wc_blk_aslot *s = &b->aio.slots[i];
		unsigned u = atomic_load_explicit(&s->use, memory_order_acquire);
		uint64_t lo = __atomic_load_n(&s->data_off, __ATOMIC_RELAXED);
		uint64_t bytes = __atomic_load_n(&s->data_bytes, __ATOMIC_RELAXED);

		if (!(u & 1) || where < lo || where + len > lo + bytes)
			continue;
		memcpy(dst, s->buf + c->blk->g.lba + (where - lo), len);
		atomic_thread_fence(memory_order_acquire);
		return atomic_load_explicit(&s->use, memory_order_relaxed) == u;
	}
	return false;
}

int wc_blk_aio_drain(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	unsigned seen[WC_BLK_AIO_SLOTS];

	if (!b->aio.slots)
		return 0;
	wc_blk_aio_unplug(c);
	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++)
		seen[i] = atomic_load(&b->aio.slots[i].use);
	for (unsigned i = 0; i < WC_BLK_AIO_SLOTS; i++) {
		struct wc_blk_aslot *s = &b->aio.slots[i];

		while ((seen[i] & 1) && atomic_load(&s->use) == seen[i]) {
			struct timespec ts = { 0, 1000 * 1000 };

			if (s->failed)
				return wc_err(-EIO, "%s flush: a record's write failed", c->cache_path);
			if (wc_has_error(c))
				return wc_err(-EIO, "%s flush: the cache is in error state (%d)",
				              c->cache_path, wc_has_error(c));
			/* The flush waits for the device itself: no thread's
			 * wake-up between the device and the flush. */
			if (b->aio.inline_io) {
				pthread_mutex_lock(&b->aio.lock);
				if (atomic_load(&s->use) == seen[i] && !s->failed)
					pthread_cond_wait(&b->aio.cond, &b->aio.lock);
				pthread_mutex_unlock(&b->aio.lock);
			} else if (reap(c, 1, &ts) < 0) {
				return wc_err(-EIO, "%s flush: the cache is in error state (%d)",
				              c->cache_path, wc_has_error(c));
			}
		}
	}
	return 0;
}
