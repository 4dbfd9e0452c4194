/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api.c -- the public wc_pmem_* copy, flush and fence functions: the
 * process-default policy (policy.c) applied to one range.
 */
#include "engine.h"

void wc_pmem_memcpy(void *pmem_dst, const void *src, size_t n)
{
	wc_flush_copy(wc_flush_default(), pmem_dst, src, n);
}

void wc_pmem_memset(void *pmem_dst, int c, size_t n)
{
	wc_flush_set(wc_flush_default(), pmem_dst, c, n);
}

void wc_pmem_flush(const void *addr, size_t n)
{
	wc_flush_range(wc_flush_default(), addr, n);
}

void wc_pmem_drain(void)
{
	wc_flush_drain(wc_flush_default());
}

/* flush, then the fence: the flush's write-backs are only started until
 * the SFENCE in drain waits for them. */
void wc_pmem_persist(const void *addr, size_t n)
{
	const struct wc_flush_policy *p = wc_flush_default();

	wc_flush_range(p, addr, n);
	wc_flush_drain(p);
}
