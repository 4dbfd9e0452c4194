/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flushref.c -- an outside measurement: the engine through its public
 * functions (wc_pmem_memcpy + wc_pmem_drain) against reference loops written
 * here, each strategy the CPU has, interleaved in one run.
 *
 * wcbench measures the engine against the library's own strategy code, so
 * a mistake shared by both would not show.  This program shares nothing
 * with the library but include/wcache.h: the references are the plainest
 * loop of each kind and libpmem2's memcpy on the same mapping.
 *
 * Method: the destination streams through a region larger than the LLC,
 * so every copy writes cold lines as a cache does.  A pilot sizes every
 * (column, mode) cell's sample to --time-ms; a run measures every cell in
 * --slices passes, each in a fresh random order, and keeps the median pass,
 * so a burst of outside load (or the leftovers of the cell before) spoils
 * one pass of one cell, not a run.  Times are medians over runs; a ratio is
 * the median of per-run ratios, both columns timed in the same run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <immintrin.h>
#include <libpmem2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wcache.h"

#define NSIZES 15
#define MAX_COLS 8
#define NMODES 2 /* 0: a fence after every copy; 1: one per BATCH copies */
#define MAX_RUNS 101
#define MAX_SLICES 50
#define BATCH 64
#define GOAL_BEST 0.95
#define GOAL_PMEM2 1.0

typedef void (*copy_fn)(void *dst, const void *src, size_t n);
typedef long long word __attribute__((may_alias)); /* the source is bytes */

enum kind { ENGINE, REF, PMEM2 };

struct column {
	const char *name;
	enum kind kind;
	copy_fn copy;
};

struct ratio {
	double med, q3;
};

struct verdict {
	double min_best, q3_best, min_pmem2, q3_pmem2;
	size_t at_best, at_pmem2;
	unsigned misses, ties;
};

struct bench {
	size_t min, max, region, pos, sizes[NSIZES];
	unsigned runs, slices, ncols, nsizes;
	double time_ms;
	const char *path;
	bool check, created, forced_gran;
	int fd;
	enum pmem2_granularity gran;
	struct pmem2_source *src;
	struct pmem2_config *cfg;
	struct pmem2_map *map;
	pmem2_memcpy_fn pm_memcpy;
	pmem2_drain_fn pm_drain;
	char *dst, *source;
	struct column col[MAX_COLS]; /* the engine first, pmem2 last */
	double t[NSIZES][MAX_COLS][NMODES][MAX_RUNS]; /* ns per copy */
};

static const size_t all_sizes[NSIZES] = {
	64, 128, 256, 512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10,
	256 << 10, 1 << 20, 4 << 20, 16 << 20,
};

/* ---- reference loops: 64-byte aligned, multiples of 64 bytes ---------- */

static void ref_movnti(void *dst, const void *src, size_t n)
{
	long long *d = dst;
	const word *s = src;

	for (; n; n -= 64, d += 8, s += 8)
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++)
			_mm_stream_si64(d + k, s[k]);
}

static void ref_sse2(void *dst, const void *src, size_t n)
{
	__m128i *d = dst;
	const __m128i *s = src;

	for (; n; n -= 64, d += 4, s += 4)
#pragma GCC unroll 4
		for (int k = 0; k < 4; k++)
			_mm_stream_si128(d + k, _mm_load_si128(s + k));
}

__attribute__((target("avx2"))) static void ref_avx2(void *dst, const void *src, size_t n)
{
	__m256i *d = dst;
	const __m256i *s = src;

	for (; n; n -= 64, d += 2, s += 2) {
		_mm256_stream_si256(d, _mm256_load_si256(s));
		_mm256_stream_si256(d + 1, _mm256_load_si256(s + 1));
	}
}

__attribute__((target("avx512f"))) static void ref_avx512(void *dst, const void *src, size_t n)
{
	char *d = dst;
	const char *s = src;

	for (; n; n -= 64, d += 64, s += 64)
		_mm512_stream_si512((void *)d, _mm512_load_si512((const void *)s));
}

static void ref_clflushopt(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	for (char *p = dst, *end = p + n; p < end; p += 64)
		__asm__ volatile("clflushopt (%0)" : : "r"(p) : "memory");
}

static void ref_clwb(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	for (char *p = dst, *end = p + n; p < end; p += 64)
		__asm__ volatile("clwb (%0)" : : "r"(p) : "memory");
}

/* ---- helpers -------------------------------------------------------------- */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v. */
static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *size_str(char *buf, size_t len, size_t n)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(buf, len, "%zu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, len, "%zu KiB", n >> 10);
	else
		snprintf(buf, len, "%zu B", n);
	return buf;
}

/* A count, or with `sized` bytes with an optional K, M or G suffix. */
static bool parse_num(const char *s, bool sized, unsigned long long hi, unsigned long long *out)
{
	unsigned shift = 0;
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	if (sized && *end && strchr("kKmMgG", *end)) {
		shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20 : 30;
		end++;
	}
	if (end == s || *end || errno || *s == '-' || *out > (hi >> shift))
		return false;
	*out <<= shift;
	return true;
}

/* ---- the destination -------------------------------------------------- */

static int map_destination(struct bench *b)
{
	struct stat st;
	int err;

	/* Without it libpmem2 maps a /dev/shm file at page granularity and
	 * pmem2_memcpy takes its msync path: nothing to compare with. */
	if (!getenv("PMEM2_FORCE_GRANULARITY")) {
		setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
		b->forced_gran = true;
	}
	b->fd = open(b->path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (b->fd >= 0) {
		b->created = true;
		/* Reserved now: a full tmpfs would otherwise end the run with
		 * SIGBUS in the middle of a copy. */
		if ((err = posix_fallocate(b->fd, 0, (off_t)b->region)) != 0) {
			fprintf(stderr, "flushref: reserve %zu bytes in %s: %s\n", b->region,
			        b->path, strerror(err));
			return -1;
		}
	} else if (errno == EEXIST && (b->fd = open(b->path, O_RDWR)) >= 0) {
		if (fstat(b->fd, &st) != 0 || (S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size < b->region && ftruncate(b->fd, (off_t)b->region) != 0)) {
			fprintf(stderr, "flushref: size %s to %zu bytes: %s\n", b->path, b->region,
			        strerror(errno));
			return -1;
		}
	} else {
		fprintf(stderr, "flushref: open %s: %s\n", b->path, strerror(errno));
		return -1;
	}
	/* PAGE, the coarsest granularity, as the one required maps anything;
	 * the header says what the mapping got.  libpmem2 refuses a --size
	 * that is unaligned or larger than the device, and says why. */
	if (pmem2_source_from_fd(&b->src, b->fd) != 0 || pmem2_config_new(&b->cfg) != 0 ||
	    pmem2_config_set_required_store_granularity(b->cfg, PMEM2_GRANULARITY_PAGE) != 0 ||
	    pmem2_config_set_length(b->cfg, b->region) != 0 ||
	    pmem2_map_new(&b->map, b->cfg, b->src) != 0) {
		fprintf(stderr, "flushref: map %s with libpmem2: %s\n", b->path, pmem2_errormsg());
		return -1;
	}
	/* The mapping keeps the file alive: removed now, it cannot be left
	 * behind in /dev/shm however the run ends. */
	if (b->created)
		unlink(b->path);
	b->created = false;
	b->gran = pmem2_map_get_store_granularity(b->map);
	b->dst = pmem2_map_get_address(b->map);
	b->pm_memcpy = pmem2_get_memcpy_fn(b->map);
	b->pm_drain = pmem2_get_drain_fn(b->map);
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
	if (b->created)
		unlink(b->path);
}

/* The next cold stretch of the region; a copy never runs past its end. */
static char *next_dst(struct bench *b, size_t size)
{
	char *d;

	if (b->pos + size > b->region)
		b->pos = 0;
	d = b->dst + b->pos;
	b->pos += size;
	return d;
}

/* ---- measuring -------------------------------------------------------- */

static void add_column(struct bench *b, const char *name, enum kind kind, copy_fn copy)
{
	b->col[b->ncols++] = (struct column){ name, kind, copy };
}

static void make_columns(struct bench *b)
{
	unsigned eax, ebx = 0, ecx, edx;

	__builtin_cpu_init();
	if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
		ebx = 0;
	add_column(b, "engine", ENGINE, NULL);
	add_column(b, "movnti", REF, ref_movnti);
	add_column(b, "nt-sse2", REF, ref_sse2);
	if (__builtin_cpu_supports("avx2"))
		add_column(b, "nt-avx2", REF, ref_avx2);
	if (__builtin_cpu_supports("avx512f"))
		add_column(b, "nt-avx512", REF, ref_avx512);
	if (ebx & (1u << 23))
		add_column(b, "cached+clflushopt", REF, ref_clflushopt);
	if (ebx & (1u << 24))
		add_column(b, "cached+clwb", REF, ref_clwb);
	add_column(b, "pmem2", PMEM2, NULL);
}

/*
 * `copies` copies of `size` bytes with column `c`, a fence after every
 * `batch` copies and after the last; ns per copy.  One loop per kind, so a
 * column's timed loop carries no dispatch of the others.
 */
static double sample(struct bench *b, const struct column *c, size_t size, unsigned copies,
                     unsigned batch)
{
	double t0 = now_ns();
	unsigned i;

	switch (c->kind) {
	case ENGINE:
		for (i = 1; i <= copies; i++) {
			wc_pmem_memcpy(next_dst(b, size), b->source, size);
			if (i % batch == 0 || i == copies)
				wc_pmem_drain();
		}
		break;
	case REF:
		for (i = 1; i <= copies; i++) {
			c->copy(next_dst(b, size), b->source, size);
			if (i % batch == 0 || i == copies)
				_mm_sfence();
		}
		break;
	case PMEM2:
		/* Fenced: flags 0, pmem2's default, which drains in the call. */
		for (i = 1; i <= copies; i++) {
			b->pm_memcpy(next_dst(b, size), b->source, size,
			             batch == 1 ? 0 : PMEM2_F_MEM_NODRAIN);
			if (batch > 1 && (i % batch == 0 || i == copies))
				b->pm_drain();
		}
		break;
	}
	return (now_ns() - t0) / copies;
}

/* Copies per sample so that one lasts about --time-ms; in batched mode whole
 * batches when a batch takes no more than a few samples' time. */
static unsigned pilot(struct bench *b, const struct column *c, size_t size, unsigned batch)
{
	double target = b->time_ms * 1e6, per, want;
	unsigned k = 1;

	while ((per = sample(b, c, size, k, batch)) * k < target / 8 && k < (1u << 24))
		k *= 4;
	want = target / (per > 1 ? per : 1);
	k = want < 1 ? 1 : want > 1e8 ? 100000000u : (unsigned)want + 1;
	if (batch > 1 && per * batch <= 4 * target)
		k = (k + batch - 1) / batch * batch;
	return k;
}

/* Fisher-Yates driven by xorshift64* from a fixed seed: every run of the
 * program measures in the same orders. */
static void shuffle(unsigned *v, unsigned n, uint64_t *s)
{
	for (unsigned i = 0; i < n; i++)
		v[i] = i;
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j, tmp;

		*s ^= *s >> 12;
		*s ^= *s << 25;
		*s ^= *s >> 27;
		j = (unsigned)((*s * 0x2545f4914f6cdd1dull >> 32) % (i + 1));
		tmp = v[i];
		v[i] = v[j];
		v[j] = tmp;
	}
}

static void measure(struct bench *b)
{
	static double slice[MAX_COLS][NMODES][MAX_SLICES];
	unsigned copies[MAX_COLS][NMODES], order[MAX_COLS * NMODES];
	unsigned ncells = b->ncols * NMODES;
	uint64_t seed = 0x243f6a8885a308d3ull;
	bool tty = isatty(STDERR_FILENO);
	char sz[32];

	for (unsigned si = 0; si < b->nsizes; si++) {
		size_t size = b->sizes[si];

		if (tty)
			fprintf(stderr, "\rflushref: %s (%u of %u sizes)\033[K",
			        size_str(sz, sizeof(sz), size), si + 1, b->nsizes);
		for (unsigned ci = 0; ci < b->ncols; ci++)
			for (unsigned m = 0; m < NMODES; m++) {
				unsigned batch = m ? BATCH : 1;
				unsigned k = pilot(b, &b->col[ci], size, batch);

				k = (k + b->slices - 1) / b->slices;
				if (batch > 1 && k >= batch / 2)
					k = (k + batch - 1) / batch * batch;
				copies[ci][m] = k;
			}
		for (unsigned r = 0; r < b->runs; r++) {
			for (unsigned sl = 0; sl < b->slices; sl++) {
				shuffle(order, ncells, &seed);
				for (unsigned k = 0; k < ncells; k++) {
					unsigned ci = order[k] / NMODES, m = order[k] % NMODES;

					slice[ci][m][sl] = sample(b, &b->col[ci], size, copies[ci][m],
					                          m ? BATCH : 1);
				}
			}
			for (unsigned ci = 0; ci < b->ncols; ci++)
				for (unsigned m = 0; m < NMODES; m++)
					b->t[si][ci][m][r] = median(slice[ci][m], b->slices);
		}
	}
	if (tty)
		fputs("\r\033[K", stderr);
}

/* ---- results -------------------------------------------------------------- */

static double median_time(const struct bench *b, unsigned si, unsigned ci, unsigned m)
{
	double v[MAX_RUNS];

	memcpy(v, b->t[si][ci][m], b->runs * sizeof(double));
	return median(v, b->runs);
}

/* Median and upper quartile over the runs of (other time / engine time) in
 * the same run: > 1 means the engine was faster. */
static struct ratio paired(const struct bench *b, unsigned si, unsigned m, unsigned other)
{
	double r[MAX_RUNS], pos;
	struct ratio out;
	unsigned lo;

	for (unsigned k = 0; k < b->runs; k++)
		r[k] = b->t[si][other][m][k] / b->t[si][0][m][k];
	out.med = median(r, b->runs);
	pos = 0.75 * (b->runs - 1);
	lo = (unsigned)pos;
	out.q3 = lo + 1 < b->runs ? r[lo] + (pos - lo) * (r[lo + 1] - r[lo]) : r[lo];
	return out;
}

/* The fastest loop written here at one size and mode, by median time. */
static unsigned best_ref(const struct bench *b, unsigned si, unsigned m)
{
	unsigned best = 0;
	double tb = 0, tc;

	for (unsigned ci = 0; ci < b->ncols; ci++)
		if (b->col[ci].kind == REF && ((tc = median_time(b, si, ci, m)) < tb || !best)) {
			best = ci;
			tb = tc;
		}
	return best;
}

static char mark(struct ratio r, double goal)
{
	return r.med >= goal ? ' ' : r.q3 >= goal ? '~' : '!';
}

static void print_mode(const struct bench *b, unsigned m, struct verdict *v)
{
	char sz[32];

	printf("\n%s (%s), GB/s, median of %u runs:\n%-8s", m ? "batched" : "fenced",
	       m ? "a fence per 64 copies and after the last" : "a fence after every copy",
	       b->runs, "size");
	for (unsigned ci = 0; ci < b->ncols; ci++)
		printf(" %8s", b->col[ci].name);
	printf(" %9s %10s  %s\n", "eng/best", "eng/pmem2", "best");
	*v = (struct verdict){ .min_best = 1e300, .min_pmem2 = 1e300 };
	for (unsigned si = 0; si < b->nsizes; si++) {
		unsigned best = best_ref(b, si, m);
		struct ratio rb = paired(b, si, m, best), rp = paired(b, si, m, b->ncols - 1);

		printf("%-8s", size_str(sz, sizeof(sz), b->sizes[si]));
		for (unsigned ci = 0; ci < b->ncols; ci++)
			printf(" %*.2f", (int)(strlen(b->col[ci].name) < 8 ? 8 : strlen(b->col[ci].name)),
			       (double)b->sizes[si] / median_time(b, si, ci, m));
		printf(" %8.3f%c %9.3f%c  %s\n", rb.med, mark(rb, GOAL_BEST), rp.med,
		       mark(rp, GOAL_PMEM2), b->col[best].name);
		/* A shortfall whose upper quartile reaches the goal is inside
		 * the run-to-run spread: a tie, not a miss (as in wcbench). */
		if (rb.med < GOAL_BEST || rp.med < GOAL_PMEM2) {
			if (rb.q3 >= GOAL_BEST && rp.q3 >= GOAL_PMEM2)
				v->ties++;
			else
				v->misses++;
		}
		if (rb.med < v->min_best) {
			v->min_best = rb.med;
			v->q3_best = rb.q3;
			v->at_best = b->sizes[si];
		}
		if (rp.med < v->min_pmem2) {
			v->min_pmem2 = rp.med;
			v->q3_pmem2 = rp.q3;
			v->at_pmem2 = b->sizes[si];
		}
	}
}

static bool report(const struct bench *b)
{
	struct verdict v[NMODES];
	unsigned misses = 0, ties = 0;
	char s1[32], s2[32];

	for (unsigned m = 0; m < NMODES; m++)
		print_mode(b, m, &v[m]);
	printf("\nengine: wc_pmem_memcpy + wc_pmem_drain; best: the fastest loop written here "
	       "(pmem2 aside)\nratios: median over runs of (other time / engine time) in the "
	       "same run, > 1 = engine faster;\n        ~ short of the goal within the "
	       "run-to-run spread (a tie), ! short of it\n");
	for (unsigned m = 0; m < NMODES; m++) {
		printf("%-7s: lowest eng/best %.3f at %s (upper quartile %.3f), lowest eng/pmem2 "
		       "%.3f at %s (upper quartile %.3f)\n", m ? "batched" : "fenced",
		       v[m].min_best, size_str(s1, sizeof(s1), v[m].at_best), v[m].q3_best,
		       v[m].min_pmem2, size_str(s2, sizeof(s2), v[m].at_pmem2), v[m].q3_pmem2);
		misses += v[m].misses;
		ties += v[m].ties;
	}
	printf("goal (eng/best >= %.2f and eng/pmem2 >= %.2f at every size, both modes): ",
	       GOAL_BEST, GOAL_PMEM2);
	if (misses)
		printf("NOT met (%u missed, %u tied)\n", misses, ties);
	else if (ties)
		printf("met within noise (%u tie%s)\n", ties, ties == 1 ? "" : "s");
	else
		printf("met\n");
	return misses == 0;
}

static const char *gran_name(enum pmem2_granularity g)
{
	return g == PMEM2_GRANULARITY_BYTE ? "BYTE" :
	       g == PMEM2_GRANULARITY_CACHE_LINE ? "CACHE_LINE" : "PAGE";
}

static void print_header(const struct bench *b, const struct wc_pmem_info *in)
{
	char s1[32];

	printf("flushref: the engine through its public functions against reference loops "
	       "written here\ncpu: %s family 0x%x model 0x%x stepping %u, line %u B\n",
	       in->vendor, in->family, in->model, in->stepping, in->line_size);
	printf("engine policy: small %s, large %s, threshold ", in->small_strategy,
	       in->large_strategy);
	if (in->threshold == SIZE_MAX)
		printf("none (non-temporal at every size)");
	else
		printf("%zu B", in->threshold);
	printf(" -- %s\ncolumns:", in->reason);
	for (unsigned ci = 0; ci < b->ncols; ci++)
		printf(" %s", b->col[ci].name);
	printf("\ndestination: %s, %s region, granularity %s\n", b->path,
	       size_str(s1, sizeof(s1), b->region), gran_name(b->gran));
	if (b->forced_gran)
		printf("note: PMEM2_FORCE_GRANULARITY was unset; flushref set it to CACHE_LINE so "
		       "the real flush paths run (on DRAM: not power-fail safe)\n");
	if (b->gran != PMEM2_GRANULARITY_CACHE_LINE)
		printf("note: at %s granularity pmem2_memcpy takes its %s path: eng/pmem2 does not "
		       "compare flush paths\n", gran_name(b->gran),
		       b->gran == PMEM2_GRANULARITY_BYTE ? "no-flush" : "msync");
	printf("method: %.3g ms samples, %u runs of %u slices, a random order per slice\n",
	       b->time_ms, b->runs, b->slices);
	fflush(stdout);
}

/* ---- options -------------------------------------------------------------- */

static void usage(void)
{
	printf("usage: flushref [options]\n"
	       "The flush engine (wc_pmem_memcpy + wc_pmem_drain) against reference loops\n"
	       "written here (each strategy the CPU has) and libpmem2's pmem2_memcpy, fenced\n"
	       "after every copy and once per 64 copies, interleaved in one run.\n"
	       "  --min, --max BYTES  copy sizes measured (64 B to 16 MiB: the default)\n"
	       "  --runs N            runs per size, medians reported (default 7, <= %d)\n"
	       "  --slices N          passes over all cells per run (default 5, <= %d)\n"
	       "  --time-ms MS        length of one sample (default 4)\n"
	       "  --pmem PATH         destination file or DAX device, overwritten (default\n"
	       "                      /dev/shm/flushref.pmem, created and removed)\n"
	       "  --size BYTES        region the copies stream through (default 256M: more\n"
	       "                      than the last-level cache)\n"
	       "  --check             exit 1 unless eng/best >= %.2f and eng/pmem2 >= %.2f\n"
	       "                      at every size, both modes (a shortfall within the\n"
	       "                      run-to-run spread is a tie)\n"
	       "BYTES take a K, M or G suffix.  PMEM2_FORCE_GRANULARITY, if unset, is set\n"
	       "to CACHE_LINE.  The engine honours the WC_PMEM_* environment.\n",
	       MAX_RUNS, MAX_SLICES, GOAL_BEST, GOAL_PMEM2);
}

static int parse_args(struct bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "min", required_argument, NULL, 'n' }, { "max", required_argument, NULL, 'x' },
		{ "size", required_argument, NULL, 'z' }, { "runs", required_argument, NULL, 'r' },
		{ "slices", required_argument, NULL, 's' }, { "time-ms", required_argument, NULL, 't' },
		{ "pmem", required_argument, NULL, 'p' }, { "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	unsigned long long v;
	int o, idx = 0;
	char *end;

	b->min = 64;
	b->max = 16u << 20;
	b->region = 256u << 20;
	b->runs = 7;
	b->slices = 5;
	b->time_ms = 4;
	b->path = "/dev/shm/flushref.pmem";
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":h", opts, &idx)) != -1) {
		bool ok = true;

		switch (o) {
		case 'n': case 'x': case 'z':
			if ((ok = parse_num(optarg, true, SIZE_MAX, &v)))
				*(o == 'n' ? &b->min : o == 'x' ? &b->max : &b->region) = (size_t)v;
			break;
		case 'r': case 's':
			ok = parse_num(optarg, false, o == 'r' ? MAX_RUNS : MAX_SLICES, &v) && v;
			*(o == 'r' ? &b->runs : &b->slices) = (unsigned)v;
			break;
		case 't':
			errno = 0;
			b->time_ms = strtod(optarg, &end);
			ok = end != optarg && !*end && !errno && b->time_ms > 0 && b->time_ms <= 10000;
			break;
		case 'p': b->path = optarg; break;
		case 'c': b->check = true; break;
		case 'h': usage(); exit(0);
		case ':':
			fprintf(stderr, "flushref: %s needs a value (see --help)\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "flushref: unknown option %s (see --help)\n", argv[optind - 1]);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "flushref: bad value for --%s: '%s' (see --help)\n",
			        opts[idx].name, optarg);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "flushref: unexpected argument '%s' (see --help)\n", argv[optind]);
		return 2;
	}
	for (unsigned i = 0; i < NSIZES; i++)
		if (all_sizes[i] >= b->min && all_sizes[i] <= b->max)
			b->sizes[b->nsizes++] = all_sizes[i];
	if (!b->nsizes) {
		fprintf(stderr, "flushref: no copy size between --min %zu and --max %zu (sizes are "
		        "64 B to 16 MiB)\n", b->min, b->max);
		return 2;
	}
	b->max = b->sizes[b->nsizes - 1];
	if (b->region < b->max || b->region % (size_t)sysconf(_SC_PAGESIZE)) {
		fprintf(stderr, "flushref: --size %zu must be a multiple of the page size and at "
		        "least the largest copy, %zu\n", b->region, b->max);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof(*b));
	struct wc_pmem_info info;
	int status = 1;

	if (!b) {
		fprintf(stderr, "flushref: out of memory\n");
		return 1;
	}
	if ((status = parse_args(b, argc, argv)) != 0) {
		free(b);
		return status;
	}
	status = 1;
	b->fd = -1;
	make_columns(b);
	if (map_destination(b) != 0)
		goto out;
	if (wc_pmem_info(&info) != 0) {
		fprintf(stderr, "flushref: wc_pmem_info: %s\n", wc_errmsg());
		goto out;
	}
	if (!(b->source = aligned_alloc(64, b->max))) {
		fprintf(stderr, "flushref: source buffer of %zu bytes: out of memory\n", b->max);
		goto out;
	}
	for (size_t i = 0; i < b->max; i++)
		b->source[i] = (char)(i * 167 + 13);
	/* Every page faulted in, and every line written back, before any
	 * timing: the first column must not pay for them. */
	wc_pmem_memset(b->dst, 0, b->region);
	wc_pmem_drain();

	print_header(b, &info);
	measure(b);
	status = (report(b) || !b->check) ? 0 : 1;
out:
	free(b->source);
	unmap_destination(b);
	free(b);
	return status;
}
