/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_exclusive.c -- one owner at a time: a second open of a cache in
 * use (same process, another handle or another process), a format over it,
 * and a second cache on the same origin file are refused with -EBUSY and a
 * message, touching nothing; the lock goes with the owner's close or death
 * (kill -9), and everything the dead owner acknowledged with WC_FUA is
 * there for the next one.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include "cachetest.h"
#include "testmain.h"
#include "util/lock.h"

#define BS 4096u
#define ORIGIN_BLOCKS 256u
#define CACHE_BYTES (1u << 20)

static char cache_path[PATH_MAX], origin_path[PATH_MAX];

static void fresh_files(const char *tag)
{
	char name[64];

	snprintf(name, sizeof(name), "%s.pmem", tag);
	ct_make_file(cache_path, sizeof(cache_path), name, CACHE_BYTES);
	snprintf(name, sizeof(name), "%s.origin", tag);
	ct_make_file(origin_path, sizeof(origin_path), name, (uint64_t)ORIGIN_BLOCKS * BS);
}

static wc_cache *create_cache(void)
{
	struct wc_config cfg;
	wc_cache *c = NULL;

	wc_config_init(&cfg);
	ck_assert_msg(wc_create(&c, cache_path, origin_path, &cfg) == 0, "wc_create: %s",
	              wc_errmsg());
	return c;
}

static wc_cache *open_cache(void)
{
	wc_cache *c = NULL;

	ck_assert_msg(wc_open(&c, cache_path, origin_path, NULL) == 0, "wc_open: %s", wc_errmsg());
	return c;
}

static void write_fua(wc_cache *c, uint64_t block, uint64_t version)
{
	uint8_t *buf = aligned_alloc(BS, BS);

	ct_fill_block(buf, BS, block, version);
	ck_assert_int_eq(wc_write(c, buf, BS, block * BS, WC_FUA), (ssize_t)BS);
	free(buf);
}

static void assert_block(wc_cache *c, uint64_t block, uint64_t version)
{
	uint8_t *buf = aligned_alloc(BS, BS);

	ck_assert_int_eq(wc_read(c, buf, BS, block * BS), (ssize_t)BS);
	ck_assert_msg(ct_block_is(buf, BS, block, version) == 0, "block %llu: not version %llu",
	              (unsigned long long)block, (unsigned long long)version);
	free(buf);
}

static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Mappings of `path` in this process. */
static unsigned count_maps(const char *path)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	unsigned n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, path))
			n++;
	fclose(f);
	return n;
}

static uint8_t *read_file(const char *path, size_t len)
{
	uint8_t *buf = malloc(len);
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, len, 0), (ssize_t)len);
	close(fd);
	return buf;
}

#define assert_busy(expr, ...)                                                            \
	do {                                                                              \
		ct_assert_err(expr, -EBUSY);                                              \
		const char *want_[] = { __VA_ARGS__ };                                    \
		for (size_t i_ = 0; i_ < sizeof(want_) / sizeof(want_[0]); i_++)          \
			ck_assert_msg(strstr(wc_errmsg(), want_[i_]), "%s: message lacks '%s': %s", \
			              #expr, want_[i_], wc_errmsg());                     \
	} while (0)

/* ---------------------------------------------------------- one process */

START_TEST(test_second_open_same_process)
{
	wc_cache *c, *c2 = (wc_cache *)1;
	unsigned fds, maps;
	char pid[32];

	fresh_files("same");
	c = create_cache();
	write_fua(c, 5, 1);
	fds = count_fds();
	maps = count_maps(cache_path);
	snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
	assert_busy(wc_open(&c2, cache_path, origin_path, NULL), "in use", cache_path,
	            "this process", pid);
	ck_assert_ptr_null(c2);
	/* Refused completely: no descriptor, no mapping left behind. */
	ck_assert_uint_eq(count_fds(), fds);
	ck_assert_uint_eq(count_maps(cache_path), maps);
	/* A POSIX lock would be gone after that refused open closed its own
	 * descriptor of the file; the owner's lock must not be. */
	assert_busy(wc_open(&c2, cache_path, origin_path, NULL), "in use");
	assert_block(c, 5, 1);
	write_fua(c, 6, 1);
	ck_assert_int_eq(wc_close(c), 0);

	/* After close the next owner opens and finds both writes. */
	c = open_cache();
	assert_block(c, 5, 1);
	assert_block(c, 6, 1);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_cache();
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* The embedder's own origin: the cache's lock refuses just the same, and
 * the origin stays the caller's. */
START_TEST(test_second_open_origin_variant)
{
	struct wc_origin o;
	wc_cache *c, *c2 = NULL;
	char other[PATH_MAX];

	fresh_files("variant");
	ct_make_file(other, sizeof(other), "variant.origin2", (uint64_t)ORIGIN_BLOCKS * BS);
	c = create_cache();
	ck_assert_int_eq(wc_origin_open_aio(&o, other, 0), 0);
	assert_busy(wc_open_origin(&c2, cache_path, o, NULL), "cache", "in use", cache_path);
	ck_assert_ptr_null(c2);
	assert_busy(wc_create_origin(&c2, cache_path, o, NULL), "cache", "in use", cache_path);
	ck_assert_ptr_null(c2);
	/* Another origin path through wc_open: the cache refuses. */
	assert_busy(wc_open(&c2, cache_path, other, NULL), "cache", "in use");
	o.ops->close(o.ctx);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* A format over a cache in use: refused before a byte is written, and the
 * open cache's committed data and superblock are as they were. */
START_TEST(test_create_over_open_cache)
{
	struct wc_config cfg;
	wc_cache *c, *c2 = NULL;
	char other[PATH_MAX];
	uint8_t *before, *after;

	fresh_files("format");
	ct_make_file(other, sizeof(other), "format.origin2", (uint64_t)ORIGIN_BLOCKS * BS);
	c = create_cache();
	for (uint64_t b = 0; b < 8; b++)
		write_fua(c, b, 7);
	before = read_file(cache_path, CACHE_BYTES);
	wc_config_init(&cfg);
	assert_busy(wc_create(&c2, cache_path, origin_path, &cfg), "cache", "in use", cache_path);
	assert_busy(wc_create(&c2, cache_path, other, &cfg), "cache", "in use", cache_path);
	/* cache_size would extend the file: not even that. */
	cfg.cache_size = 2 * CACHE_BYTES;
	assert_busy(wc_create(&c2, cache_path, other, &cfg), "cache", "in use");
	ck_assert_ptr_null(c2);
	after = read_file(cache_path, CACHE_BYTES);
	ck_assert_msg(memcmp(before, after, CACHE_BYTES) == 0, "the refused format wrote the cache");
	{
		struct stat st;

		ck_assert_int_eq(stat(cache_path, &st), 0);
		ck_assert_int_eq(st.st_size, CACHE_BYTES);
	}
	for (uint64_t b = 0; b < 8; b++)
		assert_block(c, b, 7);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_cache();
	for (uint64_t b = 0; b < 8; b++)
		assert_block(c, b, 7);
	ck_assert_int_eq(wc_close(c), 0);
	free(before);
	free(after);
}
END_TEST

/* Two caches on one origin file would write back over each other. */
START_TEST(test_origin_in_use)
{
	wc_cache *c, *c2 = NULL;
	struct wc_origin o;
	char cache2[PATH_MAX];
	uint8_t *img, zero[4096] = { 0 };

	fresh_files("origin");
	ct_make_file(cache2, sizeof(cache2), "origin.pmem2", CACHE_BYTES);
	c = create_cache();
	assert_busy(wc_create(&c2, cache2, origin_path, NULL), "origin", origin_path, "in use",
	            "this process");
	ck_assert_ptr_null(c2);
	assert_busy(wc_origin_open_aio(&o, origin_path, 0), "origin", origin_path, "in use");
	/* The second cache file was not formatted. */
	img = read_file(cache2, sizeof(zero));
	ck_assert_int_eq(memcmp(img, zero, sizeof(zero)), 0);
	free(img);
	ck_assert_int_eq(wc_close(c), 0);
	/* The origin is free again with its cache closed. */
	ck_assert_int_eq(wc_create(&c2, cache2, origin_path, NULL), 0);
	ck_assert_int_eq(wc_close(c2), 0);
}
END_TEST

/* The lock is tested without being taken, and names this process. */
START_TEST(test_probe)
{
	struct wc_lock_holder h;
	wc_cache *c;
	char buf[256];
	int fd;

	fresh_files("probe");
	c = create_cache();
	fd = open(cache_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(wc_lock_probe(fd, cache_path, &h), 1);
	ck_assert_int_eq(h.pid, getpid());
	ck_assert(h.self);
	ck_assert_ptr_nonnull(strstr(wc_lock_holder_str(buf, sizeof(buf), &h), "this process"));
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_int_eq(wc_lock_probe(fd, cache_path, &h), 0);
	close(fd);
}
END_TEST

/* ---------------------------------------------------------- two processes */

static void write_all(int fd, const void *p, size_t len)
{
	ck_assert_int_eq(write(fd, p, len), (ssize_t)len);
}

static int read_all(int fd, void *p, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)p + got, len - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

START_TEST(test_second_open_other_process)
{
	wc_cache *c;
	int to_child[2], from_child[2];
	char go = 0, pidstr[32];
	pid_t pid;
	int status;

	fresh_files("fork");
	c = create_cache();
	write_fua(c, 1, 3);
	ck_assert_int_eq(pipe(from_child), 0);
	ck_assert_int_eq(pipe(to_child), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		wc_cache *c2 = NULL;
		int r;
		char want[32];

		/* The child inherits the parent's handle; it must not use it. */
		r = wc_open(&c2, cache_path, origin_path, NULL);
		snprintf(want, sizeof(want), "pid %ld", (long)getppid());
		if (r != -EBUSY || c2 || !strstr(wc_errmsg(), "in use") || !strstr(wc_errmsg(), want)) {
			fprintf(stderr, "child: wc_open returned %d: %s\n", r, wc_errmsg());
			_exit(1);
		}
		r = wc_create(&c2, cache_path, origin_path, NULL);
		_exit(r == -EBUSY ? 0 : 2);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	assert_block(c, 1, 3);
	ck_assert_int_eq(wc_close(c), 0);

	/* The other way round: the child owns it, the parent is refused. */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		wc_cache *c2 = NULL;

		close(from_child[0]);
		close(to_child[1]);
		if (wc_open(&c2, cache_path, origin_path, NULL))
			_exit(1);
		go = 1;
		if (write(from_child[1], &go, 1) != 1 || read(to_child[0], &go, 1) != 1)
			_exit(2);
		_exit(wc_close(c2) ? 3 : 0);
	}
	close(from_child[1]);
	close(to_child[0]);
	ck_assert_int_eq(read_all(from_child[0], &go, 1), 0);
	c = NULL;
	snprintf(pidstr, sizeof(pidstr), "pid %ld", (long)pid);
	assert_busy(wc_open(&c, cache_path, origin_path, NULL), "in use", pidstr);
	write_all(to_child[1], &go, 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	close(from_child[0]);
	close(to_child[1]);
	c = open_cache();
	assert_block(c, 1, 3);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* kill -9 of the owner: the kernel drops its lock, and every write it
 * acknowledged with WC_FUA is there for the next owner.  The child reports
 * each acknowledgement through a pipe and keeps writing; the parent kills
 * it at an arbitrary point after the first 16 and checks what it was told
 * (plus whatever else the child got acknowledged meanwhile). */
#define KILL_BLOCKS 64u

START_TEST(test_kill9_releases)
{
	struct { uint32_t block, version; } ack;
	uint32_t acked[KILL_BLOCKS] = { 0 };
	int from_child[2], status;
	unsigned seen = 0;
	wc_cache *c;
	pid_t pid;

	fresh_files("kill");
	c = create_cache();
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_int_eq(pipe(from_child), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		wc_cache *cc = NULL;
		uint8_t *buf = aligned_alloc(BS, BS);

		close(from_child[0]);
		if (wc_open(&cc, cache_path, origin_path, NULL))
			_exit(1);
		for (uint32_t v = 1;; v++)
			for (uint32_t b = 0; b < KILL_BLOCKS; b++) {
				ct_fill_block(buf, BS, b, v);
				if (wc_write(cc, buf, BS, (uint64_t)b * BS, WC_FUA) != (ssize_t)BS)
					_exit(2);
				ack.block = b;
				ack.version = v;
				if (write(from_child[1], &ack, sizeof(ack)) != (ssize_t)sizeof(ack))
					_exit(3);
			}
	}
	close(from_child[1]);
	while (seen < 16 && read_all(from_child[0], &ack, sizeof(ack)) == 0) {
		acked[ack.block] = ack.version;
		seen++;
	}
	ck_assert_uint_eq(seen, 16);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* Acknowledgements still in the pipe count too. */
	while (read_all(from_child[0], &ack, sizeof(ack)) == 0)
		acked[ack.block] = ack.version;
	close(from_child[0]);

	c = open_cache();
	for (uint32_t b = 0; b < KILL_BLOCKS; b++) {
		uint8_t *buf = aligned_alloc(BS, BS);
		uint64_t v;

		ck_assert_int_eq(wc_read(c, buf, BS, (uint64_t)b * BS), (ssize_t)BS);
		v = ct_block_version(buf, BS, b);
		if (acked[b] == 0)
			ck_assert_msg(v == UINT64_MAX || v == 1, "block %u: %llu, never acknowledged",
			              b, (unsigned long long)v);
		else
			/* The write after the last acknowledgement may have
			 * become durable before the kill. */
			ck_assert_msg(v == acked[b] || v == (uint64_t)acked[b] + 1,
			              "block %u: version %llu, acknowledged %u", b,
			              (unsigned long long)v, acked[b]);
		free(buf);
	}
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("exclusive");
	TCase *tc = tcase_create("owner");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_second_open_same_process);
	tcase_add_test(tc, test_second_open_origin_variant);
	tcase_add_test(tc, test_create_over_open_cache);
	tcase_add_test(tc, test_origin_in_use);
	tcase_add_test(tc, test_probe);
	tcase_add_test(tc, test_second_open_other_process);
	tcase_add_test(tc, test_kill9_releases);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(suite());
}
