/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * range.c -- write-back and invalidation of a range of the origin.
 *
 * On persistent memory a block leaves the cache when it is written back
 * (the cache holds only dirty blocks), so invalidating a range is writing
 * it back and forgetting what read-ahead holds of it.  The block medium
 * keeps clean blocks for reads; its write-back works by segment, so a range
 * write-back there writes back every dirty block, and a cache-only
 * invalidation is not offered (-EOPNOTSUPP): dropping clean blocks must be
 * made durable without dropping a dirty version a concurrent write made,
 * which its discard records cannot tell apart.
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

	if (c->blk) {
		ret = wc_blk_flush(c, false);
		return ret ? ret : wc_blk_writeback_all(c);
	}
	ret = wc_commit(c, false);
	if (ret)
		return ret;
	return wc_writeback_blocks(c, offset >> c->block_shift, len >> c->block_shift);
}

int wc_invalidate_range(struct wc_cache *c, uint64_t offset, uint64_t len)
{
	int ret;

	if (c->blk)
		return wc_err(-EOPNOTSUPP, "%s invalidate: the block medium keeps clean blocks and cannot "
		              "drop them apart from a concurrent write's; write back (wc_writeback) instead",
		              c->cache_path);
	ret = wc_writeback_range(c, offset, len);
	if (!ret)
		wc_ra_forget(c, offset >> c->block_shift, len >> c->block_shift);
	return ret;
}
