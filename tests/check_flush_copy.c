/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_flush_copy.c -- every copy and set strategy of the flush engine is
 * byte-exact against memcpy/memset and writes nothing outside [dst, dst+n).
 *
 * One tcase per way of copying: each strategy, the process default policy
 * (wc_pmem_memcpy/memset) and two split policies (NT below the switch,
 * cached at and above, so both sides of the switch and the switch itself
 * run).  A strategy or policy this CPU (testcpu.h) or build cannot run
 * reports each of its tests as SKIP, naming what it lacks.  Each tcase
 * covers
 *   - every length 0..4160 at every destination misalignment 0..63, the
 *     source misalignment varying with both;
 *   - every (source, destination) misalignment pair 0..63 x 0..63 at the
 *     lengths around every boundary the code has (line, 4-line unroll,
 *     768-byte switch, page);
 *   - 64 MiB + 67 bytes, misaligned, between guard zones.
 * The full 4161 x 64 x 64 cross product would copy ~35 GB per strategy; the
 * two sweeps cover every length/destination pair and every alignment pair.
 *
 * Destination bytes outside the copy hold 0x00..0x7f and copied/set bytes
 * 0x80..0xff, so a missed or stray byte can never match by accident.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "flush/engine.h"
#include "testcpu.h"
#include "testmain.h"

#define MAXLEN 4160
#define GUARD  192
#define BUFLEN (GUARD + 64 + MAXLEN + GUARD)

struct copier {
	char name[48];
	wc_copy_fn copy;          /* a strategy's own functions ... */
	wc_set_fn set;
	struct wc_persist_policy policy; /* ... or a policy's (copy == NULL) */
	int use_api;              /* wc_pmem_memcpy/memset: the process default */
	char skip[320];           /* why this CPU or build cannot run it; "" = it can */
	char error[320];          /* why its policy failed to set up: a failure */
};

/* The copier of loop test _i; a test it cannot run is a SKIP. */
#define COPIER(c)                                                         \
	const struct copier *c = &copiers[_i];                            \
	if (c->skip[0])                                                   \
		WC_TEST_SKIP("%s", c->skip);                              \
	ck_assert_msg(!c->error[0], "%s: %s", c->name, c->error)

static struct copier copiers[WC_STRAT_COUNT + 4];
static unsigned ncopiers;

/* Each copy is drained before it is checked: reading a line whose NT
 * stores are still in flight stalls the load until they reach memory, one
 * line at a time, which made this test 8x slower. */
static void do_copy(const struct copier *c, void *d, const void *s, size_t n)
{
	if (c->use_api) {
		wc_pmem_memcpy(d, s, n);
		wc_pmem_drain();
	} else if (c->copy) {
		c->copy(d, s, n);
		wc_persist_default()->drain();
	} else {
		wc_persist_copy(&c->policy, d, s, n);
		wc_persist_drain(&c->policy);
	}
}

static void do_set(const struct copier *c, void *d, int v, size_t n)
{
	if (c->use_api) {
		wc_pmem_memset(d, v, n);
		wc_pmem_drain();
	} else if (c->set) {
		c->set(d, v, n);
		wc_persist_default()->drain();
	} else {
		wc_persist_set(&c->policy, d, v, n);
		wc_persist_drain(&c->policy);
	}
}

static unsigned char *dst_buf, *pattern, *src_buf;

/* C11 wants the size a multiple of the alignment (ASan enforces it). */
static void *page_alloc(size_t n)
{
	return aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
}

static void setup(void)
{
	dst_buf = page_alloc(BUFLEN);
	pattern = page_alloc(BUFLEN);
	src_buf = page_alloc(MAXLEN + 128);
	ck_assert(dst_buf && pattern && src_buf);
	for (size_t i = 0; i < BUFLEN; i++)
		pattern[i] = (unsigned char)((i * 37 + 11) & 0x7f);
	for (size_t i = 0; i < MAXLEN + 128; i++)
		src_buf[i] = (unsigned char)(0x80 | ((i * 29 + 3) & 0x7f));
	memcpy(dst_buf, pattern, BUFLEN);
}

static void teardown(void)
{
	free(dst_buf);
	free(pattern);
	free(src_buf);
}

static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
	if (memcmp(a, b, n) == 0) /* the fast path: the index only on failure */
		return n;
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return n;
}

/* Failure checks here are `if (...) ck_abort_msg()`: ck_assert() records a
 * checkpoint through a pipe to the Check parent at every call, and a
 * million of them made this program spend 20 s in write().
 *
 * Check a copy of n bytes to dst_buf+GUARD+doff from src_buf+soff and the
 * GUARD bytes on either side (three lines: every strategy works in whole
 * lines, so a stray store lands next to the range), then restore. */
static void verify_copy(const char *who, size_t n, unsigned doff, unsigned soff)
{
	unsigned char *d = dst_buf + GUARD + doff;
	const unsigned char *p = pattern + GUARD + doff;
	size_t i;

	if ((i = first_diff(d - GUARD, p - GUARD, GUARD)) != GUARD)
		ck_abort_msg("%s: copy n=%zu doff=%u soff=%u wrote byte %zd before dst", who, n,
		             doff, soff, (ssize_t)i - GUARD);
	if ((i = first_diff(d, src_buf + soff, n)) != n)
		ck_abort_msg("%s: copy n=%zu doff=%u soff=%u: byte %zu differs", who, n, doff, soff,
		             i);
	if ((i = first_diff(d + n, p + n, GUARD)) != GUARD)
		ck_abort_msg("%s: copy n=%zu doff=%u soff=%u wrote byte %zu after dst+n", who, n,
		             doff, soff, i);
	memcpy(d, p, n);
}

static void verify_set(const char *who, size_t n, unsigned doff, int v)
{
	unsigned char *d = dst_buf + GUARD + doff;
	const unsigned char *p = pattern + GUARD + doff;
	unsigned char expect[MAXLEN];
	size_t i;

	memset(expect, v, n);
	if ((i = first_diff(d - GUARD, p - GUARD, GUARD)) != GUARD)
		ck_abort_msg("%s: set n=%zu doff=%u wrote byte %zd before dst", who, n, doff,
		             (ssize_t)i - GUARD);
	if ((i = first_diff(d, expect, n)) != n)
		ck_abort_msg("%s: set n=%zu doff=%u c=0x%02x: byte %zu is 0x%02x", who, n, doff,
		             v & 0xff, i, d[i]);
	if ((i = first_diff(d + n, p + n, GUARD)) != GUARD)
		ck_abort_msg("%s: set n=%zu doff=%u wrote byte %zu after dst+n", who, n, doff, i);
	memcpy(d, p, n);
}

/* Lengths at every boundary: lines, the 4-line unroll, 768, pages. */
static const size_t edge_lengths[] = {
	0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 191, 192,
	255, 256, 257, 319, 320, 511, 512, 513, 767, 768, 769, 1023, 1024, 1025, 1535, 1536,
	2047, 2048, 4095, 4096, 4097, 4159, 4160,
};
#define NEDGE (sizeof(edge_lengths) / sizeof(edge_lengths[0]))

START_TEST(test_copy_lengths)
{
	COPIER(c);

	for (unsigned doff = 0; doff < 64; doff++)
		for (size_t n = 0; n <= MAXLEN; n++) {
			unsigned soff = (unsigned)((doff * 7 + n) % 64);

			do_copy(c, dst_buf + GUARD + doff, src_buf + soff, n);
			verify_copy(c->name, n, doff, soff);
		}
}
END_TEST

START_TEST(test_copy_alignments)
{
	COPIER(c);

	for (unsigned soff = 0; soff < 64; soff++)
		for (unsigned doff = 0; doff < 64; doff++)
			for (size_t k = 0; k < NEDGE; k++) {
				size_t n = edge_lengths[k];

				do_copy(c, dst_buf + GUARD + doff, src_buf + soff, n);
				verify_copy(c->name, n, doff, soff);
			}
}
END_TEST

START_TEST(test_set_lengths)
{
	COPIER(c);

	for (unsigned doff = 0; doff < 64; doff++)
		for (size_t n = 0; n <= MAXLEN; n++) {
			int v = 0x80 | (int)((n * 13 + doff) & 0x7f);

			do_set(c, dst_buf + GUARD + doff, v, n);
			verify_set(c->name, n, doff, v);
		}
}
END_TEST

START_TEST(test_set_alignments)
{
	COPIER(c);

	/* memset has no source: the byte value takes its place. */
	for (unsigned doff = 0; doff < 64; doff++)
		for (size_t k = 0; k < NEDGE; k++)
			for (int v = 0x80; v <= 0xff; v += 0x3f) {
				do_set(c, dst_buf + GUARD + doff, v, edge_lengths[k]);
				verify_set(c->name, edge_lengths[k], doff, v);
			}
}
END_TEST

#define HUGE_LEN ((64u << 20) + 67)
#define HUGE_GUARD 4096

/* Untouched guard bytes around the huge copy: index of the first changed. */
static size_t guard_changed(const unsigned char *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (g[i] != 0x11)
			return i;
	return n;
}

START_TEST(test_huge)
{
	size_t len = HUGE_LEN + 2 * HUGE_GUARD + 64, before, after, i;
	unsigned char *src, *dst, *d;
	COPIER(c);

	src = mmap(NULL, HUGE_LEN + 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	d = dst + HUGE_GUARD + 29;
	before = (size_t)(d - dst);
	after = len - before - HUGE_LEN;

	ck_assert(src != MAP_FAILED && dst != MAP_FAILED);
	for (i = 0; i < HUGE_LEN + 64; i++)
		src[i] = (unsigned char)(0x80 | ((i * 7 + (i >> 12)) & 0x7f));
	memset(dst, 0x11, len);

	do_copy(c, d, src + 3, HUGE_LEN);
	if ((i = guard_changed(dst, before)) != before)
		ck_abort_msg("%s: 64 MiB copy wrote %zu bytes before dst", c->name, before - i);
	if ((i = first_diff(d, src + 3, HUGE_LEN)) != HUGE_LEN)
		ck_abort_msg("%s: 64 MiB copy differs at %zu", c->name, i);
	if ((i = guard_changed(d + HUGE_LEN, after)) != after)
		ck_abort_msg("%s: 64 MiB copy wrote byte %zu past the end", c->name, i);

	do_set(c, d + 1, 0xc3, HUGE_LEN - 2);
	if (d[0] != src[3] || d[HUGE_LEN - 1] != src[3 + HUGE_LEN - 1])
		ck_abort_msg("%s: 64 MiB set wrote outside its range", c->name);
	for (i = 1; i < HUGE_LEN - 1 && d[i] == 0xc3; i++)
		;
	if (i != HUGE_LEN - 1)
		ck_abort_msg("%s: 64 MiB set: byte %zu is 0x%02x", c->name, i, d[i]);
	if (guard_changed(dst, before) != before || guard_changed(d + HUGE_LEN, after) != after)
		ck_abort_msg("%s: 64 MiB set touched the guards", c->name);

	munmap(src, HUGE_LEN + 64);
	munmap(dst, len);
}
END_TEST

static void add_strategy(enum wc_strategy_id id)
{
	const struct wc_strategy *s = wc_strategy_get(id);
	struct copier *c = &copiers[ncopiers++];
	const char *unfit;

	snprintf(c->name, sizeof(c->name), "%s", s ? s->name : "?");
	if (!s || !s->copy) {
		snprintf(c->skip, sizeof(c->skip), "%s: not built for this target", s ? s->name : "?");
		return;
	}
	unfit = wc_test_cpu_unfit(s->needs, 0);
	if (unfit) {
		snprintf(c->skip, sizeof(c->skip), "%s %s", s->name, unfit);
		return;
	}
	c->copy = s->copy;
	c->set = s->set;
}

/* A split policy with its cached side on `needs`.  Without it, or without
 * 64-byte lines, the engine falls back to NT at every size, which another
 * tcase tests already: the split itself is skipped, not tested as
 * something else. */
static void add_policy(const char *name, const struct wc_pmem_config *cfg, unsigned needs)
{
	struct copier *c = &copiers[ncopiers++];
	const char *unfit = wc_test_cpu_unfit(needs, 64);

	snprintf(c->name, sizeof(c->name), "%s", name);
	if (unfit) {
		snprintf(c->skip, sizeof(c->skip), "policy %s %s", name, unfit);
		return;
	}
	if (wc_persist_policy_init(&c->policy, cfg) != 0)
		snprintf(c->error, sizeof(c->error), "wc_persist_policy_init: %s", wc_errmsg());
}

static Suite *flush_copy_suite(void)
{
	struct wc_pmem_config split = { .threshold = 768 };
	struct wc_pmem_config split_clwb = { .threshold = 256, .flush_insn = WC_PMEM_CLWB };
	Suite *s = suite_create("flush-copy");

	for (int id = 0; id < WC_STRAT_COUNT; id++)
		add_strategy((enum wc_strategy_id)id);
	snprintf(copiers[ncopiers].name, sizeof(copiers[0].name), "default-policy");
	copiers[ncopiers++].use_api = 1;
	add_policy("split-768", &split, WC_CPU_CLFLUSHOPT);
	add_policy("split-256-clwb", &split_clwb, WC_CPU_CLWB);

	for (unsigned i = 0; i < ncopiers; i++) {
		TCase *tc = tcase_create(copiers[i].name);

		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_set_timeout(tc, 120);
		tcase_add_loop_test(tc, test_copy_lengths, (int)i, (int)i + 1);
		tcase_add_loop_test(tc, test_copy_alignments, (int)i, (int)i + 1);
		tcase_add_loop_test(tc, test_set_lengths, (int)i, (int)i + 1);
		tcase_add_loop_test(tc, test_set_alignments, (int)i, (int)i + 1);
		tcase_add_loop_test(tc, test_huge, (int)i, (int)i + 1);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	return wc_test_main(flush_copy_suite());
}
