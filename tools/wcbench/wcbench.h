/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wcbench.h -- what the wcbench subcommands share: their entry points (one
 * per file, listed in main.c's table) and the report helpers (report.c);
 * what every tool shares is in tools/common/wctools.h.
 */
#ifndef WCBENCH_H
#define WCBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wctools.h"

/* A subcommand: argv[0] is its name; returns the process exit status
 * (0 ok, 1 failure, 2 usage error). */
int wcbench_flush(int argc, char **argv);
int wcbench_calibrate(int argc, char **argv);
int wcbench_run(int argc, char **argv);
int wcbench_recover(int argc, char **argv);
int wcbench_writeback(int argc, char **argv);
/* calibrate.c: the measurement's JSON members "nt", "cached", "area_bytes"
 * (the bytes measured on, if `area` is not NULL), "rounds" .. "ms". */
struct wcadm_calibration;
void wcb_json_calibration(struct wct_json *j, const struct wcadm_calibration *cal,
                          const uint64_t *area);
/* calibrate.c: the measurement as a text table, one line per size. */
void wcb_text_calibration(FILE *f, const struct wcadm_calibration *cal);
/* calibrate_cache.c: `wcbench calibrate --cache PATH` */
int wcbench_calibrate_cache(const char *path, unsigned rounds, bool json);

/* ---- medium.c --------------------------------------------------------- */

/* The directory part of `path` ("." for a bare name). */
void wcb_dir_of(const char *path, char *dir, size_t len);
/* Is `path` (or, when it does not exist, its directory) on tmpfs or ramfs? */
bool wcb_path_in_memory(const char *path);
/* wct_pmem_emulate() only where the cache may be emulated pmem: options
 * that do not say medium=block, and (medium=auto) a path in memory.  A
 * cache on a disk file system keeps medium=auto's own choice (the block
 * medium).  Returns whether PMEM2_FORCE_GRANULARITY was set. */
bool wcb_pmem_emulate_for(const char *path, const char *options);
/* An unlinked file of `size` bytes in `dir`, every byte written once and
 * synced (no hole, no unwritten extent), open with O_DIRECT: the floor of a
 * block-medium benchmark.  The descriptor, or -1 after printing why. */
int wcb_raw_file(const char *cmd, const char *dir, uint64_t size, bool quiet);

/* ---- report.c --------------------------------------------------------- */

/* Start the JSON report of `tool` ("wcbench run") on stdout: the outermost
 * object, its "tool" member first. */
void wcb_json_head(struct wct_json *j, const char *tool);
/* Median of n values (sorts `v` in place). */
double wcb_median(double *v, size_t n);
/* "policy": {"small": ..., "large": ..., "threshold": N|null, "reason": ...} */
struct wct_json;
struct wc_pmem_info;
void wcb_json_policy(struct wct_json *j, const char *key, const struct wc_pmem_info *in);
/* "850ns", "1.5us", "2.25ms": `decimals` above a microsecond. */
const char *wcb_ns_str(char *buf, size_t len, int decimals, double ns);
/* "nt-avx2 below 768 B, cached+clwb from 768 B" or "X at every size". */
void wcb_policy_text(char *buf, size_t len, const struct wc_pmem_info *in);
/* Path of gnuplot, or NULL if it is not installed. */
const char *wcb_gnuplot(void);

#endif
