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
 *
 * On the block medium (--cache on a disk file system, or medium=block) the
 * cache file is sized for the blocks plus the log's overhead (a record
 * header per write of up to 58 blocks, a summary and the unused tail of
 * each segment), the blocks default to 4 KiB, and the report adds the
 * library's own recovery time (wc_stats.recovery_us: the scan of the
 * segment summaries and the rebuilt index, without opening the files or
 * writing the state afterwards).  Target there: < 2 s for 1,000,000 blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wcache.h"
#include "wcadmin.h"
#include "wcbench.h"

#define MAX_RUNS 101
#define SAMPLE_READS 1000

struct recover_bench {
	uint64_t blocks, bs, origin_size;
	unsigned runs;
	const char *cache_path, *origin_path, *options;
	bool force, keep, json, quiet, check;

	bool cache_ours, origin_ours, block, bs_given;
	uint64_t cache_size;
	double fill_ns, open_ns[MAX_RUNS], close_ns[MAX_RUNS], open_med, close_med;
	double recovery_us[MAX_RUNS], recovery_med, target_s;
	struct wc_stats opened;   /* of the last open, with its medium strings copied */
	char medium[16], medium_reason[200];
	struct wc_stats st;
};


static void usage(FILE *f)
{
	fprintf(f,
	        "usage: wcbench recover [options]\n"
	        "Fill a cache of N blocks (every block dirty and committed), close it, and time\n"
	        "wc_open -- the recovery scan -- median of --runs opens.\n\n"
	        "  --blocks N         cache blocks (default 1000000)\n"
	        "  --bs BYTES         block size (default 512: ~530 MiB of cache for 1M blocks;\n"
	        "                     4096 on the block medium: ~4.8 GiB)\n"
	        "  --runs N           timed opens, median reported (default 3)\n"
	        "  --cache PATH       cache file (default /dev/shm/wcbench-recover.pmem)\n"
	        "  --origin PATH      origin file (default /dev/shm/wcbench-recover.origin)\n"
	        "  --origin-size B    (default: blocks x bs, sparse)\n"
	        "  --options STR      more cache options (wc_config_parse)\n"
	        "  --force            overwrite existing files\n"
	        "  --keep             keep the files afterwards\n"
	        "  --check            exit 1 unless the median open takes < 1 s (block medium:\n"
	        "                     < 2 s)\n"
	        "On a disk file system (e.g. --cache /var/tmp/wc.img) the cache takes the block\n"
	        "medium; check the free space first (df): 1M blocks of 4 KiB need ~4.8 GiB.\n"
	        "  --json             machine-readable output on stdout\n"
	        "  --quiet            no progress on stderr\n"
	        "  --help\n\n"
	        WCT_SIZE_HELP WCT_PMEM_EMULATE_HELP);
}

static int parse_args(struct recover_bench *b, int argc, char **argv)
{
	const struct wct_opt opts[] = {
		WCT_OPT("blocks", WCT_U64, &b->blocks, 1, 1ull << 32),
		{ .name = "bs", .kind = WCT_SIZE, .dst = &b->bs, .max = UINT64_MAX,
		  .given = &b->bs_given },
		WCT_OPT("runs", WCT_UINT, &b->runs, 1, MAX_RUNS),
		WCT_OPT_STR("cache", &b->cache_path),
		WCT_OPT_STR("origin", &b->origin_path),
		WCT_OPT("origin-size", WCT_SIZE, &b->origin_size, 0, UINT64_MAX),
		WCT_OPT_STR("options", &b->options),
		WCT_OPT_FLAG("force", &b->force),
		WCT_OPT_FLAG("keep", &b->keep),
		WCT_OPT_FLAG("check", &b->check),
		WCT_OPT_FLAG("json", &b->json),
		WCT_OPT_FLAG("quiet", &b->quiet),
		WCT_OPT_END,
	};
	int ret;

	b->blocks = 1000000;
	b->bs = 512;
	b->runs = 3;
	b->cache_path = "/dev/shm/wcbench-recover.pmem";
	b->origin_path = "/dev/shm/wcbench-recover.origin";
	ret = wct_opts_parse("wcbench recover", opts, argc, argv, usage, false);
	if (ret)
		return ret;
	{
		struct wc_config cfg;

		wc_config_init(&cfg);
		if (b->options && wc_config_parse(&cfg, b->options) != 0) {
			fprintf(stderr, "wcbench recover: --options: %s\n", wc_errmsg());
			return 2;
		}
		b->block = cfg.medium == WC_MEDIUM_BLOCK ||
		           (cfg.medium == WC_MEDIUM_AUTO && !wcb_path_in_memory(b->cache_path));
	}
	if (b->block && !b->bs_given)
		b->bs = 4096;
	b->target_s = b->block ? 2.0 : 1.0;
	if (b->bs < WCADM_MIN_BLOCK || b->bs > WCADM_MAX_BLOCK || (b->bs & (b->bs - 1))) {
		fprintf(stderr, "wcbench recover: --bs %llu: a power of two in %u..%u\n",
		        (unsigned long long)b->bs, WCADM_MIN_BLOCK, WCADM_MAX_BLOCK);
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

/* A regular file of `size` bytes (sparse) that we remove afterwards. */
static int make_file(struct recover_bench *b, const char *path, uint64_t size, bool *ours)
{
	int fd;

	if (wct_scratch_claim("wcbench recover", path, b->force, false, ours))
		return -1;
	fd = wct_scratch_create("wcbench recover", path, size);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/*
 * A block-medium cache file that holds `blocks` blocks written 1 MiB at a
 * time and still has the free segments write-back keeps in reserve (an
 * eighth of the ring: below that it writes back, even at a 100% high
 * watermark), so nothing is ever written back and every block stays dirty:
 * the data, a header of at most 4 KiB per record of up to 58 blocks (~1.7%
 * at 4 KiB), each segment's summary and unused tail (~2%), 4 segments of
 * 16 MiB to spare, all of it 8/7 for the reserve.
 */
static uint64_t block_cache_bytes(uint64_t blocks, uint64_t bs)
{
	uint64_t data = blocks * bs, used = data + data / 12 + 4 * (16ull << 20);

	return (used / 7 * 8 + 65536 + 65535) / 65536 * 65536;
}

/*
 * no_threads: the host drives the background work with wc_poll_timeout().  On the
 * block medium that work includes each closed segment's summary; a segment
 * left without one is read whole by the next recovery (16 MiB instead of
 * ~100 KiB).  wc_close writes at most 64 of them, so a fill of hundreds of
 * segments polls until idle, as a host using no_threads must.  With the
 * high watermark at 100% this writes nothing back.
 */
static int settle(wc_cache *c)
{
	int r;

	/* Until a poll that may wait 10 ms for completions finds nothing to
	 * do: the origin here is a local file. */
	while ((r = wc_poll_timeout(c, 1024, 10)) > 0)
		;
	if (r < 0)
		fprintf(stderr, "wcbench recover: wc_poll_timeout: %s\n", wc_errmsg());
	return r < 0 ? -1 : 0;
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
	t0 = wct_now_ns();
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
		if (!b->quiet && wct_now_ns() - t0 > 2e9 && done % (per * 64) == 0)
			wct_progress("wcbench recover: filled %llu of %llu blocks",
			             (unsigned long long)done, (unsigned long long)b->blocks);
	}
	if (!b->quiet)
		wct_progress_done();
	free(buf);
	ret = done == b->blocks ? wc_flush(c) : -1;
	if (!ret && b->block)
		ret = settle(c);
	if (done == b->blocks && ret)
		fprintf(stderr, "wcbench recover: flush after fill: %s\n", wc_errmsg());
	b->fill_ns = wct_now_ns() - t0;
	if (!ret && wc_get_stats(c, &b->st) == 0 &&
	    ((b->block ? b->st.blocks < b->blocks : b->st.blocks != b->blocks) ||
	     b->st.dirty_blocks != b->blocks)) {
		/* The block medium's ring holds more versions than the blocks
		 * asked: its size covers the log's overhead. */
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
		double t0 = wct_now_ns(), t1;
		int ret = wc_open(&c, b->cache_path, b->origin_path, &cfg);

		t1 = wct_now_ns();
		if (ret) {
			fprintf(stderr, "wcbench recover: wc_open: %s\n", wc_errmsg());
			return -1;
		}
		b->open_ns[r] = t1 - t0;
		if (wc_get_stats(c, &b->opened) == 0) {
			b->recovery_us[r] = (double)b->opened.recovery_us;
			snprintf(b->medium, sizeof(b->medium), "%s",
			         b->opened.medium ? b->opened.medium : "?");
			snprintf(b->medium_reason, sizeof(b->medium_reason), "%s",
			         b->opened.medium_reason ? b->opened.medium_reason : "");
			b->opened.medium = b->opened.medium_reason = NULL;
			b->opened.origin_identity = NULL;
		}
		if (verify(b, c) != 0) {
			wc_close(c);
			return -1;
		}
		t0 = wct_now_ns();
		ret = wc_close(c);
		b->close_ns[r] = wct_now_ns() - t0;
		if (ret) {
			fprintf(stderr, "wcbench recover: wc_close: %s\n", wc_errmsg());
			return -1;
		}
		if (!b->quiet && b->runs > 1)
			wct_progress("wcbench recover: open %u of %u: %.1f ms", r + 1, b->runs,
			             b->open_ns[r] / 1e6);
	}
	if (!b->quiet)
		wct_progress_done();
	{
		double tmp[MAX_RUNS];

		memcpy(tmp, b->open_ns, b->runs * sizeof(double));
		b->open_med = wcb_median(tmp, b->runs);
		memcpy(tmp, b->close_ns, b->runs * sizeof(double));
		b->close_med = wcb_median(tmp, b->runs);
		memcpy(tmp, b->recovery_us, b->runs * sizeof(double));
		b->recovery_med = wcb_median(tmp, b->runs);
	}
	return 0;
}

static void report(const struct recover_bench *b)
{
	char s1[32], s2[32];
	bool met = b->open_med < b->target_s * 1e9;

	if (b->json) {
		struct wct_json j;

		wcb_json_head(&j, "wcbench recover");
		wct_json_u64(&j, "blocks", b->blocks);
		wct_json_u64(&j, "block_size", b->bs);
		wct_json_u64(&j, "cache_bytes", b->cache_size);
		wct_json_str(&j, "medium", b->medium);
		wct_json_str(&j, "medium_reason", b->medium_reason);
		wct_json_num(&j, "fill_s", "%.3f", b->fill_ns / 1e9);
		wct_json_u64(&j, "runs", b->runs);
		wct_json_array(&j, "open_ms", false);
		for (unsigned r = 0; r < b->runs; r++)
			wct_json_num(&j, NULL, "%.3f", b->open_ns[r] / 1e6);
		wct_json_end(&j);
		wct_json_num(&j, "open_ms_median", "%.3f", b->open_med / 1e6);
		wct_json_num(&j, "close_ms_median", "%.3f", b->close_med / 1e6);
		if (b->block) {
			wct_json_array(&j, "recovery_ms", false);
			for (unsigned r = 0; r < b->runs; r++)
				wct_json_num(&j, NULL, "%.3f", b->recovery_us[r] / 1e3);
			wct_json_end(&j);
			wct_json_num(&j, "recovery_ms_median", "%.3f", b->recovery_med / 1e3);
		}
		wct_json_num(&j, "target_s", "%g", b->target_s);
		wct_json_num(&j, "blocks_per_s", "%.0f", (double)b->blocks * 1e9 / b->open_med);
		wct_json_u64(&j, "dram_bytes", b->st.dram_bytes);
		wct_json_bool(&j, "goal_met", met);
		wct_json_end(&j);
		return;
	}
	printf("wcbench recover: %llu blocks of %llu B, cache file %s (%s), origin %s\n",
	       (unsigned long long)b->blocks, (unsigned long long)b->bs, b->cache_path,
	       wct_size_str(s1, sizeof(s1), b->cache_size), b->origin_path);
	printf("medium: %s (%s)\n", b->medium, b->medium_reason);
	printf("fill: %.2f s (%.0f blocks/s through wc_write, then wc_flush); DRAM metadata %s\n",
	       b->fill_ns / 1e9, (double)b->blocks * 1e9 / b->fill_ns,
	       wct_size_str(s2, sizeof(s2), b->st.dram_bytes));
	printf("wc_open (recovery), %u run%s:", b->runs, b->runs > 1 ? "s" : "");
	for (unsigned r = 0; r < b->runs; r++)
		printf(" %.1f ms", b->open_ns[r] / 1e6);
	printf("\nmedian %.1f ms = %.2f M blocks/s; wc_close median %.1f ms; every block back, "
	       "%u sampled reads match\n", b->open_med / 1e6,
	       (double)b->blocks * 1e3 / b->open_med, b->close_med / 1e6, SAMPLE_READS);
	if (b->block) {
		printf("recovery inside wc_open (wc_stats.recovery_us: the summaries' scan and the "
		       "index):");
		for (unsigned r = 0; r < b->runs; r++)
			printf(" %.1f ms", b->recovery_us[r] / 1e3);
		printf(", median %.1f ms\n", b->recovery_med / 1e3);
	}
	printf("target: recovery (wc_open) of %llu blocks < %g s: %s\n", (unsigned long long)b->blocks,
	       b->target_s, met ? "met" : "NOT met");
}

int wcbench_recover(int argc, char **argv)
{
	struct recover_bench b;
	int status = 1, ret;

	memset(&b, 0, sizeof(b));
	ret = parse_args(&b, argc, argv);
	if (ret)
		return ret;
	wcb_pmem_emulate_for(b.cache_path, b.options);
	if (b.block) {
		b.cache_size = block_cache_bytes(b.blocks, b.bs);
	} else if (wcadm_layout_bytes(b.blocks, (uint32_t)b.bs, &b.cache_size) != 0) {
		fprintf(stderr, "wcbench recover: %s\n", wc_errmsg());
		return 2;
	}
	/* wc_create makes the cache file (cache_size); we only claim the path. */
	if (make_file(&b, b.origin_path, b.origin_size, &b.origin_ours) ||
	    make_file(&b, b.cache_path, 0, &b.cache_ours))
		goto out;
	if (fill(&b) || measure(&b))
		goto out;
	report(&b);
	status = b.check && b.open_med >= b.target_s * 1e9 ? 1 : 0;
out:
	wct_scratch_release(b.keep);
	return status;
}
