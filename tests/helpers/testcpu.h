/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testcpu.h -- the CPU as the tests see it, to skip what it cannot run.
 *
 * The features the flush engine detected (wc_cpu_get), less those the
 * environment tells the engine to pretend absent: WC_PMEM_NO_CLFLUSHOPT=1,
 * WC_PMEM_NO_CLWB=1, WC_PMEM_NO_AVX=1 (AVX2 and AVX-512F; lib/flush/env.c).
 * So one variable makes both the library and the tests behave as on a CPU
 * without the feature, and the tests that need it report SKIP.  The
 * environment is read when the program starts: tests change it as they run.
 */
#ifndef WC_TESTCPU_H
#define WC_TESTCPU_H

#include "testmain.h"

/* WC_CPU_* bits. */
unsigned wc_test_cpu_features(void);

/* NULL if the CPU (as above) has every feature in `bits` and, unless
 * `line_size` is 0, lines of that size; else why not, naming what is
 * missing and whether the CPU lacks it or the environment hides it ("needs
 * CLWB: not on this CPU"), in a buffer the next call reuses. */
const char *wc_test_cpu_unfit(unsigned bits, unsigned line_size);

/* In a test: SKIP unless wc_test_cpu_unfit(bits, line_size) is NULL. */
#define WC_TEST_NEED_CPU(bits, line_size)                                 \
	do {                                                              \
		const char *wc_unfit_ = wc_test_cpu_unfit(bits, line_size); \
		if (wc_unfit_)                                            \
			WC_TEST_SKIP("%s", wc_unfit_);                    \
	} while (0)

#endif
