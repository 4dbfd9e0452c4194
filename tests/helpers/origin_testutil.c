/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin_testutil.c -- what the origin test programs share (see the header).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "origin_testutil.h"

void *aligned_buf(size_t len)
{
	void *p = NULL;

	ck_assert_int_eq(posix_memalign(&p, 4096, len), 0);
	return p;
}

void fill_pattern(void *buf, size_t len, uint64_t seed)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)((seed * 131 + i * 7 + (i >> 9)) & 0xff);
}

void make_file(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_msg(fd >= 0, "create %s: %s", path, strerror(errno));
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

void read_file(const char *path, void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_RDONLY);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

void ext_dir_make(char *dir, size_t len)
{
	const char *base = getenv("WC_TEST_BUILDDIR");

	snprintf(dir, len, "%s/wcorigin-XXXXXX", base && *base ? base : "/var/tmp");
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

void ext_dir_remove(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void one_done_cb(struct wc_origin_io *io, ssize_t res)
{
	struct one_done *d = io->priv;

	d->res = res;
	atomic_fetch_add(&d->calls, 1);
}

void one_done_arm(struct wc_origin_io *io, struct one_done *d)
{
	atomic_init(&d->calls, 0);
	d->res = 0;
	io->done = one_done_cb;
	io->priv = d;
}

void submit_and_wait(struct wc_origin *o, struct wc_origin_io *io, struct one_done *d)
{
	int ret;

	one_done_arm(io, d);
	ret = wc_origin_submit(o, io);
	ck_assert_msg(ret == 0, "submit: %d %s", ret, wc_errmsg());
	while (atomic_load(&d->calls) == 0)
		ck_assert_int_ge(wc_origin_poll(o, 1, 1000000000ull), 0);
	ck_assert_int_eq(atomic_load(&d->calls), 1);
}

void counted_done(struct wc_origin_io *io, ssize_t res)
{
	struct counted_io *c = io->priv;

	c->res = res;
	atomic_fetch_add(&c->calls, 1);
}

void counted_prep(struct counted_io *c, enum wc_origin_op op, void *buf, size_t len, uint64_t off)
{
	c->iov = (struct iovec){ buf, len };
	c->io = (struct wc_origin_io){ .op = op, .iov = &c->iov, .iovcnt = 1, .offset = off,
	                               .done = counted_done, .priv = c };
	atomic_init(&c->calls, 0);
	c->res = 0;
}

void sync_write(struct wc_origin *o, const void *buf, size_t len, uint64_t off)
{
	int ret = wc_origin_rw_sync(o, WC_ORIGIN_WRITE, (void *)buf, len, off);

	ck_assert_msg(ret == 0, "write %zu at %llu: %d %s", len, (unsigned long long)off, ret,
	              wc_errmsg());
}

/* Attach `backing` to a free loop device with the given logical block size
 * (autoclear: it detaches when the last descriptor closes, even if the test
 * dies).  Returns the loop fd, or -errno when loop devices are unusable. */
int loop_attach(const char *backing, unsigned block_size, char *dev, size_t len)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	int ret = -ENODEV;

	if (ctl < 0)
		return -errno;
	for (int attempt = 0; attempt < 16; attempt++) {
		struct loop_config cfg;
		int n = ioctl(ctl, LOOP_CTL_GET_FREE), dfd, bfd;

		if (n < 0) {
			ret = -errno;
			break;
		}
		snprintf(dev, len, "/dev/loop%d", n);
		dfd = open(dev, O_RDWR | O_CLOEXEC);
		if (dfd < 0) {
			ret = -errno;
			break;
		}
		bfd = open(backing, O_RDWR | O_CLOEXEC);
		ck_assert(bfd >= 0);
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (uint32_t)bfd;
		cfg.block_size = block_size;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		ret = ioctl(dfd, LOOP_CONFIGURE, &cfg) == 0 ? 0 : -errno;
		close(bfd);
		if (ret == 0) {
			close(ctl);
			return dfd;
		}
		close(dfd);
		if (ret != -EBUSY) /* EBUSY: another process took it first */
			break;
	}
	close(ctl);
	return ret;
}
