/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blk_write.c -- write a known pattern into a cache through the public API,
 * for the shell test of wcctl on the block medium:
 *
 *   blk_write CACHE ORIGIN OP...
 *
 * OP is one of
 *   w:FIRST:COUNT    write COUNT blocks from block FIRST, one wc_write
 *   F:FIRST:COUNT    the same with WC_FUA
 *   d:FIRST:COUNT    discard COUNT blocks from block FIRST
 *   f                wc_flush
 * Each block written holds its block number and the op's index, so a later
 * read can tell versions apart.  The cache is opened without threads (no
 * write-back behind the test's back) and closed at the end.  Any failure: a
 * message on stderr and exit 1; usage: exit 2.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wcache.h"

static int op(wc_cache *c, const char *spec, unsigned n)
{
	uint32_t bs = wc_block_size(c);
	unsigned long long first = 0, count = 0;
	char kind = spec[0];
	void *buf;
	ssize_t got;

	if (kind == 'f' && !spec[1])
		return wc_flush(c);
	if ((kind != 'w' && kind != 'F' && kind != 'd') ||
	    sscanf(spec + 1, ":%llu:%llu", &first, &count) != 2 || !count) {
		fprintf(stderr, "blk_write: bad op '%s'\n", spec);
		return -2;
	}
	if (kind == 'd')
		return wc_discard(c, first * bs, count * bs);
	buf = aligned_alloc(4096, count * bs);
	if (!buf)
		return -1;
	for (unsigned long long i = 0; i < count; i++) {
		char *b = (char *)buf + i * bs;

		memset(b, (int)(0x40 + n), bs);
		snprintf(b, bs, "block %llu op %u", first + i, n);
	}
	got = wc_write(c, buf, count * bs, first * bs, kind == 'F' ? WC_FUA : 0);
	free(buf);
	return got == (ssize_t)(count * bs) ? 0 : got < 0 ? (int)got : -1;
}

int main(int argc, char **argv)
{
	struct wc_config cfg;
	wc_cache *c;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: blk_write CACHE ORIGIN OP...\n");
		return 2;
	}
	wc_config_init(&cfg);
	cfg.block_size = 0;
	cfg.no_threads = true;
	ret = wc_open(&c, argv[1], argv[2], &cfg);
	if (ret) {
		fprintf(stderr, "blk_write: %s\n", wc_errmsg());
		return 1;
	}
	for (int i = 3; i < argc; i++) {
		ret = op(c, argv[i], (unsigned)i - 3);
		if (ret) {
			if (ret == -2) {
				wc_close(c);
				return 2;
			}
			fprintf(stderr, "blk_write: %s: %s\n", argv[i], wc_errmsg());
			wc_close(c);
			return 1;
		}
	}
	ret = wc_close(c);
	if (ret) {
		fprintf(stderr, "blk_write: close: %s\n", wc_errmsg());
		return 1;
	}
	return 0;
}
