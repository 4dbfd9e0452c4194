/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_block_impl.h -- between the block sweep's engine (crash_block.c)
 * and its workloads (crash_block_wl.c): the driver a workload calls
 * instead of the API.  Each bd_* call records itself in the per-block
 * model before it is issued, acknowledges what the contract makes durable
 * once it returned, and (single thread) has the crash images captured
 * meanwhile checked.
 */
#ifndef WC_CRASH_BLOCK_IMPL_H
#define WC_CRASH_BLOCK_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "blkdev.h"
#include "crash_block.h"
#include "crash_model.h"
#include "fault_origin.h"
#include "wcache.h"

struct bdrv;

struct blk_workload {
	const char *name, *about;
	uint32_t block_size;
	uint64_t origin_blocks;
	uint64_t cache_bytes;
	bool lba4k;            /* the cache file where O_DIRECT asks 4096 (else 512) */
	uint32_t tear;         /* the device's tear unit */
	unsigned threads;      /* writers (0: one, no_threads, replayable) */
	bool crash_format;     /* crash points inside wc_create too (else from the first call on) */
	int (*run)(struct bdrv *d);
};

/* A writer: its own choices, buffer and blocks [lo, hi). */
struct bthr {
	struct bdrv *d;
	struct wc_rng rng;
	uint8_t *buf;
	uint64_t lo, hi;
	unsigned id;
	int ret;
};

const struct blk_workload *blk_workload_find(const char *name);

int bd_create(struct bdrv *d);
int bd_open(struct bdrv *d);
int bd_close(struct bdrv *d);
int bd_write(struct bthr *t, uint64_t first, uint64_t count, bool fua);
int bd_flush(struct bthr *t);
int bd_discard(struct bthr *t, uint64_t first, uint64_t count);
int bd_writeback(struct bdrv *d);
/* A range's write-back (WC_REQ_WRITEBACK) or cache-only invalidation
 * (WC_REQ_INVALIDATE): the range's writes that returned before it count as
 * durable once it returned. */
int bd_range(struct bthr *t, bool invalidate, uint64_t first, uint64_t count);
int bd_poll(struct bdrv *d);
int bd_cleaner(struct bdrv *d, bool on);
/* The main thread's writer (all blocks). */
struct bthr *bd_main(struct bdrv *d);
uint64_t bd_random(struct bthr *t, uint64_t below);
uint64_t bd_blocks(struct bdrv *d);
/* Segments the cache reclaimed so far (its stats). */
uint64_t bd_reclaimed(struct bdrv *d);
/* Run fn on `n` writers, each on its own blocks, at once; then check the
 * images they captured and read every block back. */
int bd_threads(struct bdrv *d, unsigned n, int (*fn)(struct bthr *t));

#endif
