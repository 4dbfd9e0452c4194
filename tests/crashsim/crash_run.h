/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_run.h -- the crash sweep: run a cache workload under the power-
 * failure simulator (crashsim.h), capture crash images of the cache file
 * and of the origin at every drain and at random points between drains,
 * recover each image, check it against the model (crash_model.h), crash the
 * recovery itself and check again.  Used by check_crash_cache (quick sweep)
 * and crash-sweep (>= 10,000 images).
 *
 * The workloads run single-threaded (no_threads = true, write-back driven by
 * the writer and wc_poll) so that one seed replays the same drains.
 */
#ifndef WC_CRASH_RUN_H
#define WC_CRASH_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct crash_opts {
	uint64_t seed;
	uint64_t max_images;        /* stop capturing after this many (0 = no limit) */
	unsigned random_per_point;  /* random LINES and TORN images at each drain (0 = 1) */
	unsigned written_per_mille; /* chance of a crash point at a written() event */
	unsigned recovery_every;    /* crash the recovery of every Nth image (0 = never) */
	unsigned probe_every;       /* write + reopen probe on every Nth recovered image (0 = never) */
	const char *scratch_dir;    /* image files live here (a /dev/shm folder) */
	const char *dump_dir;       /* each violation is dumped in a folder here (NULL = not) */
	FILE *log;                  /* violations and progress (NULL = quiet) */
	FILE *trace;                /* print every call, drain and origin request here */
	unsigned sabotage_drain_every; /* every Nth drain of the workload takes no effect:
	                                  proves the sweep fails on a missing fence (0 = off) */
};

struct crash_result {
	uint64_t images;            /* crash images recovered and checked */
	uint64_t recovery_images;   /* ... of which crashed a recovery */
	uint64_t refused;           /* torn formats refused with a message (allowed) */
	uint64_t violations;
	uint64_t drains;            /* drains seen in workloads */
	uint64_t probes;
	uint64_t calls;             /* workload calls issued */
	uint64_t errors;            /* workload calls that failed (the run is void) */
};

/* NULL-terminated list of workload names. */
const char *const *crash_workloads(void);
const char *crash_workload_about(const char *name);

/* Run one workload; results are added to *r.  0, or a negative errno when
 * the run itself could not be done (then r->errors > 0 says why in log). */
int crash_run(const char *workload, const struct crash_opts *o, struct crash_result *r);

/* A regression test: rerun the sweep that DIR/rerun.txt describes (a
 * protocol bug), or check the dumped image in DIR again (a recovery bug).
 * 1 on violations (the first one in why), 0 on a pass, negative errno when
 * the folder cannot be read or run. */
int crash_replay(const char *dir, const char *scratch_dir, char *why, size_t why_len);

#endif
