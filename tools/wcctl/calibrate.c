/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate.c -- `wcctl calibrate [CACHE]`: the flush engine's quick
 * measurement (wc_pmem_calibrate, what WC_PMEM_THRESHOLD=auto runs) beside
 * the policy in force (wc_pmem_info) and, given a cache file, the policy
 * recorded in its superblock (read only: wcctl never writes a cache here).
 * `wcbench calibrate` runs the same measurement and then a longer sweep
 * that prints every point; `wcbench calibrate --cache` measures a cache on
 * its own free blocks and records the result.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "wcctl.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: wcctl calibrate [CACHE] [--json]\n"
	        "Measure where cached stores + flush start beating non-temporal stores on\n"
	        "this machine (about 10-30 ms, on a private buffer) and show the flush\n"
	        "policy in force.  With CACHE, also the policy recorded in the cache's\n"
	        "superblock (what wc_open uses on a matching CPU; read only).  Caches\n"
	        "measure on their own free blocks at wc_create; to measure one again in\n"
	        "place: wcbench calibrate --cache CACHE.  To override: WC_PMEM_THRESHOLD=\n"
	        "<bytes>|nt|auto, or pmem_threshold=... in a cache's options.\n"
	        "A CACHE on the block medium has no flush policy (O_DIRECT device writes,\n"
	        "not CPU stores): it is said so, nothing is measured, exit 0.\n\n"
	        "  --json   one JSON object instead\n"
	        "  --help\n");
}

static const char *cpu_flags(char *buf, size_t len, unsigned cpu)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{ WC_CPU_CLFLUSH, "clflush" }, { WC_CPU_CLFLUSHOPT, "clflushopt" },
		{ WC_CPU_CLWB, "clwb" },       { WC_CPU_SSE2, "sse2" },
		{ WC_CPU_SSE42, "sse4.2" },    { WC_CPU_AVX2, "avx2" },
		{ WC_CPU_AVX512F, "avx512f" }, { WC_CPU_MOVDIR64B, "movdir64b" },
	};
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((cpu & names[i].bit) && at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? " " : "",
			                       names[i].name);
	return buf;
}

/* The superblock's policy line of `path` (validated superblock first);
 * `live` receives "live, in use by ..." for a cache open elsewhere, else "".
 * *block: the cache is on the block medium (no policy line: returns 0). */
static int read_record(const char *path, struct wcadm_policy *rec, char *live, size_t len,
                       bool *block)
{
	struct wcadm_image img;
	int ret = wcadm_image_open(&img, path);

	live[0] = '\0';
	*block = img.block;
	if (img.block) {
		wcadm_image_close(&img);
		return 0;
	}
	if (img.fd >= 0 && img.live)
		wcctl_live_str(live, len, &img);
	if (!ret)
		ret = wcadm_image_policy(&img, rec);
	wcadm_image_close(&img);
	return ret;
}

/* "recorded ..." line(s) for a cache's record; `measured` is this run's. */
static void print_record(const char *cache, const struct wcadm_policy *rec, size_t measured)
{
	char when[64];

	if (rec->valid == -ENODATA) {
		printf("recorded     none in %s (wc_open measures on its free blocks)\n", cache);
		return;
	}
	if (rec->valid) {
		printf("recorded     damaged in %s: %s (wc_open measures again)\n", cache,
		       rec->damage);
		return;
	}
	printf("recorded     %s, on %s's free blocks (%s, up to %u KiB, %.0f ms)\n", rec->result,
	       cache, wcctl_time_str(when, sizeof(when), rec->time), rec->max_size_kib,
	       rec->elapsed_us / 1e3);
	printf("             on %s: %s\n", rec->cpu,
	       rec->matches
	               ? "this CPU and setup, so wc_open uses it"
	               : "NOT this CPU or setup, so wc_open measures again");
	if ((rec->threshold == UINT64_MAX) != (measured == SIZE_MAX) ||
	    (measured != SIZE_MAX && rec->threshold != measured))
		printf("             (the fresh measurement above is on a private DRAM buffer, "
		       "up to 64 KiB; the record is on the cache's own memory)\n");
}

/*
 * A cache on the block medium writes with O_DIRECT device writes: no CPU
 * store ever persists it, so the flush engine's policy has nothing to
 * decide there and nothing is measured.  Not an error (exit 0): a script
 * that calibrates every cache of a host goes on; the reason is printed.
 */
static int not_applicable(const char *cache, bool json)
{
	static const char why[] = "a cache on the block medium persists with O_DIRECT device "
	                          "writes (RWF_DSYNC, device flushes), not CPU stores: it has no "
	                          "flush-engine policy to measure or record";

	if (json) {
		struct wct_json j;

		wct_json_init(&j, stdout);
		wct_json_object(&j, NULL, true);
		wct_json_str(&j, "cache", cache);
		wct_json_str(&j, "medium", "block");
		wct_json_bool(&j, "applicable", false);
		wct_json_str(&j, "reason", why);
		wct_json_end(&j);
	} else {
		printf("%s: nothing to calibrate: %s.\n"
		       "(`wcctl calibrate` without CACHE measures this machine's CPU stores for caches "
		       "on pmem.)\n", cache, why);
	}
	return WCCTL_OK;
}

int wcctl_calibrate(int argc, char **argv)
{
	const char *cmd = argv[0], *cache = NULL;
	struct wcadm_policy rec;
	bool block = false;
	struct wc_pmem_info info;
	size_t measured;
	bool json = false, env_bad;
	char flags[128], envmsg[512] = "", live[256] = "";
	double t0, ms;
	const struct wct_opt opts[] = {
		WCT_OPT_FLAG("json", &json),
		WCT_OPT_END,
	};
	int ret;

	ret = wct_opts_parse(cmd, opts, argc, argv, usage, true);
	if (ret)
		return ret;
	if (argc - optind == 1) {
		cache = argv[optind];
		ret = read_record(cache, &rec, live, sizeof(live), &block);
		if (ret) {
			fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
			return WCCTL_FAIL;
		}
		if (block)
			return not_applicable(cache, json);
	} else {
		ret = wcctl_positional(cmd, argc, argv, optind, 0, "at most one CACHE");
		if (ret)
			return ret;
	}

	/* wc_pmem_info fills `info` even when a WC_PMEM_* variable is bad;
	 * the bad variable is still a failure (never silently ignored). */
	env_bad = wc_pmem_info(&info) != 0;
	if (env_bad)
		snprintf(envmsg, sizeof(envmsg), "%s", wc_errmsg());
	t0 = wct_now_ns() / 1e9;
	ret = wc_pmem_calibrate(&measured);
	ms = (wct_now_ns() / 1e9 - t0) * 1e3;
	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	cpu_flags(flags, sizeof(flags), info.cpu);

	if (json) {
		struct wct_json j;

		wct_json_init(&j, stdout);
		wct_json_object(&j, NULL, true);
		wct_json_threshold(&j, "measured_threshold", measured);
		wct_json_num(&j, "measure_ms", "%.1f", ms);
		wct_json_object(&j, "in_force", false);
		wcctl_json_policy(&j, &info);
		wct_json_end(&j);
		wct_json_object(&j, "cpu", false);
		wct_json_cpu(&j, &info);
		wct_json_str(&j, "features", flags);
		wct_json_end(&j);
		if (cache) {
			wct_json_object(&j, "recorded", false);
			wct_json_str(&j, "cache", cache);
			wct_json_str(&j, "state", rec.valid == -ENODATA ? "none" : rec.valid ? "damaged"
			                                                  : "valid");
			wct_json_bool(&j, "live", live[0]);
			if (!rec.valid) {
				wct_json_threshold(&j, "threshold", rec.threshold == UINT64_MAX ? SIZE_MAX :
				                   (size_t)rec.threshold);
				wct_json_u64(&j, "max_size_kib", rec.max_size_kib);
				wct_json_u64(&j, "time", rec.time);
				wct_json_bool(&j, "matches_this_cpu", rec.matches);
			}
			wct_json_end(&j);
		}
		wct_json_str(&j, "environment_error", env_bad ? envmsg : NULL);
		wct_json_end(&j);
	} else {
		printf("cpu          %s family %u model %u stepping %u, line %u B\n",
		       info.vendor ? info.vendor : "?", info.family, info.model, info.stepping,
		       info.line_size);
		printf("features     %s\n", flags);
		if (measured == SIZE_MAX)
			printf("measured     non-temporal stores win at every size (%.0f ms)\n", ms);
		else
			printf("measured     cached+flush wins from %zu bytes (%.0f ms)\n", measured, ms);
		if (info.threshold == SIZE_MAX)
			printf("in force     non-temporal at every size (%s)\n", info.reason);
		else
			printf("in force     threshold %zu (%s)\n", info.threshold, info.reason);
		printf("             small copies %s, large copies %s\n", info.small_strategy,
		       info.large_strategy);
		if (cache)
			print_record(cache, &rec, measured);
		if (live[0])
			printf("             (%s %s: read only, as always here)\n", cache, live);
		if (measured != info.threshold) {
			char t[32];

			if (measured == SIZE_MAX)
				snprintf(t, sizeof(t), "nt");
			else
				snprintf(t, sizeof(t), "%zu", measured);
			printf("to use it    WC_PMEM_THRESHOLD=%s (or =auto: measure at start-up), "
			       "or pmem_threshold=%s in a cache's options\n", t, t);
		}
	}
	if (env_bad) {
		fprintf(stderr, "%s: %s\n", cmd, envmsg);
		return WCCTL_FAIL;
	}
	return WCCTL_OK;
}
