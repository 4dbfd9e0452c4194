/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_block_loop.c -- the block medium driven by the host's loop
 * (no_threads), over a slow fault origin: a wc_poll_timeout(..., 0) step
 * leaves a segment's write-back requests out at the origin and returns,
 * later steps finish it and lose nothing; a read's misses go out as
 * requests to the origin and its hits to the device, completed by later
 * polls; records without
 * FUA are completed by the polls (a discard right after them does not wait
 * for ever); a close with a step's requests out waits for them.  No timing
 * is asserted: "returned with requests out" is what a step that waited
 * could never show.
 */
#include <stdio.h>
#include <sys/uio.h>

#include "testmain.h"
#include "wbtest.h"

#define ORIGIN_BLOCKS 256u
#define CACHE_BYTES (2u << 20)
/* Write-back due after a few writes: high 10 %, down to 5 %. */
#define LOOP_OPTS "no_threads=1,high_watermark=10,low_watermark=5,max_age_ms=0"
#define SLOW_US 20000

static wc_cache *open_block_on(struct fault_origin *fo, const char *opts, bool create)
{
	return create ? create_block_on(fo, "wcloop", CACHE_BYTES, opts) : reopen_block_on(fo, opts);
}

/* Poll until the origin has requests out after a poll returned; false if
 * it never did.  A poll may wait a little for the device (write-back's
 * reads come first, and a loaded machine takes its time), never for the
 * origin: a step that waited for the origin would return with nothing
 * out, every time. */
static bool poll_until_out(wc_cache *c, struct fault_origin *fo)
{
	for (unsigned i = 0; i < 2000; i++) {
		ck_assert_int_ge(wc_poll_timeout(c, 64, 2), 0);
		if (counters(fo).inflight || counters(fo).flushes_inflight)
			return true;
	}
	return false;
}

/* Drive the loop until nothing is dirty (cleaner mode: past the low
 * watermark too). */
static void drain(wc_cache *c)
{
	ck_assert_int_eq(wc_set_cleaner(c, true), 0);
	for (unsigned i = 0; i < 20000 && stats(c).dirty_blocks; i++)
		ck_assert_int_ge(wc_poll_timeout(c, 64, 5), 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 0);
}

START_TEST(test_writeback_steps_do_not_wait)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	wc_cache *c = open_block_on(fo, LOOP_OPTS, true);
	struct model *m = model_new(ORIGIN_BLOCKS);
	int due;

	for (uint64_t b = 0; b < 200; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .delay_us = SLOW_US });
	ck_assert_msg(poll_until_out(c, fo), "no step returned with write-back's requests out");
	/* Out: the loop is to come back for them soon, not never. */
	due = wc_next_deadline_ms(c);
	ck_assert_int_ge(due, 0);
	ck_assert_int_le(due, 5);
	/* Writes go on meanwhile, and reads see them. */
	for (uint64_t b = 0; b < 20; b++)
		model_write(c, m, b, 1, 0);
	model_check_cache(c, m, "while write-back's requests are out");
	drain(c);
	fault_origin_set_faults(fo, NULL);
	ck_assert_uint_gt(stats(c).writeback_ios, 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

struct done_log {
	unsigned calls;
	ssize_t res;
};

static void on_done(struct wc_request *req, ssize_t res)
{
	struct done_log *d = req->priv;

	d->calls++;
	d->res = res;
}

START_TEST(test_read_misses_complete_in_polls)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	wc_cache *c = open_block_on(fo, LOOP_OPTS, true);
	struct model *m = model_new(ORIGIN_BLOCKS);
	uint8_t *buf = aligned_alloc(4096, 4 * BS), *want = aligned_alloc(4096, BS);
	struct iovec iov[2] = { { buf, BS + 100 }, { buf + BS + 100, 3 * BS - 100 } };
	struct wc_request req;
	struct done_log d = { 0, 0 };

	/* Blocks 10 and 12 cached; 11 and 13 only at the origin. */
	model_write(c, m, 10, 1, 0);
	model_write(c, m, 12, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0); /* records done: the hits are device reads */
	memset(want, 0x71, BS);
	ck_assert_int_eq(fault_origin_load(fo, want, BS, 11 * BS), 0);
	memset(want, 0x73, BS);
	ck_assert_int_eq(fault_origin_load(fo, want, BS, 13 * BS), 0);
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .delay_us = SLOW_US });
	wc_request_init(&req);
	req.op = WC_REQ_READ;
	req.iov = iov; /* split inside block 11: a miss through a bounce */
	req.iovcnt = 2;
	req.offset = 10 * BS;
	req.done = on_done;
	req.priv = &d;
	ck_assert_int_eq(wc_submit(c, &req), 0);
	ck_assert_uint_eq(d.calls, 0);
	ck_assert_uint_gt(counters(fo).inflight, 0);
	for (unsigned i = 0; i < 20000 && !d.calls; i++)
		ck_assert_int_ge(wc_poll_timeout(c, 64, 1), 0);
	ck_assert_uint_eq(d.calls, 1);
	ck_assert_int_eq(d.res, 4 * BS);
	assert_block(buf, 10, m->v[10], "a hit before a miss");
	assert_block(buf + 2 * BS, 12, m->v[12], "a hit between misses");
	memset(want, 0x71, BS);
	ck_assert_mem_eq(buf + BS, want, BS);
	memset(want, 0x73, BS);
	ck_assert_mem_eq(buf + 3 * BS, want, BS);
	fault_origin_set_faults(fo, NULL);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	free(want);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Records without FUA: no thread of the cache completes them; a discard
 * waits for the ones before it, so it must complete them itself.  (No
 * write-back: a discarded block then reads as the origin's zeros.) */
START_TEST(test_discard_after_records)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	wc_cache *c = open_block_on(fo, "no_threads=1,high_watermark=100,low_watermark=99,max_age_ms=0",
	                            true);
	struct model *m = model_new(ORIGIN_BLOCKS);

	for (unsigned round = 0; round < 10; round++) {
		for (uint64_t b = 0; b < 16; b++)
			model_write(c, m, (round * 7 + b) % ORIGIN_BLOCKS, 1, 0);
		ck_assert_int_eq(wc_discard(c, (uint64_t)(round * 7 + 3) % ORIGIN_BLOCKS * BS, 2 * BS), 0);
		for (unsigned k = 0; k < 2; k++)
			m->v[(round * 7 + 3 + k) % ORIGIN_BLOCKS] = NEVER;
	}
	model_check_cache(c, m, "after discards");
	ck_assert_int_eq(wc_close(c), 0);
	c = open_block_on(fo, "no_threads=1", false);
	model_check_cache(c, m, "after a reopen");
	ck_assert_int_eq(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* A close while a step's requests are out waits for them, and frees only
 * what they made durable. */
START_TEST(test_close_with_requests_out)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	wc_cache *c = open_block_on(fo, LOOP_OPTS, true);
	struct model *m = model_new(ORIGIN_BLOCKS);

	for (uint64_t b = 0; b < 200; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .delay_us = SLOW_US });
	ck_assert(poll_until_out(c, fo));
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_uint_eq(counters(fo).inflight_at_close, 0);
	fault_origin_set_faults(fo, NULL);
	c = open_block_on(fo, "no_threads=1", false);
	model_check_cache(c, m, "after a close with requests out");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

static Suite *block_loop_suite(void)
{
	Suite *s = suite_create("block_loop");
	TCase *tc = tcase_create("loop");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_writeback_steps_do_not_wait);
	tcase_add_test(tc, test_read_misses_complete_in_polls);
	tcase_add_test(tc, test_discard_after_records);
	tcase_add_test(tc, test_close_with_requests_out);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(block_loop_suite());
}
