/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testcpu.c -- the CPU as the tests see it (see the header).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "flush/engine.h"
#include "testcpu.h"
#include "wcache.h"

static unsigned pretended_absent;

/* Before main: the tests unset and set WC_PMEM_* variables as they run,
 * and the one given to the program is the one that counts. */
__attribute__((constructor)) static void read_environment(void)
{
	struct wc_pmem_env env;

	wc_pmem_env_parse(&env);
	pretended_absent = env.cfg.disable;
}

unsigned wc_test_cpu_features(void)
{
	return wc_cpu_get()->features & ~pretended_absent;
}

static const struct {
	unsigned bit;
	const char *name, *hidden_by;
} features[] = {
	{ WC_CPU_CLFLUSH, "CLFLUSH", NULL },
	{ WC_CPU_CLFLUSHOPT, "CLFLUSHOPT", "WC_PMEM_NO_CLFLUSHOPT=1" },
	{ WC_CPU_CLWB, "CLWB", "WC_PMEM_NO_CLWB=1" },
	{ WC_CPU_SSE2, "SSE2", NULL },
	{ WC_CPU_SSE42, "SSE4.2", NULL },
	{ WC_CPU_AVX2, "AVX2", "WC_PMEM_NO_AVX=1" },
	{ WC_CPU_AVX512F, "AVX-512F", "WC_PMEM_NO_AVX=1" },
	{ WC_CPU_MOVDIR64B, "MOVDIR64B", NULL },
};
#define NFEATURES (sizeof(features) / sizeof(features[0]))

static char why[256];
static size_t why_len;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (why_len >= sizeof(why))
		return;
	va_start(ap, fmt);
	n = vsnprintf(why + why_len, sizeof(why) - why_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		why_len += (size_t)n;
}

/* ", "-separated names of `bits`; `vars`: the variables that hide them. */
static void say_features(unsigned bits, int vars)
{
	const char *last = NULL;
	int first = 1;

	for (size_t i = 0; i < NFEATURES; i++) {
		const char *s = vars ? features[i].hidden_by : features[i].name;

		if (!(bits & features[i].bit) || !s || (last && strcmp(s, last) == 0))
			continue;
		say("%s%s", first ? "" : ", ", s);
		first = 0;
		last = s;
	}
}

const char *wc_test_cpu_unfit(unsigned bits, unsigned line_size)
{
	const struct wc_cpu *cpu = wc_cpu_get();
	unsigned missing = bits & ~wc_test_cpu_features();
	unsigned absent = missing & ~cpu->features, hidden = missing & cpu->features;

	why[0] = '\0';
	why_len = 0;
	if (missing) {
		say("needs ");
		say_features(missing, 0);
		say(":");
		if (absent)
			say(" not on this CPU");
		if (absent && hidden)
			say(";");
		if (hidden) {
			say(" hidden by ");
			say_features(hidden, 1);
		}
	}
	if (line_size && cpu->line_size != line_size)
		say("%sneeds %u-byte cache lines, this CPU has %u", missing ? "; " : "", line_size,
		    cpu->line_size);
	return why_len ? why : NULL;
}
