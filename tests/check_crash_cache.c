/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_crash_cache.c -- the quick power-failure sweep over the real cache
 * (the long one is crash-sweep): every workload of crash_workloads.c with a
 * fixed seed, crash images at every drain and between drains, each
 * recovered and checked, recoveries crashed too.  Then the sabotaged run
 * (a fence that takes no effect) that must fail, and the replay of every
 * image kept under tests/crash-regressions/.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "crash_run.h"
#include "testutil.h"

static void quick_opts(struct crash_opts *o, uint64_t seed)
{
	memset(o, 0, sizeof(*o));
	o->seed = seed;
	o->random_per_point = 2;
	o->written_per_mille = 50;
	o->recovery_every = 2;
	o->probe_every = 4;
	o->scratch_dir = wc_test_dir();
	o->log = stderr;
}

#define SEEDS_PER_WORKLOAD 3

static void sweep(const char *workload, uint64_t seed, uint64_t min_images)
{
	struct crash_result r = { 0 };
	struct crash_opts o;

	for (uint64_t s = seed; s < seed + SEEDS_PER_WORKLOAD; s++) {
		quick_opts(&o, s);
		ck_assert_int_eq(crash_run(workload, &o, &r), 0);
	}
	fprintf(stderr, "# %s seeds %" PRIu64 "+%d: images=%" PRIu64 " (recovery %" PRIu64
	        ", refused torn formats %" PRIu64 ", probes %" PRIu64 ") drains=%" PRIu64
	        " violations=%" PRIu64 "\n", workload, seed, SEEDS_PER_WORKLOAD, r.images,
	        r.recovery_images, r.refused, r.probes, r.drains, r.violations);
	ck_assert_uint_eq(r.errors, 0);
	ck_assert_uint_eq(r.violations, 0);
	ck_assert_uint_ge(r.images, min_images);
	ck_assert_uint_gt(r.recovery_images, 0);
}

START_TEST(test_sweep_format)
{
	struct crash_result r = { 0 };
	struct crash_opts o;

	sweep("format", 1, 150);
	/* Crashes inside the format must have been refused, not opened. */
	quick_opts(&o, 1);
	ck_assert_int_eq(crash_run("format", &o, &r), 0);
	ck_assert_uint_gt(r.refused, 0);
}
END_TEST

START_TEST(test_sweep_overwrite) { sweep("overwrite", 20, 300); }
END_TEST
START_TEST(test_sweep_discard) { sweep("discard", 30, 300); }
END_TEST
START_TEST(test_sweep_writeback) { sweep("writeback", 40, 300); }
END_TEST
START_TEST(test_sweep_cleaner) { sweep("cleaner", 50, 300); }
END_TEST
START_TEST(test_sweep_reopen) { sweep("reopen", 60, 300); }
END_TEST
START_TEST(test_sweep_random) { sweep("random", 70, 300); }
END_TEST
START_TEST(test_sweep_random4k) { sweep("random4k", 80, 300); }
END_TEST

/* The sweep must be able to fail: every third fence of the workload
 * takes no effect, as if the cache had forgotten it. */
START_TEST(test_sweep_catches_missing_fence)
{
	struct crash_result r = { 0 };
	struct crash_opts o;

	quick_opts(&o, 9);
	o.sabotage_drain_every = 3;
	o.log = NULL;
	ck_assert_int_eq(crash_run("overwrite", &o, &r), 0);
	ck_assert_uint_eq(r.errors, 0);
	ck_assert_uint_gt(r.violations, 0);
}
END_TEST

START_TEST(test_regressions)
{
	const char *src = getenv("WC_TEST_SRCDIR");
	char dir[PATH_MAX], path[PATH_MAX + 300], why[512];
	unsigned replayed = 0;
	struct dirent *de;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/tests/crash-regressions", src ? src : ".");
	dp = opendir(dir);
	ck_assert_msg(dp != NULL, "no folder %s", dir);
	while ((de = readdir(dp)) != NULL) {
		int ret;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ret = crash_replay(path, wc_test_dir(), why, sizeof(why));
		ck_assert_msg(ret == 0, "%s: %d %s", path, ret, why);
		replayed++;
	}
	closedir(dp);
	fprintf(stderr, "# %u regression image(s) replayed\n", replayed);
	ck_assert_uint_gt(replayed, 0);
}
END_TEST

static Suite *crash_cache_suite(void)
{
	Suite *s = suite_create("crash-cache");
	TCase *tc = tcase_create("sweep");
	TCase *reg = tcase_create("regressions");

	/* Each sweep takes a few seconds (more under sanitizers); the whole
	 * program stays under a minute. */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_sweep_format);
	tcase_add_test(tc, test_sweep_overwrite);
	tcase_add_test(tc, test_sweep_discard);
	tcase_add_test(tc, test_sweep_writeback);
	tcase_add_test(tc, test_sweep_cleaner);
	tcase_add_test(tc, test_sweep_reopen);
	tcase_add_test(tc, test_sweep_random);
	tcase_add_test(tc, test_sweep_random4k);
	tcase_add_test(tc, test_sweep_catches_missing_fence);
	suite_add_tcase(s, tc);

	tcase_set_timeout(reg, 60);
	tcase_add_test(reg, test_regressions);
	suite_add_tcase(s, reg);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(crash_cache_suite());
	int failed;

	wc_test_dir();
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0;
}
