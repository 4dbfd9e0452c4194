/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate.c -- which way of persisting a copy is fastest on the running
 * machine, per size: which non-temporal store width (MOVNTI, SSE2, AVX2,
 * AVX-512), and where cached stores + CLFLUSHOPT/CLWB start beating them.
 *
 * Every strategy writes to an anonymous buffer larger than L2 (16 MiB, huge
 * pages where the kernel allows them, so TLB misses do not blur small
 * copies), with the destination moving forward at every copy: each copy
 * hits cold lines, as cache writes do.  Sizes and strategies are
 * interleaved (the order rotates each round), every point is the best of
 * the rounds, and a point counts fenced per copy plus fenced once per 64
 * copies (FUA writes versus group commit).
 *
 * Why the width is measured, not looked up: a CPU that executes a 512-bit
 * store as two 256-bit halves (Zen 4) moved 5-20 % more with the 256-bit
 * loop, one with a full 512-bit path (Zen 5) did not; 8-byte MOVNTI can win
 * a fenced 64-byte copy and lose everywhere else.  The choice (choose()):
 * the width fastest over the sizes it copies, and the cached path from the
 * smallest size at which it wins by >= 5 % there and at every larger size.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
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
#define CAL_TIE     0.02         /* widths within 2% of the fastest: the widest */

static const size_t cal_sizes[] = {
	64, 128, 256, 512, 768, 1024, 1536, 2048, 4096, 8192, 16384, 32768, 65536,
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

/* One candidate: a strategy and where its times go. */
struct cal_cand {
	const struct wc_strategy *s;
	int width;                   /* index into nt_ids, -1 for the cached path */
};

static double *slot_fenced(struct wc_calibration_point *pt, const struct cal_cand *c)
{
	return c->width < 0 ? &pt->cached_fenced : &pt->w_fenced[c->width];
}

static double *slot_batched(struct wc_calibration_point *pt, const struct cal_cand *c)
{
	return c->width < 0 ? &pt->cached_batched : &pt->w_batched[c->width];
}

/* Width w's time at point i relative to the fastest width there, fenced
 * and batched weighed alike (1.0 = the fastest in both modes). */
static double rel(const struct wc_calibration *cal, unsigned w, unsigned i)
{
	const struct wc_calibration_point *pt = &cal->pt[i];
	double bf = pt->w_fenced[0], bb = pt->w_batched[0];

	for (unsigned k = 1; k < cal->n_nt; k++) {
		if (pt->w_fenced[k] < bf)
			bf = pt->w_fenced[k];
		if (pt->w_batched[k] < bb)
			bb = pt->w_batched[k];
	}
	if (bf <= 0 || bb <= 0) /* a sample under the clock's resolution: no verdict */
		return 1.0;
	return (pt->w_fenced[w] / bf + pt->w_batched[w] / bb) / 2;
}

/* The width with the least relative time over points [lo, hi); a width
 * within CAL_TIE of it that is wider wins the tie (nt_ids is widest
 * first), so equal widths do not flip from one measurement to the next.
 * *runner_up and *runner_speed: the next one and its speed relative to
 * the winner's. */
static unsigned best_width(const struct wc_calibration *cal, unsigned lo, unsigned hi,
                           unsigned *runner_up, double *runner_speed)
{
	double t[WC_CAL_MAX_NT] = { 0 }, min = 0;
	unsigned best = 0, second = 0;

	for (unsigned w = 0; w < cal->n_nt; w++) {
		t[w] = 0;
		for (unsigned i = lo; i < hi; i++)
			t[w] += rel(cal, w, i);
		if (w == 0 || t[w] < min)
			min = t[w];
	}
	for (unsigned w = 0; w < cal->n_nt; w++)
		if (t[w] <= min * (1 + CAL_TIE)) {
			best = w;
			break;
		}
	second = best;
	for (unsigned w = 0; w < cal->n_nt; w++)
		if (w != best && (second == best || t[w] < t[second]))
			second = w;
	if (runner_up)
		*runner_up = second;
	if (runner_speed)
		*runner_speed = t[second] > 0 ? t[best] / t[second] : 1.0;
	return best;
}

static void choose(struct wc_calibration *cal, const struct wc_strategy *cached,
                   enum wc_strategy_id cached_id)
{
	struct wc_flush_choice *ch = &cal->choice;
	unsigned n = cal->npoints, w, w_small, runner;
	unsigned cut = n;                 /* first point of the large band */
	double speed;

	/* The path: the width fastest over every size against the cached one,
	 * from the largest size down. */
	w = best_width(cal, 0, n, NULL, NULL);
	if (cached)
		for (unsigned i = n; i-- > 0;) {
			const struct wc_calibration_point *pt = &cal->pt[i];

			if (pt->cached_fenced + pt->cached_batched >
			    (pt->w_fenced[w] + pt->w_batched[w]) * CAL_MARGIN)
				break;
			cut = i;
		}
	w_small = best_width(cal, 0, cut ? cut : n, &runner, &speed);
	ch->small = cal->nt_ids[w_small];
	ch->runner_up = cal->nt_ids[runner];
	ch->runner_up_speed = speed;
	if (cut < n) {
		ch->large = cached_id;
		ch->threshold = cal->pt[cut].size;
	} else {
		/* One width for every size: a second width for the large sizes
		 * was tried, and on a loaded machine it split two widths that
		 * tie on noise alone (a run had 256-bit stores below 32 KiB and
		 * 512-bit from there, 0.85x the best at 512 B). */
		ch->large = ch->small;
		ch->threshold = SIZE_MAX;
	}
	cal->threshold = ch->threshold;
	cal->nt_name = wc_strategy_get(ch->small)->name;
	/* The summary columns: the NT width in force at each size (below a
	 * crossover, small's; in the cached band, small's too). */
	for (unsigned i = 0; i < n; i++) {
		struct wc_calibration_point *pt = &cal->pt[i];
		enum wc_strategy_id id = i >= cut && wc_strategy_get(ch->large)->nt ? ch->large
		                                                                  : ch->small;

		for (unsigned k = 0; k < cal->n_nt; k++)
			if (cal->nt_ids[k] == id) {
				pt->nt_fenced = pt->w_fenced[k];
				pt->nt_batched = pt->w_batched[k];
			}
	}
}

int wc_calibrate_area(struct wc_calibration *out, const struct wc_cal_extent *ext, size_t next,
                      size_t max_size, unsigned features, int flush_insn, unsigned rounds,
                      size_t bytes_per_point, double budget_ms)
{
	static const enum wc_strategy_id widths[] = {
		WC_STRAT_NT_AVX512, WC_STRAT_NT_AVX2, WC_STRAT_NT_SSE2, WC_STRAT_NT_MOVNTI,
	};
	const struct wc_strategy *cached = NULL;
	enum wc_strategy_id cached_id =
	        flush_insn == WC_PMEM_CLWB ? WC_STRAT_CACHED_CLWB : WC_STRAT_CACHED_CLFLUSHOPT;
	struct cal_cand cand[WC_CAL_MAX_NT + 1];
	unsigned ncand = 0;
	wc_drain_fn drain;
	struct cal_cursor cur = { ext, next, 0, 0, NULL };
	size_t longest = 0;
	char *src;
	double start = now_ns(), t_measure;
	unsigned n = 0;

	memset(out, 0, sizeof(out[0]));
	out->threshold = SIZE_MAX;
	out->choice.threshold = SIZE_MAX;
	for (unsigned i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (wc_strategy_usable(widths[i], features)) {
			cand[ncand].s = wc_strategy_get(widths[i]);
			cand[ncand].width = (int)out->n_nt;
			ncand++;
			out->nt_ids[out->n_nt++] = widths[i];
		}
	if (out->n_nt == 0)
		return wc_err(-ENOTSUP, "calibrate: no non-temporal strategy usable with features "
		              "0x%x", features);
	out->choice.small = out->choice.large = out->choice.runner_up = out->nt_ids[0];
	out->choice.runner_up_speed = 1.0;
	out->nt_name = wc_strategy_get(out->nt_ids[0])->name;
	out->cached_name = "(unavailable)";
	if (wc_strategy_usable(cached_id, features)) {
		cached = wc_strategy_get(cached_id);
		out->cached_name = cached->name;
		cand[ncand].s = cached;
		cand[ncand].width = -1;
		ncand++;
	}
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
	 * page of a fresh mapping takes a page fault, which is not what any
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
		cand[0].s->set(ext[i].addr, 0, ext[i].len);
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

			/* Rotate which goes first so none always inherits another's
			 * write-backs still in flight. */
			for (unsigned k = 0; k < ncand; k++) {
				const struct cal_cand *c = &cand[(k + r + i) % ncand];

				keep_min(slot_fenced(pt, c),
				         measure(&cur, c->s->copy, drain, pt->size, bytes, 1));
			}
			for (unsigned k = 0; k < ncand; k++) {
				const struct cal_cand *c = &cand[(k + r + i + 1) % ncand];

				keep_min(slot_batched(pt, c),
				         measure(&cur, c->s->copy, drain, pt->size, bytes, CAL_BATCH));
			}
		}
		out->rounds = r + 1;
		/* Two rounds at least: each point is the better of two, so one
		 * preemption cannot pick a width (under load, one first-use
		 * measurement in ~16 picked MOVNTI over SSE2 from one round). */
		if (budget_ms > 0 && r >= 1 && (now_ns() - t_measure) / 1e6 > budget_ms)
			break;
	}
	free(src);
	choose(out, cached, cached_id);
	out->elapsed_ms = (now_ns() - start) / 1e6;
	out->choice.ms = out->elapsed_ms;
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
 * last -- WC_PMEM_THRESHOLD=auto, wc_pmem_calibrate() or the first use --
 * answers the later questions of this process.
 */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int valid;
	unsigned features;
	int flush_insn;
	struct wc_flush_choice choice;
} memo;

static void memo_store(unsigned features, int flush_insn, const struct wc_flush_choice *ch)
{
	memo.valid = 1;
	memo.features = features;
	memo.flush_insn = flush_insn;
	memo.choice = *ch;
}

static int memo_hit(unsigned features, int flush_insn)
{
	return memo.valid && memo.features == features && memo.flush_insn == flush_insn;
}

int wc_calibrate_choice(unsigned features, int flush_insn, struct wc_flush_choice *out)
{
	struct wc_calibration cal;
	int ret;

	/* 3 rounds x 13 sizes x (4 widths + cached) x 2 modes x 128 KiB
	 * ~ 50 MiB written, ~ 30-60 ms on DRAM; the budget stops slower
	 * machines at ~80 ms. */
	ret = wc_calibrate_run(&cal, features, flush_insn, 3, 128u << 10, 80.0);
	if (ret)
		return ret;
	cal.choice.ms = cal.elapsed_ms;
	pthread_mutex_lock(&memo_lock);
	memo_store(features, flush_insn, &cal.choice);
	pthread_mutex_unlock(&memo_lock);
	*out = cal.choice;
	return 0;
}

int wc_calibrated_choice(unsigned features, int flush_insn, struct wc_flush_choice *out)
{
	int hit;

	pthread_mutex_lock(&memo_lock);
	hit = memo_hit(features, flush_insn);
	if (hit)
		*out = memo.choice;
	pthread_mutex_unlock(&memo_lock);
	if (hit)
		return 0;
	return wc_calibrate_choice(features, flush_insn, out);
}

/*
 * The first-use measurement: the same method, shorter.  2 rounds of 32 KiB
 * per point, strategy and mode (~13 MiB written with five strategies) plus
 * faulting in the 16 MiB buffer; the 8 ms budget for the rounds ends it
 * after the first one on anything slow.
 */
static int first_use_measure(unsigned features, int flush_insn, struct wc_flush_choice *out)
{
	struct wc_calibration cal;
	int ret = wc_calibrate_run(&cal, features, flush_insn, 2, 32u << 10, 8.0);

	if (ret)
		return ret;
	*out = cal.choice;
	out->ms = cal.elapsed_ms;
	return 0;
}

wc_measure_fn wc_first_use_measure = first_use_measure;

int wc_first_use_choice(unsigned features, int flush_insn, struct wc_flush_choice *out)
{
	int ret = 0;

	/* Held while measuring: a second thread waits for the first one's
	 * answer instead of measuring beside it (which would skew both). */
	pthread_mutex_lock(&memo_lock);
	if (!memo_hit(features, flush_insn)) {
		struct wc_flush_choice ch;

		ret = wc_first_use_measure(features, flush_insn, &ch);
		if (!ret)
			memo_store(features, flush_insn, &ch);
	}
	if (!ret)
		*out = memo.choice;
	pthread_mutex_unlock(&memo_lock);
	return ret;
}

void wc_calibration_forget(void)
{
	pthread_mutex_lock(&memo_lock);
	memo.valid = 0;
	pthread_mutex_unlock(&memo_lock);
}

const char *wc_flush_choice_str(char *buf, size_t len, const struct wc_flush_choice *ch)
{
	const struct wc_strategy *small = wc_strategy_get(ch->small);
	const struct wc_strategy *large = wc_strategy_get(ch->large);
	const char *sn = small ? small->name : "?", *ln = large ? large->name : "?";
	size_t used;

	if (ch->threshold == SIZE_MAX || ch->small == ch->large)
		used = (size_t)snprintf(buf, len, "%s at every size", sn);
	else
		used = (size_t)snprintf(buf, len, "%s below %zu B, %s from there", sn,
		                        ch->threshold, ln);
	if (used < len && ch->runner_up != ch->small) {
		const struct wc_strategy *r = wc_strategy_get(ch->runner_up);

		snprintf(buf + used, len - used, " (runner-up %s at %.2fx)", r ? r->name : "?",
		         ch->runner_up_speed);
	}
	return buf;
}

int wc_pmem_calibrate(size_t *threshold_out)
{
	const struct wc_persist_policy *p = wc_persist_default();
	const struct wc_pmem_env *env = wc_pmem_env_get();
	int clwb = p->line.large_strategy && strcmp(p->line.large_strategy, "cached+clwb") == 0;
	struct wc_flush_choice ch;
	int ret;

	if (!threshold_out)
		return wc_err(-EINVAL, "wc_pmem_calibrate: threshold_out is NULL");
	ret = wc_calibrate_choice(wc_cpu_get()->features & ~env->cfg.disable,
	                          clwb || env->cfg.flush_insn == WC_PMEM_CLWB ? WC_PMEM_CLWB
	                                                                      : WC_PMEM_CLFLUSHOPT,
	                          &ch);
	if (ret)
		return ret;
	/* The crossover to the cached path; a switch between two
	 * non-temporal widths is not one. */
	*threshold_out = wc_strategy_get(ch.large)->nt ? SIZE_MAX : ch.threshold;
	return 0;
}
