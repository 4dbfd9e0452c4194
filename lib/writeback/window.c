/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * window.c -- how many blocks write-back keeps in flight: a rule
 * on measured throughput, kept apart from the I/O so that it can be tested
 * on made-up rounds (tests/check_writeback.c).
 */
#include <stdint.h>
#include <string.h>

#include "writeback/internal.h"

/*
 * Deeper only where it pays: every WB_WINDOW_HOLD rounds the window probes
 * twice as deep for WB_WINDOW_PROBE_ROUNDS rounds; if even the slowest of
 * them beat the mean of the rounds before by WB_WINDOW_GAIN_PCT, it stays
 * and probes again, else it returns.  Then, once grown, it probes half as
 * deep, and stays there if the probe's mean keeps WB_WINDOW_KEEP_PCT of the
 * throughput (the same bytes with fewer in flight: shorter queues for the
 * foreground's misses).  A remote origin, whose latency is the wire's,
 * gains almost 2x per doubling; a local disk, whose latency is its queue's,
 * gains nothing past its knee -- and never goes below writeback_jobs.
 * Throughput, not latency, is the signal: latency rises with a deeper
 * queue on both kinds, and on a loaded host by whole scheduler slices.
 * Means and the slowest probe round, not single rounds: one round against
 * one round on a CPU-bound OSD once passed the 20% test by noise, again and
 * again, up to 4,096 blocks in flight while throughput fell.
 */
#define WB_WINDOW_GAIN_PCT 20
#define WB_WINDOW_KEEP_PCT 90
#define WB_WINDOW_HOLD 16
#define WB_WINDOW_PROBE_ROUNDS 2

void wc_wb_window_init(struct wc_wb_window *win, unsigned min, unsigned max)
{
	memset(win, 0, sizeof(*win));
	win->blocks = win->min = min;
	win->max = max < min ? min : max;
}

/* Start a probe at `blocks`, the rounds so far the baseline. */
static void probe(struct wc_wb_window *win, unsigned blocks)
{
	win->probe_from = win->blocks;
	win->probe_rate = win->rate_sum / win->rate_n;
	win->blocks = blocks;
	win->rate_sum = win->rate_n = 0;
	win->probe_min = UINT64_MAX;
}

void wc_wb_window_step(struct wc_wb_window *win, unsigned blocks, uint64_t elapsed_ns)
{
	uint64_t rate;

	/* A round shorter than two windows is mostly ramp and tail. */
	if (blocks < 2 * win->blocks || !elapsed_ns)
		return;
	rate = (uint64_t)blocks * 1000000000ull / elapsed_ns; /* blocks per second */
	if (win->rate_n == 1024) { /* a long stay: the recent half of it */
		win->rate_sum /= 2;
		win->rate_n /= 2;
	}
	win->rate_sum += rate;
	win->rate_n++;
	if (win->probe_from) {
		bool up = win->blocks > win->probe_from, keep;
		uint64_t mean;

		if (rate < win->probe_min)
			win->probe_min = rate;
		if (win->rate_n < WB_WINDOW_PROBE_ROUNDS)
			return;
		mean = win->rate_sum / win->rate_n;
		keep = up ? win->probe_min * 100 >= win->probe_rate * (100 + WB_WINDOW_GAIN_PCT)
		          : mean * 100 >= win->probe_rate * WB_WINDOW_KEEP_PCT;
		if (!keep) {
			/* Back, with the rounds before as the baseline again. */
			win->blocks = win->probe_from;
			win->rate_sum = win->probe_rate;
			win->rate_n = 1;
		}
		win->probe_from = 0;
		win->hold = WB_WINDOW_HOLD;
		win->last_probe_up = up;
		if (keep && up && win->blocks < win->max)
			/* It paid: try deeper still at once. */
			probe(win, win->blocks * 2 < win->max ? win->blocks * 2 : win->max);
		return;
	}
	if (win->hold && --win->hold)
		return;
	/* Alternate: down after up, and down at the top (nothing above). */
	if ((win->last_probe_up || win->blocks == win->max) && win->blocks > win->min)
		probe(win, win->blocks / 2 > win->min ? win->blocks / 2 : win->min);
	else if (win->blocks < win->max)
		probe(win, win->blocks * 2 < win->max ? win->blocks * 2 : win->max);
	else
		win->hold = WB_WINDOW_HOLD;
}
