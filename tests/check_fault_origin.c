/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_fault_origin.c -- the fault-injecting test backend behaves as the
 * cache, write-back and crash tests assume: durable vs volatile images and
 * crashes, failing the Nth write or flush, failing reads in a range, slow
 * completions, misuse caught.
 */
#include "fault_origin.h"
#include "origin_testutil.h"
#include "testmain.h"

START_TEST(test_fault_images)
{
	struct fault_origin *fo;
	struct wc_origin o;
	uint8_t a[4096] IO_ALIGNED, b[4096] IO_ALIGNED, zero[4096] = { 0 }, r[4096] IO_ALIGNED;

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	fill_pattern(a, sizeof(a), 80);
	fill_pattern(b, sizeof(b), 81);

	sync_write(&o, a, sizeof(a), 0);
	ck_assert(memcmp(fault_origin_volatile(fo), a, sizeof(a)) == 0);
	ck_assert(memcmp(fault_origin_durable(fo), zero, sizeof(zero)) == 0);
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	ck_assert(memcmp(fault_origin_durable(fo), a, sizeof(a)) == 0);

	sync_write(&o, b, sizeof(b), 0);
	sync_write(&o, b, sizeof(b), 8192);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, r, sizeof(r), 0), 0);
	ck_assert(memcmp(r, b, sizeof(b)) == 0); /* reads see the volatile image */
	ck_assert_uint_eq(fault_origin_crash(fo), 0);
	ck_assert(memcmp(fault_origin_volatile(fo), a, sizeof(a)) == 0);
	ck_assert(memcmp(fault_origin_volatile(fo) + 8192, zero, sizeof(zero)) == 0);
	ck_assert(memcmp(fault_origin_durable(fo) + 8192, zero, sizeof(zero)) == 0);

	/* Loaded content is durable at once; discard zeroes, durably only
	 * after a flush. */
	ck_assert_int_eq(fault_origin_load(fo, b, sizeof(b), 65536), 0);
	ck_assert(memcmp(fault_origin_durable(fo) + 65536, b, sizeof(b)) == 0);
	ck_assert_int_eq(wc_origin_discard(&o, 65536, 4096), 0);
	ck_assert(memcmp(fault_origin_volatile(fo) + 65536, zero, sizeof(zero)) == 0);
	ck_assert(memcmp(fault_origin_durable(fo) + 65536, b, sizeof(b)) == 0);
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	ck_assert(memcmp(fault_origin_durable(fo) + 65536, zero, sizeof(zero)) == 0);
	ck_assert_int_eq(fault_origin_load(fo, b, sizeof(b), 1 * MiB), -EINVAL);
	fault_origin_destroy(fo);
}
END_TEST

START_TEST(test_fault_nth_write)
{
	struct fault_origin *fo;
	struct fault_origin_faults f = { .fail_write_nth = 3 };
	struct fault_origin_counters c;
	struct wc_origin o;
	uint8_t buf[512] IO_ALIGNED;
	int results[6];

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	memset(buf, 0xee, sizeof(buf));

	fault_origin_set_faults(fo, &f);      /* once */
	for (int i = 0; i < 6; i++)
		results[i] = wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 512, (uint64_t)i * 512);
	ck_assert_int_eq(results[0], 0);
	ck_assert_int_eq(results[1], 0);
	ck_assert_int_eq(results[2], -EIO);
	ck_assert_int_eq(results[3], 0);
	ck_assert_int_eq(results[5], 0);
	ck_assert_uint_eq(fault_origin_volatile(fo)[2 * 512], 0); /* the failed write changed nothing */
	ck_assert_uint_eq(fault_origin_volatile(fo)[3 * 512], 0xee);

	f.fail_write_persistent = true;       /* numbering restarts: writes 3.. fail */
	fault_origin_set_faults(fo, &f);
	for (int i = 0; i < 6; i++)
		results[i] = wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 512, (uint64_t)i * 512);
	ck_assert_int_eq(results[1], 0);
	ck_assert_int_eq(results[2], -EIO);
	ck_assert_int_eq(results[5], -EIO);
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.writes, 12);
	ck_assert_uint_eq(c.failed_writes, 5);

	fault_origin_reset_faults(fo);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 512, 0), 0);
	fault_origin_clear_counters(fo);
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.writes, 0);
	fault_origin_destroy(fo);
}
END_TEST

START_TEST(test_fault_read_range)
{
	struct fault_origin *fo;
	struct fault_origin_faults f = { .fail_read_offset = 8192, .fail_read_len = 1 };
	struct fault_origin_counters c;
	struct wc_origin o;
	uint8_t buf[4096] IO_ALIGNED;

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	fault_origin_set_faults(fo, &f);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 4096, 4096), 0);  /* ends before */
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 4096, 8192), -EIO);
	ck_assert(strstr(wc_errmsg(), "read of 4096 bytes at offset 8192") != NULL);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 4096, 6144), -EIO); /* overlaps */
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 512, 8704), 0);     /* after */
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, 8192), 0);   /* writes pass */
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.failed_reads, 2);
	ck_assert_uint_eq(c.reads, 4);
	fault_origin_destroy(fo);
}
END_TEST

/* A delayed request never completes early.  (Only the lower bound is a
 * property of the backend; how late it is depends on the machine.) */
START_TEST(test_fault_delay)
{
	struct fault_origin *fo;
	struct fault_origin_faults f = { .delay_us = 20000 };
	struct wc_origin o;
	uint8_t buf[512] IO_ALIGNED = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct wc_origin_io io = { .op = WC_ORIGIN_WRITE, .iov = &iov, .iovcnt = 1 };
	struct one_done d;
	uint64_t start;
	int n;

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	fault_origin_set_faults(fo, &f);
	one_done_arm(&io, &d);
	start = mono_ns();
	ck_assert_int_eq(wc_origin_submit(&o, &io), 0);
	n = wc_origin_poll(&o, 1, 0);
	if (n == 1)
		ck_assert_uint_ge(mono_ns() - start, 20000000ull);
	while (atomic_load(&d.calls) == 0)
		ck_assert_int_ge(wc_origin_poll(&o, 1, UINT64_MAX), 0); /* no timeout */
	ck_assert_uint_ge(mono_ns() - start, 20000000ull);
	ck_assert_int_eq(d.res, 512);
	ck_assert_int_eq(atomic_load(&d.calls), 1);
	fault_origin_destroy(fo);
}
END_TEST

START_TEST(test_fault_kth_poll)
{
	struct fault_origin *fo;
	struct fault_origin_faults f = { .complete_on_poll = 3 };
	struct wc_origin o;
	uint8_t buf[512] IO_ALIGNED = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct wc_origin_io io = { .op = WC_ORIGIN_READ, .iov = &iov, .iovcnt = 1 };
	struct one_done d;

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	fault_origin_set_faults(fo, &f);
	one_done_arm(&io, &d);
	ck_assert_int_eq(wc_origin_submit(&o, &io), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 1, 0), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 1, 0), 0);
	ck_assert_int_eq(atomic_load(&d.calls), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 1, 0), 1);
	ck_assert_int_eq(atomic_load(&d.calls), 1);

	/* A blocking poll does not wait forever for poll-counted requests. */
	f.complete_on_poll = 50;
	fault_origin_set_faults(fo, &f);
	one_done_arm(&io, &d);
	ck_assert_int_eq(wc_origin_submit(&o, &io), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 1, UINT64_MAX), 1);
	ck_assert_int_eq(atomic_load(&d.calls), 1);
	fault_origin_destroy(fo);
}
END_TEST

START_TEST(test_fault_flush_failure)
{
	struct fault_origin *fo;
	struct fault_origin_faults f = { .fail_flush_nth = 2 };
	struct fault_origin_counters c;
	struct wc_origin o;
	uint8_t buf[512] IO_ALIGNED;

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	fault_origin_set_faults(fo, &f);
	memset(buf, 1, sizeof(buf));
	sync_write(&o, buf, sizeof(buf), 0);
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	memset(buf, 2, sizeof(buf));
	sync_write(&o, buf, sizeof(buf), 0);
	ck_assert_int_eq(wc_origin_flush(&o), -EIO);
	ck_assert(strstr(wc_errmsg(), "flush") != NULL);
	ck_assert_uint_eq(fault_origin_durable(fo)[0], 1); /* not made durable */
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	ck_assert_uint_eq(fault_origin_durable(fo)[0], 2);
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.flushes, 3);
	ck_assert_uint_eq(c.failed_flushes, 1);
	fault_origin_destroy(fo);
}
END_TEST

START_TEST(test_fault_crash_inflight)
{
	struct fault_origin *fo;
	struct fault_origin_counters c;
	struct wc_origin o;
	uint8_t buf[512] IO_ALIGNED;
	struct iovec iov = { buf, sizeof(buf) };
	struct wc_origin_io io = { .op = WC_ORIGIN_WRITE, .iov = &iov, .iovcnt = 1 };
	struct one_done d;

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	memset(buf, 7, sizeof(buf));
	one_done_arm(&io, &d);
	ck_assert_int_eq(wc_origin_submit(&o, &io), 0);
	wc_origin_close(&o);
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.closes, 1);
	ck_assert_uint_eq(c.inflight_at_close, 1); /* a contract violation, recorded */
	ck_assert_uint_eq(fault_origin_crash(fo), 1);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	ck_assert_int_eq(atomic_load(&d.calls), 0);
	ck_assert_uint_eq(fault_origin_volatile(fo)[0], 0);
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.inflight, 0);
	fault_origin_destroy(fo);
}
END_TEST

/* Every unflushed sector comes back whole, old or new; both happen; the
 * seed decides. */
static void partial_crash_image(uint64_t seed, uint8_t *out, size_t len)
{
	struct fault_origin *fo;
	struct wc_origin o;
	uint8_t *buf = aligned_buf(len);

	ck_assert_int_eq(fault_origin_create(&fo, len, 512), 0);
	o = fault_origin_origin(fo);
	memset(buf, 0x11, len);
	sync_write(&o, buf, len, 0);
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	memset(buf, 0x22, len);
	sync_write(&o, buf, len, 0);
	fault_origin_crash_partial(fo, seed);
	ck_assert(memcmp(fault_origin_volatile(fo), fault_origin_durable(fo), len) == 0);
	memcpy(out, fault_origin_volatile(fo), len);
	fault_origin_destroy(fo);
	free(buf);
}

START_TEST(test_fault_crash_partial)
{
	enum { LEN = 64 * 512 };
	uint8_t *a = malloc(LEN), *b = malloc(LEN), *c = malloc(LEN);
	unsigned old = 0, new = 0;

	partial_crash_image(1, a, LEN);
	partial_crash_image(1, b, LEN);
	partial_crash_image(2, c, LEN);
	ck_assert(memcmp(a, b, LEN) == 0);
	ck_assert(memcmp(a, c, LEN) != 0);
	for (size_t s = 0; s < LEN / 512; s++) {
		for (size_t i = 1; i < 512; i++)
			ck_assert_uint_eq(a[s * 512 + i], a[s * 512]);
		old += a[s * 512] == 0x11;
		new += a[s * 512] == 0x22;
	}
	ck_assert_uint_eq(old + new, LEN / 512);
	ck_assert_uint_gt(old, 0);
	ck_assert_uint_gt(new, 0);
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(test_fault_bad_requests)
{
	struct fault_origin *fo;
	struct wc_origin o;
	uint8_t *buf = aligned_buf(8192);

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, 100), -EINVAL);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf + 1, 4096, 0), -EINVAL);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 8192, 1 * MiB - 4096), -EINVAL);
	ck_assert_int_eq(wc_origin_discard(&o, 1 * MiB, 512), -EINVAL);
	fault_origin_destroy(fo);
	ck_assert_int_eq(fault_origin_create(&fo, 0, 512), -EINVAL);
	ck_assert_int_eq(fault_origin_create(&fo, 4096, 3), -EINVAL);
	free(buf);
}
END_TEST

static Suite *fault_origin_suite(void)
{
	Suite *s = suite_create("fault_origin");
	TCase *images = tcase_create("images"), *faults = tcase_create("faults");

	tcase_add_test(images, test_fault_images);
	tcase_add_test(images, test_fault_crash_inflight);
	tcase_add_test(images, test_fault_crash_partial);
	suite_add_tcase(s, images);

	tcase_add_test(faults, test_fault_nth_write);
	tcase_add_test(faults, test_fault_read_range);
	tcase_add_test(faults, test_fault_delay);
	tcase_add_test(faults, test_fault_kth_poll);
	tcase_add_test(faults, test_fault_flush_failure);
	tcase_add_test(faults, test_fault_bad_requests);
	suite_add_tcase(s, faults);
	return s;
}

int main(void)
{
	return wc_test_main(fault_origin_suite());
}
