/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * old_caller.c -- a program as it was built against libwcache 0.1, run on
 * this library.  It includes the 0.1 header (wcache-0.1.h, a verbatim copy)
 * and binds the WCACHE_0.1 symbol versions as such a binary does.  Canary
 * bytes right after each struct catch a library that reads or writes
 * past the 0.1 layout.
 *
 * Its own origin has the ops table of 0.1 (8 ops, nothing after them),
 * passed to wc_create_origin@WCACHE_0.1 and wc_open_origin@WCACHE_0.2 (what
 * programs built against 0.2 to 0.4 bind): the library must read the 8 ops
 * and not a byte past them, where 0.5's table has its size, capabilities
 * and identify().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wcache-0.1.h"

/* What the linker records for a program linked against 0.1. */
__asm__(".symver wc_create, wc_create@WCACHE_0.1");
__asm__(".symver wc_open, wc_open@WCACHE_0.1");
__asm__(".symver wc_create_origin, wc_create_origin@WCACHE_0.1");
/* A program built against 0.2 to 0.4 binds this one (with a config of its
 * own layout; here NULL, the defaults). */
int wc_open_origin_0_2(wc_cache **out, const char *cache_path, struct wc_origin origin,
                       const struct wc_config *cfg);
__asm__(".symver wc_open_origin_0_2, wc_open_origin@WCACHE_0.2");

#define CANARY 0xa5

struct config_box {
	struct wc_config cfg;
	unsigned char canary[256];
};

struct stats_box {
	struct wc_stats st;
	unsigned char canary[256];
};

struct ops_box {
	struct wc_origin_ops ops;
	unsigned char canary[256];
};

static int n;
static int failed;

/* ------------------------------------------- an origin with 0.1's table */

/* A libaio origin seen through a table of 0.1's layout, counting what the
 * cache asks of it. */
struct counted {
	struct wc_origin inner;
	unsigned long writes, reads, other_ops, flushes;
};

static int c_size(void *ctx, uint64_t *bytes)
{
	struct counted *o = ctx;

	return o->inner.ops->size(o->inner.ctx, bytes);
}

static int c_submit(void *ctx, struct wc_origin_io *io)
{
	struct counted *o = ctx;

	/* 0.1 has reads and writes; anything else is an op this table never
	 * said it takes. */
	if (io->op == WC_ORIGIN_WRITE)
		__atomic_add_fetch(&o->writes, 1, __ATOMIC_RELAXED);
	else if (io->op == WC_ORIGIN_READ)
		__atomic_add_fetch(&o->reads, 1, __ATOMIC_RELAXED);
	else {
		__atomic_add_fetch(&o->other_ops, 1, __ATOMIC_RELAXED);
		return -EINVAL;
	}
	return o->inner.ops->submit(o->inner.ctx, io);
}

static int c_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	struct counted *o = ctx;

	return o->inner.ops->poll(o->inner.ctx, min_events, timeout_ns);
}

static int c_flush(void *ctx)
{
	struct counted *o = ctx;

	__atomic_add_fetch(&o->flushes, 1, __ATOMIC_RELAXED);
	return o->inner.ops->flush(o->inner.ctx);
}

static void c_close(void *ctx)
{
	struct counted *o = ctx;

	o->inner.ops->close(o->inner.ctx);
	o->inner.ops = NULL;
}

static uint32_t c_alignment(void *ctx)
{
	struct counted *o = ctx;

	return o->inner.ops->alignment(o->inner.ctx);
}

static const char *c_describe(void *ctx)
{
	(void)ctx;
	return "old-table origin";
}

static struct ops_box counted_ops;

static int counted_open(struct counted *o, struct wc_origin *out, const char *path)
{
	int ret = wc_origin_open_aio(&o->inner, path, 0);

	if (ret)
		return ret;
	memset(&counted_ops, CANARY, sizeof(counted_ops));
	counted_ops.ops = (struct wc_origin_ops){
		.size = c_size, .submit = c_submit, .poll = c_poll, .flush = c_flush,
		.close = c_close, .alignment = c_alignment, .describe = c_describe,
	};
	*out = (struct wc_origin){ .ops = &counted_ops.ops, .ctx = o };
	return 0;
}

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n, what);
	if (!cond)
		failed = 1;
}

static int canary_intact(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != CANARY)
			return 0;
	return 1;
}

static void old_table_origin(const char *dir)
{
	char cache[64], origin[64];
	static struct config_box cb;
	static struct stats_box sb;
	char buf[8192] __attribute__((aligned(4096)));
	struct counted co = { 0 };
	struct wc_origin o;
	wc_cache *c = NULL;
	int fd, ret;

	snprintf(cache, sizeof(cache), "%s/cache-o", dir);
	snprintf(origin, sizeof(origin), "%s/origin-o", dir);
	fd = open(origin, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 4 << 20)) {
		printf("Bail out! origin %s\n", origin);
		exit(1);
	}
	close(fd);

	memset(&cb, CANARY, sizeof(cb));
	wc_config_init(&cb.cfg);
	cb.cfg.cache_size = 16 << 20;
	ret = counted_open(&co, &o, origin);
	if (!ret)
		ret = wc_create_origin(&c, cache, o, &cb.cfg);
	if (ret)
		printf("# wc_create_origin: %d %s\n", ret, wc_errmsg());
	ok(ret == 0 && c, "wc_create_origin@WCACHE_0.1 takes an origin with 0.1's ops table");
	memset(buf, 'o', sizeof(buf));
	ok(c && wc_write(c, buf, sizeof(buf), 0, WC_FUA) == (ssize_t)sizeof(buf) &&
	   wc_writeback(c) == 0 && co.writes > 0 && co.flushes > 0,
	   "write-back writes it, and makes it durable with flush()");
	memset(&sb, CANARY, sizeof(sb));
	ret = c ? wc_get_stats(c, &sb.st) : -1;
	ok(ret == 0 && sb.st.origin_mode && strcmp(sb.st.origin_mode, "old-table origin") == 0,
	   "the cache describes it by its describe()");
	ok(c && wc_close(c) == 0 && co.inner.ops == NULL, "wc_close closes it");

	c = NULL;
	ret = counted_open(&co, &o, origin);
	if (!ret)
		ret = wc_open_origin_0_2(&c, cache, o, NULL);
	if (ret)
		printf("# wc_open_origin: %d %s\n", ret, wc_errmsg());
	memset(buf, 0, sizeof(buf));
	ok(ret == 0 && c && wc_read(c, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf) &&
	   buf[0] == 'o' && wc_close(c) == 0, "wc_open_origin@WCACHE_0.2 takes it too");
	/* A library reading past the 8 ops would take the canary bytes for
	 * 0.5's ops_size and caps: refuse the table, or send it flush
	 * requests (WC_ORIGIN_FLUSH), which submit() counts as other ops. */
	ok(co.other_ops == 0 && canary_intact(counted_ops.canary, sizeof(counted_ops.canary)),
	   "no op but read and write was submitted, and the bytes after the table are untouched");
	unlink(cache);
	unlink(origin);
}

int main(void)
{
	char dir[] = "/dev/shm/wcabi-XXXXXX", cache[64], origin[64];
	static struct config_box cb;
	static struct stats_box sb;
	char buf[8192] __attribute__((aligned(4096)));
	struct stat stc;
	wc_cache *c = NULL;
	int fd, ret;

	printf("1..16\n");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp %s\n", dir);
		return 1;
	}
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(origin, sizeof(origin), "%s/origin", dir);
	fd = open(origin, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 4 << 20)) {
		printf("Bail out! origin %s\n", origin);
		return 1;
	}
	close(fd);

	/* The canary sits where 0.2 put `size`: a library reading it as
	 * a size would refuse the config or read garbage. */
	memset(&cb, CANARY, sizeof(cb));
	wc_config_init(&cb.cfg);
	ok(cb.cfg.block_size == 4096 && cb.cfg.writeback_max_io_kib == 1024 &&
	   canary_intact(cb.canary, sizeof(cb.canary)), "wc_config_init fills the 0.1 struct only");
	ret = wc_config_parse(&cb.cfg, "block_size=8192,high_watermark=70");
	ok(ret == 0 && cb.cfg.block_size == 8192 && cb.cfg.high_watermark == 70 &&
	   canary_intact(cb.canary, sizeof(cb.canary)), "wc_config_parse writes the 0.1 struct only");
	cb.cfg.cache_size = 16 << 20;
	ret = wc_create(&c, cache, origin, &cb.cfg);
	if (ret)
		printf("# wc_create: %d %s\n", ret, wc_errmsg());
	ok(ret == 0 && c, "wc_create takes the 0.1 config");
	ok(c && wc_block_size(c) == 8192 && stat(cache, &stc) == 0 && stc.st_size == 16 << 20,
	   "the config is honoured (block_size, cache_size)");
	memset(buf, 'x', sizeof(buf));
	ok(c && wc_write(c, buf, sizeof(buf), 0, WC_FUA) == (ssize_t)sizeof(buf), "a FUA write");

	memset(&sb, CANARY, sizeof(sb));
	ret = c ? wc_get_stats(c, &sb.st) : -1;
	ok(ret == 0 && canary_intact(sb.canary, sizeof(sb.canary)),
	   "wc_get_stats writes the 0.1 struct only");
	ok(ret == 0 && sb.st.writes == 1 && sb.st.blocks > 0 && sb.st.dirty_blocks == 1 &&
	   sb.st.pmem_source != NULL, "the stats are right");
	ok(c && wc_close(c) == 0, "wc_close");

	c = NULL;
	cb.cfg.block_size = 0;
	ret = wc_open(&c, cache, origin, &cb.cfg);
	if (ret)
		printf("# wc_open: %d %s\n", ret, wc_errmsg());
	ok(ret == 0 && c && wc_block_size(c) == 8192, "wc_open takes the 0.1 config");
	memset(buf, 0, sizeof(buf));
	ok(c && wc_read(c, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf) && buf[0] == 'x' &&
	   wc_close(c) == 0, "the write is there after reopening");

	unlink(cache);
	unlink(origin);
	old_table_origin(dir);
	rmdir(dir);
	return failed;
}
