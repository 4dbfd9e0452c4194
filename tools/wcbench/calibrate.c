/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate.c -- `wcbench calibrate`: the crossover between non-temporal
 * stores and cached stores + flush on this machine, twice: the quick
 * measurement wc_pmem_calibrate() (what WC_PMEM_THRESHOLD=auto runs, and
 * `wcctl calibrate`), then a longer sweep of the same method that prints
 * every point.  With --cache PATH it measures an existing cache file on its
 * own free blocks instead and records the result in its superblock
 * (calibrate_cache.c).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush/engine.h"
#include "wcbench.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: wcbench calibrate [options]\n"
	        "Measure where cached stores + flush start beating non-temporal stores and\n"
	        "print the recommended threshold (WC_PMEM_THRESHOLD / wc_pmem_config.threshold).\n\n"
	        "  --cache PATH  measure on the free blocks of the cache file PATH instead, in\n"
	        "                place, and record the result in its superblock (what wc_create\n"
	        "                does; blocks holding data are never written).  Offline: a\n"
	        "                cache open anywhere is refused (in use)\n"
	        "  --rounds N    rounds of the thorough sweep (or of --cache), best of N per\n"
	        "                point (default 9)\n"
	        "  --bytes B     bytes written per point and strategy per round (default 1M)\n"
	        "  --json        machine-readable output\n"
	        "  --help\n");
}

static const char *threshold_str(char *buf, size_t len, size_t t)
{
	if (t == SIZE_MAX)
		snprintf(buf, len, "nt (non-temporal at every size)");
	else
		snprintf(buf, len, "%zu", t);
	return buf;
}

void wcb_text_calibration(FILE *f, const struct wc_calibration *cal)
{
	char sz[32];

	fprintf(f, "%-9s %12s %12s %8s   %12s %12s %8s\n", "size", "nt fenced", "cached", "ratio",
	        "nt batched", "cached", "ratio");
	for (unsigned i = 0; i < cal->npoints; i++) {
		const struct wc_calibration_point *pt = &cal->pt[i];

		fprintf(f, "%-9s %10.0fns %10.0fns %8.2f   %10.0fns %10.0fns %8.2f\n",
		        wcb_size_str(sz, sizeof(sz), pt->size), pt->nt_fenced, pt->cached_fenced,
		        pt->cached_fenced / pt->nt_fenced, pt->nt_batched, pt->cached_batched,
		        pt->cached_batched / pt->nt_batched);
	}
	fprintf(f, "(ratio = cached time / nt time: above 1, non-temporal stores are faster)\n");
}

void wcb_json_calibration(FILE *f, const struct wc_calibration *cal)
{
	fprintf(f, "  \"rounds\": %u,\n  \"points\": [\n", cal->rounds);
	for (unsigned i = 0; i < cal->npoints; i++) {
		const struct wc_calibration_point *pt = &cal->pt[i];

		fprintf(f, "    {\"size\": %zu, \"nt_fenced_ns\": %.1f, \"cached_fenced_ns\": %.1f, "
		           "\"nt_batched_ns\": %.1f, \"cached_batched_ns\": %.1f}%s\n",
		        pt->size, pt->nt_fenced, pt->cached_fenced, pt->nt_batched, pt->cached_batched,
		        i + 1 < cal->npoints ? "," : "");
	}
	fprintf(f, "  ],\n  \"threshold\": ");
	if (cal->threshold == SIZE_MAX)
		fprintf(f, "null");
	else
		fprintf(f, "%zu", cal->threshold);
	fprintf(f, ",\n  \"ms\": %.1f", cal->elapsed_ms);
}

int wcbench_calibrate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "cache", required_argument, NULL, 'C' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct wc_pmem_env *env = wc_pmem_env_get();
	const struct wc_flush_policy *p = wc_flush_default();
	unsigned features = wc_cpu_get()->features & ~env->cfg.disable;
	int flush_insn = strcmp(p->line.large_strategy, "cached+clwb") == 0 ||
	                 env->cfg.flush_insn == WC_PMEM_CLWB ? WC_PMEM_CLWB : WC_PMEM_CLFLUSHOPT;
	unsigned rounds = 9;
	uint64_t bytes = 1u << 20;
	bool json = false;
	const char *cache = NULL;
	struct wc_calibration cal;
	size_t quick;
	double t0, quick_ms;
	char buf[64], s1[32];
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': {
			char *end;
			unsigned long u = strtoul(optarg, &end, 10);

			if (*end || end == optarg || u < 1 || u > 1000) {
				fprintf(stderr, "wcbench calibrate: --rounds %s: expected 1..1000\n", optarg);
				return 2;
			}
			rounds = (unsigned)u;
			break;
		}
		case 'b':
			if (wcb_parse_size(optarg, &bytes) != 0 || bytes < 4096) {
				fprintf(stderr, "wcbench calibrate: --bytes %s: expected a size >= 4K\n",
				        optarg);
				return 2;
			}
			break;
		case 'j': json = true; break;
		case 'C': cache = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "wcbench calibrate: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (cache)
		return wcbench_calibrate_cache(cache, rounds, json);

	t0 = wcb_now_ns();
	ret = wc_pmem_calibrate(&quick);
	quick_ms = (wcb_now_ns() - t0) / 1e6;
	if (ret) {
		fprintf(stderr, "wcbench calibrate: %s\n", wc_errmsg());
		return 1;
	}
	ret = wc_calibrate_run(&cal, features, flush_insn, rounds, bytes, 0);
	if (ret) {
		fprintf(stderr, "wcbench calibrate: %s\n", wc_errmsg());
		return 1;
	}

	if (json) {
		printf("{\n  \"tool\": \"wcbench calibrate\",\n  \"quick\": {\"threshold\": ");
		if (quick == SIZE_MAX)
			printf("null");
		else
			printf("%zu", quick);
		printf(", \"ms\": %.1f},\n  \"nt\": ", quick_ms);
		wcb_json_str(stdout, cal.nt_name);
		printf(",\n  \"cached\": ");
		wcb_json_str(stdout, cal.cached_name);
		printf(",\n");
		wcb_json_calibration(stdout, &cal);
		printf("\n}\n");
		return 0;
	}

	printf("quick calibration (wc_pmem_calibrate, as WC_PMEM_THRESHOLD=auto): %s in %.1f ms\n",
	       threshold_str(buf, sizeof(buf), quick), quick_ms);
	if (cal.npoints == 0) {
		printf("no cached path on this CPU (%s): non-temporal at every size\n",
		       cal.cached_name);
		return 0;
	}
	printf("\nthorough sweep: %s vs %s, best of %u rounds, %s per point, %.0f ms\n",
	       cal.nt_name, cal.cached_name, cal.rounds, wcb_size_str(s1, sizeof(s1), bytes),
	       cal.elapsed_ms);
	wcb_text_calibration(stdout, &cal);
	printf("\ncrossover: %s\nrecommended: WC_PMEM_THRESHOLD=%s\n",
	       cal.threshold == SIZE_MAX ? "none: non-temporal stores win at every size" :
	                                   threshold_str(buf, sizeof(buf), cal.threshold),
	       cal.threshold == SIZE_MAX ? "nt" : threshold_str(buf, sizeof(buf), cal.threshold));
	return 0;
}
