/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_model.c -- self-identifying block patterns and the model of what a
 * recovered cache may present (contract in crash_model.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "crash_model.h"

#define PATTERN_MAGIC 0x5450485352434357ull /* "WCCRSHPT" */

/* ---- patterns ---- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t pattern_hash(uint64_t block, uint64_t version)
{
	return mix64(PATTERN_MAGIC ^ mix64(block * 0x9e3779b97f4a7c15ull + version));
}

/* Word i of the body: the header hash, varied per 512-byte sector.  Two
 * versions differ in every word, so a tear at any granularity shows; the
 * sector term catches data landing a sector off; and a block compresses to
 * almost nothing, so crash images kept as regression tests stay small. */
static inline uint64_t body_word(uint64_t hash, size_t i)
{
	return hash ^ ((uint64_t)(i / 64) * 0x9e3779b97f4a7c15ull);
}

static void pattern_words(uint64_t *w, size_t n, uint64_t block, uint64_t version)
{
	uint64_t h = pattern_hash(block, version);

	w[0] = PATTERN_MAGIC;
	w[1] = block;
	w[2] = version;
	w[3] = h;
	for (size_t i = 4; i < n; i++)
		w[i] = body_word(h, i);
}

void wc_pattern_fill(void *buf, uint32_t block_size, uint64_t block, uint64_t version)
{
	pattern_words(buf, block_size / 8, block, version);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

enum wc_pattern_kind wc_pattern_decode(const void *buf, uint32_t block_size, uint64_t block,
                                       uint64_t *version)
{
	const uint64_t *w = buf;
	size_t n = block_size / 8;

	if (w[0] != PATTERN_MAGIC || w[1] != block || w[3] != pattern_hash(block, w[2]))
		return all_zero(buf, block_size) ? WC_PATTERN_ZERO : WC_PATTERN_GARBAGE;
	for (size_t i = 4; i < n; i++)
		if (w[i] != body_word(w[3], i))
			return WC_PATTERN_GARBAGE;
	*version = w[2];
	return WC_PATTERN_OK;
}

/* ---- the model ---- */

enum { CALL_WRITE = 'w', CALL_DISCARD = 'd', EVENT_ACK = 'a' };

struct event {
	char kind;
	uint64_t first, count;
};

struct block_history {
	uint64_t *calls; /* numbers of the calls that wrote or discarded it, ascending */
	size_t n, cap;
};

struct wc_model {
	uint64_t n_blocks;
	uint32_t block_size;
	struct event *calls;     /* [0] unused: calls count from 1 */
	size_t ncalls, cap_calls;
	struct event *log;       /* calls and acks, in order (for save) */
	size_t nlog, cap_log;
	uint64_t acked;
	struct block_history *hist;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	void *q;
	size_t c;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

int wc_model_new(struct wc_model **out, uint64_t n_blocks, uint32_t block_size)
{
	struct wc_model *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->n_blocks = n_blocks;
	m->block_size = block_size;
	m->hist = calloc(n_blocks, sizeof(*m->hist));
	if (!m->hist || grow((void **)&m->calls, &m->cap_calls, 1, sizeof(*m->calls)) != 0) {
		wc_model_free(m);
		return -ENOMEM;
	}
	m->ncalls = 0;
	*out = m;
	return 0;
}

void wc_model_free(struct wc_model *m)
{
	if (!m)
		return;
	for (uint64_t b = 0; m->hist && b < m->n_blocks; b++)
		free(m->hist[b].calls);
	free(m->hist);
	free(m->calls);
	free(m->log);
	free(m);
}

static void log_event(struct wc_model *m, char kind, uint64_t first, uint64_t count)
{
	if (grow((void **)&m->log, &m->cap_log, m->nlog + 1, sizeof(*m->log)) != 0)
		abort();
	m->log[m->nlog++] = (struct event){ kind, first, count };
}

static uint64_t add_call(struct wc_model *m, char kind, uint64_t first, uint64_t count)
{
	uint64_t num = m->ncalls + 1;

	if (count == 0 || first >= m->n_blocks || count > m->n_blocks - first)
		abort(); /* a bug in the workload, not in the cache */
	if (grow((void **)&m->calls, &m->cap_calls, num + 1, sizeof(*m->calls)) != 0)
		abort();
	m->calls[num] = (struct event){ kind, first, count };
	m->ncalls = num;
	for (uint64_t b = first; b < first + count; b++) {
		struct block_history *h = &m->hist[b];

		if (grow((void **)&h->calls, &h->cap, h->n + 1, sizeof(*h->calls)) != 0)
			abort();
		h->calls[h->n++] = num;
	}
	log_event(m, kind, first, count);
	return num;
}

uint64_t wc_model_write(struct wc_model *m, uint64_t first, uint64_t count)
{
	return add_call(m, CALL_WRITE, first, count);
}

uint64_t wc_model_discard(struct wc_model *m, uint64_t first, uint64_t count)
{
	return add_call(m, CALL_DISCARD, first, count);
}

void wc_model_ack_upto(struct wc_model *m, uint64_t n)
{
	if (n > m->ncalls)
		n = m->ncalls;
	if (m->acked >= n)
		return;
	m->acked = n;
	log_event(m, EVENT_ACK, n, 0);
}

void wc_model_ack(struct wc_model *m)
{
	wc_model_ack_upto(m, m->ncalls);
}

struct wc_window wc_model_window(const struct wc_model *m)
{
	return (struct wc_window){ .lo = m->acked, .hi = m->ncalls };
}

uint64_t wc_model_blocks(const struct wc_model *m)
{
	return m->n_blocks;
}

uint32_t wc_model_block_size(const struct wc_model *m)
{
	return m->block_size;
}

/* The last call <= j that touched block b (0 = none). */
static uint64_t last_call(const struct wc_model *m, uint64_t b, uint64_t j)
{
	const struct block_history *h = &m->hist[b];
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->calls[mid] <= j)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? h->calls[lo - 1] : 0;
}

uint64_t wc_model_current(const struct wc_model *m, uint64_t b)
{
	uint64_t c = last_call(m, b, m->ncalls);

	if (c == 0)
		return 0;
	return m->calls[c].kind == CALL_WRITE ? c : UINT64_MAX;
}

static bool covers(const struct event *e, uint64_t b)
{
	return b >= e->first && b - e->first < e->count;
}

/* Was block b discarded by a call <= w.hi (so that, for some j, anything
 * goes)? */
static bool discarded_in(const struct wc_model *m, uint64_t b, struct wc_window w)
{
	const struct block_history *h = &m->hist[b];

	for (size_t i = 0; i < h->n && h->calls[i] <= w.hi; i++)
		if (m->calls[h->calls[i]].kind == CALL_DISCARD)
			return true;
	return false;
}

struct found {
	enum wc_pattern_kind kind;
	uint64_t version;
};

/* May block b hold `f` after calls 1..c applied, c being a write or discard
 * of b (or 0)? */
static bool accepts_after(const struct wc_model *m, uint64_t c, uint64_t j, struct found f)
{
	if (c == 0)
		return f.kind == WC_PATTERN_OK && f.version == 0;
	if (m->calls[c].kind == CALL_WRITE)
		return f.kind == WC_PATTERN_OK && f.version == c;
	/* Discarded: the origin's content, i.e. anything once written
	 * (validated by the caller), zeros, or a mix of both: a device may
	 * discard some sectors of a block and not others before a power cut. */
	return f.kind != WC_PATTERN_OK || f.version <= j;
}

static bool accepts(const struct wc_model *m, uint64_t b, uint64_t j, uint64_t hi, struct found f)
{
	if (accepts_after(m, last_call(m, b, j), j, f))
		return true;
	/* Call j+1 may have been committed in part. */
	return j + 1 <= hi && covers(&m->calls[j + 1], b) && accepts_after(m, j + 1, j + 1, f);
}

static void describe(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void describe(char *why, size_t len, const char *fmt, ...)
{
	size_t used = strlen(why);
	va_list ap;

	if (used >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(why + used, len - used, fmt, ap);
	va_end(ap);
}

static void describe_found(char *why, size_t len, struct found f)
{
	if (f.kind == WC_PATTERN_ZERO)
		describe(why, len, "zeros");
	else if (f.kind == WC_PATTERN_GARBAGE)
		describe(why, len, "torn data");
	else
		describe(why, len, "v%" PRIu64, f.version);
}

static void describe_expected(const struct wc_model *m, char *why, size_t len, uint64_t b,
                              uint64_t j)
{
	uint64_t c = last_call(m, b, j);

	if (c == 0)
		describe(why, len, "v0");
	else if (m->calls[c].kind == CALL_WRITE)
		describe(why, len, "v%" PRIu64, c);
	else
		describe(why, len, "discarded by call %" PRIu64, c);
}

bool wc_model_check(const struct wc_model *m, struct wc_window w, const uint8_t *blocks,
                    char *why, size_t why_len)
{
	struct found *f = calloc(m->n_blocks, sizeof(*f));
	uint64_t best_j = w.hi, best_bad = UINT64_MAX;
	bool ok = true;

	if (why_len)
		why[0] = '\0';
	if (!f)
		abort();
	for (uint64_t b = 0; b < m->n_blocks; b++) {
		const uint8_t *data = blocks + b * (uint64_t)m->block_size;

		f[b].kind = wc_pattern_decode(data, m->block_size, b, &f[b].version);
		if (f[b].kind == WC_PATTERN_GARBAGE && !discarded_in(m, b, w)) {
			const uint64_t *hdr = (const uint64_t *)data;

			describe(why, why_len, "block %" PRIu64 " torn or foreign (header block %" PRIu64
			         " v%" PRIu64 "); ", b, hdr[1], hdr[2]);
			ok = false;
		} else if (f[b].kind == WC_PATTERN_OK && f[b].version != 0 &&
		           (f[b].version > w.hi || m->calls[f[b].version].kind != CALL_WRITE ||
		            !covers(&m->calls[f[b].version], b))) {
			describe(why, why_len, "block %" PRIu64 " holds v%" PRIu64
			         ", a version never written to it; ", b, f[b].version);
			ok = false;
		}
	}
	if (!ok) {
		free(f);
		return false;
	}
	/* The newest consistent prefix is the likely one; any will do. */
	for (uint64_t j = w.hi + 1; j-- > w.lo;) {
		uint64_t bad = 0;

		for (uint64_t b = 0; b < m->n_blocks && bad <= best_bad; b++)
			if (!accepts(m, b, j, w.hi, f[b]))
				bad++;
		if (bad == 0) {
			free(f);
			return true;
		}
		if (bad < best_bad) {
			best_bad = bad;
			best_j = j;
		}
	}
	describe(why, why_len, "no single commit point in calls [%" PRIu64 ", %" PRIu64 "] explains"
	         " the blocks; closest: after call %" PRIu64 " with %" PRIu64 " block(s) off:",
	         w.lo, w.hi, best_j, best_bad);
	for (uint64_t b = 0, shown = 0; b < m->n_blocks && shown < 6; b++) {
		if (accepts(m, b, best_j, w.hi, f[b]))
			continue;
		describe(why, why_len, " block %" PRIu64 " has ", b);
		describe_found(why, why_len, f[b]);
		describe(why, why_len, " want ");
		describe_expected(m, why, why_len, b, best_j);
		describe(why, why_len, ";");
		shown++;
	}
	free(f);
	return false;
}

int wc_model_save(const struct wc_model *m, FILE *f)
{
	fprintf(f, "blocks %" PRIu64 " block_size %u\n", m->n_blocks, m->block_size);
	for (size_t i = 0; i < m->nlog; i++) {
		const struct event *e = &m->log[i];

		if (e->kind == EVENT_ACK)
			fprintf(f, "a %" PRIu64 "\n", e->first);
		else
			fprintf(f, "%c %" PRIu64 " %" PRIu64 "\n", e->kind, e->first, e->count);
	}
	return ferror(f) ? -EIO : 0;
}

int wc_model_load(struct wc_model **out, FILE *f)
{
	struct wc_model *m;
	uint64_t n, first, count;
	unsigned bs;
	char line[128], kind;
	int ret;

	if (fscanf(f, "blocks %" SCNu64 " block_size %u\n", &n, &bs) != 2 || n == 0 || bs < 512 ||
	    bs % 8 != 0)
		return -EINVAL;
	ret = wc_model_new(&m, n, bs);
	if (ret)
		return ret;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == 'a' && (line[1] == '\n' || line[1] == '\0')) {
			wc_model_ack(m);
			continue;
		}
		if (sscanf(line, "a %" SCNu64, &first) == 1) {
			wc_model_ack_upto(m, first);
			continue;
		}
		if (sscanf(line, "%c %" SCNu64 " %" SCNu64, &kind, &first, &count) != 3 ||
		    (kind != CALL_WRITE && kind != CALL_DISCARD) || count == 0 || first >= n ||
		    count > n - first) {
			wc_model_free(m);
			return -EINVAL;
		}
		add_call(m, kind, first, count);
	}
	*out = m;
	return 0;
}
