/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_rawaio.c -- wcbench's raw libaio baseline writes what it claims:
 * every slot of the region, in sequential or random order, on tmpfs and on
 * ext4 (O_DIRECT), and refuses bad arguments.  Its MB/s is not checked.
 */
#include "origin_testutil.h"
#include "testmain.h"
#include "rawaio.h"

static void check_stamps(const char *path, uint64_t bytes, size_t io_size)
{
	uint8_t *buf = malloc(bytes);

	read_file(path, buf, bytes, 0);
	for (uint64_t off = 0; off < bytes; off += io_size) {
		uint64_t stamp = 0;

		for (int b = 0; b < 8; b++)
			stamp |= (uint64_t)buf[off + b] << (8 * b);
		ck_assert_uint_eq(stamp, off);
		ck_assert_uint_eq(buf[off + io_size - 1], 0x5a);
	}
	free(buf);
}

START_TEST(test_rawaio)
{
	char path[TEST_PATH_LEN], dir[PATH_MAX], ext[PATH_MAX + 32];
	double mbps = 0;
	int ret;

	make_file(wc_test_path(path, sizeof(path), "rawaio"), 2 * MiB);
	ret = wc_rawaio_write_bw(path, 2 * MiB, 64 * 1024, 4, true, &mbps);
	ck_assert_msg(ret == 0, "%d %s", ret, wc_errmsg());
	ck_assert(mbps > 0);
	check_stamps(path, 2 * MiB, 64 * 1024);

	make_file(path, 2 * MiB);
	mbps = 0;
	ck_assert_int_eq(wc_rawaio_write_bw(path, 1 * MiB, 4096, 16, false, &mbps), 0);
	ck_assert(mbps > 0);
	check_stamps(path, 1 * MiB, 4096);

	/* On ext4: O_DIRECT with its alignment; and with an fdatasync request
	 * every 64 KiB beside the writes (write-back's flush cadence). */
	ext_dir_make(dir, sizeof(dir));
	snprintf(ext, sizeof(ext), "%s/raw", dir);
	make_file(ext, 1 * MiB);
	ck_assert_int_eq(wc_rawaio_write_bw(ext, 1 * MiB, 128 * 1024, 8, false, &mbps), 0);
	check_stamps(ext, 1 * MiB, 128 * 1024);
	make_file(ext, 1 * MiB);
	mbps = 0;
	ret = wc_rawaio_write_bw_flushing(ext, 1 * MiB, 4096, 16, false, 64 * 1024, &mbps);
	ck_assert_msg(ret == 0, "%d %s", ret, wc_errmsg());
	ck_assert(mbps > 0);
	check_stamps(ext, 1 * MiB, 4096);
	ext_dir_remove(dir);

	ck_assert_int_eq(wc_rawaio_write_bw(path, 4 * MiB, 4096, 4, true, &mbps), -EINVAL);
	ck_assert(strstr(wc_errmsg(), path) != NULL);
	ck_assert_int_eq(wc_rawaio_write_bw(path, 1 * MiB, 3000, 4, true, &mbps), -EINVAL);
	ck_assert_int_eq(wc_rawaio_write_bw(path, 1 * MiB, 4096, 0, true, &mbps), -EINVAL);
	ck_assert_int_eq(wc_rawaio_write_bw(wc_test_dir(), 1 * MiB, 4096, 4, true, &mbps), -EISDIR);
}
END_TEST

static Suite *rawaio_suite(void)
{
	Suite *s = suite_create("rawaio");
	TCase *tc = tcase_create("rawaio");

	tcase_add_test(tc, test_rawaio);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(rawaio_suite());
}
