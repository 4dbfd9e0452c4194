/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_tools.c -- the pieces every tool relies on for what users type and
 * read: the size grammar (lib/size.c, also wc_config_parse's), the option
 * table (tools/common) and the JSON writer.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/size.h"
#include "testmain.h"
#include "wcache.h"
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

static Suite *tools_suite(void)
{
	Suite *s = suite_create("tools");
	TCase *size = tcase_create("size");
	TCase *opts = tcase_create("options");
	TCase *json = tcase_create("json");

	tcase_add_test(size, size_accepts_the_grammar);
	tcase_add_test(size, size_rejects_junk_signs_and_overflow);
	tcase_add_test(size, size_format);
	tcase_add_test(size, config_uses_the_grammar);
	suite_add_tcase(s, size);
	tcase_add_test(opts, options_from_a_table);
	suite_add_tcase(s, opts);
	tcase_add_test(json, json_writer);
	suite_add_tcase(s, json);
	return s;
}

int main(void)
{
	return wc_test_main(tools_suite());
}
