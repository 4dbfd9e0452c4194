/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_cache.c -- the cache's contract: I/O, flush, discard, reopen, stats,
 * bad inputs, a model-based random test and a multi-threaded stress test.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachetest.h"
#include "testmain.h"
#include "wcache.h"

#define BS 4096u

static char cache_path[PATH_MAX], origin_path[PATH_MAX];

static wc_cache *make_cache(uint64_t cache_bytes, uint64_t origin_bytes, const char *opts)
{
	struct wc_config cfg;
	wc_cache *c = NULL;
	int ret;

	ct_make_file(cache_path, sizeof(cache_path), "cache.pmem", cache_bytes);
	ct_make_file(origin_path, sizeof(origin_path), "origin.img", origin_bytes);
	wc_config_init(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, opts), 0);
	ret = wc_create(&c, cache_path, origin_path, &cfg);
	ck_assert_msg(ret == 0, "wc_create: %d %s", ret, wc_errmsg());
	return c;
}

static wc_cache *reopen(const char *opts)
{
	struct wc_config cfg;
	wc_cache *c = NULL;
	int ret;

	wc_config_init(&cfg);
	cfg.block_size = 0;
	ck_assert_int_eq(wc_config_parse(&cfg, opts), 0);
	ret = wc_open(&c, cache_path, origin_path, &cfg);
	ck_assert_msg(ret == 0, "wc_open: %d %s", ret, wc_errmsg());
	return c;
}

START_TEST(test_write_read_reopen)
{
	wc_cache *c = make_cache(8 << 20, 64 << 20, NULL);
	uint8_t *buf = aligned_alloc(4096, 4 * BS), *rd = aligned_alloc(4096, 4 * BS);
	struct wc_stats st;

	ck_assert_uint_eq(wc_size(c), 64 << 20);
	ck_assert_uint_eq(wc_block_size(c), BS);
	for (int i = 0; i < 4; i++)
		ct_fill_block(buf + i * BS, BS, 10 + i, 1);
	ck_assert_int_eq(wc_write(c, buf, 4 * BS, 10 * BS, 0), 4 * BS);
	/* readable at once, by this and any thread */
	ck_assert_int_eq(wc_read(c, rd, 4 * BS, 10 * BS), 4 * BS);
	ck_assert_int_eq(memcmp(buf, rd, 4 * BS), 0);
	/* a range mixing misses and hits */
	ck_assert_int_eq(wc_read(c, rd, 4 * BS, 8 * BS), 4 * BS);
	ck_assert_int_eq(ct_block_is(rd, BS, 8, UINT64_MAX), 0);
	ck_assert_int_eq(ct_block_is(rd + BS, BS, 9, UINT64_MAX), 0);
	ck_assert_int_eq(ct_block_is(rd + 2 * BS, BS, 10, 1), 0);
	ck_assert_int_eq(ct_block_is(rd + 3 * BS, BS, 11, 1), 0);
	/* overwrite uncommitted in place, then committed (new block) */
	ct_fill_block(buf, BS, 10, 2);
	ck_assert_int_eq(wc_write(c, buf, BS, 10 * BS, 0), BS);
	ck_assert_int_eq(wc_flush(c), 0);
	ct_fill_block(buf, BS, 10, 3);
	ck_assert_int_eq(wc_write(c, buf, BS, 10 * BS, WC_FUA), BS);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.writes, 6);
	ck_assert_uint_eq(st.writes_allocate, 4);
	ck_assert_uint_ge(st.write_hits_uncommitted, 1);
	ck_assert_uint_eq(st.write_hits_committed, 1);
	ck_assert_uint_eq(st.dirty_blocks, 4);
	ck_assert_uint_eq(st.flushes, 1);
	ck_assert_uint_ge(st.commits, 2);
	ck_assert_uint_lt(st.dram_bytes / st.blocks, 88);
	ck_assert_int_eq(wc_close(c), 0);

	c = reopen(NULL);
	ck_assert_int_eq(wc_read(c, rd, 2 * BS, 10 * BS), 2 * BS);
	ck_assert_int_eq(ct_block_is(rd, BS, 10, 3), 0);
	ck_assert_int_eq(ct_block_is(rd + BS, BS, 11, 1), 0);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.dirty_blocks, 4);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	free(rd);
}
END_TEST

START_TEST(test_flush_costs_nothing_when_clean)
{
	wc_cache *c = make_cache(4 << 20, 16 << 20, "autocommit_ms=3600000");
	uint8_t *buf = aligned_alloc(4096, BS);
	struct wc_stats st;

	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.commits, 0);
	ck_assert_uint_eq(st.flushes, 1);
	ct_fill_block(buf, BS, 1, 1);
	ck_assert_int_eq(wc_write(c, buf, BS, BS, 0), BS);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.commits, 1);
	ck_assert_uint_eq(st.flushes, 3);
	wc_clear_stats(c);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.commits + st.flushes + st.writes, 0);
	ck_assert_uint_eq(st.dirty_blocks, 1); /* state, not a counter */
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
}
END_TEST

START_TEST(test_autocommit_blocks)
{
	wc_cache *c = make_cache(4 << 20, 16 << 20, "autocommit_blocks=8,autocommit_ms=3600000");
	uint8_t *buf = aligned_alloc(4096, BS);
	struct wc_stats st;

	for (int i = 0; i < 20; i++) {
		ct_fill_block(buf, BS, (uint64_t)i, 1);
		ck_assert_int_eq(wc_write(c, buf, BS, (uint64_t)i * BS, 0), BS);
	}
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.commits, 2);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
}
END_TEST

START_TEST(test_discard)
{
	wc_cache *c = make_cache(4 << 20, 16 << 20, NULL);
	uint8_t *buf = aligned_alloc(4096, BS), *rd = aligned_alloc(4096, BS);
	struct wc_stats st;

	for (uint64_t b = 0; b < 8; b++) {
		ct_fill_block(buf, BS, b, 1);
		ck_assert_int_eq(wc_write(c, buf, BS, b * BS, 0), BS);
	}
	ck_assert_int_eq(wc_flush(c), 0);
	ct_fill_block(buf, BS, 3, 2); /* a committed and a newer uncommitted version */
	ck_assert_int_eq(wc_write(c, buf, BS, 3 * BS, 0), BS);
	ck_assert_int_eq(wc_discard(c, 2 * BS, 3 * BS), 0);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.discards, 3);
	ck_assert_uint_eq(st.dirty_blocks, 5);
	ck_assert_int_eq(wc_read(c, rd, BS, 3 * BS), BS);
	ck_assert_int_eq(ct_block_is(rd, BS, 3, UINT64_MAX), 0);
	ck_assert_int_eq(wc_close(c), 0);
	/* after reopen neither version of block 3 comes back */
	c = reopen(NULL);
	ck_assert_int_eq(wc_read(c, rd, BS, 3 * BS), BS);
	ck_assert_int_eq(ct_block_is(rd, BS, 3, UINT64_MAX), 0);
	ck_assert_int_eq(wc_read(c, rd, BS, 5 * BS), BS);
	ck_assert_int_eq(ct_block_is(rd, BS, 5, 1), 0);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	free(rd);
}
END_TEST

START_TEST(test_bad_io)
{
	wc_cache *c = make_cache(4 << 20, 16 << 20, NULL);
	uint8_t *buf = aligned_alloc(4096, 2 * BS);
	struct wc_stats st;

	memset(buf, 7, 2 * BS);
	ct_assert_err(wc_write(c, buf, BS, 100, 0), -EINVAL);             /* misaligned offset */
	ct_assert_err(wc_write(c, buf, 0, 0, 0), -EINVAL);                /* zero length */
	ct_assert_err(wc_write(c, buf, 100, 0, 0), -EINVAL);              /* misaligned length */
	ct_assert_err(wc_write(c, buf, BS, 16 << 20, 0), -EINVAL);        /* past the end */
	ct_assert_err(wc_write(c, buf, 2 * BS, (16 << 20) - BS, 0), -EINVAL); /* straddles the end */
	ct_assert_err(wc_write(c, buf, BS, UINT64_MAX - BS + 1, 0), -EINVAL); /* overflow */
	ct_assert_err(wc_write(c, NULL, BS, 0, 0), -EINVAL);
	ct_assert_err(wc_write(c, buf, BS, 0, 0x80), -EINVAL);            /* unknown flag */
	ct_assert_err(wc_read(c, buf, BS, 1), -EINVAL);
	ct_assert_err(wc_read(c, buf, SIZE_MAX - 4095, 0), -EINVAL);
	ct_assert_err(wc_discard(c, BS, 7), -EINVAL);
	ct_assert_err(wc_discard(c, 0, 0), -EINVAL);
	ct_assert_err(wc_discard(c, 16 << 20, BS), -EINVAL);
	ct_assert_err(wc_write(NULL, buf, BS, 0, 0), -EINVAL);
	ct_assert_err(wc_read(NULL, buf, BS, 0), -EINVAL);
	ct_assert_err(wc_flush(NULL), -EINVAL);
	ct_assert_err(wc_close(NULL), -EINVAL);
	ct_assert_err(wc_get_stats(c, NULL), -EINVAL);
	/* nothing was touched */
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.writes + st.reads + st.discards + st.dirty_blocks, 0);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
}
END_TEST

START_TEST(test_bad_create_open)
{
	struct wc_config cfg;
	wc_cache *c = NULL;
	char foreign[PATH_MAX], small[PATH_MAX];
	int fd;

	/* a valid cache is not formatted over */
	c = make_cache(4 << 20, 16 << 20, NULL);
	ck_assert_int_eq(wc_close(c), 0);
	wc_config_init(&cfg);
	ct_assert_err(wc_create(&c, cache_path, origin_path, &cfg), -EEXIST);
	ck_assert_ptr_null(c);
	/* a block size other than the superblock's */
	cfg.block_size = 8192;
	ct_assert_err(wc_open(&c, cache_path, origin_path, &cfg), -EINVAL);
	/* an origin smaller than the one formatted for */
	ck_assert_int_eq(truncate(origin_path, 8 << 20), 0);
	ct_assert_err(wc_open(&c, cache_path, origin_path, NULL), -EINVAL);
	ck_assert_int_eq(truncate(origin_path, 16 << 20), 0);
	/* a truncated cache file: damage */
	ck_assert_int_eq(truncate(cache_path, 1 << 20), 0);
	ct_assert_err(wc_open(&c, cache_path, origin_path, NULL), -EUCLEAN);
	/* a never-formatted file, a foreign file */
	ct_make_file(foreign, sizeof(foreign), "zero.pmem", 4 << 20);
	ct_assert_err(wc_open(&c, foreign, origin_path, NULL), -ENODATA);
	fd = open(foreign, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "GIF89a, not a cache", 19, 0), 19);
	close(fd);
	ct_assert_err(wc_open(&c, foreign, origin_path, NULL), -EILSEQ);
	/* a cache file too small for one block: the caller's mistake, with
	 * the smallest size in the message */
	ct_make_file(small, sizeof(small), "small.pmem", 6000);
	wc_config_init(&cfg);
	ct_assert_err(wc_create(&c, small, origin_path, &cfg), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "at least"));
	/* ... which stays: the create did not make it */
	ck_assert_int_eq(access(small, F_OK), 0);
	/* a create that made the file and then failed leaves none behind */
	ck_assert_int_eq(unlink(small), 0);
	cfg.cache_size = 6000;
	ct_assert_err(wc_create(&c, small, origin_path, &cfg), -EINVAL);
	ck_assert_msg(access(small, F_OK) != 0 && errno == ENOENT,
	              "a failed create left %s behind", small);
	/* cache_size smaller than the file there: refused, the file untouched */
	ct_make_file(small, sizeof(small), "big.pmem", 32 << 20);
	cfg.cache_size = 16 << 20;
	ct_assert_err(wc_create(&c, small, origin_path, &cfg), -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), "larger than cache_size"), "%s", wc_errmsg());
	{
		struct stat st;

		ck_assert_int_eq(stat(small, &st), 0);
		ck_assert_int_eq(st.st_size, 32 << 20);
	}
	cfg.cache_size = 0;
	/* an origin whose size is not a multiple of the block size */
	ck_assert_int_eq(truncate(origin_path, (16 << 20) + 512), 0);
	ct_assert_err(wc_create(&c, foreign, origin_path, &cfg), -EINVAL);
	/* missing paths */
	ct_assert_err(wc_create(&c, foreign, "/nonexistent/origin", &cfg), -ENOENT);
	ct_assert_err(wc_open(&c, "/nonexistent/cache", origin_path, NULL), -ENOENT);
	ct_assert_err(wc_create(&c, NULL, origin_path, &cfg), -EINVAL);
	ct_assert_err(wc_create(NULL, foreign, origin_path, &cfg), -EINVAL);
	ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_config_parse)
{
	struct wc_config cfg;

	wc_config_init(&cfg);
	ck_assert_uint_eq(cfg.block_size, 0); /* 4096 at create, the cache's at open */
	ck_assert_uint_eq(cfg.high_watermark, 50);
	ck_assert_uint_eq(cfg.low_watermark, 45);
	ck_assert_uint_eq(cfg.writeback_jobs, 256);
	ck_assert_uint_eq(cfg.autocommit_blocks, 64);
	ck_assert_uint_eq(cfg.autocommit_ms, 1000);
	ck_assert(cfg.fua && !cfg.cleaner && !cfg.no_threads);
	ck_assert_int_eq(wc_config_parse(&cfg, "block_size=512,high_watermark=60,low_watermark=10,"
	                                 "cleaner,nofua,max_age_ms=5000,cache_size=1G,pmem_force=nt"), 0);
	ck_assert_uint_eq(cfg.block_size, 512);
	ck_assert_uint_eq(cfg.high_watermark, 60);
	ck_assert_uint_eq(cfg.low_watermark, 10);
	ck_assert(cfg.cleaner && !cfg.fua);
	ck_assert_uint_eq(cfg.max_age_ms, 5000);
	ck_assert_uint_eq(cfg.cache_size, 1ull << 30);
	ck_assert_int_eq(cfg.pmem.force, WC_PMEM_FORCE_NT);
	ct_assert_err(wc_config_parse(&cfg, "bogus=1"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "bogus"));
	ct_assert_err(wc_config_parse(&cfg, "block_size=1000"), -EINVAL);
	ct_assert_err(wc_config_parse(&cfg, "block_size=abc"), -EINVAL);
	ct_assert_err(wc_config_parse(&cfg, "high_watermark=101"), -EINVAL);
	ct_assert_err(wc_config_parse(&cfg, "high_watermark=20,low_watermark=30"), -EINVAL);
	ct_assert_err(wc_config_parse(&cfg, "writeback_jobs=0"), -EINVAL);
	ct_assert_err(wc_config_parse(&cfg, "cleaner=maybe"), -EINVAL);
	/* nofua takes a value as the other switches do (a fresh config: the
	 * failed parses above left watermarks that fail validation). */
	wc_config_init(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, "fua=1,nofua=1"), 0);
	ck_assert(!cfg.fua);
	ck_assert_int_eq(wc_config_parse(&cfg, "nofua=0"), 0);
	ck_assert(cfg.fua);
	ck_assert_int_eq(wc_config_parse(&cfg, "nofua"), 0);
	ck_assert(!cfg.fua);
	ct_assert_err(wc_config_parse(&cfg, "nofua=perhaps"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "nofua"));
	ct_assert_err(wc_config_parse(&cfg, "pmem_force=fast"), -EINVAL);
	ct_assert_err(wc_config_parse(NULL, "cleaner"), -EINVAL);
}
END_TEST

/* ---- model-based random test ---- */

#define M_BLOCKS 2048u  /* working set: 8 MiB; the cache holds ~1/10 */

struct model {
	uint64_t version[M_BLOCKS]; /* UINT64_MAX: never written (zero); UINT64_MAX-2: discarded */
};

#define DISCARDED (UINT64_MAX - 2)

static void model_check_block(wc_cache *c, struct model *m, uint64_t b, uint8_t *rd, uint64_t seed)
{
	uint64_t v;

	ck_assert_int_eq(wc_read(c, rd, BS, b * BS), BS);
	v = ct_block_version(rd, BS, b);
	if (m->version[b] == DISCARDED)
		ck_assert_msg(v != UINT64_MAX - 1, "seed %llu: block %llu torn after discard",
		              (unsigned long long)seed, (unsigned long long)b);
	else
		ck_assert_msg(v == m->version[b], "seed %llu: block %llu holds version %lld, model %lld",
		              (unsigned long long)seed, (unsigned long long)b, (long long)v,
		              (long long)m->version[b]);
}

static void run_model(const char *opts, bool no_threads, uint64_t seed, unsigned ops)
{
	struct model *m = malloc(sizeof(*m));
	uint8_t *buf = aligned_alloc(4096, 4 * BS), *rd = aligned_alloc(4096, 4 * BS);
	uint64_t s = seed, next_version = 1;
	wc_cache *c;

	for (unsigned b = 0; b < M_BLOCKS; b++)
		m->version[b] = UINT64_MAX;
	/* ~205 cache blocks for 2048 origin blocks */
	c = make_cache(4096 + 205 * (BS + 16) + BS, (uint64_t)M_BLOCKS * BS, opts);
	for (unsigned op = 0; op < ops; op++) {
		uint64_t r = ct_rand(&s) % 100, b = ct_rand(&s) % M_BLOCKS;
		unsigned n = 1 + ct_rand(&s) % 4;

		if (b + n > M_BLOCKS)
			n = (unsigned)(M_BLOCKS - b);
		if (r < 55) {
			for (unsigned i = 0; i < n; i++) {
				ct_fill_block(buf + i * BS, BS, b + i, next_version);
				m->version[b + i] = next_version;
			}
			next_version++;
			ck_assert_msg(wc_write(c, buf, n * BS, b * BS, ct_rand(&s) % 8 ? 0 : WC_FUA) == (ssize_t)(n * BS),
			              "seed %llu op %u: write: %s", (unsigned long long)seed, op, wc_errmsg());
		} else if (r < 85) {
			ck_assert_int_eq(wc_read(c, rd, n * BS, b * BS), n * BS);
			for (unsigned i = 0; i < n; i++)
				model_check_block(c, m, b + i, rd, seed);
		} else if (r < 92) {
			ck_assert_int_eq(wc_flush(c), 0);
		} else if (r < 96) {
			ck_assert_int_eq(wc_discard(c, b * BS, n * BS), 0);
			for (unsigned i = 0; i < n; i++)
				m->version[b + i] = DISCARDED;
		} else if (r < 98) {
			ck_assert_int_eq(wc_close(c), 0);
			c = reopen(opts);
		} else if (no_threads) {
			ck_assert_int_ge(wc_poll(c, 4), 0);
		} else {
			/* Its own thread does the work: polling is refused,
			 * saying so (no request of wc_submit is in flight). */
			ck_assert_int_eq(wc_poll(c, 4), -EOPNOTSUPP);
		}
		if (no_threads && op % 16 == 0)
			ck_assert_int_ge(wc_poll(c, 2), 0);
	}
	for (uint64_t b = 0; b < M_BLOCKS; b++)
		model_check_block(c, m, b, rd, seed);
	/* write-back: afterwards the origin file alone equals the model */
	ck_assert_int_eq(wc_writeback(c), 0);
	{
		struct wc_stats st;

		ck_assert_int_eq(wc_get_stats(c, &st), 0);
		ck_assert_uint_eq(st.dirty_blocks, 0);
		ck_assert_uint_eq(st.free_blocks, st.blocks);
		ck_assert_uint_gt(st.writeback_ios, 0);
		ck_assert_int_eq(st.error, 0);
	}
	ck_assert_int_eq(wc_close(c), 0);
	{
		int fd = open(origin_path, O_RDONLY);

		ck_assert_int_ge(fd, 0);
		for (uint64_t b = 0; b < M_BLOCKS; b++) {
			ck_assert_int_eq(pread(fd, rd, BS, (off_t)(b * BS)), BS);
			if (m->version[b] == DISCARDED)
				continue;
			ck_assert_msg(ct_block_version(rd, BS, b) == m->version[b],
			              "seed %llu: origin block %llu holds %lld, model %lld",
			              (unsigned long long)seed, (unsigned long long)b,
			              (long long)ct_block_version(rd, BS, b), (long long)m->version[b]);
		}
		close(fd);
	}
	free(m);
	free(buf);
	free(rd);
}

START_TEST(test_model_threads)
{
	run_model("autocommit_ms=5", false, 0x1234 + (uint64_t)_i, 6000);
}
END_TEST

START_TEST(test_model_no_threads)
{
	run_model("no_threads=1,writeback_jobs=16", true, 0x9876 + (uint64_t)_i, 6000);
}
END_TEST

START_TEST(test_model_small_batches)
{
	run_model("writeback_jobs=3,autocommit_blocks=2,high_watermark=20,low_watermark=5,"
	          "writeback_max_io_kib=8", false, 0x5555 + (uint64_t)_i, 4000);
}
END_TEST

/* ---- stress: more threads than cores ---- */

/* Block b of c holds version `want` (ct_fill_block); `what` names the check. */
static void assert_version(wc_cache *c, uint8_t *rd, uint64_t b, uint64_t want, const char *what)
{
	ck_assert_int_eq(wc_read(c, rd, BS, b * BS), BS);
	ck_assert_msg(ct_block_version(rd, BS, b) == want, "%s: block %llu holds %lld, expected %lld", what,
	              (unsigned long long)b, (long long)ct_block_version(rd, BS, b), (long long)want);
}

#define S_THREADS 6
#define S_OWN 96  /* blocks each thread owns */
#define S_SHARED 32

struct stress_arg {
	wc_cache *c;
	unsigned id;
	uint64_t seed;
	uint64_t last[S_OWN];
	int failures;
};

static void *stress_thread(void *p)
{
	struct stress_arg *a = p;
	uint8_t *buf = aligned_alloc(4096, BS), *rd = aligned_alloc(4096, BS);
	uint64_t s = a->seed;

	for (unsigned i = 0; i < S_OWN; i++)
		a->last[i] = UINT64_MAX;
	for (unsigned op = 1; op <= 3000 && !a->failures; op++) {
		uint64_t r = ct_rand(&s) % 10;
		unsigned k = (unsigned)(ct_rand(&s) % S_OWN);
		uint64_t own = S_SHARED + (uint64_t)a->id * S_OWN + k;
		uint64_t shared = ct_rand(&s) % S_SHARED, v;

		if (r < 4) {
			ct_fill_block(buf, BS, own, op);
			if (wc_write(a->c, buf, BS, own * BS, 0) != BS)
				a->failures++;
			a->last[k] = op;
		} else if (r < 6) {
			ct_fill_block(buf, BS, shared, op);
			if (wc_write(a->c, buf, BS, shared * BS, 0) != BS)
				a->failures++;
		} else if (r < 8) {
			if (wc_read(a->c, rd, BS, own * BS) != BS ||
			    ct_block_version(rd, BS, own) != a->last[k])
				a->failures++;
		} else if (r < 9) {
			/* someone's whole block, never a torn mix */
			if (wc_read(a->c, rd, BS, shared * BS) != BS)
				a->failures++;
			v = ct_block_version(rd, BS, shared);
			if (v == UINT64_MAX - 1)
				a->failures++;
		} else if (wc_flush(a->c)) {
			a->failures++;
		}
	}
	free(buf);
	free(rd);
	return NULL;
}

START_TEST(test_stress)
{
	uint64_t blocks = S_SHARED + S_THREADS * S_OWN;
	/* the cache holds half the working set: write-back runs throughout */
	wc_cache *c = make_cache(4096 + blocks / 2 * (BS + 16) + BS, blocks * BS, "high_watermark=40,low_watermark=20");
	struct stress_arg a[S_THREADS];
	pthread_t t[S_THREADS];
	uint8_t *rd = aligned_alloc(4096, BS);

	for (unsigned i = 0; i < S_THREADS; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].c = c;
		a[i].id = i;
		a[i].seed = 77 + i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, stress_thread, &a[i]), 0);
	}
	for (unsigned i = 0; i < S_THREADS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_msg(a[i].failures == 0, "thread %u: %d failures (%s)", i, a[i].failures, wc_errmsg());
	}
	ck_assert_int_eq(wc_close(c), 0);
	c = reopen(NULL);
	for (unsigned i = 0; i < S_THREADS; i++)
		for (unsigned k = 0; k < S_OWN; k++)
			assert_version(c, rd, S_SHARED + (uint64_t)i * S_OWN + k, a[i].last[k], "after reopen");
	ck_assert_int_eq(wc_close(c), 0);
	free(rd);
}
END_TEST

/* ---- writer slots: more writing threads than slots, two caches ---- */

#define W_THREADS 90 /* more than the cache's writer slots: some share one */
#define W_OWN 4
#define W_WRITES 40

struct writer_arg {
	wc_cache *c;
	unsigned id;
	uint64_t last[W_OWN];
	int failures;
	pthread_barrier_t *all_in; /* if set: wait there after the first write */
};

/* FUA writes to blocks of its own: each is durable when it returns, so the
 * reopened cache must hold the last one of each, whichever slot (private
 * or shared) the thread published through and whoever committed. */
static void *slot_writer(void *p)
{
	struct writer_arg *a = p;
	uint8_t *buf = aligned_alloc(4096, BS);

	for (unsigned op = 1; op <= W_WRITES && !a->failures; op++) {
		unsigned k = op % W_OWN;
		uint64_t b = (uint64_t)a->id * W_OWN + k;

		ct_fill_block(buf, BS, b, op);
		if (wc_write(a->c, buf, BS, b * BS, op % 3 ? WC_FUA : 0) != BS)
			a->failures++;
		else if (op % 3 == 0 && wc_flush(a->c))
			a->failures++;
		a->last[k] = op;
		if (op == 1 && a->all_in) {
			pthread_barrier_wait(a->all_in); /* all in: the main thread counts */
			pthread_barrier_wait(a->all_in);
		}
	}
	free(buf);
	return NULL;
}

static uint64_t writer_slots_of(wc_cache *c)
{
	struct wc_stats st;

	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	return st.writer_slots;
}

START_TEST(test_more_writers_than_slots)
{
	uint64_t blocks = W_THREADS * W_OWN;
	wc_cache *c = make_cache(4096 + 2 * blocks * (BS + 16) + (4 << 20), blocks * BS, NULL);
	struct writer_arg *a = calloc(W_THREADS, sizeof(*a));
	pthread_t t[W_THREADS];
	uint8_t *rd = aligned_alloc(4096, BS);
	pthread_barrier_t all_in;

	/* All alive at once after their first write, so the last ones share
	 * a slot; then they write on, and exit while others still write
	 * (giving their slots back under running commits). */
	ck_assert_int_eq(pthread_barrier_init(&all_in, NULL, W_THREADS + 1), 0);
	for (unsigned i = 0; i < W_THREADS; i++) {
		a[i].c = c;
		a[i].id = i;
		a[i].all_in = &all_in;
		ck_assert_int_eq(pthread_create(&t[i], NULL, slot_writer, &a[i]), 0);
	}
	pthread_barrier_wait(&all_in);
	ck_assert_uint_eq(writer_slots_of(c), 63); /* the other 27 share the last */
	pthread_barrier_wait(&all_in);
	for (unsigned i = 0; i < W_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&all_in);
	for (unsigned i = 0; i < W_THREADS; i++)
		ck_assert_msg(a[i].failures == 0, "thread %u: %d failures (%s)", i, a[i].failures, wc_errmsg());
	ck_assert_uint_eq(writer_slots_of(c), 0);
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	c = reopen(NULL);
	for (unsigned i = 0; i < W_THREADS; i++)
		for (unsigned k = 0; k < W_OWN; k++)
			assert_version(c, rd, (uint64_t)i * W_OWN + k, a[i].last[k], "after reopen");
	ck_assert_int_eq(wc_close(c), 0);
	free(a);
	free(rd);
}
END_TEST

/* Files for n small caches (8 MiB) and their origins (1 MiB), named
 * <prefix><i>.pmem and <prefix><i>.img. */
static void make_cache_files(char (*cp)[PATH_MAX], char (*op)[PATH_MAX], unsigned n,
                             const char *prefix)
{
	for (unsigned i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%s%u.pmem", prefix, i);
		ct_make_file(cp[i], sizeof(cp[i]), name, 8 << 20);
		snprintf(name, sizeof(name), "%s%u.img", prefix, i);
		ct_make_file(op[i], sizeof(op[i]), name, 1 << 20);
	}
}

/* Writer threads that come and go, as an NBD server's connections do:
 * each exit gives the thread's slot back, so hundreds of short-lived
 * writers never reach the shared slot, and a new thread that takes a slot
 * given back (with the marks of epochs not yet committed) loses nothing. */
#define CHURN_WAVES 40
#define CHURN_WIDTH 6

START_TEST(test_writer_slots_given_back)
{
	uint64_t blocks = (uint64_t)CHURN_WIDTH * W_OWN;
	wc_cache *c = make_cache(4096 + 4 * blocks * (BS + 16) + (4 << 20), blocks * BS, NULL);
	struct writer_arg a[CHURN_WIDTH];
	pthread_t t[CHURN_WIDTH];
	uint8_t *rd = aligned_alloc(4096, BS);
	uint64_t last[CHURN_WIDTH][W_OWN];

	memset(last, 0, sizeof(last));
	for (unsigned wave = 0; wave < CHURN_WAVES; wave++) {
		/* A wave of writers over the same blocks, the next wave's
		 * first ones started while this one's last still write. */
		for (unsigned i = 0; i < CHURN_WIDTH; i++) {
			memset(&a[i], 0, sizeof(a[i]));
			a[i].c = c;
			a[i].id = i;
			ck_assert_int_eq(pthread_create(&t[i], NULL, slot_writer, &a[i]), 0);
			if (i >= CHURN_WIDTH / 2)
				pthread_join(t[i - CHURN_WIDTH / 2], NULL);
		}
		for (unsigned i = CHURN_WIDTH / 2; i < CHURN_WIDTH; i++)
			pthread_join(t[i], NULL);
		for (unsigned i = 0; i < CHURN_WIDTH; i++) {
			ck_assert_msg(a[i].failures == 0, "wave %u thread %u: %s", wave, i, wc_errmsg());
			memcpy(last[i], a[i].last, sizeof(last[i]));
		}
		/* Joined: every writer's exit has given its slot back. */
		ck_assert_uint_eq(writer_slots_of(c), 0);
	}
	/* 240 writer threads in all, never more than six alive: without
	 * giving back, the last 177 would have shared the last slot. */
	ck_assert_int_eq(wc_close(c), 0);
	c = reopen(NULL);
	for (unsigned i = 0; i < CHURN_WIDTH; i++)
		for (unsigned k = 0; k < W_OWN; k++)
			assert_version(c, rd, (uint64_t)i * W_OWN + k, last[i][k], "after reopen");
	ck_assert_int_eq(wc_close(c), 0);
	free(rd);
}
END_TEST

/* A writer thread that outlives a cache it wrote to: its exit gives back
 * nothing to the closed cache (ASan would see the use after free), and
 * the cache opened next at that address is not taken for it. */
struct outliving {
	wc_cache *c;
	pthread_barrier_t wrote, closed;
	int failures;
};

static void *outliving_writer(void *p)
{
	struct outliving *o = p;
	uint8_t *buf = aligned_alloc(4096, BS);

	ct_fill_block(buf, BS, 0, 1);
	if (wc_write(o->c, buf, BS, 0, WC_FUA) != BS)
		o->failures++;
	pthread_barrier_wait(&o->wrote);
	pthread_barrier_wait(&o->closed); /* the main thread closed o->c, opened another */
	free(buf);
	return NULL;
}

START_TEST(test_writer_outlives_cache)
{
	struct outliving o = { .c = make_cache(8 << 20, 1 << 20, NULL) };
	pthread_t t;
	uint8_t *rd = aligned_alloc(4096, BS);
	wc_cache *next;

	ck_assert_int_eq(pthread_barrier_init(&o.wrote, NULL, 2), 0);
	ck_assert_int_eq(pthread_barrier_init(&o.closed, NULL, 2), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, outliving_writer, &o), 0);
	pthread_barrier_wait(&o.wrote);
	ck_assert_uint_eq(writer_slots_of(o.c), 1);
	ck_assert_int_eq(wc_close(o.c), 0);
	next = reopen(NULL);
	pthread_barrier_wait(&o.closed);
	pthread_join(t, NULL);
	ck_assert_int_eq(o.failures, 0);
	ck_assert_uint_eq(writer_slots_of(next), 0);
	assert_version(next, rd, 0, 1, "after the writer's exit");
	ct_fill_block(rd, BS, 1, 2);
	ck_assert_int_eq(wc_write(next, rd, BS, BS, WC_FUA), BS);
	ck_assert_uint_eq(writer_slots_of(next), 1); /* the main thread's, kept until it exits */
	ck_assert_int_eq(wc_close(next), 0);
	pthread_barrier_destroy(&o.wrote);
	pthread_barrier_destroy(&o.closed);
	free(rd);
}
END_TEST

/* One thread writing to more caches than it keeps slots for (four): the
 * slot of the cache it wrote to longest ago goes back to that cache, and
 * writing there again takes one anew. */
#define FOLLOW_CACHES 6

struct follower {
	wc_cache *c[FOLLOW_CACHES];
	uint64_t slots_after_round[FOLLOW_CACHES], slots_after_return[FOLLOW_CACHES];
	int failures;
};

static void *follow_caches(void *p)
{
	struct follower *f = p;
	uint8_t *buf = aligned_alloc(4096, BS);

	for (unsigned i = 0; i < FOLLOW_CACHES; i++) {
		ct_fill_block(buf, BS, 0, 10 + i);
		f->failures += wc_write(f->c[i], buf, BS, 0, i % 2 ? WC_FUA : 0) != BS;
	}
	for (unsigned i = 0; i < FOLLOW_CACHES; i++)
		f->slots_after_round[i] = writer_slots_of(f->c[i]);
	ct_fill_block(buf, BS, 0, 20);
	f->failures += wc_write(f->c[0], buf, BS, 0, WC_FUA) != BS;
	for (unsigned i = 0; i < FOLLOW_CACHES; i++)
		f->slots_after_return[i] = writer_slots_of(f->c[i]);
	free(buf);
	return NULL;
}

START_TEST(test_writer_follows_six_caches)
{
	char cp[FOLLOW_CACHES][PATH_MAX], op[FOLLOW_CACHES][PATH_MAX];
	struct follower f = { .failures = 0 };
	uint8_t *rd = aligned_alloc(4096, BS);
	struct wc_config cfg;
	pthread_t t;

	wc_config_init(&cfg);
	make_cache_files(cp, op, FOLLOW_CACHES, "follow");
	for (unsigned i = 0; i < FOLLOW_CACHES; i++)
		ck_assert_int_eq(wc_create(&f.c[i], cp[i], op[i], &cfg), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, follow_caches, &f), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(f.failures, 0);
	for (unsigned i = 0; i < FOLLOW_CACHES; i++) {
		/* caches 0 and 1 gave way to 4 and 5; then 0 took 2's place */
		ck_assert_uint_eq(f.slots_after_round[i], i >= 2);
		ck_assert_uint_eq(f.slots_after_return[i], i == 0 || i >= 3);
		ck_assert_uint_eq(writer_slots_of(f.c[i]), 0); /* the thread exited */
		ck_assert_int_eq(wc_close(f.c[i]), 0);
	}
	cfg.block_size = 0;
	for (unsigned i = 0; i < FOLLOW_CACHES; i++) {
		ck_assert_int_eq(wc_open(&f.c[i], cp[i], op[i], &cfg), 0);
		assert_version(f.c[i], rd, 0, i ? 10 + i : 20, cp[i]);
		ck_assert_int_eq(wc_close(f.c[i]), 0);
	}
	free(rd);
}
END_TEST

/* One thread writing to two caches in turn, then to a third opened after
 * the first was closed (likely at its address): each cache's commits see
 * the thread's writes, never another cache's slot. */
START_TEST(test_one_writer_several_caches)
{
	char cp[3][PATH_MAX], op[3][PATH_MAX];
	wc_cache *c[3] = {NULL, NULL, NULL};
	uint8_t *buf = aligned_alloc(4096, BS);
	struct wc_config cfg;

	make_cache_files(cp, op, 3, "multi");
	wc_config_init(&cfg);
	for (unsigned i = 0; i < 2; i++)
		ck_assert_int_eq(wc_create(&c[i], cp[i], op[i], &cfg), 0);
	for (unsigned v = 1; v <= 20; v++)
		for (unsigned i = 0; i < 2; i++) {
			ct_fill_block(buf, BS, v % 4, v * 10 + i);
			ck_assert_int_eq(wc_write(c[i], buf, BS, (v % 4) * BS, v % 2 ? WC_FUA : 0), BS);
		}
	ck_assert_int_eq(wc_close(c[0]), 0);
	ck_assert_int_eq(wc_create(&c[2], cp[2], op[2], &cfg), 0);
	ct_fill_block(buf, BS, 0, 7);
	ck_assert_int_eq(wc_write(c[2], buf, BS, 0, WC_FUA), BS);
	ck_assert_int_eq(wc_flush(c[1]), 0);
	ck_assert_int_eq(wc_close(c[1]), 0);
	ck_assert_int_eq(wc_close(c[2]), 0);
	cfg.block_size = 0;
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(wc_open(&c[i], cp[i], op[i], &cfg), 0);
		for (unsigned b = 0; b < (i == 2 ? 1u : 4u); b++) {
			/* the last write of block b: v = 20, 17, 18, 19 for b = 0..3 */
			uint64_t want = i == 2 ? 7 : (uint64_t)(b ? 16 + b : 20) * 10 + i;

			assert_version(c[i], buf, b, want, cp[i]);
		}
		ck_assert_int_eq(wc_close(c[i]), 0);
	}
	free(buf);
}
END_TEST

static Suite *cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("io");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_write_read_reopen);
	tcase_add_test(tc, test_flush_costs_nothing_when_clean);
	tcase_add_test(tc, test_autocommit_blocks);
	tcase_add_test(tc, test_discard);
	tcase_add_test(tc, test_bad_io);
	tcase_add_test(tc, test_bad_create_open);
	tcase_add_test(tc, test_config_parse);
	suite_add_tcase(s, tc);
	tc = tcase_create("model");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_model_threads, 0, 2);
	tcase_add_loop_test(tc, test_model_no_threads, 0, 2);
	tcase_add_loop_test(tc, test_model_small_batches, 0, 1);
	suite_add_tcase(s, tc);
	tc = tcase_create("stress");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stress);
	tcase_add_test(tc, test_more_writers_than_slots);
	tcase_add_test(tc, test_one_writer_several_caches);
	tcase_add_test(tc, test_writer_slots_given_back);
	tcase_add_test(tc, test_writer_outlives_cache);
	tcase_add_test(tc, test_writer_follows_six_caches);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(cache_suite());
}
