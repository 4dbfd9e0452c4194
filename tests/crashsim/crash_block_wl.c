/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_block_wl.c -- what the block sweep runs: format, seeded random
 * mixes of FUA and plain writes of 1..N blocks (records split past 58),
 * flushes, discards, overwrites, write-back (all, and of a range),
 * cache-only invalidation, the cleaner, close and reopen and go on, on
 * small caches (1-2 MiB of 64 KiB segments) that the writes
 * wrap several times so that write-back and reclaim run; with 512-byte and
 * 4 KiB logical blocks and tears at 512 and 4096 bytes; and writers on
 * threads beside the cache's own write-back thread.
 */
#include <string.h>

#include "crash_block_impl.h"

#define TRY(x)                          \
	do {                                \
		int ret_ = (x);                 \
		if (ret_ < 0)                   \
			return ret_;                \
	} while (0)

/* Format, first writes, reopen. */
static int wl_format(struct bdrv *d)
{
	struct bthr *t = bd_main(d);

	TRY(bd_create(d));
	TRY(bd_write(t, 0, 2, false));
	TRY(bd_flush(t));
	TRY(bd_write(t, 5, 1, true));
	TRY(bd_write(t, 1, 3, false));
	TRY(bd_close(d));
	TRY(bd_open(d));
	TRY(bd_write(t, 2, 1, false));
	return bd_close(d);
}

/* A writer's random call on its blocks: plain and FUA writes of 1..8
 * blocks (now and then past one record), flushes, discards. */
static int writer_op(struct bthr *t)
{
	uint64_t span = t->hi - t->lo, r = bd_random(t, 1000);
	uint64_t first = t->lo + bd_random(t, span);
	uint64_t count = bd_random(t, 20) ? 1 + bd_random(t, 8) : 40 + bd_random(t, 40);

	if (count > t->hi - first)
		count = t->hi - first;
	if (r < 620)
		return bd_write(t, first, count, false);
	if (r < 800)
		return bd_write(t, first, count, true);
	if (r < 920)
		return bd_flush(t);
	return bd_discard(t, first, count > 6 ? 6 : count);
}

/* One call of the main thread: a writer's, or write-back, the cleaner,
 * close and reopen. */
static int main_op(struct bdrv *d)
{
	struct bthr *t = bd_main(d);
	uint64_t r = bd_random(t, 1000);

	if (r < 930)
		return writer_op(t);
	if (r < 960)
		return bd_poll(d);
	if (r < 968)
		return bd_writeback(d);
	if (r < 978) {
		TRY(bd_cleaner(d, true));
		TRY(bd_poll(d));
		TRY(writer_op(t));
		return bd_cleaner(d, false);
	}
	TRY(bd_close(d));
	return bd_open(d);
}

static int wl_mix(struct bdrv *d)
{
	TRY(bd_create(d));
	for (int i = 0; i < 900; i++)
		TRY(main_op(d));
	return 0;
}

/* Long sequential runs, mostly plain, a flush every few: the ring wraps
 * again and again; reopened and continued twice. */
static int wl_wrap(struct bdrv *d)
{
	struct bthr *t = bd_main(d);
	uint64_t n = bd_blocks(d), pos = 0;

	TRY(bd_create(d));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 250; i++) {
			uint64_t count = 1 + bd_random(t, 12);

			if (pos + count > n)
				pos = 0;
			TRY(bd_write(t, pos, count, bd_random(t, 8) == 0));
			pos += count;
			if (bd_random(t, 5) == 0)
				TRY(bd_flush(t));
			if (bd_random(t, 40) == 0)
				TRY(bd_discard(t, pos % n, 1));
		}
		TRY(bd_close(d));
		TRY(bd_open(d));
	}
	return 0;
}

/* Few blocks, many overwrites and discards of them. */
static int wl_overwrite(struct bdrv *d)
{
	struct bthr *t = bd_main(d);

	TRY(bd_create(d));
	for (int i = 0; i < 700; i++) {
		uint64_t r = bd_random(t, 100), b = bd_random(t, 6);

		if (r < 55)
			TRY(bd_write(t, b, 1 + bd_random(t, 3), false));
		else if (r < 75)
			TRY(bd_write(t, b, 1 + bd_random(t, 3), true));
		else if (r < 87)
			TRY(bd_flush(t));
		else if (r < 95)
			TRY(bd_discard(t, b, 1 + bd_random(t, 2)));
		else if (r < 98)
			TRY(bd_poll(d));
		else {
			TRY(bd_close(d));
			TRY(bd_open(d));
		}
	}
	return 0;
}

/* Few blocks written, written back by range and invalidated from the
 * cache only (the origin then serves them) among discards, flushes and
 * reopens; enough of it that the ring wraps. */
static int wl_invalidate(struct bdrv *d)
{
	struct bthr *t = bd_main(d);

	TRY(bd_create(d));
	for (int i = 0; i < 700; i++) {
		uint64_t r = bd_random(t, 100), b = bd_random(t, 8);

		if (r < 45)
			TRY(bd_write(t, b, 1 + bd_random(t, 4), false));
		else if (r < 60)
			TRY(bd_write(t, b, 1 + bd_random(t, 3), true));
		else if (r < 68)
			TRY(bd_flush(t));
		else if (r < 73)
			TRY(bd_discard(t, b, 1 + bd_random(t, 2)));
		else if (r < 85)
			TRY(bd_range(t, true, b, 1 + bd_random(t, 8 - b)));
		else if (r < 95)
			TRY(bd_range(t, false, b, 1 + bd_random(t, 8 - b)));
		else if (r < 98)
			TRY(bd_poll(d));
		else {
			TRY(bd_close(d));
			TRY(bd_open(d));
		}
	}
	return 0;
}

/* Threads: writers each on their own blocks beside the write-back thread,
 * flushes of one covering the others' writes; between rounds write-back,
 * the cleaner, close and reopen. */
static int thr_round(struct bthr *t)
{
	for (int i = 0; i < 40; i++)
		TRY(writer_op(t));
	return 0;
}

static int wl_threads(struct bdrv *d)
{
	struct bthr *t = bd_main(d);

	TRY(bd_create(d));
	for (int round = 0; round < 12; round++) {
		uint64_t r = bd_random(t, 10);

		TRY(bd_threads(d, 3, thr_round));
		if (r == 0)
			TRY(bd_writeback(d));
		else if (r == 1) {
			TRY(bd_cleaner(d, true));
			TRY(bd_threads(d, 2, thr_round));
			TRY(bd_cleaner(d, false));
		} else if (r < 4) {
			TRY(bd_close(d));
			TRY(bd_open(d));
		}
	}
	return 0;
}

#define MIB (1ull << 20)

static const struct blk_workload workloads[] = {
	{ "format", "format, first writes, FUA, close, reopen (512-byte blocks and sectors)",
	  512, 64, 1 * MIB, false, 512, 0, true, wl_format },
	{ "mix", "random mix, 512-byte blocks and logical blocks, 256 blocks before 15 segments",
	  512, 256, 1 * MIB, false, 512, 0, false, wl_mix },
	{ "mix4k", "random mix, 4 KiB blocks, 4 KiB logical blocks, tears at 4096",
	  4096, 64, 1 * MIB, true, 4096, 0, false, wl_mix },
	{ "torn4k", "random mix, 4 KiB logical blocks torn at 512 bytes inside them",
	  4096, 64, 1 * MIB, true, 512, 0, false, wl_mix },
	{ "bs4k-lba512", "random mix, 4 KiB blocks on 512-byte logical blocks, 2 MiB",
	  4096, 96, 2 * MIB, false, 512, 0, false, wl_mix },
	{ "wrap", "sequential runs wrapping the ring, reopen and continue",
	  512, 192, 1 * MIB, false, 512, 0, false, wl_wrap },
	{ "overwrite", "six blocks overwritten, discarded, FUA and not, reopened",
	  512, 16, 1 * MIB, false, 512, 0, false, wl_overwrite },
	{ "invalidate", "eight blocks written back by range and invalidated, among writes and discards",
	  512, 16, 1 * MIB, false, 512, 0, false, wl_invalidate },
	{ "threads", "3 writers and the write-back thread, 512-byte blocks",
	  512, 240, 1 * MIB, false, 512, 3, false, wl_threads },
	{ "threads4k", "3 writers and the write-back thread, 4 KiB blocks torn at 512",
	  4096, 60, 1 * MIB, true, 512, 3, false, wl_threads },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

const struct blk_workload *blk_workload_find(const char *name)
{
	for (size_t i = 0; i < NWORKLOADS; i++)
		if (strcmp(workloads[i].name, name) == 0)
			return &workloads[i];
	return NULL;
}

const char *const *blk_workloads(void)
{
	static const char *names[NWORKLOADS + 1];

	for (size_t i = 0; i < NWORKLOADS; i++)
		names[i] = workloads[i].name;
	names[NWORKLOADS] = NULL;
	return names;
}

const char *blk_workload_about(const char *name)
{
	const struct blk_workload *wl = blk_workload_find(name);

	return wl ? wl->about : NULL;
}

bool blk_workload_threaded(const char *name)
{
	const struct blk_workload *wl = blk_workload_find(name);

	return wl && wl->threads;
}
