/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dram.c -- the cache's large DRAM tables (entries, hash buckets) on
 * transparent huge pages.
 *
 * Every write looks up a random origin block: one bucket and one entry,
 * anywhere in tables of ~44 bytes per cache block (10 MiB for a 1 GiB cache
 * of 4 KiB blocks, 42 MiB for a million blocks).  With 4 KiB pages nearly
 * every lookup also misses the TLB, and under a hypervisor a page walk is a
 * two-dimensional one.  A 2 MiB page covers 512 times as much; the kernel's
 * dm-writecache gets the same from the direct map.  Where THP is off
 * ("never") madvise fails quietly and the tables stay on small pages.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "util/dram.h"

#define HUGE_2M (2u << 20)

/* Whole huge pages, at least one. */
static size_t table_len(size_t bytes)
{
	size_t len = (bytes + HUGE_2M - 1) & ~(size_t)(HUGE_2M - 1);

	return len ? len : HUGE_2M;
}

void *wc_dram_table(size_t bytes)
{
	size_t len = table_len(bytes);
	void *p;

	/* Anonymous memory is zeroed, as calloc's.  Linux 6.7 and later
	 * align large anonymous mappings to 2 MiB, so every 2 MiB of the table
	 * can be one huge page; on older kernels only the 2 MiB-aligned
	 * interior can. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, len, MADV_HUGEPAGE);
#endif
	return p;
}

void wc_dram_table_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, table_len(bytes));
}
