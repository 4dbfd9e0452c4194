/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testmain.h -- the main() of the Check programs.
 */
#ifndef WC_TESTMAIN_H
#define WC_TESTMAIN_H

#include <check.h>

#include "testutil.h"

/* One scratch folder for all the tests (made before the runner forks), run
 * them, exit non-zero on any failure. */
int wc_test_main(Suite *suite);

#endif
