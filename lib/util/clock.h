/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.h -- the library's clocks, in one place.
 */
#ifndef WC_CLOCK_H
#define WC_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds: latencies, deadlines, backoff. */
static inline uint64_t wc_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Monotonic milliseconds from the coarse clock (a few ns instead of ~20;
 * its tick, 1-4 ms, is finer than anything measured with it). */
static inline uint64_t wc_clock_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The CLOCK_REALTIME instant `ms` from now, for pthread_cond_timedwait. */
static inline struct timespec wc_clock_deadline_ms(unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif /* WC_CLOCK_H */
