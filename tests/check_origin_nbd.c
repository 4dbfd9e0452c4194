/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_origin_nbd.c -- the NBD origin against nbdkit on a unix socket:
 * round trips through the memory and file plugins (long, scattered and
 * empty requests, flush, trim), many requests in flight, threads that
 * submit and poll at once, multi-conn on and off, bad URIs and requests,
 * and a server that dies (a flush then reports what its loss may have
 * dropped), hangs or comes back.  The cache over NBD is in
 * check_cache_nbd.c.  Without nbdkit the program skips (plan 1..0).
 */
#include <pthread.h>

#include "nbdkit_testutil.h"
#include "origin/origin.h"

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void open_nbd(struct wc_origin *o, const char *uri, const struct wc_origin_nbd_opts *opts)
{
	int ret = wc_origin_open_nbd_opts(o, uri, opts);

	ck_assert_msg(ret == 0, "open %s: %d %s", uri, ret, wc_errmsg());
}

static void roundtrip(struct wc_origin *o, size_t len, uint64_t off, uint64_t seed)
{
	uint8_t *w = aligned_buf(len), *r = aligned_buf(len);

	fill_pattern(w, len, seed);
	memset(r, 0, len);
	sync_write(o, w, len, off);
	ck_assert_msg(wc_origin_rw_sync(o, WC_ORIGIN_READ, r, len, off) == 0, "read: %s", wc_errmsg());
	ck_assert(memcmp(w, r, len) == 0);
	free(w);
	free(r);
}

static bool is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Lines of nbdkit's log filter output that contain `what`. */
static int log_count(const char *logfile, const char *what)
{
	char cmd[TEST_PATH_LEN + 128];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "grep -c -- '%s' '%s'", what, logfile);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* ------------------------------------------------------------ round trips */

START_TEST(test_memory_roundtrip)
{
	struct nbdkit k;
	struct wc_origin o;
	uint64_t size = 0;
	uint8_t *a = aligned_buf(4096), *b = aligned_buf(8192), *c = aligned_buf(4096);
	uint8_t *all = aligned_buf(20480), *got = aligned_buf(65536);

	nbdkit_start(&k, "mem", ARGS("memory", "96M"));
	/* By name, as wc_create takes it. */
	ck_assert_msg(wc_origin_open(&o, k.uri) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_origin_check(&o), 0);
	ck_assert_int_eq(wc_origin_size(&o, &size), 0);
	ck_assert_uint_eq(size, 96 * MiB);
	ck_assert_uint_eq(wc_origin_alignment(&o), 512); /* nbdkit's memory says nothing */
	ck_assert(strncmp(wc_origin_describe(&o), "nbd nbd+unix:///?socket=", 24) == 0);
	ck_assert_msg(strstr(wc_origin_describe(&o), "(4 connections, multi-conn)"), "%s",
	              wc_origin_describe(&o));

	roundtrip(&o, 4096, 0, 1);
	roundtrip(&o, 512, 96 * MiB - 512, 2);        /* the last sector */
	roundtrip(&o, 1 * MiB, 3 * MiB, 3);
	roundtrip(&o, 40 * MiB, 8 * MiB, 4);          /* above one command's 32 MiB */

	/* Scattered pieces (a bounce copy) land back to back, and read back
	 * into other scattered pieces. */
	{
		struct iovec wv[3] = { { a, 4096 }, { b, 8192 }, { c, 4096 } };
		struct iovec rv[2] = { { all, 4096 }, { all + 8192, 12288 } };
		struct wc_origin_io io = { .op = WC_ORIGIN_WRITE, .iov = wv, .iovcnt = 3, .offset = 65536 };
		struct one_done d;

		fill_pattern(a, 4096, 10);
		fill_pattern(b, 8192, 11);
		fill_pattern(c, 4096, 12);
		submit_and_wait(&o, &io, &d);
		ck_assert_int_eq(d.res, 16384);
		memset(all, 0, 20480);
		io = (struct wc_origin_io){ .op = WC_ORIGIN_READ, .iov = rv, .iovcnt = 2, .offset = 65536 };
		submit_and_wait(&o, &io, &d);
		ck_assert_int_eq(d.res, 16384);
		ck_assert(memcmp(all, a, 4096) == 0);
		ck_assert(memcmp(all + 8192, b, 8192) == 0);
		ck_assert(memcmp(all + 16384, c, 4096) == 0);

		/* Pieces that are contiguous in memory go as they are. */
		fill_pattern(got, 16384, 13);
		wv[0] = (struct iovec){ got, 4096 };
		wv[1] = (struct iovec){ got + 4096, 12288 };
		io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = wv, .iovcnt = 2, .offset = 131072 };
		submit_and_wait(&o, &io, &d);
		ck_assert_int_eq(d.res, 16384);
		ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, all, 16384, 131072), 0);
		ck_assert(memcmp(all, got, 16384) == 0);

		/* An empty request completes, with 0 bytes. */
		wv[0] = (struct iovec){ got, 0 };
		io = (struct wc_origin_io){ .op = WC_ORIGIN_WRITE, .iov = wv, .iovcnt = 1, .offset = 0 };
		submit_and_wait(&o, &io, &d);
		ck_assert_int_eq(d.res, 0);
	}
	ck_assert_int_eq(wc_origin_flush(&o), 0);

	/* Trim: the memory plugin reads zeros where it trimmed. */
	ck_assert_msg(wc_origin_discard(&o, 0, 65536) == 0, "%s", wc_errmsg());
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, got, 65536, 0), 0);
	ck_assert(is_zero(got, 65536));
	ck_assert_int_eq(wc_origin_discard(&o, 0, 0), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	wc_origin_close(&o);
	nbdkit_stop(&k);
	free(a);
	free(b);
	free(c);
	free(all);
	free(got);
}
END_TEST

/* The file plugin: what the origin wrote is in the file, read without NBD. */
START_TEST(test_file_roundtrip)
{
	char path[TEST_PATH_LEN];
	struct nbdkit k;
	struct wc_origin o;
	uint8_t *w = aligned_buf(256 * 1024), *r = aligned_buf(256 * 1024);

	make_file(wc_test_path(path, sizeof(path), "file-export"), 8 * MiB);
	nbdkit_start(&k, "file", ARGS("file", path));
	open_nbd(&o, k.uri, NULL);
	fill_pattern(w, 256 * 1024, 20);
	sync_write(&o, w, 256 * 1024, 1 * MiB);
	sync_write(&o, w, 4096, 8 * MiB - 4096);
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	read_file(path, r, 256 * 1024, 1 * MiB);
	ck_assert(memcmp(w, r, 256 * 1024) == 0);
	read_file(path, r, 4096, 8 * MiB - 4096);
	ck_assert(memcmp(w, r, 4096) == 0);
	/* Trim punches a hole: zeros in the file. */
	ck_assert_msg(wc_origin_discard(&o, 1 * MiB, 128 * 1024) == 0, "%s", wc_errmsg());
	read_file(path, r, 256 * 1024, 1 * MiB);
	ck_assert(is_zero(r, 128 * 1024));
	ck_assert(memcmp(w + 128 * 1024, r + 128 * 1024, 128 * 1024) == 0);
	wc_origin_close(&o);
	nbdkit_stop(&k);
	free(w);
	free(r);
}
END_TEST

/* ------------------------------------------------------------- multi-conn */

struct poller_arg {
	struct wc_origin *o;
	unsigned id, rounds;
	size_t len;
	int failures;
	char first[600];   /* what went wrong first (wc_errmsg is per thread) */
};

static void poller_failed(struct poller_arg *a, unsigned round, const char *what)
{
	if (!a->failures++)
		snprintf(a->first, sizeof(a->first), "round %u: %s: %s", round, what, wc_errmsg());
}

static void *poller_thread(void *p)
{
	struct poller_arg *a = p;
	uint8_t *w = aligned_buf(a->len), *r = aligned_buf(a->len);

	for (unsigned i = 0; i < a->rounds; i++) {
		uint64_t off = (uint64_t)a->id * a->len * 4 + (i % 4) * a->len;

		fill_pattern(w, a->len, a->id * 1000 + i);
		if (wc_origin_rw_sync(a->o, WC_ORIGIN_WRITE, w, a->len, off) != 0)
			poller_failed(a, i, "write");
		else if (wc_origin_rw_sync(a->o, WC_ORIGIN_READ, r, a->len, off) != 0)
			poller_failed(a, i, "read");
		else if (memcmp(w, r, a->len) != 0)
			poller_failed(a, i, "read back something else");
		if (i % 16 == 0 && wc_origin_flush(a->o) != 0)
			poller_failed(a, i, "flush");
	}
	free(w);
	free(r);
	return NULL;
}

static void run_pollers(struct wc_origin *o, unsigned nthreads, unsigned rounds, size_t len)
{
	pthread_t t[8];
	struct poller_arg arg[8];

	for (unsigned i = 0; i < nthreads; i++) {
		arg[i] = (struct poller_arg){ .o = o, .id = i, .rounds = rounds, .len = len };
		ck_assert_int_eq(pthread_create(&t[i], NULL, poller_thread, &arg[i]), 0);
	}
	for (unsigned i = 0; i < nthreads; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_msg(arg[i].failures == 0, "thread %u: %d failures; first: %s", i,
		              arg[i].failures, arg[i].first);
	}
}

START_TEST(test_multiconn_modes)
{
	char log[TEST_PATH_LEN + 16], logarg[TEST_PATH_LEN + 32];
	struct wc_origin_nbd_opts two = { .connections = 2 }, one = { .connections = 1 };
	struct nbdkit k;
	struct wc_origin o;
	int flushes, conns_used = 0;

	/* Without multi-conn: one connection, whatever was asked. */
	nbdkit_start(&k, "mc-off", ARGS("--filter=multi-conn", "memory", "16M",
	                                 "multi-conn-mode=disable"));
	open_nbd(&o, k.uri, &two);
	ck_assert_msg(strstr(wc_origin_describe(&o), "(1 connection)"), "%s", wc_origin_describe(&o));
	run_pollers(&o, 4, 100, 16 * 1024);
	wc_origin_close(&o);
	nbdkit_stop(&k);

	/* With it: as many as asked. */
	snprintf(log, sizeof(log), "%s/mc-on.log", wc_test_dir());
	snprintf(logarg, sizeof(logarg), "logfile=%s", log);
	nbdkit_start(&k, "mc-on", ARGS("--filter=log", "--filter=delay", "memory", "16M", logarg,
	                               "delay-write=2ms"));
	open_nbd(&o, k.uri, &one);
	ck_assert_msg(strstr(wc_origin_describe(&o), "(1 connection, multi-conn)"), "%s",
	              wc_origin_describe(&o));
	wc_origin_close(&o);
	open_nbd(&o, k.uri, &two);
	ck_assert_msg(strstr(wc_origin_describe(&o), "(2 connections, multi-conn)"), "%s",
	              wc_origin_describe(&o));
	wc_origin_close(&o);
	open_nbd(&o, k.uri, NULL);
	run_pollers(&o, 4, 50, 16 * 1024);
	/* One flush covers every connection: one NBD flush goes out. */
	flushes = log_count(log, " Flush id=");
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	ck_assert_int_eq(log_count(log, " Flush id="), flushes + 1);
	wc_origin_close(&o);
	nbdkit_stop(&k);
	/* Concurrent writers went through more than one connection (the
	 * log numbers connections from 1 per server run). */
	for (int i = 3; i <= 6; i++) {
		char what[64];

		snprintf(what, sizeof(what), "connection=%d Write", i);
		conns_used += log_count(log, what) > 0;
	}
	ck_assert_msg(conns_used >= 2, "writes went through %d of the 4 connections", conns_used);
}
END_TEST

/* ------------------------------------------------------- many in flight */

/* Submit all, then poll until every one completed; each exactly once. */
static void run_batch(struct wc_origin *o, struct counted_io *req, int n, ssize_t want)
{
	uint64_t t0 = mono_ns();
	int total = 0;

	for (int i = 0; i < n; i++) {
		int ret = wc_origin_submit(o, &req[i].io);

		ck_assert_msg(ret == 0, "submit %d: %d %s", i, ret, wc_errmsg());
	}
	/* submit() never runs a callback. */
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(atomic_load(&req[i].calls), 0);
	while (total < n) {
		int got = wc_origin_poll(o, 1, 1000000000ull);

		ck_assert_int_ge(got, 0);
		total += got;
		ck_assert_msg(mono_ns() - t0 < 30000000000ull, "%d of %d after 30 s", total, n);
	}
	ck_assert_int_eq(total, n);
	ck_assert_int_eq(wc_origin_poll(o, 0, 0), 0);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(atomic_load(&req[i].calls), 1);
		ck_assert_int_eq(req[i].res, want);
	}
}

START_TEST(test_many_in_flight)
{
	enum { NREQ = 512, LEN = 4096 };
	struct counted_io *req = calloc(NREQ, sizeof(*req));
	uint8_t *w = aligned_buf((size_t)NREQ * LEN), *r = aligned_buf((size_t)NREQ * LEN);
	struct nbdkit k;
	struct wc_origin o;

	nbdkit_start(&k, "many", ARGS("--filter=delay", "memory", "16M", "delay-write=5ms",
	                              "delay-read=5ms"));
	open_nbd(&o, k.uri, NULL);
	fill_pattern(w, (size_t)NREQ * LEN, 50);
	/* Every other block, backwards: no two requests adjacent in order. */
	for (int i = 0; i < NREQ; i++)
		counted_prep(&req[i], WC_ORIGIN_WRITE, w + (size_t)i * LEN, LEN,
		             (uint64_t)(NREQ - 1 - i) * 2 * LEN);
	run_batch(&o, req, NREQ, LEN);
	for (int i = 0; i < NREQ; i++)
		counted_prep(&req[i], WC_ORIGIN_READ, r + (size_t)i * LEN, LEN,
		             (uint64_t)(NREQ - 1 - i) * 2 * LEN);
	run_batch(&o, req, NREQ, LEN);
	ck_assert(memcmp(w, r, (size_t)NREQ * LEN) == 0);
	wc_origin_close(&o);
	nbdkit_stop(&k);
	free(req);
	free(w);
	free(r);
}
END_TEST

/* Threads that each submit a batch and poll until theirs are done, while
 * the others' completions are reaped (and their callbacks run) by them. */
struct batch_arg {
	struct wc_origin *o;
	unsigned id;
	int failures;
};

static void *batch_thread(void *p)
{
	enum { N = 32, LEN = 8192 };
	struct batch_arg *a = p;
	struct counted_io req[N];
	uint8_t *buf = aligned_buf((size_t)N * LEN);

	for (int round = 0; round < 20; round++) {
		int left = N;

		fill_pattern(buf, (size_t)N * LEN, a->id * 100 + (unsigned)round);
		for (int i = 0; i < N; i++) {
			counted_prep(&req[i], round % 2 ? WC_ORIGIN_READ : WC_ORIGIN_WRITE,
			             buf + (size_t)i * LEN, LEN, ((uint64_t)a->id * N + (uint64_t)i) * LEN);
			if (wc_origin_submit(a->o, &req[i].io) != 0)
				a->failures++;
		}
		while (left > 0) {
			left = 0;
			for (int i = 0; i < N; i++)
				left += atomic_load(&req[i].calls) == 0;
			if (left && wc_origin_poll(a->o, 1, 1000000ull) < 0)
				a->failures++;
		}
		for (int i = 0; i < N; i++)
			if (atomic_load(&req[i].calls) != 1 || req[i].res != LEN)
				a->failures++;
	}
	free(buf);
	return NULL;
}

START_TEST(test_threads_submit_and_poll)
{
	struct batch_arg arg[4];
	pthread_t t[4];
	struct nbdkit k;
	struct wc_origin o;

	nbdkit_start(&k, "threads", ARGS("--filter=delay", "memory", "16M", "delay-write=1ms"));
	open_nbd(&o, k.uri, NULL);
	for (unsigned i = 0; i < 4; i++) {
		arg[i] = (struct batch_arg){ .o = &o, .id = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, batch_thread, &arg[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_msg(arg[i].failures == 0, "thread %u: %d failures", i, arg[i].failures);
	}
	run_pollers(&o, 4, 100, 4096);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	wc_origin_close(&o);
	nbdkit_stop(&k);
}
END_TEST

/* --------------------------------------------------------------- bad input */

static void expect_open_error(const char *uri, int want, const char *text)
{
	struct wc_origin o;
	int ret = wc_origin_open_nbd(&o, uri);

	ck_assert_msg(ret == want, "%s: %d (want %d) %s", uri ? uri : "NULL", ret, want, wc_errmsg());
	if (uri && *uri)
		ck_assert_msg(strstr(wc_errmsg(), uri), "message does not name %s: %s", uri, wc_errmsg());
	if (text)
		ck_assert_msg(strstr(wc_errmsg(), text), "message lacks \"%s\": %s", text, wc_errmsg());
}

START_TEST(test_bad_uris)
{
	char dir[TEST_PATH_LEN], file[TEST_PATH_LEN + 16], uri[TEST_PATH_LEN + 64];
	struct wc_origin_nbd_opts many = { .connections = 17 };
	struct nbdkit k;
	struct wc_origin o;
	int fds = open_fds();

	expect_open_error(NULL, -EINVAL, NULL);
	expect_open_error("", -EINVAL, NULL);
	ck_assert_int_eq(wc_origin_open_nbd(NULL, "nbd://x"), -EINVAL);
	expect_open_error("nbd+unix:///", -EINVAL, "socket");
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/no-such.sock", wc_test_dir());
	expect_open_error(uri, -ENOENT, NULL);
	expect_open_error("nbd://127.0.0.1:1/", -ECONNREFUSED, NULL);
	ck_assert_int_eq(wc_origin_open_nbd_opts(&o, "nbd://127.0.0.1:1/", &many), -EINVAL);

	/* An export name the server does not have. */
	wc_test_path(dir, sizeof(dir), "exports");
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(file, sizeof(file), "%s/disk", dir);
	make_file(file, 1 * MiB);
	snprintf(uri, sizeof(uri), "dir=%s", dir);
	nbdkit_start_export(&k, "dir", "nope", ARGS("file", uri));
	{
		char exported[TEST_PATH_LEN + 64];

		snprintf(exported, sizeof(exported), "%s", k.uri);
		expect_open_error(exported, -ENOENT, "no export named");
		/* ... while the one it has opens. */
		snprintf(exported, sizeof(exported), "nbd+unix:///disk?socket=%s", k.sock);
		open_nbd(&o, exported, NULL);
		wc_origin_close(&o);
	}
	nbdkit_stop(&k);

	/* A read-only export cannot take a write-back cache's blocks. */
	nbdkit_start(&k, "ro", ARGS("-r", "memory", "1M"));
	expect_open_error(k.uri, -EROFS, "read-only");
	nbdkit_stop(&k);

	/* Nothing of the failed opens stays open. */
	ck_assert_int_eq(open_fds_settled(fds), fds);
}
END_TEST

START_TEST(test_bad_requests)
{
	struct nbdkit k;
	struct wc_origin o;
	uint8_t *buf = aligned_buf(16384);
	struct iovec iov = { buf, 4096 };
	struct wc_origin_io io = { .op = (enum wc_origin_op)9, .iov = &iov, .iovcnt = 1,
	                           .done = counted_done };

	/* A server that wants 4 KiB blocks: the origin's alignment. */
	nbdkit_start(&k, "bs4k", ARGS("--filter=blocksize-policy", "memory", "1M",
	                              "blocksize-minimum=4096", "blocksize-error-policy=error"));
	open_nbd(&o, k.uri, NULL);
	ck_assert_uint_eq(wc_origin_alignment(&o), 4096);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, 512), -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), "aligned to 4096") && strstr(wc_errmsg(), k.uri), "%s",
	              wc_errmsg());
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 512, 0), -EINVAL);
	ck_assert_int_eq(wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 8192, 1 * MiB - 4096), -EINVAL);
	ck_assert(strstr(wc_errmsg(), "beyond the end") != NULL);
	ck_assert_int_eq(wc_origin_submit(&o, &io), -EINVAL);
	io.op = WC_ORIGIN_READ;
	io.iovcnt = 0;
	ck_assert_int_eq(wc_origin_submit(&o, &io), -EINVAL);
	io.iovcnt = 1;
	io.done = NULL;
	ck_assert_int_eq(wc_origin_submit(&o, &io), -EINVAL);
	ck_assert_int_eq(wc_origin_discard(&o, 512, 4096), -EINVAL);
	ck_assert_int_eq(wc_origin_discard(&o, 1 * MiB - 4096, 8192), -EINVAL);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	roundtrip(&o, 4096, 1 * MiB - 4096, 60);
	wc_origin_close(&o);
	nbdkit_stop(&k);

	/* A server without trim nor flush: discard is -EOPNOTSUPP, flush has
	 * nothing to do. */
	nbdkit_start(&k, "notrim", ARGS("eval", "get_size=echo 1048576",
	                                "pread=dd if=/dev/zero count=$3 iflag=count_bytes status=none",
	                                "pwrite=cat >/dev/null"));
	open_nbd(&o, k.uri, NULL);
	ck_assert_int_eq(wc_origin_discard(&o, 0, 4096), -EOPNOTSUPP);
	ck_assert(strstr(wc_errmsg(), "trim") != NULL);
	sync_write(&o, buf, 4096, 0);
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	wc_origin_close(&o);
	nbdkit_stop(&k);
	free(buf);
}
END_TEST

/* ---------------------------------------------- a server that goes away */

static void *flush_thread(void *p)
{
	return (void *)(intptr_t)wc_origin_flush(p);
}

START_TEST(test_server_killed_and_back)
{
	enum { NREQ = 16, LEN = 65536 };
	struct wc_origin_nbd_opts opts = { .reconnect_min_ms = 50, .reconnect_max_ms = 200 };
	struct counted_io *req = calloc(NREQ, sizeof(*req));
	uint8_t *w = aligned_buf((size_t)NREQ * LEN), *r = aligned_buf(LEN);
	char path[TEST_PATH_LEN];
	struct nbdkit k;
	struct wc_origin o;
	uint64_t t0;
	void *other;
	int total = 0, ret;

	make_file(wc_test_path(path, sizeof(path), "killed-export"), 4 * MiB);
	nbdkit_start(&k, "killed", ARGS("--filter=delay", "file", path, "delay-write=400ms"));
	open_nbd(&o, k.uri, &opts);
	fill_pattern(w, (size_t)NREQ * LEN, 70);
	sync_write(&o, w, LEN, 0);                /* A: durable */
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	sync_write(&o, w + LEN, LEN, LEN);        /* B: acknowledged, never flushed */

	for (int i = 0; i < NREQ; i++)
		counted_prep(&req[i], WC_ORIGIN_WRITE, w + (size_t)i * LEN, LEN,
		             (uint64_t)(i + 2) * LEN);
	for (int i = 0; i < NREQ; i++)
		ck_assert_int_eq(wc_origin_submit(&o, &req[i].io), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 50000000ull), 0); /* 50 ms: on the wire */
	nbdkit_signal(&k, SIGKILL);

	/* In flight: every request completes, with an error, promptly. */
	t0 = mono_ns();
	while (total < NREQ) {
		int got = wc_origin_poll(&o, 1, 1000000000ull);

		ck_assert_int_ge(got, 0);
		total += got;
		ck_assert_msg(mono_ns() - t0 < 5000000000ull, "%d of %d after 5 s", total, NREQ);
	}
	for (int i = 0; i < NREQ; i++) {
		ck_assert_int_eq(atomic_load(&req[i].calls), 1);
		ck_assert_msg(req[i].res == -ENOTCONN, "request %d: %zd", i, req[i].res);
	}
	/* Later requests fail fast, saying why, while it is down. */
	t0 = mono_ns();
	ret = wc_origin_rw_sync(&o, WC_ORIGIN_READ, r, LEN, 0);
	ck_assert_int_lt(ret, 0);
	ck_assert_msg(strstr(wc_errmsg(), k.uri) && (strstr(wc_errmsg(), "reconnect") ||
	              strstr(wc_errmsg(), "not connected")), "%s", wc_errmsg());
	ck_assert_int_lt(wc_origin_rw_sync(&o, WC_ORIGIN_READ, r, LEN, 0), 0);
	/* (A flush from this thread would fail now, which tells it as much
	 * as the one below: another thread's.) */
	{
		pthread_t t;

		ck_assert_int_eq(pthread_create(&t, NULL, flush_thread, &o), 0);
		ck_assert_int_eq(pthread_join(t, &other), 0);
		ck_assert_int_lt((int)(intptr_t)other, 0);
	}
	ck_assert_uint_lt(mono_ns() - t0, 1500000000ull);

	/* Back on the same socket: the next request after the backoff
	 * reconnects. */
	nbdkit_start(&k, "killed", ARGS("file", path));
	usleep(250000);
	t0 = mono_ns();
	while ((ret = wc_origin_rw_sync(&o, WC_ORIGIN_READ, r, LEN, 0)) != 0) {
		ck_assert_msg(mono_ns() - t0 < 3000000000ull, "not reconnected: %s", wc_errmsg());
		usleep(20000);
	}
	ck_assert(memcmp(r, w, LEN) == 0);       /* A is there */
	/* Another thread wrote nothing through the lost connection: its
	 * flush has nothing to report.  This one's writes may be lost: its
	 * next flush says so, once. */
	{
		pthread_t t;

		ck_assert_int_eq(pthread_create(&t, NULL, flush_thread, &o), 0);
		ck_assert_int_eq(pthread_join(t, &other), 0);
		ck_assert_int_eq((int)(intptr_t)other, 0);
	}
	ret = wc_origin_flush(&o);
	ck_assert_int_eq(ret, -EIO);
	ck_assert_msg(strstr(wc_errmsg(), "write them again"), "%s", wc_errmsg());
	sync_write(&o, w + LEN, LEN, LEN);        /* B again */
	ck_assert_int_eq(wc_origin_flush(&o), 0);
	ck_assert_int_eq(wc_origin_poll(&o, 0, 0), 0);
	wc_origin_close(&o);
	nbdkit_stop(&k);
	free(req);
	free(w);
	free(r);
}
END_TEST

/* A flush request (WC_ORIGIN_FLUSH, what write-back sends): submitted by
 * this thread, completed through poll().  Returns its result. */
static int flush_request(struct wc_origin *o)
{
	struct counted_io req;
	uint64_t t0 = mono_ns();
	int ret;

	counted_prep(&req, WC_ORIGIN_FLUSH, NULL, 0, 0);
	ret = wc_origin_submit(o, &req.io);
	if (ret)
		return ret; /* refused at once: a loss to report, no connection */
	while (atomic_load(&req.calls) == 0) {
		ck_assert_int_ge(wc_origin_poll(o, 1, 100000000ull), 0);
		ck_assert_msg(mono_ns() - t0 < 5000000000ull, "flush request never completed");
	}
	ck_assert_int_eq(atomic_load(&req.calls), 1);
	return (int)req.res;
}

/* A flush while a write of the same thread is still in flight covers what
 * completed before it, not that write: lost with its connection later, the
 * next flush says so, once.  As a flush() call (_i 0) and as a flush
 * request (_i 1). */
START_TEST(test_flush_with_write_in_flight)
{
	struct wc_origin_nbd_opts opts = { .reconnect_min_ms = 50, .reconnect_max_ms = 100 };
	uint8_t *buf = aligned_buf(8192);
	char path[TEST_PATH_LEN];
	struct counted_io req;
	struct nbdkit k;
	struct wc_origin o;
	uint64_t t0;
	int (*flush)(struct wc_origin *) = _i ? flush_request : wc_origin_flush;

	make_file(wc_test_path(path, sizeof(path), "inflight-export"), 1 * MiB);
	nbdkit_start(&k, "inflight", ARGS("--filter=delay", "file", path, "delay-write=300ms"));
	open_nbd(&o, k.uri, &opts);
	if (_i)
		ck_assert(wc_origin_async_flush(&o));
	fill_pattern(buf, 8192, 80 + _i);
	sync_write(&o, buf, 4096, 0);                       /* A: completed */
	counted_prep(&req, WC_ORIGIN_WRITE, buf + 4096, 4096, 4096);
	ck_assert_int_eq(wc_origin_submit(&o, &req.io), 0);  /* B: 300 ms on the wire */
	ck_assert_int_eq(flush(&o), 0);                      /* covers A only */
	if (!_i) /* the request's own polling may have reaped B */
		ck_assert_int_eq(atomic_load(&req.calls), 0);
	while (atomic_load(&req.calls) == 0)
		ck_assert_int_ge(wc_origin_poll(&o, 1, 1000000000ull), 0);
	ck_assert_int_eq(req.res, 4096);
	nbdkit_signal(&k, SIGKILL);
	nbdkit_start(&k, "inflight", ARGS("file", path));
	t0 = mono_ns();
	while (wc_origin_rw_sync(&o, WC_ORIGIN_READ, buf, 4096, 0) != 0) {
		ck_assert_msg(mono_ns() - t0 < 3000000000ull, "not reconnected: %s", wc_errmsg());
		usleep(20000);
	}
	ck_assert_int_eq(flush(&o), -EIO);
	ck_assert_msg(strstr(wc_errmsg(), "write them again"), "%s", wc_errmsg());
	ck_assert_int_eq(flush(&o), 0);
	wc_origin_close(&o);
	nbdkit_stop(&k);
	free(buf);
}
END_TEST

/* A server that stops answering: its requests time out, it comes back. */
START_TEST(test_server_hung)
{
	struct wc_origin_nbd_opts opts = { .io_timeout_ms = 300, .reconnect_timeout_ms = 300,
	                                   .reconnect_min_ms = 50, .reconnect_max_ms = 100 };
	uint8_t *buf = aligned_buf(4096);
	struct counted_io req;
	struct nbdkit k;
	struct wc_origin o;
	uint64_t t0;
	int ret;

	nbdkit_start(&k, "hung", ARGS("memory", "1M"));
	open_nbd(&o, k.uri, &opts);
	sync_write(&o, buf, 4096, 0);
	nbdkit_signal(&k, SIGSTOP);
	counted_prep(&req, WC_ORIGIN_WRITE, buf, 4096, 4096);
	t0 = mono_ns();
	ck_assert_int_eq(wc_origin_submit(&o, &req.io), 0);
	while (atomic_load(&req.calls) == 0) {
		ck_assert_int_ge(wc_origin_poll(&o, 1, 100000000ull), 0);
		ck_assert_msg(mono_ns() - t0 < 5000000000ull, "no completion 5 s into a 300 ms timeout");
	}
	ck_assert_int_eq(req.res, -ETIMEDOUT);
	ck_assert_uint_ge(mono_ns() - t0, 250000000ull);
	/* Still stopped: the reconnect's handshake times out too. */
	ret = wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, 0);
	ck_assert_int_lt(ret, 0);
	nbdkit_signal(&k, SIGCONT);
	t0 = mono_ns();
	while (wc_origin_rw_sync(&o, WC_ORIGIN_WRITE, buf, 4096, 0) != 0) {
		ck_assert_msg(mono_ns() - t0 < 3000000000ull, "not reconnected: %s", wc_errmsg());
		usleep(20000);
	}
	wc_origin_close(&o);
	nbdkit_stop(&k);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------ main */

static Suite *origin_nbd_suite(void)
{
	Suite *s = suite_create("origin_nbd");
	TCase *io = tcase_create("io"), *fail = tcase_create("failures");

	tcase_add_test(io, test_memory_roundtrip);
	tcase_add_test(io, test_file_roundtrip);
	tcase_add_test(io, test_multiconn_modes);
	tcase_add_test(io, test_many_in_flight);
	tcase_add_test(io, test_threads_submit_and_poll);
	tcase_set_timeout(io, 120);
	suite_add_tcase(s, io);

	tcase_add_test(fail, test_bad_uris);
	tcase_add_test(fail, test_bad_requests);
	tcase_add_test(fail, test_server_killed_and_back);
	tcase_add_loop_test(fail, test_flush_with_write_in_flight, 0, 2);
	tcase_add_test(fail, test_server_hung);
	tcase_set_timeout(fail, 120);
	suite_add_tcase(s, fail);
	return s;
}

int main(void)
{
	if (!nbdkit_installed())
		return wc_test_skip_all("nbdkit not installed (apt-get install nbdkit)");
	return wc_test_main(origin_nbd_suite());
}
