/* SPDX-License-Identifier: BSD-3-Clause */
/* histogram.c -- log-bucket latency histograms (see histogram.h). */
#include <math.h>
#include <string.h>

#include "histogram.h"

void wcb_hist_clear(struct wcb_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

uint64_t wcb_hist_bucket_low(unsigned i)
{
	unsigned octave = i / WCB_HIST_SUB, sub = i % WCB_HIST_SUB;

	if (i < 2 * WCB_HIST_SUB)
		return i;
	return (uint64_t)(WCB_HIST_SUB + sub) << (octave - 1);
}

uint64_t wcb_hist_bucket_high(unsigned i)
{
	if (i < 2 * WCB_HIST_SUB)
		return i;
	/* Written as low + (width - 1) so the last bucket ends at UINT64_MAX
	 * without overflowing. */
	return wcb_hist_bucket_low(i) + ((1ull << (i / WCB_HIST_SUB - 1)) - 1);
}

void wcb_hist_merge(struct wcb_hist *dst, const struct wcb_hist *src)
{
	if (!src->count)
		return;
	for (unsigned i = 0; i < WCB_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

double wcb_hist_quantile(const struct wcb_hist *h, double q)
{
	uint64_t rank, seen = 0;
	double mid;

	if (!h->count)
		return 0;
	if (q <= 0)
		return (double)h->min;
	if (q >= 1)
		return (double)h->max;
	rank = (uint64_t)ceil(q * (double)h->count);
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < WCB_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen < rank)
			continue;
		mid = ((double)wcb_hist_bucket_low(i) + (double)wcb_hist_bucket_high(i)) / 2;
		if (mid < (double)h->min)
			mid = (double)h->min;
		if (mid > (double)h->max)
			mid = (double)h->max;
		return mid;
	}
	return (double)h->max;
}

double wcb_hist_mean(const struct wcb_hist *h)
{
	return h->count ? h->sum / (double)h->count : 0;
}
