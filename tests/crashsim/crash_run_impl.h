/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_run_impl.h -- between the sweep engine (crash_run.c) and its
 * workloads (crash_workloads.c): the driver a workload calls instead of the
 * API.  Each drv_* call records the call in the model before issuing it,
 * acknowledges it when the contract says it is durable, and afterwards
 * recovers and checks every crash image captured during it.
 */
#ifndef WC_CRASH_RUN_IMPL_H
#define WC_CRASH_RUN_IMPL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "crash_model.h"
#include "crash_run.h"
#include "crash_trace.h"
#include "crashsim.h"
#include "fault_origin.h"
#include "wcache.h"

/* One crash image (cache + origin) and the calls it must be explained by. */
struct crash_capture {
	uint8_t *cache_img;
	uint8_t *origin_img;
	size_t cache_len, origin_len;
	struct wc_window w;
	bool formatting;
	char label[192];
};
struct crash_drv;

struct crash_workload {
	const char *name, *about;
	uint32_t block_size;
	uint64_t origin_blocks, cache_blocks;
	unsigned autocommit_blocks;      /* 0 = the sweep's default (3) */
	int (*run)(struct crash_drv *d);
};

struct crash_drv {
	const struct crash_opts *o;
	struct crash_result *r;
	const struct crash_workload *wl;

	struct wc_model *model;
	struct fault_origin *fo;
	struct trace_origin *trace;      /* wraps fo with --trace */
	struct wc_origin origin;         /* what the workload's cache gets */
	struct wc_crashsim *sim;
	wc_cache *c;
	struct wc_config cfg;
	char cache_path[PATH_MAX];
	uint64_t cache_bytes;
	struct wc_rng rng;               /* the workload's choices */
	struct wc_rng img_rng;           /* origin images, probes */
	uint8_t *buf;                    /* origin_blocks x block_size */

	bool formatting;                 /* inside wc_create: a refusal is allowed */
	/* The origin's name (its identity: fault_origin_set_name), and while
	 * a re-bind to it may not be durable yet, the one before: an image
	 * must open with one of the two, and refuse any other. */
	char origin_name[64], prev_origin_name[64];
	char op[96];                     /* the call in progress, for reports */
	uint64_t ops;
	uint64_t verified;               /* images recovered (selects recovery crashes, probes) */

	/* A write that the next commit's test hook issues from inside that
	 * commit (drv_flush_racing), as another thread's write would land. */
	uint64_t race_first, race_count;
	uint8_t *race_buf;
	long race_ret;

	struct crash_capture *caps;      /* images captured during the call in progress */
	size_t ncaps, cap_caps;
	bool capture_full;               /* max_images reached */
};

const struct crash_workload *crash_workload_find(const char *name);

/* crash_run.c: recover and check every image captured during the call that
 * just returned (and forget them); print to the run's log. */
void crash_verify_captures(struct crash_drv *d);
/* crash_run.c, shared with crash_replay.c: check one captured image (and,
 * depth permitting, crashes of its recovery); returns the violations. */
uint64_t crash_verify(struct crash_drv *d, const struct crash_capture *cap, int depth);
uint8_t *crash_io_buffer(size_t len);
int crash_write_file(const char *path, const void *buf, size_t len);
/* crash_replay.c: keep a violating image for a regression test. */
int crash_dump_violation(struct crash_drv *d, const struct crash_capture *cap, const char *why);
void crash_say(const struct crash_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The calls a workload makes (0 or a negative errno; a failure ends the run). */
int drv_create(struct crash_drv *d);
int drv_open(struct crash_drv *d);
/* Name the origin (before drv_create): from then on every image is also
 * checked to refuse an origin of another name. */
void drv_name_origin(struct crash_drv *d, const char *name);
/* Open the closed cache with the origin renamed to `name` (another origin
 * to the cache), re-binding it: WC_ORIGIN_REBIND_CLEAN or _FORCE. */
int drv_rebind(struct crash_drv *d, const char *name, unsigned rebind);
int drv_close(struct crash_drv *d);
int drv_write(struct crash_drv *d, uint64_t first, uint64_t count, unsigned flags);
int drv_flush(struct crash_drv *d);
/* A flush whose commit a write of count blocks at first races: issued
 * after the commit moved the epoch on, so it belongs to the next commit. */
int drv_flush_racing(struct crash_drv *d, uint64_t first, uint64_t count);
void drv_commit_quiet(void *arg); /* the test hook that issues it */
int drv_discard(struct crash_drv *d, uint64_t first, uint64_t count);
int drv_writeback(struct crash_drv *d);
int drv_poll(struct crash_drv *d, unsigned budget);
int drv_cleaner(struct crash_drv *d, bool on);
uint64_t drv_random(struct crash_drv *d, uint64_t below);

#endif
