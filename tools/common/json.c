/* SPDX-License-Identifier: BSD-3-Clause */
/* json.c -- the JSON writer of wctools.h. */
#include <inttypes.h>
#include <math.h>

#include "wcache.h"
#include "wctools.h"

void wct_json_string(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void wct_json_init(struct wct_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	j->pretty[0] = false;
}

/* The separator, line break and key before a value. */
static void member(struct wct_json *j, const char *key)
{
	unsigned d = j->depth;

	if (d) {
		if (!j->first[d])
			fputc(',', j->f);
		if (j->pretty[d])
			fprintf(j->f, "\n%*s", (int)(2 * d), "");
		else if (!j->first[d])
			fputc(' ', j->f);
	}
	j->first[d] = false;
	if (key) {
		wct_json_string(j->f, key);
		fputs(": ", j->f);
	}
}

static void open_container(struct wct_json *j, const char *key, bool pretty, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < WCT_JSON_DEPTH) {
		j->depth++;
		j->first[j->depth] = true;
		j->pretty[j->depth] = pretty;
		j->close[j->depth] = c == '{' ? '}' : ']';
	}
}

void wct_json_object(struct wct_json *j, const char *key, bool pretty)
{
	open_container(j, key, pretty, '{');
}

void wct_json_array(struct wct_json *j, const char *key, bool pretty)
{
	open_container(j, key, pretty, '[');
}

void wct_json_end(struct wct_json *j)
{
	unsigned d = j->depth;

	if (!d)
		return;
	if (j->pretty[d] && !j->first[d])
		fprintf(j->f, "\n%*s", (int)(2 * (d - 1)), "");
	fputc(j->close[d], j->f);
	j->depth--;
	if (!j->depth)
		fputc('\n', j->f);
}

void wct_json_str(struct wct_json *j, const char *key, const char *s)
{
	member(j, key);
	wct_json_string(j->f, s);
}

void wct_json_u64(struct wct_json *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void wct_json_int(struct wct_json *j, const char *key, long long v)
{
	member(j, key);
	fprintf(j->f, "%lld", v);
}

void wct_json_num(struct wct_json *j, const char *key, const char *fmt, double v)
{
	member(j, key);
	if (isfinite(v))
		fprintf(j->f, fmt, v);
	else
		fputs("null", j->f);
}

void wct_json_bool(struct wct_json *j, const char *key, bool v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void wct_json_null(struct wct_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

void wct_json_threshold(struct wct_json *j, const char *key, size_t t)
{
	if (t == SIZE_MAX)
		wct_json_null(j, key);
	else
		wct_json_u64(j, key, t);
}

void wct_json_cpu(struct wct_json *j, const struct wc_pmem_info *in)
{
	wct_json_str(j, "vendor", in->vendor);
	wct_json_u64(j, "family", in->family);
	wct_json_u64(j, "model", in->model);
	wct_json_u64(j, "stepping", in->stepping);
	wct_json_u64(j, "line_size", in->line_size);
}

void wct_json_stats(struct wct_json *j, const struct wc_stats *st)
{
#define STAT(name) wct_json_u64(j, #name, st->name)
	STAT(blocks); STAT(free_blocks); STAT(dirty_blocks); STAT(writeback_blocks);
	STAT(reads); STAT(read_hits); STAT(writes); STAT(write_hits_uncommitted);
	STAT(write_hits_committed); STAT(writes_around); STAT(writes_allocate);
	STAT(writes_blocked_on_freelist); STAT(flushes); STAT(discards); STAT(commits);
	STAT(writeback_ios); STAT(writeback_bytes); STAT(writeback_errors); STAT(dram_bytes);
	STAT(writeback_window); STAT(writeback_latency_us); STAT(readahead_blocks);
	STAT(writeback_failing_ms); STAT(writer_slots);
#undef STAT
	wct_json_int(j, "writeback_last_error", st->writeback_last_error);
	wct_json_str(j, "origin_identity", st->origin_identity);
}
