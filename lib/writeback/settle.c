/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * settle.c -- the end of a write-back round: its origin flush (a
 * request where the origin takes one, else a call), then its blocks freed
 * if that made them durable or requeued if not, and the round reported to
 * the origin's failure streak (outage.c): an origin's failure is retried
 * with backoff, never sticky.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "core/readahead.h"
#include "writeback/internal.h"

/* The longest wait between two attempts on a failing origin: the cache
 * sees the origin's return within it (plus one round), and a dead origin is
 * asked four times a second -- a failed write costs it nothing. */
#define WB_BACKOFF_MAX_MS 250

/* What a round whose settle requeued `failed` blocks returns, with its
 * message (wb_lock held): the origin's errno. */
int wc_wb_failed_round_err(struct wc_cache *c, unsigned failed)
{
	int err = atomic_load(&c->wb->last_errno);
	uint64_t since = atomic_load(&c->wb->failing_since_ns);
	double secs = since ? (double)(wc_clock_ns() - since) / 1e9 : 0;

	if (!err)
		err = -EIO;
	return wc_err(err, "%s: write-back of %u blocks failed (%s): they stay dirty in the cache and are "
	              "retried; the origin has failed %u attempts in %.1f s", c->cache_path, failed,
	              strerror(-err), atomic_load(&c->wb->failed_rounds), secs);
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
		atomic_store(&c->commit.superseded_elsewhere, true);
}

/* What a round's failures were: how many blocks, and the last errno. */
struct wb_failure {
	unsigned blocks;
	int err;
};

static void note_failure(struct wb_failure *f, unsigned blocks, int err)
{
	f->blocks += blocks;
	f->err = err;
}

/* Free what reached the origin durably (the flush returned flush_ret),
 * requeue the rest and note why in *fail. */
static void finish(struct wc_cache *c, struct wb_round *round, int flush_ret,
                   struct dead_set *d, struct wb_failure *fail)
{
	bool durable = flush_ret == 0;

	for (unsigned k = 0; k < round->nruns; k++) {
		struct wb_run *r = &round->runs[k];
		bool written = r->res == (ssize_t)r->n * c->layout.block_size;
		bool ok = durable && written;

		if (ok) {
			atomic_fetch_add_explicit(&c->wb->ios, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&c->wb->bytes, (uint64_t)r->n * c->layout.block_size,
			                          memory_order_relaxed);
			/* Before the blocks leave the cache (readahead.c). */
			wc_ra_forget(c, c->e[round->cand[r->first]].origin, r->n);
		} else {
			/* A short write is an error of the origin's. */
			note_failure(fail, r->n,
			             !written ? (r->res < 0 ? (int)r->res : -EIO) : flush_ret);
		}
		for (unsigned i = r->first; i < r->first + r->n; i++) {
			uint32_t idx = round->cand[i];
			struct wc_shard *s = wc_shard_of(c, c->e[idx].origin);

			if (ok) {
				uint64_t origin = c->e[idx].origin, seq = c->e[idx].seq;

				/* WC_E_WB keeps the block ours until the versions
				 * are dropped: wc_lock_for_drop takes commit_lock
				 * before the shard lock, and without the flag a
				 * writer's supersede and a commit could free it in
				 * between (a TSan report in the stress test).  Then
				 * the block and every older version of it go, oldest
				 * first, and only after the versions a commit
				 * unlinked are durably invalid (invariant (8) of
				 * commit.c), or a crash could resurrect an older
				 * version over the origin's newer data. */
				wc_lock_for_drop(c, s);
				wc_entry_set_flags(&c->e[idx], c->e[idx].flags & ~WC_E_WB);
				wc_versions_drop(c, s, origin, seq, dead_emit, d);
				wc_unlock_for_drop(c, s);
			} else {
				wc_spin_lock(&s->lock);
				requeue_failed(c, idx);
				wc_spin_unlock(&s->lock);
			}
		}
	}
}

/*
 * The written round's flush returned `flush_ret`: free its blocks if that
 * made them durable, else requeue them (wb_lock held).  Returns the blocks
 * that failed and counts the failure.
 */
static unsigned free_durable(struct wc_cache *c, struct wb_round *round, int flush_ret)
{
	struct wb_failure fail = { 0 };
	struct dead_set d = {0};

	/* Durable before free: the one rule write-back lives by. */
	finish(c, round, flush_ret, &d, &fail);
	/* A failure streak ends before the blocks are free: a writer that
	 * finds none meanwhile waits for them rather than being refused. */
	if (!fail.blocks)
		wc_wb_attempt_ok(c);
	if (d.n) {
		/* Invariant (5) of commit.c: invalidations durable before reuse. */
		wc_persist_drain(&c->fp);
		wc_free_batch(c, d.v, d.n);
	}
	free(d.v);
	if (!fail.blocks)
		return 0;
	atomic_fetch_add_explicit(&c->wb->errors, fail.blocks, memory_order_relaxed);
	/* Only the origin's: the blocks are intact in the cache, dirty again,
	 * and the cache goes on (outage.c). */
	wc_wb_attempt_failed(c, fail.err, fail.blocks);
	return fail.blocks;
}

/* 2, 4, ... ms after each failed attempt of a streak, at most
 * WB_BACKOFF_MAX_MS. */
uint64_t wc_wb_backoff_ms(unsigned n)
{
	uint64_t ms = 1ull << (n < 10 ? n : 10);

	return ms > WB_BACKOFF_MAX_MS ? WB_BACKOFF_MAX_MS : ms;
}

/* In whatever thread polls the origin. */
static void flush_done(struct wc_origin_io *io, ssize_t res)
{
	struct wb_flush *f = io->priv;

	f->res = res < 0 ? (int)res : 0;
	atomic_store_explicit(&f->done, true, memory_order_release);
}

/*
 * Start making the written round durable (wb_lock held): a flush request
 * where the origin takes one, else flush() here and now.  A round none of
 * whose writes succeeded needs no flush: its blocks only go back to dirty.
 */
void wc_wb_settle_begin(struct wc_cache *c, struct wb_state *w)
{
	struct wb_round *round = w->written;
	struct wb_flush *f = &w->flush;
	bool any_ok = false;
	int ret;

	if (!round || f->begun)
		return;
	f->begun = true;
	f->sent = false;
	atomic_store_explicit(&f->done, false, memory_order_relaxed);
	if (round->taint) {
		f->res = round->taint;
		atomic_store_explicit(&f->done, true, memory_order_release);
		return;
	}
	for (unsigned k = 0; k < round->nruns; k++)
		any_ok |= round->runs[k].res > 0;
	if (!any_ok) {
		f->res = 0;
		atomic_store_explicit(&f->done, true, memory_order_release);
		return;
	}
	f->sent = true;
	if (!w->sync_flush) {
		memset(&f->io, 0, sizeof(f->io));
		f->io.op = WC_ORIGIN_FLUSH;
		f->io.done = flush_done;
		f->io.priv = f;
		ret = wc_origin_submit(&c->origin, &f->io);
		if (ret == 0)
			return;
		if (ret != -EINVAL && ret != -EOPNOTSUPP) {
			f->res = ret; /* the flush failed */
			atomic_store_explicit(&f->done, true, memory_order_release);
			return;
		}
		/* Refused (an old kernel's aio has no fdsync): flush() from
		 * now on. */
		w->sync_flush = true;
	}
	f->res = wc_origin_flush(&c->origin);
	atomic_store_explicit(&f->done, true, memory_order_release);
}

/* The written round's flush is done: free or requeue it (wb_lock held).
 * A failure is left in settle_failed for the round to report. */
void wc_wb_settle_end(struct wc_cache *c, struct wb_state *w)
{
	struct wb_round *round = w->written;

	w->written = NULL;
	w->flush.begun = false;
	if (w->flush.sent && w->flush.res && w->filling && w->filling != round)
		w->filling->taint = w->flush.res;
	w->settle_failed += free_durable(c, round, w->flush.res);
}

/* Make the written round durable and free it, waiting for its flush (wb_lock
 * held).  A poll that breaks with the flush in flight leaves the round
 * unfreed, in the sticky error, as a broken poll with writes in flight does. */
void wc_wb_settle(struct wc_cache *c, struct wb_state *w)
{
	if (!w->written)
		return;
	wc_wb_settle_begin(c, w);
	while (!atomic_load_explicit(&w->flush.done, memory_order_acquire)) {
		int ret = wc_origin_poll(&c->origin, 1, WB_POLL_SLICE_NS);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN) {
			wc_set_error(c, -EIO, "origin poll failed with a write-back flush in flight");
			return;
		}
	}
	wc_wb_settle_end(c, w);
}

