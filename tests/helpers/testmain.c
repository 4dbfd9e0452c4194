/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testmain.c -- the main() of the Check programs (see the header).
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>

#include "testmain.h"

int wc_test_main_(Suite *first, ...)
{
	SRunner *sr = srunner_create(first);
	va_list ap;
	Suite *s;
	int failed;

	va_start(ap, first);
	while ((s = va_arg(ap, Suite *)) != NULL)
		srunner_add_suite(sr, s);
	va_end(ap);

	wc_test_dir();
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
