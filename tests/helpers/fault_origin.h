/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault_origin.h -- an in-memory origin for tests: the ops table of wcache.h
 * over two images, with injectable faults.
 *
 * Images.  `volatile` is what reads see: every completed write.  `durable`
 * is what survives a crash: flush() copies into it the writes completed
 * since the last flush (as fdatasync would).  fault_origin_crash() sets
 * volatile := durable, modelling a power cut of the origin device.
 *
 * Completions are asynchronous, as with libaio: submit() queues, poll()
 * completes (respecting min_events and timeout) and runs done() outside the
 * internal lock, so a callback may submit again.  A write changes the
 * volatile image when it completes, not when it is submitted.  Everything
 * is thread-safe.
 *
 * Lifetime.  fault_origin_origin() hands out a struct wc_origin whose
 * close() only records the close (a cache owns and closes its origin): the
 * images stay readable until fault_origin_destroy().  The same object may be
 * handed out again, e.g. to reopen a cache after a simulated crash.
 */
#ifndef WC_FAULT_ORIGIN_H
#define WC_FAULT_ORIGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wcache.h"

struct fault_origin;

/* Faults to inject; all zero = none.  Write and flush numbers count from 1
 * at each fault_origin_set_faults() / fault_origin_reset_faults(). */
struct fault_origin_faults {
	uint64_t fail_write_nth;      /* write request N fails (0 = off) ... */
	bool fail_write_persistent;   /* ... and so does every later one */
	int write_errno;              /* positive errno of failed writes; 0 = EIO */

	uint64_t fail_read_offset;    /* reads overlapping [offset, offset + len) */
	uint64_t fail_read_len;       /*   fail with -EIO (len 0 = off) */

	bool short_writes;            /* every write longer than short_write_bytes */
	size_t short_write_bytes;     /*   transfers only that many (0 allowed) */

	uint64_t delay_us;            /* no request completes sooner after submit */
	unsigned complete_on_poll;    /* a request completes on the k-th poll that
	                                 looks at it (0 or 1 = the first) */

	uint64_t fail_flush_nth;      /* flush N fails with -EIO (0 = off) ... */
	bool fail_flush_persistent;   /* ... and so does every later one */
	bool failed_flush_loses;      /* a failed flush, when it completes, also
	                                 loses every completed write not yet
	                                 durable (volatile := durable there): a
	                                 server that crashed with its cache */
	uint64_t flush_delay_us;      /* flush requests complete this much later
	                                 than delay_us */
};

struct fault_origin_counters {
	uint64_t writes, reads;                 /* requests accepted by submit() */
	uint64_t bytes_written, bytes_read;     /* bytes moved by completions */
	uint64_t flushes, discards;             /* calls, successful or not */
	uint64_t flush_requests;                /* of flushes: WC_ORIGIN_FLUSH requests */
	uint64_t writes_during_flush;           /* writes submitted while a flush
	                                           request was in flight */
	uint64_t failed_writes, failed_reads, failed_flushes, short_writes;
	uint64_t inflight, max_inflight;        /* reads and writes submitted, done()
	                                           not yet run */
	uint64_t flushes_inflight;              /* flush requests not yet completed */
	uint64_t closes, inflight_at_close;     /* close() calls; requests (flush
	                                           requests too) still in flight
	                                           at those calls */
};

/* A zero-filled origin of `size` bytes whose requests must be aligned to
 * `alignment` (a power of two; 1 = any). */
int fault_origin_create(struct fault_origin **out, uint64_t size, uint32_t alignment);
void fault_origin_destroy(struct fault_origin *fo);

/* The ops table + context for the cache (see Lifetime above).  The cache
 * flushes it with flush requests (WC_ORIGIN_FLUSH: its table declares
 * WC_ORIGIN_CAP_ASYNC_FLUSH), as it does the library's libaio, NBD and RBD
 * backends; the _sync_flush variant only takes flush(), as a table without
 * the capability does. */
struct wc_origin fault_origin_origin(struct fault_origin *fo);
struct wc_origin fault_origin_origin_sync_flush(struct fault_origin *fo);

/* Replace the faults (NULL = none) and restart write/flush numbering. */
void fault_origin_set_faults(struct fault_origin *fo, const struct fault_origin_faults *f);
void fault_origin_reset_faults(struct fault_origin *fo);

void fault_origin_get_counters(struct fault_origin *fo, struct fault_origin_counters *out);
/* Zero the counters, except inflight (it is state, not history). */
void fault_origin_clear_counters(struct fault_origin *fo);

/* The images, fault_origin_size() bytes each.  Read them only while no
 * request is in flight and nobody flushes. */
const uint8_t *fault_origin_volatile(struct fault_origin *fo);
const uint8_t *fault_origin_durable(struct fault_origin *fo);
uint64_t fault_origin_size(struct fault_origin *fo);
/* What describe() returns: an embedder's origin is known by it (a cache
 * made for one name refuses another), so the crash sweep renames its
 * origin to re-bind a cache. */
void fault_origin_set_name(struct fault_origin *fo, const char *name);

/* Put pre-existing content into both images (as if written and flushed). */
int fault_origin_load(struct fault_origin *fo, const void *buf, size_t len, uint64_t off);

/*
 * Power cut.  Requests in flight are dropped without running done() (their
 * submitter is gone too: call this after abandoning the cache), and every
 * write not made durable by a flush is lost: volatile := durable.
 * Returns the number of requests dropped.
 */
unsigned fault_origin_crash(struct fault_origin *fo);
/* The same, but each 512-byte sector written since the last flush survives
 * or is lost independently, chosen by `seed`: a device that wrote back part
 * of its volatile cache, tearing blocks. */
unsigned fault_origin_crash_partial(struct fault_origin *fo, uint64_t seed);

#endif
