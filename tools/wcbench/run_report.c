/* SPDX-License-Identifier: BSD-3-Clause */
/* run_report.c -- `wcbench run` results as a table or as JSON. */
#include <stdio.h>
#include <string.h>

#include "cache_impl.h"
#include "run.h"
#include "wcbench.h"

static const char *ns_str(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.2fus", ns / 1e3);
	else
		snprintf(buf, len, "%.2fms", ns / 1e6);
	return buf;
}

static void policy_text(char *buf, size_t len, const struct wc_pmem_info *in)
{
	if (in->threshold == SIZE_MAX || strcmp(in->small_strategy, in->large_strategy) == 0)
		snprintf(buf, len, "%s at every size", in->small_strategy);
	else
		snprintf(buf, len, "%s below %zu B, %s from %zu B", in->small_strategy,
		         in->threshold, in->large_strategy, in->threshold);
}

static void length_text(char *buf, size_t len, const struct run_opts *o)
{
	if (o->ops)
		snprintf(buf, len, "%llu ops per phase", (unsigned long long)o->ops);
	else
		snprintf(buf, len, "%g s per phase", o->duration_s);
}

static void row(const char *label, unsigned threads, double iops, uint64_t bs,
                const struct wcb_hist *h)
{
	char p50[16], p99[16], p999[16], mean[16], max[16];

	printf("%-7u %-12s %9.0f %9.1f %9s %9s %9s %9s %9s\n", threads, label, iops,
	       iops * (double)bs / 1e6, ns_str(p50, sizeof(p50), wcb_hist_quantile(h, 0.5)),
	       ns_str(p99, sizeof(p99), wcb_hist_quantile(h, 0.99)),
	       ns_str(p999, sizeof(p999), wcb_hist_quantile(h, 0.999)),
	       ns_str(mean, sizeof(mean), wcb_hist_mean(h)), ns_str(max, sizeof(max), (double)h->max));
}

static void print_delta(const struct run_config *cfg)
{
	const struct run_stats_delta *d = &cfg->delta;

	printf("stats deltas, %u thread%s, all rounds: writes %llu (hits uncommitted %llu, "
	       "committed %llu, allocate %llu, around %llu, blocked on free list %llu), "
	       "reads %llu (hits %llu), commits %llu (%.1f writes each), flushes %llu, "
	       "write-back %llu I/Os %llu bytes (errors %llu), discards %llu\n",
	       cfg->threads, cfg->threads > 1 ? "s" : "", (unsigned long long)d->writes,
	       (unsigned long long)d->write_hits_uncommitted,
	       (unsigned long long)d->write_hits_committed, (unsigned long long)d->writes_allocate,
	       (unsigned long long)d->writes_around, (unsigned long long)d->writes_blocked_on_freelist,
	       (unsigned long long)d->reads, (unsigned long long)d->read_hits,
	       (unsigned long long)d->commits,
	       d->commits ? (double)d->writes / (double)d->commits : 0.0,
	       (unsigned long long)d->flushes, (unsigned long long)d->writeback_ios,
	       (unsigned long long)d->writeback_bytes, (unsigned long long)d->writeback_errors,
	       (unsigned long long)d->discards);
}

void run_report_text(const struct run_ctx *x)
{
	const struct run_opts *o = &x->o;
	const struct wc_config *cc = &x->c->cfg;
	char s1[32], s2[32], s3[32], text[256];

	length_text(text, sizeof(text), o);
	printf("wcbench run: %s%s, bs %s, working set %s, %s, median of %u round%s\n",
	       run_workload_name(o->wl), o->fua ? " FUA" : "", wcb_size_str(s1, sizeof(s1), o->bs),
	       wcb_size_str(s2, sizeof(s2), x->slots * o->bs), text, o->runs, o->runs > 1 ? "s" : "");
	if (o->wl == WL_RANDRW)
		printf("read mix: %u%% reads\n", o->read_pct);
	if (o->flush_every)
		printf("wc_flush every %llu writes per thread\n", (unsigned long long)o->flush_every);
	printf("cache: %s, %llu blocks of %u B (%s), granularity %s%s; origin %s, %s (%s)\n",
	       o->cache_path, (unsigned long long)x->final.blocks, x->bs_cache,
	       wcb_size_str(s1, sizeof(s1), x->final.blocks * x->bs_cache), x->final.granularity,
	       x->forced_gran ? " (PMEM2_FORCE_GRANULARITY set by wcbench)" : "", o->origin_path,
	       wcb_size_str(s2, sizeof(s2), wc_size(x->c)), x->final.origin_mode);
	printf("config: autocommit %u blocks / %u ms, watermarks %u/%u%%%s\n",
	       cc->autocommit_blocks, cc->autocommit_ms, cc->high_watermark, cc->low_watermark,
	       o->no_prefill ? ", no prefill" : ", working set written and committed first");
	policy_text(text, sizeof(text), &x->c->fp.info);
	printf("policy: %s, %s (cache and floor) -- %s\n", text, x->final.pmem_source,
	       x->c->fp.info.reason);
	if (!o->no_floor)
		printf("floor: the same operations with the flush engine alone into a %s /dev/shm "
		       "region, one drain per %s\n", wcb_size_str(s3, sizeof(s3), x->floor_len),
		       o->fua ? "write" : "autocommit batch");
	printf("\n%-7s %-12s %9s %9s %9s %9s %9s %9s %9s\n", "threads", "", "IOPS", "MB/s", "p50",
	       "p99", "p99.9", "mean", "max");
	for (unsigned k = 0; k < x->nconfigs; k++) {
		const struct run_config *cfg = &x->configs[k];
		const char *bound = "floor+lock";

		row("cache", cfg->threads, cfg->cache_iops_med, o->bs, &cfg->cache_hist);
		if (o->no_floor)
			continue;
		row("floor", cfg->threads, cfg->floor_iops_med, o->bs, &cfg->floor_hist);
		printf("%-7s cache/floor %.3f  (rounds:", "", cfg->ratio_med);
		for (unsigned r = 0; r < o->runs; r++)
			printf(" %.3f", cfg->ratio[r]);
		printf(")\n%-7s by CPU time %.3f  (%.0f ns CPU per op in the cache, %.0f ns in the "
		       "floor)\n", "", cfg->cpu_ratio_med, cfg->cache_cpu_op_med, cfg->floor_cpu_op_med);
		if (!run_has_lock_floor(x))
			continue;
		row(bound, cfg->threads, cfg->lock_iops_med, o->bs, &cfg->lock_hist);
		printf("%-7s cache/(%s) %.3f, (%s)/floor %.3f: the most %s can reach\n", "", bound,
		       cfg->lock_ratio_med, bound, cfg->lock_iops_med / cfg->floor_iops_med,
		       o->fua ? "a FUA write that publishes under a lock" : "a design that locks once per write");
	}
	if (x->nconfigs == 2) {
		printf("\nscaling 2 threads / 1 thread (median of per-round ratios): cache %.3f",
		       x->scaling_cache);
		if (!o->no_floor)
			printf(", floor %.3f (what this machine allows)", x->scaling_floor);
		printf("\nscaling estimated from CPU time per op (2 x at 1 thread / at 2 threads): "
		       "cache %.3f", x->scaling_cache_cpu);
		if (!o->no_floor)
			printf(", floor %.3f", x->scaling_floor_cpu);
		printf("\n");
	}
	printf("latency: per operation, log-bucket histogram (<= 6.25%% bucket width), all "
	       "threads and rounds\n\n");
	for (unsigned k = 0; k < x->nconfigs; k++)
		print_delta(&x->configs[k]);
	printf("after: %llu blocks, %llu free, %llu dirty, %llu under write-back, %s DRAM "
	       "metadata, error %d\n", (unsigned long long)x->final.blocks,
	       (unsigned long long)x->final.free_blocks, (unsigned long long)x->final.dirty_blocks,
	       (unsigned long long)x->final.writeback_blocks,
	       wcb_size_str(s1, sizeof(s1), x->final.dram_bytes), x->final.error);
	if (!x->ntargets)
		printf("target: none of docs/performance.md applies to this run\n");
	for (unsigned k = 0; k < x->ntargets; k++)
		printf("target: %s %.3f >= %.2f: %s\n", x->targets[k].what, x->targets[k].value,
		       x->targets[k].min, x->targets[k].met ? "met" : "NOT met");
}

static void json_hist(const char *name, const struct wcb_hist *h)
{
	printf("\"%s\": {\"count\": %llu, \"p50\": %.0f, \"p99\": %.0f, \"p99_9\": %.0f, "
	       "\"mean\": %.1f, \"min\": %llu, \"max\": %llu}", name, (unsigned long long)h->count,
	       wcb_hist_quantile(h, 0.5), wcb_hist_quantile(h, 0.99), wcb_hist_quantile(h, 0.999),
	       wcb_hist_mean(h), (unsigned long long)(h->count ? h->min : 0),
	       (unsigned long long)h->max);
}

static void json_array(const char *name, const double *v, unsigned n)
{
	printf("\"%s\": [", name);
	for (unsigned i = 0; i < n; i++)
		printf("%s%.4g", i ? ", " : "", v[i]);
	printf("]");
}

static void json_delta(const struct run_stats_delta *d)
{
	printf("\"stats_delta\": {\"reads\": %llu, \"read_hits\": %llu, \"writes\": %llu, "
	       "\"write_hits_uncommitted\": %llu, \"write_hits_committed\": %llu, "
	       "\"writes_around\": %llu, \"writes_allocate\": %llu, "
	       "\"writes_blocked_on_freelist\": %llu, \"flushes\": %llu, \"discards\": %llu, "
	       "\"commits\": %llu, \"writeback_ios\": %llu, \"writeback_bytes\": %llu, "
	       "\"writeback_errors\": %llu}",
	       (unsigned long long)d->reads, (unsigned long long)d->read_hits,
	       (unsigned long long)d->writes, (unsigned long long)d->write_hits_uncommitted,
	       (unsigned long long)d->write_hits_committed, (unsigned long long)d->writes_around,
	       (unsigned long long)d->writes_allocate,
	       (unsigned long long)d->writes_blocked_on_freelist, (unsigned long long)d->flushes,
	       (unsigned long long)d->discards, (unsigned long long)d->commits,
	       (unsigned long long)d->writeback_ios, (unsigned long long)d->writeback_bytes,
	       (unsigned long long)d->writeback_errors);
}

void run_report_json(const struct run_ctx *x)
{
	const struct run_opts *o = &x->o;
	const struct wc_config *cc = &x->c->cfg;
	const struct wc_pmem_info *in = &x->c->fp.info;

	printf("{\n  \"tool\": \"wcbench run\",\n  \"workload\": \"%s\",\n", run_workload_name(o->wl));
	printf("  \"read_pct\": %u,\n  \"bs\": %llu,\n  \"working_set\": %llu,\n",
	       o->wl == WL_RANDRW ? o->read_pct : o->wl == WL_RANDREAD ? 100 : 0,
	       (unsigned long long)o->bs, (unsigned long long)(x->slots * o->bs));
	if (o->ops)
		printf("  \"ops\": %llu,\n", (unsigned long long)o->ops);
	else
		printf("  \"duration_s\": %g,\n", o->duration_s);
	printf("  \"runs\": %u,\n  \"fua\": %s,\n  \"flush_every\": %llu,\n  \"prefill\": %s,\n",
	       o->runs, o->fua ? "true" : "false", (unsigned long long)o->flush_every,
	       o->no_prefill ? "false" : "true");
	printf("  \"cache\": {\"path\": ");
	wcb_json_str(stdout, o->cache_path);
	printf(", \"blocks\": %llu, \"block_size\": %u, \"granularity\": ",
	       (unsigned long long)x->final.blocks, x->bs_cache);
	wcb_json_str(stdout, x->final.granularity);
	printf(", \"granularity_forced\": %s, \"origin\": ", x->forced_gran ? "true" : "false");
	wcb_json_str(stdout, o->origin_path);
	printf(", \"origin_size\": %llu, \"origin_mode\": ", (unsigned long long)wc_size(x->c));
	wcb_json_str(stdout, x->final.origin_mode);
	printf(", \"options\": ");
	wcb_json_str(stdout, o->options ? o->options : "");
	printf(", \"autocommit_blocks\": %u, \"autocommit_ms\": %u, \"high_watermark\": %u, "
	       "\"low_watermark\": %u},\n", cc->autocommit_blocks, cc->autocommit_ms,
	       cc->high_watermark, cc->low_watermark);
	printf("  \"policy\": ");
	wcb_json_policy(stdout, in);
	printf(",\n  \"policy_source\": ");
	wcb_json_str(stdout, x->final.pmem_source);
	printf(",\n  \"results\": [\n");
	for (unsigned k = 0; k < x->nconfigs; k++) {
		const struct run_config *cfg = &x->configs[k];

		printf("    {\"threads\": %u,\n     \"cache\": {\"iops\": %.0f, \"mbps\": %.1f, ",
		       cfg->threads, cfg->cache_iops_med, cfg->cache_iops_med * (double)o->bs / 1e6);
		json_array("iops_rounds", cfg->cache_iops, o->runs);
		printf(", \"cpu_ns_per_op\": %.1f, ", cfg->cache_cpu_op_med);
		json_hist("latency_ns", &cfg->cache_hist);
		printf("},\n");
		if (!o->no_floor) {
			printf("     \"floor\": {\"iops\": %.0f, \"mbps\": %.1f, ", cfg->floor_iops_med,
			       cfg->floor_iops_med * (double)o->bs / 1e6);
			json_array("iops_rounds", cfg->floor_iops, o->runs);
			printf(", \"cpu_ns_per_op\": %.1f, ", cfg->floor_cpu_op_med);
			json_hist("latency_ns", &cfg->floor_hist);
			printf("},\n     \"cache_vs_floor\": %.4f, ", cfg->ratio_med);
			json_array("cache_vs_floor_rounds", cfg->ratio, o->runs);
			printf(", \"cache_vs_floor_cpu\": %.4f", cfg->cpu_ratio_med);
			if (run_has_lock_floor(x)) {
				printf(",\n     \"%s\": {\"iops\": %.0f, ",
				       o->fua ? "floor_commit" : "floor_lock", cfg->lock_iops_med);
				json_array("iops_rounds", cfg->lock_iops, o->runs);
				printf(", ");
				json_hist("latency_ns", &cfg->lock_hist);
				printf("}, \"%s\": %.4f", o->fua ? "cache_vs_floor_commit" : "cache_vs_floor_lock",
				       cfg->lock_ratio_med);
			}
			printf(",\n");
		}
		printf("     ");
		json_delta(&cfg->delta);
		printf("}%s\n", k + 1 == x->nconfigs ? "" : ",");
	}
	printf("  ],\n");
	if (x->nconfigs == 2) {
		printf("  \"scaling\": {\"cache\": %.4f, \"cache_cpu_estimate\": %.4f",
		       x->scaling_cache, x->scaling_cache_cpu);
		if (!o->no_floor)
			printf(", \"floor\": %.4f, \"floor_cpu_estimate\": %.4f", x->scaling_floor,
			       x->scaling_floor_cpu);
		printf("},\n");
	}
	printf("  \"after\": {\"blocks\": %llu, \"free_blocks\": %llu, \"dirty_blocks\": %llu, "
	       "\"writeback_blocks\": %llu, \"dram_bytes\": %llu, \"error\": %d},\n",
	       (unsigned long long)x->final.blocks, (unsigned long long)x->final.free_blocks,
	       (unsigned long long)x->final.dirty_blocks,
	       (unsigned long long)x->final.writeback_blocks,
	       (unsigned long long)x->final.dram_bytes, x->final.error);
	printf("  \"targets\": [");
	for (unsigned k = 0; k < x->ntargets; k++) {
		printf("%s{\"what\": ", k ? ", " : "");
		wcb_json_str(stdout, x->targets[k].what);
		printf(", \"value\": %.4f, \"min\": %.2f, \"met\": %s}", x->targets[k].value,
		       x->targets[k].min, x->targets[k].met ? "true" : "false");
	}
	printf("]\n}\n");
}
