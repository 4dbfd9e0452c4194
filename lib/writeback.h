/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writeback.h -- what the two halves of write-back share: picking blocks
 * (writeback_pick.c) and moving them to the origin in rounds
 * (writeback.c).
 */
#ifndef WC_WRITEBACK_H
#define WC_WRITEBACK_H

#include <stdint.h>

#include "cache_impl.h"

enum wc_wb_pick_mode {
	WC_PICK_ALL,       /* every committed block (wc_writeback, cleaner) */
	WC_PICK_WATERMARK, /* down to the low watermark */
	WC_PICK_AGE,       /* blocks older than max_age_ms */
};

/*
 * Pick up to `want` committed blocks, marking each WC_E_WB under its shard
 * lock, into out[], looking at each cache block at most once, starting at
 * *scan (the cache block after the last one looked at, updated).  Each seed
 * is grown into a run of its dirty origin neighbours, so out[] may hold
 * several runs.  A block whose older version is still under write-back is
 * skipped: two versions of a block never overlap on the way to the origin.
 */
unsigned wc_wb_pick(struct wc_cache *c, uint64_t *scan, enum wc_wb_pick_mode mode, unsigned want,
                    uint32_t *out);

/* Sort picked blocks by origin block, so neighbours become one request. */
void wc_wb_sort_by_origin(struct wc_cache *c, uint32_t *v, unsigned n);

/* The most blocks one origin request carries (writeback_max_io_kib, IOV_MAX). */
unsigned wc_wb_max_run_blocks(struct wc_cache *c);

#endif
