/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_crash_block.c -- the quick power-failure sweep of the block medium
 * (the long one is crash-sweep --medium block): each workload of
 * crash_block_wl.c with a fixed seed and a bound on images, the cache on
 * the simulated disk of blkdev.h, every image reopened and read back block
 * by block; then the sabotaged device (a flush or a synced write that
 * makes nothing durable) that the sweep must catch, and the device model
 * itself.  The block folders of tests/crash-regressions run with the
 * others in check_crash_cache.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "blkdev.h"
#include "crash_block.h"
#include "testmain.h"

static void quick(struct blk_opts *o, uint64_t seed)
{
	memset(o, 0, sizeof(*o));
	o->seed = seed;
	o->random_per_point = 1;
	o->recovery_every = 8;
	o->probe_every = 16;
	o->log = stderr;
}

/* Every `every`th crash point, so that the images spread over the whole
 * run (the ring wraps late in it). */
static struct blk_result sweep(const char *wl, uint64_t seed, uint64_t images, unsigned every)
{
	struct blk_result r = { 0 };
	struct blk_opts o;

	quick(&o, seed);
	o.max_images = images;
	o.point_every = every;
	ck_assert_int_eq(blk_run(wl, &o, &r), 0);
	fprintf(stderr, "# block %s seed %" PRIu64 ": images=%" PRIu64 " (recovery %" PRIu64
	        ", refused torn formats %" PRIu64 ", probes %" PRIu64 ") device writes %" PRIu64
	        " synced %" PRIu64 " flushes %" PRIu64 " segments reclaimed %" PRIu64
	        " violations=%" PRIu64 "\n", wl, seed, r.images, r.recovery_images, r.refused,
	        r.probes, r.device_writes, r.dsync_writes, r.device_flushes, r.segments_reclaimed,
	        r.violations);
	ck_assert_uint_eq(r.errors, 0);
	ck_assert_uint_eq(r.violations, 0);
	ck_assert_uint_ge(r.images, images);
	return r;
}

START_TEST(test_format)
{
	struct blk_result r = sweep("format", 1, 400, 1);

	ck_assert_uint_gt(r.refused, 0);       /* crashes inside the format */
	ck_assert_uint_gt(r.recovery_images, 0);
	ck_assert_uint_gt(r.probes, 0);
}
END_TEST

START_TEST(test_mix)
{
	struct blk_result r = sweep("mix", 2, 700, 6);

	ck_assert_uint_gt(r.segments_reclaimed, 0); /* the ring wrapped */
}
END_TEST

START_TEST(test_mix4k) { sweep("mix4k", 3, 500, 6); }
END_TEST
START_TEST(test_torn4k) { sweep("torn4k", 4, 400, 8); }
END_TEST
START_TEST(test_wrap)
{
	struct blk_result r = sweep("wrap", 5, 500, 6);

	ck_assert_uint_gt(r.segments_reclaimed, 0);
}
END_TEST
START_TEST(test_overwrite) { sweep("overwrite", 6, 500, 5); }
END_TEST
START_TEST(test_invalidate) { sweep("invalidate", 7, 500, 5); }
END_TEST

/* The sweep must be able to fail: a device whose every other flush, or
 * every other synced write, makes nothing durable loses acknowledged
 * writes, and the images show it. */
static void sabotaged(unsigned flush_every, unsigned dsync_every)
{
	struct blk_result r = { 0 };
	struct blk_opts o;

	quick(&o, 9);
	o.log = NULL;
	o.max_images = 1500;
	o.sabotage_flush_every = flush_every;
	o.sabotage_dsync_every = dsync_every;
	ck_assert_int_eq(blk_run("mix", &o, &r), 0);
	fprintf(stderr, "# sabotaged (flush every %u, dsync every %u): images=%" PRIu64
	        " violations=%" PRIu64 "\n", flush_every, dsync_every, r.images, r.violations);
	ck_assert_uint_eq(r.errors, 0);
	ck_assert_uint_gt(r.violations, 0);
}

START_TEST(test_catches_lost_flush) { sabotaged(2, 0); }
END_TEST
START_TEST(test_catches_lost_dsync) { sabotaged(0, 2); }
END_TEST

/* The device model: pending writes survive whole, torn at its sectors or
 * not at all; synced ones and flushed ones always. */
static void fill(uint8_t *b, size_t n, uint8_t v)
{
	memset(b, v, n);
}

START_TEST(test_device_model)
{
	struct blkdev_config cfg = { .size = 16384, .sector = 512 };
	struct blkdev *d;
	const struct wc_blk_io_hooks *io;
	struct wc_rng rng;
	uint8_t buf[4096], got[4096];
	bool saw_torn = false, saw_old = false, saw_new = false;

	wc_rng_seed(&rng, 1);
	ck_assert_int_eq(blkdev_new(&d, &cfg, NULL), 0);
	io = blkdev_hooks(d);
	fill(buf, sizeof(buf), 1);
	ck_assert_int_eq(io->pwrite(io->ctx, buf, 4096, 0, true), 0);     /* durable */
	fill(buf, sizeof(buf), 2);
	ck_assert_int_eq(io->pwrite(io->ctx, buf, 4096, 4096, false), 0); /* pending */
	ck_assert_int_eq(io->pread(io->ctx, got, 4096, 4096), 0);
	ck_assert_int_eq(got[0], 2);                                       /* reads see it */
	ck_assert_int_eq(io->pwrite(io->ctx, buf, 512, 700, false), -EINVAL); /* unaligned */
	ck_assert_uint_eq(blkdev_pending(d), 1);
	for (int i = 0; i < 64; i++) {
		struct bimage *img = blkdev_capture(d, BLKDEV_MIXED, &rng);
		unsigned twos = 0;

		ck_assert_ptr_nonnull(img);
		bimage_read(img, got, 4096, 0);
		ck_assert_int_eq(got[0], 1);
		ck_assert_int_eq(got[4095], 1);
		bimage_read(img, got, 4096, 4096);
		for (unsigned s = 0; s < 8; s++) {
			for (unsigned k = 1; k < 512; k++)
				ck_assert_int_eq(got[s * 512 + k], got[s * 512]); /* sectors whole */
			twos += got[s * 512] == 2;
		}
		saw_torn |= twos > 0 && twos < 8;
		saw_old |= twos == 0;
		saw_new |= twos == 8;
		bimage_free(img);
	}
	ck_assert(saw_torn && saw_old && saw_new);
	ck_assert_int_eq(io->flush(io->ctx), 0);
	ck_assert_uint_eq(blkdev_pending(d), 0);
	{
		struct bimage *img = blkdev_capture(d, BLKDEV_OLD, &rng);

		bimage_read(img, got, 4096, 4096);
		ck_assert_int_eq(got[0], 2); /* flushed: durable */
		bimage_free(img);
	}
	/* A synced write overtakes an older pending one of the same sectors. */
	fill(buf, sizeof(buf), 3);
	ck_assert_int_eq(io->pwrite(io->ctx, buf, 4096, 8192, false), 0);
	fill(buf, sizeof(buf), 4);
	ck_assert_int_eq(io->pwrite(io->ctx, buf, 4096, 8192, true), 0);
	for (int i = 0; i < 16; i++) {
		struct bimage *img = blkdev_capture(d, BLKDEV_MIXED, &rng);

		bimage_read(img, got, 4096, 8192);
		ck_assert_int_eq(got[0], 4);
		bimage_free(img);
	}
	blkdev_free(d);
}
END_TEST

START_TEST(test_rerun_lines)
{
	char why[512];

	ck_assert_int_eq(blk_rerun("medium block workload nosuch seed 1 images 10 random-per-point 1 "
	                           "recovery-every 0 probe-every 0", NULL, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "unknown block workload"));
	ck_assert_int_eq(blk_rerun("medium block workload threads seed 1 images 10 random-per-point 1 "
	                           "recovery-every 0 probe-every 0", NULL, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "does not replay"));
	ck_assert_int_eq(blk_rerun("medium block workload mix seed 1 images 10", NULL, why,
	                           sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "missing"));
	/* A line that names a sabotaged device must fail. */
	ck_assert_int_eq(blk_rerun("medium block workload overwrite seed 3 images 400 random-per-point 1 "
	                           "recovery-every 0 probe-every 0 sabotage-dsync 1", NULL, why,
	                           sizeof(why)), 1);
	ck_assert_int_eq(blk_rerun("medium block workload overwrite seed 3 images 400 random-per-point 1 "
	                           "recovery-every 0 probe-every 0", NULL, why, sizeof(why)), 0);
}
END_TEST

static Suite *crash_block_suite(void)
{
	Suite *s = suite_create("crash-block");
	TCase *tc = tcase_create("sweep");

	/* ~15 s on an idle 2-core machine; room for ASan and a loaded one. */
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_device_model);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_mix);
	tcase_add_test(tc, test_mix4k);
	tcase_add_test(tc, test_torn4k);
	tcase_add_test(tc, test_wrap);
	tcase_add_test(tc, test_overwrite);
	tcase_add_test(tc, test_invalidate);
	tcase_add_test(tc, test_catches_lost_flush);
	tcase_add_test(tc, test_catches_lost_dsync);
	tcase_add_test(tc, test_rerun_lines);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(crash_block_suite());
}
