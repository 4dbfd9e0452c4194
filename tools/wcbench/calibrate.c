/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate.c -- `wcbench calibrate`: the non-temporal store width and the
 * crossover between non-temporal stores and cached stores + flush on this
 * machine, twice: the quick
 * measurement wc_pmem_calibrate() (what WC_PMEM_THRESHOLD=auto runs, and
 * `wcctl calibrate`), then a longer sweep of the same method that prints
 * every point.  With --cache PATH it measures an existing cache file on its
 * own free blocks instead and records the result in its superblock
 * (calibrate_cache.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wcadmin.h"
#include "wcbench.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: wcbench calibrate [options]\n"
	        "Measure every non-temporal store width the CPU has (64-bit MOVNTI, 128, 256,\n"
	        "512) and where cached stores + flush start beating them; print the choice\n"
	        "the engine makes from it and the recommended threshold (WC_PMEM_THRESHOLD /\n"
	        "wc_pmem_config.threshold).\n\n"
	        "  --cache PATH  measure on the free blocks of the cache file PATH instead, in\n"
	        "                place, and record the result in its superblock (what wc_create\n"
	        "                does; blocks holding data are never written).  Offline: a\n"
	        "                cache open anywhere is refused (in use)\n"
	        "  --rounds N    rounds of the thorough sweep (or of --cache), best of N per\n"
	        "                point (default 9)\n"
	        "  --bytes B     bytes written per point and strategy per round (default 1M)\n"
	        "  --json        machine-readable output\n"
	        "  --help\n\n"
	        WCT_SIZE_HELP);
}

static const char *threshold_str(char *buf, size_t len, size_t t)
{
	if (t == SIZE_MAX)
		snprintf(buf, len, "nt (non-temporal at every size)");
	else
		snprintf(buf, len, "%zu", t);
	return buf;
}

void wcb_text_calibration(FILE *f, const struct wcadm_calibration *cal)
{
	char sz[32];

	fprintf(f, "%-9s %12s %12s %8s   %12s %12s %8s\n", "size", "nt fenced", "cached", "ratio",
	        "nt batched", "cached", "ratio");
	for (unsigned i = 0; i < cal->npoints; i++) {
		const struct wcadm_calibration_point *pt = &cal->pt[i];

		fprintf(f, "%-9s %10.0fns %10.0fns %8.2f   %10.0fns %10.0fns %8.2f\n",
		        wct_size_str(sz, sizeof(sz), pt->size), pt->nt_fenced, pt->cached_fenced,
		        pt->cached_fenced / pt->nt_fenced, pt->nt_batched, pt->cached_batched,
		        pt->cached_batched / pt->nt_batched);
	}
	fprintf(f, "(nt = the width chosen for the size; ratio = cached time / nt time: above\n"
	           " 1, non-temporal stores are faster)\n");
	if (cal->n_nt < 2)
		return;
	fprintf(f, "\nevery non-temporal width, ns per copy, fenced per copy / one fence per 64:\n");
	fprintf(f, "%-9s", "size");
	for (unsigned w = 0; w < cal->n_nt; w++)
		fprintf(f, " %19s", cal->nt_names[w]);
	fprintf(f, "\n");
	for (unsigned i = 0; i < cal->npoints; i++) {
		const struct wcadm_calibration_point *pt = &cal->pt[i];

		fprintf(f, "%-9s", wct_size_str(sz, sizeof(sz), pt->size));
		for (unsigned w = 0; w < cal->n_nt; w++)
			fprintf(f, " %8.0fns /%6.0fns", pt->w_fenced[w], pt->w_batched[w]);
		fprintf(f, "\n");
	}
}

void wcb_json_calibration(struct wct_json *j, const struct wcadm_calibration *cal,
                          const uint64_t *area)
{
	wct_json_str(j, "nt", cal->nt_name);
	wct_json_str(j, "cached", cal->cached_name);
	wct_json_str(j, "choice", cal->choice);
	wct_json_array(j, "widths", false);
	for (unsigned w = 0; w < cal->n_nt; w++)
		wct_json_str(j, NULL, cal->nt_names[w]);
	wct_json_end(j);
	if (area)
		wct_json_u64(j, "area_bytes", *area);
	wct_json_u64(j, "rounds", cal->rounds);
	wct_json_array(j, "points", true);
	for (unsigned i = 0; i < cal->npoints; i++) {
		const struct wcadm_calibration_point *pt = &cal->pt[i];

		wct_json_object(j, NULL, false);
		wct_json_u64(j, "size", pt->size);
		wct_json_num(j, "nt_fenced_ns", "%.1f", pt->nt_fenced);
		wct_json_num(j, "cached_fenced_ns", "%.1f", pt->cached_fenced);
		wct_json_num(j, "nt_batched_ns", "%.1f", pt->nt_batched);
		wct_json_num(j, "cached_batched_ns", "%.1f", pt->cached_batched);
		wct_json_array(j, "width_fenced_ns", false);
		for (unsigned w = 0; w < cal->n_nt; w++)
			wct_json_num(j, NULL, "%.1f", pt->w_fenced[w]);
		wct_json_end(j);
		wct_json_array(j, "width_batched_ns", false);
		for (unsigned w = 0; w < cal->n_nt; w++)
			wct_json_num(j, NULL, "%.1f", pt->w_batched[w]);
		wct_json_end(j);
		wct_json_end(j);
	}
	wct_json_end(j);
	wct_json_threshold(j, "threshold", cal->threshold);
	wct_json_num(j, "ms", "%.1f", cal->elapsed_ms);
}

int wcbench_calibrate(int argc, char **argv)
{
	unsigned features, rounds = 9;
	int flush_insn;
	uint64_t bytes = 1u << 20;
	bool json = false;
	const char *cache = NULL;
	struct wcadm_calibration cal;
	size_t quick;
	double t0, quick_ms;
	char buf[64], s1[32];
	int ret;

	const struct wct_opt opts[] = {
		WCT_OPT("rounds", WCT_UINT, &rounds, 1, 1000),
		WCT_OPT_STR("cache", &cache),
		WCT_OPT("bytes", WCT_SIZE, &bytes, 4096, UINT64_MAX),
		WCT_OPT_FLAG("json", &json),
		WCT_OPT_END,
	};

	/* The default policy's inputs, resolved before anything is measured. */
	wcadm_flush_inputs(&features, &flush_insn);
	ret = wct_opts_parse("wcbench calibrate", opts, argc, argv, usage, false);
	if (ret)
		return ret;
	if (cache)
		return wcbench_calibrate_cache(cache, rounds, json);

	t0 = wct_now_ns();
	ret = wc_pmem_calibrate(&quick);
	quick_ms = (wct_now_ns() - t0) / 1e6;
	if (!ret)
		ret = wcadm_calibrate(&cal, features, flush_insn, rounds, bytes);
	if (ret) {
		fprintf(stderr, "wcbench calibrate: %s\n", wc_errmsg());
		return 1;
	}

	if (json) {
		struct wct_json j;

		wcb_json_head(&j, "wcbench calibrate");
		wct_json_object(&j, "quick", false);
		wct_json_threshold(&j, "threshold", quick);
		wct_json_num(&j, "ms", "%.1f", quick_ms);
		wct_json_end(&j);
		wcb_json_calibration(&j, &cal, NULL);
		wct_json_end(&j);
		return 0;
	}

	printf("quick calibration (wc_pmem_calibrate, as WC_PMEM_THRESHOLD=auto): %s in %.1f ms\n",
	       threshold_str(buf, sizeof(buf), quick), quick_ms);
	if (cal.npoints == 0) {
		printf("no cached path on this CPU (%s): non-temporal at every size\n",
		       cal.cached_name);
		return 0;
	}
	printf("\nthorough sweep: %u non-temporal widths vs %s, best of %u rounds, %s per point, "
	       "%.0f ms\n", cal.n_nt, cal.cached_name, cal.rounds,
	       wct_size_str(s1, sizeof(s1), bytes), cal.elapsed_ms);
	wcb_text_calibration(stdout, &cal);
	printf("\nchoice: %s\ncrossover: %s\nrecommended: WC_PMEM_THRESHOLD=%s\n", cal.choice,
	       cal.threshold == SIZE_MAX ? "none: non-temporal stores win at every size" :
	                                   threshold_str(buf, sizeof(buf), cal.threshold),
	       cal.threshold == SIZE_MAX ? "nt" : threshold_str(buf, sizeof(buf), cal.threshold));
	return 0;
}
