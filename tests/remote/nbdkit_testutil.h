/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nbdkit_testutil.h -- nbdkit servers for the Check programs of the NBD
 * origin (check_origin_nbd, check_cache_nbd): started on a unix socket in
 * the scratch folder, in the foreground with --exit-with-parent, so that a
 * test that fails (Check's child exits) takes its server with it; and the
 * export read back through libnbd alone, without the backend under test.
 */
#ifndef WC_NBDKIT_TESTUTIL_H
#define WC_NBDKIT_TESTUTIL_H

#include <check.h>
#include <libnbd.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "origin_testutil.h"

#define NBDKIT_MAX_ARGS 24

struct nbdkit {
	pid_t pid;
	char dir[TEST_PATH_LEN];
	char sock[TEST_PATH_LEN + 16];
	char uri[TEST_PATH_LEN + 64];
};

/* main() skips the whole program without it (wc_test_skip_all). */
static inline bool nbdkit_installed(void)
{
	return system("nbdkit --version >/dev/null 2>&1") == 0;
}

static inline void nbdkit_wait_ready(struct nbdkit *k, const char *pidfile)
{
	struct stat st;

	for (int i = 0; i < 1000; i++) {
		int status;

		if (stat(pidfile, &st) == 0 && st.st_size > 0)
			return;
		if (waitpid(k->pid, &status, WNOHANG) == k->pid) {
			char cmd[TEST_PATH_LEN + 64];

			snprintf(cmd, sizeof(cmd), "sed 's/^/# nbdkit: /' '%s/log' >&2", k->dir);
			if (system(cmd) != 0)
				fprintf(stderr, "# (no nbdkit log)\n");
			ck_abort_msg("nbdkit exited at start (status %d)", status);
		}
		usleep(10000);
	}
	ck_abort_msg("nbdkit did not write %s within 10 s", pidfile);
}

/* Serve `args` (plugin, filters, parameters; NULL-terminated) on
 * <scratch>/<name>/sock; export `export_name` in k->uri ("" = default). */
static inline void nbdkit_start_export(struct nbdkit *k, const char *name, const char *export_name,
                                       const char *const *args)
{
	char pidfile[TEST_PATH_LEN + 16], log[TEST_PATH_LEN + 16];
	const char *argv[NBDKIT_MAX_ARGS + 8];
	int n = 0;

	wc_test_path(k->dir, sizeof(k->dir), name);
	mkdir(k->dir, 0700);
	snprintf(k->sock, sizeof(k->sock), "%s/sock", k->dir);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", k->dir);
	snprintf(log, sizeof(log), "%s/log", k->dir);
	snprintf(k->uri, sizeof(k->uri), "nbd+unix:///%s?socket=%s", export_name, k->sock);
	unlink(k->sock);
	unlink(pidfile);
	argv[n++] = "nbdkit";
	argv[n++] = "-f";
	argv[n++] = "--exit-with-parent";
	argv[n++] = "-U";
	argv[n++] = k->sock;
	argv[n++] = "-P";
	argv[n++] = pidfile;
	for (int i = 0; args[i]; i++) {
		ck_assert_int_lt(i, NBDKIT_MAX_ARGS);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	k->pid = fork();
	ck_assert_int_ge(k->pid, 0);
	if (k->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp("nbdkit", (char *const *)argv);
		_exit(127);
	}
	nbdkit_wait_ready(k, pidfile);
}

static inline void nbdkit_start(struct nbdkit *k, const char *name, const char *const *args)
{
	nbdkit_start_export(k, name, "", args);
}

/* Every thread of `pid` stopped: SIGSTOP takes effect a little after
 * kill() returns, and a request sent meanwhile would still be served. */
static inline void wait_stopped(pid_t pid)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "! grep -qv '^[^)]*) T' /proc/%d/task/*/stat", (int)pid);
	for (int i = 0; i < 200; i++) {
		if (system(cmd) == 0)
			return;
		usleep(10000);
	}
	ck_abort_msg("nbdkit %d did not stop within 2 s", (int)pid);
}

/* Send `sig`; for SIGSTOP, wait until the server stopped; for a deadly
 * one, until it is gone. */
static inline void nbdkit_signal(struct nbdkit *k, int sig)
{
	if (k->pid <= 0)
		return;
	ck_assert_int_eq(kill(k->pid, sig), 0);
	if (sig == SIGSTOP)
		wait_stopped(k->pid);
	if (sig == SIGSTOP || sig == SIGCONT)
		return;
	ck_assert_int_eq(waitpid(k->pid, NULL, 0), k->pid);
	k->pid = 0;
}

static inline void nbdkit_stop(struct nbdkit *k)
{
	nbdkit_signal(k, SIGTERM);
}

/* Read the export with libnbd alone. */
static inline void export_read(const char *uri, void *buf, size_t len, uint64_t off)
{
	struct nbd_handle *h = nbd_create();

	ck_assert_ptr_nonnull(h);
	ck_assert_msg(nbd_connect_uri(h, uri) == 0, "connect %s: %s", uri, nbd_get_error());
	for (size_t done = 0; done < len;) {
		size_t n = len - done < (16u << 20) ? len - done : (16u << 20);

		ck_assert_msg(nbd_pread(h, (char *)buf + done, n, off + done, 0) == 0, "pread: %s",
		              nbd_get_error());
		done += n;
	}
	nbd_close(h);
}

/* Descriptors open in this process: what a failed open must leave. */
static inline int open_fds(void)
{
	char cmd[64];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls /proc/%d/fd | wc -l", (int)getpid());
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* open_fds() once it is back to `want`, else what it still is after a
 * second: another thread (libnbd's, the sanitizer's) may hold a
 * descriptor for a moment -- the ASan build once counted one more -- while
 * a leaked one stays. */
static inline int open_fds_settled(int want)
{
	int n = open_fds();

	for (int i = 0; i < 100 && n != want; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		n = open_fds();
	}
	return n;
}

#endif
