/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_policy_line.c -- the flush policy a cache measures on its own free
 * blocks and keeps in the superblock line at offset 512:
 *   - wc_create measures and records it; a reopen on the same CPU uses the
 *     record without measuring (the line stays byte for byte);
 *   - a record from another CPU (the line edited as if the file had moved,
 *     CRC made valid) or another setup (WC_PMEM_NO_AVX) is measured again;
 *   - a torn, damaged or all-zero line is measured again, never trusted,
 *     while a valid one is trusted as written;
 *   - a measurement never writes a block that holds data: every byte of the
 *     superblock (outside the line), the entries and the data blocks that
 *     hold data is the same after a reopen that measured;
 *   - the environment and the cache's options win; a small cache is not
 *     measured on;
 *   - under the power-failure simulator, every crash image of the record's
 *     write (torn per 8-byte word, or per line) holds the old record, the
 *     new one, or a line that fails its check -- never a valid mix -- and a
 *     reopen of a torn one measures again.
 * Timing is never asserted: only where the policy came from and what it did.
 */
#include <check.h>
#include <stdio.h>
#include <sys/mman.h>

#include "cachetest.h"
#include "crashsim.h"
#include "util/crc32c.h"
#include "flush/engine.h"
#include "core/format.h"
#include "testcpu.h"
#include "core/testhooks.h"
#include "testmain.h"

#define BS 4096u
#define CACHE_BYTES (24u << 20) /* > the 4 MiB a measurement needs, with data in it */
#define ORIGIN_BLOCKS 16384u

static char cache_path[PATH_MAX], origin_path[PATH_MAX];

/* A policy is measured only where a cached strategy exists. */
#define NEED_MEASURABLE() WC_TEST_NEED_CPU(WC_CPU_CLFLUSHOPT, 64)

static void config(struct wc_config *cfg)
{
	wc_config_init(cfg);
	cfg->no_threads = true; /* nothing moves behind the test's back */
	cfg->high_watermark = 100;
	cfg->low_watermark = 99;
}

static wc_cache *create(uint64_t bytes)
{
	struct wc_config cfg;
	wc_cache *c;
	int ret;

	ct_make_file(cache_path, sizeof(cache_path), "pol.pmem", bytes);
	ct_make_file(origin_path, sizeof(origin_path), "pol.origin", (uint64_t)ORIGIN_BLOCKS * BS);
	config(&cfg);
	ret = wc_create(&c, cache_path, origin_path, &cfg);
	ck_assert_msg(ret == 0, "wc_create: %d %s", ret, wc_errmsg());
	return c;
}

static wc_cache *reopen(void)
{
	struct wc_config cfg;
	wc_cache *c;
	int ret;

	config(&cfg);
	ret = wc_open(&c, cache_path, origin_path, &cfg);
	ck_assert_msg(ret == 0, "wc_open: %d %s", ret, wc_errmsg());
	return c;
}

static void stats(wc_cache *c, struct wc_stats *st)
{
	ck_assert_int_eq(wc_get_stats(c, st), 0);
	ck_assert_ptr_nonnull(st->pmem_source);
	ck_assert_ptr_nonnull(st->pmem.reason);
}

static void assert_source(wc_cache *c, const char *source, const char *needle)
{
	struct wc_stats st;

	stats(c, &st);
	ck_assert_msg(strcmp(st.pmem_source, source) == 0, "source \"%s\", expected \"%s\" (%s)",
	              st.pmem_source, source, st.pmem.reason);
	if (needle)
		ck_assert_msg(strstr(st.pmem.reason, needle), "reason \"%s\" lacks \"%s\"",
		              st.pmem.reason, needle);
}

static void read_line(struct wc_pmem_policy *pl)
{
	int fd = open(cache_path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, pl, sizeof(*pl), WC_POLICY_OFFSET), (ssize_t)sizeof(*pl));
	close(fd);
}

static void write_line(const struct wc_pmem_policy *pl)
{
	int fd = open(cache_path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, pl, sizeof(*pl), WC_POLICY_OFFSET), (ssize_t)sizeof(*pl));
	close(fd);
}

static void *slurp(size_t *len)
{
	int fd = open(cache_path, O_RDONLY);
	struct stat st;
	char *buf;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, *len, 0), (ssize_t)*len);
	close(fd);
	return buf;
}

START_TEST(test_record_survives_reopen)
{
	struct wc_pmem_policy before, after;
	struct wc_stats st;
	wc_cache *c;

	NEED_MEASURABLE();
	c = create(CACHE_BYTES);
	assert_source(c, "calibrated at create", "measured on this cache's free blocks (at create");
	stats(c, &st);
	ck_assert_int_eq(wc_close(c), 0);

	read_line(&before);
	ck_assert_int_eq(wc_policy_check(&before), 0);
	ck_assert_uint_eq(before.source, WC_POLICY_SRC_CREATE);
	ck_assert_uint_eq(before.max_size_kib, BS >> 10);
	ck_assert(memcmp(before.vendor, wc_cpu_get()->vendor, 12) == 0);
	ck_assert_uint_eq(before.threshold == UINT64_MAX ? SIZE_MAX : before.threshold,
	                  st.pmem.threshold);

	for (int i = 0; i < 2; i++) {
		c = reopen();
		assert_source(c, "recorded", "recorded in the superblock");
		stats(c, &st);
		ck_assert_uint_eq(before.threshold == UINT64_MAX ? SIZE_MAX : before.threshold,
		                  st.pmem.threshold);
		ck_assert_int_eq(wc_close(c), 0);
		read_line(&after);
		ck_assert(memcmp(&before, &after, sizeof(before)) == 0); /* not measured again */
	}
}
END_TEST

/* A valid record is trusted as written, even one this machine would not
 * measure: that is what makes the next three tests meaningful. */
START_TEST(test_valid_record_is_used)
{
	struct wc_pmem_policy pl;
	struct wc_stats st;
	wc_cache *c;

	NEED_MEASURABLE();
	ck_assert_int_eq(wc_close(create(CACHE_BYTES)), 0);
	read_line(&pl);
	ck_assert_uint_eq(pl.version, 2);
	ck_assert_uint_ne(pl.small_strategy, WC_POLICY_STRAT_NONE);
	ck_assert_uint_ne(pl.large_strategy, WC_POLICY_STRAT_NONE);
	/* The recorded width and crossover, not a new measurement's. */
	pl.threshold = 2048;
	pl.small_strategy = WC_POLICY_STRAT_NT_SSE2;
	pl.large_strategy = WC_POLICY_STRAT_CACHED_CLFLUSHOPT;
	pl.crc = wc_policy_crc(&pl);
	write_line(&pl);
	c = reopen();
	assert_source(c, "recorded", "crossover 2048 B: nt-sse2 below 2048 B, cached+clflushopt");
	stats(c, &st);
	ck_assert_uint_eq(st.pmem.threshold, 2048);
	ck_assert_str_eq(st.pmem.small_strategy, "nt-sse2");
	ck_assert_str_eq(st.pmem.large_strategy, "cached+clflushopt");
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* A line from before widths were measured (version 1, no strategies)
 * reads as what was chosen then: the widest width, the cached path above
 * its threshold. */
START_TEST(test_version1_record_is_used)
{
	struct wc_pmem_policy pl;
	struct wc_stats st;
	wc_cache *c;

	NEED_MEASURABLE();
	ck_assert_int_eq(wc_close(create(CACHE_BYTES)), 0);
	read_line(&pl);
	pl.version = 1;
	pl.threshold = 1024;
	pl.small_strategy = pl.large_strategy = WC_POLICY_STRAT_NONE;
	pl.crc = wc_policy_crc(&pl);
	write_line(&pl);
	c = reopen();
	assert_source(c, "recorded", "crossover 1024 B");
	stats(c, &st);
	ck_assert_uint_eq(st.pmem.threshold, 1024);
	ck_assert_str_eq(st.pmem.small_strategy, wc_strategy_get(wc_strategy_best_nt(pl.features))->name);
	ck_assert_msg(strncmp(st.pmem.large_strategy, "cached+", 7) == 0, "%s",
	              st.pmem.large_strategy);
	ck_assert_int_eq(wc_close(c), 0);

	/* A version-2 line with a strategy this library does not know is
	 * damaged: measured again, never trusted. */
	read_line(&pl);
	pl.version = 2;
	pl.small_strategy = 42;
	pl.crc = wc_policy_crc(&pl);
	write_line(&pl);
	c = reopen();
	assert_source(c, "recalibrated", "strategies 42");
	ck_assert_int_eq(wc_close(c), 0);
	read_line(&pl);
	ck_assert_int_eq(wc_policy_check(&pl), 0);
	ck_assert_uint_eq(pl.version, 2);
	ck_assert_uint_le(pl.small_strategy, WC_POLICY_STRAT_NT_AVX512);
}
END_TEST

START_TEST(test_other_cpu_recalibrates)
{
	struct wc_pmem_policy pl, now;
	wc_cache *c;

	NEED_MEASURABLE();
	ck_assert_int_eq(wc_close(create(CACHE_BYTES)), 0);
	/* The file moved to a machine one stepping away, with a policy that
	 * machine measured: valid CRC, foreign signature. */
	read_line(&pl);
	pl.stepping ^= 1;
	pl.threshold = 1024;
	pl.crc = wc_policy_crc(&pl);
	write_line(&pl);
	c = reopen();
	assert_source(c, "recalibrated", "recorded on another CPU");
	ck_assert_int_eq(wc_close(c), 0);
	read_line(&now);
	ck_assert_int_eq(wc_policy_check(&now), 0);
	ck_assert_uint_eq(now.source, WC_POLICY_SRC_OPEN);
	ck_assert_uint_eq(now.stepping, wc_cpu_get()->stepping);
	/* ... and the new record is used from then on. */
	c = reopen();
	assert_source(c, "recorded", "at an open");
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* Another setup on the same CPU (no AVX: another NT width) is another
 * signature too.  A CPU with AVX-512F has AVX2, so AVX2 is what it takes
 * for WC_PMEM_NO_AVX to change anything. */
START_TEST(test_other_setup_recalibrates)
{
	wc_cache *c;

	NEED_MEASURABLE();
	WC_TEST_NEED_CPU(WC_CPU_AVX2, 0);
	ck_assert_int_eq(wc_close(create(CACHE_BYTES)), 0);
	setenv("WC_PMEM_NO_AVX", "1", 1);
	wc_persist_default_reset();
	c = reopen();
	assert_source(c, "recalibrated", "recorded on another CPU or setup");
	ck_assert_int_eq(wc_close(c), 0);
	unsetenv("WC_PMEM_NO_AVX");
	wc_persist_default_reset();
}
END_TEST

START_TEST(test_damaged_line_recalibrates)
{
	struct wc_pmem_policy good, other, bad, now;
	wc_cache *c;

	NEED_MEASURABLE();
	ck_assert_int_eq(wc_close(create(CACHE_BYTES)), 0);
	read_line(&good);
	other = good;
	other.threshold = good.threshold == 1536 ? 3072 : 1536;
	other.time += 1;
	other.crc = wc_policy_crc(&other);

	for (int k = 0; k < 7; k++) {
		const char *needle = "record damaged";

		bad = good;
		switch (k) {
		case 0: /* torn: the first half of one record, the rest of another */
			memcpy(&bad, &other, 32);
			break;
		case 1: /* torn at an 8-byte word: a new threshold, the old CRC */
			bad.threshold = other.threshold;
			break;
		case 2: /* one bit in the vendor */
			bad.vendor[3] ^= 0x10;
			break;
		case 3: /* the CRC itself */
			bad.crc ^= 1;
			break;
		case 4: /* a newer version of the line, consistent CRC */
			bad.version = WC_POLICY_VERSION + 1;
			bad.crc = wc_policy_crc(&bad);
			break;
		case 5: /* never written (caches from before the line existed) */
			memset(&bad, 0, sizeof(bad));
			needle = "none recorded";
			break;
		case 6: /* garbage */
			memset(&bad, 0xa5, sizeof(bad));
			break;
		}
		write_line(&bad);
		c = reopen();
		assert_source(c, "recalibrated", needle);
		ck_assert_int_eq(wc_close(c), 0);
		read_line(&now);
		ck_assert_msg(wc_policy_check(&now) == 0, "case %d: %s", k, wc_errmsg());
		ck_assert_uint_eq(now.source, WC_POLICY_SRC_OPEN);
	}
}
END_TEST

/*
 * Data everywhere (a third of the blocks, spread out, two versions of some),
 * then a reopen that must measure: every byte that is not a free block's
 * data or the policy line is the same afterwards, and the measurement did
 * write into free blocks.
 */
START_TEST(test_never_touches_data)
{
	char *buf = malloc(BS), *a, *b;
	struct wc_layout l;
	struct wc_pmem_policy zero;
	size_t alen, blen;
	uint64_t seed = 42, n_data = 0, n_free = 0, free_changed = 0;
	wc_cache *c;

	NEED_MEASURABLE();
	ck_assert_ptr_nonnull(buf);
	c = create(CACHE_BYTES);
	ck_assert_int_eq(wc_layout_compute(&l, CACHE_BYTES, BS), 0);
	for (uint64_t ob = 0; ob < l.n_blocks; ob += 3) {
		ct_fill_block(buf, BS, ob, 1);
		ck_assert_int_eq(wc_write(c, buf, BS, ob * BS, 0), BS);
	}
	ck_assert_int_eq(wc_flush(c), 0);
	/* Second versions of some: the first ones are freed by the commit. */
	for (uint64_t ob = 0; ob < l.n_blocks; ob += 3) {
		if (ct_rand(&seed) % 4)
			continue;
		ct_fill_block(buf, BS, ob, 2);
		ck_assert_int_eq(wc_write(c, buf, BS, ob * BS, 0), BS);
	}
	ck_assert_int_eq(wc_close(c), 0);

	/* Mark the free blocks' bytes, and ask for a measurement. */
	{
		int fd = open(cache_path, O_RDWR);
		char *m;

		ck_assert_int_ge(fd, 0);
		m = mmap(NULL, CACHE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		ck_assert_ptr_ne(m, MAP_FAILED);
		close(fd);
		for (uint64_t i = 0; i < l.n_blocks; i++)
			if (wc_pmem_entry(m, &l, i)->seq == WC_NONE)
				memset(wc_pmem_data(m, &l, i), 0xee, BS);
		munmap(m, CACHE_BYTES);
	}
	memset(&zero, 0, sizeof(zero));
	write_line(&zero);
	a = slurp(&alen);

	c = reopen();
	assert_source(c, "recalibrated", "none recorded");
	ck_assert_int_eq(wc_close(c), 0);
	b = slurp(&blen);
	ck_assert_uint_eq(alen, blen);

	ck_assert(memcmp(a, b, WC_POLICY_OFFSET) == 0);
	ck_assert(memcmp(a + WC_POLICY_OFFSET + 64, b + WC_POLICY_OFFSET + 64,
	                 l.data_offset - WC_POLICY_OFFSET - 64) == 0); /* superblock + entries */
	for (uint64_t i = 0; i < l.n_blocks; i++) {
		const char *da = wc_pmem_data(a, &l, i), *db = wc_pmem_data(b, &l, i);

		if (wc_pmem_entry(a, &l, i)->seq != WC_NONE) {
			n_data++;
			ck_assert_msg(memcmp(da, db, BS) == 0, "block %llu holds data and changed",
			              (unsigned long long)i);
		} else {
			n_free++;
			for (unsigned k = 0; k < BS; k++)
				if ((unsigned char)db[k] != 0xee) {
					free_changed++;
					break;
				}
		}
	}
	ck_assert_uint_gt(n_data, l.n_blocks / 4);
	ck_assert_uint_gt(n_free, 0);
	ck_assert_msg(free_changed > 0, "the measurement wrote no free block: the test proves nothing");
	/* Past the used area (the file's tail) nothing changed either. */
	ck_assert(memcmp(a + l.bytes_used, b + l.bytes_used, alen - l.bytes_used) == 0);

	/* And the data reads back through the cache. */
	c = reopen();
	for (uint64_t ob = 0; ob < l.n_blocks; ob += 3) {
		uint64_t v;

		ck_assert_int_eq(wc_read(c, buf, BS, ob * BS), BS);
		v = ct_block_version(buf, BS, ob);
		ck_assert_msg(v == 1 || v == 2, "block %llu reads version %llu",
		              (unsigned long long)ob, (unsigned long long)v);
	}
	ck_assert_int_eq(wc_close(c), 0);
	free(a);
	free(b);
	free(buf);
}
END_TEST

START_TEST(test_env_and_options_win)
{
	struct wc_pmem_policy before, after;
	struct wc_config cfg;
	struct wc_stats st;
	wc_cache *c;

	NEED_MEASURABLE();
	ck_assert_int_eq(wc_close(create(CACHE_BYTES)), 0);
	read_line(&before);

	setenv("WC_PMEM_THRESHOLD", "2048", 1);
	wc_persist_default_reset();
	c = reopen();
	assert_source(c, "env", "env WC_PMEM_THRESHOLD 2048");
	stats(c, &st);
	ck_assert_uint_eq(st.pmem.threshold, 2048);
	ck_assert_int_eq(wc_close(c), 0);
	unsetenv("WC_PMEM_THRESHOLD");
	wc_persist_default_reset();

	config(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, "pmem_threshold=768"), 0);
	ck_assert_int_eq(wc_open(&c, cache_path, origin_path, &cfg), 0);
	assert_source(c, "config", "config 768");
	ck_assert_int_eq(wc_close(c), 0);

	read_line(&after);
	ck_assert(memcmp(&before, &after, sizeof(before)) == 0); /* overrides keep the record */
	c = reopen();
	assert_source(c, "recorded", NULL);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

START_TEST(test_small_cache_not_measured)
{
	struct wc_pmem_policy pl, zero;
	wc_cache *c;

	NEED_MEASURABLE();
	c = create(2u << 20);
	assert_source(c, strncmp(wc_persist_default()->info.reason, "cpu quirk", 9) == 0 ?
	                         "quirk table" : "engine",
	              "not measured on this cache (at create;");
	ck_assert_int_eq(wc_close(c), 0);
	read_line(&pl);
	memset(&zero, 0, sizeof(zero));
	ck_assert(memcmp(&pl, &zero, sizeof(pl)) == 0);
}
END_TEST

/* Crash images of the policy line, captured around every drain of an open
 * that measures and rewrites the record. */
#define MAX_LINES 512

struct line_capture {
	void *img;
	size_t len;
	unsigned n;
	struct wc_pmem_policy lines[MAX_LINES];
};

static void capture(void *ctx, struct wc_crashsim *sim, enum wc_crash_event ev, uint64_t drain)
{
	struct line_capture *lc = ctx;
	/* Before a drain: mostly torn images (each 8-byte word old, flushed or
	 * current), some per line, both extremes; after it: per line. */
	unsigned n = ev == WC_CRASH_BEFORE_DRAIN ? 48 : ev == WC_CRASH_AFTER_DRAIN ? 4 : 0;

	(void)drain;
	for (unsigned k = 0; k < n && lc->n < MAX_LINES; k++) {
		enum wc_crash_mode mode = ev == WC_CRASH_AFTER_DRAIN ? WC_CRASH_LINES :
		                          k == 0 ? WC_CRASH_OLD : k == 1 ? WC_CRASH_NEW :
		                          k < 8 ? WC_CRASH_LINES : WC_CRASH_TORN;

		if (wc_crashsim_image(sim, mode, lc->img) != 0)
			return;
		memcpy(&lc->lines[lc->n++], (char *)lc->img + WC_POLICY_OFFSET,
		       sizeof(struct wc_pmem_policy));
	}
}

START_TEST(test_torn_record_under_crash_sim)
{
	struct wc_crashsim_config sc;
	struct wc_crashsim *sim;
	struct line_capture *lc = calloc(1, sizeof(*lc));
	struct wc_pmem_policy old, new, zero;
	unsigned n_old = 0, n_new = 0, n_torn = 0, reopened = 0;
	wc_cache *c;

	NEED_MEASURABLE();
	ck_assert_ptr_nonnull(lc);
	ck_assert_int_eq(wc_close(create(CACHE_BYTES)), 0);
	/* A valid record from "another CPU": the open re-measures and replaces
	 * it, so the crash images hold a valid old line, a valid new line, and
	 * whatever tearing makes of the two. */
	read_line(&old);
	old.stepping ^= 1;
	old.threshold = 4096;
	old.crc = wc_policy_crc(&old);
	write_line(&old);

	lc->len = CACHE_BYTES;
	lc->img = malloc(lc->len);
	ck_assert_ptr_nonnull(lc->img);
	memset(&sc, 0, sizeof(sc));
	sc.seed = 7;
	sc.point = capture;
	sc.ctx = lc;
	ck_assert_int_eq(wc_crashsim_new(&sim, &sc), 0);
	wc_test_hooks = wc_crashsim_hooks(sim);
	c = reopen();
	assert_source(c, "recalibrated", "recorded on another CPU");
	ck_assert_int_eq(wc_close(c), 0);
	wc_test_hooks = NULL;
	ck_assert_uint_eq(wc_crashsim_strays(sim), 0);
	wc_crashsim_free(sim);
	read_line(&new);
	ck_assert_int_eq(wc_policy_check(&new), 0);
	ck_assert_uint_gt(lc->n, 0);

	memset(&zero, 0, sizeof(zero));
	for (unsigned i = 0; i < lc->n; i++) {
		const struct wc_pmem_policy *l = &lc->lines[i];

		if (memcmp(l, &old, sizeof(old)) == 0) {
			n_old++;
			continue;
		}
		if (memcmp(l, &new, sizeof(new)) == 0) {
			n_new++;
			continue;
		}
		/* Anything else must fail its check, and is never trusted. */
		ck_assert_msg(wc_policy_check(l) != 0, "crash image %u: a valid line that is "
		              "neither the old record nor the new one", i);
		n_torn++;
		if (reopened < 2) {
			reopened++;
			write_line(l);
			c = reopen();
			assert_source(c, "recalibrated", "record damaged");
			ck_assert_int_eq(wc_close(c), 0);
		}
	}
	fprintf(stderr, "# %u crash images of the policy line: %u old, %u new, %u torn\n", lc->n,
	        n_old, n_new, n_torn);
	ck_assert_uint_gt(n_old, 0);
	ck_assert_uint_gt(n_new, 0);
	ck_assert_msg(n_torn > 0, "no torn line among %u images: the test proves nothing", lc->n);
	free(lc->img);
	free(lc);
}
END_TEST

static Suite *policy_line_suite(void)
{
	Suite *s = suite_create("policy-line");
	TCase *tc = tcase_create("policy-line");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_record_survives_reopen);
	tcase_add_test(tc, test_valid_record_is_used);
	tcase_add_test(tc, test_version1_record_is_used);
	tcase_add_test(tc, test_other_cpu_recalibrates);
	tcase_add_test(tc, test_other_setup_recalibrates);
	tcase_add_test(tc, test_damaged_line_recalibrates);
	tcase_add_test(tc, test_never_touches_data);
	tcase_add_test(tc, test_env_and_options_win);
	tcase_add_test(tc, test_small_cache_not_measured);
	tcase_add_test(tc, test_torn_record_under_crash_sim);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(policy_line_suite());
}
