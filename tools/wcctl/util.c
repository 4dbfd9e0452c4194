/* SPDX-License-Identifier: BSD-3-Clause */
/* util.c -- output helpers shared by the wcctl subcommands. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wcctl.h"

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

void wcctl_json_policy(struct wct_json *j, const struct wc_pmem_info *in)
{
	wct_json_threshold(j, "threshold", in->threshold);
	wct_json_str(j, "small", in->small_strategy);
	wct_json_str(j, "large", in->large_strategy);
	wct_json_str(j, "reason", in->reason);
}

int wcctl_config(struct wc_config *cfg, const char *cmd, const char *options, const char *size,
                 bool for_open)
{
	wc_config_init(cfg);
	/* An open takes the block size the superblock records, unless the
	 * options insist on one (then wc_open checks that it matches). */
	if (for_open)
		cfg->block_size = 0;
	if (options && wc_config_parse(cfg, options)) {
		fprintf(stderr, "%s: --options: %s\n", cmd, wc_errmsg());
		return WCCTL_USAGE;
	}
	if (size && wct_parse_size(cmd, "size", size, 1, UINT64_MAX, &cfg->cache_size))
		return WCCTL_USAGE;
	return WCCTL_OK;
}

int wcctl_options(const char *cmd, const struct wct_opt *opts, int argc, char **argv,
                  void (*usage)(FILE *), int want, const char *what)
{
	int ret = wct_opts_parse(cmd, opts, argc, argv, usage, true);

	return ret ? ret : wcctl_positional(cmd, argc, argv, optind, want, what);
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

void wcctl_progress_start(struct wcctl_progress *p, uint64_t total)
{
	p->total = total;
	p->tty = isatty(STDERR_FILENO);
	p->last_tenth = -1;
	p->t0 = wct_now_ns() / 1e9;
	p->last_draw = 0;
	p->last_done = UINT64_MAX;
}

void wcctl_progress_update(struct wcctl_progress *p, uint64_t done, const char *note)
{
	enum { WIDTH = 40 };
	char bar[WIDTH + 1];
	uint64_t total = p->total ? p->total : 1;
	double now = wct_now_ns() / 1e9;
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
