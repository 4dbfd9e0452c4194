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

#include "origin/origin.h"
#include "testmain.h"
#include "testutil.h"

#define MiB (1024u * 1024u)
/* Room for wc_test_dir() (up to PATH_MAX) plus a file name. */
#define TEST_PATH_LEN (PATH_MAX + 64)
/* Buffers of requests to backends that check memory alignment (O_DIRECT,
 * and the fault origin, so that the cache tests catch what O_DIRECT would). */
#define IO_ALIGNED __attribute__((aligned(4096)))

/* 4096-aligned; a failed allocation fails the test. */
void *aligned_buf(size_t len);
void fill_pattern(void *buf, size_t len, uint64_t seed);
/* A file of `size` bytes (created or truncated). */
void make_file(const char *path, uint64_t size);
void read_file(const char *path, void *buf, size_t len, uint64_t off);

/* A scratch folder on the root file system (ext4 here, where O_DIRECT
 * enforces alignment): the build dir when the test driver names it, else
 * /var/tmp.  Removed by ext_dir_remove(). */
void ext_dir_make(char *dir, size_t len);
void ext_dir_remove(const char *dir);

uint64_t mono_ns(void);

/* Attach `backing` to a free loop device with the given logical block size
 * (autoclear: it detaches when the last descriptor closes, even if the test
 * dies), its path into dev.  Returns the loop fd, or -errno when loop
 * devices are unusable (then the test skips). */
int loop_attach(const char *backing, unsigned block_size, char *dev, size_t len);

/* Records the completions of one request. */
struct one_done {
	atomic_int calls;
	ssize_t res;
};

void one_done_cb(struct wc_origin_io *io, ssize_t res);
void one_done_arm(struct wc_origin_io *io, struct one_done *d);
/* Submit one request and poll until its done() ran (exactly once). */
void submit_and_wait(struct wc_origin *o, struct wc_origin_io *io, struct one_done *d);
void sync_write(struct wc_origin *o, const void *buf, size_t len, uint64_t off);

/* A request of one buffer that counts its completions, for tests that keep
 * many in flight. */
struct counted_io {
	struct wc_origin_io io;
	struct iovec iov;
	atomic_int calls;
	ssize_t res;
};

void counted_done(struct wc_origin_io *io, ssize_t res);
void counted_prep(struct counted_io *c, enum wc_origin_op op, void *buf, size_t len, uint64_t off);

#endif
