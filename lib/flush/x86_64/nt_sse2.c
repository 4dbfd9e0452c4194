/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nt_sse2.c -- non-temporal copy and set with MOVNTDQ, 16 bytes per store.
 */
#include <emmintrin.h>

#include "flush/x86_64/nt_body.h"

static inline __attribute__((always_inline)) void copy_lines(char *d, const char *s,
                                                             size_t lines)
{
	for (; lines; lines--, d += WC_LINE, s += WC_LINE) {
		__m128i a = _mm_loadu_si128((const __m128i *)s + 0);
		__m128i b = _mm_loadu_si128((const __m128i *)s + 1);
		__m128i e = _mm_loadu_si128((const __m128i *)s + 2);
		__m128i f = _mm_loadu_si128((const __m128i *)s + 3);

		_mm_stream_si128((__m128i *)d + 0, a);
		_mm_stream_si128((__m128i *)d + 1, b);
		_mm_stream_si128((__m128i *)d + 2, e);
		_mm_stream_si128((__m128i *)d + 3, f);
	}
}

static inline __attribute__((always_inline)) void set_lines(char *d, int c, size_t lines)
{
	__m128i v = _mm_set1_epi8((char)c);

	for (; lines; lines--, d += WC_LINE)
		for (int i = 0; i < 4; i++)
			_mm_stream_si128((__m128i *)d + i, v);
}

WC_NT_DEFINE(wc_nt_sse2_copy, wc_nt_sse2_set, copy_lines, set_lines)
