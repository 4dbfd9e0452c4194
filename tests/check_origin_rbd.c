/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_origin_rbd.c -- the RBD origin against a real single-node cluster
 * (tests/ceph/up; see ceph_testutil.h for which one): round trips, vectored
 * requests, several threads submitting and polling at once with done()
 * exactly once, callbacks that resubmit, discard, bad requests, every way
 * opening can fail (each leaving no thread or descriptor behind), and a
 * cache in front of an image: write-back, reopen, an image shrunk under it.
 */
#include "config.h"

#ifdef WC_HAVE_LIBRBD

#include <dirent.h>
#include <pthread.h>

#include "ceph_testutil.h"
#include "origin_testutil.h"

#define IMAGE_SIZE (64ull * MiB)
#define OBJECT_SIZE (4ull * MiB) /* order 22, as ceph_image_create makes them */

static void open_rbd(struct wc_origin *o, const char *image)
{
	char spec[PATH_MAX + 256];
	int ret = wc_origin_open(o, ceph_spec(spec, sizeof(spec), image));

	ck_assert_msg(ret == 0, "open %s: %d %s", spec, ret, wc_errmsg());
}

static void roundtrip(struct wc_origin *o, size_t len, uint64_t off, uint64_t seed)
{
	uint8_t *w = aligned_buf(len), *r = aligned_buf(len);

	fill_pattern(w, len, seed);
	memset(r, 0, len);
	sync_write(o, w, len, off);
	ck_assert_int_eq(wc_origin_rw_sync(o, WC_ORIGIN_READ, r, len, off), 0);
	ck_assert_msg(memcmp(w, r, len) == 0, "%zu bytes at %llu differ", len,
	              (unsigned long long)off);
	free(w);
	free(r);
}

static void expect_bytes(struct wc_origin *o, uint64_t off, size_t len, uint64_t seed, bool zero)
{
	uint8_t *want = aligned_buf(len), *got = aligned_buf(len);

	if (zero)
		memset(want, 0, len);
	else
		fill_pattern(want, len, seed);
	ck_assert_int_eq(wc_origin_rw_sync(o, WC_ORIGIN_READ, got, len, off), 0);
	ck_assert_msg(memcmp(want, got, len) == 0, "%zu bytes at %llu differ", len,
	              (unsigned long long)off);
	free(want);
	free(got);
}

static unsigned count_dir(const char *path)
{
	DIR *d = opendir(path);
	unsigned n = 0;

	ck_assert(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Threads and descriptors of this process: a failed open must give back
 * every one librados took. */
struct footprint {
	unsigned fds, threads;
};

static struct footprint footprint(void)
{
	return (struct footprint){ count_dir("/proc/self/fd"), count_dir("/proc/self/task") };
}

/* --------------------------------------------------------- round trips */

START_TEST(test_roundtrip_and_reopen)
{
	char name[64], spec[PATH_MAX + 256], want[256];
	struct wc_origin o;
	uint64_t size = 0;

	ceph_image_create(ceph_image_name(name, sizeof(name), "rt"), IMAGE_SIZE);
	open_rbd(&o, name);
	ck_assert_int_eq(wc_origin_check(&o), 0);
	ck_assert_int_eq(wc_origin_size(&o, &size), 0);
	ck_assert_uint_eq(size, IMAGE_SIZE);
	ck_assert_uint_eq(wc_origin_alignment(&o), 512);
	snprintf(want, sizeof(want), "librbd rbd:%s/%s (conf ", ceph_test_cluster_pool(), name);
	ck_assert_msg(strncmp(wc_origin_describe(&o), want, strlen(want)) == 0, "%s",
	              wc_origin_describe(&o));

	roundtrip(&o, 4096, 0, 1);
	roundtrip(&o, 512, IMAGE_SIZE - 512, 2);         /* the last sector */
	roundtrip(&o, 1 * MiB, OBJECT_SIZE - 512 * 1024, 3); /* across two objects */
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	wc_origin_close(&o);

	/* Another client sees it; the "rbd:" prefix is optional here. */
	snprintf(spec, sizeof(spec), "%s/%s:conf=%s:id=%s", ceph_test_cluster_pool(), name,
	         ceph_cl_.conf, ceph_cl_.id);
	ck_assert_msg(wc_origin_open_rbd(&o, spec) == 0, "%s: %s", spec, wc_errmsg());
	expect_bytes(&o, 0, 4096, 1, false);
	expect_bytes(&o, IMAGE_SIZE - 512, 512, 2, false);
	expect_bytes(&o, OBJECT_SIZE - 512 * 1024, 1 * MiB, 3, false);
	expect_bytes(&o, 8 * MiB, 64 * 1024, 0, true); /* never written: zeros */
	wc_origin_close(&o);
	ceph_image_remove(name);
}
END_TEST

START_TEST(test_vectored)
{
	static uint8_t a[4096] IO_ALIGNED, b[8192] IO_ALIGNED, c[512] IO_ALIGNED;
	static uint8_t r1[512] IO_ALIGNED, r2[12288] IO_ALIGNED;
	struct iovec wv[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { c, sizeof(c) } };
	struct iovec rv[2] = { { r1, sizeof(r1) }, { r2, sizeof(r2) } };
	struct wc_origin_io io = { .op = WC_ORIGIN_WRITE, .iov = wv, .iovcnt = 3,
	                           .offset = 3 * 512 };
	uint8_t whole[sizeof(a) + sizeof(b) + sizeof(c)], got[sizeof(whole)];
	struct one_done d;
	char name[64];
	struct wc_origin o;

	fill_pattern(a, sizeof(a), 11);
	fill_pattern(b, sizeof(b), 12);
	fill_pattern(c, sizeof(c), 13);
	memcpy(whole, a, sizeof(a));
	memcpy(whole + sizeof(a), b, sizeof(b));
	memcpy(whole + sizeof(a) + sizeof(b), c, sizeof(c));
	ceph_image_create(ceph_image_name(name, sizeof(name), "vec"), IMAGE_SIZE);
	open_rbd(&o, name);
	submit_and_wait(&o, &io, &d);
	ck_assert_int_eq(d.res, (ssize_t)sizeof(whole));
	io = (struct wc_origin_io){ .op = WC_ORIGIN_READ, .iov = rv, .iovcnt = 2, .offset = 3 * 512 };
	submit_and_wait(&o, &io, &d);
	ck_assert_int_eq(d.res, (ssize_t)sizeof(whole));
	memcpy(got, r1, sizeof(r1));
	memcpy(got + sizeof(r1), r2, sizeof(r2));
	ck_assert(memcmp(got, whole, sizeof(whole)) == 0);
	wc_origin_close(&o);
	ceph_image_remove(name);
}
END_TEST

/* ------------------------------------------------------- concurrency */

#define CONC_THREADS 4
#define CONC_QD 8
#define CONC_IOS 200 /* per thread, 4 KiB each, in a region of its own */

struct conc_req {
	struct wc_origin_io io;
	struct iovec iov;
	atomic_int calls;
	ssize_t res;
	struct conc_thread *t;
};

struct conc_thread {
	pthread_t tid;
	struct wc_origin *o;
	unsigned idx;
	atomic_int outstanding;
	struct conc_req req[CONC_IOS];
	uint8_t *buf;
};

static atomic_int conc_completed;

static void conc_done(struct wc_origin_io *io, ssize_t res)
{
	struct conc_req *r = io->priv;

	r->res = res;
	atomic_fetch_add(&r->calls, 1);
	atomic_fetch_sub(&r->t->outstanding, 1);
	atomic_fetch_add(&conc_completed, 1);
}

static void *conc_main(void *arg)
{
	struct conc_thread *t = arg;
	uint64_t base = (uint64_t)t->idx * CONC_IOS * 4096;

	for (unsigned i = 0; i < CONC_IOS; i++) {
		/* Scattered inside the region: offsets i * 37 mod CONC_IOS. */
		unsigned slot = (i * 37) % CONC_IOS;
		struct conc_req *r = &t->req[i];

		while (atomic_load(&t->outstanding) >= CONC_QD)
			ck_assert_int_ge(wc_origin_poll(t->o, 1, 1000000), 0);
		r->t = t;
		r->iov = (struct iovec){ t->buf + (size_t)slot * 4096, 4096 };
		r->io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = &r->iov, .iovcnt = 1,
		                               .offset = base + (uint64_t)slot * 4096,
		                               .done = conc_done, .priv = r };
		atomic_fetch_add(&t->outstanding, 1);
		ck_assert_int_eq(wc_origin_submit(t->o, &r->io), 0);
	}
	/* Everyone's completions, not only ours: keep polling until all of
	 * them ran, wherever they ran. */
	while (atomic_load(&conc_completed) < CONC_THREADS * CONC_IOS)
		ck_assert_int_ge(wc_origin_poll(t->o, 1, 1000000), 0);
	return NULL;
}

START_TEST(test_concurrent_pollers)
{
	struct conc_thread *t = calloc(CONC_THREADS, sizeof(*t));
	size_t region = (size_t)CONC_IOS * 4096;
	struct wc_origin o;
	char name[64];

	ck_assert(t != NULL);
	atomic_init(&conc_completed, 0);
	ceph_image_create(ceph_image_name(name, sizeof(name), "conc"), IMAGE_SIZE);
	open_rbd(&o, name);
	for (unsigned i = 0; i < CONC_THREADS; i++) {
		t[i].o = &o;
		t[i].idx = i;
		t[i].buf = aligned_buf(region);
		fill_pattern(t[i].buf, region, 100 + i);
		atomic_init(&t[i].outstanding, 0);
		ck_assert_int_eq(pthread_create(&t[i].tid, NULL, conc_main, &t[i]), 0);
	}
	for (unsigned i = 0; i < CONC_THREADS; i++)
		pthread_join(t[i].tid, NULL);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	for (unsigned i = 0; i < CONC_THREADS; i++) {
		for (unsigned j = 0; j < CONC_IOS; j++) {
			ck_assert_int_eq(atomic_load(&t[i].req[j].calls), 1);
			ck_assert_int_eq(t[i].req[j].res, 4096);
		}
		expect_bytes(&o, (uint64_t)i * region, region, 100 + i, false);
		free(t[i].buf);
	}
	wc_origin_close(&o);
	free(t);
	ceph_image_remove(name);
}
END_TEST

/* done() may submit again: it runs outside the backend's lock. */
struct chain {
	uint8_t buf[4096] IO_ALIGNED;
	struct wc_origin *o;
	struct wc_origin_io io;
	struct iovec iov;
	atomic_int remaining;
};

static void chain_done(struct wc_origin_io *io, ssize_t res)
{
	struct chain *ch = io->priv;

	ck_assert_int_eq(res, 4096);
	if (atomic_fetch_sub(&ch->remaining, 1) > 1) {
		io->offset += 4096;
		ck_assert_int_eq(wc_origin_submit(ch->o, io), 0);
	}
}

START_TEST(test_callbacks_resubmit)
{
	struct chain *ch = aligned_buf(sizeof(*ch));
	struct wc_origin o;
	char name[64];

	ceph_image_create(ceph_image_name(name, sizeof(name), "chain"), IMAGE_SIZE);
	open_rbd(&o, name);
	memset(ch, 0, sizeof(*ch));
	ch->o = &o;
	ch->iov = (struct iovec){ ch->buf, sizeof(ch->buf) };
	ch->io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = &ch->iov, .iovcnt = 1,
	                                .done = chain_done, .priv = ch };
	atomic_init(&ch->remaining, 32);
	ck_assert_int_eq(wc_origin_submit(&o, &ch->io), 0);
	while (atomic_load(&ch->remaining) > 0)
		ck_assert_int_ge(wc_origin_poll(&o, 1, 1000000000ull), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	wc_origin_close(&o);
	free(ch);
	ceph_image_remove(name);
}
END_TEST

START_TEST(test_poll_idle)
{
	struct wc_origin o;
	char name[64];
	uint64_t t0;

	ceph_image_create(ceph_image_name(name, sizeof(name), "idle"), IMAGE_SIZE);
	open_rbd(&o, name);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 1, 0), 0);
	t0 = mono_ns();
	ck_assert_int_eq(wc_origin_poll(&o, 1, 20000000ull), 0);
	ck_assert_uint_ge(mono_ns() - t0, 19000000ull);
	ck_assert_uint_lt(mono_ns() - t0, 2000000000ull);
	wc_origin_close(&o);
	ceph_image_remove(name);
}
END_TEST

START_TEST(test_discard)
{
	uint8_t *w = aligned_buf(2 * OBJECT_SIZE);
	struct wc_origin o;
	char name[64];

	ceph_image_create(ceph_image_name(name, sizeof(name), "discard"), IMAGE_SIZE);
	open_rbd(&o, name);
	fill_pattern(w, 2 * OBJECT_SIZE, 7);
	sync_write(&o, w, 2 * OBJECT_SIZE, 0);
	/* A whole object: librbd removes it, and it reads as zeros. */
	ck_assert_int_eq(wc_origin_discard(&o, 0, OBJECT_SIZE), 0);
	expect_bytes(&o, 0, 64 * 1024, 0, true);
	expect_bytes(&o, OBJECT_SIZE - 4096, 4096, 0, true);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, w, 4096, OBJECT_SIZE), 0);
	ck_assert_int_eq(wc_origin_discard(&o, 0, 0), 0);
	ck_assert_int_eq(wc_origin_discard(&o, IMAGE_SIZE - 4096, 8192), -EINVAL);
	ck_assert(strstr(wc_errmsg(), "beyond the end"));
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	wc_origin_close(&o);
	free(w);
	ceph_image_remove(name);
}
END_TEST

/* -------------------------------------------------------- bad requests */

/* Submit `io` changed by the arguments (op 0 = write, len 0 = as is):
 * refused with -EINVAL and a message naming `what` and the image. */
static void refused(struct wc_origin *o, struct wc_origin_io io, const char *image,
                    const char *what, uint64_t offset, int op, int iovcnt, size_t len)
{
	struct iovec iov = io.iov[0];

	io.offset = offset;
	if (op)
		io.op = (enum wc_origin_op)op;
	io.iovcnt = iovcnt;
	if (len)
		iov.iov_len = len;
	io.iov = &iov;
	ck_assert_int_eq(wc_origin_submit(o, &io), -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), what), "%s", wc_errmsg());
	ck_assert_msg(strstr(wc_errmsg(), image), "%s", wc_errmsg());
}

START_TEST(test_bad_requests)
{
	static uint8_t buf[8192] IO_ALIGNED;
	struct iovec iov = { buf, 4096 };
	struct wc_origin_io io;
	struct one_done d;
	struct wc_origin o;
	char name[64];

	ceph_image_create(ceph_image_name(name, sizeof(name), "bad"), IMAGE_SIZE);
	open_rbd(&o, name);
	atomic_init(&d.calls, 0);
	io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = &iov, .iovcnt = 1,
	                            .done = one_done_cb, .priv = &d };
	refused(&o, io, name, "offset not aligned", 100, 0, 1, 0);
	refused(&o, io, name, "beyond the end", IMAGE_SIZE - 512, 0, 1, 0);
	refused(&o, io, name, "beyond the end", IMAGE_SIZE + 4096, 0, 1, 0);
	refused(&o, io, name, "iovcnt 0", 0, 0, 0, 0);
	refused(&o, io, name, "iovcnt -1", 0, 0, -1, 0);
	refused(&o, io, name, "unknown op", 0, 7, 1, 0);
	refused(&o, io, name, "not a multiple of 512", 0, 0, 1, 1000);
	io.done = NULL;
	refused(&o, io, name, "no done()", 0, 0, 1, 0);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	ck_assert_int_eq(atomic_load(&d.calls), 0);
	/* Buffers need no alignment: librbd copies. */
	iov.iov_base = buf + 1;
	io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = &iov, .iovcnt = 1 };
	submit_and_wait(&o, &io, &d);
	ck_assert_int_eq(d.res, 4096);
	wc_origin_close(&o);
	ceph_image_remove(name);
}
END_TEST

/* --------------------------------------------------------- open errors */

/* Open `spec` and expect `code` with `what` in the message, in less than
 * `max_s` seconds, leaving no thread or descriptor behind. */
static void expect_open_error(const char *spec, int code, const char *what, unsigned max_s)
{
	struct footprint before = footprint(), after;
	struct wc_origin o = { 0 };
	uint64_t t0 = mono_ns();
	int ret = wc_origin_open(&o, spec);
	double s = (double)(mono_ns() - t0) / 1e9;

	ck_assert_msg(ret == code, "%s: %d (want %d) %s", spec, ret, code, wc_errmsg());
	ck_assert_msg(strstr(wc_errmsg(), what), "%s: '%s' lacks '%s'", spec, wc_errmsg(), what);
	ck_assert_msg(s < max_s, "%s: took %.1f s", spec, s);
	ck_assert(o.ops == NULL);
	after = footprint();
	ck_assert_msg(after.fds == before.fds && after.threads == before.threads,
	              "%s: %u fds %u threads before, %u and %u after", spec, before.fds,
	              before.threads, after.fds, after.threads);
}

START_TEST(test_open_errors)
{
	char name[64], spec[PATH_MAX + 256], other[PATH_MAX + 256];
	const char *conf = ceph_cl_.conf, *id = ceph_cl_.id, *pool = ceph_test_cluster_pool();
	struct wc_origin o, o2;

	ceph_image_create(ceph_image_name(name, sizeof(name), "err"), IMAGE_SIZE);
	/* Whatever librados starts once per process, before counting. */
	open_rbd(&o, name);
	wc_origin_close(&o);

	expect_open_error("rbd:", -EINVAL, "no pool name", 2);
	snprintf(spec, sizeof(spec), "rbd:nopool-%d/%s:conf=%s:id=%s", (int)getpid(), name, conf, id);
	expect_open_error(spec, -ENOENT, "does not exist", 30);
	snprintf(spec, sizeof(spec), "rbd:%s/no-such-image:conf=%s:id=%s", pool, conf, id);
	expect_open_error(spec, -ENOENT, "image 'no-such-image' does not exist in pool", 30);
	snprintf(spec, sizeof(spec), "rbd:%s/%s@snap1:conf=%s:id=%s", pool, name, conf, id);
	expect_open_error(spec, -EROFS, "read-only", 2);
	snprintf(spec, sizeof(spec), "rbd:%s/%s:conf=/nonexistent/ceph.conf", pool, name);
	expect_open_error(spec, -ENOENT, "reading conf /nonexistent/ceph.conf", 2);
	snprintf(spec, sizeof(spec), "rbd:%s/%s:conf=%s:id=%s:no_such_option=1", pool, name, conf, id);
	expect_open_error(spec, -EINVAL, "option 'no_such_option'", 2);
	snprintf(spec, sizeof(spec), "rbd:%s/%s:conf=%s:id=%s:rbd_cache=maybe", pool, name, conf, id);
	expect_open_error(spec, -EINVAL, "option 'rbd_cache'", 2);
	snprintf(spec, sizeof(spec), "rbd:%s/%s:conf=%s:id=nobody-%d", pool, name, conf, (int)getpid());
	expect_open_error(spec, -EACCES, "refused client.nobody", 30);

	/* Held by another client: refused at once, naming the holder. */
	open_rbd(&o, name);
	ceph_spec(other, sizeof(other), name);
	expect_open_error(other, -EBUSY, "in use", 30);
	ck_assert(wc_origin_open(&o2, other) == -EBUSY);
	wc_origin_close(&o);
	open_rbd(&o, name); /* free again once closed */
	wc_origin_close(&o);
	ceph_image_remove(name);
}
END_TEST

START_TEST(test_unreachable_cluster)
{
	char spec[PATH_MAX + 256];

	/* Nothing listens on port 1: refused connections, retried until the
	 * bound.  The spec's own bound, then this backend's default (10 s;
	 * librados alone would wait 300). */
	snprintf(spec, sizeof(spec), "rbd:wc/img:mon_host=127.0.0.1\\:1:client_mount_timeout=2");
	expect_open_error(spec, -ETIMEDOUT, "client_mount_timeout=2 s", 8);
	snprintf(spec, sizeof(spec), "rbd:wc/img:mon_host=127.0.0.1\\:1");
	expect_open_error(spec, -ETIMEDOUT, "no monitor answered within client_mount_timeout=10", 20);
}
END_TEST

/* ---------------------------------------------- a cache in front of it */

START_TEST(test_cache_over_rbd)
{
	char name[64], spec[PATH_MAX + 256], cache[TEST_PATH_LEN];
	struct wc_config cfg;
	struct wc_stats st;
	struct wc_origin o;
	uint8_t *w = aligned_buf(2 * MiB), *r = aligned_buf(2 * MiB);
	wc_cache *c;
	int ret;

	ceph_image_create(ceph_image_name(name, sizeof(name), "cache"), 32 * MiB);
	ceph_spec(spec, sizeof(spec), name);
	wc_test_path(cache, sizeof(cache), "rbd-cache");
	wc_config_init(&cfg);
	cfg.cache_size = 16 * MiB;
	ret = wc_create(&c, cache, spec, &cfg);
	ck_assert_msg(ret == 0, "wc_create over %s: %d %s", spec, ret, wc_errmsg());
	ck_assert_uint_eq(wc_size(c), 32 * MiB);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(strstr(st.origin_mode, "librbd rbd:"), "%s", st.origin_mode);
	fill_pattern(w, 2 * MiB, 21);
	ck_assert_int_eq(wc_write(c, w, 2 * MiB, 4 * MiB, WC_FUA), 2 * MiB);
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_close(c), 0);

	/* The image alone holds it. */
	open_rbd(&o, name);
	expect_bytes(&o, 4 * MiB, 2 * MiB, 21, false);
	wc_origin_close(&o);

	/* Reopen: what is cached and what is not read the same. */
	ret = wc_open(&c, cache, spec, NULL);
	ck_assert_msg(ret == 0, "wc_open: %d %s", ret, wc_errmsg());
	ck_assert_int_eq(wc_read(c, r, 2 * MiB, 4 * MiB), 2 * MiB);
	ck_assert(memcmp(w, r, 2 * MiB) == 0);
	ck_assert_int_eq(wc_close(c), 0);

	/* An image shrunk under the cache is refused, and the cache is left
	 * as it was (its blocks may belong past the new end). */
	ceph_image_resize(name, 16 * MiB);
	ret = wc_open(&c, cache, spec, NULL);
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), "the cache was formatted for 33554432"), "%s", wc_errmsg());
	ceph_image_resize(name, 32 * MiB);
	ret = wc_open(&c, cache, spec, NULL);
	ck_assert_msg(ret == 0, "wc_open after growing back: %d %s", ret, wc_errmsg());
	ck_assert_int_eq(wc_close(c), 0);
	free(w);
	free(r);
	ceph_image_remove(name);
}
END_TEST

static Suite *rbd_suite(void)
{
	Suite *s = suite_create("origin_rbd");
	TCase *io = tcase_create("io"), *open = tcase_create("open"), *cache = tcase_create("cache");

	tcase_add_test(io, test_roundtrip_and_reopen);
	tcase_add_test(io, test_vectored);
	tcase_add_test(io, test_concurrent_pollers);
	tcase_add_test(io, test_callbacks_resubmit);
	tcase_add_test(io, test_poll_idle);
	tcase_add_test(io, test_discard);
	tcase_add_test(io, test_bad_requests);
	tcase_set_timeout(io, 120);
	suite_add_tcase(s, io);
	tcase_add_test(open, test_open_errors);
	tcase_add_test(open, test_unreachable_cluster);
	tcase_set_timeout(open, 120);
	suite_add_tcase(s, open);
	tcase_add_test(cache, test_cache_over_rbd);
	tcase_set_timeout(cache, 120);
	suite_add_tcase(s, cache);
	return s;
}

int main(void)
{
	ceph_test_cluster();
	return wc_test_main(rbd_suite());
}

#else /* !WC_HAVE_LIBRBD */

#include "testmain.h"

int main(void)
{
	return wc_test_skip_all("libwcache built without librbd (apt-get install librbd-dev librados-dev)");
}

#endif
