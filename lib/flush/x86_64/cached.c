/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cached.c -- cached stores followed by CLFLUSHOPT or CLWB of every touched
 * line, the flush loops behind wc_pmem_flush, and the engine's one fence.
 *
 * Cached stores first fetch each cold destination line (read-for-ownership);
 * the flush then writes it back.  The copy flushes each line right after its
 * stores, while the line is certainly still in L1 -- the loop the kernel's
 * dm-writecache uses above 768 bytes (memcpy_flushcache_optimized).
 */
#include <string.h>

#include "flush/engine.h"

static inline __attribute__((always_inline)) void
cached_copy(char *d, const char *s, size_t n, enum wc_persist_insn insn)
{
	size_t head = (size_t)(-(uintptr_t)d) & (WC_LINE - 1);

	if (!n)
		return;
	if (head) {
		size_t k = head < n ? head : n;

		memcpy(d, s, k);
		wc_persist_line(d, insn);
		d += k;
		s += k;
		n -= k;
	}
	for (; n >= WC_LINE; n -= WC_LINE, d += WC_LINE, s += WC_LINE) {
		memcpy(d, s, WC_LINE);
		wc_persist_line(d, insn);
	}
	if (n) {
		memcpy(d, s, n);
		wc_persist_line(d, insn);
	}
}

static inline __attribute__((always_inline)) void
cached_set(char *d, int c, size_t n, enum wc_persist_insn insn)
{
	size_t head = (size_t)(-(uintptr_t)d) & (WC_LINE - 1);

	if (!n)
		return;
	if (head) {
		size_t k = head < n ? head : n;

		memset(d, c, k);
		wc_persist_line(d, insn);
		d += k;
		n -= k;
	}
	for (; n >= WC_LINE; n -= WC_LINE, d += WC_LINE) {
		memset(d, c, WC_LINE);
		wc_persist_line(d, insn);
	}
	if (n) {
		memset(d, c, n);
		wc_persist_line(d, insn);
	}
}

void wc_cached_clflushopt_copy(void *dst, const void *src, size_t n)
{
	cached_copy(dst, src, n, WC_INSN_CLFLUSHOPT);
}

void wc_cached_clflushopt_set(void *dst, int c, size_t n)
{
	cached_set(dst, c, n, WC_INSN_CLFLUSHOPT);
}

void wc_cached_clwb_copy(void *dst, const void *src, size_t n)
{
	cached_copy(dst, src, n, WC_INSN_CLWB);
}

void wc_cached_clwb_set(void *dst, int c, size_t n)
{
	cached_set(dst, c, n, WC_INSN_CLWB);
}

static inline __attribute__((always_inline)) void
flush_range(const void *addr, size_t n, enum wc_persist_insn insn)
{
	uintptr_t p = (uintptr_t)addr & ~(uintptr_t)(WC_LINE - 1);
	uintptr_t end = (uintptr_t)addr + n;

	if (!n)
		return;
	for (; p < end; p += WC_LINE)
		wc_persist_line((const void *)p, insn);
}

void wc_persist_clflushopt(const void *addr, size_t n)
{
	flush_range(addr, n, WC_INSN_CLFLUSHOPT);
}

void wc_persist_clwb(const void *addr, size_t n)
{
	flush_range(addr, n, WC_INSN_CLWB);
}

/* Only for CPUs with neither CLFLUSHOPT nor CLWB: CLFLUSH serialises every
 * line (0.3 GB/s in the seed measurements), but nothing else writes back a
 * cached line there.  No copy path uses it on such a CPU except for the
 * partial head/tail lines of the non-temporal strategies. */
void wc_persist_clflush(const void *addr, size_t n)
{
	flush_range(addr, n, WC_INSN_CLFLUSH);
}

/*
 * The fence.  SFENCE waits until every earlier store of this thread -- the
 * weakly ordered NT stores, and the cached stores whose lines CLFLUSHOPT or
 * CLWB are writing back -- is globally visible, which for a CLFLUSHOPT/CLWB
 * means the write-back reached the memory controller (the ADR domain).  It
 * pairs with whatever the caller stores after drain returns: a commit
 * record written after it can never be persistent before the data.
 * CLFLUSHOPT is not ordered against stores to other lines (SDM), so no
 * cheaper barrier (a compiler barrier, or relying on a later locked op in
 * every caller) would do.  PMDK shipped NT memcpy without this fence
 * (pmem/pmdk#5292); tests/check_flush_trace.c watches it execute.
 */
void wc_drain_sfence(void)
{
	__asm__ volatile("sfence" : : : "memory");
}
