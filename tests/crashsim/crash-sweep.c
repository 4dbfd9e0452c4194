/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash-sweep -- the long power-failure sweep: runs the crash workloads
 * (crash_workloads.c) with seed S, S+1, ... until N crash images have been
 * recovered and checked, and prints "images=N violations=M".  Exit 0 when
 * there is no violation, 1 when there is (each dumped with --dump), 2 on a
 * usage or setup error.
 *
 *   crash-sweep --images 10000 --seed 1
 *   crash-sweep --workload discard --images 500 --dump /tmp/violations
 *   crash-sweep --replay tests/crash-regressions/NAME   (an image, or a
 *                                                       rerun.txt sweep)
 *   crash-sweep --sabotage 3 --images 500   (must report violations)
 *   crash-sweep --medium block --images 300000 --workload all
 *                  (the block medium on a simulated disk, crash_block.h;
 *                  without --workload its single-thread workloads, which
 *                  replay; "all" adds the threaded ones)
 *   crash-sweep --medium block --sabotage-flush 3   (must report violations)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crash_block.h"
#include "crash_run.h"
#include "testutil.h"

static void usage(FILE *f)
{
	const char *const *names = crash_workloads();

	fprintf(f,
	        "usage: crash-sweep [--images N] [--seed S] [--workload NAME] [--dump DIR]\n"
	        "                   [--random-per-point R] [--written-per-mille P]\n"
	        "                   [--recovery-every K] [--probe-every K] [--sabotage N]\n"
	        "                   [--trace] [-v]\n"
	        "       crash-sweep --replay DIR   (DIR/rerun.txt names its own options)\n"
	        "       crash-sweep --list\n"
	        "       crash-sweep --medium block [--images N] [--seed S] [--workload NAME|all]\n"
	        "                   [--random-per-point R] [--recovery-every K] [--probe-every K]\n"
	        "                   [--sabotage-flush N] [--sabotage-dsync N] [--point-every N]\n"
	        "                   [--dump DIR] [-v]\n"
	        "defaults: --images 10000 --seed 1 --random-per-point 2 --written-per-mille 50\n"
	        "          --recovery-every 4 --probe-every 16; all workloads in turn\n"
	        "workloads:");
	for (; *names; names++)
		fprintf(f, " %s", *names);
	fprintf(f, "\nblock workloads:");
	for (names = blk_workloads(); *names; names++)
		fprintf(f, " %s", *names);
	fprintf(f, "\n");
}

static int parse_u64(const char *s, const char *what, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	if (errno || !*s || *end || s[0] == '-') {
		fprintf(stderr, "crash-sweep: %s: not a number: '%s'\n", what, s);
		return -EINVAL;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The block medium's sweep (crash_block.h), with crash-sweep's options
 * that mean something there. */
static int block_sweep(const struct crash_opts *co, const char *workload, uint64_t images,
                       unsigned sab_flush, unsigned sab_dsync, unsigned point_every,
                       bool verbose)
{
	struct blk_opts o = {
		.seed = co->seed, .random_per_point = co->random_per_point ? co->random_per_point : 1,
		.recovery_every = co->recovery_every, .probe_every = co->probe_every,
		.sabotage_flush_every = sab_flush, .sabotage_dsync_every = sab_dsync,
		.point_every = point_every,
		.dump_dir = co->dump_dir, .log = stderr, .trace = co->trace,
	};
	struct blk_result r = { 0 };
	uint64_t first_seed = o.seed;
	double t0 = now_s();

	if (workload && strcmp(workload, "all") != 0 && !blk_workload_about(workload)) {
		fprintf(stderr, "crash-sweep: --workload: no block workload '%s'\n", workload);
		return 2;
	}
	o.verbose = verbose;
	blk_sweep(workload, images, &o, &r);
	printf("images=%" PRIu64 " violations=%" PRIu64 "\n", r.images, r.violations);
	printf("medium=block recovery_images=%" PRIu64 " refused_torn_formats=%" PRIu64 " probes=%"
	       PRIu64 " workload_calls=%" PRIu64 " device_writes=%" PRIu64 " dsync_writes=%" PRIu64
	       " device_flushes=%" PRIu64 " segments_reclaimed=%" PRIu64 " skipped_points=%" PRIu64
	       " seeds=%" PRIu64 "..%" PRIu64 " seconds=%.1f errors=%" PRIu64 "\n",
	       r.recovery_images, r.refused, r.probes, r.calls, r.device_writes, r.dsync_writes,
	       r.device_flushes, r.segments_reclaimed, r.skipped, first_seed,
	       o.seed - 1, now_s() - t0, r.errors);
	if (r.errors)
		return 2;
	return r.violations ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "images", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "workload", required_argument, NULL, 'w' },
		{ "dump", required_argument, NULL, 'd' },
		{ "random-per-point", required_argument, NULL, 'r' },
		{ "written-per-mille", required_argument, NULL, 'p' },
		{ "recovery-every", required_argument, NULL, 'R' },
		{ "probe-every", required_argument, NULL, 'P' },
		{ "sabotage", required_argument, NULL, 'S' },
		{ "replay", required_argument, NULL, 'y' },
		{ "trace", no_argument, NULL, 't' },
		{ "list", no_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "medium", required_argument, NULL, 'm' },
		{ "sabotage-flush", required_argument, NULL, 'F' },
		{ "sabotage-dsync", required_argument, NULL, 'D' },
		{ "point-every", required_argument, NULL, 'E' },
		{ NULL, 0, NULL, 0 },
	};
	struct crash_opts o = {
		.seed = 1, .random_per_point = 2, .written_per_mille = 50,
		.recovery_every = 4, .probe_every = 16, .log = stderr,
	};
	struct crash_result r = { 0 };
	const char *workload = NULL, *replay = NULL;
	uint64_t images = 10000, v, first_seed;
	bool verbose = false, block = false;
	unsigned sab_flush = 0, sab_dsync = 0, point_every = 0;
	double t0;
	int c;

	while ((c = getopt_long(argc, argv, "n:s:w:d:r:p:R:P:S:y:tlvhm:F:D:E:", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_u64(optarg, "--images", &images) || images == 0)
				return 2;
			break;
		case 's':
			if (parse_u64(optarg, "--seed", &o.seed))
				return 2;
			break;
		case 'm':
			if (strcmp(optarg, "block") != 0 && strcmp(optarg, "pmem") != 0) {
				fprintf(stderr, "crash-sweep: --medium: pmem or block, not '%s'\n", optarg);
				return 2;
			}
			block = strcmp(optarg, "block") == 0;
			break;
		case 'E':
			if (parse_u64(optarg, "--point-every", &v) || v > UINT32_MAX)
				return 2;
			point_every = (unsigned)v;
			break;
		case 'F':
		case 'D':
			if (parse_u64(optarg, c == 'F' ? "--sabotage-flush" : "--sabotage-dsync", &v) ||
			    v == 0 || v > UINT32_MAX)
				return 2;
			*(c == 'F' ? &sab_flush : &sab_dsync) = (unsigned)v;
			break;
		case 'w':
			if (!crash_workload_about(optarg) && !blk_workload_about(optarg) &&
			    strcmp(optarg, "all") != 0) {
				fprintf(stderr, "crash-sweep: --workload: unknown workload '%s'\n", optarg);
				usage(stderr);
				return 2;
			}
			workload = optarg;
			break;
		case 'd':
			o.dump_dir = optarg;
			break;
		case 'r':
			if (parse_u64(optarg, "--random-per-point", &v) || v == 0 || v > 8)
				return 2;
			o.random_per_point = (unsigned)v;
			break;
		case 'p':
			if (parse_u64(optarg, "--written-per-mille", &v) || v > 1000)
				return 2;
			o.written_per_mille = (unsigned)v;
			break;
		case 'R':
			if (parse_u64(optarg, "--recovery-every", &v) || v > UINT32_MAX)
				return 2;
			o.recovery_every = (unsigned)v;
			break;
		case 'P':
			if (parse_u64(optarg, "--probe-every", &v) || v > UINT32_MAX)
				return 2;
			o.probe_every = (unsigned)v;
			break;
		case 'S':
			if (parse_u64(optarg, "--sabotage", &v) || v == 0 || v > UINT32_MAX)
				return 2;
			o.sabotage_drain_every = (unsigned)v;
			break;
		case 'y':
			replay = optarg;
			break;
		case 't':
			o.trace = stdout;
			break;
		case 'l':
			for (const char *const *n = crash_workloads(); *n; n++)
				printf("%-10s %s\n", *n, crash_workload_about(*n));
			return 0;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	/* The real flush code runs on /dev/shm files only with this. */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	o.scratch_dir = wc_test_dir();

	if (replay) {
		char why[1024];
		int ret = crash_replay(replay, o.scratch_dir, why, sizeof(why));

		if (ret < 0) {
			fprintf(stderr, "crash-sweep: --replay %s: %s (%s)\n", replay, strerror(-ret), why);
			return 2;
		}
		printf("%s: %s\n", replay, why);
		return ret ? 1 : 0;
	}

	if (block || (workload && !crash_workload_about(workload)))
		return block_sweep(&o, workload, images, sab_flush, sab_dsync, point_every, verbose);
	if (sab_flush || sab_dsync) {
		fprintf(stderr, "crash-sweep: --sabotage-flush and --sabotage-dsync are for --medium block\n");
		return 2;
	}
	t0 = now_s();
	first_seed = o.seed;
	/* rerun_sweep() in crash_run.c repeats this loop for the rerun.txt
	 * regressions: keep the two alike, or old rerun lines change meaning. */
	while (r.images < images && r.errors == 0) {
		const char *const *names = crash_workloads();
		uint64_t seed_start = r.images;

		for (; *names && r.images < images && r.errors == 0; names++) {
			uint64_t before = r.images, bad = r.violations;
			int ret;

			if (workload && strcmp(*names, workload) != 0)
				continue;
			o.max_images = images;
			ret = crash_run(*names, &o, &r);
			if (ret < 0 && r.errors == 0) {
				fprintf(stderr, "crash-sweep: workload %s seed %" PRIu64 ": %s\n", *names,
				        o.seed, strerror(-ret));
				r.errors++;
			}
			if (verbose)
				fprintf(stderr, "%-10s seed %-6" PRIu64 " images %-6" PRIu64
				        " violations %" PRIu64 "\n", *names, o.seed, r.images - before,
				        r.violations - bad);
		}
		o.seed++;
		if (r.images == seed_start && r.errors == 0) {
			/* The next seeds would not capture any either: stop, and fail. */
			fprintf(stderr, "crash-sweep: seed %" PRIu64 " captured no image\n", o.seed - 1);
			r.errors++;
		}
	}
	printf("images=%" PRIu64 " violations=%" PRIu64 "\n", r.images, r.violations);
	printf("recovery_images=%" PRIu64 " refused_torn_formats=%" PRIu64 " probes=%" PRIu64
	       " workload_calls=%" PRIu64 " drains=%" PRIu64 " seeds=%" PRIu64 "..%" PRIu64
	       " seconds=%.1f errors=%" PRIu64 "\n", r.recovery_images, r.refused, r.probes, r.calls,
	       r.drains, first_seed, o.seed - 1, now_s() - t0, r.errors);
	if (r.errors)
		return 2;
	return r.violations ? 1 : 0;
}
