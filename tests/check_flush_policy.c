/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_flush_policy.c -- which strategy the engine picks, and why:
 *   - pretended CPUs (wc_persist_policy_resolve is a pure function of the
 *     config and a struct wc_cpu): no CLFLUSHOPT, line size 128, no AVX,
 *     a quirk table (a pretended entry: the built-in one is empty), forced
 *     strategies, explicit thresholds, bad fields;
 *     an unknown CPU is measured at first use, and these tests pretend the
 *     measurement's answer (wc_first_use_measure) so the rule is checked,
 *     not this machine;
 *   - the first-use measurement itself: once per process, thread-safe, and
 *     on this machine: the width and the crossover it chooses;
 *   - the WC_PMEM_* environment: good values take effect, bad ones are
 *     -EINVAL with a message naming the variable and the value, while the
 *     copy functions keep working and warn once;
 *   - wc_pmem_configure / wc_pmem_info / wc_pmem_calibrate;
 *   - BYTE / PAGE / CACHE_LINE granularity on real libpmem2 mappings of a
 *     /dev/shm file.
 * Every environment test first calls wc_persist_default_reset(), so it reads
 * the environment it set whether or not Check forks.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "flush/engine.h"
#include "testcpu.h"
#include "testmain.h"

#if defined(__x86_64__)
static const unsigned all_x86 = WC_CPU_CLFLUSH | WC_CPU_CLFLUSHOPT | WC_CPU_CLWB | WC_CPU_SSE2 |
                                WC_CPU_SSE42 | WC_CPU_AVX2 | WC_CPU_AVX512F;

static struct wc_cpu fake_cpu(const char *vendor, unsigned family, unsigned model,
                              unsigned features, unsigned line)
{
	struct wc_cpu c;

	memset(&c, 0, sizeof(c));
	snprintf(c.vendor, sizeof(c.vendor), "%s", vendor);
	c.family = family;
	c.model = model;
	c.features = features;
	c.line_size = line;
	return c;
}

/* What the pretended first-use measurement answers, and how often it ran.
 * The widths: WC_STRAT_COUNT = the widest the features allow, and for
 * large, the cached path (or small, at SIZE_MAX). */
static size_t pretend_threshold = 768;
static enum wc_strategy_id pretend_small = WC_STRAT_COUNT, pretend_large = WC_STRAT_COUNT;
static int pretend_error;
static unsigned pretend_calls;

static int pretend_measure(unsigned features, int flush_insn, struct wc_flush_choice *out)
{
	__atomic_fetch_add(&pretend_calls, 1, __ATOMIC_RELAXED);
	if (pretend_error)
		return wc_err(pretend_error, "pretended failure");
	memset(out, 0, sizeof(*out));
	out->threshold = pretend_threshold;
	out->small = pretend_small != WC_STRAT_COUNT ? pretend_small : wc_strategy_best_nt(features);
	out->large = pretend_large != WC_STRAT_COUNT ? pretend_large
	             : pretend_threshold == SIZE_MAX ? out->small
	             : flush_insn == WC_PMEM_CLWB   ? WC_STRAT_CACHED_CLWB
	                                            : WC_STRAT_CACHED_CLFLUSHOPT;
	out->runner_up = out->small;
	out->runner_up_speed = 1.0;
	out->ms = 3;
	return 0;
}

static wc_measure_fn real_measure;

/* Fixture: unknown CPUs "measure" 768, the seed's rule. */
static void pretend_setup(void)
{
	real_measure = wc_first_use_measure;
	wc_first_use_measure = pretend_measure;
	pretend_threshold = 768;
	pretend_small = pretend_large = WC_STRAT_COUNT;
	pretend_error = 0;
	pretend_calls = 0;
	wc_calibration_forget();
	wc_cpu_quirks_for_test = NULL;
}

static void pretend_teardown(void)
{
	wc_first_use_measure = real_measure;
	wc_cpu_quirks_for_test = NULL;
	wc_calibration_forget();
}

/* Skylake-SP: every feature -> measured at first use. */
static struct wc_cpu intel(void)
{
	return fake_cpu("GenuineIntel", 6, 0x55, all_x86, 64);
}

static int built(enum wc_strategy_id id)
{
	const struct wc_strategy *s = wc_strategy_get(id);

	return s && s->copy;
}

/* The widest NT store a pretended CPU with every feature gets from this
 * build: the first-use measurement runs on the real CPU, so only with the
 * features it has too (a Zen 5 VM without AVX-512 gets AVX2). */
static const char *widest_nt(void)
{
	return wc_strategy_get(wc_strategy_best_nt(all_x86 & wc_cpu_get()->features))->name;
}

static void resolve_ok(struct wc_persist_policy *p, const struct wc_pmem_config *cfg,
                       const struct wc_cpu *cpu)
{
	int ret = wc_persist_policy_resolve(p, cfg, cpu, 0);

	ck_assert_msg(ret == 0, "resolve failed: %d %s", ret, wc_errmsg());
	ck_assert_ptr_nonnull(p->copy_small);
	ck_assert_ptr_nonnull(p->copy_large);
	ck_assert_ptr_nonnull(p->set_small);
	ck_assert_ptr_nonnull(p->set_large);
	ck_assert_ptr_nonnull(p->flush);
	ck_assert_ptr_nonnull(p->drain);
	ck_assert_ptr_nonnull(p->info.reason);
}

static void assert_nt_everywhere(const struct wc_persist_policy *p)
{
	ck_assert_uint_eq(p->threshold, SIZE_MAX);
	ck_assert_msg(strncmp(p->info.small_strategy, "nt-", 3) == 0, "small %s",
	              p->info.small_strategy);
	ck_assert_str_eq(p->info.small_strategy, p->info.large_strategy);
	ck_assert_ptr_eq(p->copy_small, p->copy_large);
	ck_assert_ptr_eq(p->set_small, p->set_large);
}

static void assert_reason(const struct wc_persist_policy *p, const char *needle)
{
	ck_assert_msg(strstr(p->info.reason, needle), "reason \"%s\" lacks \"%s\"", p->info.reason,
	              needle);
}

START_TEST(test_default_rule)
{
	struct wc_pmem_config cfg = { 0 };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	resolve_ok(&p, &cfg, &cpu);
	ck_assert_uint_eq(p.threshold, 768);
	ck_assert_str_eq(p.info.small_strategy, widest_nt());
	ck_assert_str_eq(p.info.large_strategy, "cached+clflushopt");
	ck_assert_ptr_eq(p.copy_large, wc_cached_clflushopt_copy);
	/* The caller's own stores are written back with CLWB (measured
	 * faster, cpu.c), the cached copy path with CLFLUSHOPT. */
	ck_assert_ptr_eq(p.flush, wc_persist_clwb);
	ck_assert_ptr_eq(p.drain, wc_drain_sfence);
	assert_reason(&p, "measured at first use in 3 ms: crossover 768, ");
	assert_reason(&p, widest_nt());

	/* WC_PMEM_FLUSH=clflushopt asks for CLFLUSHOPT explicitly. */
	ck_assert_int_eq(wc_persist_policy_resolve(&p, &cfg, &cpu, WC_ENV_FLUSH), 0);
	ck_assert_ptr_eq(p.flush, wc_persist_clflushopt);
	/* Without CLWB, CLFLUSHOPT. */
	cpu.features &= ~WC_CPU_CLWB;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_ptr_eq(p.flush, wc_persist_clflushopt);
	ck_assert_uint_eq(p.info.line_size, 64);
	ck_assert_str_eq(p.info.vendor, "GenuineIntel");
	ck_assert_uint_eq(p.gran, WC_GRAN_CACHE_LINE);
}
END_TEST

START_TEST(test_no_clflushopt)
{
	struct wc_pmem_config cfg = { .disable = WC_CPU_CLFLUSHOPT };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	assert_reason(&p, "no clflushopt");
	/* wc_pmem_flush still writes back: CLWB, never CLFLUSH. */
	ck_assert_ptr_eq(p.flush, wc_persist_clwb);

	cpu.features &= ~WC_CPU_CLFLUSHOPT; /* really absent, not pretended */
	memset(&cfg, 0, sizeof(cfg));
	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	assert_reason(&p, "no clflushopt");
}
END_TEST

START_TEST(test_no_flush_insn_at_all)
{
	struct wc_pmem_config cfg = { .disable = WC_CPU_CLFLUSHOPT | WC_CPU_CLWB };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	/* Nothing but CLFLUSH can write back a caller's stores there. */
	ck_assert_ptr_eq(p.flush, wc_persist_clflush);
	assert_reason(&p, "pretending absent");
}
END_TEST

START_TEST(test_line_size_128)
{
	struct wc_pmem_config cfg = { .line_size = 128 };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	assert_reason(&p, "line size 128");
	ck_assert_uint_eq(p.info.line_size, 128);

	/* A CPU that reports 128 itself, with an explicit threshold: the line
	 * size still wins, the cached path is off. */
	cpu.line_size = 128;
	memset(&cfg, 0, sizeof(cfg));
	cfg.threshold = 1024;
	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	assert_reason(&p, "line size 128");
}
END_TEST

START_TEST(test_no_avx)
{
	struct wc_pmem_config cfg = { .disable = WC_CPU_AVX2 | WC_CPU_AVX512F };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	resolve_ok(&p, &cfg, &cpu);
	ck_assert_msg(strcmp(p.info.small_strategy, "nt-sse2") == 0 ||
	              strcmp(p.info.small_strategy, "nt-movnti") == 0, "no-avx small: %s",
	              p.info.small_strategy);
	ck_assert_str_eq(p.info.large_strategy, "cached+clflushopt");
	assert_reason(&p, "avx2 avx512f");

	if (built(WC_STRAT_NT_AVX2)) {
		cfg.disable = WC_CPU_AVX512F;
		resolve_ok(&p, &cfg, &cpu);
		ck_assert_str_eq(p.info.small_strategy, "nt-avx2");
	}
	/* Without SSE2 (not a real x86-64, but the table must still work). */
	cfg.disable = WC_CPU_AVX2 | WC_CPU_AVX512F | WC_CPU_SSE2;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_str_eq(p.info.small_strategy, "nt-movnti");
}
END_TEST

START_TEST(test_clwb)
{
	struct wc_pmem_config cfg = { .flush_insn = WC_PMEM_CLWB };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	resolve_ok(&p, &cfg, &cpu);
	ck_assert_str_eq(p.info.large_strategy, "cached+clwb");
	ck_assert_ptr_eq(p.copy_large, wc_cached_clwb_copy);
	ck_assert_ptr_eq(p.flush, wc_persist_clwb);
	ck_assert_uint_eq(p.threshold, 768);

	cfg.disable = WC_CPU_CLWB;
	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	assert_reason(&p, "no clwb");
	ck_assert_ptr_eq(p.flush, wc_persist_clflushopt); /* the one left */
}
END_TEST

START_TEST(test_force)
{
	struct wc_pmem_config cfg = { .force = WC_PMEM_FORCE_NT };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;
	int ret;

	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	assert_reason(&p, "forced nt (config)");

	cfg.force = WC_PMEM_FORCE_CACHED;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_uint_eq(p.threshold, 0);
	ck_assert_str_eq(p.info.small_strategy, "cached+clflushopt");
	ck_assert_str_eq(p.info.large_strategy, "cached+clflushopt");

	cfg.flush_insn = WC_PMEM_CLWB;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_str_eq(p.info.small_strategy, "cached+clwb");

	cfg.flush_insn = WC_PMEM_CLFLUSHOPT;
	cfg.disable = WC_CPU_CLFLUSHOPT;
	ret = wc_persist_policy_resolve(&p, &cfg, &cpu, 0);
	ck_assert_int_eq(ret, -ENOTSUP);
	ck_assert_msg(strstr(wc_errmsg(), "clflushopt"), "message: %s", wc_errmsg());
}
END_TEST

START_TEST(test_threshold)
{
	struct wc_pmem_config cfg = { .threshold = 4096 };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	resolve_ok(&p, &cfg, &cpu);
	ck_assert_uint_eq(p.threshold, 4096);
	ck_assert_uint_eq(p.info.threshold, 4096);
	ck_assert_str_eq(p.info.reason, "config 4096");

	cfg.threshold = SIZE_MAX;
	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);

	/* From the environment: the reason names the variable. */
	cfg.threshold = 2048;
	ck_assert_int_eq(wc_persist_policy_resolve(&p, &cfg, &cpu, WC_ENV_THRESHOLD), 0);
	ck_assert_str_eq(p.info.reason, "env WC_PMEM_THRESHOLD 2048");
}
END_TEST

/* The quirk table says what measurement cannot: a pretended entry for a
 * CPU whose cached path is wrong. */
START_TEST(test_quirk)
{
	static const struct wc_cpu_quirk table[] = {
		{ "AuthenticAMD", 0x19, 0x10, 0x11, WC_QUIRK_NO_CACHED,
		  "cpu quirk no-cached (pretended for the test)" },
		{ NULL, 0, 0, 0, 0, NULL },
	};
	struct wc_pmem_config cfg = { 0 };
	struct wc_cpu hit = fake_cpu("AuthenticAMD", 0x19, 0x11, all_x86, 64);
	struct wc_cpu low = fake_cpu("AuthenticAMD", 0x19, 0x10, all_x86, 64);
	struct wc_cpu above = fake_cpu("AuthenticAMD", 0x19, 0x12, all_x86, 64);
	struct wc_cpu not_amd = fake_cpu("GenuineIntel", 0x19, 0x11, all_x86, 64);
	struct wc_cpu other_family = fake_cpu("AuthenticAMD", 0x1a, 0x11, all_x86, 64);
	struct wc_persist_policy p;

	wc_cpu_quirks_for_test = table;
	ck_assert_ptr_nonnull(wc_cpu_quirk_find(&hit));
	ck_assert_ptr_nonnull(wc_cpu_quirk_find(&low));
	ck_assert_ptr_null(wc_cpu_quirk_find(&above));
	ck_assert_ptr_null(wc_cpu_quirk_find(&not_amd));
	ck_assert_ptr_null(wc_cpu_quirk_find(&other_family));
	resolve_ok(&p, &cfg, &hit);
	assert_nt_everywhere(&p);
	assert_reason(&p, "cpu quirk no-cached");
	ck_assert_uint_eq(pretend_calls, 0);

	/* WC_PMEM_NO_QUIRKS measures anyway. */
	ck_assert_int_eq(wc_persist_policy_resolve(&p, &cfg, &hit, WC_ENV_NO_QUIRKS), 0);
	ck_assert_uint_eq(p.threshold, 768);
	assert_reason(&p, "quirk table ignored (env WC_PMEM_NO_QUIRKS), measured at first use");

	/* An explicit threshold overrides the quirk. */
	cfg.threshold = 1536;
	resolve_ok(&p, &cfg, &hit);
	ck_assert_uint_eq(p.threshold, 1536);
	ck_assert_str_eq(p.info.large_strategy, "cached+clflushopt");
}
END_TEST

/* The built-in table holds no speed claims: every CPU met so far (Zen 1,
 * Zen 4, Zen 5) is measured, width and crossover. */
START_TEST(test_quirk_table_measures)
{
	static const unsigned known[][2] = { { 0x17, 0x01 }, { 0x19, 0x11 }, { 0x1a, 0x02 } };
	struct wc_pmem_config cfg = { 0 };
	struct wc_persist_policy p;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct wc_cpu cpu = fake_cpu("AuthenticAMD", known[i][0], known[i][1], all_x86, 64);

		ck_assert_ptr_null(wc_cpu_quirk_find(&cpu));
		wc_calibration_forget();
		pretend_calls = 0;
		resolve_ok(&p, &cfg, &cpu);
		ck_assert_uint_eq(pretend_calls, 1);
		assert_reason(&p, "measured at first use");
	}
}
END_TEST

/* The measured width is the one in force, and two widths can share the
 * sizes; a choice this CPU cannot run is refused. */
START_TEST(test_measured_width)
{
	struct wc_pmem_config cfg = { 0 };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	if (!built(WC_STRAT_NT_AVX2))
		return;
	/* 256-bit stores at every size where 512-bit ones exist (Zen 4). */
	pretend_threshold = SIZE_MAX;
	pretend_small = WC_STRAT_NT_AVX2;
	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	ck_assert_str_eq(p.info.small_strategy, "nt-avx2");
	ck_assert_ptr_eq(p.copy_small, wc_nt_avx2_copy);
	ck_assert_ptr_eq(p.set_small, wc_nt_avx2_set);
	assert_reason(&p, "non-temporal wins at every size, nt-avx2 at every size");

	/* MOVNTI below 128 B, AVX2 from there: not a crossover. */
	wc_calibration_forget();
	pretend_threshold = 128;
	pretend_small = WC_STRAT_NT_MOVNTI;
	pretend_large = WC_STRAT_NT_AVX2;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_uint_eq(p.threshold, 128);
	ck_assert_str_eq(p.info.small_strategy, "nt-movnti");
	ck_assert_str_eq(p.info.large_strategy, "nt-avx2");
	assert_reason(&p, "non-temporal wins at every size, nt-movnti below 128 B, nt-avx2 from "
	                  "there");

	/* The same choice installed into a resolved policy (a cache's
	 * recorded line), then one the CPU cannot run. */
	cfg.threshold = 4096;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_int_eq(wc_persist_policy_set_choice(&p, WC_STRAT_NT_SSE2, WC_STRAT_CACHED_CLWB,
	                                              2048, "recorded"), 0);
	ck_assert_uint_eq(p.threshold, 2048);
	ck_assert_uint_eq(p.info.threshold, 2048);
	ck_assert_str_eq(p.info.small_strategy, "nt-sse2");
	ck_assert_str_eq(p.info.large_strategy, "cached+clwb");
	ck_assert_str_eq(p.info.reason, "recorded");
	wc_persist_policy_set_granularity(&p, WC_GRAN_CACHE_LINE, NULL, NULL);
	ck_assert_ptr_eq(p.copy_small, wc_nt_sse2_copy);
	ck_assert_ptr_eq(p.copy_large, wc_cached_clwb_copy);
	cpu.features &= ~WC_CPU_CLWB;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_int_eq(wc_persist_policy_set_choice(&p, WC_STRAT_NT_SSE2, WC_STRAT_CACHED_CLWB,
	                                              2048, "recorded"), -ENOTSUP);
	ck_assert_msg(strstr(wc_errmsg(), "cached+clwb"), "%s", wc_errmsg());
	ck_assert_uint_eq(p.threshold, 4096);
	ck_assert_int_eq(wc_persist_policy_set_choice(&p, WC_STRAT_CACHED_CLFLUSHOPT,
	                                              WC_STRAT_CACHED_CLFLUSHOPT, SIZE_MAX, "x"),
	                 -ENOTSUP);
}
END_TEST

/* The real measurement on this machine chooses among the widths it was
 * allowed, and says how far the runner-up was (never how fast). */
START_TEST(test_calibration_widths)
{
	const struct wc_cpu *cpu = wc_cpu_get();
	unsigned masks[] = { 0, WC_CPU_AVX512F, WC_CPU_AVX512F | WC_CPU_AVX2 };

	WC_TEST_NEED_CPU(WC_CPU_CLFLUSHOPT, 64);
	for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
		unsigned features = cpu->features & ~masks[m];
		struct wc_calibration cal;
		unsigned widths = 0;

		ck_assert_int_eq(wc_calibrate_run(&cal, features, WC_PMEM_CLFLUSHOPT, 1, 16u << 10,
		                                  0), 0);
		for (unsigned w = 0; w < WC_CAL_MAX_NT; w++)
			widths += wc_strategy_usable((enum wc_strategy_id)(WC_STRAT_NT_MOVNTI + w),
			                             features);
		ck_assert_uint_eq(cal.n_nt, widths);
		ck_assert(wc_strategy_usable(cal.choice.small, features));
		ck_assert(wc_strategy_get(cal.choice.small)->nt);
		ck_assert(wc_strategy_usable(cal.choice.large, features));
		ck_assert(wc_strategy_usable(cal.choice.runner_up, features));
		ck_assert_msg(cal.choice.runner_up_speed > 0 && cal.choice.runner_up_speed <= 1.03,
		              "runner-up speed %.3f", cal.choice.runner_up_speed);
		ck_assert_msg(widths < 2 || cal.choice.runner_up != cal.choice.small,
		              "no runner-up among %u widths", widths);
		ck_assert_str_eq(cal.nt_name, wc_strategy_get(cal.choice.small)->name);
		ck_assert_uint_eq(cal.threshold, cal.choice.threshold);
		ck_assert((cal.choice.threshold == SIZE_MAX) == (cal.choice.small == cal.choice.large));
		for (unsigned i = 0; i < cal.npoints; i++)
			for (unsigned w = 0; w < cal.n_nt; w++)
				ck_assert(cal.pt[i].w_fenced[w] > 0 && cal.pt[i].w_batched[w] > 0);
		if (masks[m] & WC_CPU_AVX512F)
			ck_assert_int_ne(cal.choice.small, WC_STRAT_NT_AVX512);
	}
}
END_TEST

/* An unknown CPU gets what the measurement found; it is measured once. */
START_TEST(test_unknown_cpu_measured)
{
	struct wc_pmem_config cfg = { 0 };
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;

	pretend_threshold = SIZE_MAX;
	resolve_ok(&p, &cfg, &cpu);
	assert_nt_everywhere(&p);
	assert_reason(&p, "measured at first use in 3 ms: non-temporal wins at every size");
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_uint_eq(pretend_calls, 1); /* remembered */

	/* Another feature set is another question. */
	wc_calibration_forget();
	pretend_threshold = 2048;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_uint_eq(pretend_calls, 2);
	ck_assert_uint_eq(p.threshold, 2048);
	ck_assert_str_eq(p.info.large_strategy, "cached+clflushopt");
	assert_reason(&p, "crossover 2048");

	/* A failed measurement falls back to the seed's rule and says why. */
	wc_calibration_forget();
	pretend_error = -ENOMEM;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_uint_eq(p.threshold, 768);
	assert_reason(&p, "measurement failed (pretended failure): default 768");
	pretend_error = 0;

	/* An explicit threshold is never measured. */
	pretend_calls = 0;
	wc_calibration_forget();
	cfg.threshold = 1024;
	resolve_ok(&p, &cfg, &cpu);
	ck_assert_uint_eq(pretend_calls, 0);
	ck_assert_uint_eq(p.threshold, 1024);
}
END_TEST

START_TEST(test_bad_config)
{
	struct wc_cpu cpu = intel();
	struct wc_persist_policy p;
	struct {
		struct wc_pmem_config cfg;
		const char *needle;
	} bad[] = {
		{ { .force = 3 }, "force=3" },
		{ { .force = -1 }, "force=-1" },
		{ { .flush_insn = 2 }, "flush_insn=2" },
		{ { .line_size = 100 }, "line_size=100" },
		{ { .line_size = 8 }, "line_size=8" },
		{ { .disable = 1u << 20 }, "disable=0x100000" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = wc_persist_policy_resolve(&p, &bad[i].cfg, &cpu, 0);

		ck_assert_int_eq(ret, -EINVAL);
		ck_assert_msg(strstr(wc_errmsg(), bad[i].needle), "message \"%s\" lacks \"%s\"",
		              wc_errmsg(), bad[i].needle);
	}
	ck_assert_int_eq(wc_pmem_configure(&bad[0].cfg), -EINVAL);
}
END_TEST

#else /* !__x86_64__ */

/* Off x86-64 there is one answer, whatever the CPU pretends. */
START_TEST(test_generic_policy)
{
	struct wc_pmem_config cfg = { .threshold = 1024 };
	struct wc_persist_policy p;

	ck_assert_int_eq(wc_persist_policy_init(&p, &cfg), 0);
	ck_assert_str_eq(p.info.small_strategy, "pmem2");
	ck_assert_str_eq(p.info.large_strategy, "pmem2");
	ck_assert_ptr_eq(p.flush, wc_generic_flush);
	ck_assert_ptr_eq(p.drain, wc_generic_drain);
	ck_assert_msg(strstr(p.info.reason, "not x86-64"), "%s", p.info.reason);
}
END_TEST

#endif

/* ---- environment ---- */

static void clear_env(void)
{
	static const char *vars[] = {
		"WC_PMEM_THRESHOLD", "WC_PMEM_FORCE", "WC_PMEM_FLUSH",
		"WC_PMEM_NO_CLFLUSHOPT", "WC_PMEM_NO_CLWB", "WC_PMEM_NO_AVX", "WC_PMEM_NO_QUIRKS",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	wc_persist_default_reset();
}

/* As the tests see the CPU (testcpu.h): a WC_PMEM_NO_* variable given to
 * the program hides a feature here even after clear_env() unset it for the
 * library, which then only weakens or skips a check. */
static int have(unsigned bits)
{
	return (wc_test_cpu_features() & bits) == bits;
}

/* A copy through the public API, checked byte by byte. */
static void api_copy_works(void)
{
	unsigned char src[3000], dst[3100];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 7 + 1);
	memset(dst, 0, sizeof(dst));
	wc_pmem_memcpy(dst + 5, src, sizeof(src));
	wc_pmem_memset(dst + 3010, 0xab, 20);
	wc_pmem_drain();
	ck_assert(memcmp(dst + 5, src, sizeof(src)) == 0);
	ck_assert(dst[4] == 0 && dst[3005] == 0 && dst[3009] == 0);
	for (int i = 3010; i < 3030; i++)
		ck_assert(dst[i] == 0xab);
	ck_assert(dst[3030] == 0);
}

START_TEST(test_env_bad_values)
{
	static const struct {
		const char *var, *value;
	} bad[] = {
		{ "WC_PMEM_THRESHOLD", "abc" },    { "WC_PMEM_THRESHOLD", "0" },
		{ "WC_PMEM_THRESHOLD", "-5" },     { "WC_PMEM_THRESHOLD", "12k" },
		{ "WC_PMEM_THRESHOLD", "99999999999999999999999" },
		{ "WC_PMEM_FORCE", "movnti" },     { "WC_PMEM_FLUSH", "clflush" },
		{ "WC_PMEM_NO_CLFLUSHOPT", "yes" }, { "WC_PMEM_NO_CLWB", "2" },
		{ "WC_PMEM_NO_AVX", "true" },      { "WC_PMEM_NO_QUIRKS", "yes" },
	};
	struct wc_pmem_info info;
	struct wc_persist_policy p;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear_env();
		setenv(bad[i].var, bad[i].value, 1);
		wc_persist_default_reset();

		ck_assert_int_eq(wc_pmem_info(&info), -EINVAL);
		ck_assert_msg(strstr(wc_errmsg(), bad[i].var) && strstr(wc_errmsg(), bad[i].value),
		              "%s=%s: message \"%s\"", bad[i].var, bad[i].value, wc_errmsg());
		ck_assert_ptr_nonnull(info.reason); /* filled in anyway */
		ck_assert_int_eq(wc_pmem_configure(NULL), -EINVAL);
		ck_assert_int_eq(wc_persist_policy_init(&p, NULL), -EINVAL);
		ck_assert_msg(strstr(wc_errmsg(), bad[i].var), "%s", wc_errmsg());
	}
	clear_env();
}
END_TEST

START_TEST(test_env_bad_value_copies_still_work)
{
	char path[PATH_MAX], text[1024];
	int fd, saved;
	ssize_t len;

	clear_env();
	setenv("WC_PMEM_THRESHOLD", "lots", 1);
	setenv("WC_PMEM_FORCE", "cached", 1); /* good: must still apply */
	wc_persist_default_reset();

	/* Capture stderr: one warning, however many copies. */
	wc_test_path(path, sizeof(path), "stderr-capture");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	api_copy_works();
	api_copy_works();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);

	len = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	ck_assert_int_gt(len, 0);
	text[len] = '\0';
	ck_assert_msg(strstr(text, "WC_PMEM_THRESHOLD=\"lots\""), "stderr: %s", text);
	ck_assert_msg(strchr(text, '\n') == strrchr(text, '\n'), "more than one warning: %s", text);
	if (have(WC_CPU_CLFLUSHOPT))
		ck_assert_str_eq(wc_persist_default()->info.small_strategy, "cached+clflushopt");
	clear_env();
}
END_TEST

static void env_info(struct wc_pmem_info *info)
{
	int ret;

	wc_persist_default_reset();
	ret = wc_pmem_info(info);
	ck_assert_msg(ret == 0, "wc_pmem_info: %d %s", ret, wc_errmsg());
}

START_TEST(test_env_good_values)
{
	struct wc_pmem_info info;

	WC_TEST_NEED_CPU(WC_CPU_CLFLUSHOPT | WC_CPU_CLWB, 64);
	clear_env();
	setenv("WC_PMEM_THRESHOLD", "4096", 1);
	env_info(&info);
	ck_assert_uint_eq(info.threshold, 4096);
	ck_assert_str_eq(info.reason, "env WC_PMEM_THRESHOLD 4096");
	ck_assert_str_eq(info.large_strategy, "cached+clflushopt");
	api_copy_works();

	/* A config field wins over the environment. */
	{
		struct wc_pmem_config cfg = { .threshold = 2048 };

		ck_assert_int_eq(wc_pmem_configure(&cfg), 0);
		ck_assert_int_eq(wc_pmem_info(&info), 0);
		ck_assert_uint_eq(info.threshold, 2048);
		ck_assert_str_eq(info.reason, "config 2048");
		api_copy_works();
		/* NULL: back to the defaults, environment included. */
		ck_assert_int_eq(wc_pmem_configure(NULL), 0);
		ck_assert_int_eq(wc_pmem_info(&info), 0);
		ck_assert_uint_eq(info.threshold, 4096);
	}

	setenv("WC_PMEM_FLUSH", "clwb", 1);
	env_info(&info);
	ck_assert_str_eq(info.large_strategy, "cached+clwb");
	api_copy_works();

	setenv("WC_PMEM_NO_CLWB", "1", 1);
	env_info(&info);
	ck_assert_uint_eq(info.threshold, SIZE_MAX);
	ck_assert_msg(strstr(info.reason, "no clwb"), "%s", info.reason);
	api_copy_works();

	clear_env();
	setenv("WC_PMEM_THRESHOLD", "nt", 1);
	env_info(&info);
	ck_assert_uint_eq(info.threshold, SIZE_MAX);
	ck_assert_msg(strstr(info.reason, "env WC_PMEM_THRESHOLD=nt"), "%s", info.reason);

	clear_env();
	setenv("WC_PMEM_FORCE", "nt", 1);
	env_info(&info);
	ck_assert_uint_eq(info.threshold, SIZE_MAX);
	ck_assert_str_eq(info.reason, "forced nt (env WC_PMEM_FORCE)");

	clear_env();
	setenv("WC_PMEM_FORCE", "cached", 1);
	setenv("WC_PMEM_NO_CLFLUSHOPT", "0", 1); /* "0" = not pretending */
	env_info(&info);
	ck_assert_str_eq(info.small_strategy, "cached+clflushopt");
	ck_assert_uint_eq(info.threshold, 0);
	api_copy_works();

	clear_env();
	setenv("WC_PMEM_NO_CLFLUSHOPT", "1", 1);
	env_info(&info);
	ck_assert_uint_eq(info.threshold, SIZE_MAX);
	ck_assert_msg(strstr(info.reason, "no clflushopt") &&
	              strstr(info.reason, "env WC_PMEM_NO_*"), "%s", info.reason);
	ck_assert(info.cpu & WC_CPU_CLFLUSHOPT); /* detected, only pretended absent */
	api_copy_works();

	clear_env();
	setenv("WC_PMEM_NO_AVX", "1", 1);
	env_info(&info);
	ck_assert_msg(strcmp(info.small_strategy, "nt-sse2") == 0 ||
	              strcmp(info.small_strategy, "nt-movnti") == 0, "%s", info.small_strategy);
	api_copy_works();

	clear_env();
	setenv("WC_PMEM_THRESHOLD", "auto", 1);
	env_info(&info);
	ck_assert_msg(strstr(info.reason, "calibrated (env WC_PMEM_THRESHOLD=auto)"), "%s",
	              info.reason);
	api_copy_works();
	clear_env();
}
END_TEST

START_TEST(test_init_follows_configure)
{
	struct wc_pmem_config cfg = { .threshold = 1024 }, zero = { 0 };
	struct wc_pmem_config other = { .force = WC_PMEM_FORCE_NT };
	struct wc_persist_policy p;

	clear_env();
	if (!have(WC_CPU_CLFLUSHOPT) || wc_cpu_get()->line_size != 64)
		cfg.force = WC_PMEM_FORCE_NT; /* still a distinct policy to follow */
	ck_assert_int_eq(wc_pmem_configure(&cfg), 0);
	/* All-zero and NULL mean "the process default": what was configured. */
	ck_assert_int_eq(wc_persist_policy_init(&p, &zero), 0);
	ck_assert(memcmp(&p, wc_persist_default(), sizeof(p)) == 0);
	ck_assert_int_eq(wc_persist_policy_init(&p, NULL), 0);
	ck_assert(memcmp(&p, wc_persist_default(), sizeof(p)) == 0);
	if (!cfg.force)
		ck_assert_uint_eq(p.threshold, 1024);
	/* A config of its own does not follow the process default. */
	ck_assert_int_eq(wc_persist_policy_init(&p, &other), 0);
	ck_assert_uint_eq(p.threshold, SIZE_MAX);
	ck_assert_str_eq(p.info.reason, "forced nt (config)");
	ck_assert_int_eq(wc_pmem_configure(NULL), 0);
}
END_TEST

START_TEST(test_info_and_calibrate)
{
	struct wc_pmem_info info;
	const struct wc_cpu *cpu = wc_cpu_get();
	size_t t = 0;

	clear_env();
	ck_assert_int_eq(wc_pmem_info(&info), 0);
	ck_assert_uint_eq(info.cpu, cpu->features);
	ck_assert_uint_eq(info.line_size, cpu->line_size);
	ck_assert_str_eq(info.vendor, cpu->vendor);
	ck_assert_uint_eq(info.family, cpu->family);
	ck_assert_ptr_nonnull(info.small_strategy);
	ck_assert_ptr_nonnull(info.large_strategy);
#if defined(__x86_64__)
	ck_assert(cpu->features & WC_CPU_SSE2);
	ck_assert(cpu->line_size >= 32 && (cpu->line_size & (cpu->line_size - 1)) == 0);
	ck_assert(strlen(cpu->vendor) == 12);
#endif
	ck_assert_int_eq(wc_pmem_calibrate(&t), 0);
	ck_assert_msg(t == SIZE_MAX || (t >= 256 && t <= 65536), "calibrated threshold %zu", t);
	ck_assert_int_eq(wc_pmem_calibrate(NULL), -EINVAL);

	{
		struct wc_pmem_config cfg = { .threshold = WC_PMEM_THRESHOLD_AUTO };

		ck_assert_int_eq(wc_pmem_configure(&cfg), 0);
		ck_assert_int_eq(wc_pmem_info(&info), 0);
		if (have(WC_CPU_CLFLUSHOPT) && cpu->line_size == 64)
			ck_assert_msg(strstr(info.reason, "calibrated (config)"), "%s", info.reason);
		api_copy_works();
	}
	ck_assert_int_eq(wc_pmem_configure(NULL), 0);
}
END_TEST

/* ---- granularity on real libpmem2 mappings ---- */

struct mapping {
	int fd;
	struct pmem2_source *src;
	struct pmem2_config *cfg;
	struct pmem2_map *map;
	unsigned char *addr;
	size_t len;
};

static void map_file(struct mapping *m, const char *name, const char *force_gran)
{
	char path[PATH_MAX];
	int ret;

	m->len = 4u << 20;
	setenv("PMEM2_FORCE_GRANULARITY", force_gran, 1);
	wc_test_path(path, sizeof(path), name);
	m->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(m->fd, 0);
	ck_assert_int_eq(ftruncate(m->fd, (off_t)m->len), 0);
	ck_assert_int_eq(pmem2_source_from_fd(&m->src, m->fd), 0);
	ck_assert_int_eq(pmem2_config_new(&m->cfg), 0);
	ck_assert_int_eq(pmem2_config_set_required_store_granularity(m->cfg, PMEM2_GRANULARITY_PAGE),
	                 0);
	ret = pmem2_map_new(&m->map, m->cfg, m->src);
	ck_assert_msg(ret == 0, "pmem2_map_new(%s): %s", force_gran, pmem2_errormsg());
	m->addr = pmem2_map_get_address(m->map);
}

static void unmap_file(struct mapping *m)
{
	pmem2_map_delete(&m->map);
	pmem2_config_delete(&m->cfg);
	pmem2_source_delete(&m->src);
	close(m->fd);
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
}

/* Copy and set through the policy into the mapping; check the file. */
static void policy_copies_into(const struct wc_persist_policy *p, struct mapping *m)
{
	static unsigned char src[9000], back[9000];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 13 + 5);
	wc_persist_copy(p, m->addr + 100, src, sizeof(src));
	wc_persist_set(p, m->addr + 100 + sizeof(src), 0x5a, 300);
	m->addr[20000] = 0x77;
	wc_persist_range(p, m->addr + 20000, 1);
	wc_persist_drain(p);
	ck_assert(memcmp(m->addr + 100, src, sizeof(src)) == 0);
	ck_assert_int_eq(pread(m->fd, back, sizeof(back), 100), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, src, sizeof(src)) == 0);
	ck_assert_int_eq(pread(m->fd, back, 300, 100 + sizeof(src)), 300);
	for (int i = 0; i < 300; i++)
		ck_assert(back[i] == 0x5a);
	ck_assert(m->addr[99] == 0 && m->addr[100 + sizeof(src) + 300] == 0);
}

START_TEST(test_granularity_byte)
{
	struct wc_persist_policy p;
	struct mapping m;

	map_file(&m, "gran-byte", "BYTE");
	ck_assert_int_eq(pmem2_map_get_store_granularity(m.map), PMEM2_GRANULARITY_BYTE);
	ck_assert_int_eq(wc_persist_policy_init(&p, NULL), 0);
	wc_persist_policy_set_granularity(&p, WC_GRAN_BYTE, NULL, NULL);
	ck_assert_uint_eq(p.gran, WC_GRAN_BYTE);
	ck_assert_ptr_eq(p.copy_small, wc_plain_copy);
	ck_assert_ptr_eq(p.copy_large, wc_plain_copy);
	ck_assert_ptr_eq(p.set_large, wc_plain_set);
	ck_assert_ptr_eq(p.flush, wc_persist_noop);
#if defined(__x86_64__)
	ck_assert_ptr_eq(p.drain, wc_drain_sfence); /* the fence stays */
#endif
	ck_assert_str_eq(p.info.small_strategy, "plain-stores");
	policy_copies_into(&p, &m);

	/* Back to CACHE_LINE: the engine's own choice again. */
	wc_persist_policy_set_granularity(&p, WC_GRAN_CACHE_LINE, NULL, NULL);
	ck_assert_ptr_eq(p.copy_small, p.line.copy_small);
	ck_assert_ptr_ne(p.copy_small, wc_plain_copy);
	ck_assert_ptr_ne(p.flush, wc_persist_noop);
	ck_assert_str_eq(p.info.small_strategy, p.line.small_strategy);
	policy_copies_into(&p, &m);
	unmap_file(&m);
}
END_TEST

/* A PAGE flush that records what it was asked, then does libpmem2's. */
static pmem2_flush_fn real_page_flush;
static const void *flushed_addr;
static size_t flushed_len;
static unsigned flush_calls;

static void recording_flush(const void *addr, size_t n)
{
	flushed_addr = addr;
	flushed_len = n;
	flush_calls++;
	real_page_flush(addr, n);
}

START_TEST(test_granularity_page)
{
	struct wc_persist_policy p;
	struct mapping m;
	unsigned char src[5000];

	map_file(&m, "gran-page", "PAGE");
	ck_assert_int_eq(pmem2_map_get_store_granularity(m.map), PMEM2_GRANULARITY_PAGE);
	real_page_flush = pmem2_get_flush_fn(m.map);
	ck_assert_int_eq(wc_persist_policy_init(&p, NULL), 0);
	wc_persist_policy_set_granularity(&p, WC_GRAN_PAGE, recording_flush, pmem2_get_drain_fn(m.map));
	ck_assert_uint_eq(p.gran, WC_GRAN_PAGE);
	ck_assert_ptr_eq(p.flush, recording_flush);
	ck_assert_str_eq(p.info.small_strategy, "plain-stores+msync");

	/* Every copy and set hands its exact range to libpmem2's flush. */
	memset(src, 0x3c, sizeof(src));
	flush_calls = 0;
	wc_persist_copy(&p, m.addr + 4000, src, sizeof(src));
	ck_assert_uint_eq(flush_calls, 1);
	ck_assert_ptr_eq(flushed_addr, m.addr + 4000);
	ck_assert_uint_eq(flushed_len, sizeof(src));
	wc_persist_set(&p, m.addr + 70000, 1, 33);
	ck_assert_uint_eq(flush_calls, 2);
	ck_assert_ptr_eq(flushed_addr, m.addr + 70000);
	ck_assert_uint_eq(flushed_len, 33);
	policy_copies_into(&p, &m);

	/* With libpmem2's own functions, unwrapped. */
	wc_persist_policy_set_granularity(&p, WC_GRAN_PAGE, pmem2_get_flush_fn(m.map),
	                                pmem2_get_drain_fn(m.map));
	policy_copies_into(&p, &m);

	wc_persist_policy_set_granularity(&p, WC_GRAN_CACHE_LINE, NULL, NULL);
	ck_assert_ptr_eq(p.copy_large, p.line.copy_large);
	unmap_file(&m);
}
END_TEST

START_TEST(test_granularity_cache_line)
{
	struct wc_persist_policy p, before;
	struct mapping m;

	map_file(&m, "gran-cl", "CACHE_LINE");
	ck_assert_int_eq(pmem2_map_get_store_granularity(m.map), PMEM2_GRANULARITY_CACHE_LINE);
	ck_assert_int_eq(wc_persist_policy_init(&p, NULL), 0);
	before = p;
	wc_persist_policy_set_granularity(&p, WC_GRAN_CACHE_LINE, NULL, NULL);
	ck_assert(memcmp(&before, &p, sizeof(p)) == 0);
	policy_copies_into(&p, &m);
	unmap_file(&m);
}
END_TEST

#if defined(__x86_64__)
/* The real first-use measurement, on this machine: the policy it picks
 * copies correctly and says where it came from (never how fast). */
START_TEST(test_first_use_real)
{
	struct wc_pmem_info info;

	WC_TEST_NEED_CPU(WC_CPU_CLFLUSHOPT, 64);
	clear_env();
	wc_calibration_forget();
	wc_persist_default_reset();
	ck_assert_int_eq(wc_pmem_info(&info), 0);
	ck_assert_msg(strstr(info.reason, "measured at first use in"), "%s", info.reason);
	ck_assert_msg(info.threshold == SIZE_MAX || (info.threshold >= 64 && info.threshold <= 65536),
	              "threshold %zu", info.threshold);
	ck_assert_msg(strstr(info.reason, info.small_strategy), "%s", info.reason);
	api_copy_works();
	clear_env();
}
END_TEST

static void *first_copy(void *arg)
{
	(void)arg;
	api_copy_works();
	return NULL;
}

/* Threads racing to the first copy on an unknown CPU: one measurement, and
 * every thread copies with its answer. */
START_TEST(test_first_use_once)
{
	pthread_t t[4];
	struct wc_pmem_info info;

	clear_env();
	pretend_setup();
	pretend_threshold = SIZE_MAX;
	wc_persist_default_reset();
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, first_copy, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(pretend_calls, 1);
	ck_assert_int_eq(wc_pmem_info(&info), 0);
	ck_assert_uint_eq(info.threshold, SIZE_MAX);
	ck_assert_msg(strstr(info.reason, "measured at first use"), "%s", info.reason);
	/* A reset re-reads the environment but keeps the measurement. */
	wc_persist_default_reset();
	ck_assert_int_eq(wc_pmem_info(&info), 0);
	ck_assert_uint_eq(pretend_calls, 1);
	pretend_teardown();
	clear_env();
}
END_TEST
#endif

static Suite *flush_policy_suite(void)
{
	Suite *s = suite_create("flush-policy");
	TCase *tc;

	tc = tcase_create("pretended-cpu");
#if defined(__x86_64__)
	tcase_add_checked_fixture(tc, pretend_setup, pretend_teardown);
	tcase_add_test(tc, test_unknown_cpu_measured);
	tcase_add_test(tc, test_quirk_table_measures);
	tcase_add_test(tc, test_measured_width);
	tcase_add_test(tc, test_default_rule);
	tcase_add_test(tc, test_no_clflushopt);
	tcase_add_test(tc, test_no_flush_insn_at_all);
	tcase_add_test(tc, test_line_size_128);
	tcase_add_test(tc, test_no_avx);
	tcase_add_test(tc, test_clwb);
	tcase_add_test(tc, test_force);
	tcase_add_test(tc, test_threshold);
	tcase_add_test(tc, test_quirk);
	tcase_add_test(tc, test_bad_config);
#else
	tcase_add_test(tc, test_generic_policy);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("environment");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_env_bad_values);
	tcase_add_test(tc, test_env_bad_value_copies_still_work);
	tcase_add_test(tc, test_env_good_values);
	tcase_add_test(tc, test_init_follows_configure);
	tcase_add_test(tc, test_info_and_calibrate);
#if defined(__x86_64__)
	tcase_add_test(tc, test_first_use_real);
	tcase_add_test(tc, test_calibration_widths);
	tcase_add_test(tc, test_first_use_once);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("granularity");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_granularity_byte);
	tcase_add_test(tc, test_granularity_page);
	tcase_add_test(tc, test_granularity_cache_line);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(flush_policy_suite());
}
