/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_api.c -- what an embedder relies on from wcache.h and libwcache(3),
 * through the shared library and the public header alone, on both media:
 * the run-time version, a config that a failed parse leaves as it was,
 * wc_config_init's block size at create and at open.
 *
 * The block medium's files go under WC_TEST_DISK_DIR (default /var/tmp:
 * O_DIRECT needs a disk file system); the pmem ones in the scratch folder
 * under /dev/shm, with PMEM2_FORCE_GRANULARITY set by the test driver.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachetest.h"
#include "testmain.h"
#include "wcache.h"

#define MiB (1024u * 1024u)
#define BS 4096u
#define ORIGIN_BYTES (16u * MiB)
#define PMEM_BYTES (8u * MiB)
#define BLOCK_BYTES (8u * MiB)

enum medium { PMEM, BLOCK };

static char origin_path[PATH_MAX];
static char paths[2][PATH_MAX]; /* a cache on each medium */

static const char *cache_of(enum medium m)
{
	return paths[m];
}

static void setup(void)
{
	const char *dir = getenv("WC_TEST_DISK_DIR");

	ct_make_file(origin_path, sizeof(origin_path), "origin", ORIGIN_BYTES);
	wc_test_path(paths[PMEM], sizeof(paths[PMEM]), "cache.pmem");
	snprintf(paths[BLOCK], sizeof(paths[BLOCK]), "%s/wcapi-%d-cache.img",
	         dir && *dir ? dir : "/var/tmp", (int)getpid());
	unlink(paths[PMEM]);
	unlink(paths[BLOCK]);
}

static void teardown(void)
{
	unlink(paths[PMEM]);
	unlink(paths[BLOCK]);
	unlink(origin_path);
}

/* A config for medium m with `extra` options on top; cache_size makes the
 * file when it is missing. */
static void config(struct wc_config *cfg, enum medium m, const char *extra)
{
	char opts[256];

	wc_config_init(cfg);
	snprintf(opts, sizeof(opts), "medium=%s,cache_size=%u%s%s", m == PMEM ? "pmem" : "block",
	         m == PMEM ? PMEM_BYTES : BLOCK_BYTES, extra ? "," : "", extra ? extra : "");
	ck_assert_msg(wc_config_parse(cfg, opts) == 0, "%s: %s", opts, wc_errmsg());
}

static wc_cache *create(enum medium m, const char *extra)
{
	struct wc_config cfg;
	wc_cache *c = NULL;

	config(&cfg, m, extra);
	ck_assert_msg(wc_create(&c, cache_of(m), origin_path, &cfg) == 0, "%s: %s", cache_of(m),
	              wc_errmsg());
	return c;
}

/* ------------------------------------------------------------- version */

START_TEST(test_version)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", WCACHE_VERSION_MAJOR, WCACHE_VERSION_MINOR,
	         WCACHE_VERSION_PATCH);
	ck_assert_ptr_nonnull(wc_version());
	ck_assert_str_eq(wc_version(), want);
	ck_assert_str_eq(wc_version(), WCACHE_VERSION_STRING);
	/* The same static string every time. */
	ck_assert_ptr_eq(wc_version(), wc_version());
}
END_TEST

/* ------------------------------------------------------ wc_config_parse */

START_TEST(test_parse_all_or_nothing)
{
	static const char *const bad[] = {
		/* a bad key after good ones, the late fields among them */
		"low_watermark=10,writeback_jobs=99,medium=block,force=1,origin_rebind=1,"
		"writeback_window_max_kib=4,bogus=1",
		/* a bad value after good ones */
		"block_size=8192,cleaner,nofua,max_age_ms=5,cleaner=maybe",
		/* each value good, the whole inconsistent */
		"high_watermark=20,low_watermark=30,force",
		"block_size=8192,block_size=1000",
	};
	struct wc_config cfg, before;

	wc_config_init(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, "high_watermark=70,cache_size=1M"), 0);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(&before, &cfg, sizeof(cfg));
		ct_assert_err(wc_config_parse(&cfg, bad[i]), -EINVAL);
		ck_assert_msg(memcmp(&before, &cfg, sizeof(cfg)) == 0,
		              "a failed wc_config_parse(\"%s\") changed the config", bad[i]);
	}
	/* ... and a good one applies all of it, force included. */
	ck_assert_int_eq(wc_config_parse(&cfg, "low_watermark=10,force=1,medium=block"), 0);
	ck_assert_uint_eq(cfg.low_watermark, 10);
	ck_assert_uint_eq(cfg.high_watermark, 70);
	ck_assert_uint_eq(cfg.force, 1);
	ck_assert_uint_eq(cfg.medium, WC_MEDIUM_BLOCK);
	ck_assert_int_eq(wc_config_parse(&cfg, "force=0"), 0);
	ck_assert_uint_eq(cfg.force, 0);
	ct_assert_err(wc_config_parse(&cfg, "force=perhaps"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "force"));
}
END_TEST

/* ---------------------------------------------------------- block size */

/* wc_config_init's block size is 4096 at create and the cache's at open. */
static void block_size_default(enum medium m)
{
	static const uint32_t sizes[] = { 8192, 512 };
	struct wc_config cfg;
	wc_cache *c;

	for (unsigned i = 0; i < 2; i++) {
		char opt[32];

		if (m == BLOCK && sizes[i] < 4096)
			continue; /* below the disk file's O_DIRECT alignment */
		unlink(cache_of(m));
		snprintf(opt, sizeof(opt), "block_size=%u", sizes[i]);
		c = create(m, opt);
		ck_assert_uint_eq(wc_block_size(c), sizes[i]);
		ck_assert_int_eq(wc_close(c), 0);
		wc_config_init(&cfg);
		ck_assert_msg(wc_open(&c, cache_of(m), origin_path, &cfg) == 0,
		              "open with wc_config_init's config: %s", wc_errmsg());
		ck_assert_uint_eq(wc_block_size(c), sizes[i]);
		ck_assert_int_eq(wc_close(c), 0);
		/* A block size asked for is still checked. */
		ck_assert_int_eq(wc_config_parse(&cfg, "block_size=4096"), 0);
		ct_assert_err(wc_open(&c, cache_of(m), origin_path, &cfg), -EINVAL);
		ck_assert_ptr_nonnull(strstr(wc_errmsg(), "block size 4096 requested"));
	}
	/* At create, the default is 4096. */
	unlink(cache_of(m));
	config(&cfg, m, NULL);
	ck_assert_uint_eq(cfg.block_size, 0);
	ck_assert_int_eq(wc_create(&c, cache_of(m), origin_path, &cfg), 0);
	ck_assert_uint_eq(wc_block_size(c), 4096);
	ck_assert_int_eq(wc_close(c), 0);
}

START_TEST(test_block_size_default_pmem)
{
	block_size_default(PMEM);
}
END_TEST

START_TEST(test_block_size_default_block)
{
	block_size_default(BLOCK);
}
END_TEST

static Suite *api_suite(void)
{
	Suite *s = suite_create("api");
	TCase *t = tcase_create("version");

	tcase_add_test(t, test_version);
	suite_add_tcase(s, t);

	t = tcase_create("config");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_parse_all_or_nothing);
	tcase_add_test(t, test_block_size_default_pmem);
	tcase_add_test(t, test_block_size_default_block);
	suite_add_tcase(s, t);

	return s;
}

int main(void)
{
	return wc_test_main(api_suite());
}
