/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strategy.c -- the table of ways to move bytes into the persistence
 * domain, what each needs from the CPU, and which non-temporal width the
 * engine prefers.
 */
#include <string.h>

/* configure's config.h: WC_HAVE_AVX512 says nt_avx512.c is built.  Without
 * it the AVX-512 strategy is silently absent, so insist on the right
 * header rather than whatever config.h the include path finds first. */
#include "config.h"
#ifndef PACKAGE_VERSION
#error "lib/flush/strategy.c needs configure's config.h (WC_HAVE_AVX512)"
#endif
#include "flush/engine.h"

#if defined(__x86_64__)
#define X86(fn) fn
#else
#define X86(fn) NULL
#endif

#if defined(__x86_64__) && defined(WC_HAVE_AVX512)
#define AVX512(fn) fn
#else
#define AVX512(fn) NULL
#endif

static const struct wc_strategy table[WC_STRAT_COUNT] = {
	[WC_STRAT_NT_MOVNTI] = { "nt-movnti", X86(wc_nt_movnti_copy), X86(wc_nt_movnti_set),
	                         0, 1 },
	[WC_STRAT_NT_SSE2] = { "nt-sse2", X86(wc_nt_sse2_copy), X86(wc_nt_sse2_set),
	                       WC_CPU_SSE2, 1 },
	[WC_STRAT_NT_AVX2] = { "nt-avx2", X86(wc_nt_avx2_copy), X86(wc_nt_avx2_set),
	                       WC_CPU_AVX2, 1 },
	[WC_STRAT_NT_AVX512] = { "nt-avx512", AVX512(wc_nt_avx512_copy),
	                         AVX512(wc_nt_avx512_set), WC_CPU_AVX512F, 1 },
	[WC_STRAT_CACHED_CLFLUSHOPT] = { "cached+clflushopt", X86(wc_cached_clflushopt_copy),
	                                 X86(wc_cached_clflushopt_set), WC_CPU_CLFLUSHOPT, 0 },
	[WC_STRAT_CACHED_CLWB] = { "cached+clwb", X86(wc_cached_clwb_copy),
	                           X86(wc_cached_clwb_set), WC_CPU_CLWB, 0 },
	[WC_STRAT_PMEM2] = { "pmem2", wc_generic_copy, wc_generic_set, 0, 0 },
};

const struct wc_strategy *wc_strategy_get(enum wc_strategy_id id)
{
	/* The NT head/tail flush instruction is chosen by the CPU probe. */
	wc_cpu_get();
	if ((unsigned)id >= WC_STRAT_COUNT)
		return NULL;
	if (id == WC_STRAT_PMEM2 && wc_generic_init() != 0)
		return NULL;
	return &table[id];
}

/* `features` is what the caller may use: the detected set minus what it
 * pretends absent (or a pretended CPU's set, in the policy tests). */
int wc_strategy_usable(enum wc_strategy_id id, unsigned features)
{
	const struct wc_strategy *s = wc_strategy_get(id);

	return s && s->copy && (features & s->needs) == s->needs;
}

const struct wc_strategy *wc_strategy_by_name(const char *name)
{
	for (unsigned i = 0; i < WC_STRAT_COUNT; i++)
		if (strcmp(table[i].name, name) == 0)
			return wc_strategy_get((enum wc_strategy_id)i);
	return NULL;
}

/*
 * Widest first: one instruction per line.  Measured on Zen 4
 * (`wcbench flush --all-nt --runs 9`, GB/s fenced per copy, avx512 / avx2 /
 * sse2 / movnti): 512 B 4.53 / 4.59 / 4.48 / 4.06, 4 KiB 16.6 / 16.4 /
 * 16.3 / 12.8, 1 MiB 26.0 / 26.0 / 25.0 / 17.1: the vector widths tie
 * within noise, 8-byte MOVNTI is 0.6-0.9x (eight stores per line fill a
 * write-combining buffer more slowly).  Userspace pays no FPU save for
 * the vector registers, unlike the kernel's memcpy_flushcache.
 */
static const enum wc_strategy_id nt_preference[] = {
	WC_STRAT_NT_AVX512, WC_STRAT_NT_AVX2, WC_STRAT_NT_SSE2, WC_STRAT_NT_MOVNTI,
};

enum wc_strategy_id wc_strategy_best_nt(unsigned features)
{
	for (size_t i = 0; i < sizeof(nt_preference) / sizeof(nt_preference[0]); i++)
		if (wc_strategy_usable(nt_preference[i], features))
			return nt_preference[i];
	return WC_STRAT_PMEM2;
}
