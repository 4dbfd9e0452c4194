/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testmain.h -- the main() of the Check programs, and how a test that
 * cannot run here says so.
 *
 * Each program builds its suite(s) and returns wc_test_main(suite, ...).
 * A test that needs what this machine lacks (a CPU feature, a loop device)
 * calls WC_TEST_SKIP("why") instead of passing without testing: automake's
 * TAP driver then shows it as SKIP with the reason.
 */
#ifndef WC_TESTMAIN_H
#define WC_TESTMAIN_H

#include <check.h>

#include "testutil.h"

/* Make the scratch folder (before the runner forks, so that every test
 * shares it), run the suites with Check's environment (CK_RUN_SUITE,
 * CK_RUN_CASE, CK_FORK, CK_VERBOSITY, timeouts, ...), write the TAP that
 * CK_TAP_LOG_FILE_NAME asks for ("-" is stdout) with skipped tests marked
 * "# SKIP reason", and return EXIT_FAILURE if any test failed.  Without
 * CK_TAP_LOG_FILE_NAME the skipped tests are listed on stdout. */
int wc_test_main_(Suite *first, ...);
#define wc_test_main(...) wc_test_main_(__VA_ARGS__, (Suite *)NULL)

/* The whole program cannot run here: the TAP plan "1..0 # SKIP why" (exit
 * 0, which the TAP driver reports as one SKIP).  Call it instead of
 * wc_test_main. */
int wc_test_skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Inside a test (in its own function, not a fixture): record it as
 * skipped, with why, and return from it.  A test that fails after its
 * skip (say, in its teardown) still fails. */
#define WC_TEST_SKIP(...)                         \
	do {                                      \
		wc_test_skip_(__VA_ARGS__);       \
		return;                           \
	} while (0)
void wc_test_skip_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
