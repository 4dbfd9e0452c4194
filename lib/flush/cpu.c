/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu.c -- what the CPU can do, read once with CPUID, and the per-CPU quirk
 * table.
 *
 * A feature counts only if the CPU has it *and* it is usable: AVX2 and
 * AVX-512 also need the OS to save their register state (OSXSAVE + XCR0),
 * otherwise the first wide store faults.  PMDK checks the CPUID bit only.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "flush/engine.h"

/*
 * The quirk table: what a measurement cannot see -- a CPU on which a
 * strategy is wrong (loses data, faults, serialises where the manual says
 * it does not), not merely slow.  Speed is measured on the running machine
 * (calibrate.c): which non-temporal width, and whether the cached path wins
 * anywhere.  The table once held three "non-temporal is good" entries (Zen
 * 1 EPYC 0x17/0x01, Zen 4 EPYC 0x19/0x11, Zen 5 EPYC 0x1a/0x02), each
 * backed by a measurement that the first-use calibration now repeats on
 * every machine, and which could not say that Zen 4 moves more with 256-bit
 * stores than with 512-bit ones; docs/flush-engine.md keeps their figures.
 * No CPU met so far needs an entry.  An entry names the model range it was
 * measured on and what was seen.
 */
static const struct wc_cpu_quirk quirks[] = {
	{ NULL, 0, 0, 0, 0, NULL }, /* end */
};

/* Test-only: a table to search instead (ends with a NULL vendor). */
const struct wc_cpu_quirk *wc_cpu_quirks_for_test;

const struct wc_cpu_quirk *wc_cpu_quirk_find(const struct wc_cpu *cpu)
{
	const struct wc_cpu_quirk *q = wc_cpu_quirks_for_test ? wc_cpu_quirks_for_test : quirks;

	for (; q->vendor; q++)
		if (strcmp(q->vendor, cpu->vendor) == 0 && q->family == cpu->family &&
		    cpu->model >= q->model_min && cpu->model <= q->model_max)
			return q;
	return NULL;
}

static struct wc_cpu the_cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
/* XCR0 bits: the state components the OS saves on a context switch. */
#define XCR0_SSE      (1u << 1)
#define XCR0_AVX      (1u << 2)
#define XCR0_OPMASK   (1u << 5)
#define XCR0_ZMM_HI   (1u << 6)
#define XCR0_HI16_ZMM (1u << 7)

static uint64_t read_xcr0(void)
{
	uint32_t lo, hi;

	/* XGETBV with ECX = 0 (as bytes: older assemblers lack the name). */
	__asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static void detect(struct wc_cpu *cpu)
{
	unsigned eax, ebx, ecx, edx, max_leaf;
	unsigned base_family, base_model;
	uint64_t xcr0 = 0;

	if (!__get_cpuid(0, &max_leaf, &ebx, &ecx, &edx))
		return;
	memcpy(cpu->vendor + 0, &ebx, 4);
	memcpy(cpu->vendor + 4, &edx, 4);
	memcpy(cpu->vendor + 8, &ecx, 4);
	cpu->vendor[12] = '\0';

	if (max_leaf < 1)
		return;
	__cpuid(1, eax, ebx, ecx, edx);
	base_family = (eax >> 8) & 0xf;
	base_model = (eax >> 4) & 0xf;
	cpu->stepping = eax & 0xf;
	cpu->family = base_family;
	if (base_family == 0xf)
		cpu->family += (eax >> 20) & 0xff;
	cpu->model = base_model;
	if (base_family == 0x6 || base_family == 0xf)
		cpu->model |= ((eax >> 16) & 0xf) << 4;
	if (edx & (1u << 19)) {
		cpu->features |= WC_CPU_CLFLUSH;
		cpu->line_size = ((ebx >> 8) & 0xff) * 8;
	}
	if (edx & (1u << 26))
		cpu->features |= WC_CPU_SSE2;
	if (ecx & (1u << 20))
		cpu->features |= WC_CPU_SSE42;
	if (ecx & (1u << 27)) /* OSXSAVE: XGETBV is allowed */
		xcr0 = read_xcr0();

	if (max_leaf < 7)
		return;
	__cpuid_count(7, 0, eax, ebx, ecx, edx);
	if (ebx & (1u << 23))
		cpu->features |= WC_CPU_CLFLUSHOPT;
	if (ebx & (1u << 24))
		cpu->features |= WC_CPU_CLWB;
	if (ecx & (1u << 28))
		cpu->features |= WC_CPU_MOVDIR64B;
	if ((ebx & (1u << 5)) && (xcr0 & (XCR0_SSE | XCR0_AVX)) == (XCR0_SSE | XCR0_AVX))
		cpu->features |= WC_CPU_AVX2;
	if ((ebx & (1u << 16)) &&
	    (xcr0 & (XCR0_SSE | XCR0_AVX | XCR0_OPMASK | XCR0_ZMM_HI | XCR0_HI16_ZMM)) ==
	            (XCR0_SSE | XCR0_AVX | XCR0_OPMASK | XCR0_ZMM_HI | XCR0_HI16_ZMM))
		cpu->features |= WC_CPU_AVX512F;
}
#else
static void detect(struct wc_cpu *cpu)
{
	long line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);

	/* No CPUID: libpmem2's functions do the work (generic.c). */
	cpu->line_size = line > 0 ? (unsigned)line : 64;
}
#endif

enum wc_persist_insn wc_partial_flush_insn = WC_INSN_CLFLUSHOPT;

/*
 * CLWB first: store + write-back + SFENCE of one line took 157 ns with CLWB
 * and 197 ns with CLFLUSHOPT on a Zen 4 EPYC, family 0x19 model 0x11 (cold lines;
 * 143 vs 183 ns hot, medians of 31 runs), and PMDK and the kernel's
 * memcpy_flushcache prefer it too.  A partial line is re-written by the
 * next copy more often than not, so keeping it cached costs nothing.
 */
static void cpu_init(void)
{
	detect(&the_cpu);
	if (the_cpu.features & WC_CPU_CLWB)
		wc_partial_flush_insn = WC_INSN_CLWB;
	else if (the_cpu.features & WC_CPU_CLFLUSHOPT)
		wc_partial_flush_insn = WC_INSN_CLFLUSHOPT;
	else
		wc_partial_flush_insn = WC_INSN_CLFLUSH;
}

const struct wc_cpu *wc_cpu_get(void)
{
	pthread_once(&cpu_once, cpu_init);
	return &the_cpu;
}
