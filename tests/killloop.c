/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * killloop -- kill -9 a writer at random moments, reopen, verify.
 *
 * A child process opens the cache (the default libaio origin on a /dev/shm
 * file, background threads on) and writes forever from one or more threads,
 * each owning a slice of the origin's blocks: runs of 1..4 blocks, each
 * block a self-identifying pattern of (block, version) with one version
 * counter per block, a wc_flush every few operations, some FUA writes and,
 * on the block medium, some discards.  What it did lives in a shared-memory
 * log that outlives it:
 *   issued[b]   the highest version of b handed to wc_write or wc_discard
 *               (set before the call: a discard takes a version too);
 *   acked[b]    a version of b made durable: a FUA write or a discard that
 *               returned, or a write done before a wc_flush that returned;
 *   discard[b]  the highest version of b that is a discard (0: none).
 * The parent kills the child with SIGKILL after a random delay (sometimes
 * during its recovery), reads the origin file as the crash left it, reopens
 * the cache and checks every block: a whole pattern of this block with a
 * version in [acked, issued] (no acknowledged write lost, no version never
 * written), or -- only when a discard at or after the acknowledged version
 * may have landed -- the origin's own content.  Anything else is torn.
 *
 * Media:
 *   --medium pmem   (default) the cache on a /dev/shm file, CACHE_LINE
 *                   granularity forced, one writer thread, no discards;
 *   --medium block  the cache on a file of a disk file system
 *                   (WC_TEST_DISK_DIR, default /var/tmp; never tmpfs), three
 *                   writer threads, discards; the ring is small, so
 *                   write-back and segment reclaim run during the loop
 *                   (counted: the writer publishes its wc_stats).
 *
 * Usage: killloop [--medium pmem|block] [--kills N] [--long] [--threads T]
 *                 [--seed S] [--max-delay-ms M] [--sabotage] [-v]
 * Without --kills/--long it runs 20 kills and prints TAP (a make check
 * test); --long runs 200.  Exit status 0 when every kill was survived.
 * --sabotage logs every write as acknowledged without a flush (on the block
 * medium: before the call, as a killed process loses no write that
 * returned there): the loop must then report lost writes (it shows the
 * check can fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crash_model.h"
#include "crashsim.h"
#include "testutil.h"
#include "wcache.h"

#define BS 4096u
#define ORIGIN_BLOCKS 256u        /* 1 MiB working set ... */
#define CACHE_BYTES (320u * 1024) /* ... over a pmem cache of ~70 blocks: write-back runs */
/* The block medium's smallest ring for 4 KiB blocks is 4 segments of
 * 128 KiB after the 64 KiB head: 5 segments of 192 KiB here, ~40 records
 * each, so the working set overflows it many times a second. */
#define BLOCK_CACHE_BYTES (1088u * 1024)
#define FLUSH_EVERY 8             /* operations of a thread between its flushes */
#define MAX_THREADS 8
#define TMPFS_MAGIC_ 0x01021994

struct kill_log {
	atomic_uint_fast64_t issued[ORIGIN_BLOCKS];
	atomic_uint_fast64_t acked[ORIGIN_BLOCKS];
	atomic_uint_fast64_t discard[ORIGIN_BLOCKS];
	/* Done by the current child: */
	atomic_uint_fast64_t writes, flushes, discards;
	atomic_uint_fast64_t acked_writes;     /* wc_write calls acknowledged */
	atomic_uint_fast64_t reclaimed, wb_bytes; /* its last wc_stats */
	atomic_int ready;                      /* the child's open returned */
};

struct opts {
	unsigned kills;
	unsigned threads;
	uint64_t seed;
	unsigned max_delay_ms;
	bool tap, verbose;
	bool block;           /* the block medium */
	bool sabotage;        /* count every write as acknowledged: must fail */
	char cache[PATH_MAX + 16], origin[PATH_MAX + 16];
};

struct writer {
	const struct opts *o;
	struct kill_log *log;
	wc_cache *c;
	uint64_t seed;
	unsigned lo, hi;      /* its blocks */
	bool reports;         /* publishes the cache's stats */
};

static void child_fail(const char *what, long ret)
{
	fprintf(stderr, "killloop child: %s failed: %ld %s\n", what, ret, wc_errmsg());
	_exit(3);
}

static void ack(struct kill_log *log, uint64_t b, uint64_t v)
{
	/* Only the block's own writer stores it: no race to a lower value. */
	if (v > atomic_load(&log->acked[b]))
		atomic_store(&log->acked[b], v);
}

/* One writer thread over blocks [lo, hi); never returns. */
static void *writer(void *arg)
{
	struct writer *w = arg;
	struct kill_log *log = w->log;
	uint64_t done[ORIGIN_BLOCKS], snap[ORIGIN_BLOCKS], unacked = 0;
	unsigned span = w->hi - w->lo;
	struct wc_rng rng;
	void *buf;
	int ret;

	if (posix_memalign(&buf, BS, 4 * BS))
		child_fail("posix_memalign", -ENOMEM);
	wc_rng_seed(&rng, w->seed);
	for (unsigned b = w->lo; b < w->hi; b++)
		done[b] = atomic_load(&log->acked[b]);

	for (uint64_t n = 1;; n++) {
		uint64_t first = w->lo + wc_rng_next(&rng) % span, count = 1 + wc_rng_next(&rng) % 4;
		uint64_t r = wc_rng_next(&rng) % 16;
		bool discard = w->o->block && r == 0;
		unsigned flags = r == 1 ? WC_FUA : 0;

		if (count > w->hi - first)
			count = w->hi - first;
		for (uint64_t i = 0; i < count; i++) {
			uint64_t b = first + i, v = atomic_load(&log->issued[b]) + 1;

			/* Logged before the call: the parent must know every
			 * version that may reach the media. */
			atomic_store(&log->issued[b], v);
			if (discard)
				atomic_store(&log->discard[b], v);
			else
				wc_pattern_fill((uint8_t *)buf + i * BS, BS, b, v);
		}
		if (discard) {
			/* Durable when it returns (its records are synced). */
			ret = wc_discard(w->c, first * BS, count * BS);
			if (ret)
				child_fail("wc_discard", ret);
			for (uint64_t i = 0; i < count; i++) {
				done[first + i] = atomic_load(&log->issued[first + i]);
				ack(log, first + i, done[first + i]);
			}
			atomic_fetch_add(&log->discards, 1);
		} else {
			ssize_t wr;

			/* A killed process loses no write that returned on the
			 * block medium (the page cache or the device has it): the
			 * sabotage there acknowledges before the call instead. */
			if (w->o->sabotage && w->o->block)
				for (uint64_t i = 0; i < count; i++)
					ack(log, first + i, atomic_load(&log->issued[first + i]));
			wr = wc_write(w->c, buf, count * BS, first * BS, flags);

			if (wr != (ssize_t)(count * BS))
				child_fail("wc_write", wr);
			for (uint64_t i = 0; i < count; i++)
				done[first + i] = atomic_load(&log->issued[first + i]);
			if ((flags & WC_FUA) || w->o->sabotage) {
				for (uint64_t i = 0; i < count; i++)
					ack(log, first + i, done[first + i]);
				atomic_fetch_add(&log->acked_writes, 1);
			} else {
				unacked++;
			}
			atomic_fetch_add(&log->writes, 1);
		}
		if (n % FLUSH_EVERY == 0) {
			uint64_t covered = unacked;

			/* What was done before the flush began is what it covers. */
			memcpy(snap + w->lo, done + w->lo, span * sizeof(*snap));
			ret = wc_flush(w->c);
			if (ret)
				child_fail("wc_flush", ret);
			for (unsigned b = w->lo; b < w->hi; b++)
				ack(log, b, snap[b]);
			atomic_fetch_add(&log->acked_writes, covered);
			unacked -= covered;
			atomic_fetch_add(&log->flushes, 1);
			if (w->reports) {
				struct wc_stats st;

				if (wc_get_stats(w->c, &st) == 0) {
					atomic_store(&log->reclaimed, st.medium_segments_reclaimed);
					atomic_store(&log->wb_bytes, st.writeback_bytes);
				}
			}
		}
	}
	return NULL;
}

/* The writer process; never returns (killed by the parent). */
static void child(const struct opts *o, struct kill_log *log, uint64_t seed)
{
	struct writer w[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	struct wc_config cfg;
	struct wc_rng rng;
	wc_cache *c;
	int ret;

	wc_rng_seed(&rng, seed);
	wc_config_init(&cfg);
	cfg.block_size = BS;
	cfg.autocommit_blocks = 16;
	cfg.autocommit_ms = 5;
	if (o->block) {
		/* Write-back early, so that the ring wraps under the writers. */
		cfg.high_watermark = 40;
		cfg.low_watermark = 20;
	}
	ret = wc_open(&c, o->cache, o->origin, &cfg);
	if (ret)
		child_fail("wc_open", ret);
	atomic_store(&log->ready, 1);
	/* New versions continue above everything issued before, so a
	 * version never returned by a killed writer is never reused. */
	for (unsigned t = 0; t < o->threads; t++) {
		w[t] = (struct writer){ .o = o, .log = log, .c = c, .seed = wc_rng_next(&rng),
		                        .lo = ORIGIN_BLOCKS * t / o->threads,
		                        .hi = ORIGIN_BLOCKS * (t + 1) / o->threads, .reports = t == 0 };
		if (t > 0 && (ret = pthread_create(&tid[t], NULL, writer, &w[t])) != 0)
			child_fail("pthread_create", -ret);
	}
	writer(&w[0]);
	_exit(4);
}

static int fill_origin(const char *path)
{
	uint8_t *buf = malloc((size_t)ORIGIN_BLOCKS * BS);
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	for (unsigned b = 0; b < ORIGIN_BLOCKS; b++)
		wc_pattern_fill(buf + (size_t)b * BS, BS, b, 0);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)ORIGIN_BLOCKS * BS) != (ssize_t)ORIGIN_BLOCKS * BS)
		ret = -errno ? -errno : -EIO;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* The origin file as the killed writer left it (its content is what a
 * landed discard shows). */
static int read_origin(const char *path, uint8_t *buf)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, buf, (size_t)ORIGIN_BLOCKS * BS, 0);
	close(fd);
	return n == (ssize_t)ORIGIN_BLOCKS * BS ? 0 : -EIO;
}

struct totals {
	uint64_t writes, acked_writes, flushes, discards, unacked_lost, from_origin;
	uint64_t reclaimed, wb_bytes;
};

/* Reopen after a kill and check every block against the log.  Returns the
 * number of blocks in violation (or -1 when the cache does not open). */
static int verify(const struct opts *o, struct kill_log *log, unsigned kill_no, struct totals *t)
{
	uint8_t *buf, *orig;
	struct wc_config cfg;
	wc_cache *c;
	int bad = 0, ret;

	buf = aligned_alloc(BS, (size_t)ORIGIN_BLOCKS * BS);
	orig = malloc((size_t)ORIGIN_BLOCKS * BS);
	if (!buf || !orig || read_origin(o->origin, orig) != 0) {
		fprintf(stderr, "kill %u: reading the origin failed\n", kill_no);
		free(buf);
		free(orig);
		return -1;
	}
	/* No write-back while checking: the origin stays as read above. */
	wc_config_init(&cfg);
	cfg.no_threads = true;
	ret = wc_open(&c, o->cache, o->origin, &cfg);
	if (ret) {
		fprintf(stderr, "kill %u: reopen failed: %d %s\n", kill_no, ret, wc_errmsg());
		free(buf);
		free(orig);
		return -1;
	}
	if (wc_read(c, buf, (size_t)ORIGIN_BLOCKS * BS, 0) != (ssize_t)ORIGIN_BLOCKS * BS) {
		fprintf(stderr, "kill %u: read back failed: %s\n", kill_no, wc_errmsg());
		bad = -1;
	}
	for (unsigned b = 0; bad >= 0 && b < ORIGIN_BLOCKS; b++) {
		uint64_t v = 0, lo = atomic_load(&log->acked[b]), hi = atomic_load(&log->issued[b]);
		uint64_t d = atomic_load(&log->discard[b]);
		const uint8_t *got = buf + (size_t)b * BS;
		enum wc_pattern_kind k = wc_pattern_decode(got, BS, b, &v);
		/* A discard at or after the acknowledged version may have
		 * landed: the block is then the origin's. */
		bool origin_ok = d != 0 && d >= lo;

		if (k == WC_PATTERN_OK && v >= lo && v <= hi) {
			if (v < hi)
				t->unacked_lost++; /* allowed: never acknowledged */
		} else if (origin_ok && memcmp(got, orig + (size_t)b * BS, BS) == 0) {
			t->from_origin++;
		} else if (k != WC_PATTERN_OK) {
			fprintf(stderr, "kill %u: block %u is %s\n", kill_no, b,
			        k == WC_PATTERN_ZERO ? "zeros" : "torn or foreign");
			bad++;
		} else if (v < lo) {
			fprintf(stderr, "kill %u: block %u lost an acknowledged %s: v%" PRIu64
			        " < acked v%" PRIu64 "\n", kill_no, b, lo == d ? "discard" : "write", v, lo);
			bad++;
		} else {
			fprintf(stderr, "kill %u: block %u holds v%" PRIu64 ", never written (issued up to v%"
			        PRIu64 ")\n", kill_no, b, v, hi);
			bad++;
		}
	}
	if (o->block && bad == 0) {
		struct wc_stats st;

		if (wc_get_stats(c, &st) == 0)
			t->reclaimed += st.medium_segments_reclaimed;
	}
	ret = wc_close(c);
	if (ret && bad >= 0) {
		fprintf(stderr, "kill %u: close after recovery: %d %s\n", kill_no, ret, wc_errmsg());
		bad = -1;
	}
	/* A later child starts from what is now on the media: after this
	 * clean close everything read back is durable (a block read from
	 * the origin after a discard stays "discarded"). */
	for (unsigned b = 0; bad == 0 && b < ORIGIN_BLOCKS; b++) {
		uint64_t v = 0, d = atomic_load(&log->discard[b]);

		if (wc_pattern_decode(buf + (size_t)b * BS, BS, b, &v) == WC_PATTERN_OK &&
		    v <= atomic_load(&log->issued[b]))
			atomic_store(&log->acked[b], v);
		else
			atomic_store(&log->acked[b], d);
	}
	free(buf);
	free(orig);
	return bad;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char block_cache_path[PATH_MAX + 64];

static void remove_block_cache(void)
{
	if (block_cache_path[0])
		unlink(block_cache_path);
}

/* The cache file: a /dev/shm file (pmem) or a file of a disk file system. */
static int make_cache(struct opts *o)
{
	struct wc_config cfg;
	wc_cache *c;
	int ret;

	wc_config_init(&cfg);
	cfg.block_size = BS;
	if (o->block) {
		const char *dir = getenv("WC_TEST_DISK_DIR");
		struct statfs sfs;
		char opts[64];

		if (!dir || !*dir)
			dir = "/var/tmp";
		if (statfs(dir, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC_) {
			fprintf(stderr, "killloop: %s is tmpfs; the block medium needs a disk file system "
			        "(set WC_TEST_DISK_DIR)\n", dir);
			return -EINVAL;
		}
		snprintf(o->cache, sizeof(o->cache), "%s/wckill-%d.cache", dir, (int)getpid());
		snprintf(block_cache_path, sizeof(block_cache_path), "%s", o->cache);
		unlink(o->cache);
		atexit(remove_block_cache);
		snprintf(opts, sizeof(opts), "medium=block,cache_size=%u", BLOCK_CACHE_BYTES);
		if (wc_config_parse(&cfg, opts) != 0) {
			fprintf(stderr, "killloop: %s\n", wc_errmsg());
			return -EINVAL;
		}
	} else {
		int fd = open(o->cache, O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || ftruncate(fd, CACHE_BYTES) != 0) {
			perror(o->cache);
			return -EIO;
		}
		close(fd);
	}
	ret = wc_create(&c, o->cache, o->origin, &cfg);
	if (!ret) {
		struct wc_stats st;

		if (wc_get_stats(c, &st) == 0 && strcmp(st.medium, o->block ? "block" : "pmem") != 0) {
			fprintf(stderr, "killloop: the cache is on the %s medium, not %s\n", st.medium,
			        o->block ? "block" : "pmem");
			wc_close(c);
			return -EINVAL;
		}
		ret = wc_close(c);
	}
	if (ret)
		fprintf(stderr, "killloop: creating the cache: %d %s\n", ret, wc_errmsg());
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kills", required_argument, NULL, 'k' },
		{ "long", no_argument, NULL, 'L' },
		{ "medium", required_argument, NULL, 'M' },
		{ "threads", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "max-delay-ms", required_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "sabotage", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .kills = 20, .seed = 1, .tap = true };
	struct totals tot = { 0 };
	unsigned survived = 0, during_open = 0; /* kills before the writer's open returned */
	struct kill_log *log;
	struct wc_rng rng;
	double t0;
	int opt;

	while ((opt = getopt_long(argc, argv, "k:LM:t:s:m:vSh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			o.kills = (unsigned)strtoul(optarg, NULL, 0);
			o.tap = false;
			break;
		case 'L':
			o.kills = 200;
			o.tap = false;
			break;
		case 'M':
			if (strcmp(optarg, "block") != 0 && strcmp(optarg, "pmem") != 0) {
				fprintf(stderr, "killloop: --medium is pmem or block\n");
				return 2;
			}
			o.block = strcmp(optarg, "block") == 0;
			break;
		case 't':
			o.threads = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			o.max_delay_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'S':
			o.sabotage = true;
			break;
		default:
			fprintf(stderr, "usage: killloop [--medium pmem|block] [--kills N | --long] "
			        "[--threads T] [--seed S] [--max-delay-ms M] [--sabotage] [-v]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (o.threads == 0)
		o.threads = o.block ? 3 : 1;
	if (o.max_delay_ms == 0) /* a disk write takes longer than a store */
		o.max_delay_ms = o.block ? 150 : 40;
	if (o.kills == 0 || o.threads > MAX_THREADS) {
		fprintf(stderr, "killloop: --kills must be positive, --threads at most %u\n",
		        MAX_THREADS);
		return 2;
	}
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	wc_test_path(o.cache, sizeof(o.cache), "kill.cache");
	wc_test_path(o.origin, sizeof(o.origin), "kill.origin");
	wc_rng_seed(&rng, o.seed);

	log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (log == MAP_FAILED || fill_origin(o.origin) != 0) {
		perror("killloop: setup");
		return 2;
	}
	if (make_cache(&o) != 0)
		return 2;
	if (o.tap) /* the block medium's last line: the ring wrapped */
		printf("1..%u\n", o.kills + (o.block ? 1 : 0));

	t0 = now_s();
	for (unsigned k = 1; k <= o.kills; k++) {
		/* One kill in four within the first 3 ms (20 on the block
		 * medium, whose open syncs several writes), to land in the
		 * child's own recovery (wc_open) now and then. */
		unsigned delay_us = wc_rng_next(&rng) % 4 == 0 ?
			(unsigned)(wc_rng_next(&rng) % (o.block ? 20000 : 3000)) :
			1000 + (unsigned)(wc_rng_next(&rng) % (o.max_delay_ms * 1000ull));
		uint64_t child_seed = wc_rng_next(&rng);
		int status, bad;
		pid_t pid;

		atomic_store(&log->ready, 0);
		atomic_store(&log->writes, 0);
		atomic_store(&log->flushes, 0);
		atomic_store(&log->discards, 0);
		atomic_store(&log->acked_writes, 0);
		atomic_store(&log->reclaimed, 0);
		atomic_store(&log->wb_bytes, 0);
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0)
			child(&o, log, child_seed);
		sleep_us(delay_us);
		if (!atomic_load(&log->ready))
			during_open++;
		kill(pid, SIGKILL);
		if (waitpid(pid, &status, 0) != pid) {
			perror("waitpid");
			return 2;
		}
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			/* The child died before the kill: it reported why. */
			fprintf(stderr, "kill %u: the writer exited on its own (status %d)\n", k, status);
			bad = 1;
		} else {
			bad = verify(&o, log, k, &tot);
		}
		tot.writes += atomic_load(&log->writes);
		tot.acked_writes += atomic_load(&log->acked_writes);
		tot.flushes += atomic_load(&log->flushes);
		tot.discards += atomic_load(&log->discards);
		tot.reclaimed += atomic_load(&log->reclaimed);
		tot.wb_bytes += atomic_load(&log->wb_bytes);
		if (bad == 0)
			survived++;
		if (o.tap)
			printf("%s %u - kill after %u us (%" PRIu64 " writes, %" PRIu64 " flushes)\n",
			       bad == 0 ? "ok" : "not ok", k, delay_us, atomic_load(&log->writes),
			       atomic_load(&log->flushes));
		else if (o.verbose || bad)
			printf("kill %u after %u us: %" PRIu64 " writes %" PRIu64 " flushes: %s\n", k, delay_us,
			       atomic_load(&log->writes), atomic_load(&log->flushes), bad ? "FAILED" : "ok");
	}
	printf("%smedium=%s threads=%u kills=%u survived=%u (%u before the writer's wc_open returned) "
	       "writes=%" PRIu64 " acknowledged_writes=%" PRIu64 " flushes=%" PRIu64 " discards=%" PRIu64
	       " unacknowledged_blocks_lost=%" PRIu64 " blocks_read_from_origin_after_discard=%" PRIu64
	       " segments_reclaimed=%" PRIu64 " writeback_bytes=%" PRIu64 " seconds=%.1f\n",
	       o.tap ? "# " : "", o.block ? "block" : "pmem", o.threads, o.kills, survived, during_open,
	       tot.writes, tot.acked_writes, tot.flushes, tot.discards, tot.unacked_lost, tot.from_origin,
	       tot.reclaimed, tot.wb_bytes, now_s() - t0);
	if (o.block) {
		/* The loop is meant to cover write-back and reclaim. */
		if (o.tap)
			printf("%s %u - segments reclaimed during the loop: %" PRIu64 "\n",
			       tot.reclaimed ? "ok" : "not ok", o.kills + 1, tot.reclaimed);
		else if (!tot.reclaimed)
			printf("no segment was reclaimed: the ring never wrapped\n");
		if (!tot.reclaimed)
			return 1;
	}
	return survived == o.kills ? 0 : 1;
}
