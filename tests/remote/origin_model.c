/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin-model -- writes through a cache over any origin, a model of what
 * was acknowledged kept in a file, and the origin's content checked
 * against it after write-back.  Origin-agnostic: ORIGIN is whatever
 * wc_origin_open() takes (a path, an nbd:// URI, an rbd: spec), so a
 * driver script per backend (nbd-model.sh) supplies the server.
 *
 *   origin-model init   ORIGIN CACHE --model FILE [--blocks N] [--block-size B]
 *                       [--cache-size SIZE] [--config STR]
 *       every block of the working set (the first N blocks of the origin)
 *       gets version 0 of its pattern, written through the origin alone;
 *       then a fresh cache (wc_create) and an empty model.
 *   origin-model write  ORIGIN CACHE --model FILE [--ops N] [--seed S]
 *                       [--max-blocks K] [--config STR]
 *       N calls through the cache: writes of 1..K blocks (one in eight
 *       with WC_FUA), discards, flushes, a hot region rewritten while its
 *       older versions are being written back; then wc_flush, the line
 *       "writeback start" on stdout, wc_writeback, "writeback done",
 *       wc_close.  A driver may SIGKILL it after "writeback start".
 *   origin-model verify ORIGIN CACHE --model FILE [--config STR]
 *       reopen the cache (recovery), wc_writeback, wc_close; then read the
 *       working set through wc_origin_open + wc_origin_rw_sync, the cache
 *       closed, and check it against the model.
 *
 * The model (tests/crash_model.h): each call is logged before it is issued
 * ("w FIRST COUNT", "d FIRST COUNT"; a write stores version = its call
 * number) and "a N" once a flush, FUA write or discard returned.  Each
 * line is one write(2) to an O_APPEND descriptor, so a SIGKILL never leaves
 * half of one; the process may die, the machine may not.  A check accepts
 * the origin when one call j in [acknowledged, started] explains every
 * block (crash_model.h).  After a kill past "writeback start" everything
 * is acknowledged, so the origin must equal the model exactly, and the
 * next write run continues the numbering from there.
 *
 * Exit status: 0 ok; 1 the check failed; 2 usage or setup error; 3 the
 * origin cannot be opened because this build lacks its backend (-ENOTSUP).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crash_model.h"
#include "crashsim.h"
#include "origin/origin.h"
#include "util/size.h"
#include "wcache.h"

#define READ_CHUNK (1u << 20)

struct opts {
	const char *cmd, *origin, *cache, *model, *config;
	uint64_t blocks, ops, seed, cache_size;
	uint32_t block_size;
	unsigned max_blocks;
};

static int fail(int code, const char *what, long ret)
{
	fprintf(stderr, "origin-model: %s: %ld %s\n", what, ret, wc_errmsg());
	return code;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: origin-model init   ORIGIN CACHE --model FILE [--blocks N] [--block-size B]\n"
	        "                           [--cache-size SIZE] [--config STR]\n"
	        "       origin-model write  ORIGIN CACHE --model FILE [--ops N] [--seed S]\n"
	        "                           [--max-blocks K] [--config STR]\n"
	        "       origin-model verify ORIGIN CACHE --model FILE [--config STR]\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t *out)
{
	const char *why = NULL;

	if (wc_size_parse(s, out, &why) == 0)
		return 0;
	fprintf(stderr, "origin-model: --%s %s: %s\n", opt, s, why ? why : "not a number");
	return -1;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "blocks", required_argument, NULL, 'n' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "cache-size", required_argument, NULL, 'c' },
		{ "config", required_argument, NULL, 'o' },
		{ "ops", required_argument, NULL, 'N' },
		{ "seed", required_argument, NULL, 's' },
		{ "max-blocks", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int opt;

	*o = (struct opts){ .blocks = 2048, .ops = 1000, .seed = 1, .cache_size = 8u << 20,
	                    .block_size = 4096, .max_blocks = 16 };
	while ((opt = getopt_long(argc, argv, "m:n:b:c:o:N:s:k:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm': o->model = optarg; break;
		case 'o': o->config = optarg; break;
		case 'n': if (parse_u64("blocks", optarg, &o->blocks)) return -1; break;
		case 'c': if (parse_u64("cache-size", optarg, &o->cache_size)) return -1; break;
		case 'N': if (parse_u64("ops", optarg, &o->ops)) return -1; break;
		case 's': if (parse_u64("seed", optarg, &o->seed)) return -1; break;
		case 'b':
			if (parse_u64("block-size", optarg, &v)) return -1;
			o->block_size = (uint32_t)v;
			break;
		case 'k':
			if (parse_u64("max-blocks", optarg, &v) || v == 0 || v > 256) {
				fprintf(stderr, "origin-model: --max-blocks: 1..256\n");
				return -1;
			}
			o->max_blocks = (unsigned)v;
			break;
		default:
			usage();
			return -1;
		}
	}
	if (argc - optind != 3 || !o->model) {
		usage();
		return -1;
	}
	o->cmd = argv[optind];
	o->origin = argv[optind + 1];
	o->cache = argv[optind + 2];
	if (o->blocks == 0) {
		fprintf(stderr, "origin-model: --blocks must be positive\n");
		return -1;
	}
	return 0;
}

static int config_of(const struct opts *o, struct wc_config *cfg)
{
	wc_config_init(cfg);
	cfg->block_size = 0; /* the superblock's */
	if (o->config && wc_config_parse(cfg, o->config) != 0)
		return fail(2, "--config", -EINVAL);
	return 0;
}

/* ---- the model file ---- */

static int log_fd = -1;

static int log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int log_line(const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write(2) per line: a kill leaves whole lines only. */
	if (n <= 0 || (size_t)n >= sizeof(line) || write(log_fd, line, (size_t)n) != n) {
		perror("origin-model: model file");
		exit(2);
	}
	return 0;
}

static struct wc_model *model_load(const char *path)
{
	struct wc_model *m = NULL;
	FILE *f = fopen(path, "r");
	int ret;

	if (!f) {
		fprintf(stderr, "origin-model: %s: %s (run init first)\n", path, strerror(errno));
		return NULL;
	}
	ret = wc_model_load(&m, f);
	fclose(f);
	if (ret) {
		fprintf(stderr, "origin-model: %s: not a model file (%s)\n", path, strerror(-ret));
		return NULL;
	}
	return m;
}

/* ---- init ---- */

static int open_origin(const char *name, struct wc_origin *o)
{
	int ret = wc_origin_open(o, name);

	if (ret)
		return fail(ret == -ENOTSUP ? 3 : 2, "opening the origin", ret);
	return 0;
}

static int cmd_init(const struct opts *o)
{
	uint64_t size = 0, bytes = o->blocks * o->block_size;
	struct wc_origin origin;
	struct wc_config cfg;
	uint8_t *buf;
	wc_cache *c;
	FILE *f;
	int ret;

	if (o->block_size < 512 || o->block_size > 65536 || (o->block_size & (o->block_size - 1)))
		return fail(2, "--block-size must be a power of two in 512..65536", -EINVAL);
	ret = open_origin(o->origin, &origin);
	if (ret)
		return ret;
	wc_origin_size(&origin, &size);
	if (size < bytes) {
		wc_origin_close(&origin);
		fprintf(stderr, "origin-model: %s has %" PRIu64 " bytes, the working set needs %" PRIu64 "\n",
		        o->origin, size, bytes);
		return 2;
	}
	if (posix_memalign((void **)&buf, 4096, READ_CHUNK))
		return fail(2, "memory", -ENOMEM);
	for (uint64_t off = 0; off < bytes; off += READ_CHUNK) {
		uint64_t n = bytes - off < READ_CHUNK ? bytes - off : READ_CHUNK;

		for (uint64_t b = 0; b < n / o->block_size; b++)
			wc_pattern_fill(buf + b * o->block_size, o->block_size,
			                off / o->block_size + b, 0);
		ret = wc_origin_rw_sync(&origin, WC_ORIGIN_WRITE, buf, n, off);
		if (ret)
			break;
	}
	free(buf);
	if (!ret)
		ret = wc_origin_flush(&origin);
	wc_origin_close(&origin);
	if (ret)
		return fail(2, "writing version 0 to the origin", ret);

	wc_config_init(&cfg);
	if (o->config && wc_config_parse(&cfg, o->config) != 0)
		return fail(2, "--config", -EINVAL);
	cfg.block_size = o->block_size;
	cfg.cache_size = o->cache_size;
	unlink(o->cache);
	ret = wc_create(&c, o->cache, o->origin, &cfg);
	if (!ret)
		ret = wc_close(c);
	if (ret)
		return fail(2, "creating the cache", ret);
	f = fopen(o->model, "w");
	if (!f || fprintf(f, "blocks %" PRIu64 " block_size %u\n", o->blocks, o->block_size) < 0 ||
	    fclose(f) != 0) {
		perror(o->model);
		return 2;
	}
	printf("init: %" PRIu64 " blocks of %u bytes at version 0 on %s; cache %s\n", o->blocks,
	       o->block_size, o->origin, o->cache);
	return 0;
}

/* ---- write ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t pick(struct wc_rng *r, uint64_t n)
{
	return wc_rng_next(r) % n;
}

static int cmd_write(const struct opts *o)
{
	uint64_t writes = 0, discards = 0, flushes = 0, fua = 0, nblocks, hot, t0;
	struct wc_model *m = model_load(o->model);
	struct wc_config cfg;
	struct wc_rng rng;
	uint32_t bs;
	uint8_t *buf;
	wc_cache *c;
	int ret;

	if (!m)
		return 2;
	nblocks = wc_model_blocks(m);
	bs = wc_model_block_size(m);
	hot = nblocks / 8 ? nblocks / 8 : 1;
	log_fd = open(o->model, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (log_fd < 0 || posix_memalign((void **)&buf, 4096, (size_t)o->max_blocks * bs)) {
		perror(o->model);
		return 2;
	}
	ret = config_of(o, &cfg);
	if (ret)
		return ret;
	ret = wc_open(&c, o->cache, o->origin, &cfg);
	if (ret)
		return fail(ret == -ENOTSUP ? 3 : 2, "wc_open", ret);
	if (wc_block_size(c) != bs) {
		fprintf(stderr, "origin-model: the cache has %u-byte blocks, the model %u\n",
		        wc_block_size(c), bs);
		return 2;
	}
	wc_rng_seed(&rng, o->seed);
	for (uint64_t i = 0; i < o->ops; i++) {
		unsigned kind = (unsigned)pick(&rng, 100);
		uint64_t count = 1 + pick(&rng, o->max_blocks), first, v;
		ssize_t w;

		if (kind < 80) {
			/* A quarter of the writes go to the hot region, where
			 * new versions meet older ones being written back. */
			uint64_t span = kind < 20 ? hot : nblocks;
			unsigned flags = pick(&rng, 8) == 0 ? WC_FUA : 0;

			count = count > span ? span : count;
			first = pick(&rng, span - count + 1);
			v = wc_model_write(m, first, count);
			log_line("w %" PRIu64 " %" PRIu64 "\n", first, count);
			for (uint64_t k = 0; k < count; k++)
				wc_pattern_fill(buf + k * bs, bs, first + k, v);
			w = wc_write(c, buf, count * bs, first * bs, flags);
			if (w != (ssize_t)(count * bs))
				return fail(1, "wc_write", (long)w);
			writes++;
			if (flags & WC_FUA) {
				wc_model_ack(m);
				log_line("a %" PRIu64 "\n", v);
				fua++;
			}
		} else if (kind < 88) {
			count = count > nblocks ? nblocks : count;
			first = pick(&rng, nblocks - count + 1);
			v = wc_model_discard(m, first, count);
			log_line("d %" PRIu64 " %" PRIu64 "\n", first, count);
			ret = wc_discard(c, first * bs, count * bs);
			if (ret)
				return fail(1, "wc_discard", ret);
			/* wc_discard commits: everything before it too. */
			wc_model_ack(m);
			log_line("a %" PRIu64 "\n", v);
			discards++;
		} else {
			v = wc_model_window(m).hi;
			ret = wc_flush(c);
			if (ret)
				return fail(1, "wc_flush", ret);
			wc_model_ack(m);
			log_line("a %" PRIu64 "\n", v);
			flushes++;
		}
	}
	ret = wc_flush(c);
	if (ret)
		return fail(1, "wc_flush", ret);
	log_line("a %" PRIu64 "\n", wc_model_window(m).hi);
	printf("writes=%" PRIu64 " (fua %" PRIu64 ") discards=%" PRIu64 " flushes=%" PRIu64 "\n",
	       writes, fua, discards, flushes);
	printf("writeback start\n");
	fflush(stdout);
	t0 = now_ms();
	ret = wc_writeback(c);
	if (ret)
		return fail(1, "wc_writeback", ret);
	printf("writeback done in %" PRIu64 " ms\n", now_ms() - t0);
	fflush(stdout);
	ret = wc_close(c);
	if (ret)
		return fail(1, "wc_close", ret);
	wc_model_free(m);
	free(buf);
	close(log_fd);
	return 0;
}

/* ---- verify ---- */

static int cmd_verify(const struct opts *o)
{
	struct wc_model *m = model_load(o->model);
	struct wc_origin origin;
	struct wc_config cfg;
	struct wc_stats st;
	char why[2048];
	uint64_t bytes;
	uint8_t *all;
	wc_cache *c;
	int ret;

	if (!m)
		return 2;
	ret = config_of(o, &cfg);
	if (ret)
		return ret;
	/* Recovery, then everything the cache holds goes to the origin. */
	ret = wc_open(&c, o->cache, o->origin, &cfg);
	if (ret)
		return fail(ret == -ENOTSUP ? 3 : 1, "wc_open (recovery)", ret);
	ret = wc_writeback(c);
	if (ret)
		return fail(1, "wc_writeback", ret);
	wc_get_stats(c, &st);
	if (st.dirty_blocks)
		fprintf(stderr, "origin-model: %" PRIu64 " dirty blocks after wc_writeback\n", st.dirty_blocks);
	ret = wc_close(c);
	if (ret)
		return fail(1, "wc_close", ret);

	/* The origin alone, the cache closed. */
	bytes = wc_model_blocks(m) * wc_model_block_size(m);
	if (posix_memalign((void **)&all, 4096, bytes))
		return fail(2, "memory for the working set", -ENOMEM);
	ret = open_origin(o->origin, &origin);
	if (ret)
		return ret;
	for (uint64_t off = 0; off < bytes && !ret; off += READ_CHUNK)
		ret = wc_origin_rw_sync(&origin, WC_ORIGIN_READ, all + off,
		                        bytes - off < READ_CHUNK ? bytes - off : READ_CHUNK, off);
	wc_origin_close(&origin);
	if (ret)
		return fail(1, "reading the origin", ret);
	if (!wc_model_check(m, wc_model_window(m), all, why, sizeof(why))) {
		printf("FAIL: the origin does not match the model (calls acknowledged %" PRIu64
		       ", started %" PRIu64 "): %s\n", wc_model_window(m).lo, wc_model_window(m).hi, why);
		return 1;
	}
	printf("ok: %" PRIu64 " blocks on the origin match the model (calls acknowledged %" PRIu64
	       ", started %" PRIu64 ")\n", wc_model_blocks(m), wc_model_window(m).lo,
	       wc_model_window(m).hi);
	free(all);
	wc_model_free(m);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;

	if (parse_args(argc, argv, &o))
		return 2;
	/* The cache runs the real flush code on /dev/shm files. */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	if (!strcmp(o.cmd, "init"))
		return cmd_init(&o);
	if (!strcmp(o.cmd, "write"))
		return cmd_write(&o);
	if (!strcmp(o.cmd, "verify"))
		return cmd_verify(&o);
	usage();
	return 2;
}
