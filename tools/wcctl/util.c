/* SPDX-License-Identifier: BSD-3-Clause */
/* util.c -- output helpers shared by the wcctl subcommands. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wcctl.h"

const char *wcctl_size_str(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

const char *wcctl_uuid_str(char *buf, size_t len, const uint8_t u[16])
{
	snprintf(buf, len,
	         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
	         u[13], u[14], u[15]);
	return buf;
}

const char *wcctl_time_str(char *buf, size_t len, uint64_t epoch_s)
{
	time_t t = (time_t)epoch_s;
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "%llu s since the epoch", (unsigned long long)epoch_s);
	return buf;
}

void wcctl_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int wcctl_config(struct wc_config *cfg, const char *cmd, const char *options, const char *size,
                 bool for_open)
{
	char buf[128];

	wc_config_init(cfg);
	/* An open takes the block size the superblock records, unless the
	 * options insist on one (then wc_open checks that it matches). */
	if (for_open)
		cfg->block_size = 0;
	if (options && wc_config_parse(cfg, options)) {
		fprintf(stderr, "%s: --options: %s\n", cmd, wc_errmsg());
		return WCCTL_USAGE;
	}
	if (size) {
		if (snprintf(buf, sizeof(buf), "cache_size=%s", size) >= (int)sizeof(buf) ||
		    strchr(size, ',') || wc_config_parse(cfg, buf) || cfg->cache_size == 0) {
			fprintf(stderr, "%s: --size %s: expected a byte count > 0 (suffix K, M, G or T)\n",
			        cmd, size);
			return WCCTL_USAGE;
		}
	}
	return WCCTL_OK;
}

int wcctl_positional(const char *cmd, int argc, char **argv, int optind_now, int want,
                     const char *what)
{
	int have = argc - optind_now;

	if (have == want)
		return WCCTL_OK;
	if (have < want)
		fprintf(stderr, "%s: missing argument: expected %s (see %s --help)\n", cmd, what, cmd);
	else
		fprintf(stderr, "%s: unexpected argument '%s' (expected %s)\n", cmd,
		        argv[optind_now + want], what);
	return WCCTL_USAGE;
}

double wcctl_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void wcctl_progress_start(struct wcctl_progress *p, uint64_t total)
{
	p->total = total;
	p->tty = isatty(STDERR_FILENO);
	p->last_tenth = -1;
	p->t0 = wcctl_now_s();
	p->last_draw = 0;
	p->last_done = UINT64_MAX;
}

void wcctl_progress_update(struct wcctl_progress *p, uint64_t done, const char *note)
{
	enum { WIDTH = 40 };
	char bar[WIDTH + 1];
	uint64_t total = p->total ? p->total : 1;
	double now = wcctl_now_s();
	unsigned fill;
	int tenth;

	if (done > total)
		done = total;
	fill = (unsigned)(done * WIDTH / total);
	tenth = (int)(done * 10 / total);
	/* A terminal gets at most ten redraws a second (a round of write-back
	 * can take microseconds), a log one line per tenth. */
	if (done == p->last_done ||
	    (p->tty ? (now - p->last_draw < 0.1 && done < total) : tenth == p->last_tenth))
		return;
	p->last_done = done;
	p->last_tenth = tenth;
	p->last_draw = now;
	memset(bar, '#', fill);
	memset(bar + fill, '.', WIDTH - fill);
	bar[WIDTH] = '\0';
	fprintf(stderr, "%s[%s] %3u%% %llu/%llu blocks %5.1fs %s%s", p->tty ? "\r" : "", bar,
	        (unsigned)(done * 100 / total), (unsigned long long)done,
	        (unsigned long long)p->total, now - p->t0, note ? note : "",
	        p->tty ? "\033[K" : "\n");
	fflush(stderr);
}

void wcctl_progress_end(struct wcctl_progress *p)
{
	if (p->tty)
		fputc('\n', stderr);
}
