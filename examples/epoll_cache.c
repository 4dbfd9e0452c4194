/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * epoll_cache.c -- a storage service's event loop over libwcache.
 *
 * One thread, one epoll loop, 64 requests of 4 KiB in flight (wc_submit),
 * completions announced by wc_event_fd() and delivered by
 * wc_poll_timeout(); without threads (--no-threads) the loop also does the
 * cache's own work in steps, waking at wc_next_deadline_ms().  The cache is
 * smaller than the working set and the origin is slow (an in-memory origin
 * that answers each request after --origin-delay-us, 5 ms by default), so
 * misses and write-back are always under way.
 *
 * It measures what the loop is for: how long each turn of the loop spends
 * outside epoll_wait (delivering, submitting, the cache's steps).  A turn
 * over 1 ms is counted, and told apart by what the thread did meanwhile
 * (getrusage's context switches, the thread's CPU clock):
 *   blocked    it slept -- on a lock, a wait, I/O: what the loop must
 *              never do, and what --max-slow N asserts (at most N turns;
 *              default: report only);
 *   on CPU     it ran, or was runnable, for over 1 ms.  On a shared VM
 *              that includes the hypervisor taking the vCPU, which the
 *              guest counts as the thread's CPU time: before the loop the
 *              example spins for a second reading the clock, and reports
 *              how many over-1-ms stalls a loop that calls nothing saw.  At the end it closes the
 * cache, opens it again and reads every block of the working set back:
 * each must hold the last version the loop saw acknowledged.
 *
 *   epoll_cache [--threads|--no-threads] [--seconds S] [--cache PATH]
 *               [--origin-delay-us US] [--max-slow N] [--medium pmem|block]
 *
 * --medium block puts the cache on the block medium (its file by default
 * under /var/tmp: O_DIRECT needs a disk, not tmpfs).
 *
 * It prints TAP, so make check runs it as a test.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fault_origin.h"
#include "wcache.h"

#define BS 4096u
#define INFLIGHT 64u
#define CACHE_BYTES (16u << 20)        /* 4,096 blocks ... */
#define WORKING_SET_BLOCKS 16384u      /* ... in front of 64 MiB of data */
#define SLOW_TURN_NS 1000000ull

struct slot {
	struct wc_request req;
	struct iovec iov;
	uint8_t *buf;
	uint64_t block, version;
	bool busy;
};

static struct {
	wc_cache *c;
	uint64_t *acked;       /* per block: the last acknowledged version, 0 = never */
	uint8_t *in_flight;    /* per block: a request holds it */
	uint64_t next_version, writes, reads, read_errors, write_errors, eagain;
	uint64_t rng;
	bool stopping;
} g;

/*
 * The origin as a device: the in-memory origin's own work (copying each
 * write into its images, a flush's copy into the durable one) runs in a
 * thread of its own, as a disk's runs in the kernel and the device, not in
 * the thread that submits and polls.  submit() hands the request over;
 * done() runs in the device thread, as the ops table allows.
 *
 * The hand-over is a bounded ring without a lock (one slot sequence number
 * per entry): a submitter never sleeps on the device thread, as none sleeps
 * on a disk's queue.  With a mutex here the loop slept whenever the device
 * thread was preempted while holding it -- the only sleeps outside
 * epoll_wait a perf sched_switch trace of the loop showed.
 */
#define DEV_RING 1024u

struct device {
	struct wc_origin inner;
	pthread_t thread;
	struct {
		_Atomic uint64_t seq;
		struct wc_origin_io *io;
	} ring[DEV_RING];
	_Atomic uint64_t tail; /* next slot a submitter takes */
	uint64_t head;         /* the device thread's */
	atomic_bool stop;
};

static int dev_submit(void *ctx, struct wc_origin_io *io)
{
	struct device *d = ctx;
	uint64_t pos = atomic_load_explicit(&d->tail, memory_order_relaxed);

	for (;;) {
		uint64_t seq = atomic_load_explicit(&d->ring[pos % DEV_RING].seq, memory_order_acquire);
		int64_t diff = (int64_t)(seq - pos);

		if (diff == 0 && atomic_compare_exchange_weak_explicit(&d->tail, &pos, pos + 1,
		                                                        memory_order_relaxed,
		                                                        memory_order_relaxed))
			break;
		if (diff < 0)
			return -EAGAIN; /* full: the cache retries */
		if (diff > 0)
			pos = atomic_load_explicit(&d->tail, memory_order_relaxed);
	}
	d->ring[pos % DEV_RING].io = io;
	atomic_store_explicit(&d->ring[pos % DEV_RING].seq, pos + 1, memory_order_release);
	return 0;
}

static struct wc_origin_io *dev_take(struct device *d)
{
	uint64_t pos = d->head;
	struct wc_origin_io *io;

	if (atomic_load_explicit(&d->ring[pos % DEV_RING].seq, memory_order_acquire) != pos + 1)
		return NULL;
	io = d->ring[pos % DEV_RING].io;
	atomic_store_explicit(&d->ring[pos % DEV_RING].seq, pos + DEV_RING, memory_order_release);
	d->head = pos + 1;
	return io;
}

static void *dev_main(void *arg)
{
	struct device *d = arg;

	while (!atomic_load(&d->stop)) {
		struct wc_origin_io *io;

		while ((io = dev_take(d))) {
			int ret = d->inner.ops->submit(d->inner.ctx, io);

			if (ret)
				io->done(io, ret);
		}
		d->inner.ops->poll(d->inner.ctx, 0, 200000);
	}
	return NULL;
}

/* Completions arrive from the device thread: nothing to reap here. */
static int dev_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	(void)ctx;
	(void)min_events;
	if (timeout_ns) {
		struct timespec ts = { 0, (long)(timeout_ns < 1000000 ? timeout_ns : 1000000) };

		nanosleep(&ts, NULL);
	}
	return 0;
}

static int dev_size(void *ctx, uint64_t *bytes)
{
	struct device *d = ctx;

	return d->inner.ops->size(d->inner.ctx, bytes);
}

static int dev_flush(void *ctx)
{
	struct device *d = ctx;

	return d->inner.ops->flush(d->inner.ctx);
}

static void dev_close(void *ctx)
{
	(void)ctx; /* the device outlives the cache: it is reopened */
}

static uint32_t dev_alignment(void *ctx)
{
	(void)ctx;
	return 1;
}

static const char *dev_describe(void *ctx)
{
	(void)ctx;
	return "in-memory device (epoll example)";
}

static const struct wc_origin_ops dev_ops = {
	WC_ORIGIN_OPS_INIT,
	.size = dev_size, .submit = dev_submit, .poll = dev_poll, .flush = dev_flush,
	.close = dev_close, .alignment = dev_alignment, .describe = dev_describe,
	.caps = WC_ORIGIN_CAP_ASYNC_FLUSH,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Stalls over 1 ms seen by a loop that only reads the clock for 1 s: what
 * the machine itself takes from a running thread. */
static uint64_t machine_stalls(void)
{
	uint64_t start = now_ns(), prev = start, n = 0;

	for (;;) {
		uint64_t t = now_ns();

		if (t - prev > SLOW_TURN_NS)
			n++;
		prev = t;
		if (t - start > 1000000000ull)
			return n;
	}
}

/* The thread's sleeps so far (voluntary context switches). */
static long sleeps(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

static uint64_t rnd(void)
{
	g.rng ^= g.rng << 13;
	g.rng ^= g.rng >> 7;
	g.rng ^= g.rng << 17;
	return g.rng;
}

static void fill(uint8_t *buf, uint64_t block, uint64_t version)
{
	for (unsigned i = 0; i < BS; i += 16) {
		memcpy(buf + i, &block, 8);
		memcpy(buf + i + 8, &version, 8);
	}
}

static bool holds(const uint8_t *buf, uint64_t block, uint64_t version)
{
	static uint8_t want[BS], zero[BS];

	if (version == 0)
		return memcmp(buf, zero, BS) == 0;
	fill(want, block, version);
	return memcmp(buf, want, BS) == 0;
}

static void done(struct wc_request *req, ssize_t res)
{
	struct slot *s = req->priv;

	if (req->op == WC_REQ_WRITE) {
		if (res == BS) {
			if (s->version > g.acked[s->block])
				g.acked[s->block] = s->version;
			g.writes++;
		} else {
			fprintf(stderr, "write of block %" PRIu64 ": %zd %s\n", s->block, res, wc_errmsg());
			g.write_errors++;
		}
	} else {
		if (res != BS || !holds(s->buf, s->block, g.acked[s->block])) {
			fprintf(stderr, "read of block %" PRIu64 ": %zd, expected version %" PRIu64 "\n",
			        s->block, res, g.acked[s->block]);
			g.read_errors++;
		}
		g.reads++;
	}
	g.in_flight[s->block] = 0;
	s->busy = false;
}

/* A new request in the slot: a random block no other request holds, two
 * writes for each read.  Returns false when the cache said -EAGAIN (no room
 * yet, without threads): the slot stays idle until the next turn. */
static bool start(struct slot *s)
{
	uint64_t block;
	int ret;

	do
		block = rnd() % WORKING_SET_BLOCKS;
	while (g.in_flight[block]);
	wc_request_init(&s->req);
	s->block = block;
	s->iov = (struct iovec){ s->buf, BS };
	s->req.iov = &s->iov;
	s->req.iovcnt = 1;
	s->req.offset = block * BS;
	s->req.done = done;
	s->req.priv = s;
	if (rnd() % 3) {
		s->version = ++g.next_version;
		fill(s->buf, block, s->version);
		s->req.op = WC_REQ_WRITE;
	} else {
		s->req.op = WC_REQ_READ;
	}
	g.in_flight[block] = 1;
	s->busy = true;
	ret = wc_submit(g.c, &s->req);
	if (ret == -EAGAIN) {
		g.in_flight[block] = 0;
		s->busy = false;
		g.eagain++;
		return false;
	}
	if (ret) {
		fprintf(stderr, "wc_submit: %s\n", wc_errmsg());
		exit(1);
	}
	return true;
}

static unsigned busy_slots(struct slot *slots)
{
	unsigned n = 0;

	for (unsigned i = 0; i < INFLIGHT; i++)
		n += slots[i].busy;
	return n;
}

int main(int argc, char **argv)
{
	const char *cache_path = NULL;
	uint32_t medium = WC_MEDIUM_PMEM;
	uint64_t delay_us = 5000, turns = 0, slow = 0, max_turn = 0, t_end, sum_turn = 0;
	uint64_t slow_blocked = 0, slow_cpu = 0, stalls;
	double seconds = 2;
	long max_slow = -1;
	bool no_threads = false;
	struct fault_origin *fo;
	struct wc_config cfg;
	struct slot slots[INFLIGHT];
	struct epoll_event ev = { .events = EPOLLIN };
	int ep, efd, failures = 0, t = 0;
	uint8_t *buf;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-threads"))
			no_threads = true;
		else if (!strcmp(argv[i], "--threads"))
			no_threads = false;
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--cache") && i + 1 < argc)
			cache_path = argv[++i];
		else if (!strcmp(argv[i], "--origin-delay-us") && i + 1 < argc)
			delay_us = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--max-slow") && i + 1 < argc)
			max_slow = atol(argv[++i]);
		else if (!strcmp(argv[i], "--medium") && i + 1 < argc && !strcmp(argv[i + 1], "pmem"))
			medium = WC_MEDIUM_PMEM, i++;
		else if (!strcmp(argv[i], "--medium") && i + 1 < argc && !strcmp(argv[i + 1], "block"))
			medium = WC_MEDIUM_BLOCK, i++;
		else {
			fprintf(stderr, "usage: %s [--threads|--no-threads] [--seconds S] [--cache PATH] "
			        "[--origin-delay-us US] [--max-slow N] [--medium pmem|block]\n", argv[0]);
			return 2;
		}
	}
	/* The block medium writes with O_DIRECT, which tmpfs refuses: its
	 * file goes on a disk. */
	if (!cache_path)
		cache_path = medium == WC_MEDIUM_BLOCK ? "/var/tmp/wc-epoll-example-block.img"
		                                       : "/dev/shm/wc-epoll-example.img";
	/* The emulated pmem file maps with cache-line granularity: the real
	 * flush code runs (not power-fail safe: DRAM). */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	g.rng = 0x9e3779b97f4a7c15ull;
	g.acked = calloc(WORKING_SET_BLOCKS, sizeof(*g.acked));
	g.in_flight = calloc(WORKING_SET_BLOCKS, 1);
	if (!g.acked || !g.in_flight || fault_origin_create(&fo, (uint64_t)WORKING_SET_BLOCKS * BS, 1)) {
		fprintf(stderr, "setup failed\n");
		return 1;
	}
	/* The in-memory origin's images touched once now, so its page faults
	 * do not land in the loop's turns (a real origin's device does that
	 * work in the kernel, not in the thread that polls it). */
	{
		uint8_t *zero = calloc(1, 1u << 20);

		for (uint64_t off = 0; zero && off < (uint64_t)WORKING_SET_BLOCKS * BS; off += 1u << 20)
			fault_origin_load(fo, zero, 1u << 20, off);
		free(zero);
	}
	fault_origin_set_faults(fo, &(struct fault_origin_faults){ .delay_us = delay_us });
	static struct device dev;

	dev.inner = fault_origin_origin(fo);
	for (unsigned i = 0; i < DEV_RING; i++)
		atomic_init(&dev.ring[i].seq, i);
	if (pthread_create(&dev.thread, NULL, dev_main, &dev))
		return 1;
	unlink(cache_path);
	wc_config_init(&cfg);
	cfg.cache_size = CACHE_BYTES;
	cfg.no_threads = no_threads;
	cfg.medium = medium;
	if (wc_create_origin(&g.c, cache_path, (struct wc_origin){ &dev_ops, &dev }, &cfg)) {
		fprintf(stderr, "wc_create_origin: %s\n", wc_errmsg());
		return 1;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	efd = wc_event_fd(g.c);
	if (ep < 0 || efd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev)) {
		fprintf(stderr, "epoll: %s\n", efd < 0 ? wc_errmsg() : strerror(errno));
		return 1;
	}
	for (unsigned i = 0; i < INFLIGHT; i++) {
		slots[i].busy = false;
		if (posix_memalign((void **)&slots[i].buf, BS, BS))
			return 1;
	}

	stalls = machine_stalls();
	t_end = now_ns() + (uint64_t)(seconds * 1e9);
	for (;;) {
		struct epoll_event got;
		int wait = wc_next_deadline_ms(g.c), n;
		uint64_t t0;
		long slept;

		if (g.stopping && busy_slots(slots) == 0)
			break;
		if (wait < 0 || wait > 100)
			wait = 100;
		n = epoll_wait(ep, &got, 1, wait);
		if (n < 0 && errno != EINTR) {
			perror("epoll_wait");
			return 1;
		}
		/* The turn: everything the loop does between two waits. */
		slept = sleeps();
		t0 = now_ns();
		if (wc_poll_timeout(g.c, 256, 0) < 0) {
			fprintf(stderr, "wc_poll_timeout: %s\n", wc_errmsg());
			return 1;
		}
		if (!g.stopping && t0 >= t_end)
			g.stopping = true;
		for (unsigned i = 0; i < INFLIGHT && !g.stopping; i++)
			if (!slots[i].busy && !start(&slots[i]))
				break;
		t0 = now_ns() - t0;
		turns++;
		sum_turn += t0;
		if (t0 > max_turn)
			max_turn = t0;
		if (t0 > SLOW_TURN_NS) {
			slow++;
			if (sleeps() > slept)
				slow_blocked++;
			else
				slow_cpu++;
		}
	}

	printf("# %s, origin %" PRIu64 " us per request, cache %u MiB over %u MiB: %" PRIu64
	       " writes, %" PRIu64 " reads, %" PRIu64 " refused with -EAGAIN\n",
	       no_threads ? "no_threads (the loop drives the cache)" : "threads", delay_us,
	       CACHE_BYTES >> 20, WORKING_SET_BLOCKS * BS >> 20, g.writes, g.reads, g.eagain);
	printf("# loop turns %" PRIu64 " (%.2f s in all), over 1 ms: %" PRIu64 " (blocked %" PRIu64
	       ", on CPU %" PRIu64 "), longest %.3f ms, mean %.1f us\n", turns, sum_turn / 1e9, slow,
	       slow_blocked, slow_cpu, max_turn / 1e6, turns ? sum_turn / 1e3 / turns : 0);
	printf("# this machine: a loop that only reads the clock stalled over 1 ms %" PRIu64
	       " times in 1 s\n", stalls);
	t++;
	if (g.writes && g.reads && !g.read_errors && !g.write_errors)
		printf("ok %d - %" PRIu64 " writes and %" PRIu64 " reads, every read saw its block's last "
		       "acknowledged version\n", t, g.writes, g.reads);
	else
		printf("not ok %d - %" PRIu64 " read errors, %" PRIu64 " write errors\n", t, g.read_errors,
		       g.write_errors), failures++;
	t++;
	if (max_slow < 0 || slow_blocked <= (uint64_t)max_slow)
		printf("ok %d - loop turns that blocked over 1 ms: %" PRIu64 "%s\n", t, slow_blocked,
		       max_slow < 0 ? " (reported, not asserted: --max-slow N asserts)" : "");
	else
		printf("not ok %d - loop turns that blocked over 1 ms: %" PRIu64 " (at most %ld allowed)\n", t,
		       slow_blocked, max_slow), failures++;

	/* Close, open again, read everything back. */
	if (wc_close(g.c)) {
		fprintf(stderr, "wc_close: %s\n", wc_errmsg());
		return 1;
	}
	wc_config_init(&cfg);
	cfg.no_threads = no_threads;
	if (wc_open_origin(&g.c, cache_path, (struct wc_origin){ &dev_ops, &dev }, &cfg)) {
		fprintf(stderr, "wc_open_origin: %s\n", wc_errmsg());
		return 1;
	}
	fault_origin_set_faults(fo, NULL);
	buf = aligned_alloc(BS, BS);
	{
		uint64_t bad = 0;

		for (uint64_t b = 0; b < WORKING_SET_BLOCKS; b++)
			if (wc_read(g.c, buf, BS, b * BS) != BS || !holds(buf, b, g.acked[b]))
				bad++;
		t++;
		if (bad)
			printf("not ok %d - after reopen, %" PRIu64 " of %u blocks differ\n", t, bad,
			       WORKING_SET_BLOCKS), failures++;
		else
			printf("ok %d - after reopen, all %u blocks hold their last acknowledged version\n", t,
			       WORKING_SET_BLOCKS);
	}
	wc_close(g.c);
	unlink(cache_path);
	atomic_store(&dev.stop, true);
	pthread_join(dev.thread, NULL);
	fault_origin_destroy(fo);
	for (unsigned i = 0; i < INFLIGHT; i++)
		free(slots[i].buf);
	free(buf);
	free(g.acked);
	free(g.in_flight);
	printf("1..%d\n", t);
	return failures ? 1 : 0;
}
