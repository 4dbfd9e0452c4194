/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_block.c -- the block medium's power-failure sweep (crash_block.h):
 * the per-block model of what was acknowledged, crash points on the
 * simulated device (blkdev.h), the driver calls of crash_block_impl.h, and
 * the check of every image: reopened on a device holding it, read back
 * block by block against the model, its recovery crashed too.
 *
 * As in the pmem sweep (crash_run.c), a crash point only captures: it runs
 * inside the cache's I/O with its locks held.  Images are checked when the
 * call returned (one thread) or when the writers of a round have joined.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_block_impl.h"
#include "testutil.h"

#define ORIGIN_SECTOR 512u
#define DISCARDED (UINT64_C(1) << 63)
#define MAX_HELD_CAPTURES 600u  /* images awaiting their check (threads) */

/* ---- the per-block model ---- */

struct bhist {
	uint64_t *v;             /* versions written (DISCARDED: a discard), in order */
	uint32_t n, cap;
};

struct bmodel {
	pthread_mutex_t lock;
	uint64_t nb;
	uint32_t bs;
	uint64_t calls;          /* the last version handed out */
	struct bhist *h;
	uint32_t *dur;           /* events of each block acknowledged durable (a count) */
	uint32_t *done;          /* events of each block that returned */
};

/* What an image must be explained by, per block: events [0, dur) durable,
 * [0, n) started. */
struct bsnap {
	uint32_t dur, done, n;
};

static int model_init(struct bmodel *m, uint64_t nb, uint32_t bs)
{
	pthread_mutex_init(&m->lock, NULL);
	m->nb = nb;
	m->bs = bs;
	m->h = calloc(nb, sizeof(*m->h));
	m->dur = calloc(nb, sizeof(*m->dur));
	m->done = calloc(nb, sizeof(*m->done));
	return m->h && m->dur && m->done ? 0 : -ENOMEM;
}

static void model_fini(struct bmodel *m)
{
	for (uint64_t b = 0; m->h && b < m->nb; b++)
		free(m->h[b].v);
	free(m->h);
	free(m->dur);
	free(m->done);
	pthread_mutex_destroy(&m->lock);
}

/* Record a call on [first, first+count) (lock held); idx[i]: its event's
 * place in each block's history. */
static uint64_t model_add(struct bmodel *m, uint64_t first, uint64_t count, bool discard,
                          uint32_t *idx)
{
	uint64_t v = ++m->calls;

	for (uint64_t i = 0; i < count; i++) {
		struct bhist *h = &m->h[first + i];

		if (h->n == h->cap) {
			uint32_t cap = h->cap ? 2 * h->cap : 16;
			uint64_t *p = realloc(h->v, cap * sizeof(*p));

			if (!p)
				abort();
			h->v = p;
			h->cap = cap;
		}
		idx[i] = h->n;
		h->v[h->n++] = discard ? (v | DISCARDED) : v;
	}
	return v;
}

static struct bsnap *model_snap(struct bmodel *m)
{
	struct bsnap *s = malloc(m->nb * sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_lock(&m->lock);
	for (uint64_t b = 0; b < m->nb; b++)
		s[b] = (struct bsnap){ m->dur[b], m->done[b], m->h[b].n };
	pthread_mutex_unlock(&m->lock);
	return s;
}

/* Taken after the image: what had started.  A writer on another thread
 * whose write goes around the cache (cleaner mode) reaches the origin
 * without the device's lock, so it may land in the origin's image after
 * the snapshot taken before it. */
static void model_snap_started(struct bmodel *m, struct bsnap *s)
{
	pthread_mutex_lock(&m->lock);
	for (uint64_t b = 0; b < m->nb; b++)
		s[b].n = m->h[b].n;
	pthread_mutex_unlock(&m->lock);
}

/* After a discard the origin's content counts, and a discard there is not
 * durable until its flush: a power cut keeps each of its sectors zeroed or
 * as it was.  So each 512-byte sector of the block is zeros or the same
 * sector of a version once written (lock held). */
static bool sector_mix_ok(struct bmodel *m, uint64_t b, const uint8_t *data, struct bsnap s,
                          uint32_t from, bool zeros)
{
	const struct bhist *h = &m->h[b];
	uint8_t *pat = malloc(m->bs);
	bool ok = true;

	if (!pat)
		abort();
	for (uint32_t off = 0; off < m->bs && ok; off += 512) {
		bool sector_ok = true;

		for (uint32_t k = 0; k < 512 && sector_ok; k++)
			sector_ok = data[off + k] == 0;
		if (!zeros)
			sector_ok = false;
		for (uint32_t i = from; i <= s.n && !sector_ok; i++) {
			uint64_t v = i ? h->v[i - 1] : 0;

			if (v & DISCARDED)
				continue;
			wc_pattern_fill(pat, m->bs, b, v);
			sector_ok = memcmp(pat + off, data + off, 512) == 0;
		}
		ok = sector_ok;
	}
	free(pat);
	return ok;
}

/* Does `data` for block b satisfy the contract under s (lock held)? */
static bool check_block(struct bmodel *m, uint64_t b, const uint8_t *data, struct bsnap s,
                        bool inflight_tear, char *why, size_t why_len)
{
	const struct bhist *h = &m->h[b];
	uint64_t got = 0, floor_v;
	enum wc_pattern_kind k = wc_pattern_decode(data, m->bs, b, &got);
	bool any = false, seen = false;

	/* A write in flight (threads) may be a write-around in cleaner mode,
	 * which the origin writes 512-byte sectors of atomically only: until
	 * it returns, each sector is one of the versions the block may show. */
	if (k == WC_PATTERN_GARBAGE && inflight_tear && s.done < s.n &&
	    sector_mix_ok(m, b, data, s, s.dur, false))
		return true;
	for (uint32_t i = s.dur ? s.dur - 1 : 0; i < s.n && !any; i++)
		any = (h->v[i] & DISCARDED) != 0;
	if (k == WC_PATTERN_GARBAGE && any && sector_mix_ok(m, b, data, s, 0, true))
		return true;
	if (k == WC_PATTERN_GARBAGE) {
		const uint64_t *w = (const void *)data;

		snprintf(why, why_len, "block %" PRIu64 " torn or foreign (header block %" PRIu64
		         " v%" PRIu64 ")", b, w[1], w[2]);
		return false;
	}
	floor_v = s.dur ? h->v[s.dur - 1] : 0;
	if (!(floor_v & DISCARDED) && k == WC_PATTERN_OK && got == floor_v)
		seen = true;
	for (uint32_t i = s.dur; i < s.n && !seen; i++)
		if (!(h->v[i] & DISCARDED) && k == WC_PATTERN_OK && got == h->v[i])
			seen = true;
	if (seen)
		return true;
	if (any) {
		/* What the origin may hold: zeros, or a version once written. */
		if (k == WC_PATTERN_ZERO || got == 0)
			return true;
		for (uint32_t i = 0; i < s.n; i++)
			if (h->v[i] == got)
				return true;
	}
	if (k == WC_PATTERN_ZERO)
		snprintf(why, why_len, "block %" PRIu64 " reads zeros; durable v%" PRIu64 " (%u of %u "
		         "events durable)", b, floor_v & ~DISCARDED, s.dur, s.n);
	else
		snprintf(why, why_len, "block %" PRIu64 " reads v%" PRIu64 "; durable %s v%" PRIu64
		         " (%u of %u events durable)%s", b, got,
		         (floor_v & DISCARDED) ? "discard" : "write", floor_v & ~DISCARDED, s.dur, s.n,
		         got < (floor_v & ~DISCARDED) ? ": an older version came back" : "");
	return false;
}

/* ---- the run ---- */

struct bcap {
	struct bimage *img;
	uint8_t *origin;
	struct bsnap *snap;
	bool formatting;
	char label[200];
};

struct caplist {
	struct bcap *v;
	size_t n, cap;
};

struct bdrv {
	const struct blk_opts *o;
	struct blk_result *r;
	const struct blk_workload *wl;
	struct bmodel m;
	struct fault_origin *fo;
	struct wc_origin origin;
	struct blkdev *dev;
	struct wc_test_hooks hooks;
	wc_cache *c;
	struct wc_config cfg;
	char path[PATH_MAX], vpath[2][PATH_MAX];
	struct bthr main;
	struct wc_rng img_rng;       /* captures (device lock held) */
	struct wc_rng vrng;          /* checks (main thread) */
	uint8_t *buf;                /* every block, read back */
	pthread_mutex_t cap_lock;
	struct caplist caps;
	atomic_uint_fast64_t captured, ops;
	bool formatting;
	bool threaded;
	uint64_t verified;
	uint64_t points;             /* crash points seen (device lock) */
	uint64_t reclaimed;          /* segments reclaimed, over every open */
	uint64_t n_segments;
	uint64_t old_gen;            /* durable_gen of the last OLD image (device lock) */
	bool have_old;
};

static __thread char tl_op[96];

static void say(const struct blk_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(const struct blk_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vfprintf(o->log, fmt, ap);
	va_end(ap);
	fflush(o->log);
}

static uint8_t *io_buffer(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, 4096, len ? len : 4096) == 0 ? p : NULL;
}

static void cap_free(struct bcap *c)
{
	bimage_free(c->img);
	free(c->origin);
	free(c->snap);
}

static void caplist_free(struct caplist *l)
{
	for (size_t i = 0; i < l->n; i++)
		cap_free(&l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The origin after a power cut: durable, plus each sector written since
 * its last flush kept or lost on its own. */
static uint8_t *origin_image(struct fault_origin *fo, enum blkdev_mode mode, struct wc_rng *rng)
{
	const uint8_t *dur = fault_origin_durable(fo), *vol = fault_origin_volatile(fo);
	uint64_t size = fault_origin_size(fo);
	uint8_t *out = malloc(size);

	if (!out)
		return NULL;
	for (uint64_t off = 0; off < size; off += ORIGIN_SECTOR) {
		const uint8_t *src = dur + off;

		if (mode != BLKDEV_OLD && memcmp(dur + off, vol + off, ORIGIN_SECTOR) != 0 &&
		    (mode == BLKDEV_NEW || (wc_rng_next(rng) & 1)))
			src = vol + off;
		memcpy(out + off, src, ORIGIN_SECTOR);
	}
	return out;
}

static const char *event_name(enum blkdev_event ev)
{
	static const char *const n[] = { "before-write", "after-write", "before-flush", "after-flush" };

	return n[ev];
}

static const char *mode_name(enum blkdev_mode m)
{
	static const char *const n[] = { "old", "new", "writes", "torn", "mixed" };

	return n[m];
}

/* The images a crash point yields.  OLD only when the durable content
 * changed since the last; nothing new after a write that stays pending
 * (the point before it saw the same pending set). */
static unsigned point_modes(struct blkdev *dev, enum blkdev_event ev, bool dsync, unsigned rpp,
                            uint64_t *old_gen, bool *have_old, enum blkdev_mode *m)
{
	unsigned n = 0;

	if (!*have_old || blkdev_durable_gen(dev) != *old_gen) {
		m[n++] = BLKDEV_OLD;
		*old_gen = blkdev_durable_gen(dev);
		*have_old = true;
	}
	if (!blkdev_pending(dev) || (ev == BLKDEV_AFTER_WRITE && !dsync) || ev == BLKDEV_AFTER_FLUSH)
		return n;
	if (!rpp) {
		m[n++] = BLKDEV_MIXED; /* a recovery's crash: one random image */
		return n;
	}
	m[n++] = BLKDEV_NEW;
	for (unsigned i = 0; i < rpp; i++) {
		m[n++] = BLKDEV_MIXED;
		m[n++] = BLKDEV_TORN;
	}
	if (rpp > 1)
		m[n++] = BLKDEV_WRITES;
	return n;
}

#define MAX_MODES 24

static int capture_one(struct caplist *l, struct blkdev *dev, struct fault_origin *fo,
                       enum blkdev_mode mode, struct wc_rng *rng, struct bsnap *snap,
                       bool formatting, const char *label)
{
	struct bcap *c;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		struct bcap *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	c = &l->v[l->n];
	memset(c, 0, sizeof(*c));
	c->img = blkdev_capture(dev, mode, rng);
	c->origin = origin_image(fo, mode, rng);
	c->snap = snap;
	c->formatting = formatting;
	snprintf(c->label, sizeof(c->label), "%s %s", label, mode_name(mode));
	if (!c->img || !c->origin) {
		cap_free(c);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static unsigned rpp(const struct blk_opts *o)
{
	unsigned r = o->random_per_point ? o->random_per_point : 1;

	return r > (MAX_MODES - 3) / 2 ? (MAX_MODES - 3) / 2 : r;
}

static void workload_point(void *ctx, struct blkdev *dev, enum blkdev_event ev, uint64_t off,
                           uint64_t len, bool dsync)
{
	struct bdrv *d = ctx;
	enum blkdev_mode modes[MAX_MODES];
	unsigned n = point_modes(dev, ev, dsync, rpp(d->o), &d->old_gen, &d->have_old, modes);
	char label[160];
	size_t first;

	if (d->o->trace)
		fprintf(d->o->trace, "  %s %" PRIu64 "+%" PRIu64 "%s (%s)\n", event_name(ev), off, len,
		        dsync ? " dsync" : "", tl_op[0] ? tl_op : "write-back thread");
	if (!n || (d->formatting && !d->wl->crash_format))
		return;
	if (d->o->point_every > 1 && ++d->points % d->o->point_every != 0) {
		/* A point skipped: its OLD image is still to take. */
		d->have_old = false;
		return;
	}
	snprintf(label, sizeof(label), "%s op %" PRIu64 " (%s) %s %" PRIu64 "+%" PRIu64 "%s",
	         d->wl->name, (uint64_t)d->ops, tl_op[0] ? tl_op : "write-back thread",
	         event_name(ev), off, len, dsync ? " dsync" : "");
	pthread_mutex_lock(&d->cap_lock);
	first = d->caps.n;
	for (unsigned i = 0; i < n; i++) {
		struct bsnap *snap;

		if (d->o->max_images && d->r->images + d->captured >= d->o->max_images)
			break;
		if (d->threaded && d->caps.n >= MAX_HELD_CAPTURES) {
			d->r->skipped++;
			continue;
		}
		snap = model_snap(&d->m);
		if (!snap || capture_one(&d->caps, dev, d->fo, modes[i], &d->img_rng, snap,
		                         d->formatting, label) != 0) {
			free(snap);
			d->r->errors++;
			say(d->o, "crash point %s: out of memory\n", label);
			break;
		}
		d->captured++;
	}
	for (size_t i = first; i < d->caps.n; i++)
		model_snap_started(&d->m, d->caps.v[i].snap);
	pthread_mutex_unlock(&d->cap_lock);
}

/* ---- checking one image ---- */

struct rcv {
	struct bdrv *d;
	const struct bcap *of;
	struct fault_origin *fo;
	struct caplist caps;
	uint64_t old_gen;
	bool have_old;
};

static void recovery_point(void *ctx, struct blkdev *dev, enum blkdev_event ev, uint64_t off,
                           uint64_t len, bool dsync)
{
	struct rcv *rc = ctx;
	enum blkdev_mode modes[MAX_MODES];
	unsigned n = point_modes(dev, ev, dsync, 0, &rc->old_gen, &rc->have_old, modes);
	char label[160];

	snprintf(label, sizeof(label), "recovery %s %" PRIu64 "+%" PRIu64 " of [%.100s]",
	         event_name(ev), off, len, rc->of->label);
	for (unsigned i = 0; i < n; i++) {
		struct bsnap *snap = malloc(rc->d->m.nb * sizeof(*snap));

		if (snap)
			memcpy(snap, rc->of->snap, rc->d->m.nb * sizeof(*snap));
		if (!snap || capture_one(&rc->caps, dev, rc->fo, modes[i], &rc->d->vrng, snap,
		                         rc->of->formatting, label) != 0) {
			free(snap);
			rc->d->r->errors++;
			break;
		}
	}
}

static void open_config(struct wc_config *cfg, uint32_t bs)
{
	wc_config_init(cfg);
	cfg->block_size = bs;
	cfg->medium = WC_MEDIUM_BLOCK;
	cfg->no_threads = true;
	cfg->autocommit_ms = 3600 * 1000; /* never by time: time is not replayable */
	cfg->max_age_ms = 0;
}

/* The first unit of the device into the cache's file: wc_open reads the
 * magic from the file itself to pick the medium. */
static int sync_magic(const char *path, const struct wc_blk_io_hooks *io)
{
	uint8_t unit[4096];
	int fd, ret;

	ret = io->pread(io->ctx, unit, sizeof(unit), 0);
	if (ret)
		return ret;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = pwrite(fd, unit, sizeof(unit), 0) == (ssize_t)sizeof(unit) ? 0 : -EIO;
	close(fd);
	return ret;
}

static int make_file(const char *path, uint64_t bytes)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ret;

	if (fd < 0)
		return -errno;
	ret = ftruncate(fd, (off_t)bytes) == 0 ? 0 : -errno;
	close(fd);
	return ret;
}

static bool read_check(struct bdrv *d, wc_cache *c, const struct bsnap *snap, char *why,
                       size_t why_len)
{
	uint64_t nb = d->m.nb, bs = d->m.bs;
	ssize_t n = wc_read(c, d->buf, nb * bs, 0);
	bool ok = true;

	if (n != (ssize_t)(nb * bs)) {
		snprintf(why, why_len, "wc_read of the whole origin returned %zd: %s", n, wc_errmsg());
		return false;
	}
	pthread_mutex_lock(&d->m.lock);
	for (uint64_t b = 0; b < nb && ok; b++)
		ok = check_block(&d->m, b, d->buf + b * bs, snap[b], d->threaded, why, why_len);
	pthread_mutex_unlock(&d->m.lock);
	return ok;
}

static bool stats_hold(wc_cache *c, char *why, size_t why_len)
{
	struct wc_stats st;
	int ret = wc_get_stats(c, &st);

	if (ret != 0) {
		snprintf(why, why_len, "wc_get_stats after recovery: %d %s", ret, wc_errmsg());
		return false;
	}
	if (st.error != 0 || st.writeback_blocks != 0 || st.free_blocks > st.blocks ||
	    st.dirty_blocks > st.blocks || st.free_blocks + st.dirty_blocks > st.blocks) {
		snprintf(why, why_len, "stats after recovery break invariants: error %d blocks %" PRIu64
		         " free %" PRIu64 " dirty %" PRIu64, st.error, st.blocks, st.free_blocks,
		         st.dirty_blocks);
		return false;
	}
	return true;
}

/* The recovered cache works: a FUA write of one block, close, reopen, and
 * every block as it was plus the probe. */
static bool probe(struct bdrv *d, const char *path, struct fault_origin *fo, char *why,
                  size_t why_len)
{
	uint32_t bs = d->m.bs;
	uint64_t nb = d->m.nb, b = wc_rng_next(&d->vrng) % nb, got;
	uint64_t version = (1ull << 40) + d->verified;
	uint8_t *before = malloc(nb * bs), *blk = io_buffer(bs);
	struct wc_config cfg;
	wc_cache *c = NULL;
	bool ok = false;
	int ret;

	if (!before || !blk)
		abort();
	memcpy(before, d->buf, nb * bs);
	open_config(&cfg, bs);
	wc_pattern_fill(blk, bs, b, version);
	ret = wc_open_origin(&c, path, fault_origin_origin(fo), &cfg);
	if (ret) {
		snprintf(why, why_len, "probe: reopening the recovered cache: %d %s", ret, wc_errmsg());
		c = NULL;
		goto out;
	}
	if (wc_write(c, blk, bs, b * bs, WC_FUA) != (ssize_t)bs) {
		snprintf(why, why_len, "probe: FUA write of block %" PRIu64 ": %s", b, wc_errmsg());
		goto out;
	}
	ret = wc_close(c);
	c = NULL;
	if (ret) {
		snprintf(why, why_len, "probe: close: %d %s", ret, wc_errmsg());
		goto out;
	}
	ret = wc_open_origin(&c, path, fault_origin_origin(fo), &cfg);
	if (ret) {
		snprintf(why, why_len, "probe: second reopen: %d %s", ret, wc_errmsg());
		c = NULL;
		goto out;
	}
	if (wc_read(c, d->buf, nb * bs, 0) != (ssize_t)(nb * bs)) {
		snprintf(why, why_len, "probe: read back: %s", wc_errmsg());
		goto out;
	}
	for (uint64_t i = 0; i < nb; i++) {
		if (i == b) {
			if (wc_pattern_decode(d->buf + i * bs, bs, i, &got) != WC_PATTERN_OK || got != version) {
				snprintf(why, why_len, "probe: block %" PRIu64 " lost its FUA write", b);
				goto out;
			}
		} else if (memcmp(d->buf + i * bs, before + i * bs, bs) != 0) {
			snprintf(why, why_len, "probe: block %" PRIu64 " changed across close and reopen", i);
			goto out;
		}
	}
	ok = true;
out:
	if (c && wc_close(c) != 0 && ok) {
		snprintf(why, why_len, "probe: final close: %s", wc_errmsg());
		ok = false;
	}
	free(before);
	free(blk);
	return ok;
}

static void dump(struct bdrv *d, const struct bcap *cap, const char *why)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], cmd[2 * PATH_MAX + 64];
	uint8_t *img;
	FILE *f;

	if (!d->o->dump_dir)
		return;
	snprintf(dir, sizeof(dir), "%s/block-%s-s%" PRIu64 "-i%" PRIu64, d->o->dump_dir, d->wl->name,
	         d->o->seed, d->r->images);
	mkdir(d->o->dump_dir, 0755);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return;
	img = malloc(bimage_size(cap->img));
	if (!img)
		return;
	bimage_copy_out(cap->img, img);
	snprintf(path, sizeof(path), "%s/cache.img", dir);
	f = fopen(path, "wb");
	if (f) {
		fwrite(img, 1, bimage_size(cap->img), f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/origin.img", dir);
	f = fopen(path, "wb");
	if (f) {
		fwrite(cap->origin, 1, d->m.nb * d->m.bs, f);
		fclose(f);
	}
	free(img);
	snprintf(cmd, sizeof(cmd), "gzip -9nf '%s/cache.img' '%s/origin.img'", dir, dir);
	if (system(cmd) != 0)
		say(d->o, "  gzip of %s failed\n", dir);
	snprintf(path, sizeof(path), "%s/case.txt", dir);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "workload %s seed %" PRIu64 "\nlabel %s\nwhy %s\nformatting %d\n",
		        d->wl->name, d->o->seed, cap->label, why, cap->formatting);
		fclose(f);
	}
	say(d->o, "  dumped to %s\n", dir);
}

static uint64_t verify(struct bdrv *d, const struct bcap *cap, int depth)
{
	const struct blk_opts *o = d->o;
	struct rcv rc = { .d = d, .of = cap };
	struct blkdev *vdev = NULL;
	struct blkdev_config vc = { .size = d->wl->cache_bytes, .sector = d->wl->tear };
	struct wc_test_hooks vh, *saved = wc_test_hooks;
	const char *path = d->vpath[depth > 0];
	char why[1024] = "";
	struct wc_config cfg;
	wc_cache *c = NULL;
	uint64_t violations = 0;
	bool ok = false;
	int ret;

	d->verified++;
	d->r->images++;
	if (depth > 0)
		d->r->recovery_images++;
	if (depth == 0 && o->recovery_every && d->verified % o->recovery_every == 0) {
		vc.point = recovery_point;
		vc.ctx = &rc;
	}
	if (fault_origin_create(&rc.fo, d->m.nb * d->m.bs, ORIGIN_SECTOR) != 0 ||
	    fault_origin_load(rc.fo, cap->origin, d->m.nb * d->m.bs, 0) != 0 ||
	    blkdev_new(&vdev, &vc, cap->img) != 0 || sync_magic(path, blkdev_hooks(vdev)) != 0) {
		say(o, "cannot set up the image of [%s]\n", cap->label);
		d->r->errors++;
		goto out;
	}
	memset(&vh, 0, sizeof(vh));
	vh.blk_io = blkdev_hooks(vdev);
	wc_test_hooks = &vh;
	open_config(&cfg, d->m.bs);
	ret = wc_open_origin(&c, path, fault_origin_origin(rc.fo), &cfg);
	if (ret) {
		const char *msg = wc_errmsg();

		c = NULL;
		if (!cap->formatting) {
			snprintf(why, sizeof(why), "open refused a crash image: %d %s", ret, msg);
		} else if (!msg || !msg[0]) {
			snprintf(why, sizeof(why), "open refused a torn format (%d) without a message", ret);
		} else {
			/* A torn format is refused, and a new one over it works. */
			ret = wc_create_origin(&c, path, fault_origin_origin(rc.fo), &cfg);
			if (ret) {
				snprintf(why, sizeof(why), "create over a torn format failed: %d %s", ret,
				         wc_errmsg());
				c = NULL;
			} else {
				ok = true;
			}
			d->r->refused++;
		}
		goto closed;
	}
	if (!read_check(d, c, cap->snap, why, sizeof(why)) || !stats_hold(c, why, sizeof(why)))
		goto closed;
	ret = wc_close(c);
	c = NULL;
	if (ret) {
		snprintf(why, sizeof(why), "close after recovery: %d %s", ret, wc_errmsg());
		goto closed;
	}
	ok = true;
	if (depth == 0 && o->probe_every && d->verified % o->probe_every == 0) {
		/* The probe's own I/O is not a crash to check. */
		blkdev_set_point(vdev, NULL, NULL);
		d->r->probes++;
		ok = probe(d, path, rc.fo, why, sizeof(why));
	}
closed:
	if (c)
		wc_close(c);
	wc_test_hooks = saved;
	if (!ok) {
		violations++;
		say(o, "VIOLATION [%s]: %s\n", cap->label, why);
		dump(d, cap, why);
	}
	for (size_t i = 0; i < rc.caps.n; i++)
		violations += verify(d, &rc.caps.v[i], depth + 1);
out:
	wc_test_hooks = saved;
	caplist_free(&rc.caps);
	blkdev_free(vdev);
	if (rc.fo)
		fault_origin_destroy(rc.fo);
	return violations;
}

static void verify_captures(struct bdrv *d)
{
	for (;;) {
		struct caplist l;

		pthread_mutex_lock(&d->cap_lock);
		l = d->caps;
		memset(&d->caps, 0, sizeof(d->caps));
		d->captured -= l.n;
		pthread_mutex_unlock(&d->cap_lock);
		if (!l.n) {
			free(l.v);
			return;
		}
		for (size_t i = 0; i < l.n; i++) {
			d->r->violations += verify(d, &l.v[i], 0);
			cap_free(&l.v[i]);
		}
		free(l.v);
	}
}

/* The live cache reads back what the model says (all writers joined). */
static int live_check(struct bdrv *d)
{
	uint64_t nb = d->m.nb, bs = d->m.bs, v;

	if (!d->c)
		return 0;
	if (wc_read(d->c, d->buf, nb * bs, 0) != (ssize_t)(nb * bs)) {
		say(d->o, "%s: read back after %s failed: %s\n", d->wl->name, tl_op, wc_errmsg());
		d->r->errors++;
		return -EIO;
	}
	pthread_mutex_lock(&d->m.lock);
	for (uint64_t b = 0; b < nb; b++) {
		const struct bhist *h = &d->m.h[b];
		uint64_t want = h->n ? h->v[h->n - 1] : 0;
		enum wc_pattern_kind k = wc_pattern_decode(d->buf + b * bs, bs, b, &v);

		if ((want & DISCARDED) ? k == WC_PATTERN_GARBAGE : (k != WC_PATTERN_OK || v != want)) {
			say(d->o, "%s: after %s the live cache reads block %" PRIu64 " wrong (want v%"
			    PRIu64 "%s)\n", d->wl->name, tl_op, b, want & ~DISCARDED,
			    (want & DISCARDED) ? ", discarded" : "");
			d->r->violations++;
		}
	}
	pthread_mutex_unlock(&d->m.lock);
	return 0;
}

/* ---- the driver ---- */

static void begin(struct bthr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void begin(struct bthr *t, const char *fmt, ...)
{
	struct bdrv *d = t->d;
	va_list ap;

	d->ops++;
	va_start(ap, fmt);
	vsnprintf(tl_op, sizeof(tl_op), fmt, ap);
	va_end(ap);
	if (!d->threaded)
		d->r->calls++;
	if (d->o->trace)
		fprintf(d->o->trace, "op %" PRIu64 " [%u]: %s\n", (uint64_t)d->ops, t->id, tl_op);
}

static int end(struct bthr *t)
{
	struct bdrv *d = t->d;

	if (d->threaded && t != &d->main)
		return 0;
	verify_captures(d);
	return live_check(d);
}

static int failed(struct bthr *t, long ret)
{
	struct bdrv *d = t->d;

	say(d->o, "%s: %s failed: %ld %s\n", d->wl->name, tl_op, ret, wc_errmsg());
	d->r->errors++;
	if (!d->threaded || t == &d->main)
		verify_captures(d);
	return ret < 0 ? (int)ret : -EIO;
}

static int sync_file(struct bdrv *d)
{
	return sync_magic(d->path, blkdev_hooks(d->dev));
}

int bd_create(struct bdrv *d)
{
	int ret;

	begin(&d->main, "create");
	d->formatting = true;
	ret = wc_create_origin(&d->c, d->path, d->origin, &d->cfg);
	d->formatting = false;
	if (ret) {
		d->c = NULL;
		return failed(&d->main, ret);
	}
	return end(&d->main);
}

int bd_open(struct bdrv *d)
{
	int ret;

	begin(&d->main, "open");
	ret = sync_file(d);
	if (!ret)
		ret = wc_open_origin(&d->c, d->path, d->origin, &d->cfg);
	if (ret) {
		d->c = NULL;
		return failed(&d->main, ret);
	}
	return end(&d->main);
}

static void ack_all_done(struct bdrv *d, const uint32_t *done)
{
	pthread_mutex_lock(&d->m.lock);
	for (uint64_t b = 0; b < d->m.nb; b++)
		if (d->m.dur[b] < done[b])
			d->m.dur[b] = done[b];
	pthread_mutex_unlock(&d->m.lock);
}

static uint32_t *done_snap(struct bdrv *d)
{
	uint32_t *s = malloc(d->m.nb * sizeof(*s));

	if (!s)
		abort();
	pthread_mutex_lock(&d->m.lock);
	memcpy(s, d->m.done, d->m.nb * sizeof(*s));
	pthread_mutex_unlock(&d->m.lock);
	return s;
}

int bd_close(struct bdrv *d)
{
	uint32_t *done;
	int ret;

	begin(&d->main, "close");
	d->reclaimed += bd_reclaimed(d);
	done = done_snap(d);
	ret = wc_close(d->c);
	d->c = NULL;
	if (ret) {
		free(done);
		return failed(&d->main, ret);
	}
	ack_all_done(d, done);
	free(done);
	return end(&d->main);
}

int bd_write(struct bthr *t, uint64_t first, uint64_t count, bool fua)
{
	struct bdrv *d = t->d;
	uint32_t bs = d->m.bs, idx[256];
	uint64_t v;
	ssize_t ret;

	if (count > 256 || first < t->lo || first + count > t->hi)
		abort(); /* a workload bug */
	begin(t, "write %" PRIu64 "+%" PRIu64 "%s", first, count, fua ? " fua" : "");
	pthread_mutex_lock(&d->m.lock);
	v = model_add(&d->m, first, count, false, idx);
	pthread_mutex_unlock(&d->m.lock);
	if (d->o->trace)
		fprintf(d->o->trace, "  version %" PRIu64 "\n", v);
	for (uint64_t i = 0; i < count; i++)
		wc_pattern_fill(t->buf + i * bs, bs, first + i, v);
	ret = wc_write(d->c, t->buf, count * bs, first * bs, fua ? WC_FUA : 0);
	if (ret != (ssize_t)(count * bs))
		return failed(t, ret);
	pthread_mutex_lock(&d->m.lock);
	for (uint64_t i = 0; i < count; i++) {
		uint64_t b = first + i;

		if (d->m.done[b] < idx[i] + 1)
			d->m.done[b] = idx[i] + 1;
		if (fua && d->m.dur[b] < idx[i] + 1)
			d->m.dur[b] = idx[i] + 1;
	}
	pthread_mutex_unlock(&d->m.lock);
	return end(t);
}

int bd_flush(struct bthr *t)
{
	struct bdrv *d = t->d;
	uint32_t *done;
	int ret;

	begin(t, "flush");
	done = done_snap(d);
	ret = wc_flush(d->c);
	if (ret) {
		free(done);
		return failed(t, ret);
	}
	ack_all_done(d, done);
	free(done);
	return end(t);
}

int bd_discard(struct bthr *t, uint64_t first, uint64_t count)
{
	struct bdrv *d = t->d;
	uint32_t idx[256];
	int ret;

	if (count > 256 || first < t->lo || first + count > t->hi)
		abort();
	begin(t, "discard %" PRIu64 "+%" PRIu64, first, count);
	pthread_mutex_lock(&d->m.lock);
	model_add(&d->m, first, count, true, idx);
	pthread_mutex_unlock(&d->m.lock);
	ret = wc_discard(d->c, first * d->m.bs, count * d->m.bs);
	if (ret)
		return failed(t, ret);
	/* Its records are synced before it returns. */
	pthread_mutex_lock(&d->m.lock);
	for (uint64_t i = 0; i < count; i++) {
		d->m.done[first + i] = idx[i] + 1;
		d->m.dur[first + i] = idx[i] + 1;
	}
	pthread_mutex_unlock(&d->m.lock);
	return end(t);
}

int bd_writeback(struct bdrv *d)
{
	uint32_t *done;
	int ret;

	begin(&d->main, "writeback");
	done = done_snap(d);
	ret = wc_writeback(d->c);
	if (ret) {
		free(done);
		return failed(&d->main, ret);
	}
	ack_all_done(d, done);
	free(done);
	return end(&d->main);
}

struct range_done {
	bool done;
	ssize_t res;
};

static void range_done(struct wc_request *req, ssize_t res)
{
	struct range_done *rd = req->priv;

	rd->res = res;
	rd->done = true;
}

int bd_range(struct bthr *t, bool invalidate, uint64_t first, uint64_t count)
{
	struct bdrv *d = t->d;
	struct range_done rd = { false, 0 };
	struct wc_request req;
	uint32_t *done;
	int ret;

	if (first < t->lo || first + count > t->hi || !count)
		abort();
	begin(t, "%s %" PRIu64 "+%" PRIu64, invalidate ? "invalidate" : "write-back", first, count);
	done = done_snap(d);
	wc_request_init(&req);
	req.op = invalidate ? WC_REQ_INVALIDATE : WC_REQ_WRITEBACK;
	req.offset = first * d->m.bs;
	req.len = count * d->m.bs;
	req.done = range_done;
	req.priv = &rd;
	ret = wc_submit(d->c, &req);
	/* Accepted, its done() runs exactly once: in a poll, or already. */
	while (!ret && !rd.done)
		wc_poll_timeout(d->c, 16, 1);
	if (!ret)
		ret = (int)rd.res;
	if (ret) {
		free(done);
		return failed(t, ret);
	}
	/* The range's writes that returned before it are on the origin,
	 * durably: reads find them there or in the cache, after a crash too. */
	pthread_mutex_lock(&d->m.lock);
	for (uint64_t b = first; b < first + count; b++)
		if (d->m.dur[b] < done[b])
			d->m.dur[b] = done[b];
	pthread_mutex_unlock(&d->m.lock);
	free(done);
	return end(t);
}

int bd_poll(struct bdrv *d)
{
	int ret;

	begin(&d->main, "poll");
	ret = wc_poll(d->c, 16);
	if (ret < 0)
		return failed(&d->main, ret);
	return end(&d->main);
}

int bd_cleaner(struct bdrv *d, bool on)
{
	int ret;

	begin(&d->main, "cleaner %s", on ? "on" : "off");
	ret = wc_set_cleaner(d->c, on);
	if (ret)
		return failed(&d->main, ret);
	return end(&d->main);
}

struct bthr *bd_main(struct bdrv *d)
{
	return &d->main;
}

uint64_t bd_random(struct bthr *t, uint64_t below)
{
	return wc_rng_next(&t->rng) % below;
}

uint64_t bd_blocks(struct bdrv *d)
{
	return d->m.nb;
}

uint64_t bd_reclaimed(struct bdrv *d)
{
	struct wc_stats st;

	if (!d->c || wc_get_stats(d->c, &st) != 0)
		return 0;
	if (!d->n_segments) {
		/* The superblock says (format.h: n_segments at byte 40). */
		uint8_t sb[4096];

		if (blkdev_hooks(d->dev)->pread(blkdev_hooks(d->dev)->ctx, sb, sizeof(sb), 0) == 0)
			memcpy(&d->n_segments, sb + 40, 8);
	}
	return st.medium_segments_reclaimed;
}

struct thr_arg {
	struct bthr t;
	int (*fn)(struct bthr *t);
	pthread_t th;
};

static void *thr_main(void *arg)
{
	struct thr_arg *a = arg;

	a->t.ret = a->fn(&a->t);
	return NULL;
}

int bd_threads(struct bdrv *d, unsigned n, int (*fn)(struct bthr *t))
{
	struct thr_arg *a = calloc(n, sizeof(*a));
	uint64_t nb = d->m.nb;
	int ret = 0;

	if (!a)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		a[i].fn = fn;
		a[i].t = (struct bthr){ .d = d, .lo = nb * i / n, .hi = nb * (i + 1) / n, .id = i + 1 };
		wc_rng_seed(&a[i].t.rng, wc_rng_next(&d->main.rng));
		a[i].t.buf = io_buffer(256 * (size_t)d->m.bs);
		if (!a[i].t.buf)
			abort();
	}
	for (unsigned i = 0; i < n; i++)
		if (pthread_create(&a[i].th, NULL, thr_main, &a[i]) != 0)
			abort();
	for (unsigned i = 0; i < n; i++) {
		pthread_join(a[i].th, NULL);
		if (a[i].t.ret < 0 && !ret)
			ret = a[i].t.ret;
		free(a[i].t.buf);
	}
	free(a);
	snprintf(tl_op, sizeof(tl_op), "a round of %u writers", n);
	verify_captures(d);
	if (!ret)
		ret = live_check(d);
	return ret;
}

/* ---- a run ---- */

static void disk_dir(char *out, size_t len, bool lba4k)
{
	const char *dir = getenv("WC_TEST_DISK_DIR");

	/* O_DIRECT asks 512 on the disk's file system here, 4096 on tmpfs
	 * (no alignment reported): the cache takes it as the device's
	 * logical block size. */
	snprintf(out, len, "%s", lba4k ? wc_test_dir() : (dir && *dir ? dir : "/var/tmp"));
}

int blk_run(const char *workload, const struct blk_opts *o, struct blk_result *r)
{
	const struct blk_workload *wl = blk_workload_find(workload);
	struct bdrv *d;
	struct blkdev_config dc;
	struct wc_test_hooks *saved = wc_test_hooks;
	char dir[PATH_MAX / 2];
	uint64_t origin_bytes;
	uint8_t *init = NULL;
	int ret;

	if (!wl)
		return -ENOENT;
	/* Every image allocates and frees a cache's buffers: kept in the
	 * heap, not mapped and unmapped each time (most of the sweep's time). */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	/* Nor each of its mappings faulted in as a 2 MiB page to zero. */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->o = o;
	d->r = r;
	d->wl = wl;
	d->threaded = wl->threads > 0;
	pthread_mutex_init(&d->cap_lock, NULL);
	origin_bytes = wl->origin_blocks * wl->block_size;
	wc_rng_seed(&d->main.rng, o->seed);
	wc_rng_seed(&d->img_rng, ~o->seed);
	wc_rng_seed(&d->vrng, o->seed ^ 0x5eedb10cull);
	d->main = (struct bthr){ .d = d, .rng = d->main.rng, .lo = 0, .hi = wl->origin_blocks };
	open_config(&d->cfg, wl->block_size);
	d->cfg.no_threads = !d->threaded;
	disk_dir(dir, sizeof(dir), wl->lba4k);
	snprintf(d->path, sizeof(d->path), "%s/wcblkcrash-%d-%s.cache", dir, (int)getpid(), wl->name);
	snprintf(d->vpath[0], sizeof(d->vpath[0]), "%s/wcblkcrash-%d-image0.cache", dir, (int)getpid());
	snprintf(d->vpath[1], sizeof(d->vpath[1]), "%s/wcblkcrash-%d-image1.cache", dir, (int)getpid());
	ret = model_init(&d->m, wl->origin_blocks, wl->block_size);
	if (!ret)
		ret = make_file(d->path, wl->cache_bytes);
	if (!ret)
		ret = make_file(d->vpath[0], wl->cache_bytes);
	if (!ret)
		ret = make_file(d->vpath[1], wl->cache_bytes);
	if (ret)
		goto out;
	ret = -ENOMEM;
	d->buf = io_buffer(origin_bytes);
	d->main.buf = io_buffer(256 * (size_t)wl->block_size);
	init = malloc(origin_bytes);
	if (!d->buf || !d->main.buf || !init)
		goto out;
	for (uint64_t b = 0; b < wl->origin_blocks; b++)
		wc_pattern_fill(init + b * wl->block_size, wl->block_size, b, 0);
	ret = fault_origin_create(&d->fo, origin_bytes, ORIGIN_SECTOR);
	if (!ret)
		ret = fault_origin_load(d->fo, init, origin_bytes, 0);
	if (ret)
		goto out;
	d->origin = fault_origin_origin(d->fo);
	dc = (struct blkdev_config){
		.size = wl->cache_bytes, .sector = wl->tear, .point = workload_point, .ctx = d,
		.sabotage_flush_every = o->sabotage_flush_every,
		.sabotage_dsync_every = o->sabotage_dsync_every,
	};
	ret = blkdev_new(&d->dev, &dc, NULL);
	if (ret)
		goto out;
	memset(&d->hooks, 0, sizeof(d->hooks));
	d->hooks.blk_io = blkdev_hooks(d->dev);
	wc_test_hooks = &d->hooks;
	ret = wl->run(d);
	wc_test_hooks = &d->hooks;
	if (d->c) {
		if (ret >= 0) {
			ret = bd_close(d);
		} else {
			wc_close(d->c);
			d->c = NULL;
		}
	}
	wc_test_hooks = saved;
	verify_captures(d);
	r->segments_reclaimed += d->reclaimed;
	r->wraps += d->reclaimed >= d->n_segments;
	{
		struct blkdev_counters k;

		blkdev_counters(d->dev, &k);
		r->device_writes += k.writes;
		r->dsync_writes += k.dsync_writes;
		r->device_flushes += k.flushes;
	}
out:
	wc_test_hooks = saved;
	caplist_free(&d->caps);
	blkdev_free(d->dev);
	model_fini(&d->m);
	if (d->fo)
		fault_origin_destroy(d->fo);
	free(d->buf);
	free(d->main.buf);
	free(init);
	unlink(d->path);
	unlink(d->vpath[0]);
	unlink(d->vpath[1]);
	pthread_mutex_destroy(&d->cap_lock);
	free(d);
	if (ret < 0 && r->errors == 0) {
		say(o, "workload %s seed %" PRIu64 ": %s\n", workload, o->seed, strerror(-ret));
		r->errors++;
	}
	return ret < 0 ? ret : 0;
}

void blk_sweep(const char *workload, uint64_t images, struct blk_opts *o, struct blk_result *r)
{
	bool all = workload && strcmp(workload, "all") == 0;

	o->max_images = images;
	while (r->images < images && r->errors == 0) {
		uint64_t before = r->images;

		for (const char *const *n = blk_workloads(); *n && r->images < images && r->errors == 0;
		     n++) {
			if (workload && !all && strcmp(*n, workload) != 0)
				continue;
			uint64_t img = r->images, bad = r->violations;

			if (!workload && blk_workload_threaded(*n))
				continue;
			blk_run(*n, o, r);
			if (o->verbose)
				say(o, "%-12s seed %-6" PRIu64 " images %-6" PRIu64 " violations %" PRIu64 "\n",
				    *n, o->seed, r->images - img, r->violations - bad);
		}
		o->seed++;
		if (r->images == before && r->errors == 0) {
			say(o, "seed %" PRIu64 " captured no image\n", o->seed - 1);
			r->errors++;
		}
	}
}

int blk_rerun(const char *line, FILE *log, char *why, size_t why_len)
{
	static const char *const keys[] = { "seed", "images", "random-per-point", "recovery-every",
	                                    "probe-every", "sabotage-flush", "sabotage-dsync",
	                                    "point-every" };
	enum { NKEYS = sizeof(keys) / sizeof(keys[0]), NREQUIRED = 5 };
	uint64_t val[NKEYS] = { 0 };
	bool seen[NKEYS] = { false };
	char key[32], word[64], wl[64] = "", *e;
	struct blk_opts o = { .log = log };
	struct blk_result r = { 0 };
	int pos = 0, n;

	while (sscanf(line + pos, "%31s %63s%n", key, word, &n) == 2) {
		size_t k = 0;

		pos += n;
		if (strcmp(key, "medium") == 0) {
			if (strcmp(word, "block") != 0) {
				snprintf(why, why_len, "rerun.txt: medium '%s' is not block", word);
				return -EINVAL;
			}
			continue;
		}
		if (strcmp(key, "workload") == 0) {
			if (strcmp(word, "all") != 0 && !blk_workload_find(word)) {
				snprintf(why, why_len, "rerun.txt: unknown block workload '%s'", word);
				return -EINVAL;
			}
			snprintf(wl, sizeof(wl), "%s", word);
			continue;
		}
		while (k < NKEYS && strcmp(keys[k], key) != 0)
			k++;
		errno = 0;
		if (k == NKEYS || ((val[k] = strtoull(word, &e, 0)), errno || *e || word[0] == '-')) {
			snprintf(why, why_len, "rerun.txt: bad option '%s %s'", key, word);
			return -EINVAL;
		}
		seen[k] = true;
	}
	if (sscanf(line + pos, "%31s", key) == 1) {
		snprintf(why, why_len, "rerun.txt: option '%s' has no value", key);
		return -EINVAL;
	}
	for (size_t k = 0; k < NREQUIRED; k++)
		if (!seen[k] || !wl[0] || !val[1]) {
			snprintf(why, why_len, "rerun.txt: the line must name every option (missing %s)",
			         wl[0] ? keys[k] : "workload");
			return -EINVAL;
		}
	if (strcmp(wl, "all") != 0 && blk_workload_threaded(wl)) {
		snprintf(why, why_len, "rerun.txt: workload %s runs threads: it does not replay", wl);
		return -EINVAL;
	}
	o.seed = val[0];
	o.random_per_point = (unsigned)val[2];
	o.recovery_every = (unsigned)val[3];
	o.probe_every = (unsigned)val[4];
	o.sabotage_flush_every = (unsigned)val[5];
	o.sabotage_dsync_every = (unsigned)val[6];
	o.point_every = (unsigned)val[7];
	blk_sweep(strcmp(wl, "all") == 0 ? NULL : wl, val[1], &o, &r);
	snprintf(why, why_len, "rerun of block workload %s seed %" PRIu64 " images %" PRIu64
	         ": images=%" PRIu64 " violations=%" PRIu64 " (recovery %" PRIu64 ", probes %" PRIu64
	         ", seeds %" PRIu64 "..%" PRIu64 ")", wl, val[0], val[1], r.images, r.violations,
	         r.recovery_images, r.probes, val[0], o.seed - 1);
	if (r.errors)
		return -EIO;
	if (r.images < val[1])
		return -ENODATA;
	return r.violations ? 1 : 0;
}
