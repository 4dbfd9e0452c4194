/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testutil.h -- shared by the Check programs: a scratch folder under
 * /dev/shm (so CACHE_LINE granularity can be forced on its files), removed
 * when the process that created it exits.  Check forks one child per test;
 * the children inherit the folder and never remove it.
 */
#ifndef WC_TESTUTIL_H
#define WC_TESTUTIL_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char wc_test_dir_[PATH_MAX];
static pid_t wc_test_owner_;

static inline void wc_test_cleanup_(void)
{
	char cmd[PATH_MAX + 16];

	if (getpid() != wc_test_owner_ || !wc_test_dir_[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", wc_test_dir_);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", wc_test_dir_);
}

/* The scratch folder, created at first call (call it from main, before the
 * Check runner forks, so every test shares one folder). */
static inline const char *wc_test_dir(void)
{
	if (!wc_test_dir_[0]) {
		snprintf(wc_test_dir_, sizeof(wc_test_dir_), "/dev/shm/wctest-XXXXXX");
		if (!mkdtemp(wc_test_dir_)) {
			perror("mkdtemp /dev/shm/wctest-XXXXXX");
			exit(99);
		}
		wc_test_owner_ = getpid();
		atexit(wc_test_cleanup_);
	}
	return wc_test_dir_;
}

/* "<scratch>/<name>" in a static buffer per call site is error-prone, so the
 * caller provides the buffer. */
static inline char *wc_test_path(char *buf, size_t len, const char *name)
{
	if ((size_t)snprintf(buf, len, "%s/%s", wc_test_dir(), name) >= len) {
		fprintf(stderr, "scratch path too long: %s/%s\n", wc_test_dir(), name);
		exit(99);
	}
	return buf;
}

#ifdef CHECK_H
/* The main() of a Check program: one scratch folder for all its tests
 * (made before the runner forks), run them, exit non-zero on any failure. */
static inline int wc_test_main(Suite *suite)
{
	SRunner *sr = srunner_create(suite);
	int failed;

	wc_test_dir();
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
#endif

#endif
