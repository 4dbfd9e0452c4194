/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * errors.c -- wc_clear_error: what an operator may clear, and what only a
 * reopen clears.
 *
 * The origin's failure is no state of the cache's: the blocks it did not
 * take are dirty and intact, so "clearing" it only means trying the origin
 * now instead of at the end of the backoff.  The failure itself ends when
 * an attempt gets through, and not before: wc_stats never says the origin
 * is fine on an operator's word.
 *
 * The sticky error is the cache's own medium failing, and no case of it is
 * safe to clear in place: a commit or record that failed may have left the
 * medium holding more or less than DRAM says; data it could not read back
 * is not in DRAM at all; requests it lost track of may still land.  Only
 * recovery, from what the medium holds, rebuilds a state the cache can
 * vouch for -- that is, closing and reopening it.
 */
#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"
#include "util/log.h"
#include "writeback/writeback.h"

int wc_clear_error(wc_cache *c)
{
	int err;

	if (!c)
		return wc_err(-EINVAL, "wc_clear_error: NULL cache");
	err = wc_has_error(c);
	if (err)
		return wc_err(-ENOTRECOVERABLE, "%s: the cache is in its error state (%d: its own medium "
		              "failed): close and reopen it; recovery then rebuilds what the medium holds",
		              c->cache_path, err);
	if (!wc_wb_origin_failing(c))
		return 0;
	wc_wb_retry_now(c);
	if (c->blk)
		wc_blk_wb_kick(c);
	else
		wc_writeback_kick(c);
	wc_log(WC_LOG_NOTICE, "%s: write-back retries the failing origin now (wc_clear_error)",
	       c->cache_path);
	return 0;
}
