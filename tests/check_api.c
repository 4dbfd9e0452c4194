/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_api.c -- what an embedder relies on from wcache.h and libwcache(3),
 * through the shared library and the public header alone: the run-time
 * version.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testmain.h"
#include "wcache.h"

/* ------------------------------------------------------------- version */

START_TEST(test_version)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", WCACHE_VERSION_MAJOR, WCACHE_VERSION_MINOR,
	         WCACHE_VERSION_PATCH);
	ck_assert_ptr_nonnull(wc_version());
	ck_assert_str_eq(wc_version(), want);
	ck_assert_str_eq(wc_version(), WCACHE_VERSION_STRING);
	/* The same static string every time. */
	ck_assert_ptr_eq(wc_version(), wc_version());
}
END_TEST

static Suite *api_suite(void)
{
	Suite *s = suite_create("api");
	TCase *t = tcase_create("version");

	tcase_add_test(t, test_version);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return wc_test_main(api_suite());
}
