/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_workloads.c -- what the crash sweep runs.  Each workload is a short
 * deterministic script (or a seeded random one) over the driver of
 * crash_run_impl.h; together they cover format, writes and overwrites of
 * committed and uncommitted blocks, commits inside multi-block writes
 * (autocommit), flush, FUA, discard, write-back with frees, the cleaner,
 * close and reopen.
 */
#include <string.h>

#include "crash_run_impl.h"

#define TRY(x)                          \
	do {                                \
		int ret_ = (x);                 \
		if (ret_ < 0)                   \
			return ret_;                \
	} while (0)

/* Format, then the first commit. */
static int wl_format(struct crash_drv *d)
{
	TRY(drv_create(d));
	TRY(drv_write(d, 0, 2, 0));
	TRY(drv_flush(d));
	TRY(drv_write(d, 5, 1, WC_FUA));
	return drv_close(d);
}

/* Overwrites: uncommitted blocks in place, committed blocks into new
 * cache blocks, a write spanning autocommits, FUA in between. */
static int wl_overwrite(struct crash_drv *d)
{
	TRY(drv_create(d));
	TRY(drv_write(d, 0, 2, 0));
	TRY(drv_write(d, 1, 1, 0));          /* uncommitted hit: in place */
	TRY(drv_flush(d));
	TRY(drv_write(d, 0, 3, 0));          /* committed hits: new blocks */
	TRY(drv_write(d, 2, 1, 0));          /* uncommitted again */
	TRY(drv_write(d, 7, 1, WC_FUA));
	TRY(drv_write(d, 0, 1, 0));
	TRY(drv_flush(d));
	TRY(drv_flush(d));                   /* nothing to commit */
	TRY(drv_write(d, 3, 8, 0));          /* autocommit inside the call */
	TRY(drv_write(d, 4, 2, WC_FUA));
	TRY(drv_write(d, 10, 2, 0));
	return drv_close(d);
}

/* Discard of committed, uncommitted and uncached blocks. */
static int wl_discard(struct crash_drv *d)
{
	TRY(drv_create(d));
	TRY(drv_write(d, 0, 6, 0));
	TRY(drv_flush(d));
	TRY(drv_write(d, 2, 1, 0));
	TRY(drv_discard(d, 1, 3));
	TRY(drv_write(d, 2, 1, 0));
	TRY(drv_flush(d));
	TRY(drv_discard(d, 8, 4));           /* never cached */
	TRY(drv_write(d, 9, 1, 0));
	TRY(drv_discard(d, 9, 1));           /* uncommitted, then gone */
	TRY(drv_write(d, 0, 2, WC_FUA));
	return drv_close(d);
}

/* A cache much smaller than the working set: write-back runs inside the
 * writes (no_threads) and frees blocks; then an explicit write-back. */
static int wl_writeback(struct crash_drv *d)
{
	uint64_t n = d->wl->origin_blocks;

	TRY(drv_create(d));
	for (uint64_t b = 0; b + 2 <= n; b += 2) {
		TRY(drv_write(d, b, 2, 0));
		if (b % 6 == 4)
			TRY(drv_flush(d));
	}
	TRY(drv_flush(d));
	TRY(drv_poll(d, 16));
	TRY(drv_write(d, 1, 3, 0));          /* blocks written back and freed before */
	TRY(drv_writeback(d));
	TRY(drv_write(d, 2, 1, WC_FUA));
	TRY(drv_write(d, n - 3, 3, 0));
	return drv_close(d);
}

/* Cleaner mode: write back everything, new writes go around the cache. */
static int wl_cleaner(struct crash_drv *d)
{
	TRY(drv_create(d));
	TRY(drv_write(d, 0, 4, 0));
	TRY(drv_flush(d));
	TRY(drv_write(d, 1, 1, 0));
	TRY(drv_cleaner(d, true));
	TRY(drv_poll(d, 64));
	TRY(drv_write(d, 2, 2, 0));          /* around the cache */
	TRY(drv_write(d, 6, 1, WC_FUA));
	TRY(drv_flush(d));
	TRY(drv_writeback(d));
	TRY(drv_cleaner(d, false));
	TRY(drv_write(d, 3, 2, 0));
	TRY(drv_flush(d));
	return drv_close(d);
}

/* Close commits; reopen recovers a clean cache; uncommitted work across
 * reopen. */
static int wl_reopen(struct crash_drv *d)
{
	TRY(drv_create(d));
	TRY(drv_write(d, 0, 3, 0));
	TRY(drv_close(d));
	TRY(drv_open(d));
	TRY(drv_write(d, 1, 2, 0));
	TRY(drv_flush(d));
	TRY(drv_write(d, 2, 2, 0));
	TRY(drv_close(d));
	TRY(drv_open(d));
	TRY(drv_write(d, 0, 1, 0));
	TRY(drv_discard(d, 2, 1));
	TRY(drv_close(d));
	TRY(drv_open(d));
	return drv_close(d);
}

/* Writes of another thread that land in the next epoch while a commit is
 * under way (the commit's test hook issues them): the commit frees only
 * what its own epoch superseded, never a version that an uncommitted write
 * superseded. */
static int wl_race(struct crash_drv *d)
{
	TRY(drv_create(d));
	TRY(drv_write(d, 0, 4, 0));
	TRY(drv_flush(d));
	TRY(drv_write(d, 0, 2, 0));          /* this epoch supersedes committed 0, 1 */
	TRY(drv_write(d, 6, 1, 0));
	TRY(drv_flush_racing(d, 0, 2));      /* ... and the next one supersedes it */
	TRY(drv_write(d, 5, 1, 0));
	TRY(drv_flush(d));                   /* invalidates what the last commit freed */
	TRY(drv_write(d, 2, 2, 0));
	TRY(drv_flush_racing(d, 2, 1));
	TRY(drv_discard(d, 6, 1));
	TRY(drv_write(d, 3, 1, 0));
	TRY(drv_flush_racing(d, 3, 2));
	TRY(drv_writeback(d));
	TRY(drv_write(d, 0, 1, 0));
	TRY(drv_flush_racing(d, 0, 1));
	return drv_close(d);
}

/* The origin's identity: recorded at format, then re-bound to another
 * origin twice -- clean (after write-back), and forced with dirty blocks.
 * (The "other" origins hold the same bytes here, so the model holds across
 * them.)  Every image must open with the origin it is bound to, or during
 * a re-bind with the one before, and refuse any other, untouched. */
static int wl_rebind(struct crash_drv *d)
{
	drv_name_origin(d, "origin A");
	TRY(drv_create(d));
	TRY(drv_write(d, 0, 3, 0));
	TRY(drv_flush(d));
	TRY(drv_writeback(d));               /* clean: a re-bind needs no force */
	TRY(drv_close(d));
	TRY(drv_rebind(d, "origin B", WC_ORIGIN_REBIND_CLEAN));
	TRY(drv_write(d, 1, 2, 0));
	TRY(drv_close(d));
	TRY(drv_rebind(d, "origin C", WC_ORIGIN_REBIND_FORCE)); /* dirty */
	TRY(drv_write(d, 4, 1, WC_FUA));
	TRY(drv_close(d));
	TRY(drv_open(d));
	return drv_close(d);
}

/* Seeded random mix of everything, on a cache smaller than the origin. */
static int wl_random(struct crash_drv *d)
{
	uint64_t n = d->wl->origin_blocks;

	TRY(drv_create(d));
	for (int op = 0; op < 48; op++) {
		uint64_t r = drv_random(d, 100), first = drv_random(d, n);
		uint64_t count = 1 + drv_random(d, 4);

		if (count > n - first)
			count = n - first;
		if (r < 55)
			TRY(drv_write(d, first, count, 0));
		else if (r < 63)
			TRY(drv_write(d, first, count, WC_FUA));
		else if (r < 78)
			TRY(drv_flush(d));
		else if (r < 84)
			TRY(drv_discard(d, first, count));
		else if (r < 89)
			TRY(drv_poll(d, 8));
		else if (r < 92)
			TRY(drv_writeback(d));
		else if (r < 95) {
			TRY(drv_cleaner(d, true));
			TRY(drv_write(d, first, 1, 0));
			TRY(drv_cleaner(d, false));
		} else {
			TRY(drv_close(d));
			TRY(drv_open(d));
		}
	}
	return drv_close(d);
}

static const struct crash_workload workloads[] = {
	{ "format", "format, first writes, flush, FUA, close",
	  512, 16, 8, 0, wl_format },
	{ "overwrite", "overwrites of committed and uncommitted blocks, autocommit inside a write, FUA",
	  512, 16, 12, 0, wl_overwrite },
	{ "discard", "discard of committed, uncommitted and uncached blocks",
	  512, 16, 12, 0, wl_discard },
	{ "writeback", "cache of 8 blocks before 24: write-back and frees inside writes, wc_writeback",
	  512, 24, 8, 0, wl_writeback },
	{ "cleaner", "cleaner on: write-back of everything, writes around the cache; cleaner off",
	  512, 16, 8, 0, wl_cleaner },
	{ "reopen", "close commits, reopen recovers, uncommitted work across reopen",
	  512, 16, 8, 0, wl_reopen },
	{ "race", "writes landing in the next epoch while a commit is under way",
	  512, 16, 12, 1000, wl_race },
	{ "rebind", "identity recorded at format, re-bound clean and forced dirty",
	  512, 16, 8, 0, wl_rebind },
	{ "random", "a seeded random mix of every call, cache of 10 blocks before 32",
	  512, 32, 10, 4, wl_random },
	{ "random4k", "the random mix with 4 KiB blocks",
	  4096, 24, 8, 0, wl_random },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

const struct crash_workload *crash_workload_find(const char *name)
{
	for (size_t i = 0; i < NWORKLOADS; i++)
		if (strcmp(workloads[i].name, name) == 0)
			return &workloads[i];
	return NULL;
}

const char *const *crash_workloads(void)
{
	static const char *names[NWORKLOADS + 1];

	for (size_t i = 0; i < NWORKLOADS; i++)
		names[i] = workloads[i].name;
	names[NWORKLOADS] = NULL;
	return names;
}

const char *crash_workload_about(const char *name)
{
	const struct crash_workload *wl = crash_workload_find(name);

	return wl ? wl->about : NULL;
}
