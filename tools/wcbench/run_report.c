/* SPDX-License-Identifier: BSD-3-Clause */
/* run_report.c -- `wcbench run` results as a table or as JSON. */
#include <stdio.h>
#include <string.h>

#include "run.h"
#include "wcbench.h"

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
	       iops * (double)bs / 1e6, wcb_ns_str(p50, sizeof(p50), 2, wcb_hist_quantile(h, 0.5)),
	       wcb_ns_str(p99, sizeof(p99), 2, wcb_hist_quantile(h, 0.99)),
	       wcb_ns_str(p999, sizeof(p999), 2, wcb_hist_quantile(h, 0.999)),
	       wcb_ns_str(mean, sizeof(mean), 2, wcb_hist_mean(h)),
	       wcb_ns_str(max, sizeof(max), 2, (double)h->max));
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
	const struct wc_config *cc = &x->cfg;
	char s1[32], s2[32], s3[32], text[256];

	length_text(text, sizeof(text), o);
	printf("wcbench run: %s%s, bs %s, working set %s, %s, median of %u round%s\n",
	       run_workload_name(o->wl), o->fua ? " FUA" : "", wct_size_str(s1, sizeof(s1), o->bs),
	       wct_size_str(s2, sizeof(s2), x->slots * o->bs), text, o->runs, o->runs > 1 ? "s" : "");
	if (o->wl == WL_RANDRW)
		printf("read mix: %u%% reads\n", o->read_pct);
	if (o->flush_every)
		printf("wc_flush every %llu writes per thread\n", (unsigned long long)o->flush_every);
	if (x->block)
		printf("cache: %s, block medium (%s), %llu blocks of %u B (%s); origin %s, %s (%s)\n",
		       o->cache_path, x->medium_reason, (unsigned long long)x->final.blocks, x->bs_cache,
		       wct_size_str(s1, sizeof(s1), x->final.blocks * x->bs_cache), o->origin_path,
		       wct_size_str(s2, sizeof(s2), wc_size(x->c)), x->final.origin_mode);
	else
		printf("cache: %s, %llu blocks of %u B (%s), granularity %s%s; origin %s, %s (%s)\n",
		       o->cache_path, (unsigned long long)x->final.blocks, x->bs_cache,
		       wct_size_str(s1, sizeof(s1), x->final.blocks * x->bs_cache), x->final.granularity,
		       x->forced_gran ? " (PMEM2_FORCE_GRANULARITY set by wcbench)" : "", o->origin_path,
		       wct_size_str(s2, sizeof(s2), wc_size(x->c)), x->final.origin_mode);
	printf("config: autocommit %u blocks / %u ms, watermarks %u/%u%%%s\n",
	       cc->autocommit_blocks, cc->autocommit_ms, cc->high_watermark, cc->low_watermark,
	       o->no_prefill ? ", no prefill" : ", working set written and committed first");
	if (x->block && !o->no_floor)
		printf("floor: the same operations as raw O_DIRECT %s on a written %s file in %s "
		       "(the cache file's file system)%s\n", o->wl == WL_RANDREAD ? "preads" :
		       o->fua ? "pwritev2(RWF_DSYNC)" : "pwrites", wct_size_str(s3, sizeof(s3), x->floor_len),
		       x->dir, o->flush_every ? ", fdatasync per --flush-every" : "");
	if (x->block)
		printf("block medium: %llu records, %llu synced one by one (FUA), %llu device "
		       "flushes, %llu segments reclaimed\n",
		       (unsigned long long)x->final.medium_records,
		       (unsigned long long)x->final.medium_dsync_writes,
		       (unsigned long long)x->final.medium_flushes,
		       (unsigned long long)x->final.medium_segments_reclaimed);
	if (!x->block) {
		wcb_policy_text(text, sizeof(text), &x->fp.info);
		printf("policy: %s, %s (cache and floor) -- %s\n", text, x->final.pmem_source,
		       x->fp.info.reason);
	}
	if (!o->no_floor && !x->block)
		printf("floor: the same operations with the flush engine alone into a %s region "
		       "beside the cache file, one drain per %s\n", wct_size_str(s3, sizeof(s3), x->floor_len),
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
	       wct_size_str(s1, sizeof(s1), x->final.dram_bytes), x->final.error);
	if (!x->ntargets)
		printf("target: none of docs/performance.md applies to this run\n");
	for (unsigned k = 0; k < x->ntargets; k++)
		if (x->block)
			printf("target: %s %.3f >= %.2f: %s\n", x->targets[k].what, x->targets[k].value,
			       x->targets[k].min, x->targets[k].met ? "PASS" : "FAIL");
		else
			printf("target: %s %.3f >= %.2f: %s\n", x->targets[k].what, x->targets[k].value,
			       x->targets[k].min, x->targets[k].met ? "met" : "NOT met");
}

static void json_hist(struct wct_json *j, const char *name, const struct wcb_hist *h)
{
	wct_json_object(j, name, false);
	wct_json_u64(j, "count", h->count);
	wct_json_num(j, "p50", "%.0f", wcb_hist_quantile(h, 0.5));
	wct_json_num(j, "p99", "%.0f", wcb_hist_quantile(h, 0.99));
	wct_json_num(j, "p99_9", "%.0f", wcb_hist_quantile(h, 0.999));
	wct_json_num(j, "mean", "%.1f", wcb_hist_mean(h));
	wct_json_u64(j, "min", h->count ? h->min : 0);
	wct_json_u64(j, "max", h->max);
	wct_json_end(j);
}

static void json_array(struct wct_json *j, const char *name, const double *v, unsigned n)
{
	wct_json_array(j, name, false);
	for (unsigned i = 0; i < n; i++)
		wct_json_num(j, NULL, "%.4g", v[i]);
	wct_json_end(j);
}

static void json_delta(struct wct_json *j, const struct run_stats_delta *d)
{
	wct_json_object(j, "stats_delta", false);
#define D(f) wct_json_u64(j, #f, d->f)
	D(reads); D(read_hits); D(writes); D(write_hits_uncommitted); D(write_hits_committed);
	D(writes_around); D(writes_allocate); D(writes_blocked_on_freelist); D(flushes);
	D(discards); D(commits); D(writeback_ios); D(writeback_bytes); D(writeback_errors);
#undef D
	wct_json_end(j);
}

/* One phase: IOPS, MB/s, per-round IOPS, CPU per op and latency. */
static void json_phase(struct wct_json *j, const char *name, double iops, uint64_t bs,
                       const double *rounds, unsigned runs, double cpu_op,
                       const struct wcb_hist *h)
{
	wct_json_object(j, name, false);
	wct_json_num(j, "iops", "%.0f", iops);
	if (bs)
		wct_json_num(j, "mbps", "%.1f", iops * (double)bs / 1e6);
	json_array(j, "iops_rounds", rounds, runs);
	if (cpu_op >= 0)
		wct_json_num(j, "cpu_ns_per_op", "%.1f", cpu_op);
	json_hist(j, "latency_ns", h);
	wct_json_end(j);
}

void run_report_json(const struct run_ctx *x)
{
	const struct run_opts *o = &x->o;
	const struct wc_config *cc = &x->cfg;
	struct wct_json j;

	wcb_json_head(&j, "wcbench run");
	wct_json_str(&j, "workload", run_workload_name(o->wl));
	wct_json_u64(&j, "read_pct", o->wl == WL_RANDRW ? o->read_pct : o->wl == WL_RANDREAD ? 100 : 0);
	wct_json_u64(&j, "bs", o->bs);
	wct_json_u64(&j, "working_set", x->slots * o->bs);
	if (o->ops)
		wct_json_u64(&j, "ops", o->ops);
	else
		wct_json_num(&j, "duration_s", "%g", o->duration_s);
	wct_json_u64(&j, "runs", o->runs);
	wct_json_bool(&j, "fua", o->fua);
	wct_json_u64(&j, "flush_every", o->flush_every);
	wct_json_bool(&j, "prefill", !o->no_prefill);
	wct_json_object(&j, "cache", false);
	wct_json_str(&j, "path", o->cache_path);
	wct_json_u64(&j, "blocks", x->final.blocks);
	wct_json_u64(&j, "block_size", x->bs_cache);
	wct_json_str(&j, "medium", x->block ? "block" : "pmem");
	wct_json_str(&j, "medium_reason", x->medium_reason);
	wct_json_str(&j, "granularity", x->final.granularity);
	wct_json_bool(&j, "granularity_forced", x->forced_gran);
	wct_json_str(&j, "origin", o->origin_path);
	wct_json_u64(&j, "origin_size", wc_size(x->c));
	wct_json_str(&j, "origin_mode", x->final.origin_mode);
	wct_json_str(&j, "options", o->options ? o->options : "");
	wct_json_u64(&j, "autocommit_blocks", cc->autocommit_blocks);
	wct_json_u64(&j, "autocommit_ms", cc->autocommit_ms);
	wct_json_u64(&j, "high_watermark", cc->high_watermark);
	wct_json_u64(&j, "low_watermark", cc->low_watermark);
	wct_json_end(&j);
	wcb_json_policy(&j, "policy", &x->fp.info);
	wct_json_str(&j, "policy_source", x->final.pmem_source);
	wct_json_array(&j, "results", true);
	for (unsigned k = 0; k < x->nconfigs; k++) {
		const struct run_config *cfg = &x->configs[k];

		wct_json_object(&j, NULL, false);
		wct_json_u64(&j, "threads", cfg->threads);
		json_phase(&j, "cache", cfg->cache_iops_med, o->bs, cfg->cache_iops, o->runs,
		           cfg->cache_cpu_op_med, &cfg->cache_hist);
		if (!o->no_floor) {
			json_phase(&j, "floor", cfg->floor_iops_med, o->bs, cfg->floor_iops, o->runs,
			           cfg->floor_cpu_op_med, &cfg->floor_hist);
			wct_json_num(&j, "cache_vs_floor", "%.4f", cfg->ratio_med);
			json_array(&j, "cache_vs_floor_rounds", cfg->ratio, o->runs);
			wct_json_num(&j, "cache_vs_floor_cpu", "%.4f", cfg->cpu_ratio_med);
			if (run_has_lock_floor(x)) {
				json_phase(&j, o->fua ? "floor_commit" : "floor_lock", cfg->lock_iops_med,
				           0, cfg->lock_iops, o->runs, -1, &cfg->lock_hist);
				wct_json_num(&j, o->fua ? "cache_vs_floor_commit" : "cache_vs_floor_lock",
				             "%.4f", cfg->lock_ratio_med);
			}
		}
		json_delta(&j, &cfg->delta);
		wct_json_end(&j);
	}
	wct_json_end(&j);
	if (x->nconfigs == 2) {
		wct_json_object(&j, "scaling", false);
		wct_json_num(&j, "cache", "%.4f", x->scaling_cache);
		wct_json_num(&j, "cache_cpu_estimate", "%.4f", x->scaling_cache_cpu);
		if (!o->no_floor) {
			wct_json_num(&j, "floor", "%.4f", x->scaling_floor);
			wct_json_num(&j, "floor_cpu_estimate", "%.4f", x->scaling_floor_cpu);
		}
		wct_json_end(&j);
	}
	wct_json_object(&j, "after", false);
	wct_json_u64(&j, "blocks", x->final.blocks);
	wct_json_u64(&j, "free_blocks", x->final.free_blocks);
	wct_json_u64(&j, "dirty_blocks", x->final.dirty_blocks);
	wct_json_u64(&j, "writeback_blocks", x->final.writeback_blocks);
	wct_json_u64(&j, "dram_bytes", x->final.dram_bytes);
	wct_json_int(&j, "error", x->final.error);
	wct_json_end(&j);
	wct_json_array(&j, "targets", false);
	for (unsigned k = 0; k < x->ntargets; k++) {
		wct_json_object(&j, NULL, false);
		wct_json_str(&j, "what", x->targets[k].what);
		wct_json_num(&j, "value", "%.4f", x->targets[k].value);
		wct_json_num(&j, "min", "%.2f", x->targets[k].min);
		wct_json_bool(&j, "met", x->targets[k].met);
		wct_json_end(&j);
	}
	wct_json_end(&j);
	wct_json_end(&j);
}
