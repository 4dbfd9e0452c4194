/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * outage.c -- the origin failing, as both media's write-back meet it.
 *
 * The cache's own medium failing is sticky (core/state.c): what the cache
 * holds can no longer be vouched for.  The origin failing is not: every
 * block it did not take is still dirty in the cache, so the cache keeps
 * taking writes while it has room, and write-back tries again.  This file
 * keeps the streak of failed attempts (a pmem round, a block medium
 * segment):
 *   - when it began: monotonic for its length, wall clock for wc_stats and
 *     the messages; logged once as it begins and once as it ends, the
 *     attempts between only at WC_LOG_DEBUG;
 *   - the backoff: wc_wb_backoff_ms() after each failed attempt, at most
 *     WB_BACKOFF_MAX_MS (settle.c), so the origin's return is seen within
 *     that by the write-back thread, which waits no longer;
 *   - what a writer that finds no free block is told: to wait while the
 *     streak is younger than WB_FULL_PATIENCE_MS (a blip of the origin costs
 *     latency, not errors), then -ENOSPC at once, until an attempt gets
 *     through.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "util/log.h"
#include "core/testhooks.h"
#include "writeback/internal.h"

/* How long a writer that needs room waits on a failing origin before it is
 * refused: longer than the blips an embedder saw (~60 ms of EIO), shorter
 * than a host's request timeout. */
#define WB_FULL_PATIENCE_MS 500
/* wc_writeback returns (the blocks stay dirty and are retried) once the
 * origin has failed this long without an attempt getting through. */
#define WB_DRAIN_GIVE_UP_MS 60000

void wc_wb_outage_init(struct wc_writeback *wb)
{
	pthread_condattr_t attr;

	pthread_mutex_init(&wb->outage.lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&wb->outage.retry, &attr);
	pthread_condattr_destroy(&attr);
}

void wc_wb_outage_fini(struct wc_writeback *wb)
{
	pthread_mutex_destroy(&wb->outage.lock);
	pthread_cond_destroy(&wb->outage.retry);
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "2025-01-31 14:02:03.250" (local time). */
static const char *wall_str(char *buf, size_t len, uint64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	if (!localtime_r(&t, &tm) || !(n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm)))
		snprintf(buf, len, "%llu ms after the epoch", (unsigned long long)ms);
	else
		snprintf(buf + n, len - n, ".%03u", (unsigned)(ms % 1000));
	return buf;
}

static const char *err_str(int err)
{
	return strerror(err < 0 ? -err : EIO);
}

void wc_wb_attempt_failed(struct wc_cache *c, int err, unsigned blocks)
{
	struct wc_writeback *wb = c->wb;
	uint64_t now = wc_clock_ns(), wait_ms, since;
	unsigned n;

	if (!err)
		err = -EIO;
	pthread_mutex_lock(&wb->outage.lock);
	n = atomic_load(&wb->failed_rounds) + 1;
	atomic_store(&wb->failed_rounds, n);
	if (n == 1) {
		wb->outage.since_wall_ms = wall_ms();
		wb->outage.step = 0;
		atomic_store(&wb->failing_since_ns, now);
		atomic_fetch_add(&wb->outage.outages, 1);
	}
	since = atomic_load(&wb->failing_since_ns);
	atomic_store(&wb->last_errno, err);
	wait_ms = wc_wb_backoff_ms(++wb->outage.step);
	wb->outage.retry_at_ns = now + wait_ms * 1000000ull;
	pthread_mutex_unlock(&wb->outage.lock);
	if (n == 1)
		wc_log(WC_LOG_WARNING, "%s: the origin (%s) is failing: write-back of %u blocks failed (%s); "
		       "they stay dirty in the cache and are retried, and writes go on while the cache has room",
		       c->cache_path, wc_origin_describe(&c->origin), blocks, err_str(err));
	else
		wc_log(WC_LOG_DEBUG, "%s: the origin still fails (%s): attempt %u, %.1f s into the failure, "
		       "%u blocks; next attempt in %llu ms", c->cache_path, err_str(err), n,
		       (double)(now - since) / 1e9, blocks, (unsigned long long)wait_ms);
}

void wc_wb_attempt_ok(struct wc_cache *c)
{
	struct wc_writeback *wb = c->wb;
	uint64_t since, wall;
	unsigned n;
	char when[64];

	/* Every round that gets through comes here: most find nothing to end. */
	if (!atomic_load_explicit(&wb->failed_rounds, memory_order_relaxed))
		return;
	pthread_mutex_lock(&wb->outage.lock);
	n = atomic_load(&wb->failed_rounds);
	since = atomic_load(&wb->failing_since_ns);
	wall = wb->outage.since_wall_ms;
	atomic_store(&wb->failed_rounds, 0);
	atomic_store(&wb->failing_since_ns, 0);
	atomic_store(&wb->last_errno, 0);
	wb->outage.since_wall_ms = 0;
	wb->outage.retry_at_ns = 0;
	wb->outage.step = 0;
	pthread_mutex_unlock(&wb->outage.lock);
	if (n)
		wc_log(WC_LOG_NOTICE, "%s: the origin (%s) is back: write-back got through after %.1f s of "
		       "failures (%u failed attempts since %s)", c->cache_path,
		       wc_origin_describe(&c->origin), (double)(wc_clock_ns() - since) / 1e9, n,
		       wall_str(when, sizeof(when), wall));
}

bool wc_wb_origin_failing(struct wc_cache *c)
{
	return atomic_load_explicit(&c->wb->failed_rounds, memory_order_relaxed) != 0;
}

uint64_t wc_wb_retry_in_ns(struct wc_cache *c)
{
	struct wc_writeback *wb = c->wb;
	uint64_t now, at;

	if (!wc_wb_origin_failing(c))
		return 0;
	pthread_mutex_lock(&wb->outage.lock);
	at = wb->outage.retry_at_ns;
	pthread_mutex_unlock(&wb->outage.lock);
	now = wc_clock_ns();
	return at > now ? at - now : 0;
}

void wc_wb_backoff_wait(struct wc_cache *c)
{
	struct wc_writeback *wb = c->wb;
	unsigned kicks;

	if (!wc_wb_origin_failing(c))
		return;
	pthread_mutex_lock(&wb->outage.lock);
	kicks = wb->outage.kicks;
	for (;;) {
		uint64_t at = wb->outage.retry_at_ns;
		struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };

		if (wb->outage.kicks != kicks || !atomic_load(&wb->failed_rounds) || at <= wc_clock_ns())
			break;
		pthread_cond_timedwait(&wb->outage.retry, &wb->outage.lock, &ts);
	}
	pthread_mutex_unlock(&wb->outage.lock);
}

void wc_wb_retry_now(struct wc_cache *c)
{
	struct wc_writeback *wb = c->wb;

	pthread_mutex_lock(&wb->outage.lock);
	wb->outage.step = 0;
	wb->outage.retry_at_ns = 0;
	wb->outage.kicks++;
	pthread_cond_broadcast(&wb->outage.retry);
	pthread_mutex_unlock(&wb->outage.lock);
}

bool wc_wb_past_patience(struct wc_cache *c)
{
	uint64_t since = atomic_load(&c->wb->failing_since_ns);

	return since && wc_clock_ns() - since >= WB_FULL_PATIENCE_MS * 1000000ull;
}

int wc_wb_refuse_full(struct wc_cache *c, const char *op)
{
	struct wc_writeback *wb = c->wb;
	uint64_t since, wall, now;
	int err;
	char when[64];

	if (!wc_wb_origin_failing(c))
		return 0;
	pthread_mutex_lock(&wb->outage.lock);
	since = atomic_load(&wb->failing_since_ns);
	wall = wb->outage.since_wall_ms;
	err = atomic_load(&wb->last_errno);
	pthread_mutex_unlock(&wb->outage.lock);
	now = wc_clock_ns();
	if (!since || now - since < WB_FULL_PATIENCE_MS * 1000000ull)
		return 0;
	atomic_fetch_add_explicit(&wb->outage.refused, 1, memory_order_relaxed);
	return wc_err(-ENOSPC, "%s %s: no room: every cache block holds data the origin has not taken, "
	              "and the origin has been failing since %s (%.1f s; last error: %s); what the cache "
	              "acknowledged is safe in it -- write again once the origin is back",
	              c->cache_path, op, wall_str(when, sizeof(when), wall), (double)(now - since) / 1e9,
	              err_str(err));
}

bool wc_wb_drain_retries(struct wc_cache *c, int err)
{
	unsigned give_up_ms = wc_test_hooks && wc_test_hooks->writeback_give_up_ms
	                      ? wc_test_hooks->writeback_give_up_ms : WB_DRAIN_GIVE_UP_MS;
	uint64_t since = atomic_load(&c->wb->failing_since_ns);

	if (wc_has_error(c) || !since)
		return false;
	if (wc_clock_ns() - since >= (uint64_t)give_up_ms * 1000000ull) {
		wc_err(err, "%s: write-back gave up after %.1f s of origin failures (last: %s); the blocks "
		       "stay dirty in the cache and are written back once the origin answers",
		       c->cache_path, (double)(wc_clock_ns() - since) / 1e9, err_str(err));
		return false;
	}
	wc_wb_backoff_wait(c);
	return true;
}

int wc_wb_room_wait(struct wc_cache *c, const char *op)
{
	int err;

	if (!wc_wb_retry_in_ns(c))
		return 0;
	err = wc_wb_refuse_full(c, op);
	if (err)
		return err;
	wc_wb_backoff_wait(c);
	return 0;
}
