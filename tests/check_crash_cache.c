/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_crash_cache.c -- the quick power-failure sweep over the real cache
 * (the long one is crash-sweep): every workload of crash_workloads.c with a
 * fixed seed, crash images at every drain and between drains, each
 * recovered and checked, recoveries crashed too.  Then the sabotaged run
 * (a fence that takes no effect) that must fail, and every regression kept
 * under tests/crash-regressions/ (an image replayed, or a sweep rerun).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crash_run.h"
#include "testmain.h"

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
/* The identity: recorded at format, re-bound clean and forced; every
 * image opens with its origin (or, in a re-bind, the one before) only. */
START_TEST(test_sweep_rebind) { sweep("rebind", 90, 300); }
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

/* A folder in the scratch space holding rerun.txt = `line`. */
static void write_rerun(char *dir, size_t len, const char *name, const char *line)
{
	char path[PATH_MAX + 16];
	FILE *f;

	wc_test_path(dir, len, name);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/rerun.txt", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(line, f);
	ck_assert_int_eq(fclose(f), 0);
}

#define RERUN_OPTS "random-per-point 2 written-per-mille 50 recovery-every 2 probe-every 4"

/* A rerun must be able to fail: the same small sweep passes, and fails
 * once every third fence takes no effect. */
START_TEST(test_rerun_can_fail)
{
	char dir[PATH_MAX], why[1024];

	write_rerun(dir, sizeof(dir), "rerun-clean",
	            "# a comment\n\nworkload overwrite seed 9 images 300 " RERUN_OPTS "\n");
	ck_assert_msg(crash_replay(dir, wc_test_dir(), why, sizeof(why)) == 0, "%s", why);
	ck_assert_ptr_nonnull(strstr(why, "violations=0"));

	write_rerun(dir, sizeof(dir), "rerun-sabotaged",
	            "workload overwrite seed 9 images 300 " RERUN_OPTS " sabotage 3\n");
	ck_assert_int_eq(crash_replay(dir, wc_test_dir(), why, sizeof(why)), 1);
	ck_assert_msg(strstr(why, "VIOLATION") != NULL, "%s", why);
}
END_TEST

/* A rerun line that does not say exactly what to run is refused. */
START_TEST(test_rerun_refuses_bad_lines)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
		{ "workload overwrite seed 9 images 300\n", "missing random-per-point" },
		{ "seed 9 images 300 " RERUN_OPTS "\n", "missing workload" },
		{ "workload nosuch seed 9 images 300 " RERUN_OPTS "\n", "unknown workload" },
		{ "workload overwrite seed 9 images 0 " RERUN_OPTS "\n", "images" },
		{ "workload overwrite seed 9x images 30 " RERUN_OPTS "\n", "seed" },
		{ "workload overwrite seed 9 images 30 colour 3 " RERUN_OPTS "\n", "unknown option" },
		{ "workload overwrite seed 9 images 30 " RERUN_OPTS " sabotage\n", "has no value" },
		{ "workload overwrite seed 9 images 30 " RERUN_OPTS "\n"
		  "workload overwrite seed 9 images 30 " RERUN_OPTS "\n", "more than one" },
		{ "# only a comment\n", "no sweep line" },
	};
	char dir[PATH_MAX], name[32], why[1024];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(name, sizeof(name), "bad-rerun-%zu", i);
		write_rerun(dir, sizeof(dir), name, bad[i].line);
		ck_assert_int_eq(crash_replay(dir, wc_test_dir(), why, sizeof(why)), -EINVAL);
		ck_assert_msg(strstr(why, bad[i].why) != NULL, "line %zu: '%s' lacks '%s'", i, why,
		              bad[i].why);
	}
	/* Neither rerun.txt nor an image. */
	wc_test_path(dir, sizeof(dir), "empty-regression");
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_lt(crash_replay(dir, wc_test_dir(), why, sizeof(why)), 0);
}
END_TEST

static int dumped(const struct dirent *de)
{
	return strncmp(de->d_name, "overwrite-", 10) == 0;
}

/* Image replay (for recovery bugs): an image dumped by the sabotaged sweep
 * loses data that no recovery can bring back, so its replay must fail. */
START_TEST(test_image_replay_fails_on_a_violation)
{
	char dumps[PATH_MAX], dir[PATH_MAX + 300], why[1024];
	struct crash_result r = { 0 };
	struct dirent **names;
	struct crash_opts o;
	int n;

	quick_opts(&o, 9);
	o.sabotage_drain_every = 3;
	o.log = NULL;
	o.dump_dir = wc_test_path(dumps, sizeof(dumps), "dumps");
	ck_assert_int_eq(crash_run("overwrite", &o, &r), 0);
	ck_assert_uint_gt(r.violations, 0);
	n = scandir(dumps, &names, dumped, alphasort);
	ck_assert_int_gt(n, 0);
	snprintf(dir, sizeof(dir), "%s/%s", dumps, names[0]->d_name);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	ck_assert_int_eq(crash_replay(dir, wc_test_dir(), why, sizeof(why)), 1);
	ck_assert_msg(strstr(why, "images=1 violations=1") != NULL, "%s", why);
}
END_TEST

/*
 * tests/crash-regressions/: one folder per bug.  A recovery bug keeps the
 * image that recovery mishandled (cache.img.gz, origin.img.gz, model.txt,
 * case.txt) and is replayed; a protocol bug keeps rerun.txt, the sweep that
 * found it, which is run again and must find nothing (see crash_run.c).
 * The folders are listed before the runner forks, one loop test each.
 */
#define MAX_REGRESSIONS 64

static char regression_dir[PATH_MAX];
static char *regressions[MAX_REGRESSIONS];
static int n_regressions;

static int visible(const struct dirent *de)
{
	return de->d_name[0] != '.';
}

static void list_regressions(void)
{
	const char *src = getenv("WC_TEST_SRCDIR");
	struct dirent **names;
	int n;

	snprintf(regression_dir, sizeof(regression_dir), "%s/tests/crash-regressions",
	         src ? src : ".");
	n = scandir(regression_dir, &names, visible, alphasort);
	for (int i = 0; i < n; i++) {
		if (n_regressions < MAX_REGRESSIONS)
			regressions[n_regressions++] = strdup(names[i]->d_name);
		free(names[i]);
	}
	if (n > 0)
		free(names);
}

START_TEST(test_regressions_present)
{
	ck_assert_msg(n_regressions > 0, "no regression folder in %s", regression_dir);
	ck_assert_msg(n_regressions < MAX_REGRESSIONS, "more than %d regression folders",
	              MAX_REGRESSIONS - 1);
}
END_TEST

START_TEST(test_regression)
{
	char path[PATH_MAX + 300], why[1024] = "";
	int ret;

	ck_assert_int_lt(_i, n_regressions);
	ck_assert_ptr_nonnull(regressions[_i]);
	snprintf(path, sizeof(path), "%s/%s", regression_dir, regressions[_i]);
	ret = crash_replay(path, wc_test_dir(), why, sizeof(why));
	fprintf(stderr, "# %s: %s\n", regressions[_i], why);
	ck_assert_msg(ret == 0, "%s: %d %s", path, ret, why);
}
END_TEST

static Suite *crash_cache_suite(void)
{
	Suite *s = suite_create("crash-cache");
	TCase *tc = tcase_create("sweep");
	TCase *reg = tcase_create("regressions");

	/* Each sweep takes a few seconds (more under sanitizers); the whole
	 * program stays under a minute on an idle 2-core machine.  The limit
	 * leaves room for a loaded one: make -j2 check runs the Ceph OSD and
	 * nbdkit tests beside it, and 60 s expired there. */
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_sweep_format);
	tcase_add_test(tc, test_sweep_overwrite);
	tcase_add_test(tc, test_sweep_discard);
	tcase_add_test(tc, test_sweep_writeback);
	tcase_add_test(tc, test_sweep_cleaner);
	tcase_add_test(tc, test_sweep_reopen);
	tcase_add_test(tc, test_sweep_rebind);
	tcase_add_test(tc, test_sweep_random);
	tcase_add_test(tc, test_sweep_random4k);
	tcase_add_test(tc, test_sweep_catches_missing_fence);
	suite_add_tcase(s, tc);

	/* A rerun is a few thousand images: the three take ~1.5 s together
	 * (~3 s under ASan+UBSan) on a 2-core machine. */
	tcase_set_timeout(reg, 60);
	tcase_add_test(reg, test_rerun_can_fail);
	tcase_add_test(reg, test_rerun_refuses_bad_lines);
	tcase_add_test(reg, test_image_replay_fails_on_a_violation);
	tcase_add_test(reg, test_regressions_present);
	tcase_add_loop_test(reg, test_regression, 0, n_regressions);
	suite_add_tcase(s, reg);
	return s;
}

int main(void)
{
	int ret;

	list_regressions();
	ret = wc_test_main(crash_cache_suite());
	for (int i = 0; i < n_regressions; i++)
		free(regressions[i]);
	return ret;
}
