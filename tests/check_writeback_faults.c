/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_writeback_faults.c -- write-back when the origin fails:
 * failed, repeatedly failed and short origin writes, read errors on a miss,
 * failed origin flushes, and the sweep failing the Nth origin write (as
 * OCF's ErrorDevice) until N passes the writes the workload issues.  None
 * of them is sticky: the blocks stay dirty, the cache goes on, and the
 * stats say the origin fails until it answers again.
 */
#include "core/testhooks.h"
#include "testmain.h"
#include "wbtest.h"

/* wc_writeback's patience with a failing origin, shortened. */
static struct wc_test_hooks patience = { .writeback_give_up_ms = 300 };

static bool origin_failing(wc_cache *c)
{
	return stats(c).writeback_last_error != 0;
}

static bool origin_answers(wc_cache *c)
{
	struct wc_stats st = stats(c);

	return st.writeback_last_error == 0 && st.writeback_failing_since_ms == 0;
}

/* no_threads: the host's loop (bounded; no timing asserted) until cond. */
static bool poll_until(wc_cache *c, bool (*cond)(wc_cache *c))
{
	for (unsigned i = 0; i < 20000; i++) {
		int r;

		if (cond(c))
			return true;
		r = wc_poll(c, 4);
		ck_assert_msg(r >= 0 || stats(c).error == 0, "wc_poll: %d %s", r, wc_errmsg());
		if (r <= 0)
			sleep_ms(1);
	}
	return cond(c);
}

/* ------------------------------------------------------------- faults */

/* One failed origin write: the blocks stay dirty and readable, the next
 * round writes them. */
START_TEST(test_write_error_retried)
{
	struct fault_origin *fo = new_origin(256);
	struct fault_origin_faults once = { .fail_write_nth = 1 };
	struct model *m = model_new(256);
	wc_cache *c = create_on(fo, 64, "no_threads=1,high_watermark=0,low_watermark=0");
	struct wc_stats st;

	for (uint64_t b = 0; b < 10; b++)
		model_write(c, m, b * 2, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &once);
	ck_assert_msg(poll_until(c, origin_failing), "the failed write left no trace");
	st = stats(c);
	ck_assert_int_eq(st.error, 0);
	ck_assert_int_eq(st.writeback_last_error, -EIO);
	ck_assert_uint_eq(st.dirty_blocks + st.free_blocks, st.blocks); /* nothing lost */
	ck_assert_uint_gt(st.dirty_blocks, 0);
	ck_assert_uint_ge(st.writeback_errors, 1);
	ck_assert_uint_eq(counters(fo).failed_writes, 1);
	model_check_cache(c, m, "after a failed write-back");
	ck_assert_msg(poll_until(c, all_free), "nothing drained after one failed write");
	assert_clean(c);
	ck_assert_int_eq(stats(c).writeback_last_error, 0);
	ck_assert_uint_eq(counters(fo).failed_writes, 1);
	model_check_origin(m, fo);
	ck_assert_int_eq(wc_close(c), 0);

	/* wc_writeback retries by itself. */
	c = reopen_on(fo, "no_threads=1");
	for (uint64_t b = 0; b < 10; b++)
		model_write(c, m, 100 + b, 1, 0);
	fault_origin_set_faults(fo, &once);
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	ck_assert_uint_eq(counters(fo).failed_writes, 2);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Every origin write fails, more rounds than the old sticky limit (six):
 * no error state.  Writes, flushes and reads go on (the cache has room),
 * the stats say the origin fails and since when, wc_writeback returns the
 * origin's errno after its patience, and once the origin answers
 * everything drains -- in the host's loop and in the background thread. */
static void check_failing(wc_cache *c, struct fault_origin *fo, struct model *m, uint64_t dirty,
                          int err)
{
	struct wc_stats st = stats(c);

	ck_assert_int_eq(st.error, 0);
	ck_assert_int_eq(st.writeback_last_error, err);
	ck_assert_uint_gt(st.writeback_failing_since_ms, 0);
	ck_assert_uint_eq(st.dirty_blocks, dirty);
	ck_assert_uint_eq(st.free_blocks, st.blocks - dirty);
	ck_assert_uint_eq(counters(fo).bytes_written, 0);
	ck_assert_uint_gt(counters(fo).failed_writes, 6);
	model_write(c, m, 1, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	model_write(c, m, 2, 1, WC_FUA);
	model_check_cache(c, m, "reads with the origin failing");
	ck_assert_int_eq(stats(c).error, 0);
}

START_TEST(test_write_errors_not_sticky)
{
	struct fault_origin *fo = new_origin(256);
	struct fault_origin_faults always = { .fail_write_nth = 1, .fail_write_persistent = true };
	struct model *m = model_new(256);
	wc_cache *c = create_on(fo, 64, "no_threads=1");

	for (uint64_t b = 0; b < 30; b++)
		model_write(c, m, b * 3, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &always);
	wc_test_hooks = &patience;
	ct_assert_err(wc_writeback(c), -EIO);
	wc_test_hooks = NULL;
	ck_assert_msg(strstr(wc_errmsg(), "gave up") != NULL, "%s", wc_errmsg());
	check_failing(c, fo, m, 30, -EIO);
	/* Below the watermarks: the host's loop probes the origin. */
	fault_origin_reset_faults(fo);
	ck_assert_msg(poll_until(c, origin_answers), "the failure never cleared");
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);

	/* The same with the background thread (cleaner mode starts it). */
	c = reopen_on(fo, NULL);
	for (uint64_t b = 0; b < 30; b++)
		model_write(c, m, 100 + b * 3, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &always);
	fault_origin_clear_counters(fo);
	ck_assert_int_eq(wc_set_cleaner(c, true), 0);
	while (counters(fo).failed_writes <= 6)
		sleep_ms(10);
	ck_assert_int_eq(wc_set_cleaner(c, false), 0);
	check_failing(c, fo, m, 30, -EIO);
	fault_origin_reset_faults(fo);
	ck_assert_int_eq(wc_set_cleaner(c, true), 0);
	ck_assert_msg(wait_for(c, all_free, 20000), "nothing drained once the origin came back");
	ck_assert_int_eq(stats(c).error, 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* A short origin write is an error: nothing is freed early, the block is
 * retried whole. */
START_TEST(test_short_writes)
{
	struct fault_origin *fo = new_origin(256);
	struct fault_origin_faults shorts = { .short_writes = true, .short_write_bytes = BS / 2 };
	struct model *m = model_new(256);
	wc_cache *c = create_on(fo, 64, "no_threads=1,high_watermark=0,low_watermark=0");
	struct wc_stats st;

	for (uint64_t b = 0; b < 12; b++)
		model_write(c, m, b + (b / 4) * 4, 1, 0); /* runs of 4 */
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &shorts);
	ck_assert_msg(poll_until(c, origin_failing), "short writes left no trace");
	st = stats(c);
	ck_assert_uint_eq(st.dirty_blocks, 12);
	ck_assert_uint_eq(st.free_blocks, st.blocks - 12);
	ck_assert_uint_gt(counters(fo).short_writes, 0);
	model_check_cache(c, m, "after short writes");

	fault_origin_reset_faults(fo);
	ck_assert_msg(poll_until(c, all_free), "nothing drained after short writes");
	assert_clean(c);
	model_check_origin(m, fo);

	/* Short for good: no error state, still nothing freed. */
	for (uint64_t b = 0; b < 12; b++)
		model_write(c, m, 50 + b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &shorts);
	wc_test_hooks = &patience;
	ct_assert_err(wc_writeback(c), -EIO);
	wc_test_hooks = NULL;
	st = stats(c);
	ck_assert_int_eq(st.error, 0);
	ck_assert_int_eq(st.writeback_last_error, -EIO);
	ck_assert_uint_eq(st.dirty_blocks, 12);
	model_check_cache(c, m, "short writes for good");
	ck_assert_int_eq(wc_close(c), 0);
	fault_origin_reset_faults(fo);
	c = reopen_on(fo, NULL);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* A read error on a miss is the caller's -EIO, and nothing else changes. */
START_TEST(test_read_error_on_miss)
{
	struct fault_origin *fo = new_origin(256);
	struct fault_origin_faults bad = { .fail_read_offset = 5 * BS, .fail_read_len = BS };
	struct model *m = model_new(256);
	wc_cache *c;
	struct wc_stats st0, st;

	for (uint64_t b = 0; b < 16; b++) { /* content the origin had before */
		ct_fill_block(m->buf, BS, b, 0);
		ck_assert_int_eq(fault_origin_load(fo, m->buf, BS, b * BS), 0);
		m->v[b] = 0;
	}
	c = create_on(fo, 64, NULL);
	model_write(c, m, 8, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &bad);
	st0 = stats(c);
	ct_assert_err(wc_read(c, m->rd, BS, 5 * BS), -EIO);
	ct_assert_err(wc_read(c, m->rd, 6 * BS, 3 * BS), -EIO); /* misses, hit, bad miss */
	st = stats(c);
	ck_assert_int_eq(st.error, 0);
	ck_assert_uint_eq(st.dirty_blocks, st0.dirty_blocks);
	ck_assert_uint_eq(st.free_blocks, st0.free_blocks);
	ck_assert_uint_eq(st.writes, st0.writes);
	ck_assert_uint_eq(counters(fo).writes, 0);
	/* Around the bad block everything works, writes included. */
	ck_assert_int_eq(wc_read(c, m->rd, 2 * BS, 3 * BS), 2 * BS);
	assert_block(m->rd, 3, 0, "read next to a bad block");
	assert_block(m->rd + BS, 4, 0, "read next to a bad block");
	model_write(c, m, 5, 1, 0); /* now a hit: no origin read */
	ck_assert_int_eq(wc_read(c, m->rd, BS, 5 * BS), BS);
	assert_block(m->rd, 5, m->v[5], "the bad block after a write");
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_reset_faults(fo);
	model_check_cache(c, m, "after the read errors");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* The origin flush fails: the writes reached the origin's volatile image
 * only, so nothing may be freed -- a power cut then loses them.  Run with
 * the flush as a request (_i 0) and as a call (_i 1).  wc_writeback, not
 * the host's loop, meets the failures: it returns with nothing in flight,
 * which the origin's power cut needs. */
START_TEST(test_flush_failure_frees_nothing)
{
	wbtest_sync_flush = _i == 1;

	struct fault_origin *fo = new_origin(256);
	struct fault_origin_faults bad = { .fail_flush_nth = 1, .fail_flush_persistent = true };
	struct model *m = model_new(256);
	wc_cache *c = create_on(fo, 64, "no_threads=1,high_watermark=0,low_watermark=0");
	struct wc_stats st;

	for (uint64_t b = 0; b < 20; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &bad);
	wc_test_hooks = &patience;
	ct_assert_err(wc_writeback(c), -EIO);
	wc_test_hooks = NULL;
	st = stats(c);
	ck_assert_int_eq(st.error, 0);
	ck_assert_int_eq(st.writeback_last_error, -EIO);
	ck_assert_uint_eq(st.dirty_blocks, 20);
	ck_assert_uint_eq(st.free_blocks, st.blocks - 20);
	ck_assert_uint_eq(st.writeback_blocks, 0);
	ck_assert_uint_ge(counters(fo).failed_flushes, 1);
	/* Written (again at each attempt), never durable. */
	ck_assert_uint_ge(counters(fo).bytes_written, 20 * BS);
	ck_assert_uint_eq(counters(fo).bytes_written % (20 * BS), 0);
	fault_origin_crash(fo);
	model_check_cache(c, m, "after a failed flush and an origin power cut");

	fault_origin_reset_faults(fo);
	ck_assert_msg(poll_until(c, all_free), "nothing drained after the failed flush");
	assert_clean(c);
	model_check_origin(m, fo);

	/* Failing for good: no error state, and still nothing freed. */
	for (uint64_t b = 0; b < 20; b++)
		model_write(c, m, 100 + b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &bad);
	wc_test_hooks = &patience;
	ct_assert_err(wc_writeback(c), -EIO);
	wc_test_hooks = NULL;
	st = stats(c);
	ck_assert_int_eq(st.error, 0);
	ck_assert_uint_eq(st.dirty_blocks, 20);
	fault_origin_crash(fo);
	ck_assert_int_eq(wc_close(c), 0);
	fault_origin_reset_faults(fo);
	c = reopen_on(fo, NULL);
	model_check_cache(c, m, "reopened after flush failures");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
	wbtest_sync_flush = false;
}
END_TEST

/* The origin cannot be reached (a network origin's server is down, every
 * write fails with ENOTCONN): as any origin failure, retried with backoff,
 * wc_writeback gives up after its patience with the errno itself, reads and
 * writes go on, and once the origin answers again everything drains -- in
 * the host's loop and in the background thread. */
START_TEST(test_unreachable_origin_retried)
{
	struct fault_origin_faults down = { .fail_write_nth = 1, .fail_write_persistent = true,
	                                    .write_errno = ENOTCONN };
	struct fault_origin *fo = new_origin(256);
	struct model *m = model_new(256);
	wc_cache *c = create_on(fo, 64, "no_threads=1,high_watermark=0,low_watermark=0");
	struct wc_stats st;
	int r;

	for (uint64_t b = 0; b < 20; b++)
		model_write(c, m, b * 2, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &down);
	wc_test_hooks = &patience;
	r = wc_writeback(c);
	wc_test_hooks = NULL;
	ck_assert_msg(r == -ENOTCONN, "wc_writeback with the origin down: %d (%s)", r, wc_errmsg());
	ck_assert_msg(strstr(wc_errmsg(), "gave up") != NULL, "message: %s", wc_errmsg());
	ck_assert_uint_gt(counters(fo).failed_writes, 6); /* more rounds than the old sticky limit */
	st = stats(c);
	ck_assert_int_eq(st.error, 0);
	ck_assert_uint_eq(st.dirty_blocks, 20);
	ck_assert_uint_gt(st.writeback_errors, 6);
	ck_assert_int_eq(st.writeback_last_error, -ENOTCONN);
	ck_assert_uint_ge(st.writeback_failing_ms, 300);
	model_write(c, m, 100, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	model_check_cache(c, m, "the origin down");
	fault_origin_reset_faults(fo);
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	st = stats(c);
	ck_assert_int_eq(st.writeback_last_error, 0);
	ck_assert_uint_eq(st.writeback_failing_ms, 0);
	model_check_origin(m, fo);
	ck_assert_int_eq(wc_close(c), 0);

	/* The background thread rides out the same outage. */
	c = reopen_on(fo, NULL);
	for (uint64_t b = 0; b < 20; b++)
		model_write(c, m, 150 + b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &down);
	ck_assert_int_eq(wc_set_cleaner(c, true), 0);
	while (counters(fo).failed_writes < 12)
		sleep_ms(10);
	ck_assert_int_eq(stats(c).error, 0);
	fault_origin_reset_faults(fo);
	ck_assert_msg(wait_for(c, all_free, 20000), "nothing drained once the origin came back");
	ck_assert_int_eq(stats(c).error, 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* A flush fails and loses every write the origin had not made durable --
 * a server that crashed with its cache, or a disk's volatile cache (what an
 * fsync error may mean) -- while the next round's writes are completing:
 * those are written again too, not freed on that round's own flush.  The
 * failing flush takes 20 ms, so the next round's writes complete before it
 * does.  With the flush as a request (_i 0) and as a call (_i 1). */
START_TEST(test_failed_flush_loses_next_round)
{
	struct fault_origin_faults f = { .fail_flush_nth = 2, .failed_flush_loses = true,
	                                 .flush_delay_us = 20000 };
	struct fault_origin *fo = new_origin(2048);
	struct model *m = model_new(2048);
	wc_cache *c;

	wbtest_sync_flush = _i == 1;
	/* Rounds of 512 / 8 = 64 blocks. */
	c = create_on(fo, 512, "high_watermark=95,low_watermark=90,writeback_jobs=16,writeback_max_io_kib=4");
	for (uint64_t b = 0; b < 400; b++)
		model_write(c, m, b * 5, 1, 0); /* no neighbours: one request each */
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &f);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_uint_eq(counters(fo).failed_flushes, 1);
	assert_clean(c);
	model_check_origin(m, fo);
	fault_origin_crash(fo);
	model_check_origin(m, fo);
	ck_assert_int_eq(wc_close(c), 0);
	wbtest_sync_flush = false;
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* ---------------------------------------------------- the error sweep */

#define SWEEP_ORIGIN 256
#define SWEEP_CACHE 32

struct sweep_result {
	uint64_t writes;         /* origin writes issued (the failed one included) */
	uint64_t failed;         /* origin writes that failed */
};

/*
 * One run of the sweep: a workload with write-back running, origin write
 * number `nth` failing (0 = none).  In no_threads mode a writer that finds
 * no free block runs the failing round itself, and waits for the next
 * attempt rather than fail (test_no_threads_writer_rides_out_a_failed_
 * round): every write succeeds.
 */
static struct sweep_result sweep_run(uint64_t nth, bool no_threads)
{
	struct fault_origin *fo = new_origin(SWEEP_ORIGIN);
	struct fault_origin_faults f = { .fail_write_nth = nth };
	struct model *m = model_new(SWEEP_ORIGIN);
	wc_cache *c = create_on(fo, SWEEP_CACHE,
	                        no_threads ? "no_threads=1,writeback_jobs=4,writeback_max_io_kib=8"
	                                   : "writeback_jobs=4,writeback_max_io_kib=8,autocommit_ms=5");
	struct sweep_result res = { 0 };
	uint64_t s = 0x5111;

	fault_origin_set_faults(fo, &f);
	for (unsigned op = 0; op < 300; op++) {
		uint64_t r = ct_rand(&s) % 100, b = ct_rand(&s) % SWEEP_ORIGIN;

		if (r < 75) {
			ssize_t w = model_try_write(c, m, b, 1, r < 5 ? WC_FUA : 0);

			/* Room or not, one failed origin write never fails a
			 * write: the writer waits for the next attempt. */
			ck_assert_msg(w == BS, "sweep N=%llu op %u: write: %zd (%s)", (unsigned long long)nth,
			              op, w, wc_errmsg());
		} else if (r < 92) {
			ck_assert_int_eq(wc_read(c, m->rd, BS, b * BS), BS);
			assert_block(m->rd, b, m->v[b], "sweep read");
		} else {
			ck_assert_msg(wc_flush(c) == 0, "sweep N=%llu: flush: %s", (unsigned long long)nth,
			              wc_errmsg());
		}
		if (no_threads && op % 40 == 0) {
			int p = wc_poll(c, 4);

			ck_assert_msg(p >= 0 || stats(c).error == 0, "wc_poll: %d %s", p, wc_errmsg());
		}
	}
	/* No acknowledged write is lost: the cache and origin together ... */
	model_check_cache(c, m, "sweep, through the cache");
	ck_assert_int_eq(stats(c).error, 0);
	/* ... and after a successful write-back, the origin alone. */
	ck_assert_msg(wc_writeback(c) == 0, "sweep N=%llu: wc_writeback: %s", (unsigned long long)nth,
	              wc_errmsg());
	assert_clean(c);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	res.writes = counters(fo).writes;
	res.failed = counters(fo).failed_writes;
	model_free(m);
	fault_origin_destroy(fo);
	return res;
}

/* For N = 1, 2, ...: fail the Nth origin write, until N passes the number
 * of writes the workload issues (deterministic in no_threads mode). */
START_TEST(test_error_sweep_no_threads)
{
	struct sweep_result clean = sweep_run(0, true), r;
	uint64_t n;

	ck_assert_uint_eq(clean.failed, 0);
	ck_assert_uint_gt(clean.writes, 20); /* the sweep has something to sweep */
	for (n = 1;; n++) {
		r = sweep_run(n, true);
		if (r.failed == 0)
			break; /* N passed the writes issued */
		ck_assert_uint_eq(r.failed, 1);
		ck_assert_uint_lt(n, 10 * clean.writes);
	}
	ck_assert_uint_gt(n, clean.writes);
	ck_assert_uint_eq(r.writes, clean.writes);
	fprintf(stderr, "# sweep (no_threads): N = 1..%llu over %llu origin writes\n", (unsigned long long)n,
	        (unsigned long long)clean.writes);
}
END_TEST

/* The same with the background thread doing write-back: the number of
 * writes varies from run to run, so N grows by ~1.5x, until a run passes
 * without failure. */
START_TEST(test_error_sweep_threads)
{
	struct sweep_result r;
	uint64_t n, runs = 0;

	for (n = 1;; n = n + 1 + n / 2, runs++) {
		r = sweep_run(n, false);
		if (r.failed == 0)
			break;
		ck_assert_uint_eq(r.failed, 1);
		ck_assert_uint_lt(n, 100000);
	}
	ck_assert_uint_gt(runs, 3);
	ck_assert_uint_lt(r.writes, n);
	fprintf(stderr, "# sweep (threads): %llu runs, last N = %llu over %llu origin writes\n",
	        (unsigned long long)runs + 1, (unsigned long long)n, (unsigned long long)r.writes);
}
END_TEST

/* In no_threads mode the writer that finds no free block runs the
 * write-back round itself.  One failed origin write there is an error of
 * that round, retried like any other -- not a reason to fail the write:
 * only an origin failing past the writers' patience (-ENOSPC) or the
 * sticky error state refuse writes. */
START_TEST(test_no_threads_writer_rides_out_a_failed_round)
{
	struct fault_origin *fo = new_origin(256);
	struct fault_origin_faults once = { .fail_write_nth = 1 };
	struct model *m = model_new(256);
	wc_cache *c = create_on(fo, 16, "no_threads=1");

	for (uint64_t b = 0; b < 16; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_uint_eq(stats(c).free_blocks, 0);
	fault_origin_set_faults(fo, &once);
	model_write(c, m, 100, 1, 0); /* needs a free block: write-back, which fails once */
	ck_assert_uint_eq(counters(fo).failed_writes, 1);
	ck_assert_int_eq(stats(c).error, 0);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* ---------------------------------------------------------------- main */

static Suite *writeback_faults_suite(void)
{
	Suite *s = suite_create("writeback_faults");
	TCase *tc;

	tc = tcase_create("faults");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_write_error_retried);
	tcase_add_test(tc, test_write_errors_not_sticky);
	tcase_add_test(tc, test_unreachable_origin_retried);
	tcase_add_test(tc, test_short_writes);
	tcase_add_test(tc, test_read_error_on_miss);
	tcase_add_loop_test(tc, test_flush_failure_frees_nothing, 0, 2);
	tcase_add_loop_test(tc, test_failed_flush_loses_next_round, 0, 2);
	tcase_add_test(tc, test_no_threads_writer_rides_out_a_failed_round);
	tcase_add_test(tc, test_error_sweep_no_threads);
	tcase_add_test(tc, test_error_sweep_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(writeback_faults_suite());
}
