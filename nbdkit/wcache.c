/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wcache.c -- nbdkit plugin that serves a libwcache cache (a persistent-memory
 * write-back cache in front of an origin file, device or NBD export) over NBD.
 *
 *   nbdkit wcache cache=/dev/shm/wc.cache origin=/dev/sdb [config=OPTS]
 *                 [create=true] [stats=FILE] [stats_interval=SECONDS]
 *   nbdkit wcache cache=/dev/shm/wc.cache origin=nbd://storage/disk0 ...
 *
 * The library only takes whole, aligned blocks; NBD clients send anything.
 * Sub-block edges go through a read-modify-write under a striped lock table,
 * the aligned middle goes straight to the library.  See
 * nbdkit-wcache-plugin(1) for what each NBD command becomes.
 *
 * nbdkit's plugin header is BSD-licensed, so this plugin is BSD-3-Clause like
 * the library it links.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <wcache.h>
#include <wctools.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* NBD's own request limit; larger zero/trim requests are split below. */
#define MAX_REQUEST (32u << 20)
#define ZERO_CHUNK (1u << 20)
#define NSTRIPES 256u

static char *cache_path, *origin_path, *config_str, *stats_path;
static bool create_cache;
static unsigned stats_interval = 1;
static struct wc_config cfg;

static wc_cache *cache;
static uint32_t bs; /* the cache's block size */

/* Never written: the source of every zero request (the library has no
 * "write zeroes" call, so zeroes are copied through the cache). */
static char zero_buf[ZERO_CHUNK] __attribute__((aligned(4096)));

/*
 * A read-modify-write of a block must not interleave with any other write of
 * the same block, or one writer's bytes are lost (two 512-byte xfs log writes
 * into one 4 KiB block are the everyday case).  An RMW takes its block's
 * stripe exclusively; an aligned write takes the stripes of its blocks
 * shared, in ascending order, so aligned writes still run in parallel with
 * each other and no two lockers can wait on each other in a cycle (an RMW
 * holds one stripe only).  Reads take nothing: the library presents each
 * block whole, before or after a write.
 */
static pthread_rwlock_t stripes[NSTRIPES];

/* The plugin's own counters, beside the library's in the stats file: how
 * often clients (xfs's log, for one) make the RMW path run. */
static uint64_t rmw_blocks, zero_bytes;

static unsigned stripe_of(uint64_t block)
{
	return (unsigned)(block % NSTRIPES);
}

/* Per connection: bounce blocks for the edges, so nothing is allocated per
 * request in the steady state and nothing outlives the connection.  nbdkit
 * runs several requests of one connection at once, hence a small pool. */
struct handle {
	pthread_mutex_t lock;
	void **free;
	size_t nfree, cap;
};

/* ---------------------------------------------------------------- stats */

static pthread_t stats_thread;
static bool stats_running;
static bool stats_stop;
static bool stats_poked;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stats_cond = PTHREAD_COND_INITIALIZER;

/* Written to a temporary name and renamed, so a reader never sees half a
 * file. */
static void write_stats(void)
{
	struct wc_stats st;
	struct wct_json j;
	char tmp[4096];
	FILE *f;

	if (!stats_path || !cache)
		return;
	if (wc_get_stats(cache, &st) < 0) {
		nbdkit_error("wcache: stats: %s", wc_errmsg());
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", stats_path);
	f = fopen(tmp, "w");
	if (!f) {
		nbdkit_error("wcache: stats=%s: %s: %m", stats_path, tmp);
		return;
	}
	wct_json_init(&j, f);
	wct_json_object(&j, NULL, true);
	wct_json_str(&j, "cache", cache_path);
	wct_json_str(&j, "origin", origin_path);
	wct_json_u64(&j, "size", wc_size(cache));
	wct_json_u64(&j, "block_size", bs);
	wct_json_int(&j, "error", st.error);
	wct_json_stats(&j, &st);
	wct_json_u64(&j, "plugin_rmw_blocks", __atomic_load_n(&rmw_blocks, __ATOMIC_RELAXED));
	wct_json_u64(&j, "plugin_zero_bytes", __atomic_load_n(&zero_bytes, __ATOMIC_RELAXED));
	wct_json_str(&j, "granularity", st.granularity);
	wct_json_str(&j, "origin_mode", st.origin_mode);
	wct_json_end(&j);
	if (fclose(f) != 0) {
		nbdkit_error("wcache: stats=%s: %s: %m", stats_path, tmp);
		unlink(tmp);
		return;
	}
	if (rename(tmp, stats_path) < 0) {
		nbdkit_error("wcache: stats=%s: rename: %m", stats_path);
		unlink(tmp);
	}
}

static void deadline_in(struct timespec *t, long ms)
{
	clock_gettime(CLOCK_REALTIME, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000;
	if (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

/* Every stats_interval seconds, and soon after a flush, but at most ten
 * times a second: a client flushing thousands of times a second must not
 * turn this thread into a file writer running flat out. */
static void *stats_main(void *arg)
{
	struct timespec soonest, latest;

	pthread_mutex_lock(&stats_lock);
	while (!stats_stop) {
		stats_poked = false;
		pthread_mutex_unlock(&stats_lock);
		write_stats();
		pthread_mutex_lock(&stats_lock);
		deadline_in(&soonest, 100);
		deadline_in(&latest, 1000L * stats_interval);
		while (!stats_stop &&
		       pthread_cond_timedwait(&stats_cond, &stats_lock, &soonest) != ETIMEDOUT)
			;
		while (!stats_stop && !stats_poked &&
		       pthread_cond_timedwait(&stats_cond, &stats_lock, &latest) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&stats_lock);
	return NULL;
}

static void stats_poke(void)
{
	if (!stats_running)
		return;
	pthread_mutex_lock(&stats_lock);
	stats_poked = true;
	pthread_cond_signal(&stats_cond);
	pthread_mutex_unlock(&stats_lock);
}

/* ------------------------------------------------------ life cycle */

static void wcache_load(void)
{
	pthread_rwlockattr_t attr;

	/* glibc's default prefers readers: a stream of aligned writes would
	 * starve an RMW of the same stripe forever. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (unsigned i = 0; i < NSTRIPES; i++)
		pthread_rwlock_init(&stripes[i], &attr);
	pthread_rwlockattr_destroy(&attr);
	wc_config_init(&cfg);
}

static void close_cache(void)
{
	int ret;

	if (stats_running) {
		pthread_mutex_lock(&stats_lock);
		stats_stop = true;
		pthread_cond_signal(&stats_cond);
		pthread_mutex_unlock(&stats_lock);
		pthread_join(stats_thread, NULL);
		stats_running = false;
	}
	if (!cache)
		return;
	write_stats();
	ret = wc_close(cache);
	if (ret < 0)
		nbdkit_error("wcache: close %s: %s", cache_path, wc_errmsg());
	cache = NULL;
}

/* Commit and close once every connection is gone (SIGTERM, SIGINT, -e ...). */
static void wcache_cleanup(void)
{
	close_cache();
}

static void wcache_unload(void)
{
	close_cache(); /* in case .cleanup never ran */
	for (unsigned i = 0; i < NSTRIPES; i++)
		pthread_rwlock_destroy(&stripes[i]);
	free(cache_path);
	free(origin_path);
	free(config_str);
	free(stats_path);
}

static int wcache_config(const char *key, const char *value)
{
	int r;

	if (!strcmp(key, "cache") || !strcmp(key, "origin") || !strcmp(key, "stats")) {
		char **dst = key[0] == 'c' ? &cache_path : key[0] == 'o' ? &origin_path : &stats_path;
		char *p;

		/* The cache may not exist yet with create=true, and the stats file
		 * usually does not: absolute paths without requiring existence,
		 * since nbdkit changes directory to / when it daemonizes.  An
		 * origin that is not a path (wc_origin_open's rule: an NBD URI
		 * has "://", an RBD spec starts "rbd:") is taken as it is. */
		if (!strcmp(key, "origin") && (strstr(value, "://") || !strncmp(value, "rbd:", 4)))
			p = strdup(value);
		else if (!strcmp(key, "origin"))
			p = nbdkit_realpath(value);
		else
			p = nbdkit_absolute_path(value);
		if (!p) {
			if (errno == ENOMEM)
				nbdkit_error("strdup: %m");
			return -1;
		}
		free(*dst);
		*dst = p;
		return 0;
	}
	if (!strcmp(key, "config")) {
		free(config_str);
		config_str = strdup(value);
		if (!config_str) {
			nbdkit_error("strdup: %m");
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "create")) {
		r = nbdkit_parse_bool(value);
		if (r < 0)
			return -1;
		create_cache = r;
		return 0;
	}
	if (!strcmp(key, "stats_interval")) {
		if (nbdkit_parse_unsigned("stats_interval", value, &stats_interval) < 0)
			return -1;
		if (stats_interval == 0) {
			nbdkit_error("stats_interval must be at least 1 second");
			return -1;
		}
		return 0;
	}
	nbdkit_error("unknown parameter '%s'", key);
	return -1;
}

static int wcache_config_complete(void)
{
	if (!cache_path || !origin_path) {
		nbdkit_error("cache=PATH and origin=PATH|URI are required");
		return -1;
	}
	if (config_str && wc_config_parse(&cfg, config_str) < 0) {
		nbdkit_error("config=%s: %s", config_str, wc_errmsg());
		return -1;
	}
	if (stats_path) {
		/* Refused at start, not after the fork (where the stats
		 * thread would only log it). */
		char *dir = strdup(stats_path), *slash;

		if (!dir) {
			nbdkit_error("strdup: %m");
			return -1;
		}
		slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		if (access(slash ? dir : ".", W_OK | X_OK) < 0) {
			nbdkit_error("stats=%s: the folder %s: %m", stats_path, slash ? dir : ".");
			free(dir);
			return -1;
		}
		free(dir);
	}
	if (cfg.no_threads) {
		/* Nothing here would drive wc_poll(): the cache would fill up
		 * and never write back. */
		nbdkit_error("config=%s: no_threads is not supported by this plugin", config_str);
		return -1;
	}
	return 0;
}

#define wcache_config_help \
	"cache=<PATH>        (required) The cache (pmem) file or device.\n" \
	"origin=<PATH|URI>   (required) The origin behind it: a file, a device or an\n" \
	"                    NBD URI (nbd://HOST/EXPORT, nbd+unix:///?socket=PATH).\n" \
	"config=<OPTS>       libwcache options, e.g. high_watermark=60,cache_size=1G.\n" \
	"create=true         Format the cache when it holds none yet.\n" \
	"stats=<FILE>        Rewrite the cache's counters (JSON) into FILE.\n" \
	"stats_interval=<S>  Seconds between rewrites (default 1)."

static void wcache_dump_plugin(void)
{
	printf("wcache_version=%d.%d\n", WCACHE_VERSION_MAJOR, WCACHE_VERSION_MINOR);
	printf("wcache_rmw=yes\n");
}

/* Format only what holds no cache: a missing or empty file, or one whose
 * superblock is all zeroes (-ENODATA).  A damaged cache (bad CRC, bad magic)
 * is refused, never reformatted: it may still hold the only copy of data.
 * A file this call created is removed again if formatting it failed. */
static int open_or_create(const struct wc_config *config, wc_cache **out)
{
	struct stat st;
	bool existed = stat(cache_path, &st) == 0;
	int ret;

	if (create_cache && (!existed || (S_ISREG(st.st_mode) && st.st_size == 0)))
		ret = -ENODATA;
	else
		ret = wc_open(out, cache_path, origin_path, config);
	if (ret == -ENODATA && create_cache) {
		if ((!existed || (S_ISREG(st.st_mode) && st.st_size == 0)) && !config->cache_size) {
			nbdkit_error("wcache: %s %s, and create=true needs the size to make it: "
			             "config=cache_size=SIZE (e.g. cache_size=1G)", cache_path,
			             existed ? "is empty" : "does not exist");
			return -EINVAL;
		}
		nbdkit_debug("wcache: %s holds no cache: formatting it", cache_path);
		ret = wc_create(out, cache_path, origin_path, config);
		if (ret < 0 && !existed)
			unlink(cache_path);
	}
	if (ret < 0) {
		nbdkit_error("wcache: %s %s (origin %s): %s", create_cache ? "open/create" : "open",
		             cache_path, origin_path, wc_errmsg());
		*out = NULL;
	}
	return ret;
}

/*
 * Before nbdkit forks into the background, so that every reason the cache
 * cannot be served -- missing, in use, damaged, made for another origin --
 * makes nbdkit exit non-zero with the message on stderr, instead of a child
 * that dies after its parent reported success.  This open recovers, checks
 * the origin's identity and formats (create=true) with no threads, and
 * closes again: the library's threads and the origin's I/O context (libaio,
 * librados) do not survive fork.  after_fork opens it for serving.
 */
static int wcache_get_ready(void)
{
	struct wc_config check = cfg;
	wc_cache *c;

	check.no_threads = true;
	if (open_or_create(&check, &c) < 0)
		return -1;
	if (wc_close(c) < 0) {
		nbdkit_error("wcache: close %s: %s", cache_path, wc_errmsg());
		return -1;
	}
	return 0;
}

/* The library's write-back and commit threads would not survive the fork
 * into the background, so the cache is opened for serving only after it. */
static int wcache_after_fork(void)
{
	int err;

	if (open_or_create(&cfg, &cache) < 0)
		return -1;
	bs = wc_block_size(cache);
	if (stats_path) {
		err = pthread_create(&stats_thread, NULL, stats_main, NULL);
		if (err) {
			errno = err;
			nbdkit_error("wcache: stats thread: %m");
			return -1;
		}
		stats_running = true;
	}
	return 0;
}

static void *wcache_open(int readonly)
{
	struct handle *h = calloc(1, sizeof(*h));

	if (!h) {
		nbdkit_error("calloc: %m");
		return NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

static void wcache_close(void *handle)
{
	struct handle *h = handle;

	for (size_t i = 0; i < h->nfree; i++)
		free(h->free[i]);
	free(h->free);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static void *bounce_get(struct handle *h)
{
	void *p = NULL;

	pthread_mutex_lock(&h->lock);
	if (h->nfree)
		p = h->free[--h->nfree];
	pthread_mutex_unlock(&h->lock);
	if (!p) {
		p = aligned_alloc(4096, bs < 4096 ? 4096 : bs);
		if (!p)
			nbdkit_error("wcache: bounce buffer: %m");
	}
	return p;
}

static void bounce_put(struct handle *h, void *p)
{
	pthread_mutex_lock(&h->lock);
	if (h->nfree == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 8;
		void **n = realloc(h->free, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&h->lock);
			free(p);
			return;
		}
		h->free = n;
		h->cap = cap;
	}
	h->free[h->nfree++] = p;
	pthread_mutex_unlock(&h->lock);
}

/* ------------------------------------------------------------- data */

static int64_t wcache_get_size(void *handle)
{
	return (int64_t)wc_size(cache);
}

static int wcache_block_size(void *handle, uint32_t *minimum, uint32_t *preferred,
                             uint32_t *maximum)
{
	/* Smaller or misaligned requests are still served (read-modify-write);
	 * 512 tells clients that sectors are the useful unit. */
	*minimum = 512;
	*preferred = bs;
	*maximum = MAX_REQUEST;
	return 0;
}

static int wcache_can_write(void *handle) { return 1; }
static int wcache_can_flush(void *handle) { return 1; }
static int wcache_can_trim(void *handle) { return 1; }
static int wcache_can_zero(void *handle) { return 1; }
/* Zeroes are copied, which is no faster than a write. */
static int wcache_can_fast_zero(void *handle) { return 0; }
static int wcache_is_rotational(void *handle) { return 0; }

/* With fua=0 in config= the library ignores WC_FUA; nbdkit then follows each
 * FUA write with a flush, so the client's FUA still means durable. */
static int wcache_can_fua(void *handle)
{
	return cfg.fua ? NBDKIT_FUA_NATIVE : NBDKIT_FUA_EMULATE;
}

/* wc_flush() commits every write completed before it, whichever connection
 * (thread) issued it: one connection's flush covers all of them. */
static int wcache_can_multi_conn(void *handle) { return 1; }

static int fail(int ret, const char *what, uint64_t off, uint64_t len)
{
	nbdkit_error("wcache: %s of %" PRIu64 " bytes at %" PRIu64 ": %s", what, len, off,
	             wc_errmsg());
	nbdkit_set_error(ret == -EINVAL ? EINVAL : -ret);
	return -1;
}

static int wcache_pread(void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct handle *h = handle;
	char *out = buf;
	ssize_t r;

	while (count) {
		uint64_t blk_off = offset % bs;

		if (blk_off || count < bs) {
			uint32_t n = bs - blk_off < count ? bs - (uint32_t)blk_off : count;
			char *b = bounce_get(h);

			if (!b) {
				nbdkit_set_error(ENOMEM);
				return -1;
			}
			r = wc_read(cache, b, bs, offset - blk_off);
			if (r >= 0)
				memcpy(out, b + blk_off, n);
			bounce_put(h, b);
			if (r < 0)
				return fail((int)r, "read", offset, n);
			out += n;
			offset += n;
			count -= n;
		} else {
			uint32_t n = count - count % bs;

			r = wc_read(cache, out, n, offset);
			if (r < 0)
				return fail((int)r, "read", offset, n);
			out += n;
			offset += n;
			count -= n;
		}
	}
	return 0;
}

/* One edge block: bytes [blk_off, blk_off + n) of block `block` from src. */
static int rmw(struct handle *h, const char *src, uint32_t n, uint64_t block, uint32_t blk_off,
               unsigned wflags)
{
	pthread_rwlock_t *l = &stripes[stripe_of(block)];
	char *b = bounce_get(h);
	ssize_t r;

	if (!b) {
		nbdkit_set_error(ENOMEM);
		return -1;
	}
	pthread_rwlock_wrlock(l);
	r = wc_read(cache, b, bs, block * bs);
	if (r >= 0) {
		memcpy(b + blk_off, src, n);
		r = wc_write(cache, b, bs, block * bs, wflags);
	}
	pthread_rwlock_unlock(l);
	bounce_put(h, b);
	__atomic_fetch_add(&rmw_blocks, 1, __ATOMIC_RELAXED);
	if (r < 0)
		return fail((int)r, "read-modify-write", block * bs + blk_off, n);
	return 0;
}

/* Whole blocks [offset, offset + len), len a multiple of bs. */
static int aligned_write(const char *src, uint32_t len, uint64_t offset, unsigned wflags)
{
	uint64_t first = offset / bs, nblocks = len / bs;
	uint64_t mask[NSTRIPES / 64] = { 0 };
	ssize_t r;

	if (nblocks >= NSTRIPES) {
		memset(mask, 0xff, sizeof(mask));
	} else {
		for (uint64_t b = first; b < first + nblocks; b++)
			mask[stripe_of(b) / 64] |= 1ull << (stripe_of(b) % 64);
	}
	for (unsigned i = 0; i < NSTRIPES; i++)
		if (mask[i / 64] & (1ull << (i % 64)))
			pthread_rwlock_rdlock(&stripes[i]);
	r = wc_write(cache, src, len, offset, wflags);
	for (unsigned i = 0; i < NSTRIPES; i++)
		if (mask[i / 64] & (1ull << (i % 64)))
			pthread_rwlock_unlock(&stripes[i]);
	if (r < 0)
		return fail((int)r, "write", offset, len);
	return 0;
}

/* A write (or, with src == NULL, a zero) of any alignment.  A request that
 * is one library call takes WC_FUA; one split into several is written
 * without it and committed by one flush at the end, so it costs one commit. */
static int do_write(struct handle *h, const char *src, uint32_t count, uint64_t offset,
                    uint32_t flags)
{
	bool fua = flags & NBDKIT_FLAG_FUA;
	bool single = offset % bs == 0 && count % bs == 0 && (src || count <= ZERO_CHUNK);
	unsigned wflags = fua && single ? WC_FUA : 0;
	int ret;

	while (count) {
		uint64_t blk_off = offset % bs;
		uint32_t n;

		if (blk_off || count < bs) {
			n = bs - blk_off < count ? bs - (uint32_t)blk_off : count;
			ret = rmw(h, src ? src : zero_buf, n, offset / bs, (uint32_t)blk_off, wflags);
		} else {
			n = count - count % bs;
			if (!src && n > ZERO_CHUNK)
				n = ZERO_CHUNK;
			ret = aligned_write(src ? src : zero_buf, n, offset, wflags);
		}
		if (ret < 0)
			return ret;
		if (src)
			src += n;
		offset += n;
		count -= n;
	}
	if (fua && !single) {
		ret = wc_flush(cache);
		if (ret < 0)
			return fail(ret, "flush (FUA)", offset, 0);
	}
	return 0;
}

static int wcache_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
                         uint32_t flags)
{
	return do_write(handle, buf, count, offset, flags);
}

static int wcache_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	if (flags & NBDKIT_FLAG_FAST_ZERO) {
		nbdkit_set_error(ENOTSUP);
		return -1;
	}
	__atomic_fetch_add(&zero_bytes, count, __ATOMIC_RELAXED);
	return do_write(handle, NULL, count, offset, flags);
}

static int wcache_flush(void *handle, uint32_t flags)
{
	int ret = wc_flush(cache);

	if (ret < 0)
		return fail(ret, "flush", 0, 0);
	stats_poke();
	return 0;
}

/* Advisory: only the whole blocks inside the range are discarded (their
 * contents become the origin's); the edges are left as they are, which NBD
 * allows. */
static int wcache_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	uint64_t start = (offset + bs - 1) / bs * bs;
	uint64_t end = (offset + count) / bs * bs;
	int ret;

	if (end > start) {
		ret = wc_discard(cache, start, end - start);
		if (ret < 0)
			return fail(ret, "trim", start, end - start);
	}
	if (flags & NBDKIT_FLAG_FUA)
		return wcache_flush(handle, 0);
	return 0;
}

static struct nbdkit_plugin plugin = {
	.name = "wcache",
	.longname = "libwcache persistent-memory write-back cache",
	.version = PACKAGE_VERSION,
	.description = "Serve a libwcache cache and its origin over NBD.",
	.load = wcache_load,
	.unload = wcache_unload,
	.config = wcache_config,
	.config_complete = wcache_config_complete,
	.config_help = wcache_config_help,
	.dump_plugin = wcache_dump_plugin,
	.get_ready = wcache_get_ready,
	.after_fork = wcache_after_fork,
	.cleanup = wcache_cleanup,
	.open = wcache_open,
	.close = wcache_close,
	.get_size = wcache_get_size,
	.block_size = wcache_block_size,
	.can_write = wcache_can_write,
	.can_flush = wcache_can_flush,
	.can_trim = wcache_can_trim,
	.can_zero = wcache_can_zero,
	.can_fast_zero = wcache_can_fast_zero,
	.can_fua = wcache_can_fua,
	.can_multi_conn = wcache_can_multi_conn,
	.is_rotational = wcache_is_rotational,
	.pread = wcache_pread,
	.pwrite = wcache_pwrite,
	.zero = wcache_zero,
	.flush = wcache_flush,
	.trim = wcache_trim,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
