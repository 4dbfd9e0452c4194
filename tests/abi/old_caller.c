/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * old_caller.c -- a program as it was built against libwcache 0.1, run on
 * this library.  It includes the 0.1 header (wcache-0.1.h, a verbatim copy)
 * and binds the WCACHE_0.1 symbol versions as such a binary does.  Canary
 * bytes right after each struct catch a library that reads or writes
 * past the 0.1 layout.
 */
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

#define CANARY 0xa5

struct config_box {
	struct wc_config cfg;
	unsigned char canary[256];
};

struct stats_box {
	struct wc_stats st;
	unsigned char canary[256];
};

static int n;
static int failed;

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

int main(void)
{
	char dir[] = "/dev/shm/wcabi-XXXXXX", cache[64], origin[64];
	static struct config_box cb;
	static struct stats_box sb;
	char buf[8192] __attribute__((aligned(4096)));
	struct stat stc;
	wc_cache *c = NULL;
	int fd, ret;

	printf("1..10\n");
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
	rmdir(dir);
	return failed;
}
