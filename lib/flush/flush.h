/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flush.h -- the flush engine's internal contract, shared by the files of lib/flush,
 * the cache (lib/), the admin interface and the tests.
 *
 * Its names start with wc_persist_, apart from the public wc_pmem_* of
 * wcache.h and from wc_flush(), which is a cache's commit, not an engine
 * call.
 *
 * A `struct wc_persist_policy` is a resolved policy: the functions chosen for
 * small and large copies, the flush and the drain, for one mapping
 * granularity.  The process default (wc_pmem_* in wcache.h) is one policy;
 * every cache resolves its own, so two caches may differ.
 *
 * Ordering rules (the whole point of the engine):
 *  - copy, set, flush and store8 start write-back but never fence;
 *  - drain is the only fence (SFENCE on x86): after it, everything the
 *    calling thread copied, set, flushed or stored through the engine is in
 *    the persistence domain;
 *  - the observer, when set, sees every range as it is written and every
 *    drain: that is what the power-failure simulator records.  Nothing the
 *    cache persists may bypass these functions.
 */
#ifndef WC_FLUSH_H
#define WC_FLUSH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wcache.h"

enum wc_granularity {
	WC_GRAN_BYTE = 0,   /* eADR: caches are persistent; stores + drain */
	WC_GRAN_CACHE_LINE, /* ADR: the engine's flushes + drain */
	WC_GRAN_PAGE,       /* not DAX: libpmem2's msync-based persist */
};

typedef void (*wc_copy_fn)(void *dst, const void *src, size_t n);
typedef void (*wc_set_fn)(void *dst, int c, size_t n);
typedef void (*wc_range_fn)(const void *addr, size_t n);
typedef void (*wc_drain_fn)(void);

/* Test hook: told of every persistence event of one policy. */
struct wc_persist_observer {
	/* [addr, addr+n) was written and its write-back started; it becomes
	 * persistent at the next drain.  `atomic8` marks an aligned 8-byte
	 * store that can never tear (the commit record). */
	void (*written)(void *ctx, const void *addr, size_t n, int atomic8);
	/* A drain (fence) completed. */
	void (*drained)(void *ctx);
	void *ctx;
};

struct wc_persist_policy {
	enum wc_granularity gran;
	size_t threshold;               /* copies >= threshold take the large path */
	wc_copy_fn copy_small, copy_large;
	wc_set_fn set_small, set_large;
	wc_range_fn flush;              /* write back cached stores */
	wc_drain_fn drain;              /* the fence */
	const struct wc_persist_observer *observer; /* NULL outside tests */
	struct wc_pmem_info info;       /* what is in force, and why */
	/* additions: the CACHE_LINE choice, kept so that
	 * wc_persist_policy_set_granularity() can return to it */
	struct {
		size_t threshold;
		wc_copy_fn copy_small, copy_large;
		wc_set_fn set_small, set_large;
		wc_range_fn flush;
		const char *small_strategy, *large_strategy, *reason;
	} line;
};

/*
 * Resolve a policy from `cfg` (NULL or all-zero = the process default, which
 * includes the WC_PMEM_* environment) for CACHE_LINE granularity.
 * 0 or -EINVAL/-ENOTSUP with a message.
 * (Details: all-zero copies the policy wc_pmem_configure() last installed;
 * otherwise the fields left 0 take the environment's values and `disable`
 * adds the environment's bits.  A bad WC_PMEM_* value is -EINVAL here.)
 */
int wc_persist_policy_init(struct wc_persist_policy *p, const struct wc_pmem_config *cfg);

/*
 * Adapt a resolved policy to a mapping's granularity.  For WC_GRAN_PAGE the
 * caller passes libpmem2's flush and drain functions of that mapping
 * (pmem2_get_flush_fn / pmem2_get_drain_fn); they are ignored otherwise.
 */
void wc_persist_policy_set_granularity(struct wc_persist_policy *p, enum wc_granularity g,
                                     wc_range_fn page_flush, wc_drain_fn page_drain);

/* The process-wide default policy (resolved once, thread-safe).  The
 * fast path is inline: the public wc_pmem_* functions call it per copy, and
 * an out-of-line call (whose prologue also paid for the slow path's frame)
 * cost a third of a 64-byte copy with one fence per 64 copies. */
extern _Atomic(const struct wc_persist_policy *) wc_persist_current
        __attribute__((visibility("hidden"))); /* no GOT load in the shared library */
const struct wc_persist_policy *wc_persist_default_slow(void);

static inline const struct wc_persist_policy *wc_persist_default(void)
{
	/* Pairs with the release store that publishes a resolved policy. */
	const struct wc_persist_policy *p =
	        atomic_load_explicit(&wc_persist_current, memory_order_acquire);

	if (__builtin_expect(p != NULL, 1))
		return p;
	return wc_persist_default_slow();
}

static inline void wc_persist_copy(const struct wc_persist_policy *p, void *dst,
                                 const void *src, size_t n)
{
	(n < p->threshold ? p->copy_small : p->copy_large)(dst, src, n);
	if (__builtin_expect(p->observer != NULL, 0))
		p->observer->written(p->observer->ctx, dst, n, 0);
}

static inline void wc_persist_set(const struct wc_persist_policy *p, void *dst, int c, size_t n)
{
	(n < p->threshold ? p->set_small : p->set_large)(dst, c, n);
	if (__builtin_expect(p->observer != NULL, 0))
		p->observer->written(p->observer->ctx, dst, n, 0);
}

/* Write back [addr, addr+n) that the caller stored with plain stores. */
static inline void wc_persist_range(const struct wc_persist_policy *p, const void *addr, size_t n)
{
	p->flush(addr, n);
	if (__builtin_expect(p->observer != NULL, 0))
		p->observer->written(p->observer->ctx, addr, n, 0);
}

/* One aligned 8-byte store that cannot tear, then write-back of its line. */
static inline void wc_persist_store8(const struct wc_persist_policy *p, uint64_t *dst, uint64_t v)
{
	__atomic_store_n(dst, v, __ATOMIC_RELEASE);
	p->flush(dst, sizeof(*dst));
	if (__builtin_expect(p->observer != NULL, 0))
		p->observer->written(p->observer->ctx, dst, sizeof(*dst), 1);
}

static inline void wc_persist_drain(const struct wc_persist_policy *p)
{
	p->drain();
	if (__builtin_expect(p->observer != NULL, 0))
		p->observer->drained(p->observer->ctx);
}

/*
 * Make what the calling thread copied, set or flushed so far persistent
 * before anything it stores after its next LOCK-prefixed instruction, which
 * the caller guarantees comes next (a mutex acquisition, an atomic
 * read-modify-write).  On x86 with CACHE_LINE or BYTE granularity that
 * instruction is the fence: it empties the write-combining buffers of
 * non-temporal stores and waits for earlier CLFLUSHOPT/CLWB (Intel SDM
 * vol. 3 11.3.1 and vol. 2 CLFLUSHOPT; AMD APM vol. 2 7.4.2), so no SFENCE
 * is issued.  Elsewhere (other architectures, libpmem2's page flush) this
 * drains.  The observer sees a drain either way: the power-failure
 * simulator persists the thread's snapshots here.
 */
static inline void wc_persist_order_before_lock(const struct wc_persist_policy *p)
{
#if defined(__x86_64__)
	if (p->gran != WC_GRAN_PAGE) {
		if (__builtin_expect(p->observer != NULL, 0))
			p->observer->drained(p->observer->ctx);
		return;
	}
#endif
	wc_persist_drain(p);
}

#endif /* WC_FLUSH_H */
