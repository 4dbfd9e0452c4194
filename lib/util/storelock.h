/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * storelock.h -- the commit lock: a sleeping mutex whose release is a store.
 *
 * Why not a pthread mutex.  A commit ends with its drain (SFENCE), and on
 * x86 a fence does not stall the CPU: later stores wait behind the flushed
 * lines, the instructions run on.  The first locked instruction after it
 * does stall until the lines are written back, and a pthread mutex's unlock
 * is one (an exchange): a FUA write sat in its own unlock for the ~200 ns of
 * its commit's write-backs (perf annotate: the exchange after the drain
 * took a quarter of a QD1 FUA write) instead of returning while they
 * complete, as raw pmem's pmem_drain returns.  Nothing a caller does after
 * the return can overtake the drain: every later store is ordered after it.
 *
 * The word: 0 free, 1 held, 2 held and a waiter may sleep.  An uncontended
 * round is one compare-exchange (taken before the commit's flushes, so it
 * waits for nothing) and one release store.  A waiter spins a little, then
 * marks the word 2 and sleeps on a futex; a release that finds 2 wakes one.
 * A release that read 1 stores 0 without a read-modify-write, so a waiter
 * marking the word between that load and that store is not woken: it sleeps
 * at most WC_STORELOCK_NAP_NS and tries again.  That window is a few
 * instructions wide; waiting for a whole commit is the common case, and it
 * is woken.  Not recursive; only the holder releases it.
 */
#ifndef WC_STORELOCK_H
#define WC_STORELOCK_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WC_STORELOCK_NAP_NS 100000 /* the longest a lost wake-up costs */

struct wc_storelock {
	atomic_uint word;
};

static inline void wc_storelock_init(struct wc_storelock *l)
{
	atomic_init(&l->word, 0);
}

static inline void wc_storelock_futex(struct wc_storelock *l, int op, unsigned val,
                                      const struct timespec *timeout)
{
	syscall(SYS_futex, &l->word, op | FUTEX_PRIVATE_FLAG, val, timeout, NULL, 0);
}

static inline bool wc_storelock_try(struct wc_storelock *l)
{
	unsigned free_word = 0;

	return atomic_compare_exchange_strong_explicit(&l->word, &free_word, 1, memory_order_acquire,
	                                               memory_order_relaxed);
}

static inline void wc_storelock_lock(struct wc_storelock *l)
{
	const struct timespec nap = { 0, WC_STORELOCK_NAP_NS };

	if (wc_storelock_try(l))
		return;
	/* A commit takes a few microseconds: spin that long first. */
	for (unsigned spins = 0; spins < 128; spins++) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		if (atomic_load_explicit(&l->word, memory_order_relaxed) == 0 && wc_storelock_try(l))
			return;
	}
	/* Taken as 2: our release then wakes whoever else waits. */
	while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
		wc_storelock_futex(l, FUTEX_WAIT, 2, &nap);
}

static inline void wc_storelock_unlock(struct wc_storelock *l)
{
	if (atomic_load_explicit(&l->word, memory_order_relaxed) == 1) {
		atomic_store_explicit(&l->word, 0, memory_order_release);
		return;
	}
	atomic_store_explicit(&l->word, 0, memory_order_release);
	wc_storelock_futex(l, FUTEX_WAKE, 1, NULL);
}

/* Held by some thread.  For WC_ASSERT. */
static inline bool wc_storelock_is_held(struct wc_storelock *l)
{
	return atomic_load_explicit(&l->word, memory_order_relaxed) != 0;
}

#endif
