/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spinlock.h -- the lock of a shard and of a free list.
 *
 * Both are held for a few hundred nanoseconds at most (no copy, no I/O, no
 * wait inside), and taken once per write: a pthread mutex costs two locked
 * instructions per round (its unlock is an exchange), this lock one (the
 * unlock is a plain release store).  The lock word is readable, which lets
 * a commit see that no writer still publishes into an old epoch without a
 * counter of its own (commit.c, wait_epoch_quiet).  A waiter spins a little,
 * then yields its CPU: a holder preempted on an overcommitted machine gets
 * it back.
 */
#ifndef WC_SPINLOCK_H
#define WC_SPINLOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

struct wc_spinlock {
	atomic_uint held;
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
}

static inline void wc_spin_unlock(struct wc_spinlock *l)
{
	atomic_store_explicit(&l->held, 0, memory_order_release);
}

static inline bool wc_spin_is_held(struct wc_spinlock *l)
{
	return atomic_load_explicit(&l->held, memory_order_seq_cst) != 0;
}

#endif /* WC_SPINLOCK_H */
