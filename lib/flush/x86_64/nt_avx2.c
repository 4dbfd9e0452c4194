/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nt_avx2.c -- non-temporal copy and set with VMOVNTDQ ymm, 32 bytes per
 * store.  Built with -mavx2; called only when cpu.c saw AVX2 and the OS
 * saving YMM state.
 */
#include <immintrin.h>

#include "flush/x86_64/nt_body.h"

static inline __attribute__((always_inline)) void copy_lines(char *d, const char *s,
                                                             size_t lines)
{
	for (; lines; lines--, d += WC_LINE, s += WC_LINE) {
		__m256i a = _mm256_loadu_si256((const __m256i *)s + 0);
		__m256i b = _mm256_loadu_si256((const __m256i *)s + 1);

		_mm256_stream_si256((__m256i *)d + 0, a);
		_mm256_stream_si256((__m256i *)d + 1, b);
	}
}

static inline __attribute__((always_inline)) void set_lines(char *d, int c, size_t lines)
{
	__m256i v = _mm256_set1_epi8((char)c);

	for (; lines; lines--, d += WC_LINE) {
		_mm256_stream_si256((__m256i *)d + 0, v);
		_mm256_stream_si256((__m256i *)d + 1, v);
	}
}

WC_NT_DEFINE(wc_nt_avx2_copy, wc_nt_avx2_set, copy_lines, set_lines)
