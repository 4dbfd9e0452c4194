/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nt_avx512.c -- non-temporal copy and set with VMOVNTDQ zmm: one store per
 * 64-byte line.  Built with -mavx512f only when configure's probe compiled;
 * called only when cpu.c saw AVX-512F and the OS saving ZMM state.
 */
#include <immintrin.h>

#include "flush/x86_64/nt_body.h"

static inline __attribute__((always_inline)) void copy_lines(char *d, const char *s,
                                                             size_t lines)
{
	const char *end;

	/* Fewer than four lines (a 64-byte record, a small block): one store
	 * each and nothing to set up. */
	if (lines < 4) {
		for (end = s + lines * WC_LINE; s != end; s += WC_LINE, d += WC_LINE)
			_mm512_stream_si512((void *)d, _mm512_loadu_si512((const void *)s));
		return;
	}
	/* Four lines per turn: four independent loads in flight before the
	 * stores. */
	for (; lines >= 4; lines -= 4, d += 4 * WC_LINE, s += 4 * WC_LINE) {
		__m512i a = _mm512_loadu_si512((const void *)(s + 0 * WC_LINE));
		__m512i b = _mm512_loadu_si512((const void *)(s + 1 * WC_LINE));
		__m512i e = _mm512_loadu_si512((const void *)(s + 2 * WC_LINE));
		__m512i f = _mm512_loadu_si512((const void *)(s + 3 * WC_LINE));

		_mm512_stream_si512((void *)(d + 0 * WC_LINE), a);
		_mm512_stream_si512((void *)(d + 1 * WC_LINE), b);
		_mm512_stream_si512((void *)(d + 2 * WC_LINE), e);
		_mm512_stream_si512((void *)(d + 3 * WC_LINE), f);
	}
	for (; lines; lines--, d += WC_LINE, s += WC_LINE)
		_mm512_stream_si512((void *)d, _mm512_loadu_si512((const void *)s));
}

static inline __attribute__((always_inline)) void set_lines(char *d, int c, size_t lines)
{
	__m512i v = _mm512_set1_epi8((char)c);

	for (; lines; lines--, d += WC_LINE)
		_mm512_stream_si512((void *)d, v);
}

WC_NT_DEFINE(wc_nt_avx512_copy, wc_nt_avx512_set, copy_lines, set_lines)
