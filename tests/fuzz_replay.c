/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_replay.c -- the plain build of the fuzz harnesses (fuzz_replay.h).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz_replay.h"

#define OUTCOME_LEN 200

/* Each input runs in a child, so that a crash (abort, sanitizer report,
 * signal) is one failed TAP line and the remaining inputs still run. */
static bool replay_one(const struct fuzz_harness *h, const char *path, char *outcome, size_t len)
{
	uint8_t *buf = NULL;
	int pipefd[2], status;
	long size = 0;
	ssize_t got;
	FILE *f;
	pid_t pid;

	f = fopen(path, "rb");
	if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
		buf = malloc((size_t)size + 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		snprintf(outcome, len, "unreadable");
		if (f)
			fclose(f);
		free(buf);
		return false;
	}
	fclose(f);
	if (pipe(pipefd) != 0) {
		free(buf);
		snprintf(outcome, len, "pipe: %s", strerror(errno));
		return false;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		const char *what;

		close(pipefd[0]);
		alarm(60); /* a hang is a failed line (signal 14), not a stuck make check */
		LLVMFuzzerTestOneInput(buf, (size_t)size);
		what = h->outcome();
		if (write(pipefd[1], what, strlen(what)) < 0)
			_exit(3);
		_exit(0); /* the parent owns the image file */
	}
	close(pipefd[1]);
	free(buf);
	got = pid > 0 ? read(pipefd[0], outcome, len - 1) : -1;
	outcome[got > 0 ? got : 0] = '\0';
	close(pipefd[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		snprintf(outcome, len, "fork/wait failed");
		return false;
	}
	if (WIFSIGNALED(status)) {
		snprintf(outcome, len, "crashed with signal %d (the harness prints why)", WTERMSIG(status));
		return false;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(outcome, len, "exited with status %d", WEXITSTATUS(status));
		return false;
	}
	return true;
}

/* Regular files only: a folder of another harness's seeds beside them is
 * not an input. */
static int is_input(const struct dirent *d)
{
	return d->d_name[0] != '.' && (d->d_type == DT_REG || d->d_type == DT_UNKNOWN);
}

static int replay_dir(const struct fuzz_harness *h, const char *dir)
{
	struct dirent **names;
	int n, failed = 0;

	h->setup(); /* in the parent: one image file, removed at its exit */
	n = scandir(dir, &names, is_input, alphasort);
	if (n < 0) {
		printf("1..0 # SKIP no corpus at %s\n", dir);
		return 0;
	}
	printf("1..%d\n", n);
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX + 264], outcome[OUTCOME_LEN];
		bool ok;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		ok = replay_one(h, path, outcome, sizeof(outcome));
		printf("%s %d - %s: %s\n", ok ? "ok" : "not ok", i + 1, names[i]->d_name, outcome);
		failed += !ok;
		free(names[i]);
	}
	free(names);
	return failed;
}

int fuzz_replay_main(const struct fuzz_harness *h, int argc, char **argv)
{
	const char *src = getenv("WC_TEST_SRCDIR");
	char dir[PATH_MAX];
	int ret;

	if (argc == 3 && strcmp(argv[1], "--make-corpus") == 0) {
		ret = h->make_corpus(argv[2]);
		if (ret)
			fprintf(stderr, "%s: writing the corpus into %s failed\n", argv[0], argv[2]);
		return ret ? 1 : 0;
	}
	if (argc == 2)
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	else
		snprintf(dir, sizeof(dir), "%s/%s", src ? src : ".", h->corpus);
	ret = replay_dir(h, dir);
	return ret ? 1 : 0;
}
