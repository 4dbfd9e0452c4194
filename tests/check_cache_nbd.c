/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_cache_nbd.c -- the cache over an NBD origin (nbdkit on a unix
 * socket): what wc_writeback leaves on the export, read back with libnbd
 * alone and from the file behind it; an export smaller than the cache was
 * formatted for; a server that dies under a cache with dirty blocks, and
 * one that comes back while the cache is open.  Skips without nbdkit.
 */
#include <pthread.h>

#include "nbdkit_testutil.h"
#include "core/testhooks.h"
#include "wcache.h"

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define BS 4096u

/* The cache's view of the export, written the same way. */
struct shadow {
	uint8_t *bytes;
	uint64_t size;
	uint64_t seed;
};

static void shadow_init(struct shadow *s, uint64_t size)
{
	s->bytes = aligned_buf(size);
	memset(s->bytes, 0, size);
	s->size = size;
	s->seed = 1;
}

/* Random writes of 1..16 blocks within the first `span` bytes, one in
 * eight with FUA, the same bytes into the shadow. */
static void write_random(wc_cache *c, struct shadow *s, unsigned n, uint64_t span)
{
	uint64_t blocks = span / BS;

	for (unsigned i = 0; i < n; i++) {
		uint64_t count = 1 + (s->seed * 7 + i) % 16;
		uint64_t first = (s->seed * 2654435761u + (uint64_t)i * 40503u) % (blocks - count);
		uint8_t *p = s->bytes + first * BS;
		ssize_t w;

		fill_pattern(p, count * BS, s->seed * 1000 + i);
		w = wc_write(c, p, count * BS, first * BS, i % 8 == 0 ? WC_FUA : 0);
		ck_assert_msg(w == (ssize_t)(count * BS), "wc_write: %zd %s", w, wc_errmsg());
	}
	s->seed++;
}

static void export_matches(const char *uri, const struct shadow *s)
{
	uint8_t *got = aligned_buf(s->size);

	export_read(uri, got, s->size, 0);
	for (uint64_t off = 0; off < s->size; off += BS)
		ck_assert_msg(memcmp(got + off, s->bytes + off, BS) == 0,
		              "the export's block at %llu is not what the cache was given",
		              (unsigned long long)off);
	free(got);
}

static wc_cache *create_cache(const char *cache, const char *uri, const char *options)
{
	struct wc_config cfg;
	wc_cache *c;
	int ret;

	wc_config_init(&cfg);
	cfg.block_size = BS;
	cfg.cache_size = 8 * MiB;
	if (options)
		ck_assert_int_eq(wc_config_parse(&cfg, options), 0);
	ret = wc_create(&c, cache, uri, &cfg);
	ck_assert_msg(ret == 0, "wc_create over %s: %d %s", uri, ret, wc_errmsg());
	return c;
}

static uint64_t dirty_blocks(wc_cache *c)
{
	struct wc_stats st;

	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	return st.dirty_blocks;
}

static int cache_error(wc_cache *c)
{
	struct wc_stats st;

	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	return st.error;
}

START_TEST(test_writeback_reaches_export)
{
	char file[TEST_PATH_LEN], cache[TEST_PATH_LEN];
	struct shadow s;
	struct wc_stats st;
	struct nbdkit k;
	uint8_t *buf = aligned_buf(64 * 1024);
	wc_cache *c;

	make_file(wc_test_path(file, sizeof(file), "wb-export"), 32 * MiB);
	wc_test_path(cache, sizeof(cache), "wb.cache");
	nbdkit_start(&k, "wb", ARGS("file", file));
	c = create_cache(cache, k.uri, NULL);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(strncmp(st.origin_mode, "nbd nbd+unix:///?socket=", 24) == 0 &&
	              strstr(st.origin_mode, "multi-conn"), "%s", st.origin_mode);
	ck_assert_uint_eq(wc_size(c), 32 * MiB);

	/* 4x the cache: write-back runs while the writes go on. */
	shadow_init(&s, 32 * MiB);
	write_random(c, &s, 1200, 32 * MiB);
	/* Reads: hits and misses (from the export) alike. */
	for (uint64_t off = 0; off < 32 * MiB; off += 4 * MiB) {
		ck_assert_int_eq(wc_read(c, buf, 64 * 1024, off), 64 * 1024);
		ck_assert(memcmp(buf, s.bytes + off, 64 * 1024) == 0);
	}
	ck_assert_msg(wc_writeback(c) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.dirty_blocks, 0);
	ck_assert_uint_gt(st.writeback_bytes, 8 * MiB);
	export_matches(k.uri, &s);

	/* A discard reaches the export as a trim. */
	ck_assert_int_eq(wc_discard(c, 4 * MiB, 1 * MiB), 0);
	memset(s.bytes + 4 * MiB, 0, 1 * MiB);
	export_matches(k.uri, &s);
	ck_assert_int_eq(wc_close(c), 0);
	nbdkit_stop(&k);
	/* And the file behind the export holds it too. */
	{
		uint8_t *f = aligned_buf(32 * MiB);

		read_file(file, f, 32 * MiB, 0);
		ck_assert(memcmp(f, s.bytes, 32 * MiB) == 0);
		free(f);
	}
	free(s.bytes);
	free(buf);
}
END_TEST

START_TEST(test_smaller_export_refused)
{
	char cache[TEST_PATH_LEN];
	struct nbdkit k;
	struct shadow s;
	wc_cache *c;
	int ret;

	wc_test_path(cache, sizeof(cache), "small.cache");
	nbdkit_start(&k, "small", ARGS("memory", "32M"));
	c = create_cache(cache, k.uri, "high_watermark=95,low_watermark=90");
	shadow_init(&s, 32 * MiB);
	write_random(c, &s, 50, 4 * MiB);
	ck_assert_int_eq(wc_close(c), 0);

	/* The server comes back with half the export. */
	nbdkit_stop(&k);
	nbdkit_start(&k, "small", ARGS("memory", "16M"));
	ret = wc_open(&c, cache, k.uri, NULL);
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), k.uri) &&
	              strstr(wc_errmsg(), "has 16777216 bytes, the cache was formatted for 33554432"),
	              "%s", wc_errmsg());
	/* Refused untouched: with the right size it opens, dirty blocks and
	 * all, and writes them back. */
	nbdkit_stop(&k);
	nbdkit_start(&k, "small", ARGS("memory", "32M"));
	ret = wc_open(&c, cache, k.uri, NULL);
	ck_assert_msg(ret == 0, "%s", wc_errmsg());
	ck_assert_uint_gt(dirty_blocks(c), 0);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	export_matches(k.uri, &s);
	nbdkit_stop(&k);
	free(s.bytes);
}
END_TEST

/* The server dies under dirty blocks: wc_writeback gives up after its
 * patience (shortened here) without putting the cache in its error state,
 * hits are still served, nothing is lost; reopened over the server once
 * it is back, the cache writes everything back. */
START_TEST(test_server_dies_under_dirty_cache)
{
	static struct wc_test_hooks patience = { .writeback_give_up_ms = 2000 };
	char file[TEST_PATH_LEN], cache[TEST_PATH_LEN];
	uint8_t *buf = aligned_buf(64 * 1024);
	struct shadow s;
	struct nbdkit k;
	wc_cache *c;
	uint64_t t0;
	int ret;

	make_file(wc_test_path(file, sizeof(file), "dies-export"), 16 * MiB);
	wc_test_path(cache, sizeof(cache), "dies.cache");
	nbdkit_start(&k, "dies", ARGS("file", file));
	c = create_cache(cache, k.uri, "high_watermark=95,low_watermark=90");
	shadow_init(&s, 16 * MiB);
	write_random(c, &s, 200, 2 * MiB);
	fill_pattern(s.bytes, 64 * 1024, 99);
	ck_assert_int_eq(wc_write(c, s.bytes, 64 * 1024, 0, 0), 64 * 1024);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_uint_gt(dirty_blocks(c), 0);

	nbdkit_signal(&k, SIGKILL);
	ck_assert_int_eq(wc_read(c, buf, 64 * 1024, 0), 64 * 1024); /* hits */
	ck_assert(memcmp(buf, s.bytes, 64 * 1024) == 0);
	t0 = mono_ns();
	wc_test_hooks = &patience;
	ret = wc_writeback(c);
	wc_test_hooks = NULL;
	ck_assert_msg(ret == -ENOTCONN || ret == -ECONNREFUSED, "%d %s", ret, wc_errmsg());
	ck_assert_uint_lt(mono_ns() - t0, 10000000000ull);
	ck_assert_int_eq(cache_error(c), 0);
	wc_close(c);

	nbdkit_start(&k, "dies", ARGS("file", file));
	ret = wc_open(&c, cache, k.uri, NULL);
	ck_assert_msg(ret == 0, "%s", wc_errmsg());
	ck_assert_msg(wc_writeback(c) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_close(c), 0);
	export_matches(k.uri, &s);
	nbdkit_stop(&k);
	free(s.bytes);
	free(buf);
}
END_TEST

/* The server is killed and restarted while the cache is open and idle:
 * the next write-back reconnects, and whatever the lost connections may
 * have dropped is written again. */
START_TEST(test_server_back_while_open)
{
	char file[TEST_PATH_LEN], cache[TEST_PATH_LEN];
	struct shadow s;
	struct nbdkit k;
	wc_cache *c;

	make_file(wc_test_path(file, sizeof(file), "back-export"), 16 * MiB);
	wc_test_path(cache, sizeof(cache), "back.cache");
	nbdkit_start(&k, "back", ARGS("file", file));
	c = create_cache(cache, k.uri, "high_watermark=95,low_watermark=90");
	shadow_init(&s, 16 * MiB);
	write_random(c, &s, 100, 2 * MiB);
	ck_assert_int_eq(wc_writeback(c), 0);
	write_random(c, &s, 100, 2 * MiB);
	nbdkit_signal(&k, SIGKILL);
	nbdkit_start(&k, "back", ARGS("file", file));
	ck_assert_msg(wc_writeback(c) == 0, "%s", wc_errmsg());
	ck_assert_uint_eq(dirty_blocks(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	export_matches(k.uri, &s);
	nbdkit_stop(&k);
	free(s.bytes);
}
END_TEST

struct writeback_call {
	wc_cache *c;
	int ret;
	char msg[512];
};

static void *writeback_thread(void *arg)
{
	struct writeback_call *w = arg;

	w->ret = wc_writeback(w->c);
	snprintf(w->msg, sizeof(w->msg), "%s", w->ret ? wc_errmsg() : "");
	return NULL;
}

/* The server is killed in the middle of wc_writeback and comes back 2 s
 * later -- longer than the six failed rounds that end in the sticky error
 * for other failures: write-back keeps retrying the unreachable server,
 * the same wc_writeback call finishes once it is back, and the export holds
 * everything. */
START_TEST(test_server_back_during_writeback)
{
	char file[TEST_PATH_LEN], cache[TEST_PATH_LEN];
	struct writeback_call w = { 0 };
	struct wc_stats st;
	struct shadow s;
	struct nbdkit k;
	pthread_t t;

	make_file(wc_test_path(file, sizeof(file), "outage-export"), 16 * MiB);
	wc_test_path(cache, sizeof(cache), "outage.cache");
	nbdkit_start(&k, "outage", ARGS("file", file));
	w.c = create_cache(cache, k.uri, "high_watermark=95,low_watermark=90");
	shadow_init(&s, 16 * MiB);
	write_random(w.c, &s, 300, 8 * MiB);
	ck_assert_int_eq(wc_flush(w.c), 0);
	nbdkit_signal(&k, SIGKILL);
	ck_assert_int_eq(pthread_create(&t, NULL, writeback_thread, &w), 0);
	nanosleep(&(struct timespec){ 2, 0 }, NULL);
	nbdkit_start(&k, "outage", ARGS("file", file));
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(w.ret == 0, "wc_writeback across the outage: %d %s", w.ret, w.msg);
	ck_assert_int_eq(cache_error(w.c), 0);
	ck_assert_int_eq(wc_get_stats(w.c, &st), 0);
	ck_assert_msg(st.writeback_errors > 0, "the outage did not reach write-back");
	ck_assert_uint_eq(dirty_blocks(w.c), 0);
	ck_assert_int_eq(wc_close(w.c), 0);
	export_matches(k.uri, &s);
	nbdkit_stop(&k);
	free(s.bytes);
}
END_TEST

static Suite *cache_nbd_suite(void)
{
	Suite *s = suite_create("cache_nbd");
	TCase *tc = tcase_create("cache");

	tcase_add_test(tc, test_writeback_reaches_export);
	tcase_add_test(tc, test_smaller_export_refused);
	tcase_add_test(tc, test_server_dies_under_dirty_cache);
	tcase_add_test(tc, test_server_back_while_open);
	tcase_add_test(tc, test_server_back_during_writeback);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (!nbdkit_installed())
		return wc_test_skip_all("nbdkit not installed (apt-get install nbdkit)");
	return wc_test_main(cache_nbd_suite());
}
