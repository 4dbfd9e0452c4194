/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writers.c -- writer slots: taken, marked, waited for and given back.
 *
 * A commit closes epoch e by moving the epoch to e + 1, then must know that
 * no writer still publishes into e.  Each writing thread has a slot of its
 * own (a line it alone stores to): it marks itself active around a
 * publication and marks the shards it published into per epoch parity.  The
 * commit waits for active slots and reads the marks, instead of looking at
 * all sixty-four shard locks -- which a FUA write's commit used to do.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core/cache.h"
#include "util/debug.h"
#include "util/spinlock.h"

void wc_writers_init(struct wc_cache *c)
{
	/* Unused slots start owned: the thread that counts one in with
	 * wc_writer_slot_take is the only one that can have it. */
	c->writers.slot[WC_WRITER_SLOTS - 1].shared = true;
	for (unsigned k = 0; k < WC_WRITER_SLOTS; k++)
		c->writers.slot[k].owned = 1;
}

/* The writer slots in use: a thread's slot is taken before its first
 * publication, by a locked instruction (wc_writer_slot_take). */
static unsigned slots_in_use(struct wc_cache *c)
{
	unsigned n = atomic_load(&c->writers.used);

	return n < WC_WRITER_SLOTS ? n : WC_WRITER_SLOTS;
}

uint64_t wc_writers_logged(struct wc_cache *c, unsigned par)
{
	uint64_t logged = 0;

	for (unsigned k = 0, n = slots_in_use(c); k < n; k++)
		logged |= __atomic_load_n(&c->writers.slot[k].shards[par], __ATOMIC_RELAXED);
	return logged;
}

/* No lock: the epoch of this parity is the next writers' but one, and the
 * commit of e + 1 must end before anyone marks here again. */
void wc_writers_clear(struct wc_cache *c, unsigned par)
{
	for (unsigned k = 0, n = slots_in_use(c); k < n; k++)
		if (__atomic_load_n(&c->writers.slot[k].shards[par], __ATOMIC_RELAXED))
			__atomic_store_n(&c->writers.slot[k].shards[par], 0, __ATOMIC_RELAXED);
}

/* A writer marks its slot active (wc_writer_enter), then takes its shard
 * lock, whose exchange orders that store before its read of the epoch; the
 * commit stored e + 1 with a locked instruction before it looks at the
 * slot.  So either the writer read e + 1, or we see its slot active and
 * wait until it exits, after its unlock, its entries, log slots and mark
 * stored. */
bool wc_writers_wait_quiet(struct wc_cache *c)
{
	unsigned n = slots_in_use(c);

	for (unsigned k = 0; k < n; k++) {
		struct wc_writer_slot *w = &c->writers.slot[k];
		unsigned spins = 0;

		while (__atomic_load_n(&w->active, __ATOMIC_ACQUIRE))
			wc_spin_pause(&spins);
	}
	return n == WC_WRITER_SLOTS;
}

/* A thread's first publication into c takes a slot an exited thread gave
 * back, else the next unused one, else the shared last one.  An unused slot
 * is counted in by a locked instruction before the thread first marks
 * itself active, so a commit that does not count it committed before the
 * thread's first read of the epoch; a slot given back is counted already.
 * It keeps the marks its last owner left (its epochs' logs are still to be
 * committed), and its owner was outside any publication when it gave it
 * back (active 0): the new owner starts where one thread would.  Without
 * giving back, a process that kept starting writer threads (an NBD server's
 * connections) ended on the shared slot: a locked OR per write and commits
 * that look at every shard lock. */
static struct wc_writer_slot *slot_take(struct wc_cache *c)
{
	unsigned n = slots_in_use(c), k;

	for (k = 0; k < n && k < WC_WRITER_SLOTS - 1; k++) {
		struct wc_writer_slot *w = &c->writers.slot[k];
		uint32_t given_back = 0;

		if (!__atomic_load_n(&w->owned, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&w->owned, &given_back, 1, false, __ATOMIC_ACQUIRE,
		                                __ATOMIC_RELAXED))
			return w;
	}
	k = atomic_load(&c->writers.used);
	while (k < WC_WRITER_SLOTS && !atomic_compare_exchange_weak(&c->writers.used, &k, k + 1))
		;
	/* Unused slots start owned (wc_writers_init): nobody else can take
	 * the one just counted. */
	return &c->writers.slot[k < WC_WRITER_SLOTS - 1 ? k : WC_WRITER_SLOTS - 1];
}

/* Outside any publication, by the thread that took it. */
static void slot_give_back(struct wc_writer_slot *w)
{
	WC_ASSERT(!__atomic_load_n(&w->active, __ATOMIC_RELAXED));
	/* Release: the next owner's first plain store to the marks follows
	 * this thread's last one. */
	if (!w->shared)
		__atomic_store_n(&w->owned, 0, __ATOMIC_RELEASE);
}

unsigned wc_writer_slots_owned(struct wc_cache *c)
{
	unsigned n = slots_in_use(c), owned = 0;

	for (unsigned k = 0; k < n && k < WC_WRITER_SLOTS - 1; k++)
		owned += __atomic_load_n(&c->writers.slot[k].owned, __ATOMIC_RELAXED) != 0;
	return owned;
}

/* Tells a thread's writer slot of one open cache from another's at the
 * same address (an address may be reused by the next open). */
static atomic_uint_fast64_t next_instance;

/* The open caches, for threads that exit: each gives its writer slots back
 * to the caches it wrote to that are still open, and touches none closed
 * since.  Taken at open, close and thread exit only. */
static pthread_mutex_t open_caches_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wc_cache *open_caches;

void wc_writers_register(struct wc_cache *c)
{
	c->instance = atomic_fetch_add(&next_instance, 1) + 1;
	pthread_mutex_lock(&open_caches_lock);
	c->open_next = open_caches;
	open_caches = c;
	pthread_mutex_unlock(&open_caches_lock);
}

void wc_writers_unregister(struct wc_cache *c)
{
	pthread_mutex_lock(&open_caches_lock);
	for (struct wc_cache **p = &open_caches; *p; p = &(*p)->open_next)
		if (*p == c) {
			*p = c->open_next;
			break;
		}
	pthread_mutex_unlock(&open_caches_lock);
}

/* Give w back to the cache opened as `instance`, if it is still open (a
 * thread may outlive the caches it wrote to). */
static void slot_return(uint64_t instance, struct wc_writer_slot *w)
{
	pthread_mutex_lock(&open_caches_lock);
	for (struct wc_cache *c = open_caches; c; c = c->open_next)
		if (c->instance == instance) {
			slot_give_back(w);
			break;
		}
	pthread_mutex_unlock(&open_caches_lock);
}

/* The calling thread's writer slot per cache it writes to (a few), found
 * by the cache's instance number.  A slot goes back to its cache when the
 * thread exits (a key's destructor) or drops it from this table for a
 * fifth cache. */
#define WRITER_TLS 4u
struct writer_tls {
	struct {
		uint64_t instance;
		struct wc_writer_slot *slot;
	} e[WRITER_TLS];
	unsigned next;
};
static __thread struct writer_tls writer_tls;
static pthread_key_t writer_tls_key;
static bool writer_tls_key_made;
static pthread_once_t writer_tls_once = PTHREAD_ONCE_INIT;

static void writer_tls_exit(void *arg)
{
	struct writer_tls *t = arg;

	for (unsigned i = 0; i < WRITER_TLS; i++)
		if (t->e[i].slot) {
			slot_return(t->e[i].instance, t->e[i].slot);
			t->e[i].slot = NULL;
			t->e[i].instance = 0;
		}
}

static void writer_tls_key_make(void)
{
	writer_tls_key_made = pthread_key_create(&writer_tls_key, writer_tls_exit) == 0;
}

/* A program that unloads the library (a plugin's dlclose) must not leave a
 * destructor behind for its threads' exits. */
__attribute__((destructor)) static void writer_tls_key_delete(void)
{
	if (writer_tls_key_made)
		pthread_key_delete(writer_tls_key);
}

struct wc_writer_slot *wc_writer_slot_mine(struct wc_cache *c)
{
	struct writer_tls *t = &writer_tls; /* one thread-local lookup */
	unsigned i;

	for (i = 0; i < WRITER_TLS; i++)
		if (t->e[i].instance == c->instance)
			return t->e[i].slot;
	i = t->next++ % WRITER_TLS;
	if (t->e[i].slot)
		slot_return(t->e[i].instance, t->e[i].slot);
	else {
		/* Without the key (out of keys) slots are kept, as before:
		 * correct, and the shared slot takes the excess. */
		pthread_once(&writer_tls_once, writer_tls_key_make);
		if (writer_tls_key_made)
			pthread_setspecific(writer_tls_key, t);
	}
	t->e[i].slot = slot_take(c);
	t->e[i].instance = c->instance;
	return t->e[i].slot;
}
