/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault_origin.c -- the in-memory, fault-injecting origin (see the header).
 *
 * A request's fate (result and byte count) is decided at submit, from the
 * faults in force and its write number, so a sweep over N is reproducible
 * however the completions interleave.  Its data moves at completion, under
 * the lock, so flush() and crash() see either all or none of one request.
 * Sectors written since the last flush are tracked in a bitmap: flush and
 * crash touch only those.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "fault_origin.h"
#include "origin/origin.h"

#define SECTOR 512u

/* Scratch use of io->backend[] while a request is queued. */
#define Q_NEXT   0 /* next queued request */
#define Q_READY  1 /* CLOCK_MONOTONIC ns before which it may not complete */
#define Q_POLLS  2 /* polls still to look at it before it may complete */
#define Q_RESULT 3 /* planned result: bytes to move, or -errno */

struct fault_origin {
	pthread_mutex_t lock;
	pthread_cond_t changed;         /* a request was queued */
	uint64_t size;
	uint32_t align;
	uint8_t *vol, *dur;
	uint64_t *unflushed;            /* bitmap: sectors written since flush */
	size_t unflushed_words;

	struct fault_origin_faults faults;
	uint64_t write_number, flush_number; /* since the faults were set */
	unsigned flushes_queued;        /* flush requests not yet completed */
	struct fault_origin_counters count;

	struct wc_origin_io *queue_head, *queue_tail;
	char desc[64];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct wc_origin_io *q_next(struct wc_origin_io *io)
{
	return (struct wc_origin_io *)(uintptr_t)io->backend[Q_NEXT];
}

static size_t iov_total(const struct wc_origin_io *io)
{
	size_t len = 0;

	for (int i = 0; i < io->iovcnt; i++)
		len += io->iov[i].iov_len;
	return len;
}

static void mark_unflushed(struct fault_origin *fo, uint64_t off, uint64_t len)
{
	for (uint64_t s = off / SECTOR; len && s <= (off + len - 1) / SECTOR; s++)
		fo->unflushed[s / 64] |= 1ull << (s % 64);
}

/* For each unflushed sector: keep it (volatile -> durable) when `keep`
 * says so, else lose it (durable -> volatile); then forget it. */
static void settle_unflushed(struct fault_origin *fo, bool (*keep)(void *arg), void *arg)
{
	for (size_t w = 0; w < fo->unflushed_words; w++) {
		uint64_t bits = fo->unflushed[w];

		while (bits) {
			uint64_t s = w * 64 + (uint64_t)__builtin_ctzll(bits);
			uint64_t off = s * SECTOR;
			size_t n = fo->size - off < SECTOR ? (size_t)(fo->size - off) : SECTOR;

			if (keep(arg))
				memcpy(fo->dur + off, fo->vol + off, n);
			else
				memcpy(fo->vol + off, fo->dur + off, n);
			bits &= bits - 1;
		}
		fo->unflushed[w] = 0;
	}
}

static bool keep_all(void *arg)
{
	(void)arg;
	return true;
}

static bool keep_none(void *arg)
{
	(void)arg;
	return false;
}

static bool keep_random(void *arg)
{
	uint64_t *x = arg; /* xorshift64 */

	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x & 1;
}

/* ------------------------------------------------------------ requests */

static int check_request(struct fault_origin *fo, const struct wc_origin_io *io, size_t *len)
{
	if (io->op != WC_ORIGIN_READ && io->op != WC_ORIGIN_WRITE && io->op != WC_ORIGIN_FLUSH)
		return wc_err(-EINVAL, "%s: unknown op %d", fo->desc, (int)io->op);
	if (io->op == WC_ORIGIN_FLUSH) {
		if (!io->done)
			return wc_err(-EINVAL, "%s: flush request lacks done()", fo->desc);
		*len = 0;
		return 0;
	}
	if (!io->done || !io->iov || io->iovcnt <= 0)
		return wc_err(-EINVAL, "%s: request at offset %llu lacks done(), iov or iovcnt",
		              fo->desc, (unsigned long long)io->offset);
	for (int i = 0; i < io->iovcnt; i++)
		if ((((uintptr_t)io->iov[i].iov_base | io->iov[i].iov_len) & (fo->align - 1)) != 0)
			return wc_err(-EINVAL, "%s: buffer %d of the request at offset %llu not aligned to %u",
			              fo->desc, i, (unsigned long long)io->offset, fo->align);
	*len = iov_total(io);
	if (io->offset & (fo->align - 1))
		return wc_err(-EINVAL, "%s: offset %llu not aligned to %u", fo->desc,
		              (unsigned long long)io->offset, fo->align);
	if (io->offset > fo->size || *len > fo->size - io->offset)
		return wc_err(-EINVAL, "%s: %zu bytes at offset %llu beyond the end", fo->desc, *len,
		              (unsigned long long)io->offset);
	return 0;
}

static int64_t plan_flush(struct fault_origin *fo);

/* The request's result, from the faults in force (lock held). */
static int64_t plan_result(struct fault_origin *fo, const struct wc_origin_io *io, size_t len)
{
	const struct fault_origin_faults *f = &fo->faults;

	if (io->op == WC_ORIGIN_FLUSH)
		return plan_flush(fo);
	if (io->op == WC_ORIGIN_WRITE) {
		uint64_t nth = ++fo->write_number;

		if (f->fail_write_nth &&
		    (nth == f->fail_write_nth || (f->fail_write_persistent && nth > f->fail_write_nth)))
			return -(int64_t)(f->write_errno ? f->write_errno : EIO);
		if (f->short_writes && len > f->short_write_bytes)
			return (int64_t)f->short_write_bytes;
		return (int64_t)len;
	}
	if (f->fail_read_len && io->offset < f->fail_read_offset + f->fail_read_len &&
	    f->fail_read_offset < io->offset + len)
		return -EIO;
	return (int64_t)len;
}

static int fo_submit(void *ctx, struct wc_origin_io *io)
{
	struct fault_origin *fo = ctx;
	unsigned polls;
	size_t len = 0;
	int ret;

	pthread_mutex_lock(&fo->lock);
	ret = check_request(fo, io, &len);
	if (ret < 0) {
		pthread_mutex_unlock(&fo->lock);
		return ret;
	}
	polls = fo->faults.complete_on_poll ? fo->faults.complete_on_poll : 1;
	io->backend[Q_NEXT] = 0;
	io->backend[Q_READY] = now_ns() + fo->faults.delay_us * 1000 +
	                       (io->op == WC_ORIGIN_FLUSH ? fo->faults.flush_delay_us * 1000 : 0);
	io->backend[Q_POLLS] = polls;
	io->backend[Q_RESULT] = (uint64_t)plan_result(fo, io, len);
	if (fo->queue_tail)
		fo->queue_tail->backend[Q_NEXT] = (uint64_t)(uintptr_t)io;
	else
		fo->queue_head = io;
	fo->queue_tail = io;
	if (io->op == WC_ORIGIN_WRITE) {
		fo->count.writes++;
		fo->count.writes_during_flush += fo->flushes_queued > 0;
	} else if (io->op == WC_ORIGIN_READ) {
		fo->count.reads++;
	} else {
		fo->count.flush_requests++;
		fo->flushes_queued++;
	}
	/* inflight counts data requests: what the cache's windows bound. */
	if (io->op != WC_ORIGIN_FLUSH && ++fo->count.inflight > fo->count.max_inflight)
		fo->count.max_inflight = fo->count.inflight;
	pthread_cond_broadcast(&fo->changed);
	pthread_mutex_unlock(&fo->lock);
	return 0;
}

/* Move the data of a completing request (lock held). */
static void transfer(struct fault_origin *fo, struct wc_origin_io *io, size_t bytes)
{
	uint64_t off = io->offset;

	for (int i = 0; i < io->iovcnt && bytes; i++) {
		size_t n = io->iov[i].iov_len < bytes ? io->iov[i].iov_len : bytes;

		if (io->op == WC_ORIGIN_WRITE)
			memcpy(fo->vol + off, io->iov[i].iov_base, n);
		else
			memcpy(io->iov[i].iov_base, fo->vol + off, n);
		off += n;
		bytes -= n;
	}
	if (io->op == WC_ORIGIN_WRITE)
		mark_unflushed(fo, io->offset, off - io->offset);
}

/* One look at the queue (lock held): unlink the requests that may complete
 * now, move their data and chain them on *done_list.  Returns how many;
 * *wait_until gets the earliest time a delayed request becomes ready, and
 * *again is set when a request only waits for more polls. */
static unsigned examine_queue(struct fault_origin *fo, struct wc_origin_io **done_list,
                              uint64_t *wait_until, bool *again)
{
	struct wc_origin_io *io = fo->queue_head, *prev = NULL, *next, *done_tail = NULL;
	uint64_t now = now_ns();
	unsigned n = 0;

	*done_list = NULL;
	*wait_until = UINT64_MAX;
	*again = false;
	for (; io; io = next) {
		next = q_next(io);
		if (io->backend[Q_POLLS] > 1) {
			io->backend[Q_POLLS]--;
			*again = true;
			prev = io;
			continue;
		}
		if (io->backend[Q_READY] > now) {
			if (io->backend[Q_READY] < *wait_until)
				*wait_until = io->backend[Q_READY];
			prev = io;
			continue;
		}
		if (prev)
			prev->backend[Q_NEXT] = (uint64_t)(uintptr_t)next;
		else
			fo->queue_head = next;
		if (fo->queue_tail == io)
			fo->queue_tail = prev;

		int64_t res = (int64_t)io->backend[Q_RESULT];
		size_t len = iov_total(io);
		bool write = io->op == WC_ORIGIN_WRITE;

		if (io->op == WC_ORIGIN_FLUSH) {
			/* Its effect was decided at submit (plan_flush), but
			 * for a loss that comes with its failure. */
			fo->flushes_queued--;
			if (res < 0 && fo->faults.failed_flush_loses)
				settle_unflushed(fo, keep_none, NULL);
		} else if (res >= 0) {
			transfer(fo, io, (size_t)res);
			if (write) {
				fo->count.bytes_written += (uint64_t)res;
				fo->count.short_writes += (size_t)res < len;
			} else {
				fo->count.bytes_read += (uint64_t)res;
			}
		} else if (write) {
			fo->count.failed_writes++;
		} else {
			fo->count.failed_reads++;
		}
		if (io->op != WC_ORIGIN_FLUSH)
			fo->count.inflight--;
		io->backend[Q_NEXT] = 0;
		if (done_tail)
			done_tail->backend[Q_NEXT] = (uint64_t)(uintptr_t)io;
		else
			*done_list = io;
		done_tail = io;
		n++;
	}
	return n;
}

/* Run done() of a chain built by examine_queue (lock NOT held). */
static void run_callbacks(struct wc_origin_io *io)
{
	while (io) {
		struct wc_origin_io *next = q_next(io);

		io->done(io, (ssize_t)(int64_t)io->backend[Q_RESULT]);
		io = next;
	}
}

static int fo_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	struct fault_origin *fo = ctx;
	uint64_t start = now_ns();
	uint64_t deadline = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
	unsigned total = 0;

	pthread_mutex_lock(&fo->lock);
	for (;;) {
		struct wc_origin_io *done_list;
		uint64_t wait_until, now;
		bool again;
		unsigned n = examine_queue(fo, &done_list, &wait_until, &again);

		if (n) {
			pthread_mutex_unlock(&fo->lock);
			run_callbacks(done_list);
			pthread_mutex_lock(&fo->lock);
			total += n;
		}
		now = now_ns();
		if (total >= min_events || now >= deadline)
			break;
		/* A request that only waits for more polls gets its next
		 * poll at once: a blocking poll() must not wait forever. */
		if (again || n)
			continue;
		if (wait_until > deadline)
			wait_until = deadline;
		if (wait_until == UINT64_MAX) {
			pthread_cond_wait(&fo->changed, &fo->lock);
		} else {
			struct timespec ts = { .tv_sec = (time_t)(wait_until / 1000000000ull),
			                       .tv_nsec = (long)(wait_until % 1000000000ull) };

			pthread_cond_timedwait(&fo->changed, &fo->lock, &ts);
		}
	}
	pthread_mutex_unlock(&fo->lock);
	return (int)total;
}

/* ------------------------------------------------------------ other ops */

static int fo_size(void *ctx, uint64_t *bytes)
{
	*bytes = ((struct fault_origin *)ctx)->size;
	return 0;
}

/*
 * A flush, synchronous or as a request (lock held): 0 with the writes
 * completed so far made durable, or -EIO (injected) with nothing made
 * durable.  A flush request does this when it is submitted, so it covers
 * exactly the writes completed before it -- none that complete while it
 * waits to complete -- and a crash before its completion keeps what it
 * made durable, as a device may.
 */
static int64_t plan_flush(struct fault_origin *fo)
{
	const struct fault_origin_faults *f = &fo->faults;
	uint64_t nth;

	fo->count.flushes++;
	nth = ++fo->flush_number;
	if (f->fail_flush_nth &&
	    (nth == f->fail_flush_nth || (f->fail_flush_persistent && nth > f->fail_flush_nth))) {
		fo->count.failed_flushes++;
		return -EIO;
	}
	settle_unflushed(fo, keep_all, NULL);
	return 0;
}

static int fo_flush(void *ctx)
{
	struct fault_origin *fo = ctx;
	uint64_t nth;
	int64_t res;

	pthread_mutex_lock(&fo->lock);
	res = plan_flush(fo);
	nth = fo->flush_number;
	if (res < 0 && fo->faults.failed_flush_loses)
		settle_unflushed(fo, keep_none, NULL);
	pthread_mutex_unlock(&fo->lock);
	if (res < 0)
		return wc_err((int)res, "%s: flush number %llu failed (injected)", fo->desc,
		              (unsigned long long)nth);
	return 0;
}

/* Discarded bytes read back as zeros, durable after the next flush, like a
 * punched hole. */
static int fo_discard(void *ctx, uint64_t offset, uint64_t len)
{
	struct fault_origin *fo = ctx;

	pthread_mutex_lock(&fo->lock);
	fo->count.discards++;
	if (offset > fo->size || len > fo->size - offset) {
		pthread_mutex_unlock(&fo->lock);
		return wc_err(-EINVAL, "%s: discard of %llu bytes at offset %llu beyond the end",
		              fo->desc, (unsigned long long)len, (unsigned long long)offset);
	}
	memset(fo->vol + offset, 0, len);
	mark_unflushed(fo, offset, len);
	pthread_mutex_unlock(&fo->lock);
	return 0;
}

static void fo_close(void *ctx)
{
	struct fault_origin *fo = ctx;

	pthread_mutex_lock(&fo->lock);
	fo->count.closes++;
	fo->count.inflight_at_close += fo->count.inflight + fo->flushes_queued;
	pthread_mutex_unlock(&fo->lock);
}

static uint32_t fo_alignment(void *ctx)
{
	return ((struct fault_origin *)ctx)->align;
}

static const char *fo_describe(void *ctx)
{
	return ((struct fault_origin *)ctx)->desc;
}

static const struct wc_origin_ops fault_origin_ops = {
	WC_ORIGIN_OPS_INIT,
	.caps = WC_ORIGIN_CAP_ASYNC_FLUSH,
	.size = fo_size,
	.submit = fo_submit,
	.poll = fo_poll,
	.flush = fo_flush,
	.discard = fo_discard,
	.close = fo_close,
	.alignment = fo_alignment,
	.describe = fo_describe,
};

/* ------------------------------------------------------------- the API */

int fault_origin_create(struct fault_origin **out, uint64_t size, uint32_t alignment)
{
	struct fault_origin *fo;
	pthread_condattr_t attr;

	if (size == 0 || size > SIZE_MAX / 2)
		return wc_err(-EINVAL, "fault origin: size %llu out of range", (unsigned long long)size);
	if (alignment == 0 || (alignment & (alignment - 1)) != 0)
		return wc_err(-EINVAL, "fault origin: alignment %u is not a power of two", alignment);
	fo = calloc(1, sizeof(*fo));
	if (!fo)
		return wc_err(-ENOMEM, "fault origin: out of memory");
	pthread_mutex_init(&fo->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&fo->changed, &attr);
	pthread_condattr_destroy(&attr);
	fo->size = size;
	fo->align = alignment;
	fo->unflushed_words = (size_t)((size + SECTOR * 64 - 1) / (SECTOR * 64));
	fo->vol = calloc(1, (size_t)size);
	fo->dur = calloc(1, (size_t)size);
	fo->unflushed = calloc(fo->unflushed_words, sizeof(uint64_t));
	if (!fo->vol || !fo->dur || !fo->unflushed) {
		fault_origin_destroy(fo);
		return wc_err(-ENOMEM, "fault origin: out of memory for %llu bytes",
		              (unsigned long long)size);
	}
	snprintf(fo->desc, sizeof(fo->desc), "fault origin (%llu bytes)", (unsigned long long)size);
	*out = fo;
	return 0;
}

void fault_origin_set_name(struct fault_origin *fo, const char *name)
{
	snprintf(fo->desc, sizeof(fo->desc), "%s", name);
}

void fault_origin_destroy(struct fault_origin *fo)
{
	if (!fo)
		return;
	pthread_cond_destroy(&fo->changed);
	pthread_mutex_destroy(&fo->lock);
	free(fo->vol);
	free(fo->dur);
	free(fo->unflushed);
	free(fo);
}

/* The same ops, not declared to take flush requests: the cache then calls
 * flush(), as it does for an embedder's table without the capability. */
static const struct wc_origin_ops fault_origin_sync_flush_ops = {
	WC_ORIGIN_OPS_INIT,
	.size = fo_size,
	.submit = fo_submit,
	.poll = fo_poll,
	.flush = fo_flush,
	.discard = fo_discard,
	.close = fo_close,
	.alignment = fo_alignment,
	.describe = fo_describe,
};

struct wc_origin fault_origin_origin(struct fault_origin *fo)
{
	return (struct wc_origin){ .ops = &fault_origin_ops, .ctx = fo };
}

struct wc_origin fault_origin_origin_sync_flush(struct fault_origin *fo)
{
	return (struct wc_origin){ .ops = &fault_origin_sync_flush_ops, .ctx = fo };
}

void fault_origin_set_faults(struct fault_origin *fo, const struct fault_origin_faults *f)
{
	pthread_mutex_lock(&fo->lock);
	if (f)
		fo->faults = *f;
	else
		memset(&fo->faults, 0, sizeof(fo->faults));
	fo->write_number = 0;
	fo->flush_number = 0;
	pthread_mutex_unlock(&fo->lock);
}

void fault_origin_reset_faults(struct fault_origin *fo)
{
	fault_origin_set_faults(fo, NULL);
}

void fault_origin_get_counters(struct fault_origin *fo, struct fault_origin_counters *out)
{
	pthread_mutex_lock(&fo->lock);
	*out = fo->count;
	out->flushes_inflight = fo->flushes_queued;
	pthread_mutex_unlock(&fo->lock);
}

void fault_origin_clear_counters(struct fault_origin *fo)
{
	pthread_mutex_lock(&fo->lock);
	uint64_t inflight = fo->count.inflight;

	memset(&fo->count, 0, sizeof(fo->count));
	fo->count.inflight = fo->count.max_inflight = inflight;
	pthread_mutex_unlock(&fo->lock);
}

const uint8_t *fault_origin_volatile(struct fault_origin *fo)
{
	return fo->vol;
}

const uint8_t *fault_origin_durable(struct fault_origin *fo)
{
	return fo->dur;
}

uint64_t fault_origin_size(struct fault_origin *fo)
{
	return fo->size;
}

int fault_origin_load(struct fault_origin *fo, const void *buf, size_t len, uint64_t off)
{
	if (off > fo->size || len > fo->size - off)
		return wc_err(-EINVAL, "%s: load of %zu bytes at offset %llu beyond the end", fo->desc,
		              len, (unsigned long long)off);
	pthread_mutex_lock(&fo->lock);
	memcpy(fo->vol + off, buf, len);
	memcpy(fo->dur + off, buf, len);
	pthread_mutex_unlock(&fo->lock);
	return 0;
}

static unsigned crash(struct fault_origin *fo, bool (*keep)(void *arg), void *arg)
{
	unsigned dropped = 0;

	pthread_mutex_lock(&fo->lock);
	for (struct wc_origin_io *io = fo->queue_head; io; io = q_next(io))
		dropped++;
	fo->queue_head = fo->queue_tail = NULL;
	fo->count.inflight = 0;
	fo->flushes_queued = 0;
	settle_unflushed(fo, keep, arg);
	pthread_mutex_unlock(&fo->lock);
	return dropped;
}

unsigned fault_origin_crash(struct fault_origin *fo)
{
	return crash(fo, keep_none, NULL);
}

unsigned fault_origin_crash_partial(struct fault_origin *fo, uint64_t seed)
{
	uint64_t state = seed ? seed : 0x9e3779b97f4a7c15ull; /* xorshift needs non-zero */

	return crash(fo, keep_random, &state);
}
