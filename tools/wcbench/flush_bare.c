/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flush_bare.c -- `wcbench flush`'s reference loops: non-temporal stores of
 * one width and nothing else (no dispatch, no size switch, no head or tail
 * handling, no observer), the least any engine of that width can do.  They
 * need a 64-byte aligned destination and a multiple of 64 bytes, which is
 * what `wcbench flush` copies unless --dst-offset is given.  Not part of the
 * library: the engine's own loops are in lib/flush/x86_64/nt_*.c.
 */
#include <immintrin.h>
#include <string.h>

#include "flushbench.h"

#if defined(__x86_64__)
__attribute__((target("avx2"))) static void bare_avx2(void *dst, const void *src, size_t n)
{
	char *d = dst;
	const char *s = src;

	for (; n; n -= 64, d += 64, s += 64) {
		__m256i a = _mm256_loadu_si256((const __m256i *)s + 0);
		__m256i b = _mm256_loadu_si256((const __m256i *)s + 1);

		_mm256_stream_si256((__m256i *)d + 0, a);
		_mm256_stream_si256((__m256i *)d + 1, b);
	}
}

__attribute__((target("avx512f"))) static void bare_avx512(void *dst, const void *src, size_t n)
{
	char *d = dst;
	const char *s = src;

	for (; n; n -= 64, d += 64, s += 64)
		_mm512_stream_si512((void *)d, _mm512_loadu_si512((const void *)s));
}

__attribute__((target("sse2"))) static void bare_sse2(void *dst, const void *src, size_t n)
{
	char *d = dst;
	const char *s = src;

	for (; n; n -= 64, d += 64, s += 64)
		for (int k = 0; k < 4; k++)
			_mm_stream_si128((__m128i *)d + k, _mm_loadu_si128((const __m128i *)s + k));
}
#endif

wcadm_copy_fn flushbench_bare_loop(const char *nt_name, const char **bare_name)
{
#if defined(__x86_64__)
	if (strcmp(nt_name, "nt-avx512") == 0) {
		*bare_name = "bare-avx512";
		return bare_avx512;
	}
	if (strcmp(nt_name, "nt-avx2") == 0) {
		*bare_name = "bare-avx2";
		return bare_avx2;
	}
	if (strcmp(nt_name, "nt-sse2") == 0) {
		*bare_name = "bare-sse2";
		return bare_sse2;
	}
#endif
	(void)nt_name;
	*bare_name = NULL;
	return NULL;
}
