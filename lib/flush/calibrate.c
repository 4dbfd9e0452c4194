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

#include "engine.h"
#include "error.h"

#define CAL_BUFFER  (16u << 20) /* > any L2 this engine has met (2 MiB) */
#define CAL_SOURCE  (64u << 10)
#define CAL_BATCH   64u
#define CAL_MARGIN  0.95         /* cached must be >= 5% faster to count */

static const size_t cal_sizes[] = {
	256, 512, 768, 1024, 1536, 2048, 4096, 8192, 16384, 65536,
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

struct cal_buf {
	char *base, *dst;
	size_t len, pos;
	char *src;
};

static int buf_open(struct cal_buf *b)
{
	size_t huge = 2u << 20;
	void *m;

	b->len = CAL_BUFFER + huge + CAL_SOURCE;
	m = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return wc_err_sys(-errno, "calibrate: mmap %zu bytes", b->len);
	b->base = m;
	b->dst = (char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
	/* Advice only: without huge pages the numbers carry TLB misses too. */
	madvise(b->dst, CAL_BUFFER, MADV_HUGEPAGE);
	b->src = b->dst + CAL_BUFFER;
	memset(b->dst, 0, CAL_BUFFER); /* fault everything in before timing */
	for (size_t i = 0; i < CAL_SOURCE; i++)
		b->src[i] = (char)(i * 131 + 7);
	b->pos = 0;
	return 0;
}

static void buf_close(struct cal_buf *b)
{
	munmap(b->base, b->len);
}

static char *next_dst(struct cal_buf *b, size_t size)
{
	char *d;

	if (b->pos + size > CAL_BUFFER)
		b->pos = 0;
	d = b->dst + b->pos;
	b->pos += size;
	return d;
}

/* ns per copy of `size` bytes with `copy`, a fence every `batch` copies. */
static double measure(struct cal_buf *b, wc_copy_fn copy, wc_drain_fn drain, size_t size,
                      size_t bytes, unsigned batch)
{
	unsigned copies = (unsigned)(bytes / size);
	double t0, t1;

	if (copies < batch)
		copies = batch;
	copies -= copies % batch;
	t0 = now_ns();
	for (unsigned i = 0; i < copies; i++) {
		copy(next_dst(b, size), b->src, size);
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

int wc_calibrate_run(struct wc_calibration *out, unsigned features, int flush_insn,
                     unsigned rounds, size_t bytes_per_point, double budget_ms)
{
	const struct wc_strategy *nt, *cached;
	enum wc_strategy_id cached_id =
	        flush_insn == WC_PMEM_CLWB ? WC_STRAT_CACHED_CLWB : WC_STRAT_CACHED_CLFLUSHOPT;
	wc_drain_fn drain;
	struct cal_buf b;
	double start;
	unsigned n = sizeof(cal_sizes) / sizeof(cal_sizes[0]);
	int ret;

	memset(out, 0, sizeof(*out));
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

	start = now_ns();
	ret = buf_open(&b);
	if (ret)
		return ret;
	out->npoints = n;
	for (unsigned i = 0; i < n; i++)
		out->pt[i].size = cal_sizes[i];
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < n; i++) {
			struct wc_calibration_point *pt = &out->pt[i];
			size_t bytes = bytes_per_point;

			/* Alternate which goes first so neither always inherits
			 * the other's write-backs still in flight. */
			if ((r + i) & 1) {
				keep_min(&pt->nt_fenced, measure(&b, nt->copy, drain, pt->size, bytes, 1));
				keep_min(&pt->cached_fenced,
				         measure(&b, cached->copy, drain, pt->size, bytes, 1));
			} else {
				keep_min(&pt->cached_fenced,
				         measure(&b, cached->copy, drain, pt->size, bytes, 1));
				keep_min(&pt->nt_fenced, measure(&b, nt->copy, drain, pt->size, bytes, 1));
			}
			keep_min(&pt->nt_batched,
			         measure(&b, nt->copy, drain, pt->size, bytes, CAL_BATCH));
			keep_min(&pt->cached_batched,
			         measure(&b, cached->copy, drain, pt->size, bytes, CAL_BATCH));
		}
		out->rounds = r + 1;
		if (budget_ms > 0 && (now_ns() - start) / 1e6 > budget_ms)
			break;
	}
	buf_close(&b);

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

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int valid;
	unsigned features;
	int flush_insn;
	size_t threshold;
} memo;

int wc_calibrate_threshold(unsigned features, int flush_insn, size_t *threshold_out)
{
	struct wc_calibration cal;
	int ret;

	/* 3 rounds x 10 sizes x 4 measurements x 128 KiB ~ 15 MiB written,
	 * ~ 10-30 ms on DRAM; the budget stops slower machines at ~80 ms. */
	ret = wc_calibrate_run(&cal, features, flush_insn, 3, 128u << 10, 80.0);
	if (ret)
		return ret;
	pthread_mutex_lock(&memo_lock);
	memo.valid = 1;
	memo.features = features;
	memo.flush_insn = flush_insn;
	memo.threshold = cal.threshold;
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

int wc_pmem_calibrate(size_t *threshold_out)
{
	const struct wc_flush_policy *p = wc_flush_default();
	const struct wc_pmem_env *env = wc_pmem_env_get();
	int clwb = p->line.large_strategy && strcmp(p->line.large_strategy, "cached+clwb") == 0;

	if (!threshold_out)
		return wc_err(-EINVAL, "wc_pmem_calibrate: threshold_out is NULL");
	return wc_calibrate_threshold(wc_cpu_get()->features & ~env->cfg.disable,
	                              clwb || env->cfg.flush_insn == WC_PMEM_CLWB ?
	                                      WC_PMEM_CLWB : WC_PMEM_CLFLUSHOPT,
	                              threshold_out);
}
