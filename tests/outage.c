/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * outage -- an origin outage in the middle of a run, on both media.
 *
 * A threaded cache over the fault origin (tests/helpers/fault_origin.h);
 * several writer threads write a working set larger than the cache, each
 * owning the blocks b with b % threads == its number: runs of 1..4 blocks,
 * each block a self-identifying pattern of (block, version); the even
 * threads make every 8th write FUA, the odd ones call wc_flush every 16
 * writes.  After --warm-ms the origin fails every write and flush for
 * --outage-ms, then answers again, and the writers go on for --after-ms.
 *
 * What it counts, and what must hold:
 *   - writes that failed while the cache had room: must be 0 (a failure
 *     other than -ENOSPC, or -ENOSPC with more blocks free than the writers
 *     may hold between taking blocks and publishing them);
 *   - writes refused with -ENOSPC: only while the origin fails (a call
 *     that returned before the outage began, or began after wc_stats
 *     showed the failure cleared, is an error);
 *   - the time from the origin's return until wc_stats shows the failure
 *     cleared (target: under 1 s), and the longest wc_write (a write that
 *     waited out the outage hung) -- reported, not asserted;
 *   - the cache's error state is 0 at the end, and after close and reopen
 *     every block reads back as the last acknowledged version -- or, for a
 *     block of a refused multi-block write not written since, that version
 *     or the refused one -- and after wc_writeback the origin's images hold
 *     exactly what the cache showed.
 *
 * Media: the pmem cache on a file of the test scratch folder (/dev/shm,
 * PMEM2_FORCE_GRANULARITY=CACHE_LINE), the block medium on a file of
 * WC_TEST_DISK_DIR (default /var/tmp).
 *
 * Usage: outage [--medium pmem|block|both] [--outage-ms N] [--warm-ms N]
 *               [--after-ms N] [--threads T] [--cache-mib M] [--origin-mib M]
 * Without options: the short form make check runs (a 1 s outage, TAP).
 * Exit status 0 when every check held.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault_origin.h"
#include "testutil.h"
#include "wcache.h"

#define BS 4096u
#define MAX_RUN 4u
#define MAX_THREADS 16u
#define GROUP_BLOCKS 16u /* blocks a pmem writer may hold unpublished (an index group) */

struct opts {
	bool pmem, block;
	unsigned outage_ms, warm_ms, after_ms, threads, cache_mib, origin_mib;
};

/* Per block: the last version a write returned for (0: never written), and
 * the version of a refused write that may have landed in part (0: none). */
struct model {
	uint64_t blocks;
	uint64_t *acked, *maybe;
};

struct run {
	const struct opts *o;
	bool block;
	wc_cache *c;
	struct fault_origin *fo;
	struct model m;
	atomic_bool stop;
	atomic_bool origin_down;       /* the origin is failing (set by main) */
	atomic_uint_fast64_t writes_ok, refused, failed_with_room, failed_other;
	/* Refusals: the earliest return and the latest call (ms, monotonic). */
	atomic_uint_fast64_t refused_first_end, refused_last_start;
	atomic_uint_fast64_t flushes_ok, flushes_failed, writes_during_outage;
	atomic_uint_fast64_t longest_write_us; /* one wc_write call, the run's longest */
	char first_error[512];
	pthread_mutex_t lock;
};

struct writer {
	struct run *r;
	unsigned id;
	pthread_t thread;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* The pattern of (block, version): every 8-byte word derived from both. */
static void fill(void *buf, uint64_t block, uint64_t version)
{
	uint64_t *w = buf, s = block * 0x9E3779B97F4A7C15ull ^ (version + 1) * 0xC2B2AE3D27D4EB4Full;

	w[0] = block;
	w[1] = version;
	for (unsigned i = 2; i < BS / 8; i++)
		w[i] = rnd(&s) ^ i;
}

/* The version a block holds: 0 for zeros (never written), UINT64_MAX for
 * anything that is no whole pattern of this block. */
static uint64_t version_of(const void *buf, uint64_t block)
{
	static const uint8_t zero[BS];
	const uint64_t *w = buf;
	uint64_t want[BS / 8];

	if (!memcmp(buf, zero, BS))
		return 0;
	if (w[0] != block)
		return UINT64_MAX;
	fill(want, block, w[1]);
	return memcmp(want, buf, BS) ? UINT64_MAX : w[1];
}

static void note_error(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_error(struct run *r, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&r->lock);
	if (!r->first_error[0]) {
		va_start(ap, fmt);
		vsnprintf(r->first_error, sizeof(r->first_error), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->lock);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct run *r = w->r;
	unsigned t = r->o->threads;
	uint64_t s = 0x5eed + w->id * 7919, n = 0, version = 0;
	char *buf = aligned_alloc(4096, MAX_RUN * BS);
	struct wc_stats st;

	while (!atomic_load(&r->stop)) {
		/* A run inside one of this thread's chunks of MAX_RUN blocks
		 * (chunk k is thread k % t's). */
		uint64_t chunk = (rnd(&s) % (r->m.blocks / MAX_RUN / t)) * t + w->id;
		unsigned first = (unsigned)(rnd(&s) % MAX_RUN);
		unsigned len = 1 + (unsigned)(rnd(&s) % (MAX_RUN - first));
		uint64_t b = chunk * MAX_RUN + first;
		unsigned flags = w->id % 2 == 0 && n % 8 == 7 ? WC_FUA : 0;
		bool down = atomic_load(&r->origin_down);
		ssize_t ret;

		uint64_t t0, us, longest;

		version++;
		for (unsigned i = 0; i < len; i++)
			fill(buf + (size_t)i * BS, b + i, version);
		t0 = now_us();
		ret = wc_write(r->c, buf, (size_t)len * BS, b * BS, flags);
		us = now_us() - t0;
		longest = atomic_load(&r->longest_write_us);
		while (us > longest && !atomic_compare_exchange_weak(&r->longest_write_us, &longest, us))
			;
		n++;
		if (ret == (ssize_t)len * BS) {
			for (unsigned i = 0; i < len; i++) {
				r->m.acked[b + i] = version;
				r->m.maybe[b + i] = 0;
			}
			atomic_fetch_add(&r->writes_ok, 1);
			if (down)
				atomic_fetch_add(&r->writes_during_outage, 1);
		} else {
			wc_get_stats(r->c, &st);
			for (unsigned i = 0; i < len; i++)
				r->m.maybe[b + i] = version;
			if (ret != -ENOSPC) {
				atomic_fetch_add(&r->failed_other, 1);
				note_error(r, "a write failed: %s (%zd)", wc_errmsg(), ret);
			} else if (st.free_blocks > (r->block ? st.blocks / 8 : (uint64_t)t * GROUP_BLOCKS)) {
				atomic_fetch_add(&r->failed_with_room, 1);
				note_error(r, "-ENOSPC with room: %s (%llu blocks free)", wc_errmsg(),
				           (unsigned long long)st.free_blocks);
			} else {
				uint64_t start = t0 / 1000, end = now_ms(), v;

				atomic_fetch_add(&r->refused, 1);
				v = atomic_load(&r->refused_first_end);
				while ((!v || end < v) &&
				       !atomic_compare_exchange_weak(&r->refused_first_end, &v, end))
					;
				v = atomic_load(&r->refused_last_start);
				while (start > v && !atomic_compare_exchange_weak(&r->refused_last_start, &v, start))
					;
			}
			/* A client backs off before it writes again. */
			sleep_ms(1);
		}
		if (w->id % 2 == 1 && n % 16 == 15) {
			if (wc_flush(r->c) == 0) {
				atomic_fetch_add(&r->flushes_ok, 1);
			} else {
				atomic_fetch_add(&r->flushes_failed, 1);
				note_error(r, "a flush failed: %s", wc_errmsg());
			}
		}
	}
	free(buf);
	return NULL;
}

/* Every block, read through cache c (or from the image when img != NULL),
 * against the model; returns the blocks that are wrong (the first said). */
static uint64_t verify(struct run *r, wc_cache *c, const uint8_t *img, const char *what)
{
	char *buf = aligned_alloc(4096, 64 * BS);
	uint64_t bad = 0;

	for (uint64_t b = 0; b < r->m.blocks; b += 64) {
		unsigned n = r->m.blocks - b < 64 ? (unsigned)(r->m.blocks - b) : 64;

		if (img) {
			memcpy(buf, img + b * BS, (size_t)n * BS);
		} else if (wc_read(c, buf, (size_t)n * BS, b * BS) != (ssize_t)n * BS) {
			note_error(r, "%s: a read failed: %s", what, wc_errmsg());
			bad += n;
			continue;
		}
		for (unsigned i = 0; i < n; i++) {
			uint64_t got = version_of(buf + (size_t)i * BS, b + i);

			if (got == r->m.acked[b + i] || (r->m.maybe[b + i] && got == r->m.maybe[b + i]))
				continue;
			if (!bad++)
				fprintf(stderr, "# %s: block %llu holds version %lld, acknowledged %llu\n", what,
				        (unsigned long long)(b + i), got == UINT64_MAX ? -1ll : (long long)got,
				        (unsigned long long)r->m.acked[b + i]);
		}
	}
	free(buf);
	return bad;
}

/* Settle what a refused write left: the version the cache shows is the one
 * the origin must end up with. */
static void settle_maybe(struct run *r, wc_cache *c)
{
	char *buf = aligned_alloc(4096, BS);

	for (uint64_t b = 0; b < r->m.blocks; b++) {
		if (!r->m.maybe[b])
			continue;
		if (wc_read(c, buf, BS, b * BS) == BS && version_of(buf, b) == r->m.maybe[b])
			r->m.acked[b] = r->m.maybe[b];
		r->m.maybe[b] = 0;
	}
	free(buf);
}

static int open_cache(struct run *r, const char *path, bool create)
{
	struct wc_config cfg;
	char opts[128];
	int ret;

	wc_config_init(&cfg);
	snprintf(opts, sizeof(opts), "medium=%s", r->block ? "block" : "pmem");
	ret = wc_config_parse(&cfg, opts);
	if (ret)
		return ret;
	if (!create)
		return wc_open_origin(&r->c, path, fault_origin_origin(r->fo), &cfg);
	cfg.cache_size = (uint64_t)r->o->cache_mib << 20;
	return wc_create_origin(&r->c, path, fault_origin_origin(r->fo), &cfg);
}

/* One medium's run: true when every check held.  *skip: the medium cannot
 * be tried here. */
static bool run_medium(const struct opts *o, bool block, unsigned tap, bool *skip)
{
	static const struct fault_origin_faults down = { .fail_write_nth = 1, .fail_write_persistent = true,
	                                                 .fail_flush_nth = 1, .fail_flush_persistent = true };
	struct run r = { .o = o, .block = block, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct writer w[MAX_THREADS];
	char path[PATH_MAX];
	const char *dir = getenv("WC_TEST_DISK_DIR");
	uint64_t t_down, t_up, t_clear = 0, first_refusal_ms = 0, bad_cache, bad_origin[2];
	struct wc_stats st;
	bool ok, refusals_outside;
	int ret;

	*skip = false;
	r.m.blocks = ((uint64_t)o->origin_mib << 20) / BS;
	r.m.acked = calloc(r.m.blocks, sizeof(uint64_t));
	r.m.maybe = calloc(r.m.blocks, sizeof(uint64_t));
	if (block)
		snprintf(path, sizeof(path), "%s/wcoutage-%d.cache", dir && *dir ? dir : "/var/tmp", (int)getpid());
	else
		wc_test_path(path, sizeof(path), "outage.pmem");
	unlink(path);
	if (fault_origin_create(&r.fo, r.m.blocks * BS, 512)) {
		fprintf(stderr, "# no memory for a %u MiB origin\n", o->origin_mib);
		return false;
	}
	ret = open_cache(&r, path, true);
	if (ret) {
		printf("ok %u - %s # SKIP cannot create the cache: %s\n", tap, block ? "block" : "pmem",
		       wc_errmsg());
		*skip = true;
		fault_origin_destroy(r.fo);
		return true;
	}
	for (unsigned i = 0; i < o->threads; i++) {
		w[i] = (struct writer){ &r, i, 0 };
		pthread_create(&w[i].thread, NULL, writer_main, &w[i]);
	}
	sleep_ms(o->warm_ms);
	fault_origin_set_faults(r.fo, &down);
	atomic_store(&r.origin_down, true);
	t_down = now_ms();
	while (now_ms() - t_down < o->outage_ms) {
		if (!first_refusal_ms && atomic_load(&r.refused))
			first_refusal_ms = now_ms() - t_down;
		sleep_ms(1);
	}
	fault_origin_reset_faults(r.fo);
	atomic_store(&r.origin_down, false);
	t_up = now_ms();
	while (now_ms() - t_up < o->after_ms || !t_clear) {
		wc_get_stats(r.c, &st);
		if (!t_clear && !st.writeback_last_error && !st.writeback_failing_since_ms)
			t_clear = now_ms();
		if (now_ms() - t_up > 60000)
			break;
		sleep_ms(1);
	}
	atomic_store(&r.stop, true);
	for (unsigned i = 0; i < o->threads; i++) {
		struct timespec until;

		/* A writer stuck in wc_write (waiting for room without end) is
		 * a failure to report, not a hang of make check. */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 30;
		if (pthread_timedjoin_np(w[i].thread, NULL, &until)) {
			printf("not ok %u - %s: writer %u still in wc_write 30 s after the run\n", tap,
			       block ? "block" : "pmem", i);
			fflush(stdout);
			_exit(1);
		}
	}
	wc_get_stats(r.c, &st);
	ret = wc_close(r.c);
	r.c = NULL;
	ok = ret == 0 && st.error == 0;
	if (!ok)
		note_error(&r, "close: %s (error state %d)", wc_errmsg(), st.error);

	/* Reopened against the healed origin: the cache shows the model ... */
	ret = open_cache(&r, path, false);
	if (ret) {
		note_error(&r, "reopen: %s", wc_errmsg());
		ok = false;
	} else {
		settle_maybe(&r, r.c);
		bad_cache = verify(&r, r.c, NULL, "through the reopened cache");
		/* ... and after a full write-back, so does the origin alone. */
		ret = wc_writeback(r.c);
		if (ret)
			note_error(&r, "wc_writeback: %s (%d)", wc_errmsg(), ret);
		if (wc_close(r.c))
			ret = -EIO;
		bad_origin[0] = verify(&r, NULL, fault_origin_volatile(r.fo), "the origin");
		bad_origin[1] = verify(&r, NULL, fault_origin_durable(r.fo), "the origin's durable image");
		ok = ok && !ret && !bad_cache && !bad_origin[0] && !bad_origin[1];
		printf("# %s: blocks wrong after reopen %llu, in the origin %llu (durable image %llu)\n",
		       block ? "block" : "pmem", (unsigned long long)bad_cache,
		       (unsigned long long)bad_origin[0], (unsigned long long)bad_origin[1]);
	}
	/* A refusal decided while the origin failed: it returned after the
	 * outage began, and the call began before wc_stats showed the failure
	 * cleared (main looks every ms, so it sees that no sooner). */
	refusals_outside = r.refused && (r.refused_first_end < t_down || r.refused_last_start > t_clear);
	if (refusals_outside)
		note_error(&r, "-ENOSPC outside the outage: a call returned %lld ms after the origin went "
		           "down, one began %lld ms after the failure cleared",
		           (long long)r.refused_first_end - (long long)t_down,
		           (long long)r.refused_last_start - (long long)t_clear);
	ok = ok && !r.failed_with_room && !r.failed_other && !refusals_outside && !r.flushes_failed && t_clear;
	printf("# %s: %u writers, %u MiB cache, %u MiB origin, origin down %u ms\n", block ? "block" : "pmem",
	       o->threads, o->cache_mib, o->origin_mib, o->outage_ms);
	printf("# %s: writes ok %llu (%llu while the origin was down), refused -ENOSPC %llu (first after "
	       "%llu ms of outage), failed with room %llu, failed otherwise %llu; flushes ok %llu, "
	       "failed %llu\n", block ? "block" : "pmem",
	       (unsigned long long)r.writes_ok, (unsigned long long)r.writes_during_outage,
	       (unsigned long long)r.refused, (unsigned long long)first_refusal_ms,
	       (unsigned long long)r.failed_with_room, (unsigned long long)r.failed_other,
	       (unsigned long long)r.flushes_ok, (unsigned long long)r.flushes_failed);
	printf("# %s: origin back -> failure cleared in wc_stats: %lld ms; longest wc_write %.1f ms; "
	       "outages %llu, writes refused (stats) %llu, error %d\n", block ? "block" : "pmem",
	       t_clear ? (long long)(t_clear - t_up) : -1ll, (double)r.longest_write_us / 1000,
	       (unsigned long long)st.writeback_outages, (unsigned long long)st.writes_refused_full, st.error);
	if (r.first_error[0])
		printf("# %s: first error: %s\n", block ? "block" : "pmem", r.first_error);
	printf("%s %u - %s: an origin outage of %u ms\n", ok ? "ok" : "not ok", tap, block ? "block" : "pmem",
	       o->outage_ms);
	fflush(stdout);
	unlink(path);
	fault_origin_destroy(r.fo);
	free(r.m.acked);
	free(r.m.maybe);
	return ok;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: outage [--medium pmem|block|both] [--outage-ms N] [--warm-ms N] [--after-ms N]\n"
	           "              [--threads T] [--cache-mib M] [--origin-mib M]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "medium", required_argument, NULL, 'm' }, { "outage-ms", required_argument, NULL, 'o' },
		{ "warm-ms", required_argument, NULL, 'w' }, { "after-ms", required_argument, NULL, 'a' },
		{ "threads", required_argument, NULL, 't' }, { "cache-mib", required_argument, NULL, 'c' },
		{ "origin-mib", required_argument, NULL, 'g' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { true, true, 1000, 300, 1500, 4, 4, 16 };
	unsigned tap = 0;
	bool all_ok = true, skip;
	int ch;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'm':
			o.pmem = !strcmp(optarg, "pmem") || !strcmp(optarg, "both");
			o.block = !strcmp(optarg, "block") || !strcmp(optarg, "both");
			if (!o.pmem && !o.block) {
				fprintf(stderr, "outage: --medium %s: pmem, block or both\n", optarg);
				return 2;
			}
			break;
		case 'o': o.outage_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': o.warm_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'a': o.after_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': o.threads = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': o.cache_mib = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'g': o.origin_mib = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.threads || o.threads > MAX_THREADS || !o.cache_mib || o.origin_mib <= o.cache_mib ||
	    ((uint64_t)o.origin_mib << 20) / BS / MAX_RUN < o.threads) {
		fprintf(stderr, "outage: 1..%u threads, and an origin larger than the cache (the working set "
		        "must not fit, or the cache never fills)\n", MAX_THREADS);
		return 2;
	}
	/* As make check's environment: the real flush code on a /dev/shm file. */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	printf("1..%u\n", (unsigned)o.pmem + (unsigned)o.block);
	if (o.pmem)
		all_ok &= run_medium(&o, false, ++tap, &skip);
	if (o.block)
		all_ok &= run_medium(&o, true, ++tap, &skip);
	return all_ok ? 0 : 1;
}
