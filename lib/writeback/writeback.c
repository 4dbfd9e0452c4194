/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writeback.c -- moving committed blocks to the origin, then freeing them.
 *
 * One write-back *round* (wc_writeback_round) is the unit of work, run by the
 * background thread, by wc_poll() in no_threads mode, by wc_writeback(), and
 * by a writer that finds no free block in no_threads mode.  A round moves up
 * to WB_ROUND_BYTES, streaming: while fewer blocks than the window are in
 * flight and the round has room, it
 *   picks    committed blocks (pick.c), in cache order, each grown
 *            into a run of its dirty origin neighbours;
 *   writes   sorted by origin block, neighbours merged into one I/O of up to
 *            writeback_max_io_kib, straight from pmem;
 * and once every write of the round completed, the round is
 *   durable  the origin flushed once (fdatasync / FUA / NBD flush ...);
 *   freed    only then its entries invalidated, drained once, blocks freed.
 * A crash between `durable` and `freed` only repeats an idempotent write.
 *
 * Pipelined, in one thread: a round is left "written" (its writes complete,
 * not yet durable) when it ends.  Where the origin takes a flush request
 * (lib/origin.h: the libaio, NBD and RBD backends), the round's flush goes out at
 * once and the next round's writes run beside it; the round is freed when
 * the flush completes, at the latest before the next round ends.  Else the
 * next round calls flush() right after its first writes are submitted, so
 * the origin still has work while the call blocks.  Serial rounds measured
 * 0.58-0.67 of the raw libaio loop for random write-back on ext4; an
 * fdatasync there takes ~20 ms, the time ~8 MB of random writes take.  A
 * round that finds nothing to write settles the one before at once, so
 * nothing stays undurable longer than the next round (without threads, the
 * round settles itself before it returns: the host's next call may be long
 * in coming).  One thread submits and flushes: an origin may scope a flush
 * to the writes of the thread that calls it (the NBD backend reports a
 * write lost with a dropped connection to the next flush of its thread).
 * A block keeps WC_E_WB until its round is freed, so a newer version of it
 * waits for a later pick (versions never pass each other to the origin).
 * A flush that fails may have lost every write completed before it (a
 * server that crashed with its cache, a disk's lost volatile cache): the
 * round being written meanwhile is then written again as well, whatever
 * its own flush says (wb_round.taint).
 *
 * The window -- blocks in flight -- starts at writeback_jobs and deepens
 * while a deeper queue buys throughput (a remote origin, whose latency is
 * the network's, not its queue's), up to writeback_window_max_kib
 * (wc_wb_window_step, window.c).
 *
 * A failed origin write or flush leaves its blocks dirty, and the round
 * counts in the origin's failure streak (outage.c): retried without end
 * with backoff, never the sticky error -- the data is safe in the cache,
 * and the origin may come back.  The thread waits out the backoff between
 * rounds (autocommit goes on meanwhile); wc_writeback returns the origin's
 * errno after a minute (outage.c).  Only a state write-back can no longer
 * tell -- the origin's poll broken with requests in flight, whose buffers a
 * later round would reuse -- is sticky.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "core/readahead.h"
#include "writeback/internal.h"

#define WC_WRITEBACK_THREAD_NAME "wc-writeback" /* <= 15 characters */

/*
 * Bytes one round writes back between two origin flushes (at most).  Each
 * flush costs ~0.1 ms on this machine's virtio disk but milliseconds on a
 * disk with a volatile write cache.  Measured with serial rounds, wcbench
 * writeback --flush-delay-us 2000 (ext4 origin, 512 MiB over a 128 MiB
 * cache): total / raw was 0.23-0.25 sequential and 0.64-0.70 random with a
 * round of one 1 MiB window, 0.89-1.32 and 1.20-1.41 with 16 MiB rounds.
 * Blocks stay allocated until their round is freed, and two rounds may be
 * held at once, so a round never holds more than 1 / WB_ROUND_SHARE of the
 * cache.
 */
#define WB_ROUND_BYTES (16u << 20)
#define WB_ROUND_SHARE 8 /* round <= cache blocks / WB_ROUND_SHARE */
/* Refill the window once this share of it is free again: picking a few
 * blocks at a time would cut runs short. */
#define WB_REFILL_DIV 2

static uint64_t used_blocks(struct wc_cache *c)
{
	return c->layout.n_blocks - wc_free_count(c);
}

bool wc_writeback_due(struct wc_cache *c)
{
	uint64_t used = used_blocks(c);

	/* Cleaner mode: until nothing is left (an idle host then sees -1). */
	return used * 100 >= (uint64_t)c->cfg.high_watermark * c->layout.n_blocks ||
	       (atomic_load(&c->wb->cleaner) && used);
}

/* May run in any thread that polls the origin.  `pending` goes last: the
 * round may be handed on as soon as it reads zero. */
static void run_done(struct wc_origin_io *io, ssize_t res)
{
	struct wb_run *r = (struct wb_run *)io;
	struct wb_round *round = r->round;

	r->res = res;
	r->start_ns = wc_clock_ns() - r->start_ns;
	atomic_fetch_sub(&round->c->wb->inflight, r->n);
	atomic_fetch_sub(&round->pending, 1);
}

/* Build runs of consecutive origin blocks from cand[first, first + n) (sorted)
 * and submit them.  Returns the runs added. */
static unsigned submit_runs(struct wc_cache *c, struct wb_round *round, unsigned first, unsigned n)
{
	uint32_t bs = c->layout.block_size;
	unsigned max_blocks = wc_wb_max_run_blocks(c);
	unsigned start = round->nruns, nruns = start, end = first + n;
	uint64_t t;

	for (unsigned i = first; i < end;) {
		struct wb_run *r = &round->runs[nruns++];
		unsigned j = i + 1;

		while (j < end && j - i < max_blocks &&
		       c->e[round->cand[j]].origin == c->e[round->cand[j - 1]].origin + 1)
			j++;
		for (unsigned k = i; k < j; k++) {
			round->iov[k].iov_base = wc_pmem_data(c->base, &c->layout, round->cand[k]);
			round->iov[k].iov_len = bs;
		}
		memset(r, 0, sizeof(*r));
		r->round = round;
		r->first = i;
		r->n = j - i;
		r->io.op = WC_ORIGIN_WRITE;
		r->io.iov = &round->iov[i];
		r->io.iovcnt = (int)(j - i);
		r->io.offset = c->e[round->cand[i]].origin << c->block_shift;
		r->io.done = run_done;
		r->io.priv = r;
		i = j;
	}
	/* Count them in flight before the first can complete (in another
	 * thread's poll, perhaps). */
	atomic_fetch_add(&round->pending, nruns - start);
	atomic_fetch_add(&c->wb->inflight, n);
	t = wc_clock_ns();
	for (unsigned k = start; k < nruns; k++) {
		struct wb_run *r = &round->runs[k];
		int ret;

		r->start_ns = t;
		ret = wc_origin_submit(&c->origin, &r->io);
		if (ret) {
			r->res = ret;
			r->start_ns = 0;
			atomic_fetch_sub(&c->wb->inflight, r->n);
			atomic_fetch_sub(&round->pending, 1);
		}
	}
	round->nruns = nruns;
	return nruns - start;
}

/* The round's mean request latency, for stats. */
static void note_latency(struct wb_state *w, struct wb_round *round)
{
	uint64_t sum = 0;
	unsigned samples = 0;

	for (unsigned k = 0; k < round->nruns; k++) {
		if (round->runs[k].res <= 0 || !round->runs[k].start_ns)
			continue;
		sum += round->runs[k].start_ns;
		samples++;
	}
	if (samples)
		__atomic_store_n(&w->last_mean_ns, sum / samples, __ATOMIC_RELAXED);
}

/*
 * Pick and write up to `want` blocks into `round`, keeping the window full,
 * until every write completed.  Returns the blocks written (all of the round's
 * runs are done), or -EIO when the origin's poll broke with writes in flight
 * (then the cache is in the sticky error: they can no longer be accounted
 * for, and nothing of the round may be freed).
 */
static int fill(struct wc_cache *c, struct wb_state *w, struct wb_round *round,
                enum wc_wb_pick_mode mode, unsigned want)
{
	uint64_t start = wc_clock_ns();
	unsigned n = 0;
	int ret;

	round->n = round->nruns = 0;
	round->taint = 0;
	w->filling = round;
	for (bool more = true;;) {
		unsigned jobs;

		if (w->written && w->flush.begun &&
		    atomic_load_explicit(&w->flush.done, memory_order_acquire))
			wc_wb_settle_end(c, w);
		jobs = w->win.blocks;
		uint64_t busy = atomic_load(&c->wb->inflight);
		unsigned room = busy < jobs ? jobs - (unsigned)busy : 0;
		unsigned left = want - n;

		/* Refill as soon as a useful share of the window is free. */
		if (more && left && room && (room >= jobs / WB_REFILL_DIV || room >= left || !busy)) {
			unsigned got = wc_wb_pick(c, &w->scan, mode, room < left ? room : left,
			                          &round->cand[n]);

			if (got) {
				wc_wb_sort_by_origin(c, &round->cand[n], got);
				submit_runs(c, round, n, got);
				n += got;
				round->n = n;
				/* The origin has work: now flush the round
				 * before (as a request where the origin takes
				 * one, so the origin keeps writing). */
				if (w->written)
					wc_wb_settle_begin(c, w);
				continue;
			}
			more = false; /* nothing else eligible now */
		}
		if (!atomic_load(&round->pending)) {
			if (!more || n == want)
				break;
			continue;
		}
		/* A short slice: another thread's poll (a reader's miss, a
		 * write around) may reap our completions and leave us
		 * waiting for events that never come; a 100 ms wait here
		 * cost 13 s in a 4-writer test that takes 0.3 s with 1 ms. */
		ret = wc_origin_poll(&c->origin, 1, WB_POLL_SLICE_NS);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN)
			break; /* a broken poll: the requests are lost to us */
	}
	if (atomic_load(&round->pending)) {
		/* Requests we can no longer account for: stop for good rather
		 * than risk freeing a block whose write is still in flight. */
		wc_set_error(c, -EIO, "origin poll failed with write-back in flight");
		return wc_err(-EIO, "%s: origin poll failed with %u write-back requests in flight",
		              c->cache_path, atomic_load(&round->pending));
	}
	if (n) {
		note_latency(w, round);
		wc_wb_window_step(&w->win, n, wc_clock_ns() - start);
	}
	return (int)n;
}

static int step_locked(struct wc_cache *c, struct wb_state *w, bool wait);

static int state_init(struct wc_cache *c)
{
	struct wb_state *w = calloc(1, sizeof(*w));
	uint64_t cap = WB_ROUND_BYTES / c->layout.block_size, max;

	if (!w)
		return wc_err(-ENOMEM, "%s: write-back state", c->cache_path);
	c->wb->state = w;
	if (cap > c->layout.n_blocks / WB_ROUND_SHARE)
		cap = c->layout.n_blocks / WB_ROUND_SHARE;
	if (cap < c->cfg.writeback_jobs)
		cap = c->cfg.writeback_jobs; /* one full window at least */
	w->cap = (unsigned)cap;
	pthread_mutex_init(&w->range_lock, NULL);
	w->sync_flush = !wc_origin_async_flush(&c->origin);
	max = (uint64_t)c->cfg.writeback_window_max_kib * 1024 / c->layout.block_size;
	wc_wb_window_init(&w->win, c->cfg.writeback_jobs, max > cap ? (unsigned)cap : (unsigned)max);
	for (unsigned i = 0; i < 2; i++) {
		struct wb_round *round = &w->round[i];

		round->c = c;
		round->cand = calloc(cap, sizeof(*round->cand));
		round->iov = calloc(cap, sizeof(*round->iov));
		round->runs = calloc(cap, sizeof(*round->runs));
		if (!round->cand || !round->iov || !round->runs)
			return wc_err(-ENOMEM, "%s: write-back state for %llu blocks", c->cache_path,
			              (unsigned long long)cap);
	}
	return 0;
}

static void state_fini(struct wc_cache *c)
{
	struct wb_state *w = c->wb->state;

	if (!w)
		return;
	pthread_mutex_destroy(&w->range_lock);
	for (unsigned i = 0; i < 2; i++) {
		free(w->round[i].cand);
		free(w->round[i].iov);
		free(w->round[i].runs);
	}
	free(w);
	c->wb->state = NULL;
}

/* The window write-back keeps in flight now (blocks) and the mean latency
 * of its last measured round's origin writes: a snapshot, for stats. */
static unsigned window_snapshot(struct wc_cache *c, uint64_t *mean_latency_ns)
{
	struct wb_state *w = c->wb->state;

	if (!w) {
		*mean_latency_ns = 0;
		return 0;
	}
	/* Racy by design: a snapshot for stats. */
	*mean_latency_ns = __atomic_load_n(&w->last_mean_ns, __ATOMIC_RELAXED);
	return __atomic_load_n(&w->win.blocks, __ATOMIC_RELAXED);
}

/* What a round of this mode should take, or 0 for "nothing to do". */
static unsigned round_want(struct wc_cache *c, struct wb_state *w, bool all,
                           enum wc_wb_pick_mode *mode)
{
	uint64_t used = used_blocks(c);
	uint64_t low = (uint64_t)c->cfg.low_watermark * c->layout.n_blocks / 100;

	if (used * 100 >= (uint64_t)c->cfg.high_watermark * c->layout.n_blocks)
		w->active = true;
	if (used <= low)
		w->active = false;
	if (all || atomic_load(&c->wb->cleaner)) {
		*mode = WC_PICK_ALL;
		return w->cap;
	}
	if (w->active) {
		*mode = WC_PICK_WATERMARK;
		return used - low == 0 ? 1 : used - low < w->cap ? (unsigned)(used - low) : w->cap;
	}
	if (wc_wb_origin_failing(c)) {
		/* A streak that outlived the watermarks (a round that got
		 * part through took the cache below them) ends only with a
		 * round that gets through: probe with one run. */
		*mode = WC_PICK_WATERMARK;
		return 1;
	}
	if (c->cfg.max_age_ms) {
		*mode = WC_PICK_AGE;
		return w->cap;
	}
	return 0;
}

/*
 * The host's steps (no_threads): one round at a time, from its first pick
 * to its free, each call doing what needs no wait -- reap the origin's
 * completions, refill the window, and once every write of the round is
 * done, send its flush; once the flush is done, free.  Nothing overlaps
 * (the threaded rounds pipeline the next round's writes with this one's
 * flush): a step must leave nothing half-owned when the host stops calling.
 * `wait` (wb_lock held): the synchronous callers finish a step's round,
 * polling the origin as fill() does.  Returns units of progress.
 */
static int step_locked(struct wc_cache *c, struct wb_state *w, bool wait)
{
	int units = 0;

	for (;;) {
		struct wb_round *round = w->step.round;
		int progress = 0;

		if (wc_origin_poll(&c->origin, 0, 0) > 0)
			progress++;
		if (round && !w->written) {
			unsigned jobs = w->win.blocks, left = w->step.want - w->step.n;
			uint64_t busy = atomic_load(&c->wb->inflight);
			unsigned room = busy < jobs ? jobs - (unsigned)busy : 0;

			if (w->step.more && left && room && !wc_has_error(c)) {
				unsigned got = wc_wb_pick(c, &w->scan, w->step.mode, room < left ? room : left,
				                          &round->cand[w->step.n]);

				if (got) {
					wc_wb_sort_by_origin(c, &round->cand[w->step.n], got);
					submit_runs(c, round, w->step.n, got);
					w->step.n += got;
					round->n = w->step.n;
					progress++;
				} else {
					w->step.more = false;
				}
			}
			if (!atomic_load(&round->pending) && (!w->step.more || w->step.n == w->step.want)) {
				/* Every write done: the round is written. */
				w->filling = NULL;
				if (w->step.n) {
					note_latency(w, round);
					wc_wb_window_step(&w->win, w->step.n, wc_clock_ns() - w->step.start_ns);
					w->written = round;
					wc_wb_settle_begin(c, w);
					progress++;
				} else {
					/* It found nothing: no progress, or
					 * a host polling an idle cache would
					 * never see 0. */
					w->step.round = NULL;
				}
			}
		}
		if (w->written && w->flush.begun &&
		    atomic_load_explicit(&w->flush.done, memory_order_acquire)) {
			unsigned failed;

			wc_wb_settle_end(c, w);
			w->step.round = NULL;
			failed = w->settle_failed;
			w->settle_failed = 0;
			/* The next round waits for the failing origin's
			 * backoff (wc_wb_retry_in_ns). */
			if (failed)
				wc_wb_failed_round_err(c, failed);
			progress++;
		}
		units += progress;
		if (!wait || !w->step.round)
			return units;
		if (!progress) {
			int ret = wc_origin_poll(&c->origin, 1, WB_POLL_SLICE_NS);

			if (ret < 0 && ret != -EINTR && ret != -EAGAIN) {
				wc_set_error(c, -EIO, "origin poll failed with write-back in flight");
				return wc_err(-EIO, "%s: origin poll failed with write-back in flight",
				              c->cache_path);
			}
		}
	}
}

int wc_writeback_step(struct wc_cache *c)
{
	struct wb_state *w = c->wb->state;
	int units;

	if (!w || wc_has_error(c))
		return 0;
	/* A synchronous round (wc_writeback, a write making room) holds it:
	 * that is progress enough for now. */
	if (pthread_mutex_trylock(&c->wb->lock))
		return 0;
	units = step_locked(c, w, false);
	if (!w->step.round && !w->written && !wc_wb_retry_in_ns(c)) {
		enum wc_wb_pick_mode mode;
		unsigned want = round_want(c, w, false, &mode);

		if (want) {
			struct wb_round *round = &w->round[w->next];

			w->next ^= 1;
			round->n = round->nruns = 0;
			round->taint = 0;
			w->filling = round;
			w->step.round = round;
			w->step.mode = mode;
			w->step.want = want;
			w->step.n = 0;
			w->step.more = true;
			w->step.start_ns = wc_clock_ns();
			units += step_locked(c, w, false);
		}
	}
	pthread_mutex_unlock(&c->wb->lock);
	return units;
}

int wc_writeback_step_deadline_ms(struct wc_cache *c)
{
	struct wb_state *w = c->wb->state;
	uint64_t retry;
	int due = -1;

	if (!w || wc_has_error(c))
		return -1;
	pthread_mutex_lock(&c->wb->lock);
	retry = wc_wb_retry_in_ns(c);
	if (w->step.round || w->written)
		due = 1; /* the origin's completions come without a descriptor */
	else if (retry)
		due = (int)((retry + 999999) / 1000000);
	else if (wc_writeback_due(c) || wc_wb_origin_failing(c))
		due = 0;
	else if (c->cfg.max_age_ms)
		due = (int)(c->cfg.max_age_ms / 16 ? c->cfg.max_age_ms / 16 : 1);
	pthread_mutex_unlock(&c->wb->lock);
	return due;
}

int wc_writeback_blocks(struct wc_cache *c, uint64_t first, uint64_t n)
{
	struct wb_state *w = c->wb->state;
	int r;

	if (!w)
		return wc_writeback_everything(c);
	pthread_mutex_lock(&w->range_lock);
	pthread_mutex_lock(&c->wb->lock);
	w->range_lo = first;
	w->range_hi = first + n;
	pthread_mutex_unlock(&c->wb->lock);
	r = wc_writeback_everything(c);
	pthread_mutex_lock(&c->wb->lock);
	w->range_lo = w->range_hi = 0;
	pthread_mutex_unlock(&c->wb->lock);
	pthread_mutex_unlock(&w->range_lock);
	return r;
}

int wc_writeback_round(struct wc_cache *c, bool all)
{
	struct wb_state *w = c->wb->state;
	struct wb_round *round;
	enum wc_wb_pick_mode mode;
	unsigned want, failed;
	bool settled;
	int err, n;

	err = wc_has_error(c);
	if (err)
		return wc_err(-EIO, "%s: write-back stopped: the cache is in error state (%d)",
		              c->cache_path, err);
	pthread_mutex_lock(&c->wb->lock);
	/* A round the host's steps began uses a round buffer and the written
	 * slot: finish it here, waiting, before this one. */
	if (w->step.round)
		step_locked(c, w, true);
	want = round_want(c, w, all, &mode);
	if (!want) {
		/* Nothing due: the last round's blocks go now, not whenever
		 * write-back is next due. */
		if (w->written)
			wc_wb_settle(c, w);
		failed = w->settle_failed;
		w->settle_failed = 0;
		err = failed ? wc_wb_failed_round_err(c, failed) : 0;
		pthread_mutex_unlock(&c->wb->lock);
		return err;
	}
	if (mode == WC_PICK_ALL && wc_uncommitted(c)) {
		/* Only committed blocks may be written back: commit first. */
		err = wc_commit(c, false);
		if (err) {
			pthread_mutex_unlock(&c->wb->lock);
			return err;
		}
	}
again:
	/* The other buffer than the written round's. */
	round = &w->round[w->next];
	w->next ^= 1;
	n = fill(c, w, round, mode, want);
	if (n < 0) {
		/* The sticky error is set; the round's blocks stay WC_E_WB,
		 * never freed, as their writes may still land. */
		w->filling = NULL;
		pthread_mutex_unlock(&c->wb->lock);
		return n;
	}
	settled = w->written != NULL;
	if (n == 0) {
		/* Nothing to overlap with: settle the round before now. */
		if (settled)
			wc_wb_settle(c, w);
		/* A block skipped because an older version of it was in that
		 * round is eligible now: look again before saying "done". */
		if (settled && mode == WC_PICK_ALL && !w->settle_failed)
			goto again;
	} else {
		if (settled) /* every pick came back empty after the first? */
			wc_wb_settle(c, w);
		w->written = round;
		/* A flush request goes out now, ahead of the next round's
		 * writes; a flush() call waits for them to be under way. */
		if (!w->sync_flush)
			wc_wb_settle_begin(c, w);
		/* Without threads the host's calls come apart in time: leave
		 * nothing written but not durable between them. */
		if (c->cfg.no_threads)
			wc_wb_settle(c, w);
	}
	w->filling = NULL;
	failed = w->settle_failed;
	w->settle_failed = 0;
	err = failed ? wc_wb_failed_round_err(c, failed) : 0;
	pthread_mutex_unlock(&c->wb->lock);
	/* The caller paces the next attempt (wc_wb_retry_in_ns): a writer in
	 * need of room must not sleep here. */
	return failed ? err : n;
}

/* Settle what the last round left written (wb_lock not held): for close. */
static void settle_last(struct wc_cache *c)
{
	struct wb_state *w = c->wb->state;

	pthread_mutex_lock(&c->wb->lock);
	/* A round the host's steps left under way has writes in flight:
	 * their completions must not land in freed rounds. */
	if (w->step.round)
		step_locked(c, w, true);
	if (w->written && !wc_has_error(c)) {
		wc_wb_settle(c, w);
	} else if (w->written && w->flush.begun) {
		/* In error: nothing is freed, but the flush's completion must
		 * not land in freed state. */
		while (!atomic_load_explicit(&w->flush.done, memory_order_acquire)) {
			int ret = wc_origin_poll(&c->origin, 1, WB_POLL_SLICE_NS);

			if (ret < 0 && ret != -EINTR && ret != -EAGAIN)
				break;
		}
	}
	pthread_mutex_unlock(&c->wb->lock);
}

/* ---- the background thread ---- */

static void *bg_main(void *arg)
{
	struct wc_cache *c = arg;

	pthread_mutex_lock(&c->wb->bg_lock);
	while (!c->wb->bg_stop) {
		unsigned wait_ms = 100;
		struct timespec ts;
		uint64_t retry_ns;
		int r = 0;

		c->wb->bg_kick = false;
		pthread_mutex_unlock(&c->wb->bg_lock);
		if (wc_autocommit_due(c))
			wc_commit(c, false);
		/* A failing origin is tried again once its backoff passed, and
		 * not sooner however often writers kick. */
		if (!wc_has_error(c) && !wc_wb_retry_in_ns(c))
			r = wc_writeback_round(c, false);
		pthread_mutex_lock(&c->wb->bg_lock);
		if (r > 0 || c->wb->bg_kick)
			continue;
		if (c->cfg.autocommit_ms && c->cfg.autocommit_ms < wait_ms)
			wait_ms = c->cfg.autocommit_ms;
		if (c->cfg.max_age_ms && c->cfg.max_age_ms / 16 < wait_ms)
			wait_ms = c->cfg.max_age_ms / 16 ? c->cfg.max_age_ms / 16 : 1;
		retry_ns = wc_wb_retry_in_ns(c);
		if (retry_ns && retry_ns / 1000000 < wait_ms)
			wait_ms = (unsigned)(retry_ns / 1000000) + 1;
		ts = wc_clock_deadline_ms(wait_ms);
		if (!c->wb->bg_stop)
			pthread_cond_timedwait(&c->wb->bg_cond, &c->wb->bg_lock, &ts);
	}
	pthread_mutex_unlock(&c->wb->bg_lock);
	return NULL;
}

int wc_writeback_init(struct wc_cache *c)
{
	struct wc_writeback *wb = calloc(1, sizeof(*wb));

	if (!wb)
		return wc_err(-ENOMEM, "%s: write-back state", c->cache_path);
	pthread_mutex_init(&wb->lock, NULL);
	pthread_mutex_init(&wb->bg_lock, NULL);
	pthread_cond_init(&wb->bg_cond, NULL);
	wc_wb_outage_init(wb);
	atomic_init(&wb->cleaner, c->cfg.cleaner);
	c->wb = wb;
	return 0;
}

void wc_writeback_fini(struct wc_cache *c)
{
	if (!c->wb)
		return;
	pthread_mutex_destroy(&c->wb->lock);
	pthread_mutex_destroy(&c->wb->bg_lock);
	pthread_cond_destroy(&c->wb->bg_cond);
	wc_wb_outage_fini(c->wb);
	free(c->wb);
	c->wb = NULL;
}

bool wc_writeback_cleaning(struct wc_cache *c)
{
	return atomic_load_explicit(&c->wb->cleaner, memory_order_relaxed);
}

void wc_writeback_stats(struct wc_cache *c, struct wc_stats *st)
{
	struct wc_writeback *wb = c->wb;
	uint64_t since;

	st->writeback_blocks = atomic_load(&wb->inflight);
	st->writeback_ios = atomic_load_explicit(&wb->ios, memory_order_relaxed);
	st->writeback_bytes = atomic_load_explicit(&wb->bytes, memory_order_relaxed);
	st->writeback_errors = atomic_load_explicit(&wb->errors, memory_order_relaxed);
	st->writeback_window = window_snapshot(c, &st->writeback_latency_us);
	st->writeback_latency_us /= 1000;
	/* The origin's failure, both media's (outage.c). */
	pthread_mutex_lock(&wb->outage.lock);
	since = atomic_load_explicit(&wb->failing_since_ns, memory_order_relaxed);
	st->writeback_last_error = atomic_load_explicit(&wb->last_errno, memory_order_relaxed);
	st->writeback_failing_ms = since ? (wc_clock_ns() - since) / 1000000 : 0;
	st->writeback_failing_since_ms = since ? wb->outage.since_wall_ms : 0;
	pthread_mutex_unlock(&wb->outage.lock);
	st->writeback_outages = atomic_load_explicit(&wb->outage.outages, memory_order_relaxed);
	st->writes_refused_full = atomic_load_explicit(&wb->outage.refused, memory_order_relaxed);
}

void wc_writeback_stats_reset(struct wc_cache *c)
{
	atomic_store(&c->wb->ios, 0);
	atomic_store(&c->wb->bytes, 0);
	atomic_store(&c->wb->errors, 0);
	atomic_store(&c->wb->outage.outages, 0);
	atomic_store(&c->wb->outage.refused, 0);
}

int wc_writeback_start(struct wc_cache *c)
{
	int ret;

	ret = state_init(c);
	if (ret)
		return ret;
	if (c->cfg.no_threads)
		return 0;
	ret = pthread_create(&c->wb->bg_thread, NULL, bg_main, c);
	if (ret)
		return wc_err(-ret, "%s: cannot start the write-back thread", c->cache_path);
	/* Named, so top -H and the tests can tell it from the host's threads. */
	pthread_setname_np(c->wb->bg_thread, WC_WRITEBACK_THREAD_NAME);
	c->wb->bg_running = true;
	return 0;
}

void wc_writeback_stop(struct wc_cache *c)
{
	struct wb_state *w;

	if (!c->wb)
		return; /* the open failed before write-back had a state */
	w = c->wb->state;
	if (c->wb->bg_running) {
		pthread_mutex_lock(&c->wb->bg_lock);
		c->wb->bg_stop = true;
		pthread_cond_signal(&c->wb->bg_cond);
		pthread_mutex_unlock(&c->wb->bg_lock);
		pthread_join(c->wb->bg_thread, NULL);
		c->wb->bg_running = false;
	}
	/* The last round's writes completed; make them durable and free them
	 * (a cache in error state keeps them: its blocks stay dirty). */
	if (w)
		settle_last(c);
	state_fini(c);
}

void wc_writeback_kick(struct wc_cache *c)
{
	if (!c->wb->bg_running)
		return;
	pthread_mutex_lock(&c->wb->bg_lock);
	c->wb->bg_kick = true;
	pthread_cond_signal(&c->wb->bg_cond);
	pthread_mutex_unlock(&c->wb->bg_lock);
}

/* ---- what wc_writeback, wc_set_cleaner and wc_poll do on pmem (api/cache.c) ---- */

int wc_writeback_everything(struct wc_cache *c)
{
	int r;

	r = wc_commit(c, false);
	if (r)
		return r;
	do
		r = wc_writeback_round(c, true);
	while (r > 0 || (r < 0 && wc_wb_drain_retries(c, r)));
	wc_release_freed(c);
	return r;
}

void wc_writeback_set_cleaner(struct wc_cache *c, bool on)
{
	atomic_store(&c->wb->cleaner, on);
	wc_writeback_kick(c);
}
