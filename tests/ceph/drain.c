/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drain -- write-back bandwidth over any origin wc_origin_open() takes (an
 * rbd: spec above all: `wcbench writeback` drives only origin files), for
 * fio-profiles/run --rbd.  The same two figures as wcbench writeback:
 *
 *   fill   a fresh cache, smaller than the working set, takes block-size
 *          writes of the working set (sequential, or each block once in a
 *          random order); once it is full every write waits for write-back,
 *          so this phase already runs at write-back speed;
 *   drain  wc_writeback() empties what is left.
 *
 *   drain ORIGIN CACHE [--cache-size 128M] [--working-set 256M]
 *         [--block-size 4096] [--pattern seq|rand] [--config STR] [--seed N]
 *
 * One JSON object on stdout: drain_mbps = bytes written back while
 * draining / drain time; total_mbps = working set / (fill + drain); the
 * cache's write-back counters, with the window (blocks in flight) and the
 * origin's mean write latency as write-back last measured them.  A sample
 * of blocks is read back through the origin alone afterwards: a figure
 * from a write-back that lost data would be worthless.  Exit 0, or 1 with
 * a message.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "origin/origin.h"
#include "util/size.h"
#include "wcache.h"

#define VERIFY_SAMPLES 256

struct opts {
	const char *origin, *cache, *config;
	uint64_t cache_size, working_set, seed;
	uint32_t block_size;
	int rand;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, long ret)
{
	fprintf(stderr, "drain: %s: %ld %s\n", what, ret, wc_errmsg());
	return 1;
}

/* Block b's bytes: its index in every 8-byte word, so a block written to
 * the wrong place or not at all cannot pass. */
static void fill_block(uint8_t *buf, uint32_t bs, uint64_t b)
{
	for (uint32_t i = 0; i < bs; i += 8)
		memcpy(buf + i, &(uint64_t){ b ^ 0xa5a5a5a5a5a5a5a5ull }, 8);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "cache-size", required_argument, NULL, 'c' },
		{ "working-set", required_argument, NULL, 'w' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "config", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v, *dst;
	int opt;

	*o = (struct opts){ .cache_size = 128ull << 20, .working_set = 256ull << 20,
	                    .block_size = 4096, .rand = 1, .seed = 1 };
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		dst = NULL;
		switch (opt) {
		case 'c': dst = &o->cache_size; break;
		case 'w': dst = &o->working_set; break;
		case 's': dst = &o->seed; break;
		case 'b':
			if (wc_size_parse(optarg, &v, NULL) || v < 512 || v > 65536 || (v & (v - 1))) {
				fprintf(stderr, "drain: --block-size %s: a power of two in 512..64K\n", optarg);
				return -1;
			}
			o->block_size = (uint32_t)v;
			break;
		case 'p':
			if (strcmp(optarg, "seq") && strcmp(optarg, "rand")) {
				fprintf(stderr, "drain: --pattern %s: seq or rand\n", optarg);
				return -1;
			}
			o->rand = !strcmp(optarg, "rand");
			break;
		case 'o': o->config = optarg; break;
		default: return -1;
		}
		if (dst && wc_size_parse(optarg, dst, NULL)) {
			fprintf(stderr, "drain: %s: not a size\n", optarg);
			return -1;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: drain ORIGIN CACHE [--cache-size 128M] [--working-set 256M]\n"
		                "             [--block-size 4096] [--pattern seq|rand] [--config STR] [--seed N]\n");
		return -1;
	}
	o->origin = argv[optind];
	o->cache = argv[optind + 1];
	if (o->working_set % o->block_size || o->working_set <= o->cache_size) {
		fprintf(stderr, "drain: --working-set must be a multiple of the block size and larger than --cache-size\n");
		return -1;
	}
	return 0;
}

/* After wc_close: sampled blocks of the origin hold what the cache took. */
static int verify(const struct opts *o, uint64_t nblocks, uint8_t *buf, uint8_t *want)
{
	struct wc_origin origin;
	uint64_t s = o->seed * 7919 + 1;
	int ret = wc_origin_open(&origin, o->origin);

	if (ret)
		return fail("reopening the origin to check it", ret);
	for (unsigned i = 0; i < VERIFY_SAMPLES && !ret; i++) {
		uint64_t b = xorshift(&s) % nblocks;

		ret = wc_origin_rw_sync(&origin, WC_ORIGIN_READ, buf, o->block_size, b * o->block_size);
		fill_block(want, o->block_size, b);
		if (!ret && memcmp(buf, want, o->block_size)) {
			fprintf(stderr, "drain: block %" PRIu64 " of the origin does not hold what was written\n", b);
			ret = -EIO;
		}
	}
	wc_origin_close(&origin);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct wc_stats st0, st1, st2;
	struct wc_config cfg;
	uint64_t nblocks, *order, s;
	double t0, t1, t2, fill_s, drain_s, drain_bytes;
	uint8_t *buf, *want;
	struct opts o;
	wc_cache *c;
	int ret;

	if (parse(argc, argv, &o))
		return 2;
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	nblocks = o.working_set / o.block_size;
	order = malloc(nblocks * sizeof(*order));
	if (!order || posix_memalign((void **)&buf, 4096, o.block_size) ||
	    posix_memalign((void **)&want, 4096, o.block_size))
		return fail("memory", -ENOMEM);
	for (uint64_t i = 0; i < nblocks; i++)
		order[i] = i;
	s = o.seed * 2654435761ull + 1;
	if (o.rand)
		for (uint64_t i = nblocks - 1; i > 0; i--) {
			uint64_t j = xorshift(&s) % (i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}

	wc_config_init(&cfg);
	if (o.config && wc_config_parse(&cfg, o.config))
		return fail("--config", -EINVAL);
	cfg.block_size = o.block_size;
	cfg.cache_size = o.cache_size;
	unlink(o.cache);
	ret = wc_create(&c, o.cache, o.origin, &cfg);
	if (ret)
		return fail("wc_create", ret);
	if (wc_size(c) < o.working_set) {
		fprintf(stderr, "drain: the origin has %" PRIu64 " bytes, the working set needs %" PRIu64 "\n",
		        wc_size(c), o.working_set);
		return 1;
	}
	wc_get_stats(c, &st0);
	t0 = now_s();
	for (uint64_t i = 0; i < nblocks; i++) {
		ssize_t w;

		fill_block(buf, o.block_size, order[i]);
		w = wc_write(c, buf, o.block_size, order[i] * o.block_size, 0);
		if (w != (ssize_t)o.block_size)
			return fail("wc_write", (long)w);
	}
	t1 = now_s();
	wc_get_stats(c, &st1);
	ret = wc_writeback(c);
	if (ret)
		return fail("wc_writeback", ret);
	t2 = now_s();
	wc_get_stats(c, &st2);
	printf("{\"origin_mode\": \"%s\", \"pattern\": \"%s\", \"block_size\": %u, "
	       "\"cache_size\": %" PRIu64 ", \"working_set\": %" PRIu64 ", ",
	       st2.origin_mode, o.rand ? "rand" : "seq", o.block_size, o.cache_size, o.working_set);
	ret = wc_close(c);
	if (ret)
		return fail("wc_close", ret);
	fill_s = t1 - t0;
	drain_s = t2 - t1;
	drain_bytes = (double)(st2.writeback_bytes - st1.writeback_bytes);
	printf("\"fill_s\": %.3f, \"drain_s\": %.3f, \"drain_bytes\": %.0f, \"drain_mbps\": %.1f, "
	       "\"total_mbps\": %.1f, \"writeback_ios\": %" PRIu64 ", \"writeback_bytes\": %" PRIu64 ", "
	       "\"blocked_writes\": %" PRIu64 ", \"window_blocks\": %" PRIu64 ", "
	       "\"origin_write_latency_us\": %" PRIu64 "}\n",
	       fill_s, drain_s, drain_bytes, drain_s > 0 ? drain_bytes / drain_s / 1e6 : 0.0,
	       (double)o.working_set / (fill_s + drain_s) / 1e6, st2.writeback_ios - st0.writeback_ios,
	       st2.writeback_bytes - st0.writeback_bytes,
	       st2.writes_blocked_on_freelist - st0.writes_blocked_on_freelist,
	       st2.writeback_window, st2.writeback_latency_us);
	fflush(stdout);
	ret = verify(&o, nblocks, buf, want);
	free(order);
	free(buf);
	free(want);
	return ret;
}
