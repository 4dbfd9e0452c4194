/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * granularity.c -- the copy functions for mappings that are not CACHE_LINE:
 *   BYTE (eADR: the CPU caches are inside the persistence domain): plain
 *        stores, no flush; drain stays SFENCE to order them against later
 *        stores, as libpmem2 does;
 *   PAGE (a file without MAP_SYNC/DAX): plain stores, then libpmem2's flush
 *        function for that mapping, which msyncs the pages.
 */
#include <stdatomic.h>
#include <string.h>

#include "flush/engine.h"

void wc_plain_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

void wc_plain_set(void *dst, int c, size_t n)
{
	memset(dst, c, n);
}

void wc_persist_noop(const void *addr, size_t n)
{
}

/*
 * libpmem2 hands every PAGE mapping the same flush function (it finds the
 * mapping by address and msyncs the pages), so one remembered pointer
 * serves every PAGE policy: the copy functions have no room for a context.
 */
static _Atomic(wc_range_fn) page_flush_fn;

void wc_page_flush_install(wc_range_fn page_flush)
{
	atomic_store_explicit(&page_flush_fn, page_flush, memory_order_release);
}

void wc_page_copy(void *dst, const void *src, size_t n)
{
	wc_range_fn flush = atomic_load_explicit(&page_flush_fn, memory_order_acquire);

	memcpy(dst, src, n);
	if (n && flush)
		flush(dst, n);
}

void wc_page_set(void *dst, int c, size_t n)
{
	wc_range_fn flush = atomic_load_explicit(&page_flush_fn, memory_order_acquire);

	memset(dst, c, n);
	if (n && flush)
		flush(dst, n);
}
