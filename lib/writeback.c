/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writeback.c -- moving committed blocks to the origin, then freeing them.
 *
 * One write-back *round* (wc_writeback_round) is the unit of work, run by the
 * background thread, by wc_poll() in no_threads mode, by wc_writeback(), and
 * by a writer that finds no free block in no_threads mode.  A round moves up
 * to WB_ROUND_BYTES, streaming: while fewer than writeback_jobs blocks are in
 * flight and the round has room, it
 *   picks    committed blocks in the order the cache holds them, from
 *            where the last pick stopped -- the allocator sweeps the cache
 *            like a log (alloc.c), so this is roughly the order they were
 *            written, oldest first, as dm-pcache writes back in log order --
 *            each grown into a run of its dirty origin neighbours; skips a
 *            block while an older version of it is being written back (two
 *            versions are never reordered: the older one keeps WC_E_WB to
 *            the round's end);
 *   writes   sorted by origin block, neighbours merged into one I/O of up to
 *            writeback_max_io_kib, straight from pmem;
 * and once every write of the round completed:
 *   durable  flush the origin once (fdatasync / FUA);
 *   free     only then invalidate the entries, drain once, free the blocks.
 * A crash between `durable` and `free` only repeats an idempotent write.
 * A failed write leaves its block dirty (retried with backoff); after
 * WB_MAX_FAILURES failed rounds in a row the cache enters the sticky error.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache_impl.h"
#include "error.h"

#define WB_MAX_FAILURES 6
#define WC_WRITEBACK_THREAD_NAME "wc-writeback" /* <= 15 characters */

/*
 * Bytes one round writes back between two origin flushes (at most).  Each
 * round ends with its window drained, one flush and the frees, while the
 * origin idles; a flush costs ~0.1 ms on this machine's virtio disk but
 * milliseconds on a disk with a volatile write cache.  Measured with wcbench
 * writeback --flush-delay-us 2000 (ext4 origin, 512 MiB over a 128 MiB
 * cache): total / raw was 0.23-0.25 sequential and 0.64-0.70 random with a
 * round of one writeback_jobs window (1 MiB), 0.89-1.32 and 1.20-1.41 with
 * 16 MiB rounds; without the delay, equal within this machine's noise.
 * Blocks stay allocated until their round's flush, so a round never holds
 * more than 1 / WB_ROUND_SHARE of the cache.
 */
#define WB_ROUND_BYTES (16u << 20)
#define WB_ROUND_SHARE 4 /* round <= cache blocks / WB_ROUND_SHARE */
/* Refill the window once this share of writeback_jobs is free again:
 * picking a few blocks at a time would cut runs short. */
#define WB_REFILL_DIV 2
/* Longest wait in one origin poll (see the round). */
#define WB_POLL_SLICE_NS 1000000ull /* 1 ms */

enum pick_mode { PICK_ALL, PICK_WATERMARK, PICK_AGE };

struct wb_run {
	struct wc_origin_io io;
	struct wc_cache *c;
	uint32_t first, n;       /* positions in the candidate array */
	ssize_t res;
};

struct wb_state {
	uint32_t *cand;          /* the round's blocks, sorted per window */
	struct iovec *iov;       /* iov[i] is cand[i]'s data */
	struct wb_run *runs;
	unsigned cap;            /* blocks per round */
	atomic_uint pending;     /* runs submitted, not completed */
	bool active;             /* between high and low watermark */
	uint64_t scan;           /* the cache block the next pick looks at first */
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

/* horizon: in PICK_AGE, only entries with seq below it are old enough. */
static bool eligible(struct wc_cache *c, struct wc_shard *s, uint32_t idx, enum pick_mode mode,
                     uint64_t horizon)
{
	struct wc_entry *e = &c->e[idx];

	if (!wc_is_committed(c, e->seq))
		return false;
	if (mode == PICK_AGE && e->seq >= horizon)
		return false;
	return !wc_index_wb_busy(c, s, e->origin, idx);
}

/* The longest run one origin request carries: writeback_max_io_kib, and
 * never more buffers than one vectored request may have (IOV_MAX: with
 * 512-byte blocks a 1 MiB run would need 2048). */
static unsigned max_run_blocks(struct wc_cache *c)
{
	uint64_t n = (uint64_t)c->cfg.writeback_max_io_kib * 1024 / c->layout.block_size;

	return n == 0 ? 1 : n > IOV_MAX ? IOV_MAX : (unsigned)n;
}

/* Take idx for write-back (its shard lock held). */
static void take(struct wc_cache *c, uint32_t *out, unsigned *n, uint32_t idx)
{
	wc_entry_set_flags(&c->e[idx], c->e[idx].flags | WC_E_WB);
	out[(*n)++] = idx;
}

/* Take origin block `block` too if it is dirty, committed and not being
 * written back.  One shard lock at a time, as everywhere. */
static bool take_neighbour(struct wc_cache *c, uint32_t *out, unsigned *n, uint64_t block)
{
	struct wc_shard *s = wc_shard_of(c, block);
	uint32_t idx;
	bool ok;

	wc_spin_lock(&s->lock);
	idx = wc_index_find(c, s, block);
	ok = idx != WC_NIL && !(c->e[idx].flags & WC_E_WB) && eligible(c, s, idx, PICK_ALL, 0);
	if (ok)
		take(c, out, n, idx);
	wc_spin_unlock(&s->lock);
	return ok;
}

/*
 * Grow a run of consecutive origin blocks around a seed, as dm-writecache
 * does from each entry it picks.  Needed because the seeds come in cache
 * order, and concurrent writers interleave their blocks in the cache: taking
 * seeds alone picked every other block of a sequential stream when the
 * seeds came per shard, so nothing merged (measured: 4 KiB per I/O for a
 * sequential working set, 0.40 of the raw bandwidth on /dev/shm).
 */
static void extend_run(struct wc_cache *c, uint32_t *out, unsigned *n, unsigned want,
                       uint64_t seed)
{
	unsigned room = max_run_blocks(c) - 1;

	for (uint64_t b = seed + 1; room && *n < want && b < c->origin_blocks; b++, room--)
		if (!take_neighbour(c, out, n, b))
			break;
	for (uint64_t b = seed; room && *n < want && b > 0; b--, room--)
		if (!take_neighbour(c, out, n, b - 1))
			break;
}

/* Pick up to `want` blocks into out[], looking at each cache block at most
 * once.  Each is looked at with no lock first (free, not current or already
 * being written back: skipped without a lock round), then taken under its
 * shard's lock if it is still what it seemed. */
static unsigned pick(struct wc_cache *c, struct wb_state *w, enum pick_mode mode, unsigned want,
                     uint32_t *out)
{
	uint64_t horizon = mode == PICK_AGE ? wc_age_horizon(c, c->cfg.max_age_ms) : 0;
	uint64_t n_blocks = c->layout.n_blocks;
	unsigned n = 0;

	if (mode == PICK_AGE && horizon == 0)
		return 0; /* nothing is that old yet */
	for (uint64_t looked = 0; n < want && looked < n_blocks; looked++) {
		uint32_t idx = (uint32_t)w->scan;
		struct wc_entry *e = &c->e[idx];
		unsigned flags = __atomic_load_n(&e->flags, __ATOMIC_RELAXED);
		uint64_t origin = __atomic_load_n(&e->origin, __ATOMIC_RELAXED);
		struct wc_shard *s;
		bool ok;

		w->scan = w->scan + 1 < n_blocks ? w->scan + 1 : 0;
		if (!(flags & WC_E_CURRENT) || (flags & WC_E_WB) || origin >= c->origin_blocks)
			continue;
		s = wc_shard_of(c, origin);
		wc_spin_lock(&s->lock);
		/* Until the origin matches, the entry may belong to another
		 * shard, whose writers change it under their own lock: atomic
		 * loads.  Once it matches and is current, our lock holds it. */
		flags = __atomic_load_n(&e->flags, __ATOMIC_RELAXED);
		ok = __atomic_load_n(&e->origin, __ATOMIC_RELAXED) == origin &&
		     (flags & WC_E_CURRENT) && !(flags & WC_E_WB) && eligible(c, s, idx, mode, horizon);
		if (ok)
			take(c, out, &n, idx);
		wc_spin_unlock(&s->lock);
		if (ok)
			extend_run(c, out, &n, want, origin);
	}
	return n;
}

static int by_origin(const void *a, const void *b, void *arg)
{
	const struct wc_entry *e = arg;
	uint64_t x = e[*(const uint32_t *)a].origin, y = e[*(const uint32_t *)b].origin;

	return x < y ? -1 : x > y;
}

/* May run in any thread that polls the origin.  `pending` goes last: the
 * round may reuse r as soon as it reads zero. */
static void run_done(struct wc_origin_io *io, ssize_t res)
{
	struct wb_run *r = (struct wb_run *)io;
	struct wc_cache *c = r->c;
	struct wb_state *w = c->wb_state;

	r->res = res;
	atomic_fetch_sub(&c->wb_inflight, r->n);
	atomic_fetch_sub(&w->pending, 1);
}

/* Build runs of consecutive origin blocks from cand[first, first + n) (sorted)
 * and submit them as runs[*nruns...].  Returns the runs added. */
static unsigned submit_runs(struct wc_cache *c, struct wb_state *w, unsigned first, unsigned n,
                            unsigned *nruns_io)
{
	uint32_t bs = c->layout.block_size;
	unsigned max_blocks = max_run_blocks(c);
	unsigned start = *nruns_io, nruns = start, end = first + n;

	for (unsigned i = first; i < end;) {
		struct wb_run *r = &w->runs[nruns++];
		unsigned j = i + 1;

		while (j < end && j - i < max_blocks &&
		       c->e[w->cand[j]].origin == c->e[w->cand[j - 1]].origin + 1)
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
	/* Count them in flight before the first can complete (in another
	 * thread's poll, perhaps). */
	atomic_fetch_add(&w->pending, nruns - start);
	atomic_fetch_add(&c->wb_inflight, n);
	for (unsigned k = start; k < nruns; k++) {
		struct wb_run *r = &w->runs[k];
		int ret = wc_origin_submit(&c->origin, &r->io);

		if (ret) {
			r->res = ret;
			atomic_fetch_sub(&c->wb_inflight, r->n);
			atomic_fetch_sub(&w->pending, 1);
		}
	}
	*nruns_io = nruns;
	return nruns - start;
}

struct dead_set {
	uint32_t *v;
	size_t n, cap;
};

/* Collects what wc_versions_drop dropped, to free after the drain.  Out of
 * memory, a dropped block is leaked (never reused), not corrupted. */
static void dead_emit(struct wc_cache *c, uint32_t idx, void *arg)
{
	struct dead_set *d = arg;

	(void)c;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		uint32_t *nv = realloc(d->v, cap * sizeof(*nv));

		if (!nv)
			return;
		d->v = nv;
		d->cap = cap;
	}
	d->v[d->n++] = idx;
}

/* Its shard lock held (the flags are the shard's). */
static void requeue_failed(struct wc_cache *c, uint32_t idx)
{
	struct wc_entry *e = &c->e[idx];

	wc_entry_set_flags(e, e->flags & ~WC_E_WB);
	/* Superseded while in flight: no logged block leads a commit to it
	 * any more (its successor's commit skipped it), so the next commit
	 * looks at every chain. */
	if (!(e->flags & WC_E_CURRENT))
		atomic_store(&c->superseded_elsewhere, true);
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
			atomic_fetch_add_explicit(&c->wb_ios, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&c->wb_bytes, (uint64_t)r->n * c->layout.block_size,
			                          memory_order_relaxed);
		} else {
			failed += r->n;
		}
		for (unsigned i = r->first; i < r->first + r->n; i++) {
			uint32_t idx = w->cand[i];
			struct wc_shard *s = wc_shard_of(c, c->e[idx].origin);

			if (ok) {
				uint64_t origin = c->e[idx].origin, seq = c->e[idx].seq;

				/* WC_E_WB keeps the block ours until the versions
				 * are dropped: wc_lock_for_drop takes commit_lock
				 * before the shard lock, and without the flag a
				 * writer's supersede and a commit could free it in
				 * between (a TSan report in the stress test).  Then
				 * the block and
				 * every older version of it go, oldest first, and
				 * only after the versions a commit unlinked are
				 * durably invalid (invariant (8) of commit.c), or a
				 * crash could resurrect an older version over the
				 * origin's newer data. */
				wc_lock_for_drop(c, s);
				wc_entry_set_flags(&c->e[idx], c->e[idx].flags & ~WC_E_WB);
				wc_versions_drop(c, s, origin, seq, dead_emit, &d);
				wc_unlock_for_drop(c, s);
			} else {
				wc_spin_lock(&s->lock);
				requeue_failed(c, idx);
				wc_spin_unlock(&s->lock);
			}
		}
	}
	if (d.n) {
		/* Invariant (5) of commit.c: invalidations durable before reuse. */
		wc_persist_drain(&c->fp);
		wc_free_batch(c, d.v, d.n);
	}
	free(d.v);
	*failed_out = failed;
	return (unsigned)d.n;
}

static int state_init(struct wc_cache *c)
{
	struct wb_state *w = calloc(1, sizeof(*w));
	uint64_t cap = WB_ROUND_BYTES / c->layout.block_size;

	if (cap > c->layout.n_blocks / WB_ROUND_SHARE)
		cap = c->layout.n_blocks / WB_ROUND_SHARE;
	if (cap < c->cfg.writeback_jobs)
		cap = c->cfg.writeback_jobs; /* one full window at least */

	if (!w)
		return wc_err(-ENOMEM, "%s: write-back state", c->cache_path);
	w->cap = (unsigned)cap;
	w->cand = calloc(cap, sizeof(*w->cand));
	w->iov = calloc(cap, sizeof(*w->iov));
	w->runs = calloc(cap, sizeof(*w->runs));
	c->wb_state = w;
	if (!w->cand || !w->iov || !w->runs)
		return wc_err(-ENOMEM, "%s: write-back state for %llu blocks", c->cache_path,
		              (unsigned long long)cap);
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
	if (mode == PICK_ALL && wc_uncommitted(c)) {
		/* Only committed blocks may be written back: commit first. */
		ret = wc_commit(c, false);
		if (ret) {
			pthread_mutex_unlock(&c->wb_lock);
			return ret;
		}
	}
	n = nruns = 0;
	if (want == 0)
		want = 1;
	for (bool more = true;;) {
		unsigned jobs = c->cfg.writeback_jobs;
		uint64_t busy = atomic_load(&c->wb_inflight);
		unsigned room = busy < jobs ? jobs - (unsigned)busy : 0;
		unsigned left = want - n;

		/* Keep up to writeback_jobs blocks in flight: refill as soon
		 * as a useful share of the window is free. */
		if (more && left && room && (room >= jobs / WB_REFILL_DIV || room >= left || !busy)) {
			unsigned got = pick(c, w, mode, room < left ? room : left, &w->cand[n]);

			if (got) {
				qsort_r(&w->cand[n], got, sizeof(*w->cand), by_origin, c->e);
				submit_runs(c, w, n, got, &nruns);
				n += got;
				continue;
			}
			more = false; /* nothing else eligible now */
		}
		if (!atomic_load(&w->pending)) {
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
	if (n == 0) {
		pthread_mutex_unlock(&c->wb_lock);
		return 0;
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
	if (failed) {
		atomic_fetch_add_explicit(&c->wb_errors, failed, memory_order_relaxed);
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
	/* Named, so top -H and the tests can tell it from the host's threads. */
	pthread_setname_np(c->bg_thread, WC_WRITEBACK_THREAD_NAME);
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
	wc_release_freed(c);
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
