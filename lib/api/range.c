/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * range.c -- write-back and invalidation of a range of the origin.
 *
 * On persistent memory a block leaves the cache when it is written back
 * (the cache holds only dirty blocks), so invalidating a range is writing
 * it back and forgetting what read-ahead holds of it.  The block medium
 * keeps clean blocks for reads: its range write-back writes the range's
 * dirty versions back and keeps them, clean, and its invalidation then
 * drops them with a durable cache-only record (block/range.c).
 */
#include "api/async.h"
#include "block/block.h"
#include "core/cache.h"
#include "core/readahead.h"
#include "util/error.h"
#include "writeback/writeback.h"

int wc_writeback_range(struct wc_cache *c, uint64_t offset, uint64_t len)
{
	int ret;

	if (c->blk)
		return wc_blk_writeback_range(c, offset, len);
	ret = wc_commit(c, false);
	if (ret)
		return ret;
	return wc_writeback_blocks(c, offset >> c->block_shift, len >> c->block_shift);
}

int wc_invalidate_range(struct wc_cache *c, uint64_t offset, uint64_t len)
{
	int ret;

	if (c->blk)
		return wc_blk_invalidate(c, offset, len);
	ret = wc_writeback_range(c, offset, len);
	if (!ret)
		wc_ra_forget(c, offset >> c->block_shift, len >> c->block_shift);
	return ret;
}
