/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flushbench.h -- `wcbench flush`'s state, shared by the measuring half
 * (flush.c) and the reporting half (flush_report.c).
 */
#ifndef WCBENCH_FLUSHBENCH_H
#define WCBENCH_FLUSHBENCH_H

#include <libpmem2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wcadmin.h"

enum col_kind { COL_POLICY, COL_STRATEGY, COL_BARE, COL_PMEM2, COL_MEMCPY };
enum { MODE_FENCED, MODE_BATCHED, NMODES };

#define MAX_COLS  16
#define MAX_SIZES 64
#define MAX_RUNS  101
#define MAX_SLICES 64

struct column {
	const char *name;
	enum col_kind kind;
	wcadm_copy_fn copy; /* COL_STRATEGY, COL_BARE */
	bool single;      /* a reference the policy must keep up with: counts for "best"
	                     (the engine's strategies and the bare loops) */
};

struct bench {
	/* options */
	uint64_t min, max, region;
	unsigned runs, batch, dst_offset, slices;
	double time_ms;
	bool json, all_nt, check, quiet;
	const char *path, *plot;

	/* state */
	bool created, forced_gran;
	int fd;
	struct pmem2_source *src;
	struct pmem2_config *cfg;
	struct pmem2_map *map;
	enum pmem2_granularity gran;
	pmem2_memcpy_fn pm_memcpy;
	pmem2_drain_fn pm_drain;
	char *dst, *source;
	size_t pos;
	struct wcadm_persist policy; /* the process default, what wc_pmem_* use */

	struct column col[MAX_COLS];
	unsigned ncols;
	int pol_bare;      /* the bare loop of the policy's width, or -1 (pol/bare) */
	uint64_t sizes[MAX_SIZES];
	unsigned nsizes;
	/* copies per sample, from the pilot, per size/column/mode */
	unsigned copies[MAX_SIZES][MAX_COLS][NMODES];
	double sample[MAX_SIZES][MAX_COLS][NMODES][MAX_RUNS]; /* ns per copy */
	double median[MAX_SIZES][MAX_COLS][NMODES];
	/* median over runs of (other column's time / policy's time) in the
	 * same run: pairing cancels drift from whatever else the machine does */
	double vs_best[MAX_SIZES][NMODES], vs_pmem2[MAX_SIZES][NMODES];
	double vs_bare[MAX_SIZES][NMODES]; /* 0 without a bare column */
	/* their upper quartiles: how high the paired runs reach */
	double vs_best_q3[MAX_SIZES][NMODES], vs_pmem2_q3[MAX_SIZES][NMODES];
	unsigned best[MAX_SIZES][NMODES];
};

#define GOAL_VS_BEST  0.95
#define GOAL_VS_PMEM2 1.00

struct verdict {
	double min_vs_best, min_vs_pmem2;
	double q3_best, q3_pmem2;  /* upper quartile at the lowest size */
	uint64_t at_best, at_pmem2;
	unsigned misses;  /* sizes whose median ratio misses a goal */
	unsigned ties;    /* ... of which a quarter of the paired runs reach it */
};

enum goal { GOAL_MET, GOAL_TIE, GOAL_MISSED };

unsigned flushbench_col_index(const struct bench *b, const char *name);
/* The column of kind `kind`, or -1. */
int flushbench_col_of_kind(const struct bench *b, enum col_kind kind);
/* flush_bare.c: a bare loop of the NT strategy `nt_name` (NULL if none),
 * for aligned multiples of 64 bytes only. */
wcadm_copy_fn flushbench_bare_loop(const char *nt_name, const char **bare_name);
/* The lowest ratios per mode and how many sizes miss the goal. */
void flushbench_judge(const struct bench *b, struct verdict v[NMODES]);
enum goal flushbench_goal(const struct verdict v[NMODES]);
void flushbench_print_table(const struct bench *b);
void flushbench_print_json(const struct bench *b);
/* bandwidth vs size with gnuplot into b->plot; 0 or -1 (said on stderr) */
int flushbench_plot(const struct bench *b);

#endif
