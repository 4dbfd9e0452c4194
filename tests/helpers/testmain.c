/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testmain.c -- the main() of the Check programs (see the header).
 */
#include <check.h>
#include <stdlib.h>

#include "testmain.h"

int wc_test_main(Suite *suite)
{
	SRunner *sr = srunner_create(suite);
	int failed;

	wc_test_dir();
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
