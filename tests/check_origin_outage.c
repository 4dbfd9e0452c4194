/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_origin_outage.c -- the origin failing does not poison the cache.
 * On both media, with and without threads: writes and flushes go on while
 * the cache has room, a write that finds none gets -ENOSPC saying since
 * when the origin fails, and once the origin answers the cache is itself
 * again by itself, nothing acknowledged lost.  Also the log hook
 * (wc_set_log), wc_clear_error, and the cache's own media errors, which
 * stay sticky: a commit that cannot be made (pmem), a record the device
 * refused, dirty data it cannot read back, a summary it cannot write (block
 * medium).
 */
#include <pthread.h>
#include <stdarg.h>
#include <sys/time.h>

#include "block/format.h"
#include "core/testhooks.h"
#include "wbtest.h"

#define ORIGIN_BLOCKS 1024u
#define BLOCK_CACHE_BYTES (2u << 20) /* ten segments of 192 KiB */

/* ---------------------------------------------------------------- the log */

#define LOG_LINES 4096
struct logcap {
	pthread_mutex_t lock;
	unsigned n;
	int level[LOG_LINES];
	char line[LOG_LINES][320];
};

static struct logcap cap = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void capture(void *arg, int level, const char *msg)
{
	struct logcap *l = arg;

	pthread_mutex_lock(&l->lock);
	if (l->n < LOG_LINES) {
		l->level[l->n] = level;
		snprintf(l->line[l->n], sizeof(l->line[0]), "%s", msg);
		l->n++;
	}
	pthread_mutex_unlock(&l->lock);
}

/* Lines from `from` on at `level` (-1: any) holding `what`; the last one's
 * index in *last. */
static unsigned logged(unsigned from, int level, const char *what, unsigned *last)
{
	unsigned n = 0;

	pthread_mutex_lock(&cap.lock);
	for (unsigned i = from; i < cap.n; i++)
		if ((level < 0 || cap.level[i] == level) && strstr(cap.line[i], what)) {
			n++;
			if (last)
				*last = i;
		}
	pthread_mutex_unlock(&cap.lock);
	return n;
}

/* Line i, copied under the lock (write-back's thread may be logging). */
static const char *log_line(unsigned i, char *buf, size_t len)
{
	pthread_mutex_lock(&cap.lock);
	snprintf(buf, len, "%s", i < cap.n ? cap.line[i] : "");
	pthread_mutex_unlock(&cap.lock);
	return buf;
}

/* The first line from `from` on at `level`, or -1. */
static int first_at(unsigned from, int level)
{
	int found = -1;

	pthread_mutex_lock(&cap.lock);
	for (unsigned i = from; i < cap.n && found < 0; i++)
		if (cap.level[i] == level)
			found = (int)i;
	pthread_mutex_unlock(&cap.lock);
	return found;
}

static unsigned log_count(void)
{
	unsigned n;

	pthread_mutex_lock(&cap.lock);
	n = cap.n;
	pthread_mutex_unlock(&cap.lock);
	return n;
}

/* ------------------------------------------------------------ the caches */

static const struct fault_origin_faults down = { .fail_write_nth = 1, .fail_write_persistent = true,
                                                 .fail_flush_nth = 1, .fail_flush_persistent = true };

static uint64_t wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static wc_cache *block_on(struct fault_origin *fo, const char *opts)
{
	return create_block_on(fo, "wcoutage", BLOCK_CACHE_BYTES, opts);
}

static bool origin_ok(wc_cache *c)
{
	struct wc_stats st = stats(c);

	return st.writeback_last_error == 0 && st.writeback_failing_ms == 0 &&
	       st.writeback_failing_since_ms == 0;
}

static bool origin_failing(wc_cache *c)
{
	return stats(c).writeback_last_error != 0;
}

/* no_threads: the host's loop until cond holds (bounded, no timing
 * asserted). */
static bool poll_until(wc_cache *c, bool (*cond)(wc_cache *c), unsigned max_ms)
{
	for (unsigned waited = 0; waited < max_ms; waited++) {
		int r;

		if (cond(c))
			return true;
		r = wc_poll(c, 16);
		ck_assert_msg(r >= 0 || stats(c).error == 0, "wc_poll: %d %s", r, wc_errmsg());
		sleep_ms(1);
	}
	return cond(c);
}

/*
 * The outage, on one medium and mode: the origin takes nothing (writes and
 * flushes fail) while single-block writes fill the cache.  Every write
 * succeeds until no room is left, a flush now and then too; the write that
 * finds none gets -ENOSPC (after the writers' patience) with the failure's
 * start in its message; reads see everything.  Then the origin is healed:
 * the failure clears by itself, writes go on, and after close and reopen,
 * then a write-back, the origin holds exactly the model.
 */
static void outage_run(bool block, bool no_threads)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	const char *opts = no_threads ? "no_threads=1" : "high_watermark=20,low_watermark=10";
	wc_cache *c = block ? block_on(fo, opts) : create_on(fo, 64, opts);
	uint64_t t0, b, refused_at = 0;
	unsigned written = 0;
	struct wc_stats st;

	for (b = 0; b < 8; b++) /* some go through while the origin is fine */
		model_write(c, m, 900 + b, 1, 0);
	ck_assert_int_eq(wc_writeback(c), 0);
	fault_origin_set_faults(fo, &down);
	t0 = wall_ms();
	for (b = 0; b < ORIGIN_BLOCKS - 100; b++) {
		ssize_t r = model_try_write(c, m, b, 1, b % 7 == 3 ? WC_FUA : 0);

		if (r == BS) {
			written++;
			if (b % 10 == 9)
				ck_assert_msg(wc_flush(c) == 0, "flush with the origin down: %s", wc_errmsg());
			continue;
		}
		st = stats(c);
		ck_assert_msg(r == -ENOSPC, "write %llu with the origin down: %zd (%s)", (unsigned long long)b,
		              r, wc_errmsg());
		ck_assert_msg(strstr(wc_errmsg(), "failing since") != NULL, "message: %s", wc_errmsg());
		/* Only once the cache is full: pmem has no free block left; the
		 * block medium's ring has less than a segment of room. */
		ck_assert_msg(block ? st.free_blocks * 8 <= st.blocks : st.free_blocks == 0,
		              "write %llu refused with %llu of %llu blocks free", (unsigned long long)b,
		              (unsigned long long)st.free_blocks, (unsigned long long)st.blocks);
		refused_at = b;
		break;
	}
	ck_assert_msg(refused_at > 0, "%u writes and the cache never filled", written);
	st = stats(c);
	ck_assert_int_eq(st.error, 0);
	ck_assert_int_eq(st.writeback_last_error, -EIO);
	ck_assert_uint_gt(st.writeback_failing_ms, 0);
	ck_assert_msg(st.writeback_failing_since_ms >= t0 - 1000 && st.writeback_failing_since_ms <= wall_ms(),
	              "failing since %llu, the outage began at %llu",
	              (unsigned long long)st.writeback_failing_since_ms, (unsigned long long)t0);
	ck_assert_uint_ge(st.writes_refused_full, 1);
	ck_assert_uint_eq(st.writeback_outages, 1);
	/* Past the patience, refused at once; flushes and reads go on. */
	ct_assert_err(model_try_write(c, m, refused_at, 1, 0), -ENOSPC);
	ck_assert_int_eq(wc_flush(c), 0);
	model_check_cache(c, m, "the origin down, the cache full");

	fault_origin_reset_faults(fo);
	if (no_threads)
		ck_assert_msg(poll_until(c, origin_ok, 20000), "the failure never cleared");
	else
		ck_assert_msg(wait_for(c, origin_ok, 20000), "the failure never cleared");
	st = stats(c);
	ck_assert_int_eq(st.error, 0);
	ck_assert_uint_eq(st.writeback_outages, 1);
	model_write(c, m, refused_at, 1, 0);
	model_write(c, m, refused_at + 1, 1, WC_FUA);
	model_check_cache(c, m, "the origin back");
	ck_assert_int_eq(wc_close(c), 0);
	c = block ? reopen_block_on(fo, NULL) : reopen_on(fo, NULL);
	model_check_cache(c, m, "reopened");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	if (block)
		unlink(block_path);
	model_free(m);
	fault_origin_destroy(fo);
}

/* _i: 0 pmem with threads, 1 pmem no_threads, 2 block with threads, 3 block
 * no_threads. */
START_TEST(test_outage)
{
	wc_set_log(capture, &cap);
	outage_run(_i >= 2, _i % 2 == 1);
	ck_assert_uint_eq(logged(0, WC_LOG_WARNING, "is failing", NULL), 1);
	ck_assert_uint_eq(logged(0, WC_LOG_NOTICE, "is back", NULL), 1);
	ck_assert_uint_eq(logged(0, WC_LOG_ERR, "", NULL), 0);
}
END_TEST

/* ------------------------------------------------------------------ logs */

/* One WARNING as the failure begins, DEBUG lines for the attempts between,
 * one NOTICE as it ends; NULL gives the messages back to stderr (DEBUG
 * left out); a hook may set another from inside its call. */
static void unhook(void *arg, int level, const char *msg)
{
	capture(arg, level, msg);
	wc_set_log(NULL, NULL);
}

static void failing_drain(wc_cache *c, struct fault_origin *fo, struct model *m, uint64_t first)
{
	static struct wc_test_hooks patience = { .writeback_give_up_ms = 300 };

	for (uint64_t b = 0; b < 10; b++)
		model_write(c, m, first + b, 1, 0);
	fault_origin_set_faults(fo, &down);
	wc_test_hooks = &patience;
	ct_assert_err(wc_writeback(c), -EIO);
	wc_test_hooks = NULL;
	ck_assert_msg(strstr(wc_errmsg(), "gave up") != NULL, "%s", wc_errmsg());
	fault_origin_reset_faults(fo);
	ck_assert_int_eq(wc_writeback(c), 0);
}

START_TEST(test_log_hook)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_on(fo, 64, "no_threads=1");
	char err_path[PATH_MAX], text[8192], line[320];
	unsigned last = 0, n;
	int fd, saved;
	ssize_t len;

	wc_set_log(capture, &cap);
	failing_drain(c, fo, m, 0);
	ck_assert_uint_eq(logged(0, WC_LOG_WARNING, "is failing", NULL), 1);
	ck_assert_uint_ge(logged(0, WC_LOG_DEBUG, "still fails", NULL), 2);
	ck_assert_uint_eq(logged(0, WC_LOG_NOTICE, "is back", &last), 1);
	log_line(last, line, sizeof(line));
	ck_assert_msg(strstr(line, "failed attempts since") && strstr(line, cache_path), "%s", line);

	/* NULL: stderr again, as "libwcache: ...", without DEBUG lines. */
	wc_set_log(NULL, NULL);
	n = log_count();
	wc_test_path(err_path, sizeof(err_path), "stderr.txt");
	fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = dup(2);
	ck_assert_int_eq(dup2(fd, 2), 2);
	failing_drain(c, fo, m, 20);
	fflush(stderr);
	ck_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	len = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	ck_assert_int_gt(len, 0);
	text[len] = '\0';
	ck_assert_msg(strstr(text, "libwcache: ") && strstr(text, "is failing") && strstr(text, "is back"),
	              "stderr: %s", text);
	ck_assert_msg(!strstr(text, "still fails"), "a DEBUG line on stderr: %s", text);
	ck_assert_uint_eq(log_count(), n);

	/* A hook that unhooks itself from inside its call. */
	wc_set_log(unhook, &cap);
	failing_drain(c, fo, m, 40);
	ck_assert_uint_eq(log_count(), n + 1);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* ---------------------------------------------------------- wc_clear_error */

/* On a failing origin it restarts the backoff (the next attempt's DEBUG line
 * says 2 ms where the streak had reached the 250 ms ceiling) and the
 * failure stays in the stats until an attempt gets through. */
START_TEST(test_clear_error)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_on(fo, 64, "high_watermark=10,low_watermark=5");
	char line[320];
	unsigned mark;
	int first;

	ct_assert_err(wc_clear_error(NULL), -EINVAL);
	ck_assert_int_eq(wc_clear_error(c), 0); /* nothing failing */
	wc_set_log(capture, &cap);
	fault_origin_set_faults(fo, &down);
	for (uint64_t b = 0; b < 20; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	for (unsigned i = 0; i < 4000 && !logged(0, WC_LOG_DEBUG, "next attempt in 250 ms", NULL); i++)
		sleep_ms(5);
	ck_assert_uint_ge(logged(0, WC_LOG_DEBUG, "next attempt in 250 ms", NULL), 1);
	mark = log_count();
	ck_assert_int_eq(wc_clear_error(c), 0);
	ck_assert_msg(origin_failing(c), "wc_clear_error cleared the failure in the stats");
	ck_assert_uint_eq(logged(mark, WC_LOG_NOTICE, "retries the failing origin now", NULL), 1);
	for (unsigned i = 0; i < 4000 && !logged(mark, WC_LOG_DEBUG, "still fails", NULL); i++)
		sleep_ms(5);
	ck_assert_uint_ge(logged(mark, WC_LOG_DEBUG, "still fails", NULL), 1);
	first = first_at(mark, WC_LOG_DEBUG);
	ck_assert_int_ge(first, 0);
	log_line((unsigned)first, line, sizeof(line));
	ck_assert_msg(strstr(line, "next attempt in 2 ms"), "after wc_clear_error: %s", line);
	fault_origin_reset_faults(fo);
	ck_assert_msg(wait_for(c, origin_ok, 20000), "the failure never cleared");
	ck_assert_int_eq(wc_clear_error(c), 0);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* ------------------------------------------------ the cache's own errors */

/* pmem: a commit the cache cannot make (its counter at the ceiling) is
 * sticky; wc_clear_error refuses to clear it. */
START_TEST(test_pmem_commit_failure_sticky)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_on(fo, 64, "no_threads=1");
	uint64_t seq = WC_SEQ_MAX - 1;
	int fd;

	model_write(c, m, 5, 1, WC_FUA);
	ck_assert_int_eq(wc_close(c), 0);
	fd = open(cache_path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, &seq, sizeof(seq), WC_SEQ_OFFSET), (ssize_t)sizeof(seq));
	close(fd);
	c = reopen_on(fo, NULL);
	model_write(c, m, 6, 1, 0);
	ck_assert_int_lt(wc_flush(c), 0);
	ck_assert_int_eq(stats(c).error, -EOVERFLOW);
	ct_assert_err(wc_write(c, m->buf, BS, 7 * BS, 0), -EIO);
	ct_assert_err(wc_flush(c), -EIO);
	ck_assert_int_eq(wc_read(c, m->rd, BS, 5 * BS), BS);
	assert_block(m->rd, 5, m->v[5], "read in the error state");
	ct_assert_err(wc_clear_error(c), -ENOTRECOVERABLE);
	ck_assert_msg(strstr(wc_errmsg(), "close and reopen"), "%s", wc_errmsg());
	ck_assert_int_eq(stats(c).error, -EOVERFLOW);
	ck_assert_int_lt(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* The block medium's device, through the test hooks: the file itself,
 * failing on demand. */
struct faulty_dev {
	int fd;
	atomic_bool fail_reads, fail_records, fail_summaries;
	struct wc_blk_sb sb;
};

static struct faulty_dev dev;

static bool is_summary(uint64_t off)
{
	uint64_t in_seg;

	if (off < dev.sb.seg_start || !dev.sb.seg_bytes)
		return false;
	in_seg = (off - dev.sb.seg_start) % dev.sb.seg_bytes;
	return in_seg == dev.sb.seg_bytes - dev.sb.summary_bytes;
}

static int dev_pwrite(void *ctx, const void *buf, size_t len, uint64_t off, bool dsync)
{
	(void)ctx;
	if (atomic_load(&dev.fail_summaries) && is_summary(off))
		return -EIO;
	if (atomic_load(&dev.fail_records) && off >= dev.sb.seg_start && !is_summary(off))
		return -EIO;
	if (pwrite(dev.fd, buf, len, (off_t)off) != (ssize_t)len)
		return -EIO;
	return dsync && fdatasync(dev.fd) ? -errno : 0;
}

static int dev_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	(void)ctx;
	if (atomic_load(&dev.fail_reads) && off >= dev.sb.seg_start)
		return -EIO;
	return pread(dev.fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
}

static int dev_flush(void *ctx)
{
	(void)ctx;
	return fdatasync(dev.fd) ? -errno : 0;
}

static const struct wc_blk_io_hooks dev_io = { .pwrite = dev_pwrite, .pread = dev_pread,
                                               .flush = dev_flush };
static struct wc_test_hooks dev_hooks = { .blk_io = &dev_io };

static wc_cache *create_faulty(struct fault_origin *fo, const char *opts)
{
	struct wc_config cfg;
	char all[256];
	wc_cache *c = NULL;

	block_file("wcoutage");
	dev.fd = open(block_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(dev.fd, 0);
	ck_assert_int_eq(ftruncate(dev.fd, BLOCK_CACHE_BYTES), 0);
	snprintf(all, sizeof(all), "medium=block,%s", opts);
	parse_opts(&cfg, all, false);
	wc_test_hooks = &dev_hooks;
	ck_assert_msg(wc_create_origin(&c, block_path, fault_origin_origin(fo), &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(pread(dev.fd, &dev.sb, sizeof(dev.sb), 0), (ssize_t)sizeof(dev.sb));
	return c;
}

static void assert_sticky(wc_cache *c, struct model *m, uint64_t readable)
{
	struct wc_stats st = stats(c);

	ck_assert_int_eq(st.error, -EIO);
	ck_assert_int_eq(st.writeback_last_error, 0); /* not the origin's */
	ct_assert_err(wc_write(c, m->buf, BS, 700 * BS, 0), -EIO);
	ct_assert_err(wc_flush(c), -EIO);
	ct_assert_err(wc_clear_error(c), -ENOTRECOVERABLE);
	ck_assert_int_eq(stats(c).error, -EIO);
	ck_assert_int_eq(wc_read(c, m->rd, BS, readable * BS), BS);
	assert_block(m->rd, readable, m->v[readable], "a read in the error state");
}

/* Block medium: dirty data it cannot read back for write-back, a record it
 * cannot write, a summary it cannot write -- each sticky, none counted as
 * the origin's; reopened with a sound device, nothing acknowledged is
 * lost. */
START_TEST(test_block_media_errors_sticky)
{
	struct fault_origin *fo = new_origin(ORIGIN_BLOCKS);
	struct model *m = model_new(ORIGIN_BLOCKS);
	wc_cache *c = create_faulty(fo, "no_threads=1");
	uint64_t b;

	for (b = 0; b < 10; b++)
		model_write(c, m, b, 1, WC_FUA);
	ck_assert_int_eq(wc_writeback(c), 0);
	for (b = 10; b < 20; b++)
		model_write(c, m, b, 1, WC_FUA);
	atomic_store(&dev.fail_reads, true); /* write-back's reads of the dirty data */
	ck_assert_int_lt(wc_writeback(c), 0);
	atomic_store(&dev.fail_reads, false);
	assert_sticky(c, m, 3);
	ck_assert_int_lt(wc_close(c), 0);

	c = reopen_block_on(fo, NULL);
	model_check_cache(c, m, "reopened after a read error");
	for (b = 20; b < 30; b++)
		model_write(c, m, b, 1, 0);
	atomic_store(&dev.fail_records, true);
	ck_assert_int_lt(model_try_write(c, m, 30, 1, WC_FUA), 0);
	atomic_store(&dev.fail_records, false);
	assert_sticky(c, m, 25);
	ck_assert_int_lt(wc_close(c), 0);

	/* Summaries are written once segments close: fill a few. */
	c = reopen_block_on(fo, NULL);
	model_check_cache(c, m, "reopened after a record error");
	atomic_store(&dev.fail_summaries, true);
	for (b = 100; b < 400 && !stats(c).error; b++) {
		ssize_t r = model_try_write(c, m, b, 1, WC_FUA);

		ck_assert_msg(r == BS || (r == -EIO && stats(c).error), "%zd %s", r, wc_errmsg());
		wc_poll(c, 4);
	}
	atomic_store(&dev.fail_summaries, false);
	assert_sticky(c, m, 101);
	ck_assert_int_lt(wc_close(c), 0);

	c = reopen_block_on(fo, NULL);
	model_check_cache(c, m, "reopened after a summary error");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	wc_test_hooks = NULL;
	model_check_origin(m, fo);
	close(dev.fd);
	unlink(block_path);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

static Suite *outage_suite(void)
{
	Suite *s = suite_create("origin_outage");
	TCase *tc = tcase_create("outage");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_outage, 0, 4);
	tcase_add_test(tc, test_log_hook);
	tcase_add_test(tc, test_clear_error);
	tcase_add_test(tc, test_pmem_commit_failure_sticky);
	tcase_add_test(tc, test_block_media_errors_sticky);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(outage_suite());
}
