/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nt_movnti.c -- non-temporal copy and set with MOVNTI, 8 bytes per store
 * (general-purpose registers only: baseline x86-64, no vector state).
 */
#include <emmintrin.h>

#include "flush/x86_64/nt_body.h"

static inline __attribute__((always_inline)) void copy_lines(char *d, const char *s,
                                                             size_t lines)
{
	for (; lines; lines--, d += WC_LINE, s += WC_LINE) {
		long long q[8];

		/* All eight loads first: the stores then issue back to back and
		 * fill one write-combining buffer. */
		memcpy(q, s, sizeof(q));
		for (int i = 0; i < 8; i++)
			_mm_stream_si64((long long *)d + i, q[i]);
	}
}

static inline __attribute__((always_inline)) void set_lines(char *d, int c, size_t lines)
{
	long long v = (long long)(0x0101010101010101ull * (unsigned char)c);

	for (; lines; lines--, d += WC_LINE)
		for (int i = 0; i < 8; i++)
			_mm_stream_si64((long long *)d + i, v);
}

WC_NT_DEFINE(wc_nt_movnti_copy, wc_nt_movnti_set, copy_lines, set_lines)
