/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_readahead.c -- read misses: batched, and read ahead of a
 * sequential reader into DRAM; never stale after the origin changed
 * (write-back, a write around the cache, a discard).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "wbtest.h"

#define RA_BLOCKS 4096u /* origin: 16 MiB */

/* An origin whose every block holds version 0 of itself. */
static struct fault_origin *loaded_origin(struct model *m)
{
	struct fault_origin *fo = new_origin(RA_BLOCKS);
	uint8_t *buf = aligned_alloc(4096, BS);

	for (uint64_t b = 0; b < RA_BLOCKS; b++) {
		ct_fill_block(buf, BS, b, 0);
		ck_assert_int_eq(fault_origin_load(fo, buf, BS, b * BS), 0);
		m->v[b] = 0;
	}
	free(buf);
	return fo;
}

static void read_check(wc_cache *c, struct model *m, uint64_t b, unsigned n, const char *where)
{
	ck_assert_msg(wc_read(c, m->rd, (size_t)n * BS, b * BS) == (ssize_t)n * BS, "%s: read: %s",
	              where, wc_errmsg());
	for (unsigned i = 0; i < n; i++)
		assert_block(m->rd + (size_t)i * BS, b + i, m->v[b + i], where);
}

/* A cold sequential reader: right data, and most of it from read-ahead,
 * in fewer and larger origin requests than its own. */
START_TEST(test_sequential_reads_ahead)
{
	struct model *m = model_new(RA_BLOCKS);
	struct fault_origin *fo = loaded_origin(m);
	wc_cache *c = create_on(fo, 512, _i ? "no_threads=1" : NULL);
	struct fault_origin_counters n;
	unsigned requests = 0;

	fault_origin_clear_counters(fo);
	for (uint64_t b = 0; b + 16 <= RA_BLOCKS; b += 16, requests++)
		read_check(c, m, b, 16, "sequential");
	n = counters(fo);
	ck_assert_uint_gt(stats(c).readahead_blocks, RA_BLOCKS / 2);
	ck_assert_uint_lt(n.reads, requests / 4);
	/* Nothing read twice, a little read past the end of the stream at most. */
	ck_assert_uint_le(n.bytes_read, (uint64_t)RA_BLOCKS * BS);
	ck_assert_int_eq(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Random reads are not a stream: next to nothing is read ahead. */
START_TEST(test_random_reads_no_readahead)
{
	struct model *m = model_new(RA_BLOCKS);
	struct fault_origin *fo = loaded_origin(m);
	wc_cache *c = create_on(fo, 512, NULL);
	uint64_t s = 7;

	fault_origin_clear_counters(fo);
	for (unsigned i = 0; i < 500; i++)
		read_check(c, m, ct_rand(&s) % (RA_BLOCKS - 4), 4, "random");
	/* Now and then one random read lands where another ended, which
	 * starts a stream: a window or two read for nothing, no more. */
	ck_assert_uint_lt(stats(c).readahead_blocks, 100);
	ck_assert_uint_le(counters(fo).bytes_read, 500ull * 4 * BS + (4u << 20));
	ck_assert_int_eq(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Blocks a window holds change on the origin; a later read must see it. */
enum change { BY_WRITEBACK, BY_WRITE_AROUND, BY_DISCARD, N_CHANGES };

START_TEST(test_window_forgets_what_changed)
{
	struct model *m = model_new(RA_BLOCKS);
	struct fault_origin *fo = loaded_origin(m);
	wc_cache *c = create_on(fo, 512, "no_threads=1");
	uint64_t target = 200; /* well inside the windows the stream loads */

	for (uint64_t b = 0; b < 64; b += 8)
		read_check(c, m, b, 8, "stream");
	ck_assert_uint_gt(stats(c).readahead_blocks, 0);
	switch (_i) {
	case BY_WRITEBACK:
		model_write(c, m, target, 4, 0);
		ck_assert_int_eq(wc_writeback(c), 0);
		ck_assert_uint_eq(stats(c).dirty_blocks, 0); /* gone from the cache */
		break;
	case BY_WRITE_AROUND:
		ck_assert_int_eq(wc_set_cleaner(c, true), 0);
		model_write(c, m, target, 4, 0);
		ck_assert_uint_gt(stats(c).writes_around, 0);
		break;
	case BY_DISCARD:
		/* The fault origin zeroes what is discarded. */
		ck_assert_int_eq(wc_discard(c, target * BS, 4 * BS), 0);
		for (unsigned i = 0; i < 4; i++)
			m->v[target + i] = NEVER;
		break;
	}
	/* The stream goes on over the changed blocks. */
	for (uint64_t b = 64; b < 400; b += 8)
		read_check(c, m, b, 8, "stream after the change");
	read_check(c, m, target, 4, "the changed blocks");
	ck_assert_int_eq(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* Several threads, each streaming over its own quarter, while one writes
 * and writes back over all of it: every read returns the version last
 * acknowledged before it began, or a later one. */
#define RT_READERS 2
#define RT_PASSES 6

struct race {
	wc_cache *c;
	atomic_uint_fast64_t acked[RA_BLOCKS]; /* version acknowledged, per block */
	atomic_bool stop;
	atomic_uint errors;
};

static void *race_reader(void *arg)
{
	struct race *r = arg;
	uint8_t *buf = aligned_alloc(4096, 8 * BS);
	static atomic_uint next_id;
	unsigned id = atomic_fetch_add(&next_id, 1) % RT_READERS;
	uint64_t lo = id * (RA_BLOCKS / RT_READERS), hi = lo + RA_BLOCKS / RT_READERS;

	for (unsigned pass = 0; pass < RT_PASSES; pass++)
		for (uint64_t b = lo; b < hi; b += 8) {
			uint64_t before[8];

			for (unsigned i = 0; i < 8; i++)
				before[i] = atomic_load(&r->acked[b + i]);
			if (wc_read(r->c, buf, 8 * BS, b * BS) != 8 * BS) {
				atomic_fetch_add(&r->errors, 1);
				continue;
			}
			for (unsigned i = 0; i < 8; i++) {
				uint64_t v = ct_block_version(buf + (size_t)i * BS, BS, b + i);

				if (v >= UINT64_MAX - 1 || v < before[i])
					atomic_fetch_add(&r->errors, 1);
			}
		}
	free(buf);
	return NULL;
}

static void *race_writer(void *arg)
{
	struct race *r = arg;
	uint8_t *buf = aligned_alloc(4096, BS);
	uint64_t s = 99, version = 1;

	while (!atomic_load(&r->stop)) {
		for (unsigned i = 0; i < 64; i++, version++) {
			uint64_t b = ct_rand(&s) % RA_BLOCKS;

			ct_fill_block(buf, BS, b, version);
			if (wc_write(r->c, buf, BS, b * BS, 0) != BS)
				atomic_fetch_add(&r->errors, 1);
			else
				atomic_store(&r->acked[b], version);
		}
		if (wc_writeback(r->c) != 0)
			atomic_fetch_add(&r->errors, 1);
	}
	free(buf);
	return NULL;
}

START_TEST(test_readers_race_writeback)
{
	struct model *m = model_new(RA_BLOCKS);
	struct fault_origin *fo = loaded_origin(m);
	struct race *r = calloc(1, sizeof(*r));
	pthread_t readers[RT_READERS], writer;

	r->c = create_on(fo, 512, "autocommit_ms=2");
	ck_assert_int_eq(pthread_create(&writer, NULL, race_writer, r), 0);
	for (unsigned i = 0; i < RT_READERS; i++)
		ck_assert_int_eq(pthread_create(&readers[i], NULL, race_reader, r), 0);
	for (unsigned i = 0; i < RT_READERS; i++)
		pthread_join(readers[i], NULL);
	atomic_store(&r->stop, true);
	pthread_join(writer, NULL);
	ck_assert_uint_eq(atomic_load(&r->errors), 0);
	ck_assert_uint_gt(stats(r->c).readahead_blocks, 0);
	ck_assert_int_eq(wc_close(r->c), 0);
	free(r);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

/* A failed read-ahead is a hint lost, not an error: the reader reads itself,
 * and gets an error only where its own read fails. */
START_TEST(test_failed_readahead_falls_back)
{
	struct model *m = model_new(RA_BLOCKS);
	struct fault_origin *fo = loaded_origin(m);
	wc_cache *c = create_on(fo, 512, NULL);
	struct fault_origin_faults bad = { .fail_read_offset = 300 * BS, .fail_read_len = 10 * BS };

	fault_origin_set_faults(fo, &bad);
	for (uint64_t b = 0; b < 1024; b += 16) {
		ssize_t r = wc_read(c, m->rd, 16 * BS, b * BS);

		if (b + 16 > 300 && b < 310) {
			ck_assert_int_eq(r, -EIO);
			continue;
		}
		ck_assert_int_eq(r, 16 * BS);
		for (unsigned i = 0; i < 16; i++)
			assert_block(m->rd + (size_t)i * BS, b + i, 0, "around the failures");
	}
	ck_assert_uint_gt(stats(c).readahead_blocks, 0);
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ 0 });
	read_check(c, m, 296, 16, "after the failures");
	ck_assert_int_eq(wc_close(c), 0);
	model_free(m);
	fault_origin_destroy(fo);
}
END_TEST

static Suite *readahead_suite(void)
{
	Suite *s = suite_create("readahead");
	TCase *tc = tcase_create("readahead");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_sequential_reads_ahead, 0, 2);
	tcase_add_test(tc, test_random_reads_no_readahead);
	tcase_add_loop_test(tc, test_window_forgets_what_changed, 0, N_CHANGES);
	tcase_add_test(tc, test_readers_race_writeback);
	tcase_add_test(tc, test_failed_readahead_falls_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(readahead_suite());
}
