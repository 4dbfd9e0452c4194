/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * run.h -- what the three files of `wcbench run` share: run.c (options,
 * set-up, rounds), run_phase.c (the timed worker threads), run_report.c
 * (text and JSON).
 */
#ifndef WCBENCH_RUN_H
#define WCBENCH_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "histogram.h"
#include "wcache.h"
#include "wcadmin.h"

#define RUN_MAX_THREADS 64
#define RUN_MAX_ROUNDS 101

enum workload { WL_RANDWRITE, WL_SEQWRITE, WL_RANDREAD, WL_RANDRW, WL_COUNT };

struct run_opts {
	enum workload wl;
	unsigned read_pct;        /* randrw */
	uint64_t bs;              /* 0 = the cache's block size */
	unsigned threads;
	double duration_s;        /* per phase, unless ops */
	uint64_t ops;             /* per phase, all threads together */
	unsigned runs;
	uint64_t working_set;
	uint64_t flush_every;
	bool fua, scaling, force, keep, no_prefill, no_floor, no_lock_floor, check, json, quiet;
	bool block_targets;
	const char *options, *cache_path, *origin_path;
	uint64_t cache_size, origin_size, seed;
};

/* Counters of wc_stats, summed over the cache phases of one configuration. */
struct run_stats_delta {
	uint64_t reads, read_hits, writes, write_hits_uncommitted, write_hits_committed,
	         writes_around, writes_allocate, writes_blocked_on_freelist, flushes, discards,
	         commits, writeback_ios, writeback_bytes, writeback_errors;
};

/* One thread count, measured over all rounds. */
struct run_config {
	unsigned threads;
	double cache_iops[RUN_MAX_ROUNDS], floor_iops[RUN_MAX_ROUNDS], ratio[RUN_MAX_ROUNDS];
	/* CPU ns per operation, and floor/cache of it: insensitive to time
	 * the workers spent preempted on a shared machine. */
	double cache_cpu_op[RUN_MAX_ROUNDS], floor_cpu_op[RUN_MAX_ROUNDS], cpu_ratio[RUN_MAX_ROUNDS];
	double cache_iops_med, floor_iops_med, ratio_med;
	double cache_cpu_op_med, floor_cpu_op_med, cpu_ratio_med;
	double lock_iops[RUN_MAX_ROUNDS], lock_ratio[RUN_MAX_ROUNDS];
	double lock_iops_med, lock_ratio_med;
	struct wcb_hist lock_hist;
	uint64_t cache_ops;
	struct wcb_hist cache_hist, floor_hist; /* all threads, all rounds */
	struct run_stats_delta delta;
	uint64_t last_ops[RUN_MAX_THREADS]; /* of the last cache phase: floors run first repeat it */
};

/* PHASE_FLOOR_LOCK: the floor plus one uncontended mutex lock/unlock per
 * write -- the ceiling of any design that takes a lock per write, since on
 * x86 a locked instruction waits for the thread's non-temporal stores like
 * a fence does. */
enum phase_kind { PHASE_CACHE, PHASE_FLOOR, PHASE_FLOOR_LOCK };

struct run_phase_result {
	uint64_t ops;
	double ns, iops;
	double cpu_ns;           /* CPU time of all workers */
	uint64_t per_thread_ops[RUN_MAX_THREADS]; /* what the floor then repeats */
	struct wcb_hist hist;
};

/* A performance target this run can judge (docs/performance.md). */
struct run_target {
	const char *what;        /* "4 KiB random writes, 1 thread: cache / (floor + lock)" */
	double value, min;
	bool met;
};

struct run_ctx {
	struct run_opts o;
	bool forced_gran, cache_ours, origin_ours;
	wc_cache *c;
	uint32_t bs_cache;
	uint64_t slots;            /* working set / bs */
	struct wc_config cfg;      /* the cache's, defaults resolved */
	struct wcadm_persist fp;   /* the cache's policy; the floor uses it too */
	char *floor;
	uint64_t floor_len;
	/* The block medium (wc_stats.medium "block"): the floor is raw_fd, a
	 * written file beside the cache file, the same operations with
	 * O_DIRECT pread/pwrite (RWF_DSYNC when FUA, fdatasync per
	 * --flush-every); the cache is never mapped. */
	bool block;
	int raw_fd;
	char medium_reason[200], dir[4096];

	unsigned nconfigs;
	struct run_config configs[2];
	double scaling_cache, scaling_floor; /* median of per-round 2-thread / 1-thread */
	/* The same from CPU time per operation (2 x cpu/op at 1 thread / at 2):
	 * what two threads would give with a core each -- an estimate when
	 * other processes share the cores. */
	double scaling_cache_cpu, scaling_floor_cpu;
	struct wc_stats final;
	/* The performance targets this run can judge (docs/performance.md). */
	unsigned ntargets;
	struct run_target targets[3];
};

/* run_phase.c: run `threads` workers against the cache or the floor; with
 * `repeat` (the floor), thread i performs exactly repeat[i] operations, the
 * same ones the cache phase of this round did.  0, or -1 after printing why. */
int run_phase(struct run_ctx *x, enum phase_kind kind, unsigned threads, unsigned round,
              const uint64_t *repeat, struct run_phase_result *r);
/* Nanoseconds per tick of the per-operation clock (measured once, 20 ms). */
double run_tick_ns(void);

/* run.c */
const char *run_workload_name(enum workload wl);
/* One `wcbench run` (argv[0] "run"): the exit status; the targets it
 * judged are copied to out[] (up to 3), their number to *n. */
int run_invoke(int argc, char **argv, struct run_target *out, unsigned *n);
/* run_suite.c: `wcbench run --block-targets ...`: the block medium's three
 * judged configurations in turn, one summary. */
int run_block_targets(int argc, char **argv);
/* Whether this run measures PHASE_FLOOR_LOCK. */
bool run_has_lock_floor(const struct run_ctx *x);

/* run_report.c */
void run_report_text(const struct run_ctx *x);
void run_report_json(const struct run_ctx *x);

#endif
