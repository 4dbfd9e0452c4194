/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wcbench.h -- what the wcbench subcommands share: their entry points (one
 * per file, listed in main.c's table) and the report helpers (report.c).
 */
#ifndef WCBENCH_H
#define WCBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A subcommand: argv[0] is its name; returns the process exit status
 * (0 ok, 1 failure, 2 usage error). */
int wcbench_flush(int argc, char **argv);
int wcbench_calibrate(int argc, char **argv);
int wcbench_run(int argc, char **argv);
int wcbench_recover(int argc, char **argv);
int wcbench_writeback(int argc, char **argv);
/* calibrate.c: the measurement's JSON members "rounds" .. "ms" (no newline
 * after the last). */
struct wc_calibration;
void wcb_json_calibration(FILE *f, const struct wc_calibration *cal);
/* calibrate.c: the measurement as a text table, one line per size. */
void wcb_text_calibration(FILE *f, const struct wc_calibration *cal);
/* calibrate_cache.c: `wcbench calibrate --cache PATH` */
int wcbench_calibrate_cache(const char *path, unsigned rounds, bool json);

/* ---- report.c --------------------------------------------------------- */

/* Nanoseconds from CLOCK_MONOTONIC. */
double wcb_now_ns(void);

/* "64", "4K", "4KiB", "64M", "1G" (powers of 1024) -> bytes; 0 or -EINVAL. */
int wcb_parse_size(const char *s, uint64_t *out);
/* "64 B", "1.5 KiB", "64 MiB" */
const char *wcb_size_str(char *buf, size_t len, uint64_t bytes);
/* Median of n values (sorts `v` in place). */
double wcb_median(double *v, size_t n);
/* Write `s` as a JSON string literal. */
void wcb_json_str(FILE *f, const char *s);
/* {"small": ..., "large": ..., "threshold": N|null, "reason": ...} */
struct wc_pmem_info;
void wcb_json_policy(FILE *f, const struct wc_pmem_info *in);
/* Path of gnuplot, or NULL if it is not installed. */
const char *wcb_gnuplot(void);
/* Progress on stderr: overwrites one line on a terminal, else prints a line. */
void wcb_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void wcb_progress_done(void);

/* Scratch files a subcommand made: unlinked if SIGINT/SIGTERM ends wcbench
 * (the handler is installed by the first add).  Forget a file once it is
 * removed or handed over; release unlinks what is left (unless `keep`) and
 * restores the default handlers. */
void wcb_scratch_add(const char *path);
void wcb_scratch_forget(const char *path);
void wcb_scratch_release(int keep);

#endif
