/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_async.c -- vectored and asynchronous requests: wc_writev/wc_readv
 * over buffers that split blocks, wc_submit completing at once and later
 * (the cache's I/O threads; without threads, misses at the origin and
 * -EAGAIN for a write without room), the event fd, wc_poll's answer on a
 * threaded cache, range write-back and invalidation, bad requests, and
 * wc_close delivering what is in flight.
 */
#include <poll.h>
#include <sys/uio.h>

#include "testmain.h"
#include "wbtest.h"

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

static void prep(struct wc_request *req, struct done_log *d, uint32_t op, struct iovec *iov, int n,
                 uint64_t offset)
{
	wc_request_init(req);
	req->op = op;
	req->iov = iov;
	req->iovcnt = n;
	req->offset = offset;
	req->done = on_done;
	req->priv = d;
	*d = (struct done_log){ 0, 0 };
}

/* Deliver completions until `d` has its one. */
static void wait_done(wc_cache *c, struct done_log *d)
{
	for (unsigned i = 0; i < 20000 && !d->calls; i++)
		ck_assert_int_ge(wc_poll_timeout(c, 64, 1), 0);
	ck_assert_uint_eq(d->calls, 1);
}

/* Three blocks written through five buffers that split two of them, read
 * back through three other buffers, and compared with a flat copy. */
START_TEST(test_vectored_split_blocks)
{
	struct fault_origin *fo = new_origin(64);
	wc_cache *c = create_on(fo, 32, "");
	uint8_t *flat = malloc(3 * BS), *back = calloc(1, 3 * BS);
	size_t cut[] = { 100, BS, 2 * BS - 200, 50, 3 * BS - 100 - BS - (2 * BS - 200) - 50 };
	struct iovec wv[5], rv[3];
	size_t at = 0;

	for (unsigned i = 0; i < 3 * BS; i++)
		flat[i] = (uint8_t)(i * 7 + 3);
	for (int i = 0; i < 5; i++) {
		wv[i] = (struct iovec){ flat + at, cut[i] };
		at += cut[i];
	}
	ck_assert_uint_eq(at, 3 * BS);
	ck_assert_int_eq(wc_writev(c, wv, 5, 8 * BS, WC_FUA), 3 * BS);
	rv[0] = (struct iovec){ back, 1 };
	rv[1] = (struct iovec){ back + 1, BS + 17 };
	rv[2] = (struct iovec){ back + BS + 18, 2 * BS - 18 };
	ck_assert_int_eq(wc_readv(c, rv, 3, 8 * BS), 3 * BS);
	ck_assert_mem_eq(back, flat, 3 * BS);
	/* And from the origin, after write-back: the misses' path. */
	ck_assert_int_eq(wc_writeback(c), 0);
	memset(back, 0, 3 * BS);
	ck_assert_int_eq(wc_readv(c, rv, 3, 8 * BS), 3 * BS);
	ck_assert_mem_eq(back, flat, 3 * BS);
	/* Bad vectors: named. */
	ck_assert_int_eq(wc_readv(c, rv, 0, 0), -EINVAL);
	rv[0].iov_base = NULL;
	ck_assert_int_eq(wc_readv(c, rv, 3, 0), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "iov[0]"));
	wv[0].iov_len = 99; /* the sum is no longer whole blocks */
	ck_assert_int_eq(wc_writev(c, wv, 5, 0, 0), -EINVAL);
	ck_assert_int_eq(wc_close(c), 0);
	free(flat);
	free(back);
	fault_origin_destroy(fo);
}
END_TEST

/* pmem: hits, writes with room and flushes complete inside wc_submit;
 * a miss completes later, through the event fd and wc_poll_timeout. */
static void submit_now_and_later(const char *opts)
{
	struct fault_origin *fo = new_origin(64);
	wc_cache *c = create_on(fo, 32, opts);
	uint8_t *buf = aligned_alloc(BS, BS), *in = aligned_alloc(BS, BS);
	struct iovec iov = { buf, BS }, iin = { in, BS };
	struct wc_request req;
	struct done_log d;
	struct pollfd p;
	int efd = wc_event_fd(c);

	ck_assert_int_ge(efd, 0);
	memset(buf, 0xab, BS);
	prep(&req, &d, WC_REQ_WRITE, &iov, 1, 5 * BS);
	req.flags = WC_FUA;
	ck_assert_int_eq(wc_submit(c, &req), 0);
	ck_assert_uint_eq(d.calls, 1); /* at once */
	ck_assert_int_eq(d.res, BS);
	prep(&req, &d, WC_REQ_READ, &iin, 1, 5 * BS);
	ck_assert_int_eq(wc_submit(c, &req), 0);
	ck_assert_uint_eq(d.calls, 1);
	ck_assert_int_eq(d.res, BS);
	ck_assert_mem_eq(in, buf, BS);
	prep(&req, &d, WC_REQ_FLUSH, NULL, 0, 0);
	ck_assert_int_eq(wc_submit(c, &req), 0);
	ck_assert_uint_eq(d.calls, 1);
	ck_assert_int_eq(d.res, 0);

	/* A miss: later, announced by the descriptor. */
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .delay_us = 20000 });
	memset(in, 0x11, BS);
	prep(&req, &d, WC_REQ_READ, &iin, 1, 40 * BS);
	ck_assert_int_eq(wc_submit(c, &req), 0);
	ck_assert_uint_eq(d.calls, 0);
	for (unsigned i = 0; i < 2000 && !d.calls; i++) {
		p = (struct pollfd){ .fd = efd, .events = POLLIN };
		int wait = wc_next_deadline_ms(c);

		ck_assert_int_ge(poll(&p, 1, wait < 0 || wait > 50 ? 50 : wait), 0);
		ck_assert_int_ge(wc_poll_timeout(c, 16, 0), 0);
	}
	ck_assert_uint_eq(d.calls, 1);
	ck_assert_int_eq(d.res, BS);
	for (unsigned i = 0; i < BS; i++)
		ck_assert_uint_eq(in[i], 0);
	fault_origin_set_faults(fo, NULL);

	/* A miss that fails: the error and its message reach done(). */
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .fail_read_offset = 50 * BS,
	                                                           .fail_read_len = BS });
	prep(&req, &d, WC_REQ_READ, &iin, 1, 50 * BS);
	ck_assert_int_eq(wc_submit(c, &req), 0);
	wait_done(c, &d);
	ck_assert_int_eq(d.res, -EIO);
	fault_origin_set_faults(fo, NULL);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	free(in);
	fault_origin_destroy(fo);
}

START_TEST(test_submit_threads) { submit_now_and_later(""); }
END_TEST
START_TEST(test_submit_no_threads) { submit_now_and_later("no_threads=1"); }
END_TEST

/* Without threads a write that finds no free block is refused with
 * -EAGAIN (nothing waits inside wc_submit), and goes in once the host's
 * polls wrote enough back; every block reads back. */
START_TEST(test_no_threads_eagain_then_room)
{
	struct fault_origin *fo = new_origin(256);
	wc_cache *c = create_on(fo, 16, "no_threads=1");
	uint8_t *buf = aligned_alloc(BS, BS);
	struct iovec iov = { buf, BS };
	struct wc_request req;
	struct done_log d;
	unsigned refused = 0;

	for (uint64_t b = 0; b < 200; b++) {
		memset(buf, (int)(b + 1), BS);
		for (unsigned tries = 0;; tries++) {
			prep(&req, &d, WC_REQ_WRITE, &iov, 1, b * BS);
			int r = wc_submit(c, &req);

			if (r == 0)
				break;
			ck_assert_int_eq(r, -EAGAIN);
			ck_assert_uint_eq(d.calls, 0);
			refused++;
			ck_assert_uint_lt(tries, 100000);
			ck_assert_int_ge(wc_poll_timeout(c, 64, 1), 0);
		}
		ck_assert_uint_eq(d.calls, 1);
		ck_assert_int_eq(d.res, BS);
	}
	ck_assert_uint_gt(refused, 0);
	for (uint64_t b = 0; b < 200; b++) {
		ck_assert_int_eq(wc_read(c, buf, BS, b * BS), BS);
		ck_assert_uint_eq(buf[0], (uint8_t)(b + 1));
		ck_assert_uint_eq(buf[BS - 1], (uint8_t)(b + 1));
	}
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	fault_origin_destroy(fo);
}
END_TEST

/* Range write-back writes back the range and leaves the rest dirty;
 * invalidate leaves the data readable (from the origin). */
START_TEST(test_range_writeback_invalidate)
{
	struct fault_origin *fo = new_origin(256);
	wc_cache *c = create_on(fo, 64, "high_watermark=100,low_watermark=99");
	uint8_t *buf = aligned_alloc(BS, BS);
	struct wc_request req;
	struct done_log d;

	for (uint64_t b = 0; b < 20; b++) {
		memset(buf, (int)(b + 1), BS);
		ck_assert_int_eq(wc_write(c, buf, BS, b * BS, 0), BS);
	}
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 20);
	prep(&req, &d, WC_REQ_WRITEBACK, NULL, 0, 0);
	req.len = 5 * BS;
	ck_assert_int_eq(wc_submit(c, &req), 0);
	wait_done(c, &d);
	ck_assert_int_eq(d.res, 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 15);
	ck_assert_uint_eq(fault_origin_durable(fo)[4 * BS], 5);
	ck_assert_uint_eq(fault_origin_durable(fo)[5 * BS], 0);
	prep(&req, &d, WC_REQ_INVALIDATE, NULL, 0, 10 * BS);
	req.len = 5 * BS;
	ck_assert_int_eq(wc_submit(c, &req), 0);
	wait_done(c, &d);
	ck_assert_int_eq(d.res, 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 10);
	for (uint64_t b = 0; b < 20; b++) {
		ck_assert_int_eq(wc_read(c, buf, BS, b * BS), BS);
		ck_assert_uint_eq(buf[0], (uint8_t)(b + 1));
	}
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	fault_origin_destroy(fo);
}
END_TEST

/* Bad requests are refused whole and done() never runs; wc_poll on a
 * threaded cache with nothing to deliver says it needs no polling. */
START_TEST(test_bad_requests)
{
	struct fault_origin *fo = new_origin(64);
	wc_cache *c = create_on(fo, 32, "");
	uint8_t *buf = aligned_alloc(BS, BS);
	struct iovec iov = { buf, BS };
	struct wc_request req;
	struct done_log d;

	prep(&req, &d, WC_REQ_WRITE, &iov, 1, 3);
	ck_assert_int_eq(wc_submit(c, &req), -EINVAL);
	prep(&req, &d, 99, &iov, 1, 0);
	ck_assert_int_eq(wc_submit(c, &req), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "op 99"));
	prep(&req, &d, WC_REQ_READ, &iov, 1, 0);
	req.size = 8;
	ck_assert_int_eq(wc_submit(c, &req), -EINVAL);
	prep(&req, &d, WC_REQ_READ, &iov, 1, 0);
	req.done = NULL;
	ck_assert_int_eq(wc_submit(c, &req), -EINVAL);
	prep(&req, &d, WC_REQ_READ, &iov, 1, 0);
	req.reserved[2] = 1;
	ck_assert_int_eq(wc_submit(c, &req), -EINVAL);
	prep(&req, &d, WC_REQ_READ, &iov, 1, 0);
	req.flags = WC_FUA;
	ck_assert_int_eq(wc_submit(c, &req), -EINVAL);
	prep(&req, &d, WC_REQ_DISCARD, NULL, 0, 0);
	req.len = 100;
	ck_assert_int_eq(wc_submit(c, &req), -EINVAL);
	ck_assert_uint_eq(d.calls, 0);
	ck_assert_int_eq(wc_submit(NULL, &req), -EINVAL);
	ck_assert_int_eq(wc_submit(c, NULL), -EINVAL);
	ck_assert_int_eq(wc_poll(c, 4), -EOPNOTSUPP);
	ck_assert_int_eq(wc_poll_timeout(c, 4, -2), -EINVAL);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	fault_origin_destroy(fo);
}
END_TEST

/* Requests still in flight at wc_close complete there. */
START_TEST(test_close_delivers)
{
	struct fault_origin *fo = new_origin(256);
	wc_cache *c = create_on(fo, 32, "");
	uint8_t *buf = aligned_alloc(BS, 8 * BS);
	struct iovec iov[8];
	struct wc_request req[8];
	struct done_log d[8];

	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .delay_us = 5000 });
	for (int i = 0; i < 8; i++) {
		iov[i] = (struct iovec){ buf + i * BS, BS };
		prep(&req[i], &d[i], WC_REQ_READ, &iov[i], 1, (uint64_t)(100 + i) * BS);
		ck_assert_int_eq(wc_submit(c, &req[i]), 0);
	}
	ck_assert_int_eq(wc_close(c), 0);
	for (int i = 0; i < 8; i++) {
		ck_assert_uint_eq(d[i].calls, 1);
		ck_assert_int_eq(d[i].res, BS);
	}
	free(buf);
	fault_origin_destroy(fo);
}
END_TEST

/* Without threads, a close while a write-back step's writes are at the
 * origin waits for them (and frees only what they made durable). */
START_TEST(test_close_mid_step)
{
	struct fault_origin *fo = new_origin(256);
	wc_cache *c = create_on(fo, 64, "no_threads=1,high_watermark=10,low_watermark=5");
	uint8_t *buf = aligned_alloc(BS, BS);
	struct model *m = model_new(256);

	for (uint64_t b = 0; b < 40; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .delay_us = 20000 });
	/* One turn starts a round: its writes go out, none can complete. */
	ck_assert_int_gt(wc_poll_timeout(c, 4, 0), 0);
	ck_assert_uint_gt(counters(fo).inflight, 0);
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_uint_eq(counters(fo).inflight_at_close, 0);
	fault_origin_set_faults(fo, NULL);
	c = reopen_on(fo, "no_threads=1");
	model_check_cache(c, m, "after a close mid-step");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	free(buf);
	fault_origin_destroy(fo);
}
END_TEST

/* wc_poll on a threaded cache: 0 while a request is in flight and none
 * completed, -EOPNOTSUPP only with nothing in flight.  Without threads,
 * a write in cleaner mode goes around the cache inside wc_submit instead
 * of -EAGAIN for ever. */
START_TEST(test_poll_in_flight_and_cleaner)
{
	struct fault_origin *fo = new_origin(64);
	wc_cache *c = create_on(fo, 32, "");
	uint8_t *buf = aligned_alloc(BS, BS);
	struct iovec iov = { buf, BS };
	struct wc_request req;
	struct done_log d;

	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .delay_us = 50000 });
	prep(&req, &d, WC_REQ_READ, &iov, 1, 7 * BS);
	ck_assert_int_eq(wc_submit(c, &req), 0);
	ck_assert_int_eq(wc_poll(c, 4), 0);
	wait_done(c, &d);
	ck_assert_int_eq(d.res, BS);
	ck_assert_int_eq(wc_poll(c, 4), -EOPNOTSUPP);
	fault_origin_set_faults(fo, NULL);
	ck_assert_int_eq(wc_close(c), 0);

	c = reopen_on(fo, "no_threads=1,cleaner=1");
	memset(buf, 0x5a, BS);
	prep(&req, &d, WC_REQ_WRITE, &iov, 1, 9 * BS);
	ck_assert_int_eq(wc_submit(c, &req), 0);
	ck_assert_uint_eq(d.calls, 1);
	ck_assert_int_eq(d.res, BS);
	ck_assert_uint_eq(fault_origin_volatile(fo)[9 * BS], 0x5a);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	fault_origin_destroy(fo);
}
END_TEST

static Suite *async_suite(void)
{
	Suite *s = suite_create("async");
	TCase *tc = tcase_create("requests");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_vectored_split_blocks);
	tcase_add_test(tc, test_submit_threads);
	tcase_add_test(tc, test_submit_no_threads);
	tcase_add_test(tc, test_no_threads_eagain_then_room);
	tcase_add_test(tc, test_range_writeback_invalidate);
	tcase_add_test(tc, test_bad_requests);
	tcase_add_test(tc, test_close_delivers);
	tcase_add_test(tc, test_close_mid_step);
	tcase_add_test(tc, test_poll_in_flight_and_cleaner);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(async_suite());
}
