/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * run_phase.c -- the timed part of `wcbench run`: worker threads that drive
 * the cache, or the cost floor, with one workload.
 *
 * Both loops share the offset generator and the timing, so the only
 * difference between a cache phase and its floor phase is what one
 * operation does: wc_write/wc_read, or one wcadm_persist_copy/memcpy plus the
 * fences a cache with the same commit rhythm could not avoid.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "wcbench.h"

struct phase;

struct worker {
	struct phase *ph;
	unsigned id;
	pthread_t tid;
	uint64_t limit;          /* operations to do; UINT64_MAX: until told to stop */
	uint64_t ops;
	uint64_t t_start, t_end; /* ns, CLOCK_MONOTONIC */
	uint64_t cpu_ns;         /* CPU time of the loop (CLOCK_THREAD_CPUTIME_ID) */
	int err;
	char msg[256];
	char *buf;               /* source of writes, destination of reads */
	pthread_mutex_t lock;    /* PHASE_FLOOR_LOCK: this thread's own, never contended */
	atomic_uint_fast64_t done; /* for progress lines; written by its owner only */
	struct wcb_hist hist;
} __attribute__((aligned(64)));

struct phase {
	struct run_ctx *x;
	enum phase_kind kind;
	unsigned threads, round;
	atomic_bool go;          /* all workers exist: start the clock */
	atomic_bool stop;
	struct worker *w;
};

static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/*
 * The per-operation clock.  On x86 the TSC: RDTSC costs ~11 ns on this
 * machine (a firecracker VM) where clock_gettime(CLOCK_MONOTONIC) costs
 * 28-75 ns, a sizeable part of a 4 KiB write.  run_tick_ns() converts.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t ticks(void)
{
	return __rdtsc();
}
#else
static inline uint64_t ticks(void)
{
	return now_ns();
}
#endif

double run_tick_ns(void)
{
	static double ns_per_tick;
	uint64_t t0, k0, t1, k1;

	if (ns_per_tick)
		return ns_per_tick;
	t0 = now_ns();
	k0 = ticks();
	do
		t1 = now_ns();
	while (t1 - t0 < 20000000u);
	k1 = ticks();
	ns_per_tick = k1 > k0 ? (double)(t1 - t0) / (double)(k1 - k0) : 1.0;
	return ns_per_tick;
}

/* ------------------------------------------------------------ offsets */

struct opgen {
	uint64_t rng;
	uint64_t slot, lo, hi;   /* seqwrite: this thread's slice of the slots */
};

static inline uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) without a division (Lemire's multiply-shift). */
static inline uint64_t below(struct opgen *g, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)splitmix64(&g->rng) * n) >> 64);
}

/* The same (seed, round, thread) gives the same sequence in both phases. */
static void opgen_init(struct opgen *g, const struct run_ctx *x, unsigned round, unsigned id,
                       unsigned threads)
{
	g->rng = x->o.seed ^ ((uint64_t)round << 40) ^ ((uint64_t)(id + 1) << 20);
	splitmix64(&g->rng);
	g->lo = x->slots * id / threads;
	g->hi = x->slots * (id + 1) / threads;
	if (g->hi <= g->lo) {
		g->lo = 0;
		g->hi = x->slots;
	}
	g->slot = g->lo;
}

/* Next operation: returns true for a read; *off is its byte offset. */
static inline bool next_op(struct opgen *g, const struct run_ctx *x, uint64_t *off)
{
	bool rd = false;
	uint64_t slot;

	switch (x->o.wl) {
	case WL_SEQWRITE:
		slot = g->slot++;
		if (g->slot == g->hi)
			g->slot = g->lo;
		break;
	case WL_RANDREAD:
		rd = true;
		slot = below(g, x->slots);
		break;
	case WL_RANDRW:
		rd = below(g, 100) < x->o.read_pct;
		slot = below(g, x->slots);
		break;
	default:
		slot = below(g, x->slots);
		break;
	}
	*off = slot * x->o.bs;
	return rd;
}

/* -------------------------------------------------------------- loops */

static void fail(struct worker *w, int err, const char *what)
{
	w->err = err;
	snprintf(w->msg, sizeof(w->msg), "%s: %s", what, wc_errmsg());
	atomic_store(&w->ph->stop, true);
}

static void cache_loop(struct worker *w, struct opgen *g)
{
	const struct run_ctx *x = w->ph->x;
	wc_cache *c = x->c;
	size_t bs = x->o.bs;
	unsigned flags = x->o.fua ? WC_FUA : 0;
	uint64_t flush_every = x->o.flush_every, since_flush = 0, i, off, t1, t;
	double tick_ns = run_tick_ns();

	w->t_start = now_ns();
	t = ticks();
	for (i = 0; i < w->limit; i++) {
		ssize_t r;

		if (atomic_load_explicit(&w->ph->stop, memory_order_relaxed))
			break;
		if (next_op(g, x, &off)) {
			r = wc_read(c, w->buf, bs, off);
			if (r < 0) {
				fail(w, (int)r, "wc_read");
				break;
			}
		} else {
			r = wc_write(c, w->buf, bs, off, flags);
			if (r < 0) {
				fail(w, (int)r, "wc_write");
				break;
			}
			if (flush_every && ++since_flush == flush_every) {
				since_flush = 0;
				r = wc_flush(c);
				if (r < 0) {
					fail(w, (int)r, "wc_flush");
					break;
				}
			}
		}
		t1 = ticks();
		wcb_hist_add(&w->hist, (uint64_t)((double)(t1 - t) * tick_ns));
		t = t1;
		atomic_store_explicit(&w->done, i + 1, memory_order_relaxed);
	}
	w->ops = i;
	w->t_end = now_ns();
}

/*
 * The floor: the cache's data copy and nothing else.  Fences follow the
 * cache's commit rhythm (one per autocommit_blocks blocks, one per write
 * with FUA, one per --flush-every writes); the entries, the commit record
 * and the index are exactly what the floor leaves out.
 */
static void floor_loop(struct worker *w, struct opgen *g)
{
	const struct run_ctx *x = w->ph->x;
	const struct wcadm_persist *fp = &x->fp;
	size_t bs = x->o.bs;
	uint64_t span = x->floor_len - x->floor_len % bs, blocks = bs / x->bs_cache;
	uint64_t batch = x->cfg.autocommit_blocks, pending = 0;
	uint64_t flush_every = x->o.flush_every, since_flush = 0, i, off, t1, t;
	double tick_ns = run_tick_ns();
	bool fua = x->o.fua, lock = w->ph->kind == PHASE_FLOOR_LOCK;

	w->t_start = now_ns();
	t = ticks();
	for (i = 0; i < w->limit; i++) {
		char *p;

		if (atomic_load_explicit(&w->ph->stop, memory_order_relaxed))
			break;
		if (next_op(g, x, &off)) {
			memcpy(w->buf, x->floor + off % span, bs);
		} else {
			p = x->floor + off % span;
			wcadm_persist_copy(fp, p, w->buf, bs);
			if (lock) {
				pthread_mutex_lock(&w->lock);
				pthread_mutex_unlock(&w->lock);
			}
			pending += blocks;
			if (fua || pending >= batch ||
			    (flush_every && ++since_flush == flush_every)) {
				wcadm_persist_drain(fp);
				pending = 0;
				since_flush = 0;
			}
		}
		t1 = ticks();
		wcb_hist_add(&w->hist, (uint64_t)((double)(t1 - t) * tick_ns));
		t = t1;
		atomic_store_explicit(&w->done, i + 1, memory_order_relaxed);
	}
	if (pending)
		wcadm_persist_drain(fp);
	w->ops = i;
	w->t_end = now_ns();
}

/*
 * The block medium's floor: the same operations on the raw file with
 * O_DIRECT -- one pwrite per write (RWF_DSYNC with FUA, as the cache's
 * record write), an fdatasync per --flush-every writes (the cache's
 * wc_flush is one device flush), one pread per read.
 */
static void raw_loop(struct worker *w, struct opgen *g)
{
	const struct run_ctx *x = w->ph->x;
	size_t bs = x->o.bs;
	uint64_t span = x->floor_len - x->floor_len % bs;
	uint64_t flush_every = x->o.flush_every, since_flush = 0, i, off, t1, t;
	double tick_ns = run_tick_ns();
	int fd = x->raw_fd, wflags = x->o.fua ? RWF_DSYNC : 0;

	w->t_start = now_ns();
	t = ticks();
	for (i = 0; i < w->limit; i++) {
		ssize_t r;

		if (atomic_load_explicit(&w->ph->stop, memory_order_relaxed))
			break;
		if (next_op(g, x, &off)) {
			r = pread(fd, w->buf, bs, (off_t)(off % span));
		} else {
			struct iovec iov = { w->buf, bs };

			r = pwritev2(fd, &iov, 1, (off_t)(off % span), wflags);
			if (r == (ssize_t)bs && flush_every && ++since_flush == flush_every) {
				since_flush = 0;
				if (fdatasync(fd) != 0)
					r = -1;
			}
		}
		if (r != (ssize_t)bs) {
			w->err = r < 0 ? -errno : -EIO;
			snprintf(w->msg, sizeof(w->msg), "raw I/O of %zu bytes at %llu: %s", bs,
			         (unsigned long long)(off % span), r < 0 ? strerror(errno) : "short");
			atomic_store(&w->ph->stop, true);
			break;
		}
		t1 = ticks();
		wcb_hist_add(&w->hist, (uint64_t)((double)(t1 - t) * tick_ns));
		t = t1;
		atomic_store_explicit(&w->done, i + 1, memory_order_relaxed);
	}
	w->ops = i;
	w->t_end = now_ns();
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct opgen g;
	uint64_t cpu0;

	opgen_init(&g, w->ph->x, w->ph->round, w->id, w->ph->threads);
	while (!atomic_load(&w->ph->go))
		sched_yield();
	/* CPU time next to wall time: on a shared machine a thread that lost
	 * its core for a while still reports what its operations cost. */
	cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (w->ph->kind == PHASE_CACHE)
		cache_loop(w, &g);
	else if (w->ph->x->block)
		raw_loop(w, &g);
	else
		floor_loop(w, &g);
	w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	return NULL;
}

/* ------------------------------------------------------------- phases */

static uint64_t ops_done(const struct phase *ph)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < ph->threads; i++)
		n += atomic_load_explicit(&ph->w[i].done, memory_order_relaxed);
	return n;
}

/* Duration mode: the main thread keeps time and reports progress. */
static void wait_duration(struct phase *ph)
{
	const struct run_ctx *x = ph->x;
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(x->o.duration_s * 1e9), last = t0;
	struct timespec step = { 0, 100 * 1000 * 1000 };

	for (;;) {
		uint64_t t = now_ns();

		if (t >= end || atomic_load(&ph->stop))
			break;
		if (end - t < (uint64_t)step.tv_nsec)
			step.tv_nsec = (long)(end - t);
		nanosleep(&step, NULL);
		t = now_ns();
		if (!x->o.quiet && x->o.duration_s >= 3 && t - last >= 1000000000u) {
			last = t;
			wct_progress("wcbench run: %s, %u thread%s: %.0f of %.0f s, %.0f IOPS so far",
			             ph->kind == PHASE_CACHE ? "cache" : "floor", ph->threads,
			             ph->threads > 1 ? "s" : "", (t - t0) / 1e9, x->o.duration_s,
			             ops_done(ph) * 1e9 / (double)(t - t0));
		}
	}
	atomic_store(&ph->stop, true);
}

int run_phase(struct run_ctx *x, enum phase_kind kind, unsigned threads, unsigned round,
              const uint64_t *repeat, struct run_phase_result *r)
{
	struct phase ph = { .x = x, .kind = kind, .threads = threads, .round = round };
	uint64_t t_start = UINT64_MAX, t_end = 0;
	unsigned started = 0;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	wcb_hist_clear(&r->hist);
	atomic_init(&ph.stop, false);
	atomic_init(&ph.go, false);
	ph.w = aligned_alloc(64, sizeof(*ph.w) * threads);
	if (!ph.w) {
		fprintf(stderr, "wcbench run: %u workers: out of memory\n", threads);
		return -1;
	}
	memset(ph.w, 0, sizeof(*ph.w) * threads);
	for (unsigned i = 0; i < threads; i++)
		pthread_mutex_init(&ph.w[i].lock, NULL);
	for (unsigned i = 0; i < threads; i++) {
		struct worker *w = &ph.w[i];

		w->ph = &ph;
		w->id = i;
		w->limit = repeat ? repeat[i] :
		           x->o.ops ? x->o.ops / threads + (i < x->o.ops % threads) : UINT64_MAX;
		wcb_hist_clear(&w->hist);
		w->buf = aligned_alloc(4096, (x->o.bs + 4095) & ~4095ull);
		if (!w->buf) {
			fprintf(stderr, "wcbench run: I/O buffer: out of memory\n");
			ret = -1;
			goto out;
		}
		memset(w->buf, (int)(0x11 * (i + 1)), x->o.bs);
	}
	for (; started < threads; started++) {
		int err = pthread_create(&ph.w[started].tid, NULL, worker_main, &ph.w[started]);

		if (err) {
			fprintf(stderr, "wcbench run: start worker %u: %s\n", started, strerror(err));
			atomic_store(&ph.stop, true);
			ret = -1;
			break;
		}
	}
	atomic_store(&ph.go, true);
	if (!repeat && !x->o.ops && !ret)
		wait_duration(&ph);
	for (unsigned i = 0; i < started; i++)
		pthread_join(ph.w[i].tid, NULL);

	for (unsigned i = 0; i < threads; i++) {
		struct worker *w = &ph.w[i];

		if (w->err && !ret) {
			fprintf(stderr, "wcbench run: %s phase, thread %u: %s\n",
			        kind == PHASE_CACHE ? "cache" : "floor", i, w->msg);
			ret = -1;
		}
		r->ops += w->ops;
		r->cpu_ns += (double)w->cpu_ns;
		r->per_thread_ops[i] = w->ops;
		if (w->t_start < t_start)
			t_start = w->t_start;
		if (w->t_end > t_end)
			t_end = w->t_end;
		wcb_hist_merge(&r->hist, &w->hist);
	}
	r->ns = t_end > t_start ? (double)(t_end - t_start) : 1;
	r->iops = (double)r->ops * 1e9 / r->ns;
	if (!ret && !r->ops) {
		fprintf(stderr, "wcbench run: %s phase did no operation\n",
		        kind == PHASE_CACHE ? "cache" : "floor");
		ret = -1;
	}
out:
	for (unsigned i = 0; i < threads; i++) {
		free(ph.w[i].buf);
		pthread_mutex_destroy(&ph.w[i].lock);
	}
	free(ph.w);
	return ret;
}
