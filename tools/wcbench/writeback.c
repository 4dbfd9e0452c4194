/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * writeback.c -- `wcbench writeback`: how fast the cache moves data to its
 * origin, against the origin's raw bandwidth measured in the same run, and
 * what write-back costs foreground writes.
 *
 * Bandwidth, per pattern (sequential, random) and run:
 *   raw     the raw libaio loop (rawaio.h) writes the working set to the
 *           origin in the same pattern: block-size writes, as many in
 *           flight as write-back may have (writeback_jobs), one fdatasync
 *           at the end;
 *   fill    a fresh cache, smaller than the working set, takes the same
 *           block-size writes: once it is full, every write waits for
 *           write-back, so this phase already runs at write-back speed;
 *   drain   wc_writeback() empties what is left.
 * Reported: drain bandwidth (bytes written back while draining / drain
 * time), total (working set / (fill + drain)), and each / raw.  The order
 * of raw and cache alternates between runs; medians over --runs.
 *
 * Latency: 4 KiB-block writes into free blocks of a cache 70% full of
 * committed blocks, once with no write-back (high watermark 100) and once
 * while another thread runs wc_writeback() over the 70%: p50/p99 of each and
 * the p99 ratio (the target is <= 2x, docs/performance.md).
 *
 * The origin file is created and filled with zeros first, so neither side
 * pays first-write costs (block allocation, unwritten extents).  --origin
 * may also be anything wc_origin_open takes (an NBD URI): then it must
 * exist, at least --working-set long, the raw baseline is the same loop
 * through the origin's backend (raworigin.c), and the check afterwards
 * reads through it too.
 *
 * --flush-delay-us N wraps the origin so that every flush (fdatasync) takes N
 * us longer: a disk whose volatile write cache costs that much to flush (an
 * HDD: ~5-20 ms), which this machine's virtio disk (~0.1 ms) and tmpfs do not
 * show.  The raw loop pays it once, for its one fdatasync.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "histogram.h"
#include "rawaio.h"
#include "wcache.h"
#include "wcadmin.h"
#include "wcbench.h"

#define WB_MAX_RUNS 51
/* The body of every block the cache is given; rawaio writes 0x5a, so the
 * check after write-back cannot pass on what the baseline left behind. */
#define WB_FILL 0xa5
#define WB_VERIFY_SAMPLES 4096
#define WB_LAT_FILL_PCT 70    /* cache use before the latency phases */
#define WB_LAT_WRITE_PCT 10   /* foreground writes, % of the cache's blocks */

enum pattern { PAT_SEQ, PAT_RAND, NPATTERNS };
static const char *const pattern_name[NPATTERNS] = { "seq", "rand" };

struct opts {
	const char *cache_path, *origin_path, *config;
	uint64_t cache_size, working_set;
	uint32_t block_size;
	unsigned runs, raw_qd, flush_delay_us;
	uint64_t raw_io, raw_flush_every;
	bool patterns[NPATTERNS];
	bool json, keep, quiet, no_latency;
};

struct sample {
	double raw_mbps, drain_mbps, total_mbps, fill_s, drain_s;
	double rawfl_mbps;             /* --raw-flush-every: the raw loop flushing */
	double raw_cpu_s, drain_cpu_s; /* process CPU time (all threads) */
	uint64_t drain_bytes, wb_bytes, wb_ios, blocked;
};

struct result {
	struct sample s[WB_MAX_RUNS];
	double raw, drain, total, drain_ratio, total_ratio; /* medians */
	double rawfl, drain_rawfl_ratio;                    /* with --raw-flush-every */
	double raw_cpu, drain_cpu;                          /* medians, CPU us per MiB */
	uint64_t wb_ios, wb_bytes;                           /* last run */
};

struct latency {
	struct wcb_hist idle, busy;
	double overlap;      /* share of busy-phase writes done while the drain ran */
	double drain_mbps;   /* of the drain that ran under them */
};

struct bench {
	struct opts o;
	struct wc_config cfg;
	uint64_t nblocks;         /* of the working set */
	uint64_t *order;          /* random permutation of the working set */
	uint8_t *buf;
	bool made_cache, made_origin, forced_gran;
	bool local;               /* the origin is a path (libaio), not a URI */
	char origin_mode[256];
	uint64_t cache_blocks;
	struct result res[NPATTERNS];
	struct latency lat;
};


static void usage(FILE *f)
{
	fprintf(f,
	        "usage: wcbench writeback [options]\n"
	        "Write-back bandwidth: write a working set larger than the cache, drain it\n"
	        "with wc_writeback(), and divide by the origin's raw libaio bandwidth for the\n"
	        "same pattern, measured in the same run.  Then foreground write latency with\n"
	        "write-back running vs an idle cache.\n\n"
	        "  --cache PATH        cache file; overwritten (default /dev/shm/wcbench-wb.pmem,\n"
	        "                      created and removed)\n"
	        "  --origin ORIGIN     origin file or block device; overwritten (default\n"
	        "                      /dev/shm/wcbench-wb.origin, created and removed). On tmpfs\n"
	        "                      the origin runs buffered + fdatasync; on ext4/xfs O_DIRECT.\n"
	        "                      Or an NBD URI (nbd://HOST[:PORT]/EXPORT,\n"
	        "                      nbd+unix:///EXPORT?socket=PATH): an existing export of at\n"
	        "                      least --working-set bytes, overwritten; the raw baseline is\n"
	        "                      then the same loop through the NBD backend\n"
	        "  --cache-size BYTES  cache file size (default 256M)\n"
	        "  --working-set BYTES bytes written per pattern (default 1G; > cache size)\n"
	        "  --block-size BYTES  cache block size and write size (default 4096)\n"
	        "  --pattern P         seq, rand or both (default both)\n"
	        "  --runs N            runs, medians reported (default 3)\n"
	        "  --options STR       extra wc_config options, e.g. writeback_jobs=512\n"
	        "  --raw-qd N          raw loop: requests in flight (default writeback_jobs)\n"
	        "  --raw-io BYTES      raw loop: request size (default the block size)\n"
	        "  --raw-flush-every BYTES\n"
	        "                      also time the raw loop sending an fdatasync request each\n"
	        "                      time BYTES more were written, while it goes on writing:\n"
	        "                      write-back's cadence (a flush per round of at most 16M,\n"
	        "                      or an eighth of the cache); a second baseline, raw+fl\n"
	        "  --flush-delay-us N  every origin flush takes N us longer (a disk with a\n"
	        "                      volatile write cache); default 0\n"
	        "  --no-latency        skip the latency phases\n"
	        "  --keep              keep the files we created\n"
	        "  --json              machine-readable output on stdout\n"
	        "  --quiet             no progress on stderr\n"
	        "  --help\n\n"
	        WCT_SIZE_HELP WCT_PMEM_EMULATE_HELP);
}

static int parse_args(struct bench *b, int argc, char **argv)
{
	static const char *const patterns[] = { "seq", "rand", "both", NULL };
	struct opts *o = &b->o;
	uint64_t block_size = 4096;
	unsigned pattern = 2;
	const struct wct_opt opts[] = {
		WCT_OPT_STR("cache", &o->cache_path),
		WCT_OPT_STR("origin", &o->origin_path),
		WCT_OPT("cache-size", WCT_SIZE, &o->cache_size, 1, UINT64_MAX),
		WCT_OPT("working-set", WCT_SIZE, &o->working_set, 1, UINT64_MAX),
		WCT_OPT("block-size", WCT_SIZE, &block_size, 1, 65536),
		WCT_OPT_CHOICE("pattern", &pattern, patterns),
		WCT_OPT("runs", WCT_UINT, &o->runs, 1, WB_MAX_RUNS),
		WCT_OPT_STR("options", &o->config),
		WCT_OPT("raw-qd", WCT_UINT, &o->raw_qd, 1, 65536),
		WCT_OPT("raw-io", WCT_SIZE, &o->raw_io, 1, UINT64_MAX),
		WCT_OPT("raw-flush-every", WCT_SIZE, &o->raw_flush_every, 1, UINT64_MAX),
		WCT_OPT("flush-delay-us", WCT_UINT, &o->flush_delay_us, 0, 1000000),
		WCT_OPT_FLAG("no-latency", &o->no_latency),
		WCT_OPT_FLAG("keep", &o->keep),
		WCT_OPT_FLAG("json", &o->json),
		WCT_OPT_FLAG("quiet", &o->quiet),
		WCT_OPT_END,
	};
	int ret;

	o->cache_path = "/dev/shm/wcbench-wb.pmem";
	o->origin_path = "/dev/shm/wcbench-wb.origin";
	o->cache_size = 256u << 20;
	o->working_set = 1u << 30;
	o->runs = 3;
	ret = wct_opts_parse("wcbench writeback", opts, argc, argv, usage, false);
	if (ret)
		return ret;
	if (block_size & (block_size - 1)) {
		fprintf(stderr, "wcbench writeback: --block-size %llu: a power of two <= 64K\n",
		        (unsigned long long)block_size);
		return 2;
	}
	o->block_size = (uint32_t)block_size;
	o->patterns[PAT_SEQ] = pattern != PAT_RAND;
	o->patterns[PAT_RAND] = pattern != PAT_SEQ;
	if (o->working_set % o->block_size || o->working_set <= o->cache_size) {
		fprintf(stderr, "wcbench writeback: --working-set must be a multiple of the block size "
		        "and larger than --cache-size\n");
		return 2;
	}
	if (o->raw_io && o->working_set % o->raw_io) {
		fprintf(stderr, "wcbench writeback: --working-set is not a multiple of --raw-io\n");
		return 2;
	}
	return 0;
}

/* ------------------------------------------------------------ set-up */

static bool is_regular_or_absent(const char *path)
{
	struct stat st;

	return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

/* A regular-file origin at least working_set long, every byte written once
 * (zeros): first writes into holes or unwritten extents cost the file system
 * extra work that neither the baseline nor the cache should be charged. */
static int prepare_origin(struct bench *b)
{
	const char *path = b->o.origin_path;
	uint64_t have = 0;
	struct stat st;
	void *zeros;
	int fd;

	if (!b->local) {
		struct wc_origin o;
		int ret = wc_origin_open(&o, path);

		if (ret) {
			fprintf(stderr, "wcbench writeback: %s\n", wc_errmsg());
			return -1;
		}
		wcadm_origin_size(&o, &have);
		wcadm_origin_close(&o);
		if (have < b->o.working_set) {
			fprintf(stderr, "wcbench writeback: origin %s has %llu bytes, less than --working-set\n",
			        path, (unsigned long long)have);
			return -1;
		}
		return 0;
	}
	if (!is_regular_or_absent(path))
		return 0; /* a block device: take it as it is */
	b->made_origin = stat(path, &st) != 0;
	if (!b->made_origin)
		have = (uint64_t)st.st_size;
	if (have >= b->o.working_set)
		return 0;
	if (b->made_origin)
		wct_scratch_add(path);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		fprintf(stderr, "wcbench writeback: %s: %s\n", path, strerror(errno));
		return -1;
	}
	zeros = calloc(1, 1u << 20);
	if (!zeros) {
		close(fd);
		return -1;
	}
	if (!b->o.quiet)
		wct_progress("writing the origin %s once (zeros)", path);
	for (uint64_t off = have; off < b->o.working_set;) {
		size_t n = b->o.working_set - off < (1u << 20) ? (size_t)(b->o.working_set - off) : 1u << 20;
		ssize_t w = pwrite(fd, zeros, n, (off_t)off);

		if (w <= 0) {
			fprintf(stderr, "wcbench writeback: %s: write at %llu: %s\n", path,
			        (unsigned long long)off, w < 0 ? strerror(errno) : "no progress");
			free(zeros);
			close(fd);
			return -1;
		}
		off += (uint64_t)w;
	}
	free(zeros);
	if (fdatasync(fd) < 0) {
		fprintf(stderr, "wcbench writeback: %s: fdatasync: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int make_order(struct bench *b)
{
	b->order = wc_rawaio_permutation(b->nblocks, 0x9e3779b97f4a7c15ull);
	return b->order ? 0 : -1;
}

static uint64_t block_at(const struct bench *b, enum pattern p, uint64_t i)
{
	return p == PAT_SEQ ? i : b->order[i];
}

/* ---- an origin whose flush is slower (--flush-delay-us) ---- */

struct slow_flush {
	struct wc_origin inner;
	unsigned delay_us;
};

static int sf_size(void *ctx, uint64_t *bytes)
{
	struct slow_flush *f = ctx;

	return f->inner.ops->size(f->inner.ctx, bytes);
}

static int sf_submit(void *ctx, struct wc_origin_io *io)
{
	struct slow_flush *f = ctx;

	return f->inner.ops->submit(f->inner.ctx, io);
}

static int sf_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	struct slow_flush *f = ctx;

	return f->inner.ops->poll(f->inner.ctx, min_events, timeout_ns);
}

static int sf_flush(void *ctx)
{
	struct slow_flush *f = ctx;

	usleep(f->delay_us);
	return f->inner.ops->flush(f->inner.ctx);
}

static void sf_close(void *ctx)
{
	struct slow_flush *f = ctx;

	f->inner.ops->close(f->inner.ctx);
	free(f);
}

static uint32_t sf_alignment(void *ctx)
{
	struct slow_flush *f = ctx;

	return f->inner.ops->alignment ? f->inner.ops->alignment(f->inner.ctx) : 1;
}

static const char *sf_describe(void *ctx)
{
	struct slow_flush *f = ctx;

	return f->inner.ops->describe ? f->inner.ops->describe(f->inner.ctx) : "custom";
}

static const struct wc_origin_ops slow_flush_ops = {
	.size = sf_size, .submit = sf_submit, .poll = sf_poll, .flush = sf_flush,
	.close = sf_close, .alignment = sf_alignment, .describe = sf_describe,
};

static int create_slow_flush(wc_cache **out, const char *cache_path, const char *origin_path,
                             unsigned delay_us, const struct wc_config *cfg)
{
	struct slow_flush *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return -ENOMEM;
	f->delay_us = delay_us;
	ret = wc_origin_open(&f->inner, origin_path);
	if (ret) {
		free(f);
		return ret;
	}
	ret = wc_create_origin(out, cache_path, (struct wc_origin){ &slow_flush_ops, f }, cfg);
	if (ret)
		sf_close(f); /* on failure the origin is still ours */
	return ret;
}

/* A fresh cache in front of the origin, with `extra` options after ours. */
static int open_cache(struct bench *b, wc_cache **out, const char *extra)
{
	struct wc_config cfg = b->cfg;
	struct wc_stats st;
	int ret;

	if (extra && (ret = wc_config_parse(&cfg, extra)) != 0) {
		fprintf(stderr, "wcbench writeback: options \"%s\": %s\n", extra, wc_errmsg());
		return ret;
	}
	if (is_regular_or_absent(b->o.cache_path)) {
		if (!b->made_cache && access(b->o.cache_path, F_OK) != 0)
			b->made_cache = true;
		if (b->made_cache)
			wct_scratch_add(b->o.cache_path);
		unlink(b->o.cache_path); /* wc_create refuses a valid cache */
	}
	if (b->o.flush_delay_us)
		ret = create_slow_flush(out, b->o.cache_path, b->o.origin_path, b->o.flush_delay_us, &cfg);
	else
		ret = wc_create(out, b->o.cache_path, b->o.origin_path, &cfg);
	if (ret) {
		fprintf(stderr, "wcbench writeback: wc_create: %s\n", wc_errmsg());
		return ret;
	}
	wc_get_stats(*out, &st);
	snprintf(b->origin_mode, sizeof(b->origin_mode), "%s", st.origin_mode ? st.origin_mode : "?");
	b->cache_blocks = st.blocks;
	return 0;
}

/* CPU seconds this process used so far: where the origin is memory
 * (tmpfs), bandwidth is CPU-bound, and CPU per byte is the figure that a
 * busy shared machine does not blur. */
static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int write_block(struct bench *b, wc_cache *c, uint64_t block)
{
	uint64_t off = block * b->o.block_size;
	ssize_t r;

	memcpy(b->buf, &off, sizeof(off)); /* self-identifying, like rawaio's */
	r = wc_write(c, b->buf, b->o.block_size, off, 0);
	if (r != (ssize_t)b->o.block_size) {
		fprintf(stderr, "wcbench writeback: wc_write at %llu: %s\n", (unsigned long long)off,
		        wc_errmsg());
		return -1;
	}
	return 0;
}

/* Sampled check that the origin holds what the cache was given, read
 * through the origin's backend (the cache is closed). */
static int verify_origin(struct bench *b)
{
	uint8_t *rd = aligned_alloc(4096, b->o.block_size < 4096 ? 4096 : b->o.block_size);
	struct wc_origin o;
	uint64_t seed = 12345;
	int ret = rd ? wc_origin_open(&o, b->o.origin_path) : -ENOMEM;

	if (ret) {
		fprintf(stderr, "wcbench writeback: verify %s: %s\n", b->o.origin_path,
		        rd ? wc_errmsg() : "out of memory");
		free(rd);
		return -1;
	}
	for (unsigned i = 0; i < WB_VERIFY_SAMPLES && !ret; i++) {
		uint64_t off = wc_rawaio_xorshift64(&seed) % b->nblocks * b->o.block_size, got;

		if (wcadm_origin_rw_sync(&o, WC_ORIGIN_READ, rd, b->o.block_size, off) != 0) {
			fprintf(stderr, "wcbench writeback: verify: %s\n", wc_errmsg());
			ret = -1;
			break;
		}
		memcpy(&got, rd, sizeof(got));
		if (got != off || rd[b->o.block_size - 1] != WB_FILL)
			ret = -1;
		if (ret)
			fprintf(stderr, "wcbench writeback: origin block at %llu does not hold what the "
			        "cache was given\n", (unsigned long long)off);
	}
	free(rd);
	wcadm_origin_close(&o);
	return ret;
}

/* -------------------------------------------------------- bandwidth */

static int measure_raw(struct bench *b, enum pattern p, struct sample *s)
{
	size_t io = b->o.raw_io ? b->o.raw_io : b->o.block_size;
	unsigned qd = b->o.raw_qd ? b->o.raw_qd : b->cfg.writeback_jobs;
	double cpu0 = cpu_seconds();
	int ret = (b->local ? wc_rawaio_write_bw : wc_raworigin_write_bw)(
		b->o.origin_path, b->o.working_set, io, qd, p == PAT_SEQ, &s->raw_mbps);

	s->raw_cpu_s = cpu_seconds() - cpu0;
	if (!ret && b->o.flush_delay_us) /* its one fdatasync, as slow as the cache's */
		s->raw_mbps = (double)b->o.working_set /
		              ((double)b->o.working_set / (s->raw_mbps * 1e6) + b->o.flush_delay_us / 1e6) / 1e6;
	if (ret)
		fprintf(stderr, "wcbench writeback: raw %s baseline: %s\n", b->local ? "libaio" : "origin",
		        wc_errmsg());
	if (!ret && b->o.raw_flush_every) {
		ret = wc_rawaio_write_bw_flushing(b->o.origin_path, b->o.working_set, io, qd,
		                                  p == PAT_SEQ, b->o.raw_flush_every, &s->rawfl_mbps);
		if (ret)
			fprintf(stderr, "wcbench writeback: raw libaio baseline with flushes: %s\n",
			        wc_errmsg());
	}
	return ret;
}

static int measure_cache(struct bench *b, enum pattern p, struct sample *s)
{
	struct wc_stats st0, st1, st2;
	wc_cache *c;
	double t0, t1, t2, cpu1;
	int ret = open_cache(b, &c, NULL);

	if (ret)
		return ret;
	wc_get_stats(c, &st0);
	t0 = wct_now_ns();
	for (uint64_t i = 0; i < b->nblocks && !ret; i++)
		ret = write_block(b, c, block_at(b, p, i));
	/* Stats first: wc_get_stats waits for a write-back round in progress,
	 * whose bytes must then count where its time does. */
	wc_get_stats(c, &st1);
	t1 = wct_now_ns();
	cpu1 = cpu_seconds();
	if (!ret && (ret = wc_writeback(c)) != 0)
		fprintf(stderr, "wcbench writeback: wc_writeback: %s\n", wc_errmsg());
	t2 = wct_now_ns();
	s->drain_cpu_s = cpu_seconds() - cpu1;
	wc_get_stats(c, &st2);
	if (wc_close(c) && !ret) {
		fprintf(stderr, "wcbench writeback: wc_close: %s\n", wc_errmsg());
		ret = -1;
	}
	if (ret)
		return ret;
	s->fill_s = (t1 - t0) / 1e9;
	s->drain_s = (t2 - t1) / 1e9;
	s->drain_bytes = st2.writeback_bytes - st1.writeback_bytes;
	s->wb_bytes = st2.writeback_bytes - st0.writeback_bytes;
	s->wb_ios = st2.writeback_ios - st0.writeback_ios;
	s->blocked = st2.writes_blocked_on_freelist - st0.writes_blocked_on_freelist;
	s->drain_mbps = s->drain_s > 0 ? (double)s->drain_bytes / s->drain_s / 1e6 : 0;
	s->total_mbps = (double)b->o.working_set / (s->fill_s + s->drain_s) / 1e6;
	if (s->wb_bytes != b->o.working_set) {
		fprintf(stderr, "wcbench writeback: %llu bytes written back, expected %llu\n",
		        (unsigned long long)s->wb_bytes, (unsigned long long)b->o.working_set);
		return -1;
	}
	return verify_origin(b);
}

static double median_of(const struct result *r, unsigned runs, size_t field)
{
	double v[WB_MAX_RUNS];

	for (unsigned i = 0; i < runs; i++)
		v[i] = *(const double *)((const char *)&r->s[i] + field);
	return wcb_median(v, runs);
}

static int run_bandwidth(struct bench *b)
{
	for (unsigned run = 0; run < b->o.runs; run++)
		for (int p = 0; p < NPATTERNS; p++) {
			struct sample *s = &b->res[p].s[run];
			int ret;

			if (!b->o.patterns[p])
				continue;
			if (!b->o.quiet)
				wct_progress("run %u/%u, %s: %s first", run + 1, b->o.runs, pattern_name[p],
				             run % 2 ? "cache" : "raw");
			/* Alternate who goes first: neither inherits a warmer
			 * (or busier) device every time. */
			if (run % 2 == 0)
				ret = measure_raw(b, p, s) ?: measure_cache(b, p, s);
			else
				ret = measure_cache(b, p, s) ?: measure_raw(b, p, s);
			if (ret)
				return -1;
		}
	for (int p = 0; p < NPATTERNS; p++) {
		struct result *r = &b->res[p];
		double dr[WB_MAX_RUNS], tr[WB_MAX_RUNS];

		if (!b->o.patterns[p])
			continue;
		r->raw = median_of(r, b->o.runs, offsetof(struct sample, raw_mbps));
		r->drain = median_of(r, b->o.runs, offsetof(struct sample, drain_mbps));
		r->total = median_of(r, b->o.runs, offsetof(struct sample, total_mbps));
		{
			double rc[WB_MAX_RUNS], dc[WB_MAX_RUNS];

			for (unsigned i = 0; i < b->o.runs; i++) {
				rc[i] = r->s[i].raw_cpu_s * 1e6 / ((double)b->o.working_set / (1 << 20));
				dc[i] = r->s[i].drain_bytes ? r->s[i].drain_cpu_s * 1e6 /
				        ((double)r->s[i].drain_bytes / (1 << 20)) : 0;
			}
			r->raw_cpu = wcb_median(rc, b->o.runs);
			r->drain_cpu = wcb_median(dc, b->o.runs);
		}
		/* Ratios per run (same-run baseline), then their median. */
		for (unsigned i = 0; i < b->o.runs; i++) {
			dr[i] = r->s[i].drain_mbps / r->s[i].raw_mbps;
			tr[i] = r->s[i].total_mbps / r->s[i].raw_mbps;
		}
		r->drain_ratio = wcb_median(dr, b->o.runs);
		if (b->o.raw_flush_every) {
			r->rawfl = median_of(r, b->o.runs, offsetof(struct sample, rawfl_mbps));
			for (unsigned i = 0; i < b->o.runs; i++)
				dr[i] = r->s[i].drain_mbps / r->s[i].rawfl_mbps;
			r->drain_rawfl_ratio = wcb_median(dr, b->o.runs);
		}
		r->total_ratio = wcb_median(tr, b->o.runs);
		r->wb_ios = r->s[b->o.runs - 1].wb_ios;
		r->wb_bytes = r->s[b->o.runs - 1].wb_bytes;
	}
	return 0;
}

/* ---------------------------------------------------------- latency */

struct drain_thread {
	wc_cache *c;
	atomic_bool done;
	int ret;
	double seconds;
	uint64_t bytes;
};

static void *drain_main(void *p)
{
	struct drain_thread *d = p;
	struct wc_stats st0, st1;
	double t0;

	wc_get_stats(d->c, &st0);
	t0 = wct_now_ns();
	d->ret = wc_writeback(d->c);
	wc_get_stats(d->c, &st1);
	d->seconds = (wct_now_ns() - t0) / 1e9;
	d->bytes = st1.writeback_bytes - st0.writeback_bytes;
	atomic_store(&d->done, true);
	return NULL;
}

/* Fill the cache to WB_LAT_FILL_PCT with committed blocks, then time
 * WB_LAT_WRITE_PCT more writes to other blocks, with or without a drain
 * running beside them. */
static int latency_phase(struct bench *b, bool busy, struct wcb_hist *h)
{
	/* high_watermark 100: the background thread never starts write-back,
	 * so in the idle phase nothing runs, and in the busy one only the
	 * drain we start. */
	wc_cache *c;
	uint64_t prefill, writes, seed = 777, done_during = 0;
	struct drain_thread d = { 0 };
	pthread_t t;
	int ret = open_cache(b, &c, "high_watermark=100,low_watermark=100");

	if (ret)
		return ret;
	prefill = b->cache_blocks * WB_LAT_FILL_PCT / 100;
	writes = b->cache_blocks * WB_LAT_WRITE_PCT / 100;
	for (uint64_t i = 0; i < prefill && !ret; i++)
		ret = write_block(b, c, i);
	if (!ret)
		ret = wc_flush(c);
	if (!ret && busy) {
		d.c = c;
		ret = pthread_create(&t, NULL, drain_main, &d);
	}
	for (uint64_t i = 0; i < writes && !ret; i++) {
		/* Random blocks outside the prefilled range: new allocations. */
		uint64_t block = prefill + wc_rawaio_xorshift64(&seed) % (b->nblocks - prefill);
		double t0 = wct_now_ns();

		ret = write_block(b, c, block);
		wcb_hist_add(h, (uint64_t)(wct_now_ns() - t0));
		done_during += busy && !atomic_load(&d.done);
	}
	if (busy) {
		pthread_join(t, NULL);
		if (d.ret && !ret) {
			fprintf(stderr, "wcbench writeback: wc_writeback: %s\n", wc_errmsg());
			ret = d.ret;
		}
		b->lat.overlap = writes ? (double)done_during / (double)writes : 0;
		b->lat.drain_mbps = d.seconds > 0 ? (double)d.bytes / d.seconds / 1e6 : 0;
	}
	if (wc_close(c) && !ret)
		ret = -1;
	return ret;
}

static int run_latency(struct bench *b)
{
	wcb_hist_clear(&b->lat.idle);
	wcb_hist_clear(&b->lat.busy);
	for (unsigned run = 0; run < b->o.runs; run++) {
		if (!b->o.quiet)
			wct_progress("run %u/%u: foreground latency, idle and with write-back", run + 1,
			             b->o.runs);
		if (latency_phase(b, false, &b->lat.idle) || latency_phase(b, true, &b->lat.busy))
			return -1;
	}
	return 0;
}

/* ----------------------------------------------------------- report */

static void print_text(const struct bench *b)
{
	char cs[32], ws[32], bs[32], io[32];
	unsigned qd = b->o.raw_qd ? b->o.raw_qd : b->cfg.writeback_jobs;

	printf("wcbench writeback: cache %s (%s, %llu blocks of %s)%s\n", b->o.cache_path,
	       wct_size_str(cs, sizeof(cs), b->o.cache_size), (unsigned long long)b->cache_blocks,
	       wct_size_str(bs, sizeof(bs), b->o.block_size),
	       b->forced_gran ? ", PMEM2_FORCE_GRANULARITY=CACHE_LINE set by wcbench" : "");
	printf("origin %s (%s), working set %s, %u run(s), medians\n", b->origin_mode,
	       b->o.origin_path, wct_size_str(ws, sizeof(ws), b->o.working_set), b->o.runs);
	if (b->o.flush_delay_us)
		printf("every origin flush made %u us slower (--flush-delay-us)\n", b->o.flush_delay_us);
	printf("write-back: writeback_jobs %u, max I/O %u KiB%s%s; raw: %s, %s writes, QD %u, "
	       "%s at the end\n\n", b->cfg.writeback_jobs, b->cfg.writeback_max_io_kib,
	       b->o.config ? ", options " : "", b->o.config ? b->o.config : "",
	       b->local ? "libaio" : "the origin's backend",
	       wct_size_str(io, sizeof(io), b->o.raw_io ? b->o.raw_io : b->o.block_size), qd,
	       b->local ? "fdatasync" : "a flush");
	printf("%-8s %10s %11s %11s %10s %10s %9s %9s %14s\n", "pattern", "raw MB/s", "drain MB/s",
	       "total MB/s", "drain/raw", "total/raw", "wb I/Os", "avg I/O", "CPU us/MiB r/d");
	for (int p = 0; p < NPATTERNS; p++) {
		const struct result *r = &b->res[p];

		if (!b->o.patterns[p])
			continue;
		printf("%-8s %10.0f %11.0f %11.0f %10.2f %10.2f %9llu %8.0fK %6.0f/%-6.0f\n", pattern_name[p],
		       r->raw, r->drain, r->total, r->drain_ratio, r->total_ratio,
		       (unsigned long long)r->wb_ios,
		       r->wb_ios ? (double)r->wb_bytes / (double)r->wb_ios / 1024 : 0, r->raw_cpu,
		       r->drain_cpu);
	}
	if (b->o.raw_flush_every) {
		char fe[32];

		printf("\nraw+fl: the raw loop with an fdatasync request every %s, while it writes on\n",
		       wct_size_str(fe, sizeof(fe), b->o.raw_flush_every));
		printf("%-8s %10s %11s %12s\n", "pattern", "raw MB/s", "raw+fl MB/s", "drain/raw+fl");
		for (int p = 0; p < NPATTERNS; p++) {
			const struct result *r = &b->res[p];

			if (b->o.patterns[p])
				printf("%-8s %10.0f %11.0f %12.2f\n", pattern_name[p], r->raw, r->rawfl,
				       r->drain_rawfl_ratio);
		}
	}
	if (!b->o.no_latency) {
		double ip99 = wcb_hist_quantile(&b->lat.idle, 0.99) / 1e3;
		double bp99 = wcb_hist_quantile(&b->lat.busy, 0.99) / 1e3;

		printf("\nforeground %u-byte writes into a cache %u%% full, %llu per phase and run:\n",
		       b->o.block_size, WB_LAT_FILL_PCT, (unsigned long long)(b->lat.idle.count / b->o.runs));
		printf("  idle cache:           p50 %7.2f us  p99 %7.2f us  max %8.1f us\n",
		       wcb_hist_quantile(&b->lat.idle, 0.5) / 1e3, ip99, (double)b->lat.idle.max / 1e3);
		printf("  write-back running:   p50 %7.2f us  p99 %7.2f us  max %8.1f us  "
		       "(%.0f%% of the writes during the drain, %.0f MB/s)\n",
		       wcb_hist_quantile(&b->lat.busy, 0.5) / 1e3, bp99, (double)b->lat.busy.max / 1e3,
		       b->lat.overlap * 100, b->lat.drain_mbps);
		printf("  p99 busy/idle:        %.2fx (target: <= 2x)\n", ip99 > 0 ? bp99 / ip99 : 0);
	}
}

/* The three bandwidths of a pattern or of one run, MB/s. */
static void json_mbps(struct wct_json *j, double raw, double drain, double total)
{
	wct_json_num(j, "raw_mbps", "%.1f", raw);
	wct_json_num(j, "drain_mbps", "%.1f", drain);
	wct_json_num(j, "total_mbps", "%.1f", total);
}

static void print_json(const struct bench *b)
{
	const struct wcb_hist *idle = &b->lat.idle, *busy = &b->lat.busy;
	struct wct_json j;

	wct_json_init(&j, stdout);
	wct_json_object(&j, NULL, true);
	wct_json_str(&j, "cache", b->o.cache_path);
	wct_json_str(&j, "origin", b->o.origin_path);
	wct_json_str(&j, "origin_mode", b->origin_mode);
	wct_json_u64(&j, "cache_size", b->o.cache_size);
	wct_json_u64(&j, "cache_blocks", b->cache_blocks);
	wct_json_u64(&j, "working_set", b->o.working_set);
	wct_json_u64(&j, "block_size", b->o.block_size);
	wct_json_u64(&j, "runs", b->o.runs);
	wct_json_u64(&j, "writeback_jobs", b->cfg.writeback_jobs);
	wct_json_u64(&j, "writeback_max_io_kib", b->cfg.writeback_max_io_kib);
	wct_json_u64(&j, "raw_qd", b->o.raw_qd ? b->o.raw_qd : b->cfg.writeback_jobs);
	wct_json_u64(&j, "raw_io", b->o.raw_io ? b->o.raw_io : b->o.block_size);
	wct_json_u64(&j, "flush_delay_us", b->o.flush_delay_us);
	wct_json_str(&j, "options", b->o.config ? b->o.config : "");
	wct_json_array(&j, "patterns", true);
	for (int p = 0; p < NPATTERNS; p++) {
		const struct result *r = &b->res[p];

		if (!b->o.patterns[p])
			continue;
		wct_json_object(&j, NULL, false);
		wct_json_str(&j, "pattern", pattern_name[p]);
		json_mbps(&j, r->raw, r->drain, r->total);
		wct_json_num(&j, "drain_ratio", "%.3f", r->drain_ratio);
		if (b->o.raw_flush_every) {
			wct_json_num(&j, "raw_flushing_mbps", "%.1f", r->rawfl);
			wct_json_num(&j, "drain_raw_flushing_ratio", "%.3f", r->drain_rawfl_ratio);
		}
		wct_json_num(&j, "total_ratio", "%.3f", r->total_ratio);
		wct_json_num(&j, "raw_cpu_us_per_mib", "%.1f", r->raw_cpu);
		wct_json_num(&j, "drain_cpu_us_per_mib", "%.1f", r->drain_cpu);
		wct_json_u64(&j, "writeback_ios", r->wb_ios);
		wct_json_u64(&j, "writeback_bytes", r->wb_bytes);
		wct_json_array(&j, "runs", false);
		for (unsigned i = 0; i < b->o.runs; i++) {
			const struct sample *sm = &r->s[i];

			wct_json_object(&j, NULL, false);
			json_mbps(&j, sm->raw_mbps, sm->drain_mbps, sm->total_mbps);
			wct_json_num(&j, "fill_s", "%.4f", sm->fill_s);
			wct_json_num(&j, "drain_s", "%.4f", sm->drain_s);
			wct_json_u64(&j, "drain_bytes", sm->drain_bytes);
			wct_json_u64(&j, "writes_blocked_on_freelist", sm->blocked);
			wct_json_end(&j);
		}
		wct_json_end(&j);
		wct_json_end(&j);
	}
	wct_json_end(&j);
	if (!b->o.no_latency) {
		wct_json_object(&j, "latency_us", false);
		wct_json_num(&j, "idle_p50", "%.3f", wcb_hist_quantile(idle, 0.5) / 1e3);
		wct_json_num(&j, "idle_p99", "%.3f", wcb_hist_quantile(idle, 0.99) / 1e3);
		wct_json_num(&j, "idle_max", "%.3f", (double)idle->max / 1e3);
		wct_json_num(&j, "busy_p50", "%.3f", wcb_hist_quantile(busy, 0.5) / 1e3);
		wct_json_num(&j, "busy_p99", "%.3f", wcb_hist_quantile(busy, 0.99) / 1e3);
		wct_json_num(&j, "busy_max", "%.3f", (double)busy->max / 1e3);
		wct_json_num(&j, "p99_ratio", "%.3f",
		             wcb_hist_quantile(busy, 0.99) / wcb_hist_quantile(idle, 0.99));
		wct_json_num(&j, "overlap", "%.3f", b->lat.overlap);
		wct_json_num(&j, "drain_mbps", "%.1f", b->lat.drain_mbps);
		wct_json_u64(&j, "writes", busy->count);
		wct_json_end(&j);
	}
	wct_json_end(&j);
}

/* ------------------------------------------------------------- main */

int wcbench_writeback(int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return 1;
	ret = parse_args(b, argc, argv);
	if (ret) {
		free(b);
		return ret;
	}
	b->forced_gran = wcb_pmem_emulate_for(b->o.cache_path, b->o.config);
	b->local = wcadm_origin_is_path(b->o.origin_path);
	if (b->o.raw_flush_every && !b->local) {
		fprintf(stderr, "wcbench writeback: --raw-flush-every: only for an origin file or "
		        "block device, not %s\n", b->o.origin_path);
		free(b);
		return 2;
	}
	wc_config_init(&b->cfg);
	b->cfg.block_size = b->o.block_size;
	b->cfg.cache_size = b->o.cache_size;
	if (b->o.config && wc_config_parse(&b->cfg, b->o.config)) {
		fprintf(stderr, "wcbench writeback: --options: %s\n", wc_errmsg());
		free(b);
		return 2;
	}
	b->nblocks = b->o.working_set / b->o.block_size;
	b->buf = aligned_alloc(4096, b->o.block_size < 4096 ? 4096 : b->o.block_size);
	ret = !b->buf || make_order(b) ? -1 : 0;
	if (b->buf)
		memset(b->buf, WB_FILL, b->o.block_size);
	if (!ret)
		ret = prepare_origin(b);
	if (!ret)
		ret = run_bandwidth(b);
	if (!ret && !b->o.no_latency)
		ret = run_latency(b);
	if (!b->o.quiet)
		wct_progress_done();
	if (!ret) {
		if (b->o.json)
			print_json(b);
		else
			print_text(b);
	}
	if (!b->o.keep) {
		if (b->made_cache)
			unlink(b->o.cache_path);
		if (b->made_origin)
			unlink(b->o.origin_path);
	}
	wct_scratch_release(1); /* removed above, or kept on purpose */
	free(b->order);
	free(b->buf);
	free(b);
	return ret ? 1 : 0;
}
