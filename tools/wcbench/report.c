/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c -- small helpers only the wcbench subcommands share: medians,
 * the policy as JSON and finding gnuplot (the rest is tools/common).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wcache.h"
#include "wcbench.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void wcb_json_head(struct wct_json *j, const char *tool)
{
	wct_json_init(j, stdout);
	wct_json_object(j, NULL, true);
	wct_json_str(j, "tool", tool);
}

double wcb_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char *wcb_gnuplot(void)
{
	static const char *const candidates[] = {
		"/usr/bin/gnuplot", "/usr/local/bin/gnuplot", "/bin/gnuplot",
	};

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

void wcb_json_policy(struct wct_json *j, const char *key, const struct wc_pmem_info *in)
{
	wct_json_object(j, key, false);
	wct_json_str(j, "small", in->small_strategy);
	wct_json_str(j, "large", in->large_strategy);
	wct_json_threshold(j, "threshold", in->threshold);
	wct_json_str(j, "reason", in->reason);
	wct_json_end(j);
}

const char *wcb_ns_str(char *buf, size_t len, int decimals, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.*fus", decimals, ns / 1e3);
	else
		snprintf(buf, len, "%.*fms", decimals, ns / 1e6);
	return buf;
}

void wcb_policy_text(char *buf, size_t len, const struct wc_pmem_info *in)
{
	if (in->threshold == SIZE_MAX || strcmp(in->small_strategy, in->large_strategy) == 0)
		snprintf(buf, len, "%s at every size", in->small_strategy);
	else
		snprintf(buf, len, "%s below %zu B, %s from %zu B", in->small_strategy,
		         in->threshold, in->large_strategy, in->threshold);
}
