/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_crash.c -- the power-failure simulator's engine (tests/crashsim.c)
 * on its own, without the cache: the image semantics, and a toy commit
 * protocol in a mapped /dev/shm file that the simulator must pass when it
 * is correct and catch when a flush or a fence is missing.  This is what
 * shows the crash sweep can fail.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_model.h"
#include "crashsim.h"
#include "testmain.h"

/* ---- a flush policy that only tells the simulator ---- */

static void copy_plain(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
static void set_plain(void *dst, int c, size_t n) { memset(dst, c, n); }
static void flush_none(const void *addr, size_t n) { (void)addr; (void)n; }
static void drain_none(void) { }

static struct wc_persist_policy sim_policy(struct wc_crashsim *sim)
{
	struct wc_persist_policy p = {
		.gran = WC_GRAN_CACHE_LINE,
		.threshold = SIZE_MAX,
		.copy_small = copy_plain, .copy_large = copy_plain,
		.set_small = set_plain, .set_large = set_plain,
		.flush = flush_none, .drain = drain_none,
		.observer = wc_crashsim_observer(sim),
	};
	return p;
}

/* ---- a mapped scratch file ---- */

#define MAP_LEN 8192

static uint8_t *map_file(const char *name, int fill)
{
	char path[PATH_MAX + 64];
	uint8_t *base;
	int fd;

	wc_test_path(path, sizeof(path), name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, MAP_LEN), 0);
	base = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	close(fd);
	if (fill >= 0)
		memset(base, fill, MAP_LEN);
	return base;
}

static struct wc_crashsim *new_sim(uint64_t seed, wc_crash_point_fn point, void *ctx)
{
	struct wc_crashsim_config cfg = { .seed = seed, .point = point, .ctx = ctx };
	struct wc_crashsim *sim;

	ck_assert_int_eq(wc_crashsim_new(&sim, &cfg), 0);
	return sim;
}

static bool all_bytes(const uint8_t *p, int c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)c)
			return false;
	return true;
}

/* ---- engine semantics ---- */

START_TEST(test_attach_takes_current_content)
{
	uint8_t *base = map_file("attach", 0x5a);
	struct wc_crashsim *sim = new_sim(1, NULL, NULL);
	uint8_t img[MAP_LEN];

	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_OLD, img), -ENODEV);
	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), -EBUSY);
	base[100] = 1; /* a plain store, never flushed */
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_OLD, img), 0);
	ck_assert(all_bytes(img, 0x5a, MAP_LEN));
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_NEW, img), 0);
	ck_assert_int_eq(img[100], 1);
	ck_assert_uint_eq(wc_crashsim_dirty_lines(sim), 1);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

START_TEST(test_drain_makes_snapshot_persistent)
{
	uint8_t *base = map_file("drain", 0);
	struct wc_crashsim *sim = new_sim(2, NULL, NULL);
	struct wc_persist_policy p = sim_policy(sim);
	uint8_t img[MAP_LEN], src[200];

	memset(src, 0xab, sizeof(src));
	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	wc_persist_copy(&p, base + 60, src, sizeof(src)); /* lines 0..4 */
	ck_assert_uint_eq(wc_crashsim_pending(sim), 5);
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_OLD, img), 0);
	ck_assert(all_bytes(img, 0, MAP_LEN));
	wc_persist_drain(&p);
	ck_assert_uint_eq(wc_crashsim_pending(sim), 0);
	ck_assert_uint_eq(wc_crashsim_drains(sim), 1);
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_OLD, img), 0);
	ck_assert(all_bytes(img, 0, 60));
	ck_assert(all_bytes(img + 60, 0xab, sizeof(src)));
	ck_assert(all_bytes(img + 260, 0, MAP_LEN - 260));
	ck_assert_uint_eq(wc_crashsim_dirty_lines(sim), 0);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

/* A store after the flush, before the drain, is not covered by it. */
START_TEST(test_store_after_flush_not_covered)
{
	uint8_t *base = map_file("later", 0);
	struct wc_crashsim *sim = new_sim(3, NULL, NULL);
	struct wc_persist_policy p = sim_policy(sim);
	uint8_t img[MAP_LEN];
	bool seen[3] = { false, false, false };

	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	memset(base + 128, 1, 64);
	wc_persist_range(&p, base + 128, 64);
	memset(base + 128, 2, 64);

	/* Before the drain: old (0), flushed (1) or current (2). */
	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_LINES, img), 0);
		ck_assert_int_le(img[128], 2);
		ck_assert(all_bytes(img + 128, img[128], 64));
		seen[img[128]] = true;
	}
	ck_assert(seen[0] && seen[1] && seen[2]);

	wc_persist_drain(&p);
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_OLD, img), 0);
	ck_assert(all_bytes(img + 128, 1, 64));
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_NEW, img), 0);
	ck_assert(all_bytes(img + 128, 2, 64));
	ck_assert_uint_eq(wc_crashsim_dirty_lines(sim), 1);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

/* LINES never mixes two versions inside a line; TORN does, per aligned
 * word, and never inside a word. */
START_TEST(test_lines_whole_torn_by_word)
{
	uint8_t *base = map_file("torn", 0);
	struct wc_crashsim *sim = new_sim(4, NULL, NULL);
	uint8_t img[MAP_LEN];
	unsigned torn_lines = 0;

	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	memset(base, 0xff, MAP_LEN); /* every line dirty, none flushed */
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_LINES, img), 0);
		for (size_t l = 0; l < MAP_LEN; l += 64)
			ck_assert(all_bytes(img + l, img[l], 64));
		ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_TORN, img), 0);
		for (size_t l = 0; l < MAP_LEN; l += 64) {
			for (size_t w = 0; w < 64; w += 8)
				ck_assert(all_bytes(img + l + w, img[l + w], 8));
			if (!all_bytes(img + l, img[l], 64))
				torn_lines++;
		}
	}
	/* 128 lines x 20 images with 8 coin flips each: a torn line is
	 * practically certain; none would mean the mode does nothing. */
	ck_assert_uint_gt(torn_lines, 0);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

START_TEST(test_atomic8_never_torn)
{
	uint8_t *base = map_file("atomic", 0);
	struct wc_crashsim *sim = new_sim(5, NULL, NULL);
	struct wc_persist_policy p = sim_policy(sim);
	uint8_t img[MAP_LEN];
	uint64_t *seq = (uint64_t *)(base + 64);
	const uint64_t old = 0x1111111111111111ull, new = 0x2222222222222222ull;
	bool seen_old = false, seen_new = false;

	wc_persist_store8(&p, seq, old); /* stray: not attached yet */
	ck_assert_uint_eq(wc_crashsim_strays(sim), 1);
	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	wc_persist_store8(&p, seq, old);
	wc_persist_drain(&p);
	wc_persist_store8(&p, seq, new);
	for (int i = 0; i < 200; i++) {
		uint64_t v;

		ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_TORN, img), 0);
		memcpy(&v, img + 64, 8);
		ck_assert(v == old || v == new);
		seen_old |= v == old;
		seen_new |= v == new;
	}
	ck_assert(seen_old && seen_new);
	/* A misaligned "atomic" store is a bug of the observed code. */
	p.observer->written(p.observer->ctx, base + 68, 8, 1);
	ck_assert_uint_eq(wc_crashsim_strays(sim), 2);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

struct thread_arg {
	const struct wc_persist_policy *p;
	uint8_t *dst;
};

static void *thread_copy(void *arg)
{
	struct thread_arg *a = arg;
	uint8_t src[64];

	memset(src, 7, sizeof(src));
	wc_persist_copy(a->p, a->dst, src, sizeof(src));
	return NULL;
}

/* SFENCE orders only the issuing thread's stores: another thread's drain
 * does not make this thread's copy persistent (unless global_drain). */
static void run_cross_thread_drain(bool global, uint8_t expect)
{
	uint8_t *base = map_file("threads", 0);
	struct wc_crashsim_config cfg = { .seed = 6, .global_drain = global };
	struct wc_crashsim *sim;
	struct wc_persist_policy p;
	struct thread_arg a;
	pthread_t t;
	uint8_t img[MAP_LEN];

	ck_assert_int_eq(wc_crashsim_new(&sim, &cfg), 0);
	p = sim_policy(sim);
	a.p = &p;
	a.dst = base + 640;
	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, thread_copy, &a), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	wc_persist_drain(&p);
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_OLD, img), 0);
	ck_assert(all_bytes(img + 640, expect, 64));
	ck_assert_uint_eq(wc_crashsim_pending(sim), global ? 0 : 1);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}

START_TEST(test_drain_is_per_thread)
{
	run_cross_thread_drain(false, 0);
	run_cross_thread_drain(true, 7);
}
END_TEST

struct event_log {
	unsigned before, after, written, unmap;
	uint64_t last_before, last_after;
	bool ordered;
};

static void log_event(void *ctx, struct wc_crashsim *sim, enum wc_crash_event ev, uint64_t drain)
{
	struct event_log *l = ctx;

	switch (ev) {
	case WC_CRASH_BEFORE_DRAIN:
		l->before++;
		/* Before drain k takes effect, k-1 drains did. */
		l->ordered &= drain == wc_crashsim_drains(sim) + 1 && drain == l->last_after + 1;
		l->last_before = drain;
		break;
	case WC_CRASH_AFTER_DRAIN:
		l->after++;
		l->ordered &= drain == l->last_before && drain == wc_crashsim_drains(sim);
		l->last_after = drain;
		break;
	case WC_CRASH_WRITTEN:
		l->written++;
		break;
	case WC_CRASH_UNMAP:
		l->unmap++;
		break;
	}
}

START_TEST(test_crash_point_callbacks)
{
	uint8_t *base = map_file("events", 0);
	struct event_log log = { .ordered = true };
	struct wc_crashsim_config cfg = {
		.seed = 7, .written_per_mille = 1000, .point = log_event, .ctx = &log,
	};
	struct wc_crashsim *sim;
	struct wc_persist_policy p;

	ck_assert_int_eq(wc_crashsim_new(&sim, &cfg), 0);
	p = sim_policy(sim);
	wc_crashsim_hooks(sim)->mapped(wc_crashsim_hooks(sim)->ctx, base, MAP_LEN);
	ck_assert(wc_crashsim_attached(sim));
	for (int i = 0; i < 5; i++) {
		wc_persist_set(&p, base + 64 * i, i, 64);
		wc_persist_set(&p, base + 4096 + 64 * i, i, 64);
		wc_persist_drain(&p);
	}
	ck_assert_uint_eq(log.before, 5);
	ck_assert_uint_eq(log.after, 5);
	ck_assert_uint_eq(log.written, 10);
	ck_assert_uint_eq(wc_crashsim_writes(sim), 10);
	ck_assert(log.ordered);
	wc_crashsim_hooks(sim)->unmapped(wc_crashsim_hooks(sim)->ctx, base, MAP_LEN);
	ck_assert_uint_eq(log.unmap, 1);
	ck_assert(!wc_crashsim_attached(sim));
	ck_assert_uint_eq(wc_crashsim_strays(sim), 0);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

START_TEST(test_write_image_file)
{
	uint8_t *base = map_file("imgsrc", 0);
	struct wc_crashsim *sim = new_sim(8, NULL, NULL);
	struct wc_persist_policy p = sim_policy(sim);
	char path[PATH_MAX + 64];
	uint8_t back[MAP_LEN];
	struct stat st;
	int fd;

	ck_assert_int_eq(wc_crashsim_write_image(sim, WC_CRASH_OLD, "/nonexistent"), -ENODEV);
	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	wc_persist_set(&p, base + 1024, 0x77, 64);
	wc_persist_drain(&p);
	memset(base + 2048, 0x33, 64); /* never flushed: not in the OLD image */
	wc_test_path(path, sizeof(path), "img");
	ck_assert_int_eq(wc_crashsim_write_image(sim, WC_CRASH_OLD, path), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, MAP_LEN);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, back, MAP_LEN, 0), MAP_LEN);
	close(fd);
	ck_assert(all_bytes(back + 1024, 0x77, 64));
	ck_assert(all_bytes(back + 2048, 0, 64));
	ck_assert_int_lt(wc_crashsim_write_image(sim, WC_CRASH_OLD, "/nonexistent/dir/img"), 0);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

START_TEST(test_stray_outside_mapping)
{
	uint8_t *base = map_file("stray", 0);
	struct wc_crashsim *sim = new_sim(9, NULL, NULL);
	struct wc_persist_policy p = sim_policy(sim);
	uint8_t other[64];

	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	wc_persist_set(&p, other, 0, sizeof(other));
	wc_persist_range(&p, base + MAP_LEN - 8, 16); /* runs past the end */
	ck_assert_uint_eq(wc_crashsim_strays(sim), 2);
	wc_persist_range(&p, base + MAP_LEN - 8, 8);
	ck_assert_uint_eq(wc_crashsim_strays(sim), 2);
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

/* Closing and reopening the same file without a power failure: what was
 * never fenced is still not persistent. */
START_TEST(test_reattach_keeps_persistent_image)
{
	uint8_t *base = map_file("reopen", 0);
	struct wc_crashsim *sim = new_sim(10, NULL, NULL);
	uint8_t img[MAP_LEN];

	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	memset(base + 64, 9, 64);
	wc_crashsim_detach(sim);
	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_OLD, img), 0);
	ck_assert(all_bytes(img + 64, 0, 64));
	wc_crashsim_detach(sim);
	wc_crashsim_forget(sim);
	ck_assert_int_eq(wc_crashsim_attach(sim, base, MAP_LEN), 0);
	ck_assert_int_eq(wc_crashsim_image(sim, WC_CRASH_OLD, img), 0);
	ck_assert(all_bytes(img + 64, 9, 64));
	wc_crashsim_free(sim);
	munmap(base, MAP_LEN);
}
END_TEST

START_TEST(test_random_is_seeded)
{
	struct wc_rng a, b, c;

	wc_rng_seed(&a, 42);
	wc_rng_seed(&b, 42);
	wc_rng_seed(&c, 43);
	for (int i = 0; i < 100; i++) {
		uint64_t va = wc_rng_next(&a);

		ck_assert_uint_eq(va, wc_rng_next(&b));
		ck_assert_uint_ne(va, wc_rng_next(&c));
	}
}
END_TEST

/* ---- a toy commit protocol ----
 *
 * Line 0 holds the commit counter c (one atomic 8-byte store); record r
 * (256 bytes, a pattern of r) lives at 256 * (r + 1).  The invariant a
 * recovery relies on: records 0..c-1 are intact, and c is at least the
 * number of commits acknowledged (returned) before the crash.
 */

#define TOY_RECORDS 16
#define TOY_REC 256

enum toy_protocol {
	TOY_CORRECT,               /* copy, drain, store8, drain */
	TOY_COMMIT_BEFORE_DRAIN,   /* copy, store8, drain: the record may trail */
	TOY_MISSING_FLUSH,         /* plain stores for the record, never flushed */
	TOY_NO_COMMIT_DRAIN,       /* copy, drain, store8, return: ack may be lost */
};

struct toy {
	enum toy_protocol proto;
	unsigned skip_every_nth_drain;
	struct wc_persist_policy p;
	uint8_t *base;
	uint64_t acked;            /* commits that returned */
	uint64_t images, violations;
	uint8_t img[MAP_LEN];
};

static void toy_record(uint8_t *rec, unsigned r)
{
	for (unsigned i = 0; i < TOY_REC; i++)
		rec[i] = (uint8_t)(r * 31 + i + 1);
}

static bool toy_check(const struct toy *t, const uint8_t *img)
{
	uint8_t want[TOY_REC];
	uint64_t c;

	memcpy(&c, img, sizeof(c));
	if (c < t->acked || c > TOY_RECORDS)
		return false;
	for (unsigned r = 0; r < c; r++) {
		toy_record(want, r);
		if (memcmp(img + TOY_REC * (r + 1), want, TOY_REC) != 0)
			return false;
	}
	return true;
}

static void toy_point(void *ctx, struct wc_crashsim *sim, enum wc_crash_event ev, uint64_t drain)
{
	static const enum wc_crash_mode modes[] = {
		WC_CRASH_OLD, WC_CRASH_NEW, WC_CRASH_LINES, WC_CRASH_TORN,
	};
	struct toy *t = ctx;

	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		for (int k = 0; k < (modes[m] >= WC_CRASH_LINES ? 8 : 1); k++) {
			ck_assert_int_eq(wc_crashsim_image(sim, modes[m], t->img), 0);
			t->images++;
			if (!toy_check(t, t->img))
				t->violations++;
		}
	}
}

static void toy_run(struct toy *t, uint64_t seed)
{
	struct wc_crashsim_config cfg = {
		.seed = seed, .written_per_mille = 500, .point = toy_point, .ctx = t,
		.skip_every_nth_drain = t->skip_every_nth_drain,
	};
	struct wc_crashsim *sim;
	uint8_t rec[TOY_REC];
	uint64_t *counter;

	t->base = map_file("toy", 0);
	counter = (uint64_t *)t->base;
	ck_assert_int_eq(wc_crashsim_new(&sim, &cfg), 0);
	t->p = sim_policy(sim);
	ck_assert_int_eq(wc_crashsim_attach(sim, t->base, MAP_LEN), 0);
	for (unsigned r = 0; r < TOY_RECORDS; r++) {
		uint8_t *dst = t->base + TOY_REC * (r + 1);

		toy_record(rec, r);
		switch (t->proto) {
		case TOY_CORRECT:
		case TOY_NO_COMMIT_DRAIN:
			wc_persist_copy(&t->p, dst, rec, TOY_REC);
			wc_persist_drain(&t->p);
			wc_persist_store8(&t->p, counter, r + 1);
			if (t->proto == TOY_CORRECT)
				wc_persist_drain(&t->p);
			break;
		case TOY_COMMIT_BEFORE_DRAIN:
			wc_persist_copy(&t->p, dst, rec, TOY_REC);
			wc_persist_store8(&t->p, counter, r + 1);
			wc_persist_drain(&t->p);
			break;
		case TOY_MISSING_FLUSH:
			memcpy(dst, rec, TOY_REC);
			wc_persist_drain(&t->p);
			wc_persist_store8(&t->p, counter, r + 1);
			wc_persist_drain(&t->p);
			break;
		}
		t->acked = r + 1;
		/* The point right after the commit returned. */
		toy_point(t, sim, WC_CRASH_WRITTEN, wc_crashsim_drains(sim));
	}
	ck_assert_uint_eq(wc_crashsim_strays(sim), 0);
	wc_crashsim_free(sim);
	munmap(t->base, MAP_LEN);
}

static uint64_t toy_violations(enum toy_protocol proto, unsigned skip)
{
	uint64_t violations = 0;

	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct toy *t = calloc(1, sizeof(*t));

		ck_assert_ptr_nonnull(t);
		t->proto = proto;
		t->skip_every_nth_drain = skip;
		toy_run(t, seed);
		ck_assert_uint_gt(t->images, 1000);
		violations += t->violations;
		free(t);
	}
	return violations;
}

START_TEST(test_toy_correct_protocol_passes)
{
	ck_assert_uint_eq(toy_violations(TOY_CORRECT, 0), 0);
}
END_TEST

START_TEST(test_toy_commit_before_data_drain_caught)
{
	ck_assert_uint_gt(toy_violations(TOY_COMMIT_BEFORE_DRAIN, 0), 0);
}
END_TEST

START_TEST(test_toy_missing_flush_caught)
{
	ck_assert_uint_gt(toy_violations(TOY_MISSING_FLUSH, 0), 0);
}
END_TEST

START_TEST(test_toy_missing_commit_drain_caught)
{
	ck_assert_uint_gt(toy_violations(TOY_NO_COMMIT_DRAIN, 0), 0);
}
END_TEST


/* ---- the model of what a recovered cache may present ---- */

#define MB 512u

START_TEST(test_pattern_roundtrip_and_torn)
{
	uint8_t a[MB], b[MB], torn[MB];
	uint64_t v = 99;

	wc_pattern_fill(a, MB, 7, 3);
	wc_pattern_fill(b, MB, 7, 4);
	ck_assert_int_eq(wc_pattern_decode(a, MB, 7, &v), WC_PATTERN_OK);
	ck_assert_uint_eq(v, 3);
	ck_assert_int_eq(wc_pattern_decode(b, MB, 7, &v), WC_PATTERN_OK);
	ck_assert_uint_eq(v, 4);
	/* Another block's data is not this block's. */
	ck_assert_int_eq(wc_pattern_decode(a, MB, 8, &v), WC_PATTERN_GARBAGE);
	/* One word of a later version in the tail: torn. */
	memcpy(torn, a, MB);
	memcpy(torn + MB - 8, b + MB - 8, 8);
	ck_assert_int_eq(wc_pattern_decode(torn, MB, 7, &v), WC_PATTERN_GARBAGE);
	/* A header of the new version over the old body: torn too. */
	memcpy(torn, b, 64);
	memcpy(torn + 64, a + 64, MB - 64);
	ck_assert_int_eq(wc_pattern_decode(torn, MB, 7, &v), WC_PATTERN_GARBAGE);
	memset(torn, 0, MB);
	ck_assert_int_eq(wc_pattern_decode(torn, MB, 7, &v), WC_PATTERN_ZERO);
	torn[100] = 1;
	ck_assert_int_eq(wc_pattern_decode(torn, MB, 7, &v), WC_PATTERN_GARBAGE);
}
END_TEST

/* Fill `img` (4 blocks) with the versions listed; UINT64_MAX = zeros. */
static void image_of(uint8_t *img, const uint64_t v[4])
{
	for (unsigned b = 0; b < 4; b++) {
		if (v[b] == UINT64_MAX)
			memset(img + b * MB, 0, MB);
		else
			wc_pattern_fill(img + b * MB, MB, b, v[b]);
	}
}

static bool model_accepts(const struct wc_model *m, struct wc_window w, const uint64_t v[4])
{
	uint8_t img[4 * MB];
	char why[512];
	bool ok;

	image_of(img, v);
	ok = wc_model_check(m, w, img, why, sizeof(why));
	ck_assert(ok || why[0] != '\0');
	return ok;
}

START_TEST(test_model_window)
{
	struct wc_model *m;
	struct wc_window w;

	ck_assert_int_eq(wc_model_new(&m, 4, MB), 0);
	ck_assert_uint_eq(wc_model_write(m, 0, 2), 1);   /* blocks 0,1 = v1 */
	wc_model_ack(m);
	ck_assert_uint_eq(wc_model_write(m, 1, 2), 2);   /* blocks 1,2 = v2 */
	w = wc_model_window(m);
	ck_assert_uint_eq(w.lo, 1);
	ck_assert_uint_eq(w.hi, 2);

	ck_assert(model_accepts(m, w, (uint64_t[]){ 1, 1, 0, 0 }));  /* after call 1 */
	ck_assert(model_accepts(m, w, (uint64_t[]){ 1, 2, 2, 0 }));  /* after call 2 */
	ck_assert(model_accepts(m, w, (uint64_t[]){ 1, 2, 0, 0 }));  /* call 2 in part */
	ck_assert(model_accepts(m, w, (uint64_t[]){ 1, 1, 2, 0 }));
	ck_assert(!model_accepts(m, w, (uint64_t[]){ 0, 0, 0, 0 })); /* acknowledged call lost */
	ck_assert(!model_accepts(m, w, (uint64_t[]){ 1, 1, 0, 5 })); /* never written */
	ck_assert(!model_accepts(m, w, (uint64_t[]){ 2, 2, 2, 0 })); /* v2 not for block 0 */
	ck_assert(!model_accepts(m, w, (uint64_t[]){ 1, 1, UINT64_MAX, 0 }));

	/* Two single-block calls after the ack: 3 then 4. */
	ck_assert_uint_eq(wc_model_write(m, 0, 1), 3);
	ck_assert_uint_eq(wc_model_write(m, 3, 1), 4);
	w = wc_model_window(m);
	ck_assert(model_accepts(m, w, (uint64_t[]){ 3, 2, 2, 4 }));
	ck_assert(model_accepts(m, w, (uint64_t[]){ 3, 2, 2, 0 }));
	ck_assert(model_accepts(m, w, (uint64_t[]){ 1, 2, 0, 0 }));
	/* Call 4 durable without call 3 before it: a later commit mixed with
	 * an earlier one. */
	ck_assert(!model_accepts(m, w, (uint64_t[]){ 1, 2, 2, 4 }));
	wc_model_free(m);
}
END_TEST

START_TEST(test_model_discard_and_save)
{
	struct wc_model *m, *back;
	struct wc_window w;
	char buf[256];
	FILE *f;

	ck_assert_int_eq(wc_model_new(&m, 4, MB), 0);
	wc_model_write(m, 0, 4);                       /* call 1 */
	wc_model_ack(m);
	wc_model_discard(m, 1, 2);                     /* call 2 */
	wc_model_ack(m);
	wc_model_write(m, 2, 1);                       /* call 3 */
	ck_assert_uint_eq(wc_model_current(m, 1), UINT64_MAX);
	ck_assert_uint_eq(wc_model_current(m, 2), 3);
	w = wc_model_window(m);
	ck_assert(model_accepts(m, w, (uint64_t[]){ 1, UINT64_MAX, 3, 1 }));
	ck_assert(model_accepts(m, w, (uint64_t[]){ 1, 0, 1, 1 }));  /* origin's older content */
	ck_assert(model_accepts(m, w, (uint64_t[]){ 1, 1, 3, 1 }));
	ck_assert(!model_accepts(m, w, (uint64_t[]){ 1, 1, 1, 0 }));
	/* A discarded block may come back half discarded (sectors of zeros in
	 * old data); a block never discarded may not. */
	{
		uint8_t img[4 * MB];
		char why[256];

		image_of(img, (uint64_t[]){ 1, 1, 3, 1 });
		memset(img + 1 * MB + 64, 0, 64);
		ck_assert(wc_model_check(m, w, img, why, sizeof(why)));
		memset(img + 3 * MB + 64, 0, 64);
		ck_assert(!wc_model_check(m, w, img, why, sizeof(why)));
		ck_assert_ptr_nonnull(strstr(why, "block 3 torn"));
	}

	f = fmemopen(buf, sizeof(buf), "w+");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(wc_model_save(m, f), 0);
	rewind(f);
	ck_assert_int_eq(wc_model_load(&back, f), 0);
	fclose(f);
	w = wc_model_window(back);
	ck_assert_uint_eq(w.lo, 2);
	ck_assert_uint_eq(w.hi, 3);
	ck_assert(model_accepts(back, w, (uint64_t[]){ 1, UINT64_MAX, 3, 1 }));
	ck_assert(!model_accepts(back, w, (uint64_t[]){ 1, 1, 1, 0 }));
	wc_model_free(back);
	wc_model_free(m);

	f = fmemopen((char *)"blocks 4 block_size 512\nx 1 1\n", 30, "r");
	ck_assert_int_eq(wc_model_load(&back, f), -EINVAL);
	fclose(f);
}
END_TEST

/* The simulator's own sabotage switch: a correct protocol whose every
 * second fence takes no effect must be caught. */
START_TEST(test_toy_skipped_fence_caught)
{
	ck_assert_uint_gt(toy_violations(TOY_CORRECT, 2), 0);
}
END_TEST

static Suite *crash_suite(void)
{
	Suite *s = suite_create("crashsim");
	TCase *engine = tcase_create("engine");
	TCase *toy = tcase_create("toy-protocol");
	TCase *model = tcase_create("model");

	tcase_add_test(engine, test_attach_takes_current_content);
	tcase_add_test(engine, test_drain_makes_snapshot_persistent);
	tcase_add_test(engine, test_store_after_flush_not_covered);
	tcase_add_test(engine, test_lines_whole_torn_by_word);
	tcase_add_test(engine, test_atomic8_never_torn);
	tcase_add_test(engine, test_drain_is_per_thread);
	tcase_add_test(engine, test_crash_point_callbacks);
	tcase_add_test(engine, test_write_image_file);
	tcase_add_test(engine, test_stray_outside_mapping);
	tcase_add_test(engine, test_reattach_keeps_persistent_image);
	tcase_add_test(engine, test_random_is_seeded);
	suite_add_tcase(s, engine);

	tcase_add_test(toy, test_toy_correct_protocol_passes);
	tcase_add_test(toy, test_toy_commit_before_data_drain_caught);
	tcase_add_test(toy, test_toy_missing_flush_caught);
	tcase_add_test(toy, test_toy_missing_commit_drain_caught);
	tcase_add_test(toy, test_toy_skipped_fence_caught);
	suite_add_tcase(s, toy);

	tcase_add_test(model, test_pattern_roundtrip_and_torn);
	tcase_add_test(model, test_model_window);
	tcase_add_test(model, test_model_discard_and_save);
	suite_add_tcase(s, model);
	return s;
}

int main(void)
{
	return wc_test_main(crash_suite());
}
