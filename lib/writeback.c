/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writeback.c -- moving committed blocks to the origin, then freeing them.
 *
 * One write-back *round* (wc_writeback_round) is the unit of work, run by the
 * background thread, by wc_poll() in no_threads mode, by wc_writeback(), and
 * by a writer that finds no free block in no_threads mode:
 *   pick     up to writeback_jobs committed blocks, oldest first, shard by
 *            shard; skip a block while an older version of it is still
 *            being written back (two versions are never reordered);
 *   write    sort by origin block, merge neighbours into one I/O of up to
 *            writeback_max_io_kib, issue them straight from pmem;
 *   durable  when all completed, flush the origin (fdatasync / FUA);
 *   free     only then invalidate the entries, drain once, free the blocks.
 * A crash between `durable` and `free` only repeats an idempotent write.
 * A failed write leaves its block dirty (retried with backoff); after
 * WB_MAX_FAILURES failed rounds in a row the cache enters the sticky error.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache_impl.h"
#include "error.h"

#define WB_MAX_FAILURES 6
#define WB_STEP 8 /* blocks taken from one shard before moving on */

enum pick_mode { PICK_ALL, PICK_WATERMARK, PICK_AGE };

struct wb_run {
	struct wc_origin_io io;
	struct wc_cache *c;
	uint32_t first, n;       /* positions in the sorted candidate array */
	ssize_t res;
};

struct wb_state {
	uint32_t *cand;
	struct iovec *iov;
	struct wb_run *runs;
	unsigned cap;
	atomic_uint pending;
	bool active;             /* between high and low watermark */
	unsigned cursor;         /* shard to start picking from */
};

static uint64_t used_blocks(struct wc_cache *c)
{
	return c->layout.n_blocks - wc_free_count(c);
}

bool wc_writeback_due(struct wc_cache *c)
{
	return used_blocks(c) * 100 >= (uint64_t)c->cfg.high_watermark * c->layout.n_blocks ||
	       atomic_load(&c->cleaner);
}

static bool eligible(struct wc_cache *c, struct wc_shard *s, uint32_t idx, enum pick_mode mode,
                     uint32_t now)
{
	struct wc_entry *e = &c->e[idx];

	if (!wc_is_committed(c, e->seq))
		return false;
	if (mode == PICK_AGE && now - e->age_ms < c->cfg.max_age_ms)
		return false;
	return !wc_index_wb_busy(c, s, e->origin, idx);
}

static unsigned pick(struct wc_cache *c, struct wb_state *w, enum pick_mode mode, unsigned want)
{
	uint32_t now = wc_now_ms(c);
	unsigned n = 0;
	bool progress = true;

	while (n < want && progress) {
		progress = false;
		for (unsigned k = 0; k < WC_SHARDS && n < want; k++) {
			struct wc_shard *s = &c->shards[(w->cursor + k) % WC_SHARDS];
			unsigned taken = 0;

			if (!__atomic_load_n(&s->lru.count, __ATOMIC_RELAXED))
				continue;
			pthread_mutex_lock(&s->lock);
			/* Publication order per shard is epoch order, so the first
			 * ineligible head ends this shard's turn. */
			while (n < want && taken < WB_STEP && s->lru.head != WC_NIL &&
			       eligible(c, s, s->lru.head, mode, now)) {
				uint32_t idx = s->lru.head;

				wc_list_remove(c, &s->lru, idx);
				c->e[idx].flags = (uint16_t)((c->e[idx].flags & ~WC_E_ON_LRU) | WC_E_WB);
				w->cand[n++] = idx;
				taken++;
			}
			pthread_mutex_unlock(&s->lock);
			progress |= taken > 0;
		}
	}
	w->cursor = (w->cursor + 1) % WC_SHARDS;
	return n;
}

static int by_origin(const void *a, const void *b, void *arg)
{
	const struct wc_entry *e = arg;
	uint64_t x = e[*(const uint32_t *)a].origin, y = e[*(const uint32_t *)b].origin;

	return x < y ? -1 : x > y;
}

static void run_done(struct wc_origin_io *io, ssize_t res)
{
	struct wb_run *r = (struct wb_run *)io;
	struct wb_state *w = r->c->wb_state;

	r->res = res;
	atomic_fetch_sub(&w->pending, 1);
}

/* Build runs of consecutive origin blocks and submit them. */
static unsigned submit_runs(struct wc_cache *c, struct wb_state *w, unsigned n)
{
	uint32_t bs = c->layout.block_size;
	unsigned max_blocks = (unsigned)((uint64_t)c->cfg.writeback_max_io_kib * 1024 / bs);
	unsigned nruns = 0;

	if (max_blocks == 0)
		max_blocks = 1;
	for (unsigned i = 0; i < n;) {
		struct wb_run *r = &w->runs[nruns++];
		unsigned j = i + 1;

		while (j < n && j - i < max_blocks && c->e[w->cand[j]].origin == c->e[w->cand[j - 1]].origin + 1)
			j++;
		for (unsigned k = i; k < j; k++) {
			w->iov[k].iov_base = wc_pmem_data(c->base, &c->layout, w->cand[k]);
			w->iov[k].iov_len = bs;
		}
		memset(r, 0, sizeof(*r));
		r->c = c;
		r->first = i;
		r->n = j - i;
		r->io.op = WC_ORIGIN_WRITE;
		r->io.iov = &w->iov[i];
		r->io.iovcnt = (int)(j - i);
		r->io.offset = c->e[w->cand[i]].origin << c->block_shift;
		r->io.done = run_done;
		r->io.priv = r;
		i = j;
	}
	atomic_store(&w->pending, nruns);
	for (unsigned k = 0; k < nruns; k++) {
		struct wb_run *r = &w->runs[k];
		int ret = wc_origin_submit(&c->origin, &r->io);

		if (ret) {
			r->res = ret;
			atomic_fetch_sub(&w->pending, 1);
		}
	}
	return nruns;
}

struct dead_set {
	uint64_t seq_limit;      /* versions up to this seq are on the origin */
	uint32_t *v;
	size_t n, cap;
	bool oom;
};

/* The block was written back: drop it and every older version of it, or a
 * crash could resurrect an older version over the origin's newer data. */
static void drop_written(struct wc_cache *c, struct wc_shard *s, uint32_t idx, void *arg)
{
	struct dead_set *d = arg;

	if (c->e[idx].seq > d->seq_limit || (c->e[idx].flags & WC_E_WB))
		return;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		uint32_t *nv = realloc(d->v, cap * sizeof(*nv));

		if (!nv) {
			d->oom = true;
			return;
		}
		d->v = nv;
		d->cap = cap;
	}
	wc_version_drop(c, s, idx);
	d->v[d->n++] = idx;
}

static void requeue_failed(struct wc_cache *c, struct wc_shard *s, uint32_t idx)
{
	struct wc_entry *e = &c->e[idx];

	e->flags &= ~WC_E_WB;
	if (e->flags & WC_E_CURRENT) {
		e->flags |= WC_E_ON_LRU;
		wc_list_push_tail(c, &s->lru, idx);
	} else {
		/* Superseded while in flight: free it after a later commit. */
		unsigned par = atomic_load(&c->epoch) & 1;

		e->flags |= WC_E_ON_SUPERSEDED | (par ? WC_E_SUP1 : 0);
		wc_list_push_tail(c, &s->superseded[par], idx);
	}
}

/* Free what reached the origin durably, requeue the rest.  Returns the
 * number of blocks freed. */
static unsigned finish(struct wc_cache *c, struct wb_state *w, unsigned nruns, bool durable,
                       unsigned *failed_out)
{
	struct dead_set d = {0};
	unsigned failed = 0;

	for (unsigned k = 0; k < nruns; k++) {
		struct wb_run *r = &w->runs[k];
		bool ok = durable && r->res == (ssize_t)r->n * c->layout.block_size;

		if (ok) {
			c->wb_ios++;
			c->wb_bytes += (uint64_t)r->n * c->layout.block_size;
		} else {
			failed += r->n;
		}
		for (unsigned i = r->first; i < r->first + r->n; i++) {
			uint32_t idx = w->cand[i];
			struct wc_shard *s = wc_shard_of(c, c->e[idx].origin);

			pthread_mutex_lock(&s->lock);
			if (ok) {
				c->e[idx].flags &= ~WC_E_WB;
				d.seq_limit = c->e[idx].seq;
				wc_wait_versions_unpinned(c, s, c->e[idx].origin);
				wc_index_each_version(c, s, c->e[idx].origin, drop_written, &d);
			}
			if (!ok || d.oom) {
				if (c->e[idx].flags & WC_E_INDEXED) {
					c->e[idx].flags |= WC_E_WB;
					requeue_failed(c, s, idx);
				}
				d.oom = false;
			}
			pthread_mutex_unlock(&s->lock);
		}
	}
	if (d.n) {
		/* Invariant (5) of commit.c: invalidations durable before reuse. */
		wc_flush_drain(&c->fp);
		wc_free_batch(c, d.v, d.n);
	}
	free(d.v);
	*failed_out = failed;
	return (unsigned)d.n;
}

static int state_init(struct wc_cache *c)
{
	struct wb_state *w = calloc(1, sizeof(*w));
	unsigned cap = c->cfg.writeback_jobs;

	if (!w)
		return wc_err(-ENOMEM, "%s: write-back state", c->cache_path);
	w->cap = cap;
	w->cand = calloc(cap, sizeof(*w->cand));
	w->iov = calloc(cap, sizeof(*w->iov));
	w->runs = calloc(cap, sizeof(*w->runs));
	c->wb_state = w;
	if (!w->cand || !w->iov || !w->runs)
		return wc_err(-ENOMEM, "%s: write-back state for %u jobs", c->cache_path, cap);
	return 0;
}

static void state_fini(struct wc_cache *c)
{
	struct wb_state *w = c->wb_state;

	if (!w)
		return;
	free(w->cand);
	free(w->iov);
	free(w->runs);
	free(w);
	c->wb_state = NULL;
}

static void backoff(unsigned failures)
{
	struct timespec ts = { 0, (long)(1000000L << (failures < 8 ? failures : 8)) };

	nanosleep(&ts, NULL); /* 2, 4, ... 256 ms */
}

int wc_writeback_round(struct wc_cache *c, bool all)
{
	struct wb_state *w = c->wb_state;
	uint64_t used, low;
	enum pick_mode mode;
	unsigned want, n, nruns, freed, failed;
	int err, ret;

	err = wc_has_error(c);
	if (err)
		return wc_err(-EIO, "%s: write-back stopped: the cache is in error state (%d)",
		              c->cache_path, err);
	pthread_mutex_lock(&c->wb_lock);
	used = used_blocks(c);
	low = (uint64_t)c->cfg.low_watermark * c->layout.n_blocks / 100;
	if (used * 100 >= (uint64_t)c->cfg.high_watermark * c->layout.n_blocks)
		w->active = true;
	if (used <= low)
		w->active = false;
	if (all || atomic_load(&c->cleaner)) {
		mode = PICK_ALL;
		want = w->cap;
	} else if (w->active) {
		mode = PICK_WATERMARK;
		want = used - low < w->cap ? (unsigned)(used - low) : w->cap;
	} else if (c->cfg.max_age_ms) {
		mode = PICK_AGE;
		want = w->cap;
	} else {
		pthread_mutex_unlock(&c->wb_lock);
		return 0;
	}
	if (mode == PICK_ALL && (atomic_load(&c->uncommitted[0]) || atomic_load(&c->uncommitted[1]))) {
		/* Only committed blocks may be written back: commit first. */
		ret = wc_commit(c, false);
		if (ret) {
			pthread_mutex_unlock(&c->wb_lock);
			return ret;
		}
	}
	n = pick(c, w, mode, want ? want : 1);
	if (n == 0) {
		pthread_mutex_unlock(&c->wb_lock);
		return 0;
	}
	qsort_r(w->cand, n, sizeof(*w->cand), by_origin, c->e);
	atomic_fetch_add(&c->wb_inflight, n);
	nruns = submit_runs(c, w, n);
	while (atomic_load(&w->pending)) {
		ret = wc_origin_poll(&c->origin, 1, 100 * 1000 * 1000ull);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN)
			break; /* a broken poll: the requests are lost to us */
	}
	ret = 0;
	if (!atomic_load(&w->pending)) {
		bool any_ok = false;

		for (unsigned k = 0; k < nruns; k++)
			any_ok |= w->runs[k].res > 0;
		/* Durable before free: the one rule write-back lives by. */
		if (any_ok)
			ret = wc_origin_flush(&c->origin);
	} else {
		/* Requests we can no longer account for: stop for good rather
		 * than risk freeing a block whose write is still in flight. */
		wc_set_error(c, -EIO, "origin poll failed with write-back in flight");
		pthread_mutex_unlock(&c->wb_lock);
		return wc_err(-EIO, "%s: origin poll failed with %u write-back requests in flight",
		              c->cache_path, atomic_load(&w->pending));
	}
	freed = finish(c, w, nruns, ret == 0 && !atomic_load(&w->pending), &failed);
	atomic_fetch_sub(&c->wb_inflight, n);
	if (failed) {
		c->wb_errors += failed;
		if (++c->wb_failures >= WB_MAX_FAILURES)
			wc_set_error(c, -EIO, "origin write-back failed repeatedly");
		pthread_mutex_unlock(&c->wb_lock);
		if (!wc_has_error(c))
			backoff(c->wb_failures);
		return wc_err(-EIO, "%s: write-back of %u blocks failed (attempt %u of %u)",
		              c->cache_path, failed, c->wb_failures, WB_MAX_FAILURES);
	}
	c->wb_failures = 0;
	pthread_mutex_unlock(&c->wb_lock);
	return (int)(freed ? freed : n);
}

/* ---- the background thread ---- */

static void *bg_main(void *arg)
{
	struct wc_cache *c = arg;

	pthread_mutex_lock(&c->bg_lock);
	while (!c->bg_stop) {
		unsigned wait_ms = 100;
		struct timespec ts;
		int r = 0;

		c->bg_kick = false;
		pthread_mutex_unlock(&c->bg_lock);
		if (wc_autocommit_due(c))
			wc_commit(c, false);
		if (!wc_has_error(c))
			r = wc_writeback_round(c, false);
		pthread_mutex_lock(&c->bg_lock);
		if (r > 0 || c->bg_kick)
			continue;
		if (c->cfg.autocommit_ms && c->cfg.autocommit_ms < wait_ms)
			wait_ms = c->cfg.autocommit_ms;
		if (c->cfg.max_age_ms && c->cfg.max_age_ms / 16 < wait_ms)
			wait_ms = c->cfg.max_age_ms / 16 ? c->cfg.max_age_ms / 16 : 1;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)wait_ms * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!c->bg_stop)
			pthread_cond_timedwait(&c->bg_cond, &c->bg_lock, &ts);
	}
	pthread_mutex_unlock(&c->bg_lock);
	return NULL;
}

int wc_writeback_start(struct wc_cache *c)
{
	int ret = state_init(c);

	if (ret)
		return ret;
	pthread_mutex_init(&c->wb_lock, NULL);
	pthread_mutex_init(&c->bg_lock, NULL);
	pthread_cond_init(&c->bg_cond, NULL);
	atomic_store(&c->cleaner, c->cfg.cleaner);
	if (c->cfg.no_threads)
		return 0;
	ret = pthread_create(&c->bg_thread, NULL, bg_main, c);
	if (ret)
		return wc_err(-ret, "%s: cannot start the write-back thread", c->cache_path);
	c->bg_running = true;
	return 0;
}

void wc_writeback_stop(struct wc_cache *c)
{
	if (c->bg_running) {
		pthread_mutex_lock(&c->bg_lock);
		c->bg_stop = true;
		pthread_cond_signal(&c->bg_cond);
		pthread_mutex_unlock(&c->bg_lock);
		pthread_join(c->bg_thread, NULL);
		c->bg_running = false;
	}
	state_fini(c);
}

void wc_writeback_kick(struct wc_cache *c)
{
	if (!c->bg_running)
		return;
	pthread_mutex_lock(&c->bg_lock);
	c->bg_kick = true;
	pthread_cond_signal(&c->bg_cond);
	pthread_mutex_unlock(&c->bg_lock);
}

/* ---- public entry points ---- */

int wc_writeback(wc_cache *c)
{
	int r;

	if (!c)
		return wc_err(-EINVAL, "wc_writeback: NULL cache");
	r = wc_commit(c, false);
	if (r)
		return r;
	do {
		r = wc_writeback_round(c, true);
		/* A failed round backed off inside; retry until it succeeds
		 * or the failures turn into the sticky error. */
	} while (r > 0 || (r == -EIO && !wc_has_error(c)));
	return r;
}

int wc_set_cleaner(wc_cache *c, bool on)
{
	if (!c)
		return wc_err(-EINVAL, "wc_set_cleaner: NULL cache");
	atomic_store(&c->cleaner, on);
	wc_writeback_kick(c);
	return 0;
}

int wc_poll(wc_cache *c, unsigned budget)
{
	int units = 0, r;

	if (!c)
		return wc_err(-EINVAL, "wc_poll: NULL cache");
	if (budget && wc_autocommit_due(c)) {
		r = wc_commit(c, false);
		if (r)
			return r;
		units++;
	}
	while ((unsigned)units < budget) {
		r = wc_writeback_round(c, false);
		if (r < 0)
			return r;
		if (r == 0)
			break;
		units++;
	}
	return units;
}
