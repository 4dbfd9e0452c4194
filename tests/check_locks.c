/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_locks.c -- the commit lock (lib/storelock.h): mutual exclusion
 * under contention, a sleeping waiter woken by the release, and a wake-up
 * lost to the plain-store release recovered by the waiter's nap.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "util/storelock.h"
#include "testmain.h"

#define THREADS 4
#define ROUNDS 100000

struct shared {
	struct wc_storelock lock;
	uint64_t counter; /* only under the lock */
	atomic_bool acquired;
};

static void *incrementer(void *arg)
{
	struct shared *sh = arg;

	for (unsigned i = 0; i < ROUNDS; i++) {
		wc_storelock_lock(&sh->lock);
		sh->counter++;
		/* Now and then hold it long enough that waiters go to sleep. */
		if (i % 4096 == 0)
			usleep(200);
		wc_storelock_unlock(&sh->lock);
	}
	return NULL;
}

START_TEST(test_storelock_excludes)
{
	static struct shared sh;
	pthread_t t[THREADS];

	wc_storelock_init(&sh.lock);
	sh.counter = 0;
	for (unsigned i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, incrementer, &sh), 0);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(sh.counter, (uint64_t)THREADS * ROUNDS);
	ck_assert(!wc_storelock_is_held(&sh.lock));
}
END_TEST

static void *waiter(void *arg)
{
	struct shared *sh = arg;

	wc_storelock_lock(&sh->lock);
	atomic_store(&sh->acquired, true);
	wc_storelock_unlock(&sh->lock);
	return NULL;
}

/* Until the waiter has marked the word "a waiter may sleep" (after its
 * spins); false if it never does (10 s). */
static bool waiter_asleep(struct shared *sh)
{
	for (unsigned i = 0; i < 10000; i++) {
		if (atomic_load(&sh->lock.word) == 2)
			return true;
		usleep(1000);
	}
	return false;
}

/* `lost`: release the way a racing plain-store release would, with no
 * wake-up; the waiter must still get the lock (its nap ends). */
START_TEST(test_storelock_sleeper)
{
	static struct shared sh;
	bool lost = _i == 1;
	pthread_t t;

	wc_storelock_init(&sh.lock);
	atomic_store(&sh.acquired, false);
	wc_storelock_lock(&sh.lock);
	ck_assert(wc_storelock_is_held(&sh.lock));
	ck_assert_int_eq(pthread_create(&t, NULL, waiter, &sh), 0);
	ck_assert_msg(waiter_asleep(&sh), "the waiter never marked the lock word");
	ck_assert(!atomic_load(&sh.acquired));
	if (lost)
		atomic_store(&sh.lock.word, 0);
	else
		wc_storelock_unlock(&sh.lock);
	pthread_join(t, NULL);
	ck_assert(atomic_load(&sh.acquired));
	ck_assert(!wc_storelock_is_held(&sh.lock));
}
END_TEST

static Suite *locks_suite(void)
{
	Suite *s = suite_create("locks");
	TCase *tc = tcase_create("storelock");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_storelock_excludes);
	tcase_add_loop_test(tc, test_storelock_sleeper, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(locks_suite());
}
