/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testutil.h -- the scratch folder of a test program: one folder under
 * /dev/shm (so CACHE_LINE granularity can be forced on its files), removed
 * when the process that created it exits.  Check forks one child per test;
 * the children inherit the folder and never remove it.  No Check here: the
 * sweep and the kill -9 loop use it too.
 */
#ifndef WC_TESTUTIL_H
#define WC_TESTUTIL_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The scratch folder, created at first call (call it before the Check
 * runner forks, so every test shares one folder; wc_test_main does). */
const char *wc_test_dir(void);

/* "<scratch>/<name>" into the caller's buffer (a static buffer per call
 * site is error-prone); exits 99 if it does not fit. */
char *wc_test_path(char *buf, size_t len, const char *name);

#endif
