/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_origin_identity.c -- a cache knows its origin (lib/bind.c).
 *
 * A cache made for origin X, holding dirty blocks, opened with another
 * origin Y of the same size or larger: refused with -EXDEV, the message
 * naming both, and neither Y nor the cache file changed by a byte; opened
 * with X again, every block is there.  X renamed is still X; X grown is
 * served at its new size (recorded); X shrunk is refused.  A file that
 * replaces X under X's name is another origin.  origin_rebind binds a clean
 * cache to another origin, refuses a dirty one unless forced, and a forced
 * one writes its dirty blocks back into the new origin.  A version-2 cache
 * records the identity of its first origin; a version-3 cache whose
 * identity slots are both damaged is refused.  The same for a block device
 * (loop devices: the backing file is the identity) and an embedder's origin
 * (its describe() string).
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cachetest.h"
#include "core/format.h"
#include "origin_testutil.h"

#define BS 4096u
#define ORIGIN (8u * MiB)
#define CACHE (4u * MiB)
#define DIRTY 64u /* blocks written before the wrong origin is tried */

struct files {
	char cache[TEST_PATH_LEN], x[TEST_PATH_LEN], y[TEST_PATH_LEN];
};

static void names(struct files *f, const char *tag)
{
	char n[64];

	snprintf(n, sizeof(n), "%s.cache", tag);
	wc_test_path(f->cache, sizeof(f->cache), n);
	snprintf(n, sizeof(n), "%s.x", tag);
	wc_test_path(f->x, sizeof(f->x), n);
	snprintf(n, sizeof(n), "%s.y", tag);
	wc_test_path(f->y, sizeof(f->y), n);
	unlink(f->cache);
}

static struct wc_config config(unsigned rebind)
{
	struct wc_config cfg;

	wc_config_init(&cfg);
	cfg.cache_size = CACHE;
	cfg.no_threads = true;
	cfg.origin_rebind = rebind;
	return cfg;
}

static void write_blocks(wc_cache *c, unsigned n, uint64_t version)
{
	uint8_t *buf = aligned_buf(BS);

	for (unsigned b = 0; b < n; b++) {
		ct_fill_block(buf, BS, b * 3, version);
		ck_assert_int_eq(wc_write(c, buf, BS, (uint64_t)b * 3 * BS, 0), BS);
	}
	ck_assert_int_eq(wc_flush(c), 0);
	free(buf);
}

static void expect_blocks(wc_cache *c, unsigned n, uint64_t version)
{
	uint8_t *buf = aligned_buf(BS);

	for (unsigned b = 0; b < n; b++) {
		ck_assert_int_eq(wc_read(c, buf, BS, (uint64_t)b * 3 * BS), BS);
		ck_assert_msg(ct_block_is(buf, BS, b * 3, version) == 0, "block %u lost", b * 3);
	}
	free(buf);
}

/* Every byte of a file, to compare before and after a refusal. */
struct snapshot {
	uint8_t *bytes;
	size_t len;
};

static struct snapshot snap(const char *path)
{
	struct snapshot s;
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	s.len = (size_t)st.st_size;
	s.bytes = malloc(s.len ? s.len : 1);
	ck_assert(s.bytes);
	read_file(path, s.bytes, s.len, 0);
	return s;
}

static void same_as(struct snapshot *s, const char *path)
{
	struct snapshot now = snap(path);

	ck_assert_msg(now.len == s->len && memcmp(now.bytes, s->bytes, s->len) == 0,
	              "%s changed", path);
	free(now.bytes);
	free(s->bytes);
}

/* A cache made for f->x holding DIRTY committed blocks, closed. */
static void dirty_cache_for_x(struct files *f)
{
	struct wc_config cfg = config(0);
	wc_cache *c;

	make_file(f->x, ORIGIN);
	ck_assert_msg(wc_create(&c, f->cache, f->x, &cfg) == 0, "%s", wc_errmsg());
	write_blocks(c, DIRTY, 1);
	ck_assert_int_eq(wc_close(c), 0);
}

/* Open with `origin`: refused with `code`, the cache and the origin unchanged. */
static void refused(const struct files *f, const char *origin, unsigned rebind, int code,
                    const char *expect_in_msg)
{
	struct snapshot cache = snap(f->cache), other = snap(origin);
	struct wc_config cfg = config(rebind);
	wc_cache *c = (wc_cache *)1;

	ct_assert_err(wc_open(&c, f->cache, origin, &cfg), code);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(wc_errmsg(), expect_in_msg), "message \"%s\" lacks \"%s\"",
	              wc_errmsg(), expect_in_msg);
	same_as(&cache, f->cache);
	same_as(&other, origin);
}

static void reopen_with_x(const struct files *f, uint64_t size)
{
	struct wc_config cfg = config(0);
	wc_cache *c;

	ck_assert_msg(wc_open(&c, f->cache, f->x, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_uint_eq(wc_size(c), size);
	expect_blocks(c, DIRTY, 1);
	ck_assert_int_eq(wc_close(c), 0);
}

START_TEST(test_other_file_refused)
{
	struct files f;

	names(&f, "other");
	dirty_cache_for_x(&f);
	make_file(f.y, ORIGIN);
	refused(&f, f.y, 0, -EXDEV, "holds 64 dirty blocks of origin file");
	ck_assert_msg(strstr(wc_errmsg(), f.x) && strstr(wc_errmsg(), f.y), "%s", wc_errmsg());
	make_file(f.y, 2 * ORIGIN);
	refused(&f, f.y, 0, -EXDEV, "another origin");
	/* Clean re-binding is not enough for a dirty cache. */
	refused(&f, f.y, WC_ORIGIN_REBIND_CLEAN, -EXDEV, "--force");
	reopen_with_x(&f, ORIGIN);
}
END_TEST

START_TEST(test_renamed_and_grown)
{
	struct files f;
	char moved[TEST_PATH_LEN];
	struct wc_config cfg = config(0);
	struct wc_stats st;
	wc_cache *c;

	names(&f, "grow");
	dirty_cache_for_x(&f);
	wc_test_path(moved, sizeof(moved), "grow.x-renamed");
	ck_assert_int_eq(rename(f.x, moved), 0);
	ck_assert_msg(wc_open(&c, f.cache, moved, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(strstr(st.origin_identity, moved), "%s", st.origin_identity);
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_int_eq(rename(moved, f.x), 0);

	/* Grown: served at the new size, and the size is recorded. */
	ck_assert_int_eq(truncate(f.x, 2 * ORIGIN), 0);
	ck_assert_msg(wc_open(&c, f.cache, f.x, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_uint_eq(wc_size(c), 2 * ORIGIN);
	{
		uint8_t *buf = aligned_buf(BS);

		ct_fill_block(buf, BS, ORIGIN / BS + 5, 7);
		ck_assert_int_eq(wc_write(c, buf, BS, ORIGIN + 5 * BS, WC_FUA), BS);
		free(buf);
	}
	ck_assert_int_eq(wc_close(c), 0);
	reopen_with_x(&f, 2 * ORIGIN);

	/* Shrunk back: the block written past the old end has nowhere to go. */
	ck_assert_int_eq(truncate(f.x, ORIGIN), 0);
	refused(&f, f.x, 0, -EINVAL, "shrank");
}
END_TEST

/* A new file under the old name (the old one deleted): another origin. */
START_TEST(test_replaced_file_refused)
{
	struct files f;

	struct wc_config cfg = config(0);
	struct wc_stats st;
	char identity[512];
	wc_cache *c;

	names(&f, "replaced");
	dirty_cache_for_x(&f);
	ck_assert_msg(wc_open(&c, f.cache, f.x, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	snprintf(identity, sizeof(identity), "%s", st.origin_identity);
	ck_assert_int_eq(wc_close(c), 0);
	/* Without the tag, a new file that reuses the inode number on the same
	 * device cannot be told from the old one. */
	if (!strstr(identity, " tag "))
		WC_TEST_SKIP("%s keeps no user extended attributes: %s", wc_test_dir(), identity);
	ck_assert_int_eq(unlink(f.x), 0);
	make_file(f.x, ORIGIN);
	refused(&f, f.x, 0, -EXDEV, "another origin");
}
END_TEST

START_TEST(test_rebind)
{
	struct files f;
	struct wc_config cfg = config(WC_ORIGIN_REBIND_FORCE);
	struct snapshot y0;
	uint8_t *buf = aligned_buf(BS);
	wc_cache *c;

	names(&f, "rebind");
	dirty_cache_for_x(&f);
	make_file(f.y, ORIGIN);
	y0 = snap(f.y);
	/* Forced: Y receives X's dirty blocks at write-back. */
	ck_assert_msg(wc_open(&c, f.cache, f.y, &cfg) == 0, "%s", wc_errmsg());
	expect_blocks(c, DIRTY, 1);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	read_file(f.y, buf, BS, 3 * BS);
	ck_assert_int_eq(ct_block_is(buf, BS, 3, 1), 0);
	free(y0.bytes);
	/* Now it is Y's cache: X is refused (clean: name the way to re-bind). */
	refused(&f, f.x, 0, -EXDEV, "no dirty blocks");
	/* A clean cache re-binds without force, and X is its origin again. */
	cfg = config(WC_ORIGIN_REBIND_CLEAN);
	ck_assert_msg(wc_open(&c, f.cache, f.x, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_close(c), 0);
	refused(&f, f.y, 0, -EXDEV, "another origin");
	/* Clean, it may be bound to a smaller origin too, and serves its size. */
	make_file(f.y, ORIGIN / 2);
	ck_assert_msg(wc_open(&c, f.cache, f.y, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_uint_eq(wc_size(c), ORIGIN / 2);
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
}
END_TEST

/* Edit the superblock region of a closed cache file in place (the image is
 * crafted, not written through the cache: plain file I/O). */
static void edit_superblock(const char *cache, void (*edit)(void *base))
{
	uint8_t region[WC_SB_REGION];
	int fd = open(cache, O_RDWR);

	ck_assert(fd >= 0);
	ck_assert_int_eq(pread(fd, region, sizeof(region), 0), sizeof(region));
	edit(region);
	ck_assert_int_eq(pwrite(fd, region, sizeof(region), 0), sizeof(region));
	close(fd);
}

/* Version 2 (no identity) with a valid CRC, the identity slots zero. */
static void make_version_2(void *base)
{
	wc_sb(base)->version = WC_FORMAT_VERSION_NO_IDENTITY;
	wc_sb(base)->crc = wc_sb_crc(wc_sb(base));
	memset(wc_origin_id_slot(base, 0), 0, WC_ORIGIN_ID_SLOTS * sizeof(struct wc_pmem_origin_id));
}

static void damage_slots(void *base)
{
	for (unsigned i = 0; i < WC_ORIGIN_ID_SLOTS; i++)
		wc_origin_id_slot(base, i)->name[0] ^= 1; /* the CRC no longer holds */
}

START_TEST(test_version_2_adopted)
{
	struct files f;
	struct wc_config cfg = config(0);
	struct wc_stats st;
	wc_cache *c;

	names(&f, "v2");
	dirty_cache_for_x(&f);
	edit_superblock(f.cache, make_version_2);
	ck_assert_msg(wc_open(&c, f.cache, f.x, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(strstr(st.origin_identity, "earlier libwcache"), "%s", st.origin_identity);
	expect_blocks(c, DIRTY, 1);
	ck_assert_int_eq(wc_close(c), 0);
	/* Recorded once: from now on another origin is refused. */
	make_file(f.y, ORIGIN);
	refused(&f, f.y, 0, -EXDEV, "another origin");
	reopen_with_x(&f, ORIGIN);
}
END_TEST

START_TEST(test_damaged_identity_refused)
{
	struct files f;
	struct wc_config cfg = config(WC_ORIGIN_REBIND_FORCE);
	wc_cache *c;

	names(&f, "damaged");
	dirty_cache_for_x(&f);
	edit_superblock(f.cache, damage_slots);
	refused(&f, f.x, 0, -EBADMSG, "set-origin --force");
	ck_assert_msg(wc_open(&c, f.cache, f.x, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_close(c), 0);
	reopen_with_x(&f, ORIGIN);
}
END_TEST

START_TEST(test_block_device)
{
	struct files f;
	char xdev[64], ydev[64], x2dev[64];
	struct wc_config cfg = config(0);
	struct wc_stats st;
	struct snapshot cache, ybytes;
	int xfd, yfd, x2fd;
	wc_cache *c;

	names(&f, "bdev");
	make_file(f.x, ORIGIN);
	make_file(f.y, ORIGIN);
	xfd = loop_attach(f.x, 512, xdev, sizeof(xdev));
	if (xfd < 0)
		WC_TEST_SKIP("no loop device to test a block-device origin on (%s)", strerror(-xfd));
	yfd = loop_attach(f.y, 512, ydev, sizeof(ydev));
	ck_assert_int_ge(yfd, 0);
	ck_assert_msg(wc_create(&c, f.cache, xdev, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(strstr(st.origin_identity, "block device") &&
	              strstr(st.origin_identity, "loop over device"), "%s", st.origin_identity);
	write_blocks(c, DIRTY, 1);
	ck_assert_int_eq(wc_close(c), 0);

	/* Y's loop device: refused, neither the cache nor Y's bytes touched. */
	cache = snap(f.cache);
	ybytes = snap(f.y);
	ct_assert_err(wc_open(&c, f.cache, ydev, &cfg), -EXDEV);
	ck_assert_msg(strstr(wc_errmsg(), xdev) && strstr(wc_errmsg(), ydev), "%s", wc_errmsg());
	same_as(&cache, f.cache);
	same_as(&ybytes, f.y);

	/* X behind another loop device (a renamed device): the same origin. */
	close(xfd);
	x2fd = loop_attach(f.x, 512, x2dev, sizeof(x2dev));
	ck_assert_int_ge(x2fd, 0);
	ck_assert_msg(wc_open(&c, f.cache, x2dev, &cfg) == 0, "%s", wc_errmsg());
	expect_blocks(c, DIRTY, 1);
	ck_assert_int_eq(wc_close(c), 0);
	close(x2fd);
	close(yfd);
}
END_TEST

/* An embedder's origin without identify() is known by its describe()
 * string and size. */
static const char *custom_name;

static const char *custom_describe(void *ctx)
{
	(void)ctx;
	return custom_name;
}

static struct wc_origin custom_origin(const char *path, struct wc_origin_ops *ops)
{
	struct wc_origin o;

	ck_assert_int_eq(wc_origin_open_aio(&o, path, 0), 0);
	*ops = *o.ops; /* another table: libaio's ops, not its identify() */
	ops->identify = NULL;
	ops->caps &= ~WC_ORIGIN_CAP_IDENTIFY;
	ops->describe = custom_describe;
	o.ops = ops;
	return o;
}

START_TEST(test_embedder_origin)
{
	static struct wc_origin_ops ops;
	struct files f;
	struct wc_config cfg = config(0);
	struct wc_origin o;
	struct wc_stats st;
	wc_cache *c;

	names(&f, "custom");
	make_file(f.x, ORIGIN);
	custom_name = "volume-a";
	o = custom_origin(f.x, &ops);
	ck_assert_msg(wc_create_origin(&c, f.cache, o, &cfg) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(strstr(st.origin_identity, "volume-a (name only"), "%s", st.origin_identity);
	write_blocks(c, DIRTY, 1);
	ck_assert_int_eq(wc_close(c), 0);

	custom_name = "volume-b";
	o = custom_origin(f.x, &ops);
	ct_assert_err(wc_open_origin(&c, f.cache, o, &cfg), -EXDEV);
	ck_assert_msg(strstr(wc_errmsg(), "volume-a") && strstr(wc_errmsg(), "volume-b"), "%s",
	              wc_errmsg());
	wc_origin_close(&o);

	custom_name = "volume-a";
	o = custom_origin(f.x, &ops);
	ck_assert_msg(wc_open_origin(&c, f.cache, o, &cfg) == 0, "%s", wc_errmsg());
	expect_blocks(c, DIRTY, 1);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

START_TEST(test_rebind_option)
{
	struct wc_config cfg;

	wc_config_init(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, "origin_rebind=force"), 0);
	ck_assert_uint_eq(cfg.origin_rebind, WC_ORIGIN_REBIND_FORCE);
	ck_assert_int_eq(wc_config_parse(&cfg, "origin_rebind=1"), 0);
	ck_assert_uint_eq(cfg.origin_rebind, WC_ORIGIN_REBIND_CLEAN);
	ck_assert_int_eq(wc_config_parse(&cfg, "origin_rebind=0"), 0);
	ck_assert_uint_eq(cfg.origin_rebind, WC_ORIGIN_REBIND_NEVER);
	ct_assert_err(wc_config_parse(&cfg, "origin_rebind=maybe"), -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), "origin_rebind"), "%s", wc_errmsg());
}
END_TEST

static Suite *identity_suite(void)
{
	Suite *s = suite_create("origin identity");
	TCase *tc = tcase_create("files");

	/* Each test makes and compares a few 8 MiB files: well under a second
	 * here, several under ASan on a loaded machine. */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_other_file_refused);
	tcase_add_test(tc, test_renamed_and_grown);
	tcase_add_test(tc, test_replaced_file_refused);
	tcase_add_test(tc, test_rebind);
	tcase_add_test(tc, test_version_2_adopted);
	tcase_add_test(tc, test_damaged_identity_refused);
	tcase_add_test(tc, test_embedder_origin);
	tcase_add_test(tc, test_rebind_option);
	suite_add_tcase(s, tc);
	tc = tcase_create("block devices");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_block_device);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(identity_suite());
}
