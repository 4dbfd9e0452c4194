/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c -- small helpers the wcbench subcommands share: sizes, medians,
 * JSON strings, progress lines and finding gnuplot.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "wcache.h"
#include "wcbench.h"

double wcb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int wcb_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && (strcasecmp(end, "ib") == 0 || strcasecmp(end, "b") == 0))
		end += strlen(end);
	else if (!shift && strcasecmp(end, "b") == 0)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

const char *wcb_size_str(char *buf, size_t len, uint64_t bytes)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double wcb_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void wcb_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

const char *wcb_gnuplot(void)
{
	static const char *const candidates[] = {
		"/usr/bin/gnuplot", "/usr/local/bin/gnuplot", "/bin/gnuplot",
	};

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

static int progress_open;

void wcb_progress(const char *fmt, ...)
{
	int tty = isatty(STDERR_FILENO);
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

void wcb_progress_done(void)
{
	if (progress_open)
		fputs("\r\033[K", stderr);
	progress_open = 0;
	fflush(stderr);
}

#define WCB_SCRATCH_MAX 4
static const char *volatile scratch[WCB_SCRATCH_MAX];

static void scratch_on_signal(int sig)
{
	for (unsigned i = 0; i < WCB_SCRATCH_MAX; i++)
		if (scratch[i])
			unlink(scratch[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

void wcb_scratch_add(const char *path)
{
	for (unsigned i = 0; i < WCB_SCRATCH_MAX; i++)
		if (!scratch[i]) {
			scratch[i] = path;
			break;
		}
	signal(SIGINT, scratch_on_signal);
	signal(SIGTERM, scratch_on_signal);
}

void wcb_scratch_forget(const char *path)
{
	for (unsigned i = 0; i < WCB_SCRATCH_MAX; i++)
		if (scratch[i] == path)
			scratch[i] = NULL;
}

void wcb_scratch_release(int keep)
{
	for (unsigned i = 0; i < WCB_SCRATCH_MAX; i++) {
		if (scratch[i] && !keep)
			unlink(scratch[i]);
		scratch[i] = NULL;
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

void wcb_json_policy(FILE *f, const struct wc_pmem_info *in)
{
	fprintf(f, "{\"small\": ");
	wcb_json_str(f, in->small_strategy);
	fprintf(f, ", \"large\": ");
	wcb_json_str(f, in->large_strategy);
	if (in->threshold == SIZE_MAX)
		fprintf(f, ", \"threshold\": null");
	else
		fprintf(f, ", \"threshold\": %zu", in->threshold);
	fprintf(f, ", \"reason\": ");
	wcb_json_str(f, in->reason);
	fprintf(f, "}");
}
