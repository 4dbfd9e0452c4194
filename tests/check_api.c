/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_api.c -- what an embedder relies on from wcache.h and libwcache(3),
 * through the shared library and the public header alone, on both media:
 * the run-time version, a config that a failed parse leaves as it was,
 * wc_config_init's block size at create and at open, what wc_create
 * formats (and, without force, what it refuses), the errno of a cache file
 * too small or cut short, and buffers at any address.
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
	int fd;

	ct_make_file(origin_path, sizeof(origin_path), "origin", ORIGIN_BYTES);
	wc_test_path(paths[PMEM], sizeof(paths[PMEM]), "cache.pmem");
	snprintf(paths[BLOCK], sizeof(paths[BLOCK]), "%s/wcapi-%d-cache.img",
	         dir && *dir ? dir : "/var/tmp", (int)getpid());
	unlink(paths[PMEM]);
	unlink(paths[BLOCK]);
	/* The origin holds known blocks, so a miss shows what it read. */
	fd = open(origin_path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	for (uint64_t b = 0; b < ORIGIN_BYTES / BS; b++) {
		char blk[BS];

		ct_fill_block(blk, BS, b, 0);
		ck_assert_int_eq(pwrite(fd, blk, BS, (off_t)(b * BS)), BS);
	}
	close(fd);
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

/* `len` bytes of `byte` at `off` in `path` (made first, zeroed, when it is
 * missing: `size` bytes, allocated when `alloc`). */
static void put_bytes_in(const char *path, uint64_t size, bool alloc, uint64_t off, int byte,
                         size_t len)
{
	char buf[64];
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	struct stat st;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	if ((uint64_t)st.st_size < size)
		ck_assert_int_eq(alloc ? posix_fallocate(fd, 0, (off_t)size) : ftruncate(fd, (off_t)size),
		                 0);
	ck_assert_uint_le(len, sizeof(buf));
	memset(buf, byte, len);
	ck_assert_int_eq(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void put_bytes(const char *path, uint64_t size, uint64_t off, int byte, size_t len)
{
	put_bytes_in(path, size, false, off, byte, len);
}

static int byte_at(const char *path, uint64_t off)
{
	unsigned char b = 0;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
	close(fd);
	return b;
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

/* ------------------------------------------------- what wc_create formats */

static void create_refuses(enum medium m, const char *extra, const char *says)
{
	struct wc_config cfg;
	wc_cache *c = NULL;

	config(&cfg, m, extra);
	ct_assert_err(wc_create(&c, cache_of(m), origin_path, &cfg), -EEXIST);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(wc_errmsg(), cache_of(m)) && strstr(wc_errmsg(), says),
	              "the message does not name the path and say \"%s\": %s", says, wc_errmsg());
}

static void create_ok(enum medium m, const char *extra)
{
	wc_cache *c = create(m, extra);

	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_msg(wc_open(&c, cache_of(m), origin_path, NULL) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_close(c), 0);
}

static void refuses_data(enum medium m)
{
	uint64_t size = m == PMEM ? PMEM_BYTES : BLOCK_BYTES;
	char where[64];

	/* A new file and a file of zeros are formatted. */
	create_ok(m, NULL);
	unlink(cache_of(m));
	put_bytes(cache_of(m), size, 0, 0, 1);
	create_ok(m, NULL);
	/* A valid cache is refused, force or not. */
	create_refuses(m, NULL, "already holds a valid cache");
	create_refuses(m, "force=1", "already holds a valid cache");
	/* Data that is not a cache: at the start (a file system's label), or
	 * further in the first MiB (btrfs keeps its superblock at 64 KiB); and
	 * in a file allocated with fallocate, written but not yet flushed: on
	 * disk its extent is still unwritten, but the data is in the page
	 * cache (zeros written over such an extent once destroyed it). */
	for (unsigned i = 0; i < 3; i++) {
		uint64_t off = i ? 70000 : 1024;

		unlink(cache_of(m));
		put_bytes_in(cache_of(m), size, i == 2, off, 0xa5, 8);
		snprintf(where, sizeof(where), "byte %llu is 0xa5", (unsigned long long)off);
		create_refuses(m, NULL, where);
		ck_assert_ptr_nonnull(strstr(wc_errmsg(), "force=1"));
		/* ... untouched, */
		ck_assert_int_eq(byte_at(cache_of(m), off), 0xa5);
		/* ... and formatted when forced. */
		create_ok(m, "force=1");
	}
	/* A cache that does not open (its superblock damaged) is data too. */
	put_bytes(cache_of(m), size, 40, 0x5a, 8);
	create_refuses(m, NULL, "does not open");
	create_ok(m, "force");
	/* A create that a crash cut short left its own mark: formatted. */
	unlink(cache_of(m));
	put_bytes(cache_of(m), size, 100, 0x77, 8);
	{
		int fd = open(cache_of(m), O_WRONLY);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, m == PMEM ? "WCFORMAT" : "WCBFORMT", 8, 0), 8);
		close(fd);
	}
	{
		wc_cache *c = NULL;

		ct_assert_err(wc_open(&c, cache_of(m), origin_path, NULL), -ENODATA);
		ck_assert_ptr_nonnull(strstr(wc_errmsg(), "did not complete"));
	}
	create_ok(m, NULL);
}

START_TEST(test_create_refuses_data_pmem)
{
	refuses_data(PMEM);
}
END_TEST

START_TEST(test_create_refuses_data_block)
{
	refuses_data(BLOCK);
}
END_TEST

/* A cache on one medium is not formatted over by a create on the other. */
START_TEST(test_create_refuses_other_medium)
{
	struct wc_config cfg;
	wc_cache *c = NULL;

	create_ok(BLOCK, NULL);
	config(&cfg, PMEM, "force=1");
	ct_assert_err(wc_create(&c, cache_of(BLOCK), origin_path, &cfg), -EEXIST);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "valid cache on a block medium"));
	/* and the other way round (a pmem cache on a disk file is unusual,
	 * but it is a cache) */
	unlink(cache_of(BLOCK));
	config(&cfg, PMEM, NULL);
	ck_assert_int_eq(wc_create(&c, cache_of(BLOCK), origin_path, &cfg), 0);
	ck_assert_int_eq(wc_close(c), 0);
	config(&cfg, BLOCK, "force=1");
	ct_assert_err(wc_create(&c, cache_of(BLOCK), origin_path, &cfg), -EEXIST);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "already holds a valid cache ("));
}
END_TEST

/* ------------------------------------------------------ too small, cut short */

static void too_small(enum medium m)
{
	static const uint64_t sizes[] = { 100, 6000, 200 * 1024 };
	struct wc_config cfg;
	wc_cache *c = NULL;

	for (unsigned i = 0; i < 3; i++) {
		if (m == PMEM && sizes[i] > 8192 + BS)
			continue; /* holds a pmem cache */
		unlink(cache_of(m));
		put_bytes(cache_of(m), sizes[i], 0, 0, 1);
		wc_config_init(&cfg);
		ck_assert_int_eq(wc_config_parse(&cfg, m == PMEM ? "medium=pmem" : "medium=block"), 0);
		ct_assert_err(wc_create(&c, cache_of(m), origin_path, &cfg), -EINVAL);
		ck_assert_msg(strstr(wc_errmsg(), "too small") && strstr(wc_errmsg(), "at least"),
		              "%llu bytes: %s", (unsigned long long)sizes[i], wc_errmsg());
	}
	/* A cache cut short is damage. */
	unlink(cache_of(m));
	create_ok(m, NULL);
	ck_assert_int_eq(truncate(cache_of(m), 1 * MiB), 0);
	ct_assert_err(wc_open(&c, cache_of(m), origin_path, NULL), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "truncated"));
	if (m == PMEM) {
		ck_assert_int_eq(truncate(cache_of(m), 1000), 0);
		ct_assert_err(wc_open(&c, cache_of(m), origin_path, NULL), -EUCLEAN);
		ck_assert_int_eq(truncate(cache_of(m), 0), 0);
		ct_assert_err(wc_open(&c, cache_of(m), origin_path, NULL), -ENODATA);
	}
}

START_TEST(test_too_small_pmem)
{
	too_small(PMEM);
}
END_TEST

START_TEST(test_too_small_block)
{
	too_small(BLOCK);
}
END_TEST

/* ------------------------------------------------ buffers at any address */

static void unaligned(enum medium m)
{
	enum { N = 4 };
	char *mem = aligned_alloc(4096, (N + 1) * BS);
	char *buf = mem + 1; /* aligned to nothing */
	wc_cache *c;

	ck_assert_ptr_nonnull(mem);
	c = create(m, NULL);
	/* writes, plain and FUA */
	for (unsigned i = 0; i < N; i++)
		ct_fill_block(buf + i * BS, BS, 10 + i, 1);
	ck_assert_int_eq(wc_write(c, buf, 2 * BS, 10 * BS, 0), 2 * BS);
	ck_assert_int_eq(wc_write(c, buf + 2 * BS, 2 * BS, 12 * BS, WC_FUA), 2 * BS);
	ck_assert_int_eq(wc_flush(c), 0);
	/* read hits, after a reopen too (the block medium reads its device) */
	for (unsigned pass = 0; pass < 2; pass++) {
		memset(mem, 0, (N + 1) * BS);
		ck_assert_int_eq(wc_read(c, buf, N * BS, 10 * BS), N * BS);
		for (unsigned i = 0; i < N; i++)
			ck_assert_msg(ct_block_is(buf + i * BS, BS, 10 + i, 1) == 0,
			              "pass %u: block %u read into an unaligned buffer is wrong", pass, 10 + i);
		ck_assert_int_eq(wc_close(c), 0);
		ck_assert_int_eq(wc_open(&c, cache_of(m), origin_path, NULL), 0);
	}
	/* read misses: from the origin, through O_DIRECT */
	memset(mem, 0, (N + 1) * BS);
	ck_assert_int_eq(wc_read(c, buf, N * BS, 100 * BS), N * BS);
	for (unsigned i = 0; i < N; i++)
		ck_assert_msg(ct_block_is(buf + i * BS, BS, 100 + i, 0) == 0,
		              "block %u missed into an unaligned buffer is wrong", 100 + i);
	/* a read across hits and misses */
	memset(mem, 0, (N + 1) * BS);
	ck_assert_int_eq(wc_read(c, buf, N * BS, 8 * BS), N * BS);
	for (unsigned i = 0; i < N; i++)
		ck_assert_int_eq(ct_block_is(buf + i * BS, BS, 8 + i, 8 + i < 10 ? 0 : 1), 0);
	/* writes around the cache (cleaner mode): to the origin, O_DIRECT */
	ck_assert_int_eq(wc_set_cleaner(c, true), 0);
	for (unsigned i = 0; i < N; i++)
		ct_fill_block(buf + i * BS, BS, 200 + i, 2);
	ck_assert_int_eq(wc_write(c, buf, N * BS, 200 * BS, 0), N * BS);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	{
		int fd = open(origin_path, O_RDONLY);
		char *blk = malloc(BS);

		ck_assert_int_ge(fd, 0);
		for (unsigned i = 0; i < N; i++) {
			ck_assert_int_eq(pread(fd, blk, BS, (off_t)(200 + i) * BS), BS);
			ck_assert_msg(ct_block_is(blk, BS, 200 + i, 2) == 0,
			              "block %u written around from an unaligned buffer is wrong", 200 + i);
			ck_assert_int_eq(pread(fd, blk, BS, (off_t)(10 + i) * BS), BS);
			ck_assert_int_eq(ct_block_is(blk, BS, 10 + i, 1), 0);
		}
		free(blk);
		close(fd);
	}
	free(mem);
}

START_TEST(test_unaligned_buffers_pmem)
{
	unaligned(PMEM);
}
END_TEST

START_TEST(test_unaligned_buffers_block)
{
	unaligned(BLOCK);
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

	t = tcase_create("create");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_create_refuses_data_pmem);
	tcase_add_test(t, test_create_refuses_data_block);
	tcase_add_test(t, test_create_refuses_other_medium);
	tcase_add_test(t, test_too_small_pmem);
	tcase_add_test(t, test_too_small_block);
	suite_add_tcase(s, t);

	t = tcase_create("buffers");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_unaligned_buffers_pmem);
	tcase_add_test(t, test_unaligned_buffers_block);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return wc_test_main(api_suite());
}
