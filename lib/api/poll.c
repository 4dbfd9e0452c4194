/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * poll.c -- without threads (no_threads), the cache's own work is the
 * host's: done in wc_poll_timeout() in steps that never wait for the origin,
 * with a deadline saying when the next step is due.
 *
 *   the origin's completions  reaped without waiting (a read's misses,
 *                             write-back's writes and flushes);
 *   autocommit                a commit once autocommit_ms passed since
 *                             the first uncommitted write;
 *   room                      a commit (or a release of what the last one
 *                             freed) when no block is free, so a write
 *                             refused with -EAGAIN can go in;
 *   write-back                one step (writeback.c, wc_writeback_step):
 *                             submit, reap, flush, free -- never a wait.
 *
 * The origin announces its completions on no descriptor, so while any of
 * its requests are out the deadline is WC_HOST_ORIGIN_POLL_MS; so is the
 * block medium's while its records, its reads of cached blocks or
 * write-back's reads are out (the reads also signal the host's eventfd
 * as they end).
 *
 * A synchronous write that finds no free block (no_threads) waits for
 * these steps: for another thread's, when one polls (the host's loop), or
 * it takes them itself -- when it is the polling thread (a done() that
 * writes), or when no thread has polled for WC_HOST_DRIVER_MS -- so it
 * never waits on a loop that is not turning, and never runs a blocking
 * write-back round.
 */
#include "api/async.h"
#include "block/block.h"
#include "core/cache.h"
#include "writeback/writeback.h"

#include <errno.h>

#include "util/error.h"

#define WC_HOST_ORIGIN_POLL_MS 1
/* A loop that polled this recently is driving the cache. */
#define WC_HOST_DRIVER_MS 100u
/* A writer without room finds nothing to do for this long before it is
 * told -ENOSPC. */
#define WC_HOST_NOTHING_MS 100u

int wc_host_work(struct wc_cache *c, unsigned budget)
{
	int units = 0, ret;

	if (wc_async_origin_busy(c) && wc_origin_poll(&c->origin, 0, 0) > 0)
		units++;
	if (c->blk) {
		/* Reads of cached blocks the device finished; its records'
		 * completions, autocommit, summaries, a segment's write-back in
		 * steps that do not wait for the origin, reclaim (device I/O,
		 * synced). */
		ret = wc_blk_aread_poll(c, 0);
		if (ret < 0)
			return ret;
		units += ret;
		ret = wc_blk_wb_step(c, false);
		return ret < 0 ? ret : units + ret;
	}
	if (wc_has_error(c))
		return units;
	if ((unsigned)units < budget &&
	    (wc_autocommit_due(c) || (wc_free_count(c) == 0 && wc_uncommitted(c)))) {
		ret = wc_commit(c, false);
		if (ret)
			return ret;
		units++;
	}
	if (wc_free_count(c) == 0 && atomic_load(&c->commit.pending_count))
		wc_release_freed(c);
	while ((unsigned)units < budget) {
		ret = wc_writeback_step(c);
		if (ret <= 0)
			break;
		units += ret;
	}
	return units;
}

int wc_host_work_deadline_ms(struct wc_cache *c)
{
	int due = -1;

	if (c->blk) {
		due = wc_blk_wb_deadline_ms(c);
		if ((wc_async_origin_busy(c) || wc_blk_aio_busy(c) || wc_blk_aread_busy(c)) &&
		    (due < 0 || due > WC_HOST_ORIGIN_POLL_MS))
			due = WC_HOST_ORIGIN_POLL_MS;
		return due;
	}
	if (wc_async_origin_busy(c))
		due = WC_HOST_ORIGIN_POLL_MS;
	{
		int wb = wc_writeback_step_deadline_ms(c);

		if (wb >= 0 && (due < 0 || wb < due))
			due = wb;
	}
	if (wc_uncommitted(c) && c->cfg.autocommit_ms) {
		uint32_t since = wc_now_ms(c) - (uint32_t)atomic_load(&c->commit.last_ms);
		int left = since >= c->cfg.autocommit_ms ? 0 : (int)(c->cfg.autocommit_ms - since);

		if (due < 0 || left < due)
			due = left;
	}
	if (wc_free_count(c) == 0 && (wc_uncommitted(c) || atomic_load(&c->commit.pending_count)))
		due = 0;
	return due;
}

bool wc_host_loop_drives(struct wc_cache *c)
{
	return wc_async_polled_elsewhere(c, WC_HOST_DRIVER_MS);
}

int wc_host_room_step(struct wc_cache *c, const char *what)
{
	return wc_host_loop_drives(c) ? 1 : wc_host_work_for_room(c, what);
}

int wc_host_work_for_room(struct wc_cache *c, const char *what)
{
	int n, due;

	n = wc_host_work(c, 64);
	if (n)
		return n < 0 ? n : 0;
	due = wc_host_work_deadline_ms(c);
	/* Nothing to do here and no block free: another writer's step may
	 * hold what frees the next ones (its round's blocks in flight), so
	 * only a while of it is "nothing to write back" (three writers
	 * without a loop on a loaded machine met it in one run of six). */
	for (unsigned ms = 0; due < 0 && wc_free_count(c) == 0; ms++) {
		if (ms == WC_HOST_NOTHING_MS)
			return wc_err(-ENOSPC, "%s %s: no free block and nothing to write back for %u ms",
			              c->cache_path, what, WC_HOST_NOTHING_MS);
		n = wc_origin_poll(&c->origin, 1, 1000000);
		if (n < 0 && n != -EINTR && n != -EAGAIN && n != -ETIMEDOUT)
			return n;
		n = wc_host_work(c, 64);
		if (n)
			return n < 0 ? n : 0;
		due = wc_host_work_deadline_ms(c);
	}
	/* Write-back's requests are out: the first completion, or a
	 * millisecond, whichever comes first. */
	if (due != 0) {
		int ret = wc_origin_poll(&c->origin, 1, 1000000);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -ETIMEDOUT)
			return ret;
	}
	return 0;
}
