/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin_testutil.h -- helpers shared by the origin test programs
 * (check_origin, check_fault_origin, check_rawaio): aligned buffers,
 * patterns, scratch files, and a one-request completion recorder.
 */
#ifndef WC_ORIGIN_TESTUTIL_H
#define WC_ORIGIN_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "origin.h"
#include "testutil.h"

#define MiB (1024u * 1024u)
/* Room for wc_test_dir() (up to PATH_MAX) plus a file name, so that
 * -Wformat-truncation can prove wc_test_path() fits. */
#define TEST_PATH_LEN (PATH_MAX + 64)
/* Buffers of requests to backends that check memory alignment (O_DIRECT,
 * and the fault origin, so that the cache tests catch what O_DIRECT would). */
#define IO_ALIGNED __attribute__((aligned(4096)))

static inline void *aligned_buf(size_t len)
{
	void *p = NULL;

	ck_assert_int_eq(posix_memalign(&p, 4096, len), 0);
	return p;
}

static inline void fill_pattern(void *buf, size_t len, uint64_t seed)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)((seed * 131 + i * 7 + (i >> 9)) & 0xff);
}

static inline void make_file(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

static inline void read_file(const char *path, void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_RDONLY);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

/* A scratch folder on the root file system (ext4 here, where O_DIRECT
 * enforces alignment): the build dir when the test driver names it, else
 * /var/tmp.  Removed by ext_dir_remove(). */
static inline void ext_dir_make(char *dir, size_t len)
{
	const char *base = getenv("WC_TEST_BUILDDIR");

	snprintf(dir, len, "%s/wcorigin-XXXXXX", base && *base ? base : "/var/tmp");
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

static inline void ext_dir_remove(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Records the completions of one request. */
struct one_done {
	atomic_int calls;
	ssize_t res;
};

static inline void one_done_cb(struct wc_origin_io *io, ssize_t res)
{
	struct one_done *d = io->priv;

	d->res = res;
	atomic_fetch_add(&d->calls, 1);
}

static inline void one_done_arm(struct wc_origin_io *io, struct one_done *d)
{
	atomic_init(&d->calls, 0);
	d->res = 0;
	io->done = one_done_cb;
	io->priv = d;
}

/* Submit one request and poll until its done() ran (exactly once). */
static inline void submit_and_wait(struct wc_origin *o, struct wc_origin_io *io,
                                   struct one_done *d)
{
	int ret;

	one_done_arm(io, d);
	ret = wc_origin_submit(o, io);
	ck_assert_msg(ret == 0, "submit: %d %s", ret, wc_errmsg());
	while (atomic_load(&d->calls) == 0)
		ck_assert_int_ge(wc_origin_poll(o, 1, 1000000000ull), 0);
	ck_assert_int_eq(atomic_load(&d->calls), 1);
}

static inline void sync_write(struct wc_origin *o, const void *buf, size_t len, uint64_t off)
{
	int ret = wc_origin_rw_sync(o, WC_ORIGIN_WRITE, (void *)buf, len, off);

	ck_assert_msg(ret == 0, "write %zu at %llu: %d %s", len, (unsigned long long)off, ret,
	              wc_errmsg());
}

#endif
