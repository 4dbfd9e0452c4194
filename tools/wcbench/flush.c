/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flush.c -- `wcbench flush`: how fast each way of persisting a copy runs
 * on this machine, per copy size, against the engine's policy.
 *
 * Columns: the engine's policy through the public API (wc_pmem_memcpy and
 * wc_pmem_drain, environment included), every strategy it chooses from
 * (every non-temporal width the CPU has, the cached ones), a bare loop of
 * every width (flush_bare.c: the least any engine of that width can do),
 * libpmem2's pmem2_memcpy on the same mapping, and plain memcpy (not
 * persistent: the ceiling, for reference).  "Best" is the fastest of the
 * strategies and bare loops.
 * Each is measured with a fence after every copy and with one fence per
 * --batch copies (and one at the end).
 *
 * Method: the destination moves forward through a region larger than the
 * last-level cache, so every copy writes cold lines as a cache does; the
 * source is one buffer, hot for small sizes.  At each size a pilot sizes
 * every column's sample to --time-ms; a run then measures every column in
 * --slices passes, in a fresh random order each, and takes the median of
 * the passes, so a burst of outside load spoils one pass of one column
 * rather than a run.  Times are the median of --runs runs; ratios the
 * median of the per-run ratios (policy and the other column timed in the
 * same run).
 */
#include <errno.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flushbench.h"
#include "wcbench.h"



static void usage(FILE *f)
{
	fprintf(f,
	        "usage: wcbench flush [options]\n"
	        "Persist bandwidth per copy size: the engine's policy against each strategy\n"
	        "(NT, cached+CLFLUSHOPT, cached+CLWB), libpmem2's pmem2_memcpy and plain memcpy,\n"
	        "fenced per copy and with fences amortised over --batch copies.\n\n"
	        "  --min BYTES      smallest copy (default 64)\n"
	        "  --max BYTES      largest copy (default 64M); sizes are powers of two\n"
	        "                   plus 768 and 1536 (the default threshold and 2x it)\n"
	        "  --runs N         runs per size, median reported (default 7)\n"
	        "  --pmem PATH      destination file or DAX device; its contents are\n"
	        "                   overwritten (default /dev/shm/wcbench-flush.pmem,\n"
	        "                   created and removed)\n"
	        "  --size BYTES     destination region the copies stream over (default 256M;\n"
	        "                   keep it larger than the last-level cache)\n"
	        "  --batch N        copies per fence in the amortised mode (default 64)\n"
	        "  --time-ms MS     length of one sample (default 4)\n"
	        "  --slices N       passes over all columns per run, each 1/N of a sample\n"
	        "                   (default 5)\n"
	        "  --dst-offset N   misalign every destination by N bytes (0..63, default 0)\n"
	        "  --all-nt         (accepted; every non-temporal width is always measured)\n"
	        "  --json           machine-readable output on stdout\n"
	        "  --plot FILE.png  bandwidth vs size per strategy, with gnuplot\n"
	        "  --check          exit 1 unless the policy is >= 0.95x the best strategy and\n"
	        "                   >= 1.0x pmem2_memcpy at every size, in both modes (a\n"
	        "                   shortfall inside the run-to-run spread counts as a tie)\n"
	        "  --quiet          no progress on stderr\n"
	        "  --help\n\n"
	        WCT_SIZE_HELP WCT_PMEM_EMULATE_HELP
	        "The engine's policy honours the WC_PMEM_* environment.\n");
}

static int parse_args(struct bench *b, int argc, char **argv)
{
	const struct wct_opt opts[] = {
		WCT_OPT("min", WCT_SIZE, &b->min, 1, UINT64_MAX),
		WCT_OPT("max", WCT_SIZE, &b->max, 1, UINT64_MAX),
		WCT_OPT("runs", WCT_UINT, &b->runs, 1, MAX_RUNS),
		WCT_OPT_STR("pmem", &b->path),
		WCT_OPT("size", WCT_SIZE, &b->region, 1, UINT64_MAX),
		WCT_OPT("batch", WCT_UINT, &b->batch, 1, 1u << 20),
		WCT_OPT("time-ms", WCT_DOUBLE, &b->time_ms, 0, 10000),
		WCT_OPT("dst-offset", WCT_UINT, &b->dst_offset, 0, 63),
		WCT_OPT("slices", WCT_UINT, &b->slices, 1, MAX_SLICES),
		WCT_OPT_FLAG("all-nt", &b->all_nt),
		WCT_OPT_FLAG("json", &b->json),
		WCT_OPT_STR("plot", &b->plot),
		WCT_OPT_FLAG("check", &b->check),
		WCT_OPT_FLAG("quiet", &b->quiet),
		WCT_OPT_END,
	};
	int ret;

	b->min = 64;
	b->max = 64u << 20;
	b->region = 256u << 20;
	b->runs = 7;
	b->batch = 64;
	b->time_ms = 4;
	b->slices = 5;
	b->path = "/dev/shm/wcbench-flush.pmem";
	ret = wct_opts_parse("wcbench flush", opts, argc, argv, usage, false);
	if (ret)
		return ret;
	if (b->min > b->max) {
		fprintf(stderr, "wcbench flush: --min is larger than --max\n");
		return 2;
	}
	if (b->region < 2 * (b->max + 64)) {
		fprintf(stderr, "wcbench flush: --size %llu is too small for --max %llu "
		        "(needs at least twice as much)\n", (unsigned long long)b->region,
		        (unsigned long long)b->max);
		return 2;
	}
	return 0;
}

static void make_sizes(struct bench *b)
{
	b->nsizes = 0;
	for (uint64_t s = 1; s <= b->max && b->nsizes < MAX_SIZES - 2; s *= 2) {
		if (s >= b->min)
			b->sizes[b->nsizes++] = s;
		/* 768 and 1536 sit between 512/1024 and 1024/2048: the default
		 * threshold and the region just above it. */
		if ((s == 512 || s == 1024) && s * 3 / 2 >= b->min && s * 3 / 2 <= b->max)
			b->sizes[b->nsizes++] = s * 3 / 2;
	}
}

static void add_column(struct bench *b, const char *name, enum col_kind kind,
                       wcadm_copy_fn copy, bool single)
{
	for (unsigned i = 0; i < b->ncols; i++)
		if (strcmp(b->col[i].name, name) == 0)
			return;
	b->col[b->ncols++] = (struct column){ name, kind, copy, single };
}

static void make_columns(struct bench *b)
{
	/* The strategies the policy may choose from: WC_PMEM_NO_* hides some. */
	struct wcadm_strategy usable[8];
	const char *bare_name;
	wcadm_copy_fn bare;
	unsigned features, n;
	bool bare_ok = b->dst_offset == 0 && b->min >= 64;

	wcadm_flush_inputs(&features, NULL);
	n = wcadm_strategies(features, usable, sizeof(usable) / sizeof(usable[0]));
	add_column(b, "policy", COL_POLICY, NULL, false);
	/* The bare loop of the width the policy copies small sizes with:
	 * pol/bare compares with it. */
	b->pol_bare = -1;
	bare = flushbench_bare_loop(b->policy.info.small_strategy, &bare_name);
	if (bare && bare_ok) {
		b->pol_bare = (int)b->ncols;
		add_column(b, bare_name, COL_BARE, bare, true);
	}
	/* Every non-temporal width (the engine measures which one to use),
	 * then the cached strategies, then the other widths' bare loops: a
	 * 256-bit loop beat the engine's 512-bit one on a Zen 4, so every
	 * width the CPU has is a reference. */
	for (unsigned pass = 0; pass < 3; pass++)
		for (unsigned i = 0; i < n; i++) {
			if (pass == 0 && usable[i].nt)
				add_column(b, usable[i].name, COL_STRATEGY, usable[i].copy, true);
			else if (pass == 1 && !usable[i].nt)
				add_column(b, usable[i].name, COL_STRATEGY, usable[i].copy, true);
			else if (pass == 2 && usable[i].nt && bare_ok &&
			         (bare = flushbench_bare_loop(usable[i].name, &bare_name)))
				add_column(b, bare_name, COL_BARE, bare, true);
		}
	add_column(b, "pmem2", COL_PMEM2, NULL, false);
	add_column(b, "memcpy", COL_MEMCPY, NULL, false);
}

static int map_destination(struct bench *b)
{
	struct stat st;
	size_t map_size;
	int ret;

	b->forced_gran = wct_pmem_emulate();
	if (b->forced_gran && !b->quiet)
		fprintf(stderr, "wcbench flush: " WCT_PMEM_EMULATE_NOTE "\n");
	if (stat(b->path, &st) != 0) {
		if (errno != ENOENT) {
			fprintf(stderr, "wcbench flush: stat %s: %s\n", b->path, strerror(errno));
			return -1;
		}
		b->fd = wct_scratch_create("wcbench flush", b->path, b->region);
		if (b->fd < 0)
			return -1;
		b->created = true;
	} else {
		b->fd = open(b->path, O_RDWR);
		if (b->fd < 0) {
			fprintf(stderr, "wcbench flush: open %s: %s\n", b->path, strerror(errno));
			return -1;
		}
	}
	if (!b->created && S_ISREG(st.st_mode) && (uint64_t)st.st_size < b->region &&
	    ftruncate(b->fd, (off_t)b->region) != 0) {
		fprintf(stderr, "wcbench flush: resize %s to %llu bytes: %s\n", b->path,
		        (unsigned long long)b->region, strerror(errno));
		return -1;
	}
	if ((ret = pmem2_source_from_fd(&b->src, b->fd)) != 0 ||
	    (ret = pmem2_config_new(&b->cfg)) != 0 ||
	    (ret = pmem2_config_set_required_store_granularity(b->cfg,
	                                                        PMEM2_GRANULARITY_CACHE_LINE)) != 0 ||
	    (ret = pmem2_config_set_length(b->cfg, b->region)) != 0 ||
	    (ret = pmem2_map_new(&b->map, b->cfg, b->src)) != 0) {
		fprintf(stderr, "wcbench flush: map %s with libpmem2: %s\n", b->path,
		        pmem2_errormsg());
		return -1;
	}
	b->gran = pmem2_map_get_store_granularity(b->map);
	b->dst = pmem2_map_get_address(b->map);
	map_size = pmem2_map_get_size(b->map);
	if (map_size < b->region) {
		fprintf(stderr, "wcbench flush: %s maps only %zu bytes\n", b->path, map_size);
		return -1;
	}
	b->pm_memcpy = pmem2_get_memcpy_fn(b->map);
	b->pm_drain = pmem2_get_drain_fn(b->map);
	if (b->gran != PMEM2_GRANULARITY_CACHE_LINE && !b->quiet)
		fprintf(stderr, "wcbench flush: note: the mapping's granularity is %s, so "
		        "pmem2_memcpy takes its %s path; the engine's columns still flush\n",
		        b->gran == PMEM2_GRANULARITY_BYTE ? "BYTE" : "PAGE",
		        b->gran == PMEM2_GRANULARITY_BYTE ? "eADR (no flush)" : "msync");
	return 0;
}

static void unmap_destination(struct bench *b)
{
	if (b->map)
		pmem2_map_delete(&b->map);
	if (b->cfg)
		pmem2_config_delete(&b->cfg);
	if (b->src)
		pmem2_source_delete(&b->src);
	if (b->fd >= 0)
		close(b->fd);
	if (b->created) {
		unlink(b->path);
		wct_scratch_forget(b->path);
	}
}

static char *next_dst(struct bench *b, size_t size)
{
	size_t step = (size + b->dst_offset + 63) & ~(size_t)63;
	char *d;

	if (b->pos + step > b->region)
		b->pos = 0;
	d = b->dst + b->pos + b->dst_offset;
	b->pos += step;
	return d;
}

/*
 * `copies` copies of `size` bytes with column `c`, a fence after every
 * `batch` copies and after the last; ns per copy.  One loop per kind, so
 * the timed loop carries no dispatch the column itself does not have.
 */
static double sample(struct bench *b, const struct column *c, size_t size, unsigned copies,
                     unsigned batch)
{
	const struct wcadm_persist *p = &b->policy;
	size_t start_pos = b->pos;
	double t0 = wct_now_ns(), t1;
	unsigned i;

	switch (c->kind) {
	case COL_POLICY:
		/* What an application calls: the public functions, with their
		 * dispatch.  `p` is the policy they use (wcadm_persist_default). */
		for (i = 1; i <= copies; i++) {
			wc_pmem_memcpy(next_dst(b, size), b->source, size);
			if (i % batch == 0 || i == copies)
				wc_pmem_drain();
		}
		break;
	case COL_STRATEGY:
	case COL_BARE:
		for (i = 1; i <= copies; i++) {
			c->copy(next_dst(b, size), b->source, size);
			if (i % batch == 0 || i == copies)
				p->drain();
		}
		break;
	case COL_PMEM2:
		if (batch == 1) {
			for (i = 1; i <= copies; i++)
				b->pm_memcpy(next_dst(b, size), b->source, size, 0);
		} else {
			for (i = 1; i <= copies; i++) {
				b->pm_memcpy(next_dst(b, size), b->source, size, PMEM2_F_MEM_NODRAIN);
				if (i % batch == 0 || i == copies)
					b->pm_drain();
			}
		}
		break;
	case COL_MEMCPY:
		for (i = 1; i <= copies; i++) {
			memcpy(next_dst(b, size), b->source, size);
			if (i % batch == 0 || i == copies)
				p->drain();
		}
		break;
	}
	t1 = wct_now_ns();
	if (c->kind == COL_MEMCPY) {
		/* memcpy leaves up to an LLC of dirty lines; written back
		 * during the next column's sample they would cost it ~5-10%
		 * (measured: the column after memcpy lost that much at every
		 * size >= 256 KiB).  Write them back here, untimed. */
		size_t end_pos = b->pos;

		b->pos = start_pos;
		for (i = 0; i < copies; i++)
			p->flush(next_dst(b, size), size);
		p->drain();
		b->pos = end_pos;
	}
	return (t1 - t0) / copies;
}

/* Copies per sample so that one lasts about --time-ms; in batched mode a
 * whole number of batches when a batch fits in a few samples' time. */
static unsigned pilot(struct bench *b, const struct column *c, size_t size, unsigned batch)
{
	double target = b->time_ms * 1e6, per_copy;
	unsigned k = 1;

	for (;;) {
		per_copy = sample(b, c, size, k, batch);
		if (per_copy * k >= target / 8 || k >= (1u << 24))
			break;
		k *= 4;
	}
	k = (unsigned)ceil(target / (per_copy > 1 ? per_copy : 1));
	if (k < 1)
		k = 1;
	if (batch > 1 && per_copy * batch <= 4 * target)
		k = (k + batch - 1) / batch * batch;
	return k;
}

/* Fastest single strategy at one size and mode, by median time. */
static unsigned best_single(const struct bench *b, unsigned si, unsigned m)
{
	unsigned best = 0;

	for (unsigned ci = 0; ci < b->ncols; ci++)
		if (b->col[ci].single &&
		    (!best || b->median[si][ci][m] < b->median[si][best][m]))
			best = ci;
	return best;
}

/* Median and upper quartile of (other / policy) over the runs. */
static double paired_ratio(const struct bench *b, unsigned si, unsigned m, unsigned other,
                           unsigned pol, double *q3)
{
	double r[MAX_RUNS];
	double med;

	for (unsigned k = 0; k < b->runs; k++)
		r[k] = b->sample[si][other][m][k] / b->sample[si][pol][m][k];
	med = wcb_median(r, b->runs); /* sorts r */
	*q3 = r[(3 * (b->runs - 1) + 2) / 4];
	return med;
}

/* Fisher-Yates with a fixed-seed LCG: reproducible orders. */
static void shuffle(unsigned *v, unsigned n, uint64_t *seed)
{
	for (unsigned i = 0; i < n; i++)
		v[i] = i;
	for (unsigned i = n; i > 1; i--) {
		unsigned j;

		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		j = (unsigned)((*seed >> 33) % i);
		unsigned t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

static void measure(struct bench *b)
{
	uint64_t seed = 0x5eed;
	unsigned ncells = b->ncols * NMODES;
	unsigned pol = flushbench_col_index(b, "policy"), pm = flushbench_col_index(b, "pmem2");
	double start = wct_now_ns();

	for (unsigned si = 0; si < b->nsizes; si++) {
		size_t size = b->sizes[si];
		char sz[32];

		if (!b->quiet && (wct_now_ns() - start) > 1e9)
			wct_progress("wcbench flush: %s (%u of %u sizes), %.0f s", wct_size_str(sz,
			             sizeof(sz), size), si + 1, b->nsizes, (wct_now_ns() - start) / 1e9);
		for (unsigned ci = 0; ci < b->ncols; ci++)
			for (unsigned m = 0; m < NMODES; m++) {
				unsigned batch = m == MODE_FENCED ? 1 : b->batch;
				unsigned k = pilot(b, &b->col[ci], size, batch);

				/* Whole batches per slice where a batch is not a
				 * whole sample by itself. */
				k = (k + b->slices - 1) / b->slices;
				if (batch > 1 && k >= batch / 2)
					k = (k + batch - 1) / batch * batch;
				b->copies[si][ci][m] = k;
			}
		for (unsigned r = 0; r < b->runs; r++) {
			static double slice[MAX_COLS][NMODES][MAX_SLICES];

			for (unsigned sl = 0; sl < b->slices; sl++) {
				unsigned order[MAX_COLS * NMODES];

				/* A fresh order every pass: a column that always ran
				 * after the same one would inherit its leftovers. */
				shuffle(order, ncells, &seed);
				for (unsigned k = 0; k < ncells; k++) {
					unsigned ci = order[k] / NMODES, m = order[k] % NMODES;

					slice[ci][m][sl] = sample(b, &b->col[ci], size,
					                          b->copies[si][ci][m],
					                          m == MODE_FENCED ? 1 : b->batch);
				}
			}
			/* A run's time is the median of its slices: a burst of
			 * outside load spoils one slice, not the run. */
			for (unsigned ci = 0; ci < b->ncols; ci++)
				for (unsigned m = 0; m < NMODES; m++)
					b->sample[si][ci][m][r] = wcb_median(slice[ci][m], b->slices);
		}
		for (unsigned m = 0; m < NMODES; m++) {
			for (unsigned ci = 0; ci < b->ncols; ci++) {
				double tmp[MAX_RUNS];

				memcpy(tmp, b->sample[si][ci][m], b->runs * sizeof(double));
				b->median[si][ci][m] = wcb_median(tmp, b->runs);
			}
			b->best[si][m] = best_single(b, si, m);
			b->vs_best[si][m] = paired_ratio(b, si, m, b->best[si][m], pol,
			                                 &b->vs_best_q3[si][m]);
			b->vs_pmem2[si][m] = paired_ratio(b, si, m, pm, pol, &b->vs_pmem2_q3[si][m]);
			if (b->pol_bare >= 0) {
				double q3;

				b->vs_bare[si][m] = paired_ratio(b, si, m, (unsigned)b->pol_bare, pol, &q3);
			}
		}
	}
	if (!b->quiet)
		wct_progress_done();
}

int flushbench_col_of_kind(const struct bench *b, enum col_kind kind)
{
	for (unsigned i = 0; i < b->ncols; i++)
		if (b->col[i].kind == kind)
			return (int)i;
	return -1;
}

unsigned flushbench_col_index(const struct bench *b, const char *name)
{
	for (unsigned i = 0; i < b->ncols; i++)
		if (strcmp(b->col[i].name, name) == 0)
			return i;
	return 0;
}

int wcbench_flush(int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof(*b));
	struct verdict v[NMODES];
	int status = 1, ret;

	if (!b) {
		fprintf(stderr, "wcbench flush: out of memory\n");
		return 1;
	}
	b->fd = -1;
	ret = parse_args(b, argc, argv);
	if (ret) {
		free(b);
		return ret;
	}
	wcadm_persist_default(&b->policy);
	make_sizes(b);
	make_columns(b);
	if (map_destination(b) != 0)
		goto out;
	b->source = mmap(NULL, b->max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->source == MAP_FAILED) {
		b->source = NULL;
		fprintf(stderr, "wcbench flush: source buffer of %llu bytes: %s\n",
		        (unsigned long long)b->max, strerror(errno));
		goto out;
	}
	for (uint64_t i = 0; i < b->max; i++)
		b->source[i] = (char)(i * 167 + 13);
	/* Fault in every page of the destination before timing anything. */
	wcadm_persist_set(&b->policy, b->dst, 0, b->region);
	wcadm_persist_drain(&b->policy);

	measure(b);
	if (b->json)
		flushbench_print_json(b);
	else
		flushbench_print_table(b);
	status = 0;
	if (b->plot && flushbench_plot(b) != 0)
		status = 1;
	flushbench_judge(b, v);
	if (b->check && flushbench_goal(v) == GOAL_MISSED)
		status = 1;
out:
	if (b->source)
		munmap(b->source, b->max);
	unmap_destination(b);
	free(b);
	return status;
}
