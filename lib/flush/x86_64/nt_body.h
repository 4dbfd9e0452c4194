/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nt_body.h -- the shape every non-temporal copy and set shares.  Each
 * nt_<width>.c compiles it with its own -m flags and passes its 64-byte line
 * loops in; the loops are static and always inlined, so each file gets one
 * straight-line function (PMDK's lesson in 5b1411e: split files only where
 * the compiler needs it, make the rest parameters).
 *
 *   head: bytes before the first 64-byte boundary -- cached stores + flush
 *         (no NT store is narrower than 4 bytes, and a wider one would write
 *         bytes outside [dst, dst + n));
 *   body: whole lines with non-temporal stores (no read-for-ownership);
 *   tail: bytes after the last boundary -- cached stores + flush.
 * (Measured alternative: MOVNTI for the partial lines too, the last store
 * overlapping its neighbour instead of overrunning.  A fenced ragged copy
 * drops from ~170 to ~105 ns, but partial-line NT writes cost memory
 * bandwidth: a 64-byte misaligned copy with one fence per 64 went from 10
 * to 24 ns.  Group commit is the common case, so the partial lines stay
 * cached; see docs/flush-engine.md.)
 *
 * No fence: NT stores are weakly ordered and drain's SFENCE orders them.
 */
#ifndef WC_NT_BODY_H
#define WC_NT_BODY_H

#include <stdint.h>
#include <string.h>

#include "flush/engine.h"

typedef void (*wc_nt_copy_lines_fn)(char *d, const char *s, size_t lines);
typedef void (*wc_nt_set_lines_fn)(char *d, int c, size_t lines);

/*
 * Below this many bytes a misaligned copy is cached stores + a write-back of
 * every line, no NT stores at all.  Measured on Zen 4 (dst 17 bytes past a
 * line, median ns per copy, NT body + cached head/tail vs all cached):
 * 128 B 196 -> 173 fenced, 25.7 -> 13.3 batched; 256 B 185 -> 180 and
 * 32.9 -> 21.7; at 512 B NT wins again (37.4 vs 40.5 batched).  A short
 * misaligned copy has two partial lines around very few whole ones.
 */
#ifndef WC_NT_MISALIGNED_MIN
#define WC_NT_MISALIGNED_MIN 512
#endif

/* Cached stores + a write-back of every line, for short misaligned ranges. */
static inline __attribute__((always_inline)) void wc_cached_lines_copy(char *d, const char *s,
                                                                       size_t n)
{
	while (n) {
		size_t k = WC_LINE - ((uintptr_t)d & (WC_LINE - 1));

		if (k > n)
			k = n;
		memcpy(d, s, k);
		wc_persist_line(d, wc_partial_flush_insn);
		d += k;
		s += k;
		n -= k;
	}
}

static inline __attribute__((always_inline)) void wc_cached_lines_set(char *d, int c, size_t n)
{
	while (n) {
		size_t k = WC_LINE - ((uintptr_t)d & (WC_LINE - 1));

		if (k > n)
			k = n;
		memset(d, c, k);
		wc_persist_line(d, wc_partial_flush_insn);
		d += k;
		n -= k;
	}
}

static inline __attribute__((always_inline)) void
wc_nt_copy_body(void *dst, const void *src, size_t n, wc_nt_copy_lines_fn copy_lines)
{
	char *d = dst;
	const char *s = src;
	size_t head = (size_t)(-(uintptr_t)d) & (WC_LINE - 1);
	size_t lines;

	if (head) {
		if (head >= n || n < WC_NT_MISALIGNED_MIN) {
			wc_cached_lines_copy(d, s, n);
			return;
		}
		memcpy(d, s, head);
		wc_persist_partial(d, head);
		d += head;
		s += head;
		n -= head;
	}
	lines = n / WC_LINE;
	if (lines) {
		copy_lines(d, s, lines);
		d += lines * WC_LINE;
		s += lines * WC_LINE;
		n -= lines * WC_LINE;
	}
	if (n) {
		memcpy(d, s, n);
		wc_persist_partial(d, n);
	}
}

static inline __attribute__((always_inline)) void
wc_nt_set_body(void *dst, int c, size_t n, wc_nt_set_lines_fn set_lines)
{
	char *d = dst;
	size_t head = (size_t)(-(uintptr_t)d) & (WC_LINE - 1);
	size_t lines;

	if (head) {
		if (head >= n || n < WC_NT_MISALIGNED_MIN) {
			wc_cached_lines_set(d, c, n);
			return;
		}
		memset(d, c, head);
		wc_persist_partial(d, head);
		d += head;
		n -= head;
	}
	lines = n / WC_LINE;
	if (lines) {
		set_lines(d, c, lines);
		d += lines * WC_LINE;
		n -= lines * WC_LINE;
	}
	if (n) {
		memset(d, c, n);
		wc_persist_partial(d, n);
	}
}

/*
 * Each nt_<width>.c defines its copy and set with this: whole aligned lines
 * (every cache block, and most records) go straight to the line loop; the
 * head/tail logic above lives in a separate function.  Kept apart, the
 * fast path needs no callee-saved registers, so the compiler emits it
 * without the prologue and epilogue the ragged path needs (5 pushes and pops
 * per call: a measurable part of a 64-byte copy, ~7 ns with one fence per
 * 64 copies).
 */
#define WC_NT_DEFINE(copy_name, set_name, copy_lines, set_lines)                          \
	static __attribute__((noinline)) void copy_name##_ragged(void *d, const void *s,  \
	                                                         size_t n)                 \
	{                                                                                  \
		wc_nt_copy_body(d, s, n, copy_lines);                                      \
	}                                                                                  \
	static __attribute__((noinline)) void set_name##_ragged(void *d, int c, size_t n) \
	{                                                                                  \
		wc_nt_set_body(d, c, n, set_lines);                                        \
	}                                                                                  \
	void copy_name(void *dst, const void *src, size_t n)                               \
	{                                                                                  \
		if (__builtin_expect((((uintptr_t)dst | n) & (WC_LINE - 1)) == 0, 1))     \
			copy_lines(dst, src, n / WC_LINE);                                 \
		else                                                                       \
			copy_name##_ragged(dst, src, n);                                   \
	}                                                                                  \
	void set_name(void *dst, int c, size_t n)                                          \
	{                                                                                  \
		if (__builtin_expect((((uintptr_t)dst | n) & (WC_LINE - 1)) == 0, 1))     \
			set_lines(dst, c, n / WC_LINE);                                    \
		else                                                                       \
			set_name##_ragged(dst, c, n);                                      \
	}

#endif /* WC_NT_BODY_H */
