/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * generic.c -- libpmem2's own functions for CACHE_LINE granularity.
 *
 * Off x86-64 these are the engine: no CPUID, no hand-written stores, and
 * libpmem2 knows its architecture's write-back instructions (e.g. DC CVAP on
 * aarch64).  On x86-64 they are built too, as the "pmem2" strategy the tests
 * and wcbench compare against, so this file never rots.
 *
 * libpmem2 gives out its functions only for a mapping.  At CACHE_LINE
 * granularity they do not depend on it (the flush loops over any address;
 * memcpy is its threshold logic + that flush), so one anonymous page wrapped
 * with pmem2_map_from_existing() yields functions that work on any address.
 * Copies pass PMEM2_F_MEM_NODRAIN: the drain stays a separate step.
 */
#include <errno.h>
#include <libpmem2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "flush/engine.h"
#include "util/error.h"

/* Kept for the life of the process: the functions are libpmem2's
 * process-wide choice, the map only the way to ask for them.  Volatile, or
 * the compiler drops the never-read stores and leak checkers report them. */
static struct pmem2_source *volatile pm_source;
static struct pmem2_map *volatile pm_map;
static pmem2_memcpy_fn pm_memcpy;
static pmem2_memset_fn pm_memset;
static pmem2_flush_fn pm_flush;
static pmem2_drain_fn pm_drain;
static int init_error;
static char init_msg[256];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
	struct pmem2_source *src = NULL;
	struct pmem2_map *map = NULL;
	long page = sysconf(_SC_PAGESIZE);
	void *addr;
	int ret;

	addr = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (addr == MAP_FAILED) {
		init_error = -errno;
		snprintf(init_msg, sizeof(init_msg), "libpmem2 functions: mmap of one page: %s",
		         strerror(errno));
		return;
	}
	ret = pmem2_source_from_anon(&src, (size_t)page);
	if (ret == 0)
		ret = pmem2_map_from_existing(&map, src, addr, (size_t)page,
		                              PMEM2_GRANULARITY_CACHE_LINE);
	if (ret) {
		init_error = -ENOTSUP;
		snprintf(init_msg, sizeof(init_msg),
		         "libpmem2 functions: pmem2_map_from_existing(CACHE_LINE): %s",
		         pmem2_errormsg());
		if (src)
			pmem2_source_delete(&src);
		munmap(addr, (size_t)page);
		return;
	}
	pm_source = src;
	pm_map = map;
	pm_memcpy = pmem2_get_memcpy_fn(map);
	pm_memset = pmem2_get_memset_fn(map);
	pm_flush = pmem2_get_flush_fn(map);
	pm_drain = pmem2_get_drain_fn(map);
}

int wc_generic_init(void)
{
	pthread_once(&init_once, init);
	if (init_error)
		return wc_err(init_error, "%s", init_msg);
	return 0;
}

void wc_generic_copy(void *dst, const void *src, size_t n)
{
	pm_memcpy(dst, src, n, PMEM2_F_MEM_NODRAIN);
}

void wc_generic_set(void *dst, int c, size_t n)
{
	pm_memset(dst, c, n, PMEM2_F_MEM_NODRAIN);
}

void wc_generic_flush(const void *addr, size_t n)
{
	pm_flush(addr, n);
}

void wc_generic_drain(void)
{
	pm_drain();
}
