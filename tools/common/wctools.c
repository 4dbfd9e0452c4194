/* SPDX-License-Identifier: BSD-3-Clause */
/* wctools.c -- sizes, options, progress, emulated pmem and scratch files
 * for the tools (see wctools.h; the JSON writer is json.c). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wcadmin.h"
#include "wctools.h"

/* ---- sizes --------------------------------------------------------------- */

int wct_parse_size(const char *cmd, const char *name, const char *arg, uint64_t min,
                   uint64_t max, uint64_t *out)
{
	const char *why = NULL;
	char lo[32], hi[32];
	uint64_t v;

	if (wcadm_size_parse(arg, &v, &why) != 0) {
		fprintf(stderr, "%s: --%s %s: %s\n", cmd, name, arg, why);
		return -1;
	}
	if (v < min || v > max) {
		wct_size_str(lo, sizeof(lo), min);
		wct_size_str(hi, sizeof(hi), max);
		if (max == UINT64_MAX)
			fprintf(stderr, "%s: --%s %s: expected a size of at least %s\n", cmd, name, arg, lo);
		else
			fprintf(stderr, "%s: --%s %s: expected a size in %s..%s\n", cmd, name, arg, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int wct_parse_uint(const char *cmd, const char *name, const char *arg, uint64_t min,
                   uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || *arg < '0' || *arg > '9' || v < min || v > max) {
		fprintf(stderr, "%s: --%s %s: expected an integer in %llu..%llu\n", cmd, name, arg,
		        (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

const char *wct_size_str(char *buf, size_t len, uint64_t bytes)
{
	return wcadm_size_format(buf, len, bytes);
}

/* ---- options ------------------------------------------------------------- */

#define WCT_MAX_OPTS 40
/* getopt_long's value for --help: above every table index (1..n). */
#define WCT_OPT_HELP 1000

static int opt_value(const char *cmd, const struct wct_opt *o, const char *arg)
{
	uint64_t v;

	switch (o->kind) {
	case WCT_FLAG:
		*(bool *)o->dst = true;
		return 0;
	case WCT_STR:
		*(const char **)o->dst = arg;
		return 0;
	case WCT_UINT:
	case WCT_U64:
		if (wct_parse_uint(cmd, o->name, arg, o->min, o->max, &v))
			return -1;
		if (o->kind == WCT_UINT)
			*(unsigned *)o->dst = (unsigned)v;
		else
			*(uint64_t *)o->dst = v;
		return 0;
	case WCT_SIZE:
		return wct_parse_size(cmd, o->name, arg, o->min, o->max, o->dst);
	case WCT_DOUBLE: {
		char *end;
		double d = strtod(arg, &end);

		if (*end || end == arg || !(d > (double)o->min && d <= (double)o->max)) {
			fprintf(stderr, "%s: --%s %s: expected %llu < value <= %llu\n", cmd, o->name,
			        arg, (unsigned long long)o->min, (unsigned long long)o->max);
			return -1;
		}
		*(double *)o->dst = d;
		return 0;
	}
	case WCT_CHOICE:
		for (unsigned i = 0; o->choices[i]; i++)
			if (!strcmp(arg, o->choices[i])) {
				*(unsigned *)o->dst = i;
				return 0;
			}
		fprintf(stderr, "%s: --%s %s: expected", cmd, o->name, arg);
		for (unsigned i = 0; o->choices[i]; i++)
			fprintf(stderr, "%s %s", i ? (o->choices[i + 1] ? "," : " or") : "",
			        o->choices[i]);
		fputc('\n', stderr);
		return -1;
	}
	return -1;
}

int wct_opts_parse(const char *cmd, const struct wct_opt *opts, int argc, char **argv,
                   void (*usage)(FILE *), bool positional)
{
	struct option lo[WCT_MAX_OPTS + 2];
	unsigned n = 0;
	int c;

	for (; opts[n].name && n < WCT_MAX_OPTS; n++)
		lo[n] = (struct option){ opts[n].name,
		                         opts[n].kind == WCT_FLAG ? no_argument : required_argument,
		                         NULL, (int)n + 1 };
	lo[n] = (struct option){ "help", no_argument, NULL, WCT_OPT_HELP };
	lo[n + 1] = (struct option){ NULL, 0, NULL, 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		const struct wct_opt *o;

		if (c == WCT_OPT_HELP) {
			usage(stdout);
			exit(0);
		}
		if (c < 1 || c > (int)n) {
			usage(stderr);
			return 2;
		}
		o = &opts[c - 1];
		if (opt_value(cmd, o, optarg))
			return 2;
		if (o->given)
			*o->given = true;
	}
	if (!positional && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", cmd, argv[optind]);
		return 2;
	}
	return 0;
}

/* ---- progress, time -------------------------------------------------------- */

double wct_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static bool progress_open;

void wct_progress(const char *fmt, ...)
{
	bool tty = isatty(STDERR_FILENO);
	va_list ap;

	if (tty)
		fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (!tty)
		fputc('\n', stderr);
	progress_open = tty;
	fflush(stderr);
}

void wct_progress_done(void)
{
	if (progress_open)
		fputs("\r\033[K", stderr);
	progress_open = false;
	fflush(stderr);
}

/* ---- emulated pmem ----------------------------------------------------------- */

bool wct_pmem_emulate(void)
{
	if (getenv("PMEM2_FORCE_GRANULARITY"))
		return false;
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
	return true;
}

/* ---- scratch files ------------------------------------------------------------ */

#define WCT_SCRATCH_MAX 4
/* Read by the signal handler: plain pointers to strings that outlive it. */
static const char *volatile scratch[WCT_SCRATCH_MAX];

static void scratch_on_signal(int sig)
{
	for (unsigned i = 0; i < WCT_SCRATCH_MAX; i++)
		if (scratch[i])
			unlink(scratch[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

void wct_scratch_add(const char *path)
{
	for (unsigned i = 0; i < WCT_SCRATCH_MAX; i++)
		if (!scratch[i] || scratch[i] == path) {
			scratch[i] = path;
			break;
		}
	signal(SIGINT, scratch_on_signal);
	signal(SIGTERM, scratch_on_signal);
}

void wct_scratch_forget(const char *path)
{
	for (unsigned i = 0; i < WCT_SCRATCH_MAX; i++)
		if (scratch[i] == path)
			scratch[i] = NULL;
}

void wct_scratch_release(bool keep)
{
	for (unsigned i = 0; i < WCT_SCRATCH_MAX; i++) {
		if (scratch[i] && !keep)
			unlink(scratch[i]);
		scratch[i] = NULL;
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

int wct_scratch_claim(const char *cmd, const char *path, bool force, bool devices, bool *ours)
{
	struct stat st;

	*ours = false;
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			if (devices)
				return 0;
			fprintf(stderr, "%s: %s is not a regular file\n", cmd, path);
			return -1;
		}
		if (!force) {
			fprintf(stderr, "%s: %s exists; pass --force to overwrite it, or choose "
			        "another path\n", cmd, path);
			return -1;
		}
		if (unlink(path) != 0) {
			fprintf(stderr, "%s: remove %s: %s\n", cmd, path, strerror(errno));
			return -1;
		}
	} else if (errno != ENOENT) {
		fprintf(stderr, "%s: stat %s: %s\n", cmd, path, strerror(errno));
		return -1;
	}
	*ours = true;
	wct_scratch_add(path);
	return 0;
}

int wct_scratch_create(const char *cmd, const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);

	if (fd >= 0)
		wct_scratch_add(path);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
		fprintf(stderr, "%s: create %s of %llu bytes: %s\n", cmd, path,
		        (unsigned long long)size, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int wct_scratch_temp(const char *cmd, char *path, size_t len, const char *dir,
                     const char *prefix, uint64_t size)
{
	int fd;

	snprintf(path, len, "%s/%sXXXXXX", dir, prefix);
	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
		fprintf(stderr, "%s: scratch file %s: %s\n", cmd, path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		return -1;
	}
	return fd;
}
