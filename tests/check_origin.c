/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_origin.c -- the origin layer: the libaio backend on tmpfs, ext4 and
 * a loop block device (mode, alignment, size, discard, a full queue, bad
 * inputs), ops-table validation, the wrapper of an adopted 0.5 table, the
 * synchronous helper (short transfers, errors, concurrent pollers) and
 * callbacks that resubmit.
 */
#include <linux/magic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "fault_origin.h"
#include "origin_testutil.h"
#include "testmain.h"

/* ------------------------------------------------------------- helpers */

static void open_aio(struct wc_origin *o, const char *path, unsigned qd)
{
	int ret = wc_origin_open_aio(o, path, qd);

	ck_assert_msg(ret == 0, "open %s: %d %s", path, ret, wc_errmsg());
}

/* Write a pattern through the origin, read it back through the origin. */
static void roundtrip(struct wc_origin *o, size_t len, uint64_t off, uint64_t seed)
{
	uint8_t *w = aligned_buf(len), *r = aligned_buf(len);
	int ret;

	fill_pattern(w, len, seed);
	memset(r, 0, len);
	ret = wc_origin_rw_sync(o, WC_ORIGIN_WRITE, w, len, off);
	ck_assert_msg(ret == 0, "write: %d %s", ret, wc_errmsg());
	ret = wc_origin_rw_sync(o, WC_ORIGIN_READ, r, len, off);
	ck_assert_msg(ret == 0, "read: %d %s", ret, wc_errmsg());
	ck_assert(memcmp(w, r, len) == 0);
	free(w);
	free(r);
}

/* ----------------------------------------------- libaio backend: files */

START_TEST(test_aio_tmpfs_roundtrip)
{
	char path[TEST_PATH_LEN];
	struct wc_origin o;
	uint64_t size = 0;

	make_file(wc_test_path(path, sizeof(path), "tmpfs-origin"), 4 * MiB);
	open_aio(&o, path, 0);
	ck_assert_int_eq(wc_origin_check(&o), 0);
	ck_assert_int_eq(wc_origin_size(&o, &size), 0);
	ck_assert_uint_eq(size, 4 * MiB);
	/* tmpfs takes O_DIRECT and reports no alignment: 512 keeps every
	 * cache block size usable. */
	ck_assert(strncmp(wc_origin_describe(&o), WC_ORIGIN_AIO_MODE_DIRECT " ",
	                  strlen(WC_ORIGIN_AIO_MODE_DIRECT) + 1) == 0);
	ck_assert(strstr(wc_origin_describe(&o), path) != NULL);
	ck_assert_uint_eq(wc_origin_alignment(&o), 512);

	roundtrip(&o, 4096, 0, 1);
	roundtrip(&o, 512, 4 * MiB - 512, 2);   /* the last sector */
	roundtrip(&o, 1 * MiB, 1 * MiB, 3);     /* one large request */
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	wc_origin_close(&o);

	/* What the origin wrote is in the file. */
	{
		uint8_t *want = aligned_buf(4096), *got = aligned_buf(4096);

		fill_pattern(want, 4096, 1);
		read_file(path, got, 4096, 0);
		ck_assert(memcmp(want, got, 4096) == 0);
		free(want);
		free(got);
	}
}
END_TEST

/* A vectored request lands its pieces back to back. */
START_TEST(test_aio_vectored)
{
	char path[TEST_PATH_LEN];
	struct wc_origin o;
	uint8_t *a = aligned_buf(4096), *b = aligned_buf(8192), *all = aligned_buf(12288);
	struct iovec iov[2] = { { a, 4096 }, { b, 8192 } };
	struct wc_origin_io io = { .op = WC_ORIGIN_WRITE, .iov = iov, .iovcnt = 2, .offset = 8192 };
	struct one_done d;

	make_file(wc_test_path(path, sizeof(path), "vectored"), 1 * MiB);
	open_aio(&o, path, 0);
	fill_pattern(a, 4096, 10);
	fill_pattern(b, 8192, 11);
	submit_and_wait(&o, &io, &d);
	ck_assert_int_eq(d.res, 12288);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, all, 12288, 8192), 0);
	ck_assert(memcmp(all, a, 4096) == 0);
	ck_assert(memcmp(all + 4096, b, 8192) == 0);
	wc_origin_close(&o);
	free(a);
	free(b);
	free(all);
}
END_TEST

START_TEST(test_aio_ext4_direct)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct wc_origin o;
	struct statx stx;
	struct statfs sfs;
	uint32_t align;
	uint8_t *buf;
	int ret;

	ext_dir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/origin", dir);
	make_file(path, 2 * MiB);
	open_aio(&o, path, 0);
	ck_assert(strncmp(wc_origin_describe(&o), WC_ORIGIN_AIO_MODE_DIRECT " ",
	                  strlen(WC_ORIGIN_AIO_MODE_DIRECT) + 1) == 0);
	align = wc_origin_alignment(&o);
	ck_assert_msg(align == 512 || align == 4096, "alignment %u", align);
	/* The alignment is the one the file system reports. */
	ck_assert_int_eq(statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &stx), 0);
	ck_assert_int_eq(statfs(path, &sfs), 0);
	if (sfs.f_type == EXT4_SUPER_MAGIC)
		ck_assert_msg(stx.stx_mask & STATX_DIOALIGN, "ext4 on Linux >= 6.1 reports DIOALIGN");
	if (stx.stx_mask & STATX_DIOALIGN)
		ck_assert_uint_eq(align, stx.stx_dio_offset_align > stx.stx_dio_mem_align
		                         ? stx.stx_dio_offset_align : stx.stx_dio_mem_align);

	roundtrip(&o, 4096, 0, 20);
	roundtrip(&o, align, 2 * MiB - align, 21);
	ck_assert_int_eq(wc_origin_flush(&o), 0);

	/* Misaligned requests fail with -EINVAL and a message naming the
	 * path: offset, buffer address, length. */
	buf = aligned_buf(8192);
	ret = wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, align / 2);
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert(strstr(wc_errmsg(), path) != NULL);
	ck_assert(strstr(wc_errmsg(), "aligned") != NULL);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf + align / 2, 4096, 0), -EINVAL);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, align / 2, 0), -EINVAL);
	wc_origin_close(&o);

	/* The reported alignment is needed, not just sufficient: the kernel
	 * itself refuses an O_DIRECT write aligned only to half of it. */
	{
		int fd = open(path, O_RDWR | O_DIRECT);

		ck_assert(fd >= 0);
		errno = 0;
		ck_assert_int_eq(pwrite(fd, buf, align / 2, 0), -1);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_int_eq(pwrite(fd, buf, align, align), (ssize_t)align);
		close(fd);
	}
	free(buf);
	ext_dir_remove(dir);
}
END_TEST

START_TEST(test_aio_buffered_fallback)
{
	char path[TEST_PATH_LEN];
	struct wc_origin_aio_opts opts = { .force_buffered = true };
	struct wc_origin o;
	uint8_t w[1000], r[1000];
	int ret;

	make_file(wc_test_path(path, sizeof(path), "buffered"), 1 * MiB);
	ret = wc_origin_open_aio_opts(&o, path, &opts);
	ck_assert_msg(ret == 0, "%d %s", ret, wc_errmsg());
	ck_assert(strncmp(wc_origin_describe(&o), WC_ORIGIN_AIO_MODE_BUFFERED " ",
	                  strlen(WC_ORIGIN_AIO_MODE_BUFFERED) + 1) == 0);
	/* Buffered I/O takes any alignment. */
	ck_assert_uint_eq(wc_origin_alignment(&o), 1);
	fill_pattern(w, sizeof(w), 30);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, w, sizeof(w), 777), 0);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, r, sizeof(r), 777), 0);
	ck_assert(memcmp(w, r, sizeof(w)) == 0);
	roundtrip(&o, 64 * 1024, 128 * 1024, 31);
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	ck_assert_int_eq(wc_origin_discard(&o, 128 * 1024, 64 * 1024), 0);
	wc_origin_close(&o);
	read_file(path, r, sizeof(r), 777);
	ck_assert(memcmp(w, r, sizeof(w)) == 0);
}
END_TEST

START_TEST(test_aio_discard)
{
	char path[TEST_PATH_LEN];
	struct wc_origin o;
	uint8_t *buf = aligned_buf(64 * 1024), *zero = aligned_buf(64 * 1024);
	struct stat st;
	int ret;

	make_file(wc_test_path(path, sizeof(path), "discard"), 1 * MiB);
	open_aio(&o, path, 0);
	fill_pattern(buf, 64 * 1024, 40);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 64 * 1024, 0), 0);
	ret = wc_origin_discard(&o, 0, 64 * 1024);
	ck_assert_msg(ret == 0, "%d %s", ret, wc_errmsg());
	memset(zero, 0, 64 * 1024);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 64 * 1024, 0), 0);
	ck_assert(memcmp(buf, zero, 64 * 1024) == 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 1 * MiB); /* KEEP_SIZE */
	ck_assert_int_eq(wc_origin_discard(&o, 1 * MiB - 4096, 8192), -EINVAL);
	ck_assert_int_eq(wc_origin_discard(&o, 0, 0), 0);
	wc_origin_close(&o);
	free(buf);
	free(zero);
}
END_TEST

/* Many requests, few slots, nobody polling: submit() must reap by itself
 * without running callbacks; poll() then delivers every one exactly once. */
START_TEST(test_aio_queue_full)
{
	enum { NREQ = 64, QD = 4, LEN = 4096 };
	char path[TEST_PATH_LEN];
	struct wc_origin o;
	struct counted_io *req = calloc(NREQ, sizeof(*req));
	uint8_t *bufs = aligned_buf((size_t)NREQ * LEN), *check = aligned_buf((size_t)NREQ * LEN);
	int total = 0;

	make_file(wc_test_path(path, sizeof(path), "qfull"), 1 * MiB);
	open_aio(&o, path, QD);
	fill_pattern(bufs, (size_t)NREQ * LEN, 50);
	for (int i = 0; i < NREQ; i++) {
		counted_prep(&req[i], WC_ORIGIN_WRITE, bufs + (size_t)i * LEN, LEN, (uint64_t)i * LEN);
		ck_assert_int_eq(wc_origin_submit(&o, &req[i].io), 0);
	}
	for (int i = 0; i < NREQ; i++)
		ck_assert_int_eq(atomic_load(&req[i].calls), 0);
	while (total < NREQ) {
		int n = wc_origin_poll(&o, 1, 1000000000ull);

		ck_assert_int_ge(n, 0);
		total += n;
	}
	ck_assert_int_eq(total, NREQ);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	for (int i = 0; i < NREQ; i++) {
		ck_assert_int_eq(atomic_load(&req[i].calls), 1);
		ck_assert_int_eq(req[i].res, LEN);
	}
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, check, (size_t)NREQ * LEN, 0), 0);
	ck_assert(memcmp(check, bufs, (size_t)NREQ * LEN) == 0);
	wc_origin_close(&o);
	free(req);
	free(bufs);
	free(check);
}
END_TEST

START_TEST(test_aio_poll_idle)
{
	char path[TEST_PATH_LEN];
	struct wc_origin o;

	make_file(wc_test_path(path, sizeof(path), "idle"), 1 * MiB);
	open_aio(&o, path, 0);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 1, 0), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 4, 1000000), 0); /* times out */
	wc_origin_close(&o);
}
END_TEST

/* ------------------------------------------------ libaio backend: bdev */

START_TEST(test_aio_blockdev)
{
	char backing[TEST_PATH_LEN], dev[64];
	uint8_t *buf = aligned_buf(8192), *got = aligned_buf(8192);
	struct wc_origin o, second;
	uint64_t size = 0;
	int loop_fd, ret;

	make_file(wc_test_path(backing, sizeof(backing), "loop-backing"), 4 * MiB);
	loop_fd = loop_attach(backing, 4096, dev, sizeof(dev));
	if (loop_fd < 0) {
		free(buf);
		free(got);
		WC_TEST_SKIP("no loop device to test the block-device path on (%s)",
		             strerror(-loop_fd));
	}
	open_aio(&o, dev, 0);
	/* Exclusive: a second origin (or a mount) on the device is refused. */
	ck_assert_int_eq(wc_origin_open_aio(&second, dev, 0), -EBUSY);
	ck_assert(strstr(wc_errmsg(), "in use") != NULL);
	ck_assert_int_eq(wc_origin_size(&o, &size), 0);
	ck_assert_uint_eq(size, 4 * MiB);                   /* BLKGETSIZE64 */
	ck_assert_uint_eq(wc_origin_alignment(&o), 4096);   /* BLKSSZGET */
	ck_assert(strstr(wc_origin_describe(&o), dev) != NULL);
	roundtrip(&o, 8192, 4 * MiB - 8192, 60);
	/* 512-aligned is not enough on a 4Kn device. */
	ret = wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 512, 0);
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert(strstr(wc_errmsg(), dev) != NULL);

	fill_pattern(buf, 8192, 61);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 8192, 0), 0);
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	read_file(backing, got, 8192, 0);
	ck_assert(memcmp(buf, got, 8192) == 0);

	ret = wc_origin_discard(&o, 0, 8192);                /* BLKDISCARD */
	ck_assert_msg(ret == 0 || ret == -EOPNOTSUPP, "%d %s", ret, wc_errmsg());
	ck_assert_int_eq(wc_origin_discard(&o, 512, 4096), -EINVAL);
	wc_origin_close(&o);
	close(loop_fd);
	free(buf);
	free(got);
}
END_TEST

/* ------------------------------------------------------------ bad inputs */

START_TEST(test_aio_bad_inputs)
{
	char path[TEST_PATH_LEN];
	struct wc_origin o;
	int ret;

	ret = wc_origin_open_aio(&o, wc_test_path(path, sizeof(path), "missing"), 0);
	ck_assert_int_eq(ret, -ENOENT);
	ck_assert(strstr(wc_errmsg(), path) != NULL);

	ret = wc_origin_open_aio(&o, wc_test_dir(), 0);
	ck_assert_int_eq(ret, -EISDIR);
	ck_assert(strstr(wc_errmsg(), wc_test_dir()) != NULL);

	make_file(wc_test_path(path, sizeof(path), "empty"), 0);
	ret = wc_origin_open_aio(&o, path, 0);
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert(strstr(wc_errmsg(), path) != NULL);
	ck_assert(strstr(wc_errmsg(), "size is 0") != NULL);

	ck_assert_int_eq(mkfifo(wc_test_path(path, sizeof(path), "fifo"), 0600), 0);
	ret = wc_origin_open_aio(&o, path, 0);
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert(strstr(wc_errmsg(), "not a regular file or block device") != NULL);

	ck_assert_int_eq(wc_origin_open_aio(&o, NULL, 0), -EINVAL);
	make_file(wc_test_path(path, sizeof(path), "small"), 64 * 1024);
	ck_assert_int_eq(wc_origin_open_aio(&o, path, 1u << 20), -EINVAL);

	/* Requests beyond the end or with an unknown op touch nothing. */
	open_aio(&o, path, 0);
	{
		uint8_t *buf = aligned_buf(8192);
		struct iovec iov = { buf, 4096 };
		struct wc_origin_io io = { .op = (enum wc_origin_op)7, .iov = &iov, .iovcnt = 1,
		                           .done = counted_done };

		ret = wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 8192, 64 * 1024 - 4096);
		ck_assert_int_eq(ret, -EINVAL);
		ck_assert(strstr(wc_errmsg(), "beyond the end") != NULL);
		ck_assert_int_eq(wc_origin_submit(&o, &io), -EINVAL);
		io.op = WC_ORIGIN_READ;
		io.iovcnt = 0;
		ck_assert_int_eq(wc_origin_submit(&o, &io), -EINVAL);
		ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
		free(buf);
	}
	wc_origin_close(&o);
}
END_TEST

static int no_size(void *ctx, uint64_t *bytes)
{
	(void)ctx;
	*bytes = 0;
	return 0;
}

static uint32_t odd_alignment(void *ctx)
{
	(void)ctx;
	return 24;
}

START_TEST(test_origin_check)
{
	struct fault_origin *fo;
	struct wc_origin o, bad;
	struct wc_origin_ops ops;

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	ck_assert_int_eq(wc_origin_check(&o), 0);

	ck_assert_int_eq(wc_origin_check(NULL), -EINVAL);
	bad = (struct wc_origin){ .ops = NULL, .ctx = fo };
	ck_assert_int_eq(wc_origin_check(&bad), -EINVAL);

	bad.ops = &ops;
	ops = *o.ops;
	ops.poll = NULL;
	ck_assert_int_eq(wc_origin_check(&bad), -EINVAL);
	ck_assert(strstr(wc_errmsg(), "poll()") != NULL);
	ops = *o.ops;
	ops.flush = NULL;
	ck_assert_int_eq(wc_origin_check(&bad), -EINVAL);
	ck_assert(strstr(wc_errmsg(), "flush()") != NULL);
	ops = *o.ops;
	ops.alignment = odd_alignment;
	ck_assert_int_eq(wc_origin_check(&bad), -EINVAL);
	ck_assert(strstr(wc_errmsg(), "power of two") != NULL);
	ops = *o.ops;
	ops.size = no_size;
	ck_assert_int_eq(wc_origin_check(&bad), -EINVAL);

	/* Optional ops have defaults. */
	ops = *o.ops;
	ops.alignment = NULL;
	ops.describe = NULL;
	ops.discard = NULL;
	ck_assert_int_eq(wc_origin_check(&bad), 0);
	ck_assert_uint_eq(wc_origin_alignment(&bad), 1);
	ck_assert_str_eq(wc_origin_describe(&bad), "custom origin");
	ck_assert_int_eq(wc_origin_discard(&bad, 0, 4096), -EOPNOTSUPP);
	fault_origin_destroy(fo);
}
END_TEST

/* What 0.5 added to the table is read only from tables known to have it:
 * the library's own, and an embedder's adopted (checked and wrapped) by the
 * 0.5 entry points.  The wrapper forwards every op, defaults included. */
START_TEST(test_origin_adopt)
{
	static struct wc_origin_ops ops;
	struct fault_origin *fo;
	struct wc_origin raw, o;
	struct wc_origin_identity id;
	char path[TEST_PATH_LEN];
	uint8_t *buf = aligned_buf(4096);

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	fault_origin_set_name(fo, "adopted origin");
	raw = fault_origin_origin(fo);
	ck_assert(raw.ops->caps & WC_ORIGIN_CAP_ASYNC_FLUSH);
	/* Not adopted: it may be a 0.4 table, whose caps do not exist. */
	ck_assert(!wc_origin_async_flush(&raw));

	ck_assert_int_eq(wc_origin_adopt(&o, raw), 0);
	ck_assert_ptr_ne(o.ops, raw.ops);
	ck_assert(wc_origin_async_flush(&o));
	ck_assert_int_eq(wc_origin_check(&o), 0);
	ck_assert_str_eq(wc_origin_describe(&o), "adopted origin");
	ck_assert_uint_eq(wc_origin_alignment(&o), 512);
	ck_assert_int_eq(wc_origin_identify(&o, &id, false), 0);
	ck_assert_uint_eq(id.kind, WC_ORIGIN_IDENTITY_CUSTOM);
	ck_assert_str_eq(id.name, "adopted origin");
	ck_assert_str_eq(id.id, "");
	memset(buf, 'z', 4096);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, 8192), 0);
	ck_assert_int_eq(memcmp(fault_origin_volatile(fo) + 8192, buf, 4096), 0);
	wc_origin_adopt_undo(&o); /* frees the wrapper only */

	/* Optional ops missing inside: the wrapper gives their defaults. */
	ops = *raw.ops;
	ops.discard = NULL;
	ops.alignment = NULL;
	ops.describe = NULL;
	raw.ops = &ops;
	ck_assert_int_eq(wc_origin_adopt(&o, raw), 0);
	ck_assert_uint_eq(wc_origin_alignment(&o), 1);
	ck_assert_str_eq(wc_origin_describe(&o), "custom origin");
	ck_assert_int_eq(wc_origin_discard(&o, 0, 4096), -EOPNOTSUPP);
	wc_origin_adopt_undo(&o);

	/* Nothing beyond 0.4's table: not wrapped. */
	ops = *fault_origin_origin_sync_flush(fo).ops;
	raw.ops = &ops;
	ck_assert_int_eq(wc_origin_adopt(&o, raw), 0);
	ck_assert_ptr_eq(o.ops, &ops);
	ck_assert(!wc_origin_async_flush(&o));

	/* A required op missing: refused like wc_origin_check refuses it. */
	ops.submit = NULL;
	ck_assert_int_eq(wc_origin_adopt(&o, raw), -EINVAL);
	ck_assert(strstr(wc_errmsg(), "submit()") != NULL);
	ck_assert_ptr_eq(o.ops, &ops);
	fault_origin_destroy(fo);

	/* The library's own table is taken as it is. */
	make_file(wc_test_path(path, sizeof(path), "adopt-aio"), 1 * MiB);
	ck_assert_int_eq(wc_origin_open_aio(&raw, path, 0), 0);
	ck_assert_int_eq(wc_origin_adopt(&o, raw), 0);
	ck_assert_ptr_eq(o.ops, raw.ops);
	ck_assert(wc_origin_async_flush(&o));
	ck_assert_int_eq(wc_origin_identify(&o, &id, false), 0);
	ck_assert_uint_eq(id.kind, WC_ORIGIN_IDENTITY_FILE);
	wc_origin_close(&o);
	free(buf);
}
END_TEST

/* ------------------------------------------------------- the sync helper */

START_TEST(test_sync_short_writes)
{
	struct fault_origin *fo;
	struct fault_origin_faults f = { .short_writes = true, .short_write_bytes = 1000 };
	struct fault_origin_counters c;
	struct wc_origin o;
	uint8_t w[8192];

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 1), 0);
	o = fault_origin_origin(fo);
	fault_origin_set_faults(fo, &f);
	fill_pattern(w, sizeof(w), 70);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, w, sizeof(w), 4096), 0);
	ck_assert(memcmp(fault_origin_volatile(fo) + 4096, w, sizeof(w)) == 0);
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.writes, 9);        /* 8 x 1000 + 192 */
	ck_assert_uint_eq(c.short_writes, 8);
	ck_assert_uint_eq(c.bytes_written, sizeof(w));

	/* A transfer of zero bytes never completes: -EIO naming offset. */
	f.short_write_bytes = 0;
	fault_origin_set_faults(fo, &f);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, w, sizeof(w), 65536), -EIO);
	ck_assert(strstr(wc_errmsg(), "65536") != NULL);
	ck_assert(strstr(wc_errmsg(), "0 bytes") != NULL);
	fault_origin_destroy(fo);
}
END_TEST

START_TEST(test_sync_errors)
{
	struct fault_origin *fo;
	struct fault_origin_faults f = { .fail_write_nth = 1, .write_errno = ENOSPC };
	struct wc_origin o;
	uint8_t buf[4096] IO_ALIGNED = { 0 };

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	fault_origin_set_faults(fo, &f);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, 8192), -ENOSPC);
	ck_assert(strstr(wc_errmsg(), "write of 4096 bytes at offset 8192") != NULL);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, 8192), 0);
	ck_assert_int_eq(wc_origin_rw_sync(&o, (enum wc_origin_op)3, buf, 4096, 0), -EINVAL);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 0, 0), 0);
	fault_origin_destroy(fo);
}
END_TEST

/* Several threads doing rw_sync on one origin: each one's completions may
 * be reaped (and its callback run) by another. */
struct poller_arg {
	struct wc_origin *o;
	unsigned id, rounds;
	size_t len;
	int failures;
};

static void *poller_thread(void *p)
{
	struct poller_arg *a = p;
	uint8_t *w = aligned_buf(a->len), *r = aligned_buf(a->len);

	for (unsigned i = 0; i < a->rounds; i++) {
		uint64_t off = (uint64_t)a->id * a->len * 4 + (i % 4) * a->len;

		fill_pattern(w, a->len, a->id * 1000 + i);
		if (wc_origin_rw_sync(a->o, WC_ORIGIN_WRITE, w, a->len, off) != 0 ||
		    wc_origin_rw_sync(a->o, WC_ORIGIN_READ, r, a->len, off) != 0 ||
		    memcmp(w, r, a->len) != 0)
			a->failures++;
	}
	free(w);
	free(r);
	return NULL;
}

static void run_pollers(struct wc_origin *o, unsigned nthreads, unsigned rounds, size_t len)
{
	pthread_t t[8];
	struct poller_arg arg[8];

	ck_assert_uint_le(nthreads, 8);
	for (unsigned i = 0; i < nthreads; i++) {
		arg[i] = (struct poller_arg){ .o = o, .id = i, .rounds = rounds, .len = len };
		ck_assert_int_eq(pthread_create(&t[i], NULL, poller_thread, &arg[i]), 0);
	}
	for (unsigned i = 0; i < nthreads; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_msg(arg[i].failures == 0, "thread %u: %d failures", i, arg[i].failures);
	}
}

START_TEST(test_sync_concurrent_aio)
{
	char path[TEST_PATH_LEN];
	struct wc_origin o;

	make_file(wc_test_path(path, sizeof(path), "pollers"), 4 * MiB);
	open_aio(&o, path, 2); /* 2 slots for 4 threads: submit waits and reaps too */
	run_pollers(&o, 4, 300, 16 * 1024);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	wc_origin_close(&o);
}
END_TEST

START_TEST(test_sync_concurrent_fault)
{
	struct fault_origin *fo;
	struct fault_origin_faults f = { .delay_us = 50, .complete_on_poll = 2 };
	struct fault_origin_counters c;
	struct wc_origin o;

	ck_assert_int_eq(fault_origin_create(&fo, 4 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	fault_origin_set_faults(fo, &f);
	run_pollers(&o, 4, 200, 16 * 1024);
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.writes, 800);
	ck_assert_uint_eq(c.reads, 800);
	ck_assert_uint_eq(c.inflight, 0);
	ck_assert_uint_ge(c.max_inflight, 1);
	fault_origin_destroy(fo);
}
END_TEST

/* done() may submit again: callbacks run outside the backend's locks. */
struct chain {
	uint8_t buf[4096] IO_ALIGNED;
	struct wc_origin *o;
	struct wc_origin_io io;
	struct iovec iov;
	atomic_int remaining;
};

static void chain_done(struct wc_origin_io *io, ssize_t res)
{
	struct chain *ch = io->priv;

	ck_assert_int_eq(res, 4096);
	if (atomic_fetch_sub(&ch->remaining, 1) > 1) {
		io->offset += 4096;
		ck_assert_int_eq(wc_origin_submit(ch->o, io), 0);
	}
}

static void run_chain(struct wc_origin *o, unsigned links)
{
	struct chain *ch = aligned_buf(sizeof(struct chain));

	memset(ch, 0, sizeof(*ch));
	ch->o = o;
	ch->iov = (struct iovec){ ch->buf, sizeof(ch->buf) };
	ch->io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = &ch->iov, .iovcnt = 1,
	                                .done = chain_done, .priv = ch };
	atomic_init(&ch->remaining, (int)links);
	ck_assert_int_eq(wc_origin_submit(o, &ch->io), 0);
	while (atomic_load(&ch->remaining) > 0)
		ck_assert_int_ge(wc_origin_poll(o, 1, 1000000000ull), 0);
	ck_assert_int_eq(wc_origin_poll(o, 0, 0), 0);
	free(ch);
}

START_TEST(test_callbacks_resubmit)
{
	struct fault_origin *fo;
	struct fault_origin_counters c;
	struct wc_origin o;
	char path[TEST_PATH_LEN];

	ck_assert_int_eq(fault_origin_create(&fo, 1 * MiB, 512), 0);
	o = fault_origin_origin(fo);
	run_chain(&o, 32);
	fault_origin_get_counters(fo, &c);
	ck_assert_uint_eq(c.writes, 32);
	fault_origin_destroy(fo);

	make_file(wc_test_path(path, sizeof(path), "chain"), 1 * MiB);
	open_aio(&o, path, 1);
	run_chain(&o, 32);
	wc_origin_close(&o);
}
END_TEST

/* ------------------------------------------------------------------ main */

static Suite *origin_suite(void)
{
	Suite *s = suite_create("origin");
	TCase *aio = tcase_create("aio"), *sync = tcase_create("sync");

	tcase_add_test(aio, test_aio_tmpfs_roundtrip);
	tcase_add_test(aio, test_aio_vectored);
	tcase_add_test(aio, test_aio_ext4_direct);
	tcase_add_test(aio, test_aio_buffered_fallback);
	tcase_add_test(aio, test_aio_discard);
	tcase_add_test(aio, test_aio_queue_full);
	tcase_add_test(aio, test_aio_poll_idle);
	tcase_add_test(aio, test_aio_blockdev);
	tcase_add_test(aio, test_aio_bad_inputs);
	tcase_add_test(aio, test_origin_check);
	tcase_add_test(aio, test_origin_adopt);
	suite_add_tcase(s, aio);

	tcase_add_test(sync, test_sync_short_writes);
	tcase_add_test(sync, test_sync_errors);
	tcase_add_test(sync, test_sync_concurrent_aio);
	tcase_add_test(sync, test_sync_concurrent_fault);
	tcase_add_test(sync, test_callbacks_resubmit);
	tcase_set_timeout(sync, 60);
	suite_add_tcase(s, sync);
	return s;
}

int main(void)
{
	return wc_test_main(origin_suite());
}
