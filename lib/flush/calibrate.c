/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate.c -- find where cached stores + flush start beating
 * non-temporal stores on the running machine.
 *
 * Both strategies write to an anonymous buffer larger than L2 (16 MiB, huge
 * pages where the kernel allows them, so TLB misses do not blur small
 * copies), with the destination moving forward at every copy: each copy
 * hits cold lines, as cache writes do.  Sizes and strategies are
 * interleaved, every point is the best of the rounds, and a point counts
 * fenced per copy plus fenced once per 64 copies (FUA writes versus group
 * commit).  The threshold is the smallest size from which cached wins by
 * at least 5% at that size and every larger one; SIZE_MAX when it never
 * does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "flush/engine.h"
#include "util/error.h"
#include "util/clock.h"

#define CAL_BUFFER  (16u << 20) /* > any L2 this engine has met (2 MiB) */
#define CAL_SOURCE  (64u << 10)
#define CAL_BATCH   64u
#define CAL_MARGIN  0.95         /* cached must be >= 5% faster to count */

static const size_t cal_sizes[] = {
	256, 512, 768, 1024, 1536, 2048, 4096, 8192, 16384, 32768, 65536,
};

static double now_ns(void)
{
	return (double)wc_clock_ns();
}

/* Where the copies go: the extents in turn, each copy inside one extent. */
struct cal_cursor {
	const struct wc_cal_extent *ext;
	size_t n, i, pos;
	const char *src;
};

static char *next_dst(struct cal_cursor *c, size_t size)
{
	/* The caller checked that some extent holds `size` bytes. */
	for (;;) {
		const struct wc_cal_extent *e = &c->ext[c->i];

		if (c->pos + size <= e->len) {
			char *d = e->addr + c->pos;

			c->pos += size;
			return d;
		}
		c->pos = 0;
		c->i = c->i + 1 == c->n ? 0 : c->i + 1;
	}
}

/* ns per copy of `size` bytes with `copy`, a fence every `batch` copies. */
static double measure(struct cal_cursor *c, wc_copy_fn copy, wc_drain_fn drain, size_t size,
                      size_t bytes, unsigned batch)
{
	unsigned copies = (unsigned)(bytes / size);
	double t0, t1;

	if (copies < batch)
		copies = batch;
	copies -= copies % batch;
	t0 = now_ns();
	for (unsigned i = 0; i < copies; i++) {
		copy(next_dst(c, size), c->src, size);
		if ((i + 1) % batch == 0)
			drain();
	}
	t1 = now_ns();
	return (t1 - t0) / copies;
}

static void keep_min(double *slot, double v)
{
	if (*slot == 0 || v < *slot)
		*slot = v;
}

int wc_calibrate_area(struct wc_calibration *out, const struct wc_cal_extent *ext, size_t next,
                      size_t max_size, unsigned features, int flush_insn, unsigned rounds,
                      size_t bytes_per_point, double budget_ms)
{
	const struct wc_strategy *nt, *cached;
	enum wc_strategy_id cached_id =
	        flush_insn == WC_PMEM_CLWB ? WC_STRAT_CACHED_CLWB : WC_STRAT_CACHED_CLFLUSHOPT;
	wc_drain_fn drain;
	struct cal_cursor cur = { ext, next, 0, 0, NULL };
	size_t longest = 0;
	char *src;
	double start = now_ns(), t_measure;
	unsigned n = 0;

	memset(out, 0, sizeof(out[0]));
	nt = wc_strategy_get(wc_strategy_best_nt(features));
	if (!nt)
		return wc_err(-ENOTSUP, "calibrate: no non-temporal strategy: %s", wc_errmsg());
	out->nt_name = nt->name;
	out->threshold = SIZE_MAX;
	if (!wc_strategy_usable(cached_id, features)) {
		/* Nothing to compare with: the cached path is unavailable. */
		out->cached_name = "(unavailable)";
		return 0;
	}
	cached = wc_strategy_get(cached_id);
	out->cached_name = cached->name;
#if defined(__x86_64__)
	drain = wc_drain_sfence;
#else
	drain = wc_generic_drain;
#endif
	for (size_t i = 0; i < next; i++)
		if (ext[i].len > longest)
			longest = ext[i].len;
	for (unsigned i = 0; i < sizeof(cal_sizes) / sizeof(cal_sizes[0]); i++)
		if (cal_sizes[i] <= max_size && cal_sizes[i] <= longest &&
		    n < WC_CALIBRATION_MAX_POINTS)
			out->pt[n++].size = cal_sizes[i];
	if (n == 0)
		return wc_err(-ENOSPC, "calibrate: no room for a %zu-byte copy (largest extent %zu "
		              "bytes, sizes up to %zu)", cal_sizes[0], longest, max_size);
	src = aligned_alloc(4096, CAL_SOURCE);
	if (!src)
		return wc_err(-ENOMEM, "calibrate: %u-byte source buffer", CAL_SOURCE);
	for (size_t i = 0; i < CAL_SOURCE; i++)
		src[i] = (char)(i * 131 + 7);
	cur.src = src;
	/* Touch every destination line once, untimed: the first write to a
	 * page of a fresh mapping takes a page fault, which is not what either
	 * strategy costs.  MADV_POPULATE_WRITE first maps the pages in one
	 * call (it writes nothing; the page rounding may cover bytes outside
	 * the extents, but only their page tables change): one trap per 4 KiB
	 * page cost ~11 us in a KVM guest (90 ms for 32 MiB of a tmpfs file),
	 * the one call ~5 us per page. */
	for (size_t i = 0; i < next; i++) {
#ifdef MADV_POPULATE_WRITE
		uintptr_t a = (uintptr_t)ext[i].addr & ~(uintptr_t)4095;
		uintptr_t e = ((uintptr_t)ext[i].addr + ext[i].len + 4095) & ~(uintptr_t)4095;

		madvise((void *)a, e - a, MADV_POPULATE_WRITE); /* advice: errors ignored */
#endif
		nt->set(ext[i].addr, 0, ext[i].len);
	}
	drain();

	/* The budget is for measuring: the touch above is a cost the caller
	 * would pay at the first write anyway. */
	t_measure = now_ns();
	out->npoints = n;
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < n; i++) {
			struct wc_calibration_point *pt = &out->pt[i];
			size_t bytes = bytes_per_point;

			/* Alternate which goes first so neither always inherits
			 * the other's write-backs still in flight. */
			if ((r + i) & 1) {
				keep_min(&pt->nt_fenced, measure(&cur, nt->copy, drain, pt->size, bytes, 1));
				keep_min(&pt->cached_fenced,
				         measure(&cur, cached->copy, drain, pt->size, bytes, 1));
			} else {
				keep_min(&pt->cached_fenced,
				         measure(&cur, cached->copy, drain, pt->size, bytes, 1));
				keep_min(&pt->nt_fenced, measure(&cur, nt->copy, drain, pt->size, bytes, 1));
			}
			keep_min(&pt->nt_batched,
			         measure(&cur, nt->copy, drain, pt->size, bytes, CAL_BATCH));
			keep_min(&pt->cached_batched,
			         measure(&cur, cached->copy, drain, pt->size, bytes, CAL_BATCH));
		}
		out->rounds = r + 1;
		if (budget_ms > 0 && (now_ns() - t_measure) / 1e6 > budget_ms)
			break;
	}
	free(src);

	for (unsigned i = n; i-- > 0;) {
		const struct wc_calibration_point *pt = &out->pt[i];
		double t_nt = pt->nt_fenced + pt->nt_batched;
		double t_cached = pt->cached_fenced + pt->cached_batched;

		if (t_cached > t_nt * CAL_MARGIN)
			break;
		out->threshold = pt->size;
	}
	out->elapsed_ms = (now_ns() - start) / 1e6;
	return 0;
}

int wc_calibrate_run(struct wc_calibration *out, unsigned features, int flush_insn,
                     unsigned rounds, size_t bytes_per_point, double budget_ms)
{
	size_t huge = 2u << 20, len = CAL_BUFFER + huge;
	struct wc_cal_extent ext;
	double start = now_ns();
	void *m;
	int ret;

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return wc_err_sys(-errno, "calibrate: mmap %zu bytes", len);
	ext.addr = (char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
	ext.len = CAL_BUFFER;
	/* Advice only: without huge pages the numbers carry TLB misses too. */
	madvise(ext.addr, CAL_BUFFER, MADV_HUGEPAGE);
	ret = wc_calibrate_area(out, &ext, 1, SIZE_MAX, features, flush_insn, rounds,
	                        bytes_per_point, budget_ms);
	munmap(m, len);
	out->elapsed_ms = (now_ns() - start) / 1e6;
	return ret;
}

/*
 * One remembered result per (features, flush instruction): whoever measured
 * last -- WC_PMEM_THRESHOLD=auto, wc_pmem_calibrate() or the first use on
 * an unknown CPU -- answers the later questions of this process.
 */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int valid;
	unsigned features;
	int flush_insn;
	size_t threshold;
	double ms;
} memo;

static void memo_store(unsigned features, int flush_insn, size_t threshold, double ms)
{
	memo.valid = 1;
	memo.features = features;
	memo.flush_insn = flush_insn;
	memo.threshold = threshold;
	memo.ms = ms;
}

int wc_calibrate_threshold(unsigned features, int flush_insn, size_t *threshold_out)
{
	struct wc_calibration cal;
	int ret;

	/* 3 rounds x 11 sizes x 4 measurements x 128 KiB ~ 17 MiB written,
	 * ~ 10-30 ms on DRAM; the budget stops slower machines at ~80 ms. */
	ret = wc_calibrate_run(&cal, features, flush_insn, 3, 128u << 10, 80.0);
	if (ret)
		return ret;
	pthread_mutex_lock(&memo_lock);
	memo_store(features, flush_insn, cal.threshold, cal.elapsed_ms);
	pthread_mutex_unlock(&memo_lock);
	*threshold_out = cal.threshold;
	return 0;
}

int wc_calibrated_threshold(unsigned features, int flush_insn, size_t *threshold_out)
{
	int hit;

	pthread_mutex_lock(&memo_lock);
	hit = memo.valid && memo.features == features && memo.flush_insn == flush_insn;
	if (hit)
		*threshold_out = memo.threshold;
	pthread_mutex_unlock(&memo_lock);
	if (hit)
		return 0;
	return wc_calibrate_threshold(features, flush_insn, threshold_out);
}

/*
 * The first-use measurement: the same method, shorter.  2 rounds of 64 KiB
 * per point and strategy (~6 MiB written) plus faulting in the 16 MiB
 * buffer: 5-8 ms on the DRAM of the CPUs measured so far; the 8 ms budget
 * for the rounds ends it after the first one on anything slower.
 */
static int first_use_measure(unsigned features, int flush_insn, size_t *threshold, double *ms)
{
	struct wc_calibration cal;
	int ret = wc_calibrate_run(&cal, features, flush_insn, 2, 64u << 10, 8.0);

	if (ret)
		return ret;
	*threshold = cal.threshold;
	*ms = cal.elapsed_ms;
	return 0;
}

wc_measure_fn wc_first_use_measure = first_use_measure;

int wc_first_use_threshold(unsigned features, int flush_insn, size_t *threshold, double *ms)
{
	int ret = 0;

	/* Held while measuring: a second thread waits for the first one's
	 * answer instead of measuring beside it (which would skew both). */
	pthread_mutex_lock(&memo_lock);
	if (!(memo.valid && memo.features == features && memo.flush_insn == flush_insn)) {
		size_t t;
		double took;

		ret = wc_first_use_measure(features, flush_insn, &t, &took);
		if (!ret)
			memo_store(features, flush_insn, t, took);
	}
	if (!ret) {
		*threshold = memo.threshold;
		*ms = memo.ms;
	}
	pthread_mutex_unlock(&memo_lock);
	return ret;
}

void wc_calibration_forget(void)
{
	pthread_mutex_lock(&memo_lock);
	memo.valid = 0;
	pthread_mutex_unlock(&memo_lock);
}

int wc_pmem_calibrate(size_t *threshold_out)
{
	const struct wc_persist_policy *p = wc_persist_default();
	const struct wc_pmem_env *env = wc_pmem_env_get();
	int clwb = p->line.large_strategy && strcmp(p->line.large_strategy, "cached+clwb") == 0;

	if (!threshold_out)
		return wc_err(-EINVAL, "wc_pmem_calibrate: threshold_out is NULL");
	return wc_calibrate_threshold(wc_cpu_get()->features & ~env->cfg.disable,
	                              clwb || env->cfg.flush_insn == WC_PMEM_CLWB ?
	                                      WC_PMEM_CLWB : WC_PMEM_CLFLUSHOPT,
	                              threshold_out);
}
