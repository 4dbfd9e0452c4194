/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_tools.c -- the pieces every tool relies on for what users type and
 * read: the size grammar (lib/util/size.c, also wc_config_parse's), the
 * option table (tools/common) and the JSON writer; and the admin interface
 * the tools reach the library through (lib/admin/wcadmin.h); and which
 * medium wcbench's caches get (tools/wcbench/medium.c: pmem emulation only
 * in memory) and the raw file its block-medium floors run on.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/wcadmin.h"
#include "cachetest.h"
#include "util/size.h"
#include "testmain.h"
#include "wcache.h"
#include "wcbench.h"
#include "wctools.h"

START_TEST(size_accepts_the_grammar)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "4096", 4096 }, { "512B", 512 }, { "512b", 512 },
		{ "4K", 4096 }, { "4k", 4096 }, { "4KiB", 4096 }, { "4kib", 4096 }, { "4KB", 4096 },
		{ "64M", 64ull << 20 }, { "64MiB", 64ull << 20 }, { "1G", 1ull << 30 },
		{ "2GB", 2ull << 30 }, { "3T", 3ull << 40 }, { "3TiB", 3ull << 40 },
		{ "18446744073709551615", UINT64_MAX }, { "16777215T", 16777215ull << 40 },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 1;

		ck_assert_msg(wc_size_parse(ok[i].s, &v, NULL) == 0, "%s refused", ok[i].s);
		ck_assert_msg(v == ok[i].v, "%s -> %llu", ok[i].s, (unsigned long long)v);
	}
}
END_TEST

START_TEST(size_rejects_junk_signs_and_overflow)
{
	static const char *const einval[] = {
		"", "K", "-1", "+1", " 1", "1 ", "1.5K", "4KK", "4Ki", "4iB", "4P", "0x10", "4KiBs",
		"4BB",
	};
	static const char *const erange[] = { "18446744073709551616", "16777216T", "99999999999999999999" };
	const char *why;
	uint64_t v = 7;

	for (size_t i = 0; i < sizeof(einval) / sizeof(einval[0]); i++) {
		why = NULL;
		ck_assert_msg(wc_size_parse(einval[i], &v, &why) == -EINVAL, "%s taken", einval[i]);
		ck_assert(why && *why);
	}
	for (size_t i = 0; i < sizeof(erange) / sizeof(erange[0]); i++)
		ck_assert_msg(wc_size_parse(erange[i], &v, &why) == -ERANGE, "%s taken", erange[i]);
	ck_assert_int_eq(wc_size_parse(NULL, &v, NULL), -EINVAL);
	ck_assert(strstr((wc_size_parse("-4K", &v, &why), why), "negative"));
	ck_assert_uint_eq(v, 7); /* never written on error */
}
END_TEST

START_TEST(size_format)
{
	char b[32];

	ck_assert_str_eq(wc_size_format(b, sizeof(b), 0), "0 B");
	ck_assert_str_eq(wc_size_format(b, sizeof(b), 1023), "1023 B");
	ck_assert_str_eq(wc_size_format(b, sizeof(b), 4096), "4 KiB");
	ck_assert_str_eq(wc_size_format(b, sizeof(b), 1536), "1.5 KiB");
	ck_assert_str_eq(wc_size_format(b, sizeof(b), 64ull << 20), "64 MiB");
	ck_assert_str_eq(wc_size_format(b, sizeof(b), 3ull << 40), "3 TiB");
	ck_assert_str_eq(wc_size_format(b, sizeof(b), 5ull << 50), "5 PiB");
	ck_assert_str_eq(wct_size_str(b, sizeof(b), 1ull << 30), "1 GiB");
}
END_TEST

/* wc_config_parse speaks the same grammar, within each option's range. */
START_TEST(config_uses_the_grammar)
{
	struct wc_config cfg;

	wc_config_init(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, "cache_size=64MiB,block_size=4KB"), 0);
	ck_assert_uint_eq(cfg.cache_size, 64ull << 20);
	ck_assert_uint_eq(cfg.block_size, 4096);
	ck_assert_int_eq(wc_config_parse(&cfg, "cache_size=1G"), 0);
	ck_assert_uint_eq(cfg.cache_size, 1ull << 30);
	ck_assert_int_ne(wc_config_parse(&cfg, "cache_size=-1"), 0);
	ck_assert_int_ne(wc_config_parse(&cfg, "cache_size=1.5G"), 0);
	ck_assert_int_ne(wc_config_parse(&cfg, "cache_size=99999999999999999999"), 0);
	ck_assert_int_ne(wc_config_parse(&cfg, "high_watermark=101"), 0);
}
END_TEST

static void no_usage(FILE *f)
{
	(void)f;
}

START_TEST(options_from_a_table)
{
	static const char *const kinds[] = { "seq", "rand", "both", NULL };
	char a0[] = "x", a1[] = "--size", a2[] = "4KiB", a3[] = "--runs=3", a4[] = "--json",
	     a5[] = "--kind", a6[] = "rand", a7[] = "--ratio", a8[] = "2.5";
	char *argv[] = { a0, a1, a2, a3, a4, a5, a6, a7, a8, NULL };
	uint64_t size = 0;
	unsigned runs = 0, kind = 0;
	bool json = false, runs_given = false;
	double ratio = 0;
	const struct wct_opt opts[] = {
		WCT_OPT("size", WCT_SIZE, &size, 1, UINT64_MAX),
		{ .name = "runs", .kind = WCT_UINT, .dst = &runs, .min = 1, .max = 9,
		  .given = &runs_given },
		WCT_OPT_FLAG("json", &json),
		WCT_OPT_CHOICE("kind", &kind, kinds),
		WCT_OPT("ratio", WCT_DOUBLE, &ratio, 0, 10),
		WCT_OPT_END,
	};

	ck_assert_int_eq(wct_opts_parse("test", opts, 9, argv, no_usage, false), 0);
	ck_assert_uint_eq(size, 4096);
	ck_assert_uint_eq(runs, 3);
	ck_assert(runs_given && json);
	ck_assert_uint_eq(kind, 1);
	ck_assert(ratio == 2.5);

	char b1[] = "--runs", b2[] = "10";
	char *bad[] = { a0, b1, b2, NULL };

	ck_assert_int_eq(wct_opts_parse("test", opts, 3, bad, no_usage, false), 2);
	char c1[] = "--size", c2[] = "0";
	char *zero[] = { a0, c1, c2, NULL };

	ck_assert_int_eq(wct_opts_parse("test", opts, 3, zero, no_usage, false), 2);
	char d1[] = "extra";
	char *extra[] = { a0, d1, NULL };

	ck_assert_int_eq(wct_opts_parse("test", opts, 2, extra, no_usage, false), 2);
	ck_assert_int_eq(wct_opts_parse("test", opts, 2, extra, no_usage, true), 0);
}
END_TEST

/* Runs `fill` against a writer on a memory stream and compares. */
static void json_is(void (*fill)(struct wct_json *), const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct wct_json j;

	ck_assert_ptr_nonnull(f);
	wct_json_init(&j, f);
	fill(&j);
	fclose(f);
	ck_assert_str_eq(buf, want);
	free(buf);
}

static void fill_nested(struct wct_json *j)
{
	wct_json_object(j, NULL, true);
	wct_json_str(j, "name", "a\"b\\c\n\x01");
	wct_json_str(j, "none", NULL);
	wct_json_u64(j, "big", UINT64_MAX);
	wct_json_int(j, "neg", -3);
	wct_json_num(j, "ratio", "%.3f", 0.5);
	wct_json_num(j, "nan", "%.3f", NAN);
	wct_json_bool(j, "ok", true);
	wct_json_null(j, "nil");
	wct_json_array(j, "inline", false);
	wct_json_u64(j, NULL, 1);
	wct_json_u64(j, NULL, 2);
	wct_json_end(j);
	wct_json_array(j, "rows", true);
	wct_json_object(j, NULL, false);
	wct_json_str(j, "k", "v");
	wct_json_end(j);
	wct_json_object(j, NULL, false);
	wct_json_end(j);
	wct_json_end(j);
	wct_json_array(j, "empty", true);
	wct_json_end(j);
	wct_json_end(j);
}

static void fill_stats(struct wct_json *j)
{
	struct wc_stats st;

	memset(&st, 0, sizeof(st));
	st.blocks = 8;
	st.dram_bytes = 99;
	st.writeback_last_error = -ENOTCONN; /* the one signed field */
	st.origin_identity = "file /o (inode 12 tag 9f, 8 MiB)"; /* the one string */
	wct_json_object(j, NULL, false);
	wct_json_stats(j, &st);
	wct_json_end(j);
}

START_TEST(json_writer)
{
	json_is(fill_nested,
	        "{\n"
	        "  \"name\": \"a\\\"b\\\\c\\u000a\\u0001\",\n"
	        "  \"none\": null,\n"
	        "  \"big\": 18446744073709551615,\n"
	        "  \"neg\": -3,\n"
	        "  \"ratio\": 0.500,\n"
	        "  \"nan\": null,\n"
	        "  \"ok\": true,\n"
	        "  \"nil\": null,\n"
	        "  \"inline\": [1, 2],\n"
	        "  \"rows\": [\n"
	        "    {\"k\": \"v\"},\n"
	        "    {}\n"
	        "  ],\n"
	        "  \"empty\": []\n"
	        "}\n");
	json_is(fill_stats,
	        "{\"blocks\": 8, \"free_blocks\": 0, \"dirty_blocks\": 0, \"writeback_blocks\": 0, "
	        "\"reads\": 0, \"read_hits\": 0, \"writes\": 0, \"write_hits_uncommitted\": 0, "
	        "\"write_hits_committed\": 0, \"writes_around\": 0, \"writes_allocate\": 0, "
	        "\"writes_blocked_on_freelist\": 0, \"flushes\": 0, \"discards\": 0, "
	        "\"commits\": 0, \"writeback_ios\": 0, \"writeback_bytes\": 0, "
	        "\"writeback_errors\": 0, \"dram_bytes\": 99, \"writeback_window\": 0, "
	        "\"writeback_latency_us\": 0, \"readahead_blocks\": 0, "
	        "\"writeback_failing_ms\": 0, \"writer_slots\": 0, \"writeback_last_error\": -107, "
	        "\"origin_identity\": \"file /o (inode 12 tag 9f, 8 MiB)\"}\n");
}
END_TEST

/* ---- the admin interface -------------------------------------------------- */

#define ADM_BS 4096u

/* A cache of `cache_bytes` in front of a 16 MiB origin, with blocks 0..n-1
 * written and committed; open (returned) or closed (NULL). */
static wc_cache *admin_cache(char *cache, char *origin, size_t len, const char *tag,
                             uint64_t cache_bytes, unsigned n, bool keep_open)
{
	char name[64], *buf = aligned_alloc(4096, ADM_BS);
	struct wc_config cfg;
	wc_cache *c;

	ck_assert_ptr_nonnull(buf);
	snprintf(name, sizeof(name), "%s.origin", tag);
	ct_make_file(origin, len, name, 16u << 20);
	snprintf(name, sizeof(name), "%s.cache", tag);
	wc_test_path(cache, len, name);
	unlink(cache);
	wc_config_init(&cfg);
	cfg.cache_size = cache_bytes;
	cfg.block_size = ADM_BS;
	cfg.no_threads = true;
	ck_assert_msg(wc_create(&c, cache, origin, &cfg) == 0, "wc_create: %s", wc_errmsg());
	for (unsigned i = 0; i < n; i++) {
		ct_fill_block(buf, ADM_BS, i, 1);
		ck_assert_int_eq(wc_write(c, buf, ADM_BS, (uint64_t)i * ADM_BS, 0), ADM_BS);
	}
	ck_assert_int_eq(wc_flush(c), 0);
	free(buf);
	if (keep_open)
		return c;
	ck_assert_int_eq(wc_close(c), 0);
	return NULL;
}

/* What wcctl check, dump and status read: the image as recovery sees it. */
START_TEST(admin_image_of_a_cache)
{
	char cache[PATH_MAX], origin[PATH_MAX];
	struct wcadm_image img;
	struct wcadm_policy pl;

	admin_cache(cache, origin, sizeof(cache), "image", 8u << 20, 3, false);
	ck_assert_msg(wcadm_image_open(&img, cache) == 0, "%s", wc_errmsg());
	ck_assert(img.sb_ok && !img.live && img.fd >= 0);
	ck_assert_uint_eq(img.sb.version, WCADM_FORMAT_VERSION);
	ck_assert_uint_eq(img.sb.block_size, ADM_BS);
	ck_assert_uint_eq(img.layout.n_blocks, img.sb.n_blocks);
	ck_assert_uint_le(img.layout.bytes_used, img.file_size);
	ck_assert_int_ge(img.oid_slot, 0);
	ck_assert_str_eq(img.oid.name, origin);
	ck_assert_uint_eq(wcadm_image_origin_size(&img), 16u << 20);
	ck_assert(!wcadm_image_identity_damaged(&img));
	ck_assert_uint_eq(wcadm_entry_offset(&img, 1), img.layout.entries_offset + 16);
	ck_assert_msg(wcadm_image_classify(&img) == 0, "%s", wc_errmsg());
	ck_assert(img.cp_ok && img.cp_seq > 0 && img.cp_seq >= img.cp_floor);
	ck_assert_uint_eq(img.n_committed, 3);
	ck_assert_uint_eq(img.n_free, img.layout.n_blocks - 3);
	ck_assert_uint_eq(img.n_uncommitted + img.n_outside + img.n_duplicate, 0);
	for (uint64_t i = 0; i < img.layout.n_blocks; i++)
		if (img.info[i].state == WCADM_COMMITTED)
			ck_assert_uint_lt(img.entries[i].origin_block, 3);
	/* wc_create measured on the free blocks when the mapping flushes. */
	ck_assert_int_eq(wcadm_image_policy(&img, &pl), 0);
	ck_assert(pl.valid == 0 || pl.valid == -ENODATA);
	if (pl.valid == 0)
		ck_assert(pl.matches && pl.result[0] && pl.cpu[0]);
	wcadm_image_close(&img);
	ck_assert_int_eq(img.fd, -1);
	ck_assert_uint_eq(img.n_committed, 3); /* the values outlive the close */
}
END_TEST

START_TEST(admin_image_refuses_what_is_no_cache)
{
	char path[PATH_MAX];
	struct wcadm_image img;

	ct_make_file(path, sizeof(path), "zeros", 1u << 20);
	ck_assert_int_eq(wcadm_image_open(&img, path), -ENODATA);
	ck_assert(img.fd >= 0 && !img.sb_ok);
	ck_assert_int_eq(wcadm_image_commit(&img), -EINVAL);
	wcadm_image_close(&img);
	wc_test_path(path, sizeof(path), "absent");
	ck_assert_int_eq(wcadm_image_open(&img, path), -ENOENT);
	ck_assert_int_eq(img.fd, -1);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "absent"));
	wcadm_image_close(&img);
}
END_TEST

/* What wcbench run's floor shares with the cache it measures. */
START_TEST(admin_open_cache)
{
	char cache[PATH_MAX], origin[PATH_MAX];
	wc_cache *c = admin_cache(cache, origin, sizeof(cache), "open", 8u << 20, 1, true);
	struct wcadm_persist p;
	struct wc_config cfg;
	struct wc_stats st;
	void *base;
	size_t len;

	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(wcadm_cache_blocks(c), st.blocks);
	wcadm_cache_config(c, &cfg);
	ck_assert_uint_eq(cfg.block_size, ADM_BS);
	ck_assert(cfg.no_threads && cfg.autocommit_blocks > 0);
	wcadm_cache_mapping(c, &base, &len);
	ck_assert(base != NULL && len >= st.blocks * ADM_BS);
	wcadm_cache_persist(c, &p);
	ck_assert(p.copy_small && p.copy_large && p.set_small && p.set_large && p.flush && p.drain);
	ck_assert_uint_eq(p.info.threshold, st.pmem.threshold);
	ck_assert_str_eq(p.info.small_strategy, st.pmem.small_strategy);
	ck_assert_str_eq(p.info.large_strategy, st.pmem.large_strategy);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

START_TEST(admin_engine_and_layout)
{
	struct wcadm_strategy s[8], best;
	struct wcadm_persist def;
	struct wc_pmem_info info;
	unsigned features, n;
	uint64_t bytes = 0;
	int insn;

	ck_assert_int_eq(wcadm_layout_bytes(1000, ADM_BS, &bytes), 0);
	ck_assert_uint_ge(bytes, 1000ull * ADM_BS + 4096 + 1000 * 16);
	ck_assert_int_eq(wcadm_layout_bytes(1000, 1000, &bytes), -EINVAL);
	ck_assert_uint_eq(wcadm_record_offset(1), wcadm_record_offset(0) + 64);

	wcadm_flush_inputs(&features, &insn);
	ck_assert(insn == WC_PMEM_CLFLUSHOPT || insn == WC_PMEM_CLWB);
	n = wcadm_strategies(features, s, 8);
	for (unsigned i = 0; i < n; i++)
		ck_assert(s[i].copy && s[i].nt == (strncmp(s[i].name, "nt-", 3) == 0));
	ck_assert(wcadm_strategies(features, s, 1) <= 1);
	if (wcadm_strategy_best_nt(features, &best))
		ck_assert(best.copy && best.name[0]);
	wcadm_persist_default(&def);
	wc_pmem_info(&info);
	ck_assert_uint_eq(def.info.threshold, info.threshold);
	ck_assert_str_eq(def.info.small_strategy, info.small_strategy);
}
END_TEST

/* ---- wcbench's medium choice and raw file (tools/wcbench/medium.c) ---- */

static const char *disk_dir(void)
{
	const char *d = getenv("WC_TEST_DISK_DIR");

	return d && *d ? d : "/var/tmp";
}

/* The tests below change PMEM2_FORCE_GRANULARITY; the test environment
 * sets it for the other tests, which may run in this process (CK_FORK=no). */
static char saved_gran[64];
static bool gran_was_set;

static void gran_save(void)
{
	const char *v = getenv("PMEM2_FORCE_GRANULARITY");

	gran_was_set = v != NULL;
	snprintf(saved_gran, sizeof(saved_gran), "%s", v ? v : "");
	unsetenv("PMEM2_FORCE_GRANULARITY");
}

static void gran_restore(void)
{
	if (gran_was_set)
		setenv("PMEM2_FORCE_GRANULARITY", saved_gran, 1);
	else
		unsetenv("PMEM2_FORCE_GRANULARITY");
}

/* A medium=auto cache at `path`, after wcbench's emulation decision: the
 * medium wc_get_stats reports ("pmem" or "block"). */
static void create_and_check(const char *path, const char *origin, const char *want)
{
	struct wc_config cfg;
	struct wc_stats st;
	wc_cache *c;
	int ret;

	wc_config_init(&cfg);
	cfg.cache_size = 8u << 20;
	ret = wc_create(&c, path, origin, &cfg);
	ck_assert_msg(ret == 0, "wc_create %s: %s", path, wc_errmsg());
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(st.medium && strcmp(st.medium, want) == 0, "%s: medium %s, expected %s (%s)",
	              path, st.medium ? st.medium : "(null)", want,
	              st.medium_reason ? st.medium_reason : "");
	ck_assert_int_eq(wc_close(c), 0);
}

START_TEST(bench_emulates_pmem_only_in_memory)
{
	char disk[256], shm[256], origin[256];
	int fd;

	if (wcb_path_in_memory(disk_dir()))
		return; /* no disk file system here to tell apart */
	gran_save();
	snprintf(disk, sizeof(disk), "%s/check_tools-blk-%d.img", disk_dir(), (int)getpid());
	snprintf(shm, sizeof(shm), "/dev/shm/check_tools-pm-%d.img", (int)getpid());
	snprintf(origin, sizeof(origin), "/dev/shm/check_tools-origin-%d.img", (int)getpid());
	ck_assert(!wcb_path_in_memory(disk));
	ck_assert(wcb_path_in_memory(shm));
	/* A cache on a disk keeps medium=auto's own choice: nothing forced. */
	ck_assert(!wcb_pmem_emulate_for(disk, NULL));
	ck_assert(!wcb_pmem_emulate_for(disk, "block_size=4096,medium=auto"));
	ck_assert_ptr_null(getenv("PMEM2_FORCE_GRANULARITY"));
	/* medium=block in memory: no emulation either; a bad string: none. */
	ck_assert(!wcb_pmem_emulate_for(shm, "medium=block"));
	ck_assert(!wcb_pmem_emulate_for(shm, "medium=floppy"));
	ck_assert_ptr_null(getenv("PMEM2_FORCE_GRANULARITY"));

	fd = open(origin, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 16u << 20), 0);
	close(fd);
	unlink(disk);
	create_and_check(disk, origin, "block");
	unlink(disk);
	/* In memory: emulated pmem, as every wcbench command always had. */
	ck_assert(wcb_pmem_emulate_for(shm, NULL));
	ck_assert_str_eq(getenv("PMEM2_FORCE_GRANULARITY"), "CACHE_LINE");
	unlink(shm);
	create_and_check(shm, origin, "pmem");
	unlink(shm);
	unlink(origin);
	gran_restore();
}
END_TEST

START_TEST(bench_emulates_pmem_when_asked_on_a_disk)
{
	gran_save();
	ck_assert(wcb_pmem_emulate_for("/var/tmp/x.img", "medium=pmem"));
	ck_assert_str_eq(getenv("PMEM2_FORCE_GRANULARITY"), "CACHE_LINE");
	/* Set by the user: left alone. */
	setenv("PMEM2_FORCE_GRANULARITY", "BYTE", 1);
	ck_assert(!wcb_pmem_emulate_for("/dev/shm/x.img", NULL));
	ck_assert_str_eq(getenv("PMEM2_FORCE_GRANULARITY"), "BYTE");
	gran_restore();
}
END_TEST

START_TEST(bench_raw_file_is_written_and_unlinked)
{
	const uint64_t size = (3u << 20) + 8192; /* not a multiple of the 1 MiB chunk */
	struct stat st;
	char *buf;
	int fd;

	if (wcb_path_in_memory(disk_dir()))
		return;
	fd = wcb_raw_file("check_tools", disk_dir(), size, true);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, size);
	ck_assert_uint_eq(st.st_nlink, 0);                       /* nothing left behind */
	ck_assert_uint_ge((uint64_t)st.st_blocks * 512, size); /* no hole */
	ck_assert(fcntl(fd, F_GETFL) & O_DIRECT);
	ck_assert_int_eq(posix_memalign((void **)&buf, 4096, 8192), 0);
	ck_assert_int_eq(pread(fd, buf, 8192, (off_t)(size - 8192)), 8192);
	for (unsigned i = 0; i < 8192; i++)
		ck_assert_uint_eq((unsigned char)buf[i], 0xa5);
	free(buf);
	close(fd);
	/* A directory that is not there: -1 and a message, no crash. */
	ck_assert_int_eq(wcb_raw_file("check_tools", "/nonexistent-dir-for-check", 4096, true), -1);
}
END_TEST

static Suite *tools_suite(void)
{
	Suite *s = suite_create("tools");
	TCase *size = tcase_create("size");
	TCase *opts = tcase_create("options");
	TCase *json = tcase_create("json");
	TCase *admin = tcase_create("admin");
	TCase *bench = tcase_create("wcbench medium");

	tcase_add_test(size, size_accepts_the_grammar);
	tcase_add_test(size, size_rejects_junk_signs_and_overflow);
	tcase_add_test(size, size_format);
	tcase_add_test(size, config_uses_the_grammar);
	suite_add_tcase(s, size);
	tcase_add_test(opts, options_from_a_table);
	suite_add_tcase(s, opts);
	tcase_add_test(json, json_writer);
	suite_add_tcase(s, json);
	tcase_add_test(admin, admin_image_of_a_cache);
	tcase_add_test(admin, admin_image_refuses_what_is_no_cache);
	tcase_add_test(admin, admin_open_cache);
	tcase_add_test(admin, admin_engine_and_layout);
	suite_add_tcase(s, admin);
	tcase_add_test(bench, bench_emulates_pmem_only_in_memory);
	tcase_add_test(bench, bench_emulates_pmem_when_asked_on_a_disk);
	tcase_add_test(bench, bench_raw_file_is_written_and_unlinked);
	suite_add_tcase(s, bench);
	return s;
}

int main(void)
{
	return wc_test_main(tools_suite());
}
