/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * killloop -- kill -9 a writer at random moments, reopen, verify.
 *
 * A child process opens the cache (a file under /dev/shm, the default libaio
 * origin on another /dev/shm file, background threads on) and writes
 * forever: runs of 1..4 blocks, each block a self-identifying pattern of
 * (block, version) with one version counter per block, a wc_flush every few
 * writes and some FUA writes.  What it did lives in a shared-memory log
 * that outlives it:
 *   issued[b]  the highest version of b handed to wc_write (set before);
 *   acked[b]   a version of b made durable by a flush or FUA that returned.
 * The parent kills the child with SIGKILL after a random delay (sometimes
 * during its recovery), reopens the cache and checks every block: a whole
 * pattern of this block (no torn block), a version in [acked, issued] (no
 * acknowledged write lost, no version never written).
 *
 * Usage: killloop [--kills N] [--long] [--seed S] [--max-delay-ms M] [-v]
 * Without --long it runs 20 kills and prints TAP (a make check test);
 * --long runs 200.  Exit status 0 when every kill was survived.
 * --sabotage logs every write as acknowledged without a flush: the loop
 * must then report lost writes (it shows the check can fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crash_model.h"
#include "crashsim.h"
#include "testutil.h"
#include "wcache.h"

#define BS 4096u
#define ORIGIN_BLOCKS 256u        /* 1 MiB working set ... */
#define CACHE_BYTES (320u * 1024) /* ... over a cache of ~70 blocks: write-back runs */
#define FLUSH_EVERY 8             /* writes between flushes */

struct kill_log {
	atomic_uint_fast64_t issued[ORIGIN_BLOCKS];
	atomic_uint_fast64_t acked[ORIGIN_BLOCKS];
	atomic_uint_fast64_t writes, flushes;  /* done by the current child */
	atomic_int ready;                      /* the child's open returned */
};

struct opts {
	unsigned kills;
	uint64_t seed;
	unsigned max_delay_ms;
	bool tap, verbose;
	bool sabotage;        /* count every write as acknowledged: must fail */
	char cache[PATH_MAX + 16], origin[PATH_MAX + 16];
};

static void child_fail(const char *what, long ret)
{
	fprintf(stderr, "killloop child: %s failed: %ld %s\n", what, ret, wc_errmsg());
	_exit(3);
}

/* The writer; never returns (killed by the parent). */
static void child(const struct opts *o, struct kill_log *log, uint64_t seed)
{
	uint64_t done[ORIGIN_BLOCKS], pending[ORIGIN_BLOCKS];
	struct wc_config cfg;
	struct wc_rng rng;
	wc_cache *c;
	void *buf;
	int ret;

	if (posix_memalign(&buf, BS, 4 * BS))
		child_fail("posix_memalign", -ENOMEM);
	wc_rng_seed(&rng, seed);
	wc_config_init(&cfg);
	cfg.block_size = BS;
	cfg.autocommit_blocks = 16;
	cfg.autocommit_ms = 5;
	ret = wc_open(&c, o->cache, o->origin, &cfg);
	if (ret)
		child_fail("wc_open", ret);
	atomic_store(&log->ready, 1);
	/* New versions continue above everything issued before, so a
	 * version never returned by a killed writer is never reused. */
	for (unsigned b = 0; b < ORIGIN_BLOCKS; b++)
		done[b] = pending[b] = atomic_load(&log->acked[b]);

	for (uint64_t n = 1;; n++) {
		uint64_t first = wc_rng_next(&rng) % ORIGIN_BLOCKS, count = 1 + wc_rng_next(&rng) % 4;
		unsigned flags = wc_rng_next(&rng) % 16 == 0 ? WC_FUA : 0;
		ssize_t w;

		if (count > ORIGIN_BLOCKS - first)
			count = ORIGIN_BLOCKS - first;
		for (uint64_t i = 0; i < count; i++) {
			uint64_t b = first + i, v = atomic_load(&log->issued[b]) + 1;

			/* Logged before the write: the parent must know every
			 * version that may reach the media. */
			atomic_store(&log->issued[b], v);
			pending[b] = v;
			wc_pattern_fill((uint8_t *)buf + i * BS, BS, b, v);
		}
		w = wc_write(c, buf, count * BS, first * BS, flags);
		if (w != (ssize_t)(count * BS))
			child_fail("wc_write", w);
		for (uint64_t i = 0; i < count; i++)
			done[first + i] = pending[first + i];
		if ((flags & WC_FUA) || o->sabotage)
			for (uint64_t i = 0; i < count; i++)
				atomic_store(&log->acked[first + i], done[first + i]);
		atomic_fetch_add(&log->writes, 1);
		if (n % FLUSH_EVERY == 0) {
			uint64_t snap[ORIGIN_BLOCKS];

			memcpy(snap, done, sizeof(snap));
			ret = wc_flush(c);
			if (ret)
				child_fail("wc_flush", ret);
			for (unsigned b = 0; b < ORIGIN_BLOCKS; b++)
				if (snap[b] > atomic_load(&log->acked[b]))
					atomic_store(&log->acked[b], snap[b]);
			atomic_fetch_add(&log->flushes, 1);
		}
	}
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

/* Reopen after a kill and check every block against the log.  Returns the
 * number of blocks in violation (or -1 when the cache does not open). */
static int verify(const struct opts *o, struct kill_log *log, unsigned kill_no,
                  uint64_t *unacked_lost)
{
	uint8_t *buf;
	wc_cache *c;
	int bad = 0, ret;

	if (posix_memalign((void **)&buf, BS, (size_t)ORIGIN_BLOCKS * BS))
		return -1;
	ret = wc_open(&c, o->cache, o->origin, NULL);
	if (ret) {
		fprintf(stderr, "kill %u: reopen failed: %d %s\n", kill_no, ret, wc_errmsg());
		free(buf);
		return -1;
	}
	if (wc_read(c, buf, (size_t)ORIGIN_BLOCKS * BS, 0) != (ssize_t)ORIGIN_BLOCKS * BS) {
		fprintf(stderr, "kill %u: read back failed: %s\n", kill_no, wc_errmsg());
		bad = -1;
	}
	for (unsigned b = 0; bad >= 0 && b < ORIGIN_BLOCKS; b++) {
		uint64_t v = 0, lo = atomic_load(&log->acked[b]), hi = atomic_load(&log->issued[b]);
		enum wc_pattern_kind k = wc_pattern_decode(buf + (size_t)b * BS, BS, b, &v);

		if (k != WC_PATTERN_OK) {
			fprintf(stderr, "kill %u: block %u is %s\n", kill_no, b,
			        k == WC_PATTERN_ZERO ? "zeros" : "torn or foreign");
			bad++;
		} else if (v < lo) {
			fprintf(stderr, "kill %u: block %u lost an acknowledged write: v%" PRIu64
			        " < acked v%" PRIu64 "\n", kill_no, b, v, lo);
			bad++;
		} else if (v > hi) {
			fprintf(stderr, "kill %u: block %u holds v%" PRIu64 ", never written (issued up to v%"
			        PRIu64 ")\n", kill_no, b, v, hi);
			bad++;
		} else if (v < hi) {
			(*unacked_lost)++; /* allowed: never acknowledged */
		}
	}
	ret = wc_close(c);
	if (ret && bad >= 0) {
		fprintf(stderr, "kill %u: close after recovery: %d %s\n", kill_no, ret, wc_errmsg());
		bad = -1;
	}
	/* A later child starts from what is now on the media: after this
	 * clean close everything read back is durable. */
	for (unsigned b = 0; bad == 0 && b < ORIGIN_BLOCKS; b++) {
		uint64_t v = 0;

		wc_pattern_decode(buf + (size_t)b * BS, BS, b, &v);
		atomic_store(&log->acked[b], v);
	}
	free(buf);
	return bad;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kills", required_argument, NULL, 'k' },
		{ "long", no_argument, NULL, 'L' },
		{ "seed", required_argument, NULL, 's' },
		{ "max-delay-ms", required_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "sabotage", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .kills = 20, .seed = 1, .max_delay_ms = 40, .tap = true };
	uint64_t total_writes = 0, total_flushes = 0, unacked_lost = 0;
	unsigned survived = 0, during_open = 0; /* kills before the writer's open returned */
	struct kill_log *log;
	struct wc_config cfg;
	struct wc_rng rng;
	wc_cache *c;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "k:Ls:m:vSh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			o.kills = (unsigned)strtoul(optarg, NULL, 0);
			o.tap = false;
			break;
		case 'L':
			o.kills = 200;
			o.tap = false;
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
			fprintf(stderr, "usage: killloop [--kills N | --long] [--seed S] [--max-delay-ms M]"
			        " [--sabotage] [-v]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (o.kills == 0 || o.max_delay_ms == 0) {
		fprintf(stderr, "killloop: --kills and --max-delay-ms must be positive\n");
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
	{
		int fd = open(o.cache, O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || ftruncate(fd, CACHE_BYTES) != 0) {
			perror(o.cache);
			return 2;
		}
		close(fd);
	}
	wc_config_init(&cfg);
	cfg.block_size = BS;
	ret = wc_create(&c, o.cache, o.origin, &cfg);
	if (!ret)
		ret = wc_close(c);
	if (ret) {
		fprintf(stderr, "killloop: creating the cache: %d %s\n", ret, wc_errmsg());
		return 2;
	}
	if (o.tap)
		printf("1..%u\n", o.kills);

	for (unsigned k = 1; k <= o.kills; k++) {
		/* One kill in four within the first 3 ms, to land in the
		 * child's own recovery (wc_open) now and then. */
		unsigned delay_us = wc_rng_next(&rng) % 4 == 0 ?
			(unsigned)(wc_rng_next(&rng) % 3000) :
			1000 + (unsigned)(wc_rng_next(&rng) % (o.max_delay_ms * 1000ull));
		uint64_t child_seed = wc_rng_next(&rng);
		int status, bad;
		pid_t pid;

		atomic_store(&log->ready, 0);
		atomic_store(&log->writes, 0);
		atomic_store(&log->flushes, 0);
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
			bad = verify(&o, log, k, &unacked_lost);
		}
		total_writes += atomic_load(&log->writes);
		total_flushes += atomic_load(&log->flushes);
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
	printf("%skills=%u survived=%u (%u before the writer's wc_open returned) writes=%" PRIu64
	       " flushes=%" PRIu64 " unacknowledged_blocks_lost=%" PRIu64 "\n", o.tap ? "# " : "",
	       o.kills, survived, during_open, total_writes, total_flushes, unacked_lost);
	return survived == o.kills ? 0 : 1;
}
