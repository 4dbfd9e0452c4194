/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testutil.c -- the scratch folder (see the header).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testutil.h"

static char test_dir[PATH_MAX];
static pid_t test_dir_owner;

static void test_dir_cleanup(void)
{
	char cmd[PATH_MAX + 16];

	/* Check's children run atexit handlers too: only the creator removes. */
	if (getpid() != test_dir_owner || !test_dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", test_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", test_dir);
}

const char *wc_test_dir(void)
{
	if (!test_dir[0]) {
		snprintf(test_dir, sizeof(test_dir), "/dev/shm/wctest-XXXXXX");
		if (!mkdtemp(test_dir)) {
			perror("mkdtemp /dev/shm/wctest-XXXXXX");
			exit(99);
		}
		test_dir_owner = getpid();
		atexit(test_dir_cleanup);
	}
	return test_dir;
}

char *wc_test_path(char *buf, size_t len, const char *name)
{
	if ((size_t)snprintf(buf, len, "%s/%s", wc_test_dir(), name) >= len) {
		fprintf(stderr, "scratch path too long: %s/%s\n", wc_test_dir(), name);
		exit(99);
	}
	return buf;
}
