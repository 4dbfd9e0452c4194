/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spinlock.h -- the lock of a shard and of a free list.
 *
 * Both are held for a few hundred nanoseconds at most (no copy, no I/O, no
 * wait inside), and taken once per write: a pthread mutex costs two locked
 * instructions per round (its unlock is an exchange), this lock one (the
 * unlock is a plain release store).  A waiter spins a little,
 * then yields its CPU: a holder preempted on an overcommitted machine gets
 * it back.
 */
#ifndef WC_SPINLOCK_H
#define WC_SPINLOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#ifdef WC_DEBUG
#include <pthread.h>
#include <stdint.h>
#endif

#include "util/debug.h"

struct wc_spinlock {
	atomic_uint held;
#ifdef WC_DEBUG
	/* The holder (pthread_self), for wc_spin_held_by_me(). */
	_Atomic uintptr_t owner;
#endif
};

static inline void wc_spin_pause(unsigned *spins)
{
	if (++*spins > 128)
		sched_yield();
#if defined(__x86_64__) || defined(__i386__)
	else
		__builtin_ia32_pause();
#endif
}

static inline void wc_spin_lock(struct wc_spinlock *l)
{
	unsigned spins = 0;

	/* Sequentially consistent: commit.c's epoch argument orders this
	 * acquisition before the holder's load of the epoch. */
	while (atomic_exchange_explicit(&l->held, 1, memory_order_seq_cst)) {
		while (atomic_load_explicit(&l->held, memory_order_relaxed))
			wc_spin_pause(&spins);
	}
#ifdef WC_DEBUG
	atomic_store_explicit(&l->owner, (uintptr_t)pthread_self(), memory_order_relaxed);
#endif
}

static inline void wc_spin_unlock(struct wc_spinlock *l)
{
#ifdef WC_DEBUG
	WC_ASSERT(atomic_load_explicit(&l->owner, memory_order_relaxed) == (uintptr_t)pthread_self());
	atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
#endif
	atomic_store_explicit(&l->held, 0, memory_order_release);
}

static inline bool wc_spin_is_held(struct wc_spinlock *l)
{
	return atomic_load_explicit(&l->held, memory_order_seq_cst) != 0;
}

/* For WC_ASSERT only.  Only meaningful to the thread asking: nobody else
 * stores its id.  A normal build has no owner field (and never calls it). */
static inline bool wc_spin_held_by_me(struct wc_spinlock *l)
{
#ifdef WC_DEBUG
	return atomic_load_explicit(&l->held, memory_order_relaxed) &&
	       atomic_load_explicit(&l->owner, memory_order_relaxed) == (uintptr_t)pthread_self();
#else
	return atomic_load_explicit(&l->held, memory_order_relaxed);
#endif
}

#endif /* WC_SPINLOCK_H */
