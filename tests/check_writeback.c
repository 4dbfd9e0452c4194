/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_writeback.c -- write-back to the origin: the origin alone
 * equals the model afterwards, under concurrent writers, in cleaner mode, by
 * age, with a host loop (no_threads), with capped and merged I/O; durable
 * before free; two versions never reordered.  Faults: check_writeback_faults.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>

#include "testmain.h"
#include "wbtest.h"
#include "writeback/internal.h"

static char file_origin_path[PATH_MAX];

/* Write-back threads of this process: the library names its thread
 * "wc-writeback" (a sanitizer's own threads must not count). */
static unsigned count_writeback_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* the thread just exited */
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "wc-writeback", 12))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* ------------------------------------------------- the origin = model */

/* Random workload on a cache 10x smaller than the working set, then
 * wc_writeback + wc_close: the origin alone holds the model. */
START_TEST(test_origin_equals_model_fault)
{
	struct fault_origin *fo = new_origin(2048);
	struct model *m = model_new(2048);
	wc_cache *c = create_on(fo, 205, _i ? "no_threads=1,writeback_jobs=32" : "autocommit_ms=5");
	struct wc_stats st;

	random_workload(c, m, 0xabc0 + (uint64_t)_i, 3000, _i ? 8 : 0);
	model_check_cache(c, m, "before write-back");
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	st = stats(c);
	ck_assert_uint_gt(st.writeback_ios, 0);
	ck_assert_uint_ge(st.writeback_bytes, st.writeback_ios * BS);
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_uint_eq(counters(fo).inflight_at_close, 0);
	model_check_origin(m, fo);
	/* What made it durable is everything: an origin power cut now loses nothing. */
	fault_origin_crash(fo);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* The same with the default libaio backend on a file: the file alone. */
START_TEST(test_origin_equals_model_file)
{
	struct model *m = model_new(2048);
	struct wc_config cfg;
	wc_cache *c = NULL;
	uint8_t *img;
	int fd;

	make_cache_file(205);
	ct_make_file(file_origin_path, sizeof(file_origin_path), "origin.img", 2048 * BS);
	parse_opts(&cfg, "autocommit_ms=5", false);
	ck_assert_msg(wc_create(&c, cache_path, file_origin_path, &cfg) == 0, "%s", wc_errmsg());
	random_workload(c, m, 0x5eed, 3000, 0);
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	ck_assert_int_eq(wc_close(c), 0);
	img = malloc(2048 * BS);
	fd = open(file_origin_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, img, 2048 * BS, 0), 2048 * BS);
	close(fd);
	model_check_image(m, img, "origin file");
	free(img);
	model_free(m);
}
END_TEST

/* ------------------------------------------------ concurrent writers */

#define CW_THREADS 4
#define CW_RANGE 400 /* blocks each thread owns */

struct cw_arg {
	wc_cache *c;
	struct model *m;   /* shared; a thread touches only its own range */
	unsigned id;
	atomic_uint_fast64_t *next_version;
	int failures;
	char why[160];
};

static void *cw_thread(void *p)
{
	struct cw_arg *a = p;
	uint8_t *buf = aligned_alloc(4096, 4 * BS), *rd = aligned_alloc(4096, 4 * BS);
	uint64_t s = 0xc0ffee + a->id, first = (uint64_t)a->id * CW_RANGE;

	for (unsigned op = 0; op < 2500 && !a->failures; op++) {
		uint64_t r = ct_rand(&s) % 100, b = first + ct_rand(&s) % (CW_RANGE - 3);
		unsigned n = 1 + (unsigned)(ct_rand(&s) % 4);

		if (r < 75) {
			uint64_t v = atomic_fetch_add(a->next_version, 1);

			for (unsigned i = 0; i < n; i++)
				ct_fill_block(buf + (size_t)i * BS, BS, b + i, v);
			if (wc_write(a->c, buf, (size_t)n * BS, b * BS, r < 5 ? WC_FUA : 0) != (ssize_t)n * BS) {
				snprintf(a->why, sizeof(a->why), "write: %s", wc_errmsg());
				a->failures++;
			}
			for (unsigned i = 0; i < n; i++)
				a->m->v[b + i] = v;
		} else if (r < 95) {
			if (wc_read(a->c, rd, (size_t)n * BS, b * BS) != (ssize_t)n * BS) {
				snprintf(a->why, sizeof(a->why), "read: %s", wc_errmsg());
				a->failures++;
			}
			for (unsigned i = 0; i < n && !a->failures; i++)
				if (ct_block_version(rd + (size_t)i * BS, BS, b + i) != a->m->v[b + i]) {
					snprintf(a->why, sizeof(a->why), "block %llu: version %lld, expected %lld",
					         (unsigned long long)(b + i),
					         (long long)ct_block_version(rd + (size_t)i * BS, BS, b + i),
					         (long long)a->m->v[b + i]);
					a->failures++;
				}
		} else if (wc_flush(a->c)) {
			snprintf(a->why, sizeof(a->why), "flush: %s", wc_errmsg());
			a->failures++;
		}
	}
	free(buf);
	free(rd);
	return NULL;
}

/* Four writers on a cache 10x smaller than what they write: write-back
 * runs all the time, under them. */
START_TEST(test_concurrent_writers)
{
	struct fault_origin *fo = new_origin(CW_THREADS * CW_RANGE);
	struct fault_origin_faults slow = { .delay_us = 50 };
	struct model *m = model_new(CW_THREADS * CW_RANGE);
	wc_cache *c = create_on(fo, CW_THREADS * CW_RANGE / 10, "writeback_jobs=32,autocommit_ms=5");
	atomic_uint_fast64_t next_version = 1;
	struct cw_arg a[CW_THREADS];
	pthread_t t[CW_THREADS];
	struct wc_stats st;

	fault_origin_set_faults(fo, &slow);
	for (unsigned i = 0; i < CW_THREADS; i++) {
		a[i] = (struct cw_arg){ .c = c, .m = m, .id = i, .next_version = &next_version };
		ck_assert_int_eq(pthread_create(&t[i], NULL, cw_thread, &a[i]), 0);
	}
	for (unsigned i = 0; i < CW_THREADS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_msg(a[i].failures == 0, "writer %u: %s", i, a[i].why);
	}
	st = stats(c);
	ck_assert_uint_gt(st.writeback_ios, 0); /* write-back ran under the writers */
	model_check_cache(c, m, "after the writers");
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* ------------------------------------------------------------ cleaner */

/* At run time (no_threads, so nothing moves between our calls): new
 * blocks go around the cache, cached ones still hit, and the host loop
 * drains the cache completely. */
START_TEST(test_cleaner_runtime)
{
	struct fault_origin *fo = new_origin(512);
	struct model *m = model_new(512);
	wc_cache *c = create_on(fo, 64, "no_threads=1");
	struct wc_stats st0, st;
	unsigned polls = 0;

	for (uint64_t b = 0; b < 40; b += 4)
		model_write(c, m, b, 4, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_uint_eq(stats(c).dirty_blocks, 40);

	ck_assert_int_eq(wc_set_cleaner(c, true), 0);
	st0 = stats(c);
	for (uint64_t b = 100; b < 110; b++)  /* not cached: around */
		model_write(c, m, b, 1, 0);
	for (uint64_t b = 0; b < 5; b++)      /* cached: still into the cache */
		model_write(c, m, b, 1, 0);
	ck_assert_int_eq(wc_read(c, m->rd, 10 * BS, 0), 10 * BS);
	for (unsigned i = 0; i < 10; i++)
		assert_block(m->rd + i * BS, i, m->v[i], "cached read in cleaner mode");
	st = stats(c);
	ck_assert_uint_eq(st.writes_around - st0.writes_around, 10);
	ck_assert_uint_eq(st.write_hits_committed - st0.write_hits_committed, 5);
	ck_assert_uint_eq(st.read_hits - st0.read_hits, 10);
	ck_assert_uint_eq(st.dirty_blocks, 40);
	/* Writes that went around are the origin's at once, durable at the flush. */
	for (uint64_t b = 100; b < 110; b++)
		assert_block(fault_origin_volatile(fo) + b * BS, b, m->v[b], "written around");
	ck_assert_int_eq(wc_flush(c), 0);
	for (uint64_t b = 100; b < 110; b++)
		assert_block(fault_origin_durable(fo) + b * BS, b, m->v[b], "written around, flushed");

	while (!all_free(c) && polls++ < 10000)
		ck_assert_int_ge(wc_poll(c, 8), 0);
	assert_clean(c);
	ck_assert_int_eq(wc_poll(c, 8), 0); /* idle */
	ck_assert_int_eq(wc_next_deadline_ms(c), -1);
	model_check_origin(m, fo);
	model_check_cache(c, m, "after cleaning");

	/* Off again: a new block is cached, not written around. */
	ck_assert_int_eq(wc_set_cleaner(c, false), 0);
	st0 = stats(c);
	model_write(c, m, 300, 1, 0);
	st = stats(c);
	ck_assert_uint_eq(st.writes_around, st0.writes_around);
	ck_assert_uint_eq(st.dirty_blocks, 1);
	ck_assert_int_eq(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* From the configuration, with the background thread: a reopened cache
 * with dirty blocks drains by itself; new blocks go around. */
START_TEST(test_cleaner_config)
{
	struct fault_origin *fo = new_origin(512);
	struct model *m = model_new(512);
	wc_cache *c = create_on(fo, 128, NULL);
	struct wc_stats st;

	for (uint64_t b = 0; b < 48; b += 2)
		model_write(c, m, b, 2, 0);
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_uint_eq(counters(fo).writes, 0); /* 48 of 128: below the high watermark */
	c = reopen_on(fo, "cleaner=1");
	ck_assert_msg(wait_for(c, all_free, 20000), "cleaner did not drain the cache");
	model_write(c, m, 200, 3, 0);
	st = stats(c);
	ck_assert_uint_eq(st.writes_around, 3);
	ck_assert_uint_eq(st.dirty_blocks, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	model_check_origin(m, fo);
	ck_assert_int_eq(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* ------------------------------------------------------------ max_age */

/* High watermark 100: only age triggers write-back (and without max_age,
 * nothing does: the control). */
START_TEST(test_max_age)
{
	struct fault_origin *fo = new_origin(512);
	struct model *m = model_new(512);
	wc_cache *c = create_on(fo, 256, "high_watermark=100,low_watermark=90,autocommit_ms=5");

	for (uint64_t b = 0; b < 40; b += 4)
		model_write(c, m, b, 4, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	sleep_ms(300);
	ck_assert_uint_eq(stats(c).dirty_blocks, 40); /* no trigger, no write-back */
	ck_assert_uint_eq(counters(fo).writes, 0);
	ck_assert_int_eq(wc_close(c), 0);

	c = reopen_on(fo, "high_watermark=100,low_watermark=90,autocommit_ms=5,max_age_ms=40");
	for (uint64_t b = 100; b < 110; b++)
		model_write(c, m, b, 1, 0); /* committed by autocommit, not by us */
	ck_assert_msg(wait_for(c, all_free, 20000), "max_age did not write back old blocks");
	ck_assert_uint_gt(stats(c).writeback_ios, 0);
	model_check_origin(m, fo);
	ck_assert_int_eq(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* ------------------------------------------------ no_threads host loop */

struct host_loop {
	wc_cache *c;
	atomic_bool stop;
	atomic_ulong polls;
	unsigned long units;
	int error;
};

static void *host_loop_thread(void *p)
{
	struct host_loop *h = p;

	while (!atomic_load(&h->stop)) {
		int r = wc_poll(h->c, 4);

		atomic_fetch_add(&h->polls, 1);
		if (r < 0) {
			h->error = r;
			break;
		}
		h->units += (unsigned long)r;
		if (r == 0)
			sleep_ms(1);
	}
	return NULL;
}

struct nt_writer {
	wc_cache *c;
	struct model *m;
	uint64_t first, count;
	atomic_uint_fast64_t *next_version;
	int failures;
};

static void *nt_writer_thread(void *p)
{
	struct nt_writer *w = p;
	uint8_t *buf = aligned_alloc(4096, BS);
	uint64_t s = 0x77 + w->first;

	for (unsigned op = 0; op < 1500 && !w->failures; op++) {
		uint64_t b = w->first + ct_rand(&s) % w->count;
		uint64_t v = atomic_fetch_add(w->next_version, 1);

		ct_fill_block(buf, BS, b, v);
		if (wc_write(w->c, buf, BS, b * BS, 0) != BS)
			w->failures++, fprintf(stderr, "write of block %llu: %s\n", (unsigned long long)b,
			                       wc_errmsg());
		w->m->v[b] = v;
		if (op % 50 == 0 && wc_flush(w->c))
			w->failures++, fprintf(stderr, "flush: %s\n", wc_errmsg());
	}
	free(buf);
	return NULL;
}

/* The library creates no thread; the host's loop and writers do all. */
START_TEST(test_no_threads_host_loop)
{
	struct fault_origin *fo = new_origin(1024);
	struct model *m = model_new(1024);
	wc_cache *c = create_on(fo, 96, "no_threads=1,writeback_jobs=16,autocommit_ms=5");
	atomic_uint_fast64_t next_version = 1;
	struct host_loop h = { .c = c };
	struct nt_writer w[2];
	pthread_t ht, wt[2];

	ck_assert_uint_eq(count_writeback_threads(), 0);
	ck_assert_int_eq(pthread_create(&ht, NULL, host_loop_thread, &h), 0);
	for (unsigned i = 0; i < 2; i++) {
		w[i] = (struct nt_writer){ .c = c, .m = m, .first = i * 512, .count = 512,
		                           .next_version = &next_version };
		ck_assert_int_eq(pthread_create(&wt[i], NULL, nt_writer_thread, &w[i]), 0);
	}
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(wt[i], NULL);
		ck_assert_int_eq(w[i].failures, 0);
	}
	ck_assert_uint_eq(count_writeback_threads(), 0); /* the host's threads did it all */
	atomic_store(&h.stop, true);
	pthread_join(ht, NULL);
	ck_assert_msg(h.error == 0, "wc_poll: %d", h.error);
	ck_assert_uint_gt(h.units, 0);
	ck_assert_uint_gt(stats(c).writeback_ios, 0);
	model_check_cache(c, m, "after the host loop");
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);

	/* The control: a threaded cache does start its write-back thread, and
	 * wc_close stops it. */
	fo = new_origin(64);
	c = create_on(fo, 16, NULL);
	ck_assert_uint_eq(count_writeback_threads(), 1);
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_uint_eq(count_writeback_threads(), 0);
	fault_origin_destroy(fo);
}
END_TEST

/* Which thread sends write-back's writes to the origin. */
static pthread_t watched_loop;
static atomic_uint writes_off_loop;
static struct wc_origin_ops watched_ops;
static int (*watched_submit)(void *ctx, struct wc_origin_io *io);

static int watch_submit(void *ctx, struct wc_origin_io *io)
{
	if (io->op == WC_ORIGIN_WRITE && !pthread_equal(pthread_self(), watched_loop))
		atomic_fetch_add(&writes_off_loop, 1);
	return watched_submit(ctx, io);
}

static struct wc_origin watch_writes(struct wc_origin o)
{
	watched_ops = *o.ops;
	watched_submit = o.ops->submit;
	watched_ops.submit = watch_submit;
	return (struct wc_origin){ &watched_ops, o.ctx };
}

/* Without threads, a synchronous writer that finds the cache full waits for
 * the host loop's steps and never writes back itself while a loop polls;
 * once the loop stops polling, it takes the steps itself and goes on. */
START_TEST(test_no_threads_writer_waits_for_loop)
{
	struct fault_origin *fo = new_origin(2048);
	struct model *m = model_new(2048);
	struct host_loop h;
	wc_cache *c;

	wbtest_wrap_origin = watch_writes;
	c = create_on(fo, 64, "no_threads=1,writeback_jobs=16,autocommit_ms=5");
	wbtest_wrap_origin = NULL;
	h = (struct host_loop){ .c = c };
	ck_assert_int_eq(pthread_create(&watched_loop, NULL, host_loop_thread, &h), 0);
	atomic_store(&writes_off_loop, 0);
	while (!atomic_load(&h.polls)) /* the loop turns */
		sleep_ms(1);
	for (uint64_t b = 0; b < 640; b++) /* 10x the cache, from this thread */
		model_write(c, m, b, 1, 0);
	ck_assert_uint_gt(stats(c).writes_blocked_on_freelist, 0);
	ck_assert_uint_gt(stats(c).writeback_ios, 0);
	ck_assert_msg(atomic_load(&writes_off_loop) == 0, "%u write-back writes sent by the writer",
	              atomic_load(&writes_off_loop));
	atomic_store(&h.stop, true);
	pthread_join(watched_loop, NULL);
	ck_assert_msg(h.error == 0, "wc_poll: %d", h.error);

	/* Nobody polls now: the writer makes its own room. */
	for (uint64_t b = 640; b < 1280; b++)
		model_write(c, m, b, 1, 0);
	ck_assert_msg(atomic_load(&writes_off_loop) > 0, "the writer made no room itself");
	model_check_cache(c, m, "after the loop and after it stopped");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Writers that fill a no_threads cache, and never poll or flush, are not
 * stuck: the writer that finds no free block does the write-back itself. */
START_TEST(test_no_threads_fill)
{
	struct fault_origin *fo = new_origin(2048);
	struct model *m = model_new(2048);
	wc_cache *c = create_on(fo, 64, "no_threads=1,autocommit_ms=3600000,autocommit_blocks=1000000");
	atomic_uint_fast64_t next_version = 1;
	struct nt_writer w[3];
	pthread_t t[3];
	struct wc_stats st;

	for (uint64_t b = 0; b < 640; b++) /* one thread: 10x the cache */
		model_write(c, m, b, 1, 0);
	st = stats(c);
	ck_assert_uint_gt(st.writes_blocked_on_freelist, 0);
	ck_assert_uint_gt(st.writeback_ios, 0);
	for (unsigned i = 0; i < 3; i++) { /* three at once (they flush now and then) */
		w[i] = (struct nt_writer){ .c = c, .m = m, .first = 640 + i * 400, .count = 400,
		                           .next_version = &next_version };
		ck_assert_int_eq(pthread_create(&t[i], NULL, nt_writer_thread, &w[i]), 0);
	}
	for (unsigned i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].failures, 0);
	}
	model_check_cache(c, m, "after filling");
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* --------------------------------------------------- I/O shape and cap */

/* writeback_jobs caps the blocks in flight: with slow completions and no
 * merging, one round has exactly writeback_jobs requests out. */
/* The window's rule on made-up rounds (no timing): a round of `blocks`
 * taking blocks / rate(window) seconds. */
static void window_run(struct wc_wb_window *win, unsigned rounds, uint64_t (*rate)(unsigned window))
{
	for (unsigned i = 0; i < rounds; i++) {
		unsigned blocks = 4096;

		wc_wb_window_step(win, blocks, (uint64_t)blocks * 1000000000ull / rate(win->blocks));
	}
}

/* A remote origin: 1 ms per request however many are in flight. */
static uint64_t rate_remote(unsigned window) { return (uint64_t)window * 1000; }
/* A queueing device: 50,000 blocks/s from 16 in flight on. */
static uint64_t rate_queueing(unsigned window) { return window < 16 ? window * 3125ull : 50000; }
/* A remote origin that saturates at 128 in flight. */
static uint64_t rate_saturating(unsigned window) { return (window < 128 ? window : 128) * 1000ull; }

/* A queueing device as above whose rounds vary by up to +-25%, as on a
 * loaded host (a fixed xorshift sequence: the same every run). */
static uint64_t noise_state = 0x9e3779b97f4a7c15ull;
static uint64_t rate_queueing_noisy(unsigned window)
{
	noise_state ^= noise_state << 13;
	noise_state ^= noise_state >> 7;
	noise_state ^= noise_state << 17;
	return rate_queueing(window) * (75 + noise_state % 51) / 100;
}

/* The window between probes (a probe round may be under way). */
static unsigned settled(const struct wc_wb_window *win)
{
	return win->probe_from ? win->probe_from : win->blocks;
}

START_TEST(test_window_rule)
{
	struct wc_wb_window win;

	wc_wb_window_init(&win, 4, 1024);
	window_run(&win, 40, rate_remote);
	ck_assert_uint_eq(settled(&win), 1024); /* doubled while it paid, to the limit */
	window_run(&win, 200, rate_remote);
	ck_assert_uint_eq(settled(&win), 1024); /* a probe down loses half: back up */

	wc_wb_window_init(&win, 32, 1024);
	window_run(&win, 200, rate_queueing);
	ck_assert_uint_eq(settled(&win), 32);   /* past the knee: never deeper */

	/* The same device with noisy rounds: a lucky round now and then does
	 * not walk the window up, and it never runs away. */
	wc_wb_window_init(&win, 32, 4096);
	for (unsigned i = 0; i < 3000; i++) {
		window_run(&win, 1, rate_queueing_noisy);
		ck_assert_msg(win.blocks <= 128, "round %u: window %u", i, win.blocks);
	}
	ck_assert_uint_le(settled(&win), 64);

	wc_wb_window_init(&win, 4, 1024);
	window_run(&win, 40, rate_saturating);
	ck_assert_uint_eq(settled(&win), 128);  /* 256 gained nothing */
	window_run(&win, 200, rate_saturating);
	ck_assert_uint_eq(settled(&win), 128);  /* and 64 lost half */

	/* Grown against a remote origin that then saturates at 128: the probe
	 * down keeps the throughput, so the window comes down to the knee. */
	wc_wb_window_init(&win, 4, 1024);
	window_run(&win, 40, rate_remote);
	window_run(&win, 200, rate_saturating);
	ck_assert_uint_eq(settled(&win), 128);

	/* Rounds too short to tell change nothing; nor does a zero time. */
	wc_wb_window_init(&win, 64, 1024);
	for (unsigned i = 0; i < 100; i++) {
		wc_wb_window_step(&win, 100, 1000000);
		wc_wb_window_step(&win, 4096, 0);
	}
	ck_assert_uint_eq(settled(&win), 64);

	wc_wb_window_init(&win, 256, 0); /* writeback_window_max_kib=0: fixed */
	window_run(&win, 100, rate_remote);
	ck_assert_uint_eq(settled(&win), 256);
}
END_TEST

/* An origin whose requests take 1 ms however many are in flight: whatever
 * the window does, it stays within writeback_jobs..limit, and the data is
 * right.  (How it moves is test_window_rule's.) */
START_TEST(test_window_bounds)
{
	struct fault_origin *fo = new_origin(4096);
	struct fault_origin_faults remote = { .delay_us = 1000 };
	struct model *m = model_new(4096);
	/* Round capacity: 2048 / 8 = 256 blocks; 64 KiB = 16 blocks max. */
	wc_cache *c = create_on(fo, 2048, _i ? "writeback_jobs=4,writeback_max_io_kib=4"
	                                     : "no_threads=1,writeback_jobs=4,writeback_max_io_kib=4,"
	                                       "writeback_window_max_kib=64");
	unsigned limit = _i ? 256 : 16;

	fault_origin_set_faults(fo, &remote);
	for (uint64_t b = 0; b < 1800; b++)
		model_write(c, m, b * 2, 1, 0); /* no neighbours: one request each */
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_uint_ge(counters(fo).max_inflight, 4);
	ck_assert_uint_le(counters(fo).max_inflight, limit);
	ck_assert_uint_ge(stats(c).writeback_window, 4);
	ck_assert_uint_le(stats(c).writeback_window, limit);
	ck_assert_uint_ge(stats(c).writeback_latency_us, 1000);
	assert_clean(c);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

START_TEST(test_writeback_jobs_cap)
{
	struct fault_origin *fo = new_origin(1024);
	struct fault_origin_faults slow = { .delay_us = 1000 };
	struct model *m = model_new(1024);
	wc_cache *c = create_on(fo, 256, "no_threads=1,writeback_jobs=8,writeback_window_max_kib=0,"
	                                  "writeback_max_io_kib=4");

	for (uint64_t b = 0; b < 200; b++)
		model_write(c, m, b * 3, 1, 0);
	fault_origin_set_faults(fo, &slow);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_uint_eq(counters(fo).max_inflight, 8);
	ck_assert_uint_eq(counters(fo).writes, 200);
	assert_clean(c);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);

	/* With the background thread and writers racing: never above the cap. */
	m = model_new(1024);
	fo = new_origin(1024);
	fault_origin_set_faults(fo, &slow);
	c = create_on(fo, 64, "writeback_jobs=5,writeback_window_max_kib=0,high_watermark=20,"
	                "low_watermark=10");
	for (unsigned round = 0; round < 4; round++)
		for (uint64_t b = 0; b < 256; b++) {
			model_write(c, m, (b * 7 + round) % 1024, 1, 0);
			ck_assert_uint_le(stats(c).writeback_blocks, 5);
		}
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_uint_le(counters(fo).max_inflight, 5);
	ck_assert_uint_gt(counters(fo).writes, 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Adjacent dirty blocks leave as one I/O of up to writeback_max_io_kib;
 * scattered ones as one I/O each. */
START_TEST(test_merged_io)
{
	static const struct {
		const char *opts;
		uint64_t stride, blocks, ios;
	} cases[] = {
		{ "no_threads=1", 1, 256, 1 },                             /* 1 MiB: one I/O */
		{ "no_threads=1,writeback_max_io_kib=64", 1, 256, 16 },    /* 16 x 64 KiB */
		{ "no_threads=1,writeback_max_io_kib=6", 1, 256, 256 },    /* < 2 blocks: no merge */
		{ "no_threads=1", 2, 128, 128 },                           /* every other block */
	};

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct fault_origin *fo = new_origin(1024);
		struct model *m = model_new(1024);
		wc_cache *c = create_on(fo, 300, cases[k].opts);
		struct wc_stats st;

		/* written in reverse: the engine sorts by origin block */
		for (uint64_t i = cases[k].blocks; i-- > 0;)
			model_write(c, m, 8 + i * cases[k].stride, 1, 0);
		ck_assert_int_eq(wc_writeback(c), 0);
		st = stats(c);
		ck_assert_msg(st.writeback_ios == cases[k].ios, "case %u: %llu I/Os, expected %llu", k,
		              (unsigned long long)st.writeback_ios, (unsigned long long)cases[k].ios);
		ck_assert_uint_eq(st.writeback_bytes, cases[k].blocks * BS);
		ck_assert_uint_eq(counters(fo).writes, cases[k].ios);
		ck_assert_uint_eq(counters(fo).bytes_written, cases[k].blocks * BS);
		ck_assert_uint_eq(counters(fo).flushes, 1); /* one round, one flush */
		assert_clean(c);
		ck_assert_int_eq(wc_close(c), 0);
		model_check_origin(m, fo);
		model_free(m);
		fault_origin_destroy(fo);
	}
}
END_TEST

/* Small blocks, long runs: a run of 512-byte blocks is capped at IOV_MAX
 * buffers (1 MiB would be 2048, which the libaio backend refuses with
 * -EINVAL -- every round failed until the sticky error). */
START_TEST(test_runs_capped_at_iov_max)
{
	enum { SMALL = 512, NB = 3000 };
	struct wc_config cfg;
	struct wc_layout l;
	struct wc_stats st;
	wc_cache *c = NULL;
	uint8_t *buf = aligned_alloc(4096, (size_t)NB * SMALL), *img = malloc((size_t)NB * SMALL);
	int fd;

	ck_assert_int_eq(wc_layout_for_blocks(&l, 4096, SMALL), 0);
	ct_make_file(cache_path, sizeof(cache_path), "wb.pmem", l.bytes_used);
	ct_make_file(file_origin_path, sizeof(file_origin_path), "origin.img", 4096 * SMALL);
	parse_opts(&cfg, "block_size=512,writeback_jobs=4096,no_threads=1", false);
	ck_assert_msg(wc_create(&c, cache_path, file_origin_path, &cfg) == 0, "%s", wc_errmsg());
	for (uint64_t b = 0; b < NB; b++)
		ct_fill_block(buf + b * SMALL, SMALL, b, 1);
	ck_assert_int_eq(wc_write(c, buf, (size_t)NB * SMALL, 0, 0), NB * SMALL);
	ck_assert_msg(wc_writeback(c) == 0, "wc_writeback: %s", wc_errmsg());
	st = stats(c);
	ck_assert_uint_eq(st.writeback_bytes, NB * SMALL);
	ck_assert_uint_eq(st.writeback_ios, (NB + IOV_MAX - 1) / IOV_MAX);
	ck_assert_int_eq(wc_close(c), 0);
	fd = open(file_origin_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, img, (size_t)NB * SMALL, 0), NB * SMALL);
	close(fd);
	ck_assert_int_eq(memcmp(img, buf, (size_t)NB * SMALL), 0);
	free(buf);
	free(img);
}
END_TEST

/* --------------------------------------------------- durable and ordered */

/* Write-back frees a block only once the origin made it durable: an origin
 * power cut (volatile := durable) after every host-loop step, and another
 * after close, never loses an acknowledged, flushed write. */
START_TEST(test_durable_before_free)
{
	struct fault_origin *fo = new_origin(1024);
	struct model *m = model_new(1024);
	wc_cache *c = create_on(fo, 64, "no_threads=1,writeback_jobs=16");
	uint64_t s = 0xd00d;

	for (unsigned op = 0; op < 1200; op++) {
		uint64_t b = ct_rand(&s) % 1020;

		model_write(c, m, b, 1 + (unsigned)(ct_rand(&s) % 4), 0);
		if (op % 8 == 0)
			ck_assert_int_ge(wc_poll(c, 2), 0);
		/* Write-back's steps leave requests out between calls: the
		 * power cut comes once they are done (a round written and
		 * flushed, or not begun), as a real one would find them. */
		for (;;) {
			struct fault_origin_counters n;

			fault_origin_get_counters(fo, &n);
			if (!n.inflight && !n.flushes_inflight)
				break;
			ck_assert_int_ge(wc_poll_timeout(c, 16, 1), 0);
		}
		ck_assert_uint_eq(fault_origin_crash(fo), 0);
	}
	ck_assert_uint_gt(stats(c).writeback_ios, 0);
	model_check_cache(c, m, "after origin power cuts");
	ck_assert_int_eq(wc_close(c), 0);
	fault_origin_destroy(fo);

	/* With the background thread: close, power-cut the origin, reopen. */
	fo = new_origin(1024);
	for (uint64_t b = 0; b < m->blocks; b++)
		m->v[b] = NEVER;
	c = create_on(fo, 64, "writeback_jobs=16");
	random_workload(c, m, 0xfeed, 2500, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_uint_gt(stats(c).writeback_ios, 0);
	ck_assert_int_eq(wc_close(c), 0);
	fault_origin_crash_partial(fo, 42); /* and tear what was not flushed */
	c = reopen_on(fo, NULL);
	model_check_cache(c, m, "reopened after an origin power cut");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* A round's origin flush is a request where the origin takes one: the next
 * round's writes go out while it runs (every request here takes 2 ms, so a
 * flush() call would keep the origin idle for it), and what write-back freed
 * survives an origin power cut.  An origin that only has flush() is flushed
 * with it, never with a request. */
START_TEST(test_flush_overlaps_writes)
{
	struct fault_origin_faults slow = { .delay_us = 2000 };
	struct fault_origin *fo = new_origin(2048);
	struct model *m = model_new(2048);
	struct fault_origin_counters n;
	wc_cache *c;

	wbtest_sync_flush = _i == 1;
	c = create_on(fo, 128, "writeback_jobs=8,writeback_max_io_kib=16,autocommit_ms=5");
	fault_origin_set_faults(fo, &slow);
	random_workload(c, m, 0xf1u + (uint64_t)_i, 1500, 0);
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	fault_origin_crash(fo);
	model_check_origin(m, fo);
	n = counters(fo);
	ck_assert_uint_gt(n.flushes, 1);
	if (_i == 0) {
		ck_assert_uint_eq(n.flush_requests, n.flushes);
		ck_assert_msg(n.writes_during_flush > 0, "no write went out while %llu flushes ran",
		              (unsigned long long)n.flushes);
	} else {
		ck_assert_uint_eq(n.flush_requests, 0);
	}
	ck_assert_int_eq(wc_close(c), 0);
	wbtest_sync_flush = false;
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

struct wb_call {
	wc_cache *c;
	int ret;
};

static void *writeback_thread(void *p)
{
	struct wb_call *w = p;

	w->ret = wc_writeback(w->c);
	return NULL;
}

/* v1 is being written back slowly when v2 of the same block commits; v2
 * then completes fast.  Issued together, v1 would land last. */
START_TEST(test_versions_not_reordered)
{
	struct fault_origin *fo = new_origin(256);
	struct fault_origin_faults slow = { .delay_us = 300000 };
	struct model *m = model_new(256);
	wc_cache *c = create_on(fo, 64, NULL);
	struct wb_call w = { .c = c };
	pthread_t t;
	unsigned waited = 0;

	model_write(c, m, 7, 1, 0);  /* v1 */
	model_write(c, m, 20, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	fault_origin_set_faults(fo, &slow);
	ck_assert_int_eq(pthread_create(&t, NULL, writeback_thread, &w), 0);
	while (counters(fo).writes < 2 && waited++ < 10000)
		sleep_ms(1);
	ck_assert_uint_ge(counters(fo).writes, 2);   /* v1 is in flight */
	fault_origin_reset_faults(fo);                /* later requests are fast */
	model_write(c, m, 7, 1, 0);  /* v2 */
	model_write(c, m, 21, 1, 0);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_read(c, m->rd, BS, 7 * BS), BS);
	assert_block(m->rd, 7, m->v[7], "read while v1 is written back");
	pthread_join(t, NULL);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(wc_writeback(c), 0);
	assert_clean(c);
	model_check_cache(c, m, "after write-back");
	ck_assert_int_eq(wc_close(c), 0);
	model_check_origin(m, fo);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* ---------------------------------------------------------------- main */

static Suite *writeback_suite(void)
{
	Suite *s = suite_create("writeback");
	TCase *tc;

	tc = tcase_create("model");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_origin_equals_model_fault, 0, 2);
	tcase_add_test(tc, test_origin_equals_model_file);
	tcase_add_test(tc, test_concurrent_writers);
	suite_add_tcase(s, tc);

	tc = tcase_create("modes");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cleaner_runtime);
	tcase_add_test(tc, test_cleaner_config);
	tcase_add_test(tc, test_max_age);
	tcase_add_test(tc, test_no_threads_host_loop);
	tcase_add_test(tc, test_no_threads_fill);
	tcase_add_test(tc, test_no_threads_writer_waits_for_loop);
	tcase_add_test(tc, test_writeback_jobs_cap);
	tcase_add_test(tc, test_window_rule);
	tcase_add_loop_test(tc, test_window_bounds, 0, 2);
	tcase_add_test(tc, test_merged_io);
	tcase_add_test(tc, test_runs_capped_at_iov_max);
	tcase_add_test(tc, test_durable_before_free);
	tcase_add_loop_test(tc, test_flush_overlaps_writes, 0, 2);
	tcase_add_test(tc, test_versions_not_reordered);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(writeback_suite());
}
