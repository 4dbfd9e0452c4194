/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * api.c -- the public wc_pmem_* copy, flush and fence functions: the
 * process-default policy (policy.c) applied to one range.
 *
 * The process default never carries an observer (only a cache's own policy
 * does, when the power-failure simulator watches it), so these call the
 * chosen strategy directly and leave through it (a tail call): per copy
 * that is one load of the policy, one compare and one indirect jump.  At
 * 64 bytes with one fence per 64 copies, the earlier path -- an
 * out-of-line wc_persist_default() with a large frame, then the copy, then an
 * observer check -- ran at 0.70x a bare AVX-512 non-temporal loop on Zen 5
 * (0.72x AVX2 on Zen 1); `wcbench flush` shows both side by side.
 */
#include "flush/engine.h"

void wc_pmem_memcpy(void *pmem_dst, const void *src, size_t n)
{
	const struct wc_persist_policy *p = wc_persist_default();

	(n < p->threshold ? p->copy_small : p->copy_large)(pmem_dst, src, n);
}

void wc_pmem_memset(void *pmem_dst, int c, size_t n)
{
	const struct wc_persist_policy *p = wc_persist_default();

	(n < p->threshold ? p->set_small : p->set_large)(pmem_dst, c, n);
}

void wc_pmem_flush(const void *addr, size_t n)
{
	wc_persist_default()->flush(addr, n);
}

void wc_pmem_drain(void)
{
	wc_persist_default()->drain();
}

/* flush, then the fence: the flush's write-backs are only started until
 * the SFENCE in drain waits for them. */
void wc_pmem_persist(const void *addr, size_t n)
{
	const struct wc_persist_policy *p = wc_persist_default();

	p->flush(addr, n);
	p->drain();
}
