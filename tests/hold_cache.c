/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hold_cache.c -- keep a cache open, as a server would, for the shell tests
 * of tools that meet a cache in use:
 *
 *   hold_cache CACHE ORIGIN [BLOCK]
 *
 * Opens the cache, writes BLOCK (a block number) with WC_FUA if given,
 * prints "ready <pid>" and then holds the cache until its standard input
 * reaches end of file; then closes it and exits 0.  Any failure: a message
 * on stderr and exit 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wcache.h"

int main(int argc, char **argv)
{
	struct wc_config cfg;
	wc_cache *c;
	char buf[256];
	int ret;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: hold_cache CACHE ORIGIN [BLOCK]\n");
		return 2;
	}
	wc_config_init(&cfg);
	cfg.block_size = 0;
	/* Nothing behind the shell test's back: no write-back, no autocommit
	 * thread writing the image while a tool compares it. */
	cfg.no_threads = true;
	ret = wc_open(&c, argv[1], argv[2], &cfg);
	if (ret) {
		fprintf(stderr, "hold_cache: %s\n", wc_errmsg());
		return 1;
	}
	if (argc == 4) {
		uint32_t bs = wc_block_size(c);
		uint64_t block = strtoull(argv[3], NULL, 0);
		void *data = aligned_alloc(bs, bs);

		memset(data, 0xa5, bs);
		ret = (int)wc_write(c, data, bs, block * bs, WC_FUA);
		free(data);
		if (ret != (int)bs) {
			fprintf(stderr, "hold_cache: write block %llu: %s\n", (unsigned long long)block,
			        wc_errmsg());
			wc_close(c);
			return 1;
		}
	}
	printf("ready %ld\n", (long)getpid());
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	ret = wc_close(c);
	if (ret) {
		fprintf(stderr, "hold_cache: close: %s\n", wc_errmsg());
		return 1;
	}
	return 0;
}
