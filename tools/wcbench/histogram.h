/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * histogram.h -- log-bucket latency histograms for wcbench.
 *
 * Each power of two is split into 16 linear sub-buckets, so a bucket is at
 * most 1/16 (6.25%) wide relative to its value and any value below 32 has a
 * bucket of its own.  Recording is one array increment: each thread fills its
 * own histogram and the report merges them (no shared counter while timing).
 * Values are nanoseconds, 0 .. UINT64_MAX.
 */
#ifndef WCBENCH_HISTOGRAM_H
#define WCBENCH_HISTOGRAM_H

#include <stdint.h>

#define WCB_HIST_SUB_BITS 4
#define WCB_HIST_SUB (1u << WCB_HIST_SUB_BITS)
/* Values below 2 * WCB_HIST_SUB map to themselves; above, (msb - 3) octaves
 * of WCB_HIST_SUB buckets; msb 63 is the last. */
#define WCB_HIST_BUCKETS ((64 - WCB_HIST_SUB_BITS + 1) * WCB_HIST_SUB)

struct wcb_hist {
	uint64_t count, min, max;
	double sum;
	uint64_t bucket[WCB_HIST_BUCKETS];
};

void wcb_hist_clear(struct wcb_hist *h);

static inline unsigned wcb_hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < 2 * WCB_HIST_SUB)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - WCB_HIST_SUB_BITS;
	return (msb - WCB_HIST_SUB_BITS + 1) * WCB_HIST_SUB +
	       (unsigned)((v >> shift) & (WCB_HIST_SUB - 1));
}

static inline void wcb_hist_add(struct wcb_hist *h, uint64_t v)
{
	h->bucket[wcb_hist_index(v)]++;
	h->count++;
	h->sum += (double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* Smallest and largest value that falls into bucket `i`. */
uint64_t wcb_hist_bucket_low(unsigned i);
uint64_t wcb_hist_bucket_high(unsigned i);

/* dst += src */
void wcb_hist_merge(struct wcb_hist *dst, const struct wcb_hist *src);

/* The value at quantile q (0..1): the midpoint of the bucket holding the
 * ceil(q * count)-th smallest value, clamped to [min, max]; 0 if empty. */
double wcb_hist_quantile(const struct wcb_hist *h, double q);
double wcb_hist_mean(const struct wcb_hist *h);

#endif
