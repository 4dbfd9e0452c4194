/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wbtest.c -- what the write-back tests share (see the header).
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#include "wbtest.h"

char cache_path[PATH_MAX];

void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

void make_cache_file(uint64_t blocks)
{
	struct wc_layout l;

	ck_assert_int_eq(wc_layout_for_blocks(&l, blocks, BS), 0);
	ct_make_file(cache_path, sizeof(cache_path), "wb.pmem", l.bytes_used);
}

struct fault_origin *new_origin(uint64_t blocks)
{
	struct fault_origin *fo = NULL;

	ck_assert_int_eq(fault_origin_create(&fo, blocks * BS, 512), 0);
	return fo;
}

void parse_opts(struct wc_config *cfg, const char *opts, bool open)
{
	wc_config_init(cfg);
	if (open)
		cfg->block_size = 0;
	ck_assert_msg(wc_config_parse(cfg, opts) == 0, "options \"%s\": %s", opts ? opts : "",
	              wc_errmsg());
}

bool wbtest_sync_flush;
struct wc_origin (*wbtest_wrap_origin)(struct wc_origin o);

static struct wc_origin origin_of(struct fault_origin *fo)
{
	struct wc_origin o = wbtest_sync_flush ? fault_origin_origin_sync_flush(fo) : fault_origin_origin(fo);

	return wbtest_wrap_origin ? wbtest_wrap_origin(o) : o;
}

wc_cache *create_on(struct fault_origin *fo, uint64_t cache_blocks, const char *opts)
{
	struct wc_config cfg;
	struct wc_stats st;
	wc_cache *c = NULL;
	int ret;

	make_cache_file(cache_blocks);
	parse_opts(&cfg, opts, false);
	ret = wc_create_origin(&c, cache_path, origin_of(fo), &cfg);
	ck_assert_msg(ret == 0, "wc_create_origin: %d %s", ret, wc_errmsg());
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.blocks, cache_blocks);
	return c;
}

wc_cache *reopen_on(struct fault_origin *fo, const char *opts)
{
	struct wc_config cfg;
	wc_cache *c = NULL;
	int ret;

	parse_opts(&cfg, opts, true);
	ret = wc_open_origin(&c, cache_path, origin_of(fo), &cfg);
	ck_assert_msg(ret == 0, "wc_open_origin: %d %s", ret, wc_errmsg());
	return c;
}

char block_path[PATH_MAX];

void block_file(const char *name)
{
	const char *dir = getenv("WC_TEST_DISK_DIR");

	snprintf(block_path, sizeof(block_path), "%s/%s-%d.cache", dir && *dir ? dir : "/var/tmp", name,
	         (int)getpid());
	unlink(block_path);
}

wc_cache *create_block_on(struct fault_origin *fo, const char *name, uint32_t cache_bytes,
                          const char *opts)
{
	struct wc_config cfg;
	char all[256];
	wc_cache *c = NULL;
	int ret;

	block_file(name);
	snprintf(all, sizeof(all), "medium=block,cache_size=%u%s%s", cache_bytes, opts && *opts ? "," : "",
	         opts ? opts : "");
	parse_opts(&cfg, all, false);
	ret = wc_create_origin(&c, block_path, fault_origin_origin(fo), &cfg);
	ck_assert_msg(ret == 0, "block medium: %s", wc_errmsg());
	return c;
}

wc_cache *reopen_block_on(struct fault_origin *fo, const char *opts)
{
	struct wc_config cfg;
	wc_cache *c = NULL;

	if (opts)
		parse_opts(&cfg, opts, true);
	ck_assert_msg(wc_open_origin(&c, block_path, fault_origin_origin(fo), opts ? &cfg : NULL) == 0, "%s",
	              wc_errmsg());
	return c;
}

struct wc_stats stats(wc_cache *c)
{
	struct wc_stats st;

	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	return st;
}

struct fault_origin_counters counters(struct fault_origin *fo)
{
	struct fault_origin_counters n;

	fault_origin_get_counters(fo, &n);
	return n;
}

struct model *model_new(uint64_t blocks)
{
	struct model *m = calloc(1, sizeof(*m));

	m->blocks = blocks;
	m->v = malloc(blocks * sizeof(*m->v));
	for (uint64_t b = 0; b < blocks; b++)
		m->v[b] = NEVER;
	m->next = 1;
	m->buf = aligned_alloc(4096, 16 * BS);
	m->rd = aligned_alloc(4096, 16 * BS);
	return m;
}

void model_free(struct model *m)
{
	free(m->v);
	free(m->buf);
	free(m->rd);
	free(m);
}

ssize_t model_try_write(wc_cache *c, struct model *m, uint64_t b, unsigned n, unsigned flags)
{
	ssize_t r;

	ck_assert_uint_le(n, 16);
	for (unsigned i = 0; i < n; i++)
		ct_fill_block(m->buf + (size_t)i * BS, BS, b + i, m->next);
	r = wc_write(c, m->buf, (size_t)n * BS, b * BS, flags);
	if (r == (ssize_t)n * BS)
		for (unsigned i = 0; i < n; i++)
			m->v[b + i] = m->next;
	m->next++;
	return r;
}

void model_write(wc_cache *c, struct model *m, uint64_t b, unsigned n, unsigned flags)
{
	ssize_t r = model_try_write(c, m, b, n, flags);

	ck_assert_msg(r == (ssize_t)n * BS, "write of %u blocks at block %llu: %zd (%s)", n,
	              (unsigned long long)b, r, wc_errmsg());
}

void assert_block(const uint8_t *data, uint64_t b, uint64_t want, const char *where)
{
	uint64_t got = ct_block_version(data, BS, b);

	ck_assert_msg(got == want, "%s: block %llu holds version %lld, the model says %lld", where,
	              (unsigned long long)b, (long long)got, (long long)want);
}

void model_check_cache(wc_cache *c, struct model *m, const char *where)
{
	for (uint64_t b = 0; b < m->blocks; b += 16) {
		unsigned n = m->blocks - b < 16 ? (unsigned)(m->blocks - b) : 16;

		ck_assert_msg(wc_read(c, m->rd, (size_t)n * BS, b * BS) == (ssize_t)n * BS,
		              "%s: read at block %llu: %s", where, (unsigned long long)b, wc_errmsg());
		for (unsigned i = 0; i < n; i++)
			assert_block(m->rd + (size_t)i * BS, b + i, m->v[b + i], where);
	}
}

void model_check_image(const struct model *m, const uint8_t *img, const char *where)
{
	for (uint64_t b = 0; b < m->blocks; b++)
		assert_block(img + b * BS, b, m->v[b], where);
}

void model_check_origin(const struct model *m, struct fault_origin *fo)
{
	model_check_image(m, fault_origin_volatile(fo), "origin (volatile image)");
	model_check_image(m, fault_origin_durable(fo), "origin (durable image)");
}

void assert_clean(wc_cache *c)
{
	struct wc_stats st = stats(c);

	ck_assert_int_eq(st.error, 0);
	ck_assert_uint_eq(st.dirty_blocks, 0);
	ck_assert_uint_eq(st.writeback_blocks, 0);
	ck_assert_uint_eq(st.free_blocks, st.blocks);
}

void random_workload(wc_cache *c, struct model *m, uint64_t seed, unsigned ops,
                     unsigned poll_every)
{
	uint64_t s = seed;

	for (unsigned op = 0; op < ops; op++) {
		uint64_t r = ct_rand(&s) % 100, b = ct_rand(&s) % m->blocks;
		unsigned n = 1 + (unsigned)(ct_rand(&s) % 4);

		if (b + n > m->blocks)
			n = (unsigned)(m->blocks - b);
		if (r < 70) {
			model_write(c, m, b, n, ct_rand(&s) % 16 ? 0 : WC_FUA);
		} else if (r < 90) {
			ck_assert_int_eq(wc_read(c, m->rd, (size_t)n * BS, b * BS), (ssize_t)n * BS);
			for (unsigned i = 0; i < n; i++)
				assert_block(m->rd + (size_t)i * BS, b + i, m->v[b + i], "workload read");
		} else {
			ck_assert_msg(wc_flush(c) == 0, "flush: %s", wc_errmsg());
		}
		if (poll_every && op % poll_every == 0) {
			int p = wc_poll(c, 4);

			ck_assert_msg(p >= 0 || (p == -EIO && stats(c).error == 0), "wc_poll: %d %s", p,
			              wc_errmsg());
		}
	}
}

bool wait_for(wc_cache *c, bool (*cond)(wc_cache *c), unsigned max_ms)
{
	for (unsigned waited = 0; waited < max_ms; waited += 5) {
		if (cond(c))
			return true;
		sleep_ms(5);
	}
	return cond(c);
}

bool all_free(wc_cache *c)
{
	struct wc_stats st = stats(c);

	return st.free_blocks == st.blocks && st.dirty_blocks == 0;
}
