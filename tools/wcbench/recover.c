/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recover.c -- `wcbench recover`: how long wc_open takes to recover a full
 * cache (the target: < 1 s for 1,000,000 blocks, docs/performance.md).
 *
 * Method: format a cache of exactly --blocks blocks, write every block once
 * through the API (each write a new origin block, so every entry ends up
 * committed and current, spread over ~blocks/64 commits), flush, close; then
 * --runs times: wc_open (timed), check that every block came back and that a
 * sample reads its own content, wc_close.  Each open maps the file afresh,
 * so its page faults on the entry array are part of the time, as they are
 * for a process that restarts.  The cache runs without its write-back
 * thread (no_threads) and with the high watermark at 100%, so nothing moves
 * between runs and each open recovers the same image.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "wcache.h"
#include "wcbench.h"

#define MAX_RUNS 101
#define SAMPLE_READS 1000

struct recover_bench {
	uint64_t blocks, bs, origin_size;
	unsigned runs;
	const char *cache_path, *origin_path, *options;
	bool force, keep, json, quiet, check;

	bool cache_ours, origin_ours;
	uint64_t cache_size;
	double fill_ns, open_ns[MAX_RUNS], close_ns[MAX_RUNS], open_med, close_med;
	struct wc_stats st;
};


static void usage(FILE *f)
{
	fprintf(f,
	        "usage: wcbench recover [options]\n"
	        "Fill a cache of N blocks (every block dirty and committed), close it, and time\n"
	        "wc_open -- the recovery scan -- median of --runs opens.\n\n"
	        "  --blocks N         cache blocks (default 1000000)\n"
	        "  --bs BYTES         block size (default 512: ~530 MiB of cache for 1M blocks)\n"
	        "  --runs N           timed opens, median reported (default 3)\n"
	        "  --cache PATH       cache file (default /dev/shm/wcbench-recover.pmem)\n"
	        "  --origin PATH      origin file (default /dev/shm/wcbench-recover.origin)\n"
	        "  --origin-size B    (default: blocks x bs, sparse)\n"
	        "  --options STR      more cache options (wc_config_parse)\n"
	        "  --force            overwrite existing files\n"
	        "  --keep             keep the files afterwards\n"
	        "  --check            exit 1 unless the median open takes < 1 s\n"
	        "  --json             machine-readable output on stdout\n"
	        "  --quiet            no progress on stderr\n"
	        "  --help\n");
}

static int parse_args(struct recover_bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "blocks", required_argument, NULL, 'n' },
		{ "bs", required_argument, NULL, 'b' },
		{ "runs", required_argument, NULL, 'r' },
		{ "cache", required_argument, NULL, 'c' },
		{ "origin", required_argument, NULL, 'g' },
		{ "origin-size", required_argument, NULL, 'G' },
		{ "options", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "keep", no_argument, NULL, 'k' },
		{ "check", no_argument, NULL, 'K' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	b->blocks = 1000000;
	b->bs = 512;
	b->runs = 3;
	b->cache_path = "/dev/shm/wcbench-recover.pmem";
	b->origin_path = "/dev/shm/wcbench-recover.origin";
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
		case 'r': {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || *optarg == '-' || v < 1 ||
			    v > (c == 'r' ? MAX_RUNS : 1ull << 32)) {
				fprintf(stderr, "wcbench recover: --%s %s: out of range\n",
				        c == 'r' ? "runs" : "blocks", optarg);
				return 2;
			}
			if (c == 'r')
				b->runs = (unsigned)v;
			else
				b->blocks = v;
			break;
		}
		case 'b':
		case 'G':
			if (wcb_parse_size(optarg, c == 'b' ? &b->bs : &b->origin_size) != 0) {
				fprintf(stderr, "wcbench recover: %s: not a size\n", optarg);
				return 2;
			}
			break;
		case 'c': b->cache_path = optarg; break;
		case 'g': b->origin_path = optarg; break;
		case 'o': b->options = optarg; break;
		case 'f': b->force = true; break;
		case 'k': b->keep = true; break;
		case 'K': b->check = true; break;
		case 'j': b->json = true; break;
		case 'q': b->quiet = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "wcbench recover: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (b->bs < WC_MIN_BLOCK || b->bs > WC_MAX_BLOCK || (b->bs & (b->bs - 1))) {
		fprintf(stderr, "wcbench recover: --bs %llu: a power of two in %u..%u\n",
		        (unsigned long long)b->bs, WC_MIN_BLOCK, WC_MAX_BLOCK);
		return 2;
	}
	if (!b->origin_size)
		b->origin_size = b->blocks * b->bs;
	if (b->origin_size < b->blocks * b->bs || b->origin_size % b->bs) {
		fprintf(stderr, "wcbench recover: --origin-size must be a multiple of --bs holding "
		        "at least --blocks blocks\n");
		return 2;
	}
	return 0;
}

/* Create a regular file of `size` bytes (sparse) that we remove afterwards. */
static int make_file(struct recover_bench *b, const char *path, uint64_t size, bool *ours,
                     unsigned slot)
{
	struct stat st;
	int fd;

	*ours = false;
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			fprintf(stderr, "wcbench recover: %s is not a regular file\n", path);
			return -1;
		}
		if (!b->force) {
			fprintf(stderr, "wcbench recover: %s exists; pass --force to overwrite it\n",
			        path);
			return -1;
		}
		unlink(path);
	}
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		fprintf(stderr, "wcbench recover: create %s: %s\n", path, strerror(errno));
		return -1;
	}
	*ours = true;
	wcb_scratch_add(path);
	if (ftruncate(fd, (off_t)size) != 0) {
		fprintf(stderr, "wcbench recover: size %s to %llu: %s\n", path,
		        (unsigned long long)size, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int config(const struct recover_bench *b, struct wc_config *cfg)
{
	wc_config_init(cfg);
	if (b->options && wc_config_parse(cfg, b->options) != 0) {
		fprintf(stderr, "wcbench recover: --options: %s\n", wc_errmsg());
		return -1;
	}
	cfg->block_size = (uint32_t)b->bs;
	cfg->no_threads = true;
	cfg->high_watermark = 100;
	cfg->low_watermark = 100;
	cfg->cache_size = b->cache_size;
	return 0;
}

/* Every block carries its own block number, so a recovered block that
 * points at the wrong data is caught by the sample reads. */
static void stamp(char *buf, uint64_t first, uint64_t n, uint64_t bs)
{
	for (uint64_t i = 0; i < n; i++)
		memcpy(buf + i * bs, &(uint64_t){ (first + i) ^ 0x5743424e43484b31ull }, 8);
}

static int fill(struct recover_bench *b)
{
	uint64_t per = (1u << 20) / b->bs, done = 0;
	struct wc_config cfg;
	wc_cache *c;
	char *buf;
	double t0;
	int ret;

	if (config(b, &cfg))
		return -1;
	ret = wc_create(&c, b->cache_path, b->origin_path, &cfg);
	if (ret) {
		fprintf(stderr, "wcbench recover: wc_create: %s\n", wc_errmsg());
		return -1;
	}
	buf = aligned_alloc(4096, per * b->bs);
	if (!buf) {
		wc_close(c);
		return -1;
	}
	memset(buf, 0xa5, per * b->bs);
	t0 = wcb_now_ns();
	while (done < b->blocks) {
		uint64_t n = b->blocks - done < per ? b->blocks - done : per;
		ssize_t r;

		stamp(buf, done, n, b->bs);
		r = wc_write(c, buf, n * b->bs, done * b->bs, 0);
		if (r < 0) {
			fprintf(stderr, "wcbench recover: fill, block %llu: %s\n",
			        (unsigned long long)done, wc_errmsg());
			break;
		}
		done += n;
		if (!b->quiet && wcb_now_ns() - t0 > 2e9 && done % (per * 64) == 0)
			wcb_progress("wcbench recover: filled %llu of %llu blocks",
			             (unsigned long long)done, (unsigned long long)b->blocks);
	}
	if (!b->quiet)
		wcb_progress_done();
	free(buf);
	ret = done == b->blocks ? wc_flush(c) : -1;
	if (done == b->blocks && ret)
		fprintf(stderr, "wcbench recover: flush after fill: %s\n", wc_errmsg());
	b->fill_ns = wcb_now_ns() - t0;
	if (!ret && wc_get_stats(c, &b->st) == 0 &&
	    (b->st.blocks != b->blocks || b->st.dirty_blocks != b->blocks)) {
		fprintf(stderr, "wcbench recover: after the fill the cache has %llu blocks, %llu "
		        "dirty; expected %llu of both\n", (unsigned long long)b->st.blocks,
		        (unsigned long long)b->st.dirty_blocks, (unsigned long long)b->blocks);
		ret = -1;
	}
	if (wc_close(c) != 0) {
		fprintf(stderr, "wcbench recover: close after fill: %s\n", wc_errmsg());
		ret = -1;
	}
	return ret ? -1 : 0;
}

/* After an open: every block is back, and a sample of blocks reads its
 * own stamp. */
static int verify(const struct recover_bench *b, wc_cache *c)
{
	struct wc_stats st;
	uint64_t rng = 0x2545F4914F6CDD1Dull;
	char *buf = aligned_alloc(4096, b->bs > 4096 ? b->bs : 4096);
	int ret = 0;

	if (!buf)
		return -1;
	if (wc_get_stats(c, &st) != 0 || st.dirty_blocks != b->blocks) {
		fprintf(stderr, "wcbench recover: recovered %llu dirty blocks, expected %llu\n",
		        (unsigned long long)st.dirty_blocks, (unsigned long long)b->blocks);
		ret = -1;
	}
	for (unsigned i = 0; i < SAMPLE_READS && !ret; i++) {
		uint64_t blk, want;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		blk = rng % b->blocks;
		want = blk ^ 0x5743424e43484b31ull;
		if (wc_read(c, buf, b->bs, blk * b->bs) < 0) {
			fprintf(stderr, "wcbench recover: read block %llu: %s\n",
			        (unsigned long long)blk, wc_errmsg());
			ret = -1;
		} else if (memcmp(buf, &want, 8) != 0) {
			fprintf(stderr, "wcbench recover: block %llu reads another block's data\n",
			        (unsigned long long)blk);
			ret = -1;
		}
	}
	free(buf);
	return ret;
}

static int measure(struct recover_bench *b)
{
	struct wc_config cfg;

	if (config(b, &cfg))
		return -1;
	cfg.block_size = 0; /* take the superblock's, as a restarting host would */
	cfg.cache_size = 0;
	for (unsigned r = 0; r < b->runs; r++) {
		wc_cache *c;
		double t0 = wcb_now_ns(), t1;
		int ret = wc_open(&c, b->cache_path, b->origin_path, &cfg);

		t1 = wcb_now_ns();
		if (ret) {
			fprintf(stderr, "wcbench recover: wc_open: %s\n", wc_errmsg());
			return -1;
		}
		b->open_ns[r] = t1 - t0;
		if (verify(b, c) != 0) {
			wc_close(c);
			return -1;
		}
		t0 = wcb_now_ns();
		ret = wc_close(c);
		b->close_ns[r] = wcb_now_ns() - t0;
		if (ret) {
			fprintf(stderr, "wcbench recover: wc_close: %s\n", wc_errmsg());
			return -1;
		}
		if (!b->quiet && b->runs > 1)
			wcb_progress("wcbench recover: open %u of %u: %.1f ms", r + 1, b->runs,
			             b->open_ns[r] / 1e6);
	}
	if (!b->quiet)
		wcb_progress_done();
	{
		double tmp[MAX_RUNS];

		memcpy(tmp, b->open_ns, b->runs * sizeof(double));
		b->open_med = wcb_median(tmp, b->runs);
		memcpy(tmp, b->close_ns, b->runs * sizeof(double));
		b->close_med = wcb_median(tmp, b->runs);
	}
	return 0;
}

static void report(const struct recover_bench *b)
{
	char s1[32], s2[32];
	bool met = b->open_med < 1e9;

	if (b->json) {
		printf("{\n  \"tool\": \"wcbench recover\",\n  \"blocks\": %llu,\n  \"block_size\": %llu,\n"
		       "  \"cache_bytes\": %llu,\n  \"fill_s\": %.3f,\n  \"runs\": %u,\n  \"open_ms\": [",
		       (unsigned long long)b->blocks, (unsigned long long)b->bs,
		       (unsigned long long)b->cache_size, b->fill_ns / 1e9, b->runs);
		for (unsigned r = 0; r < b->runs; r++)
			printf("%s%.3f", r ? ", " : "", b->open_ns[r] / 1e6);
		printf("],\n  \"open_ms_median\": %.3f,\n  \"close_ms_median\": %.3f,\n"
		       "  \"blocks_per_s\": %.0f,\n  \"dram_bytes\": %llu,\n  \"goal_met\": %s\n}\n",
		       b->open_med / 1e6, b->close_med / 1e6, (double)b->blocks * 1e9 / b->open_med,
		       (unsigned long long)b->st.dram_bytes, met ? "true" : "false");
		return;
	}
	printf("wcbench recover: %llu blocks of %llu B, cache file %s (%s), origin %s\n",
	       (unsigned long long)b->blocks, (unsigned long long)b->bs, b->cache_path,
	       wcb_size_str(s1, sizeof(s1), b->cache_size), b->origin_path);
	printf("fill: %.2f s (%.0f blocks/s through wc_write, then wc_flush); DRAM metadata %s\n",
	       b->fill_ns / 1e9, (double)b->blocks * 1e9 / b->fill_ns,
	       wcb_size_str(s2, sizeof(s2), b->st.dram_bytes));
	printf("wc_open (recovery), %u run%s:", b->runs, b->runs > 1 ? "s" : "");
	for (unsigned r = 0; r < b->runs; r++)
		printf(" %.1f ms", b->open_ns[r] / 1e6);
	printf("\nmedian %.1f ms = %.2f M blocks/s; wc_close median %.1f ms; every block back, "
	       "%u sampled reads match\n", b->open_med / 1e6,
	       (double)b->blocks * 1e3 / b->open_med, b->close_med / 1e6, SAMPLE_READS);
	printf("target: recovery of %llu blocks < 1 s: %s\n", (unsigned long long)b->blocks,
	       met ? "met" : "NOT met");
}

int wcbench_recover(int argc, char **argv)
{
	struct recover_bench b;
	struct wc_layout l;
	int status = 1, ret;

	memset(&b, 0, sizeof(b));
	ret = parse_args(&b, argc, argv);
	if (ret)
		return ret;
	if (!getenv("PMEM2_FORCE_GRANULARITY"))
		setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
	if (wc_layout_for_blocks(&l, b.blocks, (uint32_t)b.bs) != 0) {
		fprintf(stderr, "wcbench recover: %s\n", wc_errmsg());
		return 2;
	}
	b.cache_size = l.bytes_used;
	/* wc_create makes the cache file (cache_size); we only claim the path. */
	if (make_file(&b, b.origin_path, b.origin_size, &b.origin_ours, 0) ||
	    make_file(&b, b.cache_path, 0, &b.cache_ours, 1))
		goto out;
	if (fill(&b) || measure(&b))
		goto out;
	report(&b);
	status = b.check && b.open_med >= 1e9 ? 1 : 0;
out:
	wcb_scratch_release(b.keep);
	return status;
}
