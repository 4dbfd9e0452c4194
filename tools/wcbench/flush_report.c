/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flush_report.c -- `wcbench flush`'s verdict and output: the table, JSON
 * and the gnuplot chart.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flushbench.h"
#include "wcbench.h"

void flushbench_judge(const struct bench *b, struct verdict v[NMODES])
{
	for (unsigned m = 0; m < NMODES; m++) {
		v[m].min_vs_best = v[m].min_vs_pmem2 = INFINITY;
		v[m].misses = v[m].ties = 0;
		for (unsigned si = 0; si < b->nsizes; si++) {
			double vb = b->vs_best[si][m], vp = b->vs_pmem2[si][m];

			if (vb < GOAL_VS_BEST || vp < GOAL_VS_PMEM2) {
				v[m].misses++;
				if ((vb >= GOAL_VS_BEST || b->vs_best_q3[si][m] >= GOAL_VS_BEST) &&
				    (vp >= GOAL_VS_PMEM2 || b->vs_pmem2_q3[si][m] >= GOAL_VS_PMEM2))
					v[m].ties++;
			}

			if (vb < v[m].min_vs_best) {
				v[m].min_vs_best = vb;
				v[m].q3_best = b->vs_best_q3[si][m];
				v[m].at_best = b->sizes[si];
			}
			if (vp < v[m].min_vs_pmem2) {
				v[m].min_vs_pmem2 = vp;
				v[m].q3_pmem2 = b->vs_pmem2_q3[si][m];
				v[m].at_pmem2 = b->sizes[si];
			}
		}
	}
}

/*
 * Met: every median ratio reaches its goal.  Tie: where a median misses,
 * the upper quartile of that size's paired runs still reaches the goal --
 * the difference is inside the run-to-run spread (the same spread the
 * policy shows against the identical strategy it runs).
 */
enum goal flushbench_goal(const struct verdict v[NMODES])
{
	unsigned misses = 0, ties = 0;

	for (unsigned m = 0; m < NMODES; m++) {
		misses += v[m].misses;
		ties += v[m].ties;
	}
	return !misses ? GOAL_MET : ties == misses ? GOAL_TIE : GOAL_MISSED;
}

static const char *goal_text(enum goal g)
{
	return g == GOAL_MET ? "met" :
	       g == GOAL_TIE ? "met within noise (every shortfall is inside its size's run-to-run "
	                       "spread: a tie)" : "NOT met";
}

static const char *gran_name(enum pmem2_granularity g)
{
	return g == PMEM2_GRANULARITY_BYTE ? "BYTE" :
	       g == PMEM2_GRANULARITY_CACHE_LINE ? "CACHE_LINE" : "PAGE";
}

/* The width the policy copies small sizes with, and the other width that
 * came closest in this run: its speed relative to the chosen one, the
 * geometric mean over sizes and both modes (> 1: it was faster). */
static bool runner_up(const struct bench *b, unsigned *chosen, unsigned *other, double *speed)
{
	const char *name = b->policy.info.small_strategy;
	bool found = false;

	for (unsigned ci = 0; ci < b->ncols; ci++)
		if (b->col[ci].kind == COL_STRATEGY && strcmp(b->col[ci].name, name) == 0) {
			*chosen = ci;
			found = true;
		}
	if (!found || strncmp(name, "nt-", 3) != 0)
		return false;
	found = false;
	for (unsigned ci = 0; ci < b->ncols; ci++) {
		double lg = 0;

		if (ci == *chosen || b->col[ci].kind != COL_STRATEGY ||
		    strncmp(b->col[ci].name, "nt-", 3) != 0)
			continue;
		for (unsigned si = 0; si < b->nsizes; si++)
			for (unsigned m = 0; m < NMODES; m++)
				lg += log(b->median[si][*chosen][m] / b->median[si][ci][m]);
		lg = exp(lg / (b->nsizes * NMODES));
		if (!found || lg > *speed) {
			*other = ci;
			*speed = lg;
			found = true;
		}
	}
	return found;
}

void flushbench_print_table(const struct bench *b)
{
	unsigned chosen, other;
	double speed;
	const struct wc_pmem_info *in = &b->policy.info;
	char s1[64], s2[64], text[256];
	struct verdict v[NMODES];

	printf("wcbench flush: %s, region %s, granularity %s%s, median of %u runs, %.0f ms samples\n",
	       b->path, wct_size_str(s1, sizeof(s1), b->region), gran_name(b->gran),
	       b->forced_gran ? " (PMEM2_FORCE_GRANULARITY set by wcbench)" : "", b->runs,
	       b->time_ms);
	printf("cpu: %s family 0x%x model 0x%x stepping %u, line %u B\n", in->vendor, in->family,
	       in->model, in->stepping, in->line_size);
	wcb_policy_text(text, sizeof(text), in);
	printf("policy: %s -- %s\n", text, in->reason);
	for (unsigned m = 0; m < NMODES; m++) {
		printf("\n%s: GB/s and time per copy\n", m == MODE_FENCED ? "fence after every copy" :
		       "one fence per batch of copies");
		if (m == MODE_BATCHED)
			printf("(batch %u)\n", b->batch);
		printf("%-9s", "size");
		for (unsigned ci = 0; ci < b->ncols; ci++)
			printf(" %17s", b->col[ci].kind == COL_MEMCPY ? "memcpy*" : b->col[ci].name);
		printf("  %8s %9s", "pol/best", "pol/pmem2");
		if (b->pol_bare >= 0)
			printf(" %8s", "pol/bare");
		printf("  best\n");
		for (unsigned si = 0; si < b->nsizes; si++) {
			printf("%-9s", wct_size_str(s1, sizeof(s1), b->sizes[si]));
			for (unsigned ci = 0; ci < b->ncols; ci++) {
				double ns = b->median[si][ci][m];

				printf(" %8.2f %8s", (double)b->sizes[si] / ns,
				       wcb_ns_str(s2, sizeof(s2), 1, ns));
			}
			printf("  %8.2f %9.2f", b->vs_best[si][m], b->vs_pmem2[si][m]);
			if (b->pol_bare >= 0)
				printf(" %8.2f", b->vs_bare[si][m]);
			printf("  %s\n", b->col[b->best[si][m]].name);
		}
	}
	flushbench_judge(b, v);
	printf("\n* memcpy: plain cached stores, not persistent (a ceiling, for reference)\n");
	if (b->pol_bare >= 0)
		printf("  bare-*: aligned non-temporal stores of one width and nothing else (the "
		       "least any engine of that width can do); pol/bare: against %s, the policy's "
		       "width\n", b->col[b->pol_bare].name);
	printf("  policy: wc_pmem_memcpy + wc_pmem_drain, the public functions\n");
	if (runner_up(b, &chosen, &other, &speed))
		printf("width: the policy copies with %s; in this run %s came next, at %.2fx its "
		       "speed (geometric mean over sizes and both modes)\n", b->col[chosen].name,
		       b->col[other].name, speed);
	for (unsigned m = 0; m < NMODES; m++)
		printf("%s: policy/best >= %.2f (lowest at %s, upper quartile %.2f), "
		       "policy/pmem2 >= %.2f (lowest at %s, upper quartile %.2f)\n",
		       m == MODE_FENCED ? "fenced " : "batched", v[m].min_vs_best,
		       wct_size_str(s1, sizeof(s1), v[m].at_best), v[m].q3_best, v[m].min_vs_pmem2,
		       wct_size_str(s2, sizeof(s2), v[m].at_pmem2), v[m].q3_pmem2);
	printf("goal (>= 0.95x best single strategy and >= 1.0x pmem2 at every size, both modes): %s\n",
	       goal_text(flushbench_goal(v)));
}

void flushbench_print_json(const struct bench *b)
{
	struct verdict v[NMODES];
	static const char *modes[NMODES] = { "fenced", "batched" };
	enum goal g;
	struct wct_json j;

	flushbench_judge(b, v);
	g = flushbench_goal(v);
	wcb_json_head(&j, "wcbench flush");
	wct_json_str(&j, "path", b->path);
	wct_json_u64(&j, "region", b->region);
	wct_json_str(&j, "granularity", gran_name(b->gran));
	wct_json_bool(&j, "granularity_forced", b->forced_gran);
	wct_json_u64(&j, "runs", b->runs);
	wct_json_u64(&j, "batch", b->batch);
	wct_json_num(&j, "sample_ms", "%g", b->time_ms);
	wct_json_u64(&j, "dst_offset", b->dst_offset);
	wct_json_object(&j, "cpu", false);
	wct_json_cpu(&j, &b->policy.info);
	wct_json_u64(&j, "features", b->policy.info.cpu);
	wct_json_end(&j);
	wcb_json_policy(&j, "policy", &b->policy.info);
	{
		unsigned chosen, other;
		double speed;

		if (runner_up(b, &chosen, &other, &speed)) {
			wct_json_object(&j, "width", false);
			wct_json_str(&j, "chosen", b->col[chosen].name);
			wct_json_str(&j, "runner_up", b->col[other].name);
			wct_json_num(&j, "runner_up_speed", "%.3f", speed);
			wct_json_end(&j);
		}
	}
	wct_json_array(&j, "columns", false);
	for (unsigned ci = 0; ci < b->ncols; ci++)
		wct_json_str(&j, NULL, b->col[ci].name);
	wct_json_end(&j);
	wct_json_array(&j, "results", true);
	for (unsigned si = 0; si < b->nsizes; si++)
		for (unsigned m = 0; m < NMODES; m++) {
			wct_json_object(&j, NULL, false);
			wct_json_u64(&j, "size", b->sizes[si]);
			wct_json_str(&j, "mode", modes[m]);
			wct_json_object(&j, "ns_per_copy", false);
			for (unsigned ci = 0; ci < b->ncols; ci++)
				wct_json_num(&j, b->col[ci].name, "%.2f", b->median[si][ci][m]);
			wct_json_end(&j);
			wct_json_object(&j, "gbps", false);
			for (unsigned ci = 0; ci < b->ncols; ci++)
				wct_json_num(&j, b->col[ci].name, "%.3f",
				             (double)b->sizes[si] / b->median[si][ci][m]);
			wct_json_end(&j);
			wct_json_str(&j, "best", b->col[b->best[si][m]].name);
			wct_json_num(&j, "policy_vs_best", "%.3f", b->vs_best[si][m]);
			wct_json_num(&j, "policy_vs_best_q3", "%.3f", b->vs_best_q3[si][m]);
			wct_json_num(&j, "policy_vs_pmem2", "%.3f", b->vs_pmem2[si][m]);
			wct_json_num(&j, "policy_vs_pmem2_q3", "%.3f", b->vs_pmem2_q3[si][m]);
			if (b->pol_bare >= 0)
				wct_json_num(&j, "policy_vs_bare", "%.3f", b->vs_bare[si][m]);
			wct_json_end(&j);
		}
	wct_json_end(&j);
	wct_json_object(&j, "summary", false);
	for (unsigned m = 0; m < NMODES; m++) {
		wct_json_object(&j, modes[m], false);
		wct_json_num(&j, "min_policy_vs_best", "%.3f", v[m].min_vs_best);
		wct_json_u64(&j, "at", v[m].at_best);
		wct_json_num(&j, "min_policy_vs_pmem2", "%.3f", v[m].min_vs_pmem2);
		wct_json_u64(&j, "at_pmem2", v[m].at_pmem2);
		wct_json_end(&j);
	}
	wct_json_str(&j, "goal", g == GOAL_MET ? "met" : g == GOAL_TIE ? "tie" : "not met");
	wct_json_end(&j);
	wct_json_end(&j);
}

int flushbench_plot(const struct bench *b)
{
	const char *gp = wcb_gnuplot();
	char data[64];
	FILE *f;
	int fd, ret;

	fflush(stdout); /* keep the table ahead of what follows on stderr */
	if (!gp) {
		fprintf(stderr, "wcbench flush: gnuplot is not installed (apt-get install "
		        "gnuplot-nox): no plot written\n");
		return -1;
	}
	fd = wct_scratch_temp("wcbench flush", data, sizeof(data), "/tmp", "wcbench-flush-", 0);
	if (fd < 0)
		return -1;
	if (!(f = fdopen(fd, "w"))) {
		fprintf(stderr, "wcbench flush: plot data file: %s\n", strerror(errno));
		close(fd);
		unlink(data);
		return -1;
	}
	for (unsigned m = 0; m < NMODES; m++) {
		fprintf(f, "size");
		for (unsigned ci = 0; ci < b->ncols; ci++)
			fprintf(f, " %s", b->col[ci].name);
		fprintf(f, "\n");
		for (unsigned si = 0; si < b->nsizes; si++) {
			fprintf(f, "%llu", (unsigned long long)b->sizes[si]);
			for (unsigned ci = 0; ci < b->ncols; ci++)
				fprintf(f, " %.4f", (double)b->sizes[si] / b->median[si][ci][m]);
			fprintf(f, "\n");
		}
		fprintf(f, "\n\n");
	}
	fclose(f);

	f = popen(gp, "w");
	if (!f) {
		fprintf(stderr, "wcbench flush: run %s: %s\n", gp, strerror(errno));
		unlink(data);
		return -1;
	}
	fprintf(f, "set terminal pngcairo size 1600,720 font ',10'\nset output '%s'\n", b->plot);
	fprintf(f, "set multiplot layout 1,2 title 'wcbench flush: %s (%s granularity)' "
	        "noenhanced\n", b->path, gran_name(b->gran));
	fprintf(f, "set logscale x 2\nset format x '%%.0b%%B'\nset xlabel 'copy size'\n"
	        "set ylabel 'GB/s'\nset yrange [0:*]\nset grid\nset key below horizontal noenhanced\n");
	for (unsigned m = 0; m < NMODES; m++) {
		fprintf(f, "set title '%s'\n", m == MODE_FENCED ? "fence after every copy" :
		        "one fence per batch");
		fprintf(f, "plot for [i=2:%u] '%s' index %u using 1:i with linespoints "
		        "title columnheader(i)\n", b->ncols + 1, data, m);
	}
	fprintf(f, "unset multiplot\n");
	ret = pclose(f);
	unlink(data);
	if (ret != 0) {
		fprintf(stderr, "wcbench flush: gnuplot failed (status %d)\n", ret);
		return -1;
	}
	if (!b->quiet)
		fprintf(stderr, "wcbench flush: plot written to %s\n", b->plot);
	return 0;
}
