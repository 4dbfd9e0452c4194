/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testmain.h -- the main() of the Check programs: each program builds its
 * suite(s) and returns wc_test_main(suite, ...).
 */
#ifndef WC_TESTMAIN_H
#define WC_TESTMAIN_H

#include <check.h>

#include "testutil.h"

/* Make the scratch folder (before the runner forks, so that every test
 * shares it), run the suites with Check's environment (CK_RUN_SUITE,
 * CK_RUN_CASE, CK_FORK, CK_VERBOSITY, CK_TAP_LOG_FILE_NAME, timeouts, ...),
 * free them, and return EXIT_FAILURE if any test failed. */
int wc_test_main_(Suite *first, ...);
#define wc_test_main(...) wc_test_main_(__VA_ARGS__, (Suite *)NULL)

#endif
