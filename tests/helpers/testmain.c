/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testmain.c -- the main() of the Check programs (see the header).
 *
 * Check has no "skipped" result, and its TAP output cannot mark one, so
 * the skip travels beside it:
 *   - wc_test_skip_ appends "<number>\t<test>\t<reason>" to a file in the
 *     scratch folder.  The test may run in a forked child, which the file
 *     outlives.  <number> is the results the runner had counted when it
 *     started the test, plus one: the number of the test's TAP line.
 *   - Check writes its TAP into the scratch folder.  After the run,
 *     wc_test_main copies it where CK_TAP_LOG_FILE_NAME asks, with each
 *     skipped test's "ok N - <file>:<case>:<test>: Passed" rewritten as
 *     "ok N - <file>:<case>:<test> # SKIP <reason>", which automake's TAP
 *     driver counts as SKIP.  The plan and every other line pass through,
 *     so the count of results is the same whatever is skipped.
 * The TAP reaches the driver when the program ends, not test by test.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testmain.h"

#define REASON_MAX 512

struct skip {
	int number;
	char *test, *reason;
};

/* The running runner: a forked test reads its copy to number itself. */
static SRunner *running;
static char skip_file[PATH_MAX + 64];

/* One line, no tab: the record's separators and TAP's line. */
static void one_line(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\r' || *s == '\t')
			*s = ' ';
}

void wc_test_skip_(const char *fmt, ...)
{
	char reason[REASON_MAX], line[REASON_MAX + 256];
	const char *test = tcase_name(); /* Check's name: the running test's */
	va_list ap;
	ssize_t w;
	int fd, n;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	one_line(reason);
	/* Never a silent pass: a skip that cannot be recorded fails.  No
	 * ck_assert on success: its checkpoint would name this file, not the
	 * test's, in the TAP line. */
	if (!running || !test)
		ck_abort_msg("skip outside wc_test_main: %s", reason);
	n = snprintf(line, sizeof(line), "%d\t%s\t%s\n", srunner_ntests_run(running) + 1, test,
	             reason);
	if (n <= 0 || (size_t)n >= sizeof(line))
		ck_abort_msg("skip record too long: %s", reason);
	fd = open(skip_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		ck_abort_msg("%s: %s", skip_file, strerror(errno));
	w = write(fd, line, (size_t)n);
	close(fd);
	if (w != n)
		ck_abort_msg("%s: short write", skip_file);
}

static struct skip *read_skips(size_t *count)
{
	FILE *f = fopen(skip_file, "r");
	struct skip *v = NULL;
	char *line = NULL;
	size_t cap = 0;

	*count = 0;
	if (!f)
		return NULL; /* nothing skipped */
	while (getline(&line, &cap, f) > 0) {
		char *test = strchr(line, '\t'), *reason = test ? strchr(test + 1, '\t') : NULL;
		struct skip *grown;

		if (!reason)
			continue;
		*test++ = '\0';
		*reason++ = '\0';
		reason[strcspn(reason, "\n")] = '\0';
		grown = realloc(v, (*count + 1) * sizeof(*v));
		if (!grown)
			break;
		v = grown;
		v[*count].number = atoi(line);
		v[*count].test = strdup(test);
		v[*count].reason = strdup(reason);
		(*count)++;
	}
	free(line);
	fclose(f);
	return v;
}

static const struct skip *find_skip(const struct skip *v, size_t count, int number)
{
	for (size_t i = 0; i < count; i++)
		if (v[i].number == number)
			return &v[i];
	return NULL;
}

/* Copy Check's TAP to `out` (NULL: none asked for), skips marked; list
 * them on stdout when no TAP goes there.  Returns the records that did not
 * match their line (a broken numbering: counted as failures). */
static int report(const char *tap, FILE *out, const struct skip *v, size_t count)
{
	FILE *in = fopen(tap, "r");
	char *line = NULL;
	size_t cap = 0;
	int bad = 0;

	if (!in) {
		fprintf(stderr, "%s: %s\n", tap, strerror(errno));
		return 1;
	}
	while (getline(&line, &cap, in) > 0) {
		const struct skip *sk;
		char key[256], *at;
		int number, desc = 0;

		if (sscanf(line, "ok %d - %n", &number, &desc) != 1 || desc == 0 ||
		    !(sk = find_skip(v, count, number))) {
			if (out)
				fputs(line, out);
			continue;
		}
		line[strcspn(line, "\n")] = '\0';
		/* Check's description is "<file>:<case>:<test>: <message>". */
		snprintf(key, sizeof(key), ":%s: ", sk->test);
		at = strstr(line + desc, key);
		if (!at) {
			bad++;
			if (out)
				fprintf(out, "not ok %d - %s (skipped as %s: the numbers disagree)\n",
				        number, line + desc, sk->test);
			continue;
		}
		at[strlen(key) - 2] = '\0';
		if (out)
			fprintf(out, "ok %d - %s # SKIP %s\n", number, line + desc, sk->reason);
		if (out != stdout)
			printf("SKIP: %s: %s\n", line + desc, sk->reason);
	}
	free(line);
	fclose(in);
	return bad;
}

static FILE *tap_output(void)
{
	const char *name = getenv("CK_TAP_LOG_FILE_NAME");
	FILE *f;

	if (!name || !*name)
		return NULL;
	if (strcmp(name, "-") == 0)
		return stdout;
	f = fopen(name, "w");
	if (!f)
		fprintf(stderr, "CK_TAP_LOG_FILE_NAME %s: %s\n", name, strerror(errno));
	return f;
}

int wc_test_main_(Suite *first, ...)
{
	SRunner *sr = srunner_create(first);
	char tap[PATH_MAX + 64];
	struct skip *skips;
	size_t nskips;
	va_list ap;
	Suite *s;
	FILE *out;
	int failed;

	va_start(ap, first);
	while ((s = va_arg(ap, Suite *)) != NULL)
		srunner_add_suite(sr, s);
	va_end(ap);

	wc_test_path(tap, sizeof(tap), ".check-tap");
	wc_test_path(skip_file, sizeof(skip_file), ".check-skipped");
	unlink(skip_file);
	/* Check's own TAP, to rewrite: it takes precedence over the variable. */
	srunner_set_tap(sr, tap);
	running = sr;
	srunner_run_all(sr, CK_ENV);
	running = NULL;
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);

	skips = read_skips(&nskips);
	out = tap_output();
	failed += report(tap, out, skips, nskips);
	if (out && out != stdout)
		fclose(out);
	fflush(stdout);
	for (size_t i = 0; i < nskips; i++) {
		free(skips[i].test);
		free(skips[i].reason);
	}
	free(skips);
	unlink(tap);
	unlink(skip_file);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int wc_test_skip_all(const char *fmt, ...)
{
	char reason[REASON_MAX];
	FILE *out = tap_output();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	one_line(reason);
	if (out) {
		fprintf(out, "1..0 # SKIP %s\n", reason);
		if (out != stdout)
			fclose(out);
	}
	if (out != stdout)
		printf("SKIP: %s\n", reason);
	return EXIT_SUCCESS;
}
