/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_origin_ops.c -- an embedder's origin with the ops table of 0.5,
 * through the shared library and wcache.h only, as an embedder has them.
 *
 * The origin is a libaio origin seen through the embedder's table, which
 * counts every op the cache asks for.  A table declaring
 * WC_ORIGIN_CAP_ASYNC_FLUSH gets flush requests (WC_ORIGIN_FLUSH) from
 * write-back; one without it never gets that op, and neither does one
 * with it passed to the function named wc_create_origin (the 0.4 entry
 * point, which reads only 0.4's table).  identify() gives the identity the
 * cache records, shows in wc_stats.origin_identity and checks at open.
 * Tables with a bad ops_size, unknown capability bits, a capability
 * without its op or reserved slots set are refused before anything is
 * touched, with a message naming the field.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testmain.h"
#include "wcache.h"

#define MiB (1024u * 1024u)
#define BS 4096u
#define ORIGIN (8u * MiB)
#define CACHE (4u * MiB)
#define BLOCKS 32u

/* ------------------------------------------------- the embedder's origin */

struct counted {
	struct wc_origin inner; /* the libaio origin behind it */
	unsigned long writes, reads, flush_requests, flushes, other_ops;
	unsigned long bad_flush_requests; /* with iov, iovcnt or offset set */
	/* identify() */
	const char *id, *name;
	unsigned kind;
	int identify_error;
	unsigned long identifies;
	unsigned identify_flags;
};

static void count(unsigned long *n)
{
	__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
}

static unsigned long counted_get(unsigned long *n)
{
	return __atomic_load_n(n, __ATOMIC_RELAXED);
}

static int c_size(void *ctx, uint64_t *bytes)
{
	struct counted *o = ctx;

	return o->inner.ops->size(o->inner.ctx, bytes);
}

static int c_submit(void *ctx, struct wc_origin_io *io)
{
	struct counted *o = ctx;

	switch (io->op) {
	case WC_ORIGIN_WRITE:
		count(&o->writes);
		break;
	case WC_ORIGIN_READ:
		count(&o->reads);
		break;
	case WC_ORIGIN_FLUSH:
		count(&o->flush_requests);
		if (io->iov || io->iovcnt || io->offset)
			count(&o->bad_flush_requests);
		break;
	default:
		count(&o->other_ops);
		return -EINVAL;
	}
	/* libaio takes flush requests: it makes the writes durable. */
	return o->inner.ops->submit(o->inner.ctx, io);
}

static int c_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	struct counted *o = ctx;

	return o->inner.ops->poll(o->inner.ctx, min_events, timeout_ns);
}

static int c_flush(void *ctx)
{
	struct counted *o = ctx;

	count(&o->flushes);
	return o->inner.ops->flush(o->inner.ctx);
}

static void c_close(void *ctx)
{
	struct counted *o = ctx;

	o->inner.ops->close(o->inner.ctx);
	o->inner.ops = NULL;
}

static uint32_t c_alignment(void *ctx)
{
	struct counted *o = ctx;

	return o->inner.ops->alignment(o->inner.ctx);
}

static const char *c_describe(void *ctx)
{
	(void)ctx;
	return "embedder origin";
}

static int c_identify(void *ctx, struct wc_origin_identity *out, unsigned flags)
{
	struct counted *o = ctx;

	count(&o->identifies);
	o->identify_flags = flags;
	if (o->identify_error)
		return o->identify_error;
	out->kind = o->kind;
	if (o->id)
		snprintf(out->id, sizeof(out->id), "%s", o->id);
	if (o->name)
		snprintf(out->name, sizeof(out->name), "%s", o->name);
	return 0;
}

#define COUNTED_OPS                                                                   \
	.size = c_size, .submit = c_submit, .poll = c_poll, .flush = c_flush,          \
	.close = c_close, .alignment = c_alignment, .describe = c_describe

static const struct wc_origin_ops async_ops = {
	WC_ORIGIN_OPS_INIT,
	COUNTED_OPS,
	.caps = WC_ORIGIN_CAP_ASYNC_FLUSH,
};

static const struct wc_origin_ops sync_ops = {
	WC_ORIGIN_OPS_INIT,
	COUNTED_OPS,
};

static const struct wc_origin_ops identify_ops = {
	WC_ORIGIN_OPS_INIT,
	COUNTED_OPS,
	.caps = WC_ORIGIN_CAP_IDENTIFY,
	.identify = c_identify,
};

/* ------------------------------------------------------------- helpers */

static char cache_path[PATH_MAX], origin_path[PATH_MAX];

static void setup(void)
{
	int fd;

	wc_test_path(origin_path, sizeof(origin_path), "origin");
	wc_test_path(cache_path, sizeof(cache_path), "cache");
	unlink(cache_path);
	fd = open(origin_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_msg(fd >= 0 && ftruncate(fd, ORIGIN) == 0, "origin %s", origin_path);
	close(fd);
}

static void teardown(void)
{
	unlink(cache_path);
	unlink(origin_path);
}

static struct wc_origin counted_open(struct counted *o, const struct wc_origin_ops *ops)
{
	struct counted keep = *o;
	int ret;

	memset(o, 0, sizeof(*o));
	o->id = keep.id;
	o->name = keep.name;
	o->kind = keep.kind;
	o->identify_error = keep.identify_error;
	ret = wc_origin_open_aio(&o->inner, origin_path, 0);
	ck_assert_msg(ret == 0, "open %s: %d %s", origin_path, ret, wc_errmsg());
	return (struct wc_origin){ .ops = ops, .ctx = o };
}

static struct wc_config config(void)
{
	struct wc_config cfg;

	wc_config_init(&cfg);
	cfg.cache_size = CACHE;
	return cfg;
}

static wc_cache *create(struct counted *o, const struct wc_origin_ops *ops)
{
	struct wc_config cfg = config();
	wc_cache *c = NULL;
	int ret = wc_create_origin(&c, cache_path, counted_open(o, ops), &cfg);

	ck_assert_msg(ret == 0, "wc_create_origin: %d %s", ret, wc_errmsg());
	return c;
}

/* BLOCKS dirty blocks, all written back to the origin and made durable. */
static void write_back(wc_cache *c)
{
	void *buf;

	ck_assert_int_eq(posix_memalign(&buf, 4096, BS), 0);
	for (unsigned b = 0; b < BLOCKS; b++) {
		memset(buf, 'a' + (int)(b % 26), BS);
		ck_assert_int_eq(wc_write(c, buf, BS, (uint64_t)b * 2 * BS, 0), BS);
	}
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_msg(wc_writeback(c) == 0, "wc_writeback: %s", wc_errmsg());
	free(buf);
}

static void assert_no_cache_file(void)
{
	struct stat st;

	ck_assert_msg(stat(cache_path, &st) < 0 && errno == ENOENT, "%s was created", cache_path);
}

/* ------------------------------------------------------ flush requests */

START_TEST(test_async_flush_requests)
{
	struct counted o = { 0 };
	wc_cache *c = create(&o, &async_ops);

	write_back(c);
	ck_assert_uint_ge(counted_get(&o.writes), 1);
	ck_assert_msg(counted_get(&o.flush_requests) >= 1,
	              "write-back sent no WC_ORIGIN_FLUSH (flush() called %lu times)",
	              counted_get(&o.flushes));
	ck_assert_uint_eq(counted_get(&o.bad_flush_requests), 0);
	ck_assert_uint_eq(counted_get(&o.other_ops), 0);
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_ptr_null(o.inner.ops); /* the cache closed it */
}
END_TEST

START_TEST(test_no_capability_no_flush_requests)
{
	struct counted o = { 0 };
	wc_cache *c = create(&o, &sync_ops);

	write_back(c);
	ck_assert_uint_ge(counted_get(&o.writes), 1);
	ck_assert_uint_ge(counted_get(&o.flushes), 1);
	ck_assert_uint_eq(counted_get(&o.flush_requests), 0);
	ck_assert_uint_eq(counted_get(&o.other_ops), 0);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* The function under the 0.4 name (what a program built before 0.5 binds,
 * and what dlsym finds) reads only 0.4's table: the capability is not
 * seen, and the origin gets no op it might not know. */
#undef wc_create_origin
START_TEST(test_old_entry_point_reads_old_table)
{
	struct counted o = { 0 };
	struct wc_config cfg = config();
	wc_cache *c = NULL;
	int ret = wc_create_origin(&c, cache_path, counted_open(&o, &async_ops), &cfg);

	ck_assert_msg(ret == 0, "wc_create_origin: %d %s", ret, wc_errmsg());
	write_back(c);
	ck_assert_uint_ge(counted_get(&o.flushes), 1);
	ck_assert_uint_eq(counted_get(&o.flush_requests), 0);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST
#define wc_create_origin wc_create_origin_sized

/* ------------------------------------------------------------ identify */

START_TEST(test_identify_recorded)
{
	struct counted o = { .id = "emb-vol-42", .name = "volume-x" };
	struct wc_config cfg = config();
	struct wc_stats st;
	wc_cache *c = create(&o, &identify_ops);

	ck_assert_uint_ge(counted_get(&o.identifies), 1);
	ck_assert_uint_eq(o.identify_flags, WC_ORIGIN_IDENTIFY_MAY_TAG); /* at create */
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(st.origin_identity && strstr(st.origin_identity, "volume-x (emb-vol-42"),
	              "%s", st.origin_identity);
	write_back(c);
	ck_assert_int_eq(wc_close(c), 0);

	/* The same id under another name: the same origin, renamed. */
	o.name = "volume-y";
	cfg.cache_size = 0;
	ck_assert_msg(wc_open_origin(&c, cache_path, counted_open(&o, &identify_ops), &cfg) == 0,
	              "%s", wc_errmsg());
	ck_assert_uint_eq(o.identify_flags, 0); /* an open only reads */
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(strstr(st.origin_identity, "volume-y (emb-vol-42"), "%s", st.origin_identity);
	ck_assert_int_eq(wc_close(c), 0);

	/* Another id: another origin, refused, both named. */
	o.id = "emb-vol-43";
	{
		struct wc_origin other = counted_open(&o, &identify_ops);

		ck_assert_int_eq(wc_open_origin(&c, cache_path, other, &cfg), -EXDEV);
		ck_assert_msg(strstr(wc_errmsg(), "emb-vol-42") && strstr(wc_errmsg(), "emb-vol-43"),
		              "%s", wc_errmsg());
		other.ops->close(other.ctx); /* still ours */
	}
}
END_TEST

START_TEST(test_identify_name_defaults_to_describe)
{
	struct counted o = { .id = "emb-vol-7" };
	struct wc_stats st;
	wc_cache *c = create(&o, &identify_ops);

	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(strstr(st.origin_identity, "embedder origin (emb-vol-7"), "%s",
	              st.origin_identity);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

START_TEST(test_identify_failures)
{
	struct counted o = { .identify_error = -EIO };
	struct wc_config cfg = config();
	struct wc_origin org = counted_open(&o, &identify_ops);
	wc_cache *c = NULL;

	ck_assert_int_eq(wc_create_origin(&c, cache_path, org, &cfg), -EIO);
	ck_assert_msg(strstr(wc_errmsg(), "embedder origin") && strstr(wc_errmsg(), "identify()"),
	              "%s", wc_errmsg());
	org.ops->close(org.ctx);
	unlink(cache_path);

	o = (struct counted){ .id = "x", .kind = 99 };
	org = counted_open(&o, &identify_ops);
	ck_assert_int_eq(wc_create_origin(&c, cache_path, org, &cfg), -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), "kind 99"), "%s", wc_errmsg());
	org.ops->close(org.ctx);
}
END_TEST

/* ---------------------------------------------------------- bad tables */

/* A table followed by room, for ops_size beyond this header's. */
struct big_table {
	struct wc_origin_ops ops;
	uint64_t later[2];
};

static void refused(const struct wc_origin_ops *ops, const char *what)
{
	struct counted o = { 0 };
	struct wc_config cfg = config();
	struct wc_origin org = counted_open(&o, ops);
	wc_cache *c = (wc_cache *)&o;
	int ret;

	ret = wc_create_origin(&c, cache_path, org, &cfg);
	ck_assert_msg(ret == -EINVAL, "%s: wc_create_origin returned %d", what, ret);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(wc_errmsg(), what) && strstr(wc_errmsg(), "struct wc_origin_ops") &&
	              strstr(wc_errmsg(), "embedder origin") && strstr(wc_errmsg(), cache_path),
	              "message lacks \"%s\", the struct, the origin or the cache: %s", what,
	              wc_errmsg());
	assert_no_cache_file();
	ck_assert_uint_eq(counted_get(&o.writes) + counted_get(&o.reads), 0);
	/* The caller still owns the origin. */
	ck_assert_ptr_nonnull(o.inner.ops);
	org.ops->close(org.ctx);

	/* wc_open_origin checks the same. */
	org = counted_open(&o, ops);
	ck_assert_int_eq(wc_open_origin(&c, cache_path, org, &cfg), -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), what), "%s", wc_errmsg());
	org.ops->close(org.ctx);
}

static void accepted(const struct wc_origin_ops *ops, const char *what)
{
	struct counted o = { 0 };
	struct wc_config cfg = config();
	wc_cache *c = NULL;
	int ret = wc_create_origin(&c, cache_path, counted_open(&o, ops), &cfg);

	ck_assert_msg(ret == 0, "%s: %d %s", what, ret, wc_errmsg());
	ck_assert_int_eq(wc_close(c), 0);
	unlink(cache_path);
}

START_TEST(test_bad_tables)
{
	static struct big_table big;
	struct wc_origin_ops t;

	t = sync_ops;
	t.ops_size = 8;
	refused(&t, "ops_size 8 ");
	t.ops_size = sizeof(t) + 4;
	refused(&t, "is not the size");
	t.ops_size = 1u << 20;
	refused(&t, "is not the size");

	/* Larger than this header's, from a newer one: what this library
	 * does not know must be 0. */
	big.ops = sync_ops;
	big.ops.ops_size = sizeof(big);
	big.later[1] = 1;
	refused(&big.ops, "newer libwcache");
	big.later[1] = 0;
	accepted(&big.ops, "a larger table, zero past this library's");

	t = sync_ops;
	t.caps = 1ull << 40;
	refused(&t, "0x10000000000");
	t.caps = WC_ORIGIN_CAP_IDENTIFY; /* without identify() */
	refused(&t, "identify is NULL");
	t.caps = 0;
	t.identify = c_identify; /* without the capability */
	refused(&t, "lacks WC_ORIGIN_CAP_IDENTIFY");

	t = sync_ops;
	t.reserved[2] = (void (*)(void))c_close;
	refused(&t, "reserved[2]");

	/* ops_size 0: a table written for 0.4, built with this header.  It
	 * works as before; 0.5's fields must then stay 0. */
	t = sync_ops;
	t.ops_size = 0;
	accepted(&t, "ops_size 0");
	t.caps = WC_ORIGIN_CAP_ASYNC_FLUSH;
	refused(&t, "ops_size is 0");
}
END_TEST

static Suite *origin_ops_suite(void)
{
	Suite *s = suite_create("origin_ops");
	TCase *t = tcase_create("flush");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_async_flush_requests);
	tcase_add_test(t, test_no_capability_no_flush_requests);
	tcase_add_test(t, test_old_entry_point_reads_old_table);
	suite_add_tcase(s, t);

	t = tcase_create("identify");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_identify_recorded);
	tcase_add_test(t, test_identify_name_defaults_to_describe);
	tcase_add_test(t, test_identify_failures);
	suite_add_tcase(s, t);

	t = tcase_create("check");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_bad_tables);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return wc_test_main(origin_ops_suite());
}
