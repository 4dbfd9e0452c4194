/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_block_range.c -- range write-back and cache-only invalidation on
 * the block medium (lib/block/range.c), over the fault origin: a range
 * write-back writes that range and nothing else, and what is written after
 * it is not lost; an invalidation drops the range (reads then go to the
 * origin, which the tests change behind the cache's back), durably across
 * a reopen, without losing a write that lands after or during it; a
 * failing origin is the caller's error, never the cache's; bad ranges are
 * refused with a message.  With the cache's threads and without.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "testmain.h"
#include "wbtest.h"

#define ORIGIN_BLOCKS 256u
#define CACHE_BYTES (2u << 20) /* ten segments of 192 KiB */
/* No write-back of its own while a test looks: neither watermarks nor age. */
#define QUIET "high_watermark=100,low_watermark=99,max_age_ms=0"

/* The loop's run: 0 with the cache's threads, 1 without (the block
 * medium's range requests then run inside wc_submit). */
static const char *mode_opts[] = { QUIET, QUIET ",no_threads=1" };
static const char *opts_now = QUIET;

static wc_cache *block_on(struct fault_origin *fo, const char *opts)
{
	return create_block_on(fo, "wcrange", CACHE_BYTES, opts);
}

/* A cache in the loop's mode, which reopen_mode keeps. */
static wc_cache *create_mode(struct fault_origin *fo, int i)
{
	opts_now = mode_opts[i];
	return block_on(fo, opts_now);
}

static wc_cache *reopen_mode(struct fault_origin *fo)
{
	return reopen_block_on(fo, opts_now);
}

/* ---- requests ---- */

struct done_log {
	unsigned calls;
	ssize_t res;
	char msg[512];
};

static void on_done(struct wc_request *req, ssize_t res)
{
	struct done_log *d = req->priv;

	d->calls++;
	d->res = res;
	snprintf(d->msg, sizeof(d->msg), "%s", res < 0 ? wc_errmsg() : "");
}

/* Submit a range request (blocks [first, first + n)) and wait for its
 * completion: its result, its message in d. */
static ssize_t range_req(wc_cache *c, uint32_t op, uint64_t first, uint64_t n, struct done_log *d)
{
	struct wc_request req;
	int ret;

	wc_request_init(&req);
	req.op = op;
	req.offset = first * BS;
	req.len = n * BS;
	req.done = on_done;
	req.priv = d;
	*d = (struct done_log){ 0 };
	ret = wc_submit(c, &req);
	ck_assert_msg(ret == 0, "submit: %d %s", ret, wc_errmsg());
	for (unsigned i = 0; i < 20000 && !d->calls; i++)
		ck_assert_int_ge(wc_poll_timeout(c, 64, 1), 0);
	ck_assert_uint_eq(d->calls, 1);
	return d->res;
}

static void writeback_range(wc_cache *c, uint64_t first, uint64_t n)
{
	struct done_log d;

	ck_assert_msg(range_req(c, WC_REQ_WRITEBACK, first, n, &d) == 0, "write-back: %s", d.msg);
}

static void invalidate(wc_cache *c, uint64_t first, uint64_t n)
{
	struct done_log d;

	ck_assert_msg(range_req(c, WC_REQ_INVALIDATE, first, n, &d) == 0, "invalidate: %s", d.msg);
}

/* The origin's blocks [first, first + n) hold `version` now (both images),
 * behind the cache's back; the model says so unless it is NULL. */
static void origin_set(struct fault_origin *fo, struct model *m, uint64_t first, unsigned n, uint64_t version)
{
	uint8_t *buf = aligned_alloc(4096, BS);

	for (unsigned i = 0; i < n; i++) {
		ct_fill_block(buf, BS, first + i, version);
		ck_assert_int_eq(fault_origin_load(fo, buf, BS, (first + i) * BS), 0);
		if (m)
			m->v[first + i] = version;
	}
	free(buf);
}

/* Read block b through the cache: the version it holds. */
static uint64_t read_version(wc_cache *c, uint64_t b)
{
	uint8_t *buf = aligned_alloc(4096, BS);
	uint64_t v;

	ck_assert_msg(wc_read(c, buf, BS, b * BS) == BS, "read %llu: %s", (unsigned long long)b, wc_errmsg());
	v = ct_block_version(buf, BS, b);
	free(buf);
	return v;
}

static void teardown(void)
{
	if (block_path[0])
		unlink(block_path);
}

/* ---- write-back of a range ---- */

/* Only the range reaches the origin, the rest stays dirty; versions written
 * after it (in the range and beside it), and older versions of its blocks
 * still in older segments, end right at the origin. */
START_TEST(test_writeback_range_only)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_mode(fo, _i);
	struct fault_origin_counters fc;

	/* Blocks 10..19 twice: their first versions stay in older segments. */
	for (uint64_t b = 0; b < 64; b++)
		model_write(c, m, b, 1, 0);
	for (uint64_t b = 10; b < 20; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 64);
	fault_origin_clear_counters(fo);
	writeback_range(c, 8, 16);
	ck_assert_uint_eq(stats(c).dirty_blocks, 48);
	ck_assert_uint_eq(stats(c).error, 0);
	fc = counters(fo);
	ck_assert_uint_eq(fc.bytes_written, 16 * BS);
	for (uint64_t b = 0; b < ORIGIN_BLOCKS; b++)
		assert_block(fault_origin_durable(fo) + b * BS, b, b >= 8 && b < 24 ? m->v[b] : NEVER,
		             "origin after the range's write-back");
	/* Again: nothing dirty left there, nothing written. */
	writeback_range(c, 8, 16);
	ck_assert_uint_eq(counters(fo).bytes_written, 16 * BS);
	/* Written back, the blocks are still cached (clean): a change of the
	 * origin behind the cache's back is not what reads see. */
	origin_set(fo, NULL, 12, 1, 999999);
	ck_assert_uint_eq(read_version(c, 12), m->v[12]);
	origin_set(fo, NULL, 12, 1, m->v[12]);
	/* Later writes, in the range and around it. */
	model_write(c, m, 9, 2, 0);
	model_write(c, m, 30, 1, WC_FUA);
	model_write(c, m, 100, 4, 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 48 + 2 + 4);
	model_check_cache(c, m, "after the range's write-back");
	ck_assert_int_eq(wc_close(c), 0);
	c = reopen_mode(fo);
	model_check_cache(c, m, "reopened");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* A range longer than one pass of lookups (512-byte blocks, so that the
 * origin stays small): its dirty blocks at both ends and between reach the
 * origin through one range request, and nothing else does. */
START_TEST(test_writeback_long_range)
{
	const uint64_t nb = 150000;
	const uint64_t dirty[] = { 0, 1, 70000, 70001, 140000, nb - 1 };
	const size_t n_dirty = sizeof(dirty) / sizeof(dirty[0]);
	struct fault_origin *fo = NULL;
	uint8_t *buf = aligned_alloc(4096, 4096);
	struct done_log d;
	wc_cache *c;

	ck_assert_int_eq(fault_origin_create(&fo, nb * 512, 512), 0);
	opts_now = mode_opts[_i];
	{
		char opts[160];

		snprintf(opts, sizeof(opts), "block_size=512,%s", opts_now);
		c = block_on(fo, opts);
	}
	for (size_t i = 0; i < n_dirty; i++) {
		ct_fill_block(buf, 512, dirty[i], 10 + i);
		ck_assert_msg(wc_write(c, buf, 512, dirty[i] * 512, 0) == 512, "%s", wc_errmsg());
	}
	ck_assert_uint_eq(stats(c).dirty_blocks, n_dirty);
	fault_origin_clear_counters(fo);
	ck_assert_msg(range_req(c, WC_REQ_WRITEBACK, 0, nb / 8, &d) == 0, "%s", d.msg); /* BS units */
	ck_assert_uint_eq(stats(c).dirty_blocks, 0);
	ck_assert_uint_eq(counters(fo).bytes_written, n_dirty * 512);
	for (size_t i = 0; i < n_dirty; i++)
		ck_assert_int_eq(ct_block_is(fault_origin_durable(fo) + dirty[i] * 512, 512, dirty[i],
		                             10 + i), 0);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	fault_origin_destroy(fo);
}
END_TEST

/* ---- invalidation ---- */

/* The range leaves the cache: its dirty blocks reach the origin first, then
 * reads go to the origin (changed behind the cache's back to tell), before
 * and after a reopen; the blocks beside it stay cached and dirty. */
START_TEST(test_invalidate_drops_range)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_mode(fo, _i);
	uint64_t hits0;

	for (uint64_t b = 0; b < 64; b++)
		model_write(c, m, b, 1, b % 5 ? 0 : WC_FUA);
	model_write(c, m, 12, 4, 0); /* older versions in older segments */
	ck_assert_int_eq(wc_flush(c), 0);
	/* Some of the range clean already. */
	writeback_range(c, 8, 2);
	invalidate(c, 8, 16);
	ck_assert_uint_eq(stats(c).dirty_blocks, 48);
	for (uint64_t b = 8; b < 24; b++)
		assert_block(fault_origin_durable(fo) + b * BS, b, m->v[b], "origin after the invalidation");
	/* Its blocks are read from the origin now; the others from the cache. */
	origin_set(fo, m, 8, 16, 5000);
	hits0 = stats(c).read_hits;
	for (uint64_t b = 8; b < 24; b++)
		ck_assert_uint_eq(read_version(c, b), 5000);
	ck_assert_uint_eq(stats(c).read_hits, hits0);
	/* Dirty in the cache beside the range: the cache's version wins. */
	origin_set(fo, NULL, 30, 1, 6000);
	ck_assert_uint_eq(read_version(c, 30), m->v[30]);
	ck_assert_uint_eq(stats(c).read_hits, hits0 + 1);
	ck_assert_int_eq(wc_close(c), 0);
	/* The record hides the older versions from recovery too. */
	origin_set(fo, m, 8, 16, 7000);
	c = reopen_mode(fo);
	for (uint64_t b = 8; b < 24; b++)
		ck_assert_uint_eq(read_version(c, b), 7000);
	model_check_cache(c, m, "reopened");
	/* And from write-back: the origin keeps what it was given. */
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* A write after the invalidation is the cache's, across a reopen too. */
START_TEST(test_invalidate_then_write)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_mode(fo, _i);

	for (uint64_t b = 0; b < 32; b++)
		model_write(c, m, b, 1, 0);
	invalidate(c, 0, 32);
	ck_assert_uint_eq(stats(c).dirty_blocks, 0);
	model_write(c, m, 3, 2, 0);
	model_write(c, m, 31, 1, WC_FUA);
	ck_assert_uint_eq(stats(c).dirty_blocks, 3);
	model_check_cache(c, m, "written after the invalidation");
	/* Invalidated again, a few times, some written between. */
	invalidate(c, 0, 8);
	model_write(c, m, 4, 1, 0);
	invalidate(c, 30, 2);
	ck_assert_uint_eq(stats(c).dirty_blocks, 1);
	model_check_cache(c, m, "after more invalidations");
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	c = reopen_mode(fo);
	ck_assert_uint_eq(stats(c).dirty_blocks, 1);
	model_check_cache(c, m, "reopened");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Writers and invalidations of the same blocks at once: every acknowledged
 * write is what reads see afterwards, before and after a reopen, and what
 * the origin gets. */
struct race {
	wc_cache *c;
	atomic_bool stop;
	uint64_t v[32]; /* the writer's acknowledged versions */
	unsigned writes;
	char err[256];
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	uint8_t *buf = aligned_alloc(4096, 2 * BS);
	uint64_t seed = 5, version = 100;

	while (!atomic_load(&r->stop) && !r->err[0]) {
		uint64_t b = ct_rand(&seed) % 31;
		unsigned n = 1 + (unsigned)(ct_rand(&seed) % 2);

		version++;
		for (unsigned i = 0; i < n; i++)
			ct_fill_block(buf + (size_t)i * BS, BS, b + i, version);
		if (wc_write(r->c, buf, (size_t)n * BS, b * BS, version % 7 ? 0 : WC_FUA) != (ssize_t)n * BS) {
			snprintf(r->err, sizeof(r->err), "write at %llu: %s", (unsigned long long)b,
			         wc_errmsg());
			break;
		}
		for (unsigned i = 0; i < n; i++)
			r->v[b + i] = version;
		r->writes++;
	}
	free(buf);
	return NULL;
}

START_TEST(test_invalidate_races_writes)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_mode(fo, _i);
	struct race r = { .c = c };
	pthread_t t;

	for (unsigned i = 0; i < 32; i++)
		r.v[i] = NEVER;
	ck_assert_int_eq(pthread_create(&t, NULL, race_writer, &r), 0);
	for (unsigned i = 0; i < 200; i++) {
		if (i % 3 == 2)
			writeback_range(c, i % 16, 16);
		else
			invalidate(c, i % 8, 24);
	}
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	ck_assert_msg(!r.err[0], "%s", r.err);
	ck_assert_uint_gt(r.writes, 0);
	memcpy(m->v, r.v, sizeof(r.v));
	model_check_cache(c, m, "after the race");
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	c = reopen_mode(fo);
	model_check_cache(c, m, "reopened after the race");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* The process dies after the invalidation, the cache not closed: the
 * open segment has no summary, and recovery finds the cache-only record by
 * its header (an origin file here: the fault origin would die with the
 * process). */
START_TEST(test_invalidate_survives_kill)
{
	char origin_file[PATH_MAX];
	const char *dir = getenv("WC_TEST_DISK_DIR");
	struct model *m = model_new(ORIGIN_BLOCKS);
	uint8_t *buf = aligned_alloc(4096, BS);
	struct wc_config cfg;
	wc_cache *c = NULL;
	int fd, status;
	pid_t pid;

	block_file("wcrange");
	snprintf(origin_file, sizeof(origin_file), "%s/wcrange-%d.origin", dir && *dir ? dir : "/var/tmp",
	         (int)getpid());
	fd = open(origin_file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)ORIGIN_BLOCKS * BS), 0);
	parse_opts(&cfg, "medium=block,cache_size=2M," QUIET, false);
	ck_assert_msg(wc_create(&c, block_path, origin_file, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_close(c), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct done_log d = { 0 };
		struct wc_request req;

		if (wc_open(&c, block_path, origin_file, NULL))
			_exit(2);
		for (uint64_t b = 0; b < 64; b++) {
			ct_fill_block(buf, BS, b, b + 1);
			if (wc_write(c, buf, BS, b * BS, 0) != BS)
				_exit(3);
		}
		wc_request_init(&req);
		req.op = WC_REQ_INVALIDATE;
		req.offset = 8 * BS;
		req.len = 16 * BS;
		req.done = on_done;
		req.priv = &d;
		if (wc_submit(c, &req))
			_exit(4);
		for (unsigned i = 0; i < 20000 && !d.calls; i++)
			wc_poll_timeout(c, 64, 1);
		if (d.calls != 1 || d.res != 0)
			_exit(5);
		/* Acknowledged beside the range, durable, not written back. */
		if (wc_flush(c))
			_exit(6);
		raise(SIGKILL);
		_exit(7);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status 0x%x", status);
	for (uint64_t b = 0; b < 64; b++)
		m->v[b] = b + 1;
	/* The origin changed behind the dead cache's back. */
	for (uint64_t b = 8; b < 24; b++) {
		ct_fill_block(buf, BS, b, 7000);
		ck_assert_int_eq(pwrite(fd, buf, BS, (off_t)(b * BS)), BS);
		m->v[b] = 7000;
	}
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_msg(wc_open(&c, block_path, origin_file, NULL) == 0, "%s", wc_errmsg());
	ck_assert_uint_eq(stats(c).dirty_blocks, 48);
	model_check_cache(c, m, "reopened after the kill");
	ck_assert_int_eq(wc_close(c), 0);
	close(fd);
	unlink(origin_file);
	free(buf);
	model_free(m);
}
END_TEST

/* ---- failures ---- */

/* The origin refuses writes: the range's write-back and its invalidation
 * fail with its errno, the cache is not in error state, the blocks stay
 * dirty and cached (across a reopen too: the invalidation's record hides
 * nothing); once the origin is back, both go through. */
START_TEST(test_origin_fails)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_mode(fo, _i);
	struct done_log d;

	for (uint64_t b = 0; b < 32; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .fail_write_nth = 1,
	                                                            .fail_write_persistent = true });
	ck_assert_int_eq(range_req(c, WC_REQ_WRITEBACK, 4, 8, &d), -EIO);
	ck_assert_msg(strstr(d.msg, "write-back of blocks 4..11"), "%s", d.msg);
	ck_assert_int_eq(stats(c).error, 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 32);
	ck_assert_uint_gt(stats(c).writeback_errors, 0);
	ck_assert_int_eq(range_req(c, WC_REQ_INVALIDATE, 0, 16, &d), -EIO);
	ck_assert_msg(strstr(d.msg, "write-back of blocks 0..15"), "%s", d.msg);
	ck_assert_int_eq(stats(c).error, 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 32);
	/* Still the cache's: the origin's own version is not what reads see. */
	origin_set(fo, NULL, 5, 1, 8000);
	model_check_cache(c, m, "after the failures");
	/* Writes go on. */
	model_write(c, m, 40, 2, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	c = reopen_mode(fo);
	ck_assert_uint_eq(stats(c).dirty_blocks, 34);
	model_check_cache(c, m, "reopened after the failures");
	fault_origin_set_faults(fo, NULL);
	writeback_range(c, 4, 8);
	ck_assert_uint_eq(stats(c).dirty_blocks, 26);
	invalidate(c, 0, 16);
	ck_assert_uint_eq(stats(c).dirty_blocks, 18);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(stats(c).error, 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Unaligned ranges and ranges past the origin are refused at submit, with
 * a message naming the operation and the offending number. */
START_TEST(test_bad_ranges)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	wc_cache *c = create_mode(fo, _i);
	static const struct {
		uint32_t op;
		uint64_t offset, len;
		const char *what, *where;
	} bad[] = {
		{ WC_REQ_WRITEBACK, 100, BS, "write-back", "offset 100" },
		{ WC_REQ_WRITEBACK, 0, BS + 1, "write-back", "length 4097" },
		{ WC_REQ_WRITEBACK, (ORIGIN_BLOCKS - 1) * BS, 2 * BS, "write-back", "past the end" },
		{ WC_REQ_INVALIDATE, BS / 2, BS, "invalidate", "offset 2048" },
		{ WC_REQ_INVALIDATE, 0, 0, "invalidate", "length 0" },
		{ WC_REQ_INVALIDATE, ORIGIN_BLOCKS * BS, BS, "invalidate", "past the end" },
	};

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct wc_request req;
		struct done_log d = { 0 };

		wc_request_init(&req);
		req.op = bad[i].op;
		req.offset = bad[i].offset;
		req.len = bad[i].len;
		req.done = on_done;
		req.priv = &d;
		ct_assert_err(wc_submit(c, &req), -EINVAL);
		ck_assert_msg(strstr(wc_errmsg(), bad[i].what) && strstr(wc_errmsg(), bad[i].where),
		              "case %u: %s", i, wc_errmsg());
		ck_assert_uint_eq(d.calls, 0);
	}
	ck_assert_int_eq(stats(c).error, 0);
	ck_assert_int_eq(wc_close(c), 0);
	fault_origin_destroy(fo);
}
END_TEST

static Suite *range_suite(void)
{
	Suite *s = suite_create("block_range");
	TCase *tc = tcase_create("range");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_loop_test(tc, test_writeback_range_only, 0, 2);
	tcase_add_loop_test(tc, test_writeback_long_range, 0, 2);
	tcase_add_loop_test(tc, test_invalidate_drops_range, 0, 2);
	tcase_add_loop_test(tc, test_invalidate_then_write, 0, 2);
	tcase_add_loop_test(tc, test_invalidate_races_writes, 0, 2);
	tcase_add_test(tc, test_invalidate_survives_kill);
	tcase_add_loop_test(tc, test_origin_fails, 0, 2);
	tcase_add_loop_test(tc, test_bad_ranges, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(range_suite());
}
