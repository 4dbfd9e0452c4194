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
 * The quirk table: CPUs on which a measurement showed non-temporal stores
 * beating cached stores + CLFLUSHOPT at every size, so the size switch is
 * off (the idea of the kernel's X86_FEATURE_NT_GOOD).  Every entry carries
 * the measurement that justifies it; re-measure with `wcbench flush` (and
 * `wcbench calibrate`) when a new CPU or memory type shows up.
 */
static const struct wc_cpu_quirk quirks[] = {
	/*
	 * AMD Zen 4 EPYC 9004 ("Genoa"): family 0x19, model 0x11.
	 * Measured on stepping 1 (2-vCPU KVM guest, 32 MiB L3), 2026-11-30,
	 * `wcbench flush --runs 15 --slices 7` on /dev/shm with CACHE_LINE
	 * granularity forced, destination streaming over 256 MiB; GB/s of
	 * nt-avx512 / cached+clflushopt / cached+clwb:
	 *              fence per copy          one fence per 64 copies
	 *     64 B     0.66 /  0.32 /  0.40    12.3 /  9.9 / 11.0
	 *     768 B    6.35 /  3.19 /  3.82    23.0 / 15.4 / 16.0
	 *     4 KiB   16.9  / 10.6  / 11.6     26.9 / 17.4 / 17.9
	 *     1 MiB   27.4  / 13.0  / 13.1     27.4 / 13.0 / 13.2
	 *     64 MiB  14.5  /  8.9  /  8.9     14.5 /  9.0 /  8.5
	 * NT is 1.2-2.1x cached+clflushopt at every size; `wcbench calibrate`
	 * finds no crossover from 256 B to 64 KiB (cached 1.4-2.3x slower).
	 * Cached stores pay a read-for-ownership of every cold line that NT
	 * stores skip, and the write-back then waits for that line to travel
	 * back out; NT stores send each line once.  AMD platforms
	 * never took Optane DIMMs: persistent memory here is NVDIMM-N or CXL
	 * memory, DRAM behind the memory controller as in this measurement.
	 * Other Zen 4 models (0x10, 0x18, 0x61, 0xa0...) are probably alike
	 * but unmeasured: measure before widening the range.
	 */
	{ "AuthenticAMD", 0x19, 0x11, 0x11, WC_QUIRK_NT_GOOD,
	  "cpu quirk nt-good (AMD family 0x19 model 0x11, Zen 4 EPYC: "
	  "NT 1.2-2.1x cached+clflushopt at every size)" },
	/*
	 * AMD Zen 1 EPYC 7001 ("Naples"): family 0x17, model 0x01.  AVX2 and
	 * CLFLUSHOPT, no CLWB, no AVX-512.  Measured on a 2-vCPU guest,
	 * 2026-11-30, by a user trying the library on a clean clone:
	 * `wcbench calibrate` found 4 KiB fenced 203 ns with nt-avx2 against
	 * 461 ns with cached+clflushopt, and NT winning at every size; with
	 * the 768-byte rule `wcbench flush` showed the engine at 0.62-0.73x
	 * the best single strategy from 768 B up, and `wcbench run` (4 KiB
	 * random writes) gave 694 K IOPS against 1,018 K with NT at every
	 * size (+47%).  Zen 2/3 (0x17 model 0x31, 0x19 model 0x01) are
	 * unmeasured: the first-use measurement decides there.
	 */
	{ "AuthenticAMD", 0x17, 0x01, 0x01, WC_QUIRK_NT_GOOD,
	  "cpu quirk nt-good (AMD family 0x17 model 0x01, Zen 1 EPYC: "
	  "NT 2.3x cached+clflushopt at 4 KiB, no crossover)" },
	/*
	 * AMD Zen 5 EPYC 9005 ("Turin"): family 0x1a, model 0x02.  Measured on
	 * stepping 1 (2-vCPU KVM guest), 2026-12-01, `wcbench flush` (7 runs,
	 * 4 ms samples) on /dev/shm with CACHE_LINE granularity forced,
	 * destination streaming over 256 MiB; GB/s of nt-avx512 /
	 * cached+clflushopt / cached+clwb:
	 *              fence per copy          one fence per 64 copies
	 *     64 B     0.52 /  0.26 /  0.33    12.1 /  8.8 / 10.5
	 *     768 B    5.14 /  2.64 /  3.23    28.6 / 17.7 / 22.2
	 *     4 KiB   17.4  /  9.8  / 11.4     33.9 / 19.3 / 22.8
	 *     1 MiB   33.7  / 16.1  / 19.1     33.2 / 16.3 / 18.9
	 *     64 MiB  22.8  / 14.2  / 15.7     23.0 / 14.2 / 15.5
	 * `wcbench calibrate --rounds 9`: no crossover from 256 B to 64 KiB,
	 * 4 KiB fenced 204 ns NT vs 417 ns cached+clflushopt (cached 1.1-2.5x
	 * slower at every point).  A second run under load from another
	 * benchmark on the same 2 vCPUs had cached+clwb ahead by up to 20% at
	 * 64-512 B with one fence per 64 copies, NT ahead everywhere else:
	 * re-measure on a quiet machine before trusting small batched sizes.
	 */
	{ "AuthenticAMD", 0x1a, 0x02, 0x02, WC_QUIRK_NT_GOOD,
	  "cpu quirk nt-good (AMD family 0x1a model 0x02, Zen 5 EPYC: "
	  "NT 1.4-2.1x cached+clflushopt at every size)" },
};

const struct wc_cpu_quirk *wc_cpu_quirk_find(const struct wc_cpu *cpu)
{
	for (size_t i = 0; i < sizeof(quirks) / sizeof(quirks[0]); i++) {
		const struct wc_cpu_quirk *q = &quirks[i];

		if (strcmp(q->vendor, cpu->vendor) == 0 && q->family == cpu->family &&
		    cpu->model >= q->model_min && cpu->model <= q->model_max)
			return q;
	}
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
 * and 197 ns with CLFLUSHOPT on the Zen 4 of the quirk table (cold lines;
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
