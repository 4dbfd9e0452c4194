/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_block.h -- the power-failure sweep of the block medium: workloads
 * run on a cache whose device is the simulated disk of blkdev.h (the cache
 * runs its real code through the I/O hooks), crash images are captured
 * before and after every device write and flush, and each is reopened and
 * read back against the block medium's contract, per block:
 *
 *   - a block whose write was acknowledged durable (a FUA write that
 *     returned, or a write that completed before a wc_flush, a wc_writeback
 *     or a wc_close that returned) reads as that version or a newer one
 *     written to it since (started, maybe not returned) -- never older;
 *   - every block reads as one whole version written to it (or the origin's
 *     first content), never a mix, never another block's;
 *   - a discard that returned counts as that block's durable event: from
 *     then on the block may read as any version once written to it, or
 *     zeros (the origin's content is what a discard leaves), until a newer
 *     write is acknowledged.
 * The origin is modelled too (fault_origin: what its flush made durable,
 * each later sector kept or lost), so write-back that lets a block leave
 * the cache before the origin holds it durably loses an acknowledged write.
 *
 * Single-thread workloads replay from their seed; multi-thread ones (the
 * cache's own write-back thread, writers each on their own blocks, flushes
 * crossing threads) do not.
 */
#ifndef WC_CRASH_BLOCK_H
#define WC_CRASH_BLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct blk_opts {
	uint64_t seed;
	uint64_t max_images;        /* stop capturing after this many (0 = no limit) */
	unsigned random_per_point;  /* random images of each kind per crash point (0 = 1) */
	unsigned point_every;       /* only every Nth crash point yields images (0, 1 = all) */
	unsigned recovery_every;    /* crash the recovery of every Nth image (0 = never) */
	unsigned probe_every;       /* write + reopen probe on every Nth image (0 = never) */
	unsigned sabotage_flush_every; /* every Nth device flush makes nothing durable */
	unsigned sabotage_dsync_every; /* every Nth synced write is not synced */
	const char *dump_dir;       /* each violation's image is kept here (NULL = not) */
	FILE *log;                  /* violations and progress (NULL = quiet) */
	FILE *trace;                /* every call and device request */
	bool verbose;               /* blk_sweep: a line per run in log */
};

struct blk_result {
	uint64_t images, recovery_images, refused, violations, probes;
	uint64_t calls, errors, skipped;  /* skipped: crash points past the capture bound */
	uint64_t device_writes, dsync_writes, device_flushes, segments_reclaimed, records;
	uint64_t wraps;                   /* runs whose ring wrapped (a segment reclaimed) */
};

const char *const *blk_workloads(void);
const char *blk_workload_about(const char *name);
bool blk_workload_threaded(const char *name);

/* One workload, results added to *r; 0 or a negative errno (then r->errors
 * says why in the log). */
int blk_run(const char *workload, const struct blk_opts *o, struct blk_result *r);

/* crash-sweep's loop: seeds o->seed, o->seed + 1, ... each running the
 * workload (NULL: every single-thread workload in turn; "all": every one)
 * until `images` images were checked.  o->seed ends past the last seed. */
void blk_sweep(const char *workload, uint64_t images, struct blk_opts *o, struct blk_result *r);

/* A regression line ("medium block workload W seed S images N
 * random-per-point R recovery-every K probe-every K"): the sweep it names,
 * run again.  1 on violations, 0 on a pass, negative errno. */
int blk_rerun(const char *line, FILE *log, char *why, size_t why_len);

#endif
