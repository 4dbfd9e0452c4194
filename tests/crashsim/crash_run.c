/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_run.c -- the crash sweep's engine (see crash_run.h): capture crash
 * images during a workload, recover and check each, dump violations, and
 * replay regressions (a dumped image, or the sweep that found a bug).  The
 * calls a workload makes are in crash_driver.c, the workloads in
 * crash_workloads.c.
 *
 * Why images are checked after the call and not inside the crash point:
 * the point runs inside the cache (its locks may be held), and recovering
 * an image opens a second cache.  So a point only copies the cache image
 * and the origin image; drv_* checks them when the call returned.
 *
 * The global wc_test_hooks is read by the cache at map AND at unmap time,
 * so it always names the simulator of the cache being mapped or unmapped:
 * the workload's while the workload runs, the recovery simulator (or NULL)
 * while an image is being recovered.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_run_impl.h"
#include "core/format.h"
#include "core/testhooks.h"

#define ORIGIN_SECTOR 512u      /* what a disk writes atomically */
#define DEFAULT_AUTOCOMMIT 3u   /* small: commits land inside multi-block calls */

struct capture_list {
	struct crash_capture *v;
	size_t n, cap;
};

void crash_say(const struct crash_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vfprintf(o->log, fmt, ap);
	va_end(ap);
	fflush(o->log);
}

/* ---- capturing ---- */

static const char *mode_name(enum wc_crash_mode m)
{
	static const char *const names[] = { "old", "new", "lines", "torn" };

	return names[m];
}

static const char *event_name(enum wc_crash_event ev)
{
	static const char *const names[] = { "before-drain", "after-drain", "written", "unmap" };

	return names[ev];
}

/* The origin after a power cut: what its flush made durable, plus each
 * sector written since then kept or lost on its own. */
static void origin_image(struct fault_origin *fo, enum wc_crash_mode mode, struct wc_rng *rng,
                         uint8_t *out)
{
	const uint8_t *dur = fault_origin_durable(fo), *vol = fault_origin_volatile(fo);
	uint64_t size = fault_origin_size(fo);

	for (uint64_t off = 0; off < size; off += ORIGIN_SECTOR) {
		const uint8_t *src = dur + off;

		if (memcmp(dur + off, vol + off, ORIGIN_SECTOR) != 0 &&
		    (mode == WC_CRASH_NEW || (mode != WC_CRASH_OLD && (wc_rng_next(rng) & 1))))
			src = vol + off;
		memcpy(out + off, src, ORIGIN_SECTOR);
	}
}

static int capture(struct capture_list *l, struct wc_crashsim *sim, enum wc_crash_mode mode,
                   struct fault_origin *fo, struct wc_rng *rng, struct wc_window w,
                   bool formatting, const char *label)
{
	struct crash_capture *c;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct crash_capture *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	c = &l->v[l->n];
	memset(c, 0, sizeof(*c));
	c->cache_len = wc_crashsim_len(sim);
	c->origin_len = fault_origin_size(fo);
	c->cache_img = malloc(c->cache_len);
	c->origin_img = malloc(c->origin_len);
	if (!c->cache_img || !c->origin_img || wc_crashsim_image(sim, mode, c->cache_img) != 0) {
		free(c->cache_img);
		free(c->origin_img);
		return -ENOMEM;
	}
	origin_image(fo, mode, rng, c->origin_img);
	c->w = w;
	c->formatting = formatting;
	snprintf(c->label, sizeof(c->label), "%s %s", label, mode_name(mode));
	l->n++;
	return 0;
}

static void capture_list_clear(struct capture_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].cache_img);
		free(l->v[i].origin_img);
	}
	l->n = 0;
}

static void capture_list_free(struct capture_list *l)
{
	capture_list_clear(l);
	free(l->v);
	l->v = NULL;
	l->cap = 0;
}

/* Which images a crash point yields.  OLD before drain k equals OLD after
 * drain k-1, and NEW after a drain equals NEW before it: skip the twins. */
static unsigned point_modes(enum wc_crash_event ev, unsigned random, enum wc_crash_mode *m)
{
	unsigned n = 0;

	switch (ev) {
	case WC_CRASH_BEFORE_DRAIN:
		m[n++] = WC_CRASH_NEW;
		for (unsigned i = 0; i < random; i++) {
			m[n++] = WC_CRASH_LINES;
			m[n++] = WC_CRASH_TORN;
		}
		break;
	case WC_CRASH_AFTER_DRAIN:
		m[n++] = WC_CRASH_OLD;
		m[n++] = WC_CRASH_LINES;
		break;
	case WC_CRASH_WRITTEN:
		m[n++] = WC_CRASH_LINES;
		m[n++] = WC_CRASH_TORN;
		break;
	case WC_CRASH_UNMAP:
		m[n++] = WC_CRASH_OLD;
		m[n++] = WC_CRASH_NEW;
		m[n++] = WC_CRASH_TORN;
		break;
	}
	return n;
}

#define MAX_POINT_MODES 24

static unsigned random_per_point(const struct crash_opts *o)
{
	unsigned r = o->random_per_point ? o->random_per_point : 1;

	return r > (MAX_POINT_MODES - 1) / 2 ? (MAX_POINT_MODES - 1) / 2 : r;
}

static void workload_point(void *ctx, struct wc_crashsim *sim, enum wc_crash_event ev,
                           uint64_t drain)
{
	struct crash_drv *d = ctx;
	struct capture_list l = { d->caps, d->ncaps, d->cap_caps };
	enum wc_crash_mode modes[MAX_POINT_MODES];
	unsigned n = point_modes(ev, random_per_point(d->o), modes);
	char label[160];

	snprintf(label, sizeof(label), "%s op %" PRIu64 " (%s) %s drain %" PRIu64, d->wl->name,
	         d->ops, d->op, event_name(ev), drain);
	if (d->o->trace && ev != WC_CRASH_WRITTEN)
		fprintf(d->o->trace, "  %s %" PRIu64 " (images %" PRIu64 "..)\n", event_name(ev), drain,
		        d->r->images + d->ncaps);
	for (unsigned i = 0; i < n; i++) {
		if (d->o->max_images && d->r->images + l.n >= d->o->max_images) {
			d->capture_full = true;
			break;
		}
		if (capture(&l, sim, modes[i], d->fo, &d->img_rng, wc_model_window(d->model),
		            d->formatting, label) != 0) {
			crash_say(d->o, "crash point %s: out of memory\n", label);
			d->r->errors++;
			break;
		}
	}
	d->caps = l.v;
	d->ncaps = l.n;
	d->cap_caps = l.cap;
}

/* ---- recovering and checking one image ---- */

struct recovery {
	struct crash_drv *d;
	struct fault_origin *fo;
	const struct crash_capture *of;  /* the image being recovered */
	struct capture_list caps;
};

static void recovery_point(void *ctx, struct wc_crashsim *sim, enum wc_crash_event ev,
                           uint64_t drain)
{
	struct recovery *rc = ctx;
	enum wc_crash_mode modes[MAX_POINT_MODES];
	unsigned n = point_modes(ev, 1, modes);
	char label[160];

	snprintf(label, sizeof(label), "recovery %s drain %" PRIu64 " of [%.100s]",
	         event_name(ev), drain, rc->of->label);
	for (unsigned i = 0; i < n; i++)
		if (capture(&rc->caps, sim, modes[i], rc->fo, &rc->d->img_rng, rc->of->w,
		            rc->of->formatting, label) != 0)
			rc->d->r->errors++;
}

int crash_write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t done = 0;
	int ret = 0;

	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t w = write(fd, (const uint8_t *)buf + done, len - done);

		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)w;
	}
	if (close(fd) != 0 && ret == 0)
		ret = -errno;
	return ret;
}

static void open_config(struct wc_config *cfg, uint32_t block_size)
{
	wc_config_init(cfg);
	cfg->block_size = block_size;
	cfg->no_threads = true;          /* one thread: the run replays from its seed */
	cfg->autocommit_blocks = DEFAULT_AUTOCOMMIT;
	cfg->autocommit_ms = 3600 * 1000; /* never by time: time is not replayable */
	cfg->writeback_jobs = 4;
}

/* Buffers handed to wc_read/wc_write are aligned as an O_DIRECT origin
 * wants them: writes around the cache (cleaner mode) and misses pass them
 * on to the origin. */
uint8_t *crash_io_buffer(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, 4096, len) == 0 ? p : NULL;
}

static int read_all(wc_cache *c, uint8_t *buf, uint64_t bytes, char *why, size_t why_len)
{
	ssize_t n = wc_read(c, buf, bytes, 0);

	if (n != (ssize_t)bytes) {
		snprintf(why, why_len, "wc_read of the whole origin returned %zd: %s", n, wc_errmsg());
		return -EIO;
	}
	return 0;
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
		         " free %" PRIu64 " dirty %" PRIu64 " writeback %" PRIu64, st.error, st.blocks,
		         st.free_blocks, st.dirty_blocks, st.writeback_blocks);
		return false;
	}
	return true;
}

/*
 * The recovered cache must work: write one block FUA, read it back, close,
 * reopen, and find every block as it was plus the probe.
 */
static bool probe(struct crash_drv *d, const char *path, struct fault_origin *fo,
                  const uint8_t *before, char *why, size_t why_len)
{
	uint32_t bs = wc_model_block_size(d->model);
	uint64_t n = wc_model_blocks(d->model), b = wc_rng_next(&d->img_rng) % n;
	uint64_t version = (1ull << 40) + d->verified; /* never written by the workload */
	uint64_t bytes = n * bs, got;
	uint8_t *after = crash_io_buffer(bytes), *blk = crash_io_buffer(bs);
	struct wc_config cfg;
	wc_cache *c = NULL;
	bool ok = false;
	int ret;

	if (!after || !blk)
		abort();
	open_config(&cfg, bs);
	wc_pattern_fill(blk, bs, b, version);
	ret = wc_open_origin(&c, path, fault_origin_origin(fo), &cfg);
	if (ret != 0) {
		snprintf(why, why_len, "probe: reopening the recovered cache: %d %s", ret, wc_errmsg());
		goto out;
	}
	if (wc_write(c, blk, bs, b * bs, WC_FUA) != (ssize_t)bs) {
		snprintf(why, why_len, "probe: FUA write of block %" PRIu64 ": %s", b, wc_errmsg());
		goto out;
	}
	ret = wc_close(c);
	c = NULL;
	if (ret != 0) {
		snprintf(why, why_len, "probe: close: %d %s", ret, wc_errmsg());
		goto out;
	}
	ret = wc_open_origin(&c, path, fault_origin_origin(fo), &cfg);
	if (ret != 0) {
		snprintf(why, why_len, "probe: second reopen: %d %s", ret, wc_errmsg());
		goto out;
	}
	if (read_all(c, after, bytes, why, why_len) != 0)
		goto out;
	for (uint64_t i = 0; i < n; i++) {
		if (i == b) {
			if (wc_pattern_decode(after + i * bs, bs, i, &got) != WC_PATTERN_OK || got != version) {
				snprintf(why, why_len, "probe: block %" PRIu64 " lost its FUA write", b);
				goto out;
			}
		} else if (memcmp(after + i * bs, before + i * bs, bs) != 0) {
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
	free(after);
	free(blk);
	return ok;
}


/*
 * An origin other than the image's own is refused (-EXDEV), and the refusal
 * leaves the image as it was: whatever a crash left of a re-bind, the cache
 * never opens with an origin it was not bound to.
 */
static bool other_origin_refused(const char *path, struct fault_origin *fo,
                                 const struct crash_capture *cap, uint32_t bs, char *why,
                                 size_t why_len)
{
	char name[64];
	struct wc_config cfg;
	uint8_t *now;
	wc_cache *c = NULL;
	bool ok = true;
	int fd, ret;

	snprintf(name, sizeof(name), "%s", fault_origin_origin(fo).ops->describe(fo));
	fault_origin_set_name(fo, "a third origin");
	open_config(&cfg, bs);
	ret = wc_open_origin(&c, path, fault_origin_origin(fo), &cfg);
	fault_origin_set_name(fo, name);
	if (ret != -EXDEV) {
		snprintf(why, why_len, "another origin was not refused with -EXDEV: %d %s", ret,
		         ret ? wc_errmsg() : "opened");
		if (c)
			wc_close(c);
		return false;
	}
	now = malloc(cap->cache_len);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!now || fd < 0 || pread(fd, now, cap->cache_len, 0) != (ssize_t)cap->cache_len ||
	    memcmp(now, cap->cache_img, cap->cache_len) != 0) {
		snprintf(why, why_len, "refusing another origin changed the image");
		ok = false;
	}
	if (fd >= 0)
		close(fd);
	free(now);
	return ok;
}

/*
 * Recover `cap` and check it.  Returns the number of violations found (in
 * it and, at depth 0, in the images of its own recovery crashed).
 */
uint64_t crash_verify(struct crash_drv *d, const struct crash_capture *cap, int depth)
{
	const struct crash_opts *o = d->o;
	uint32_t bs = wc_model_block_size(d->model);
	uint64_t bytes = wc_model_blocks(d->model) * bs, violations = 0;
	struct wc_test_hooks *saved = wc_test_hooks;
	struct recovery rc = { .d = d, .of = cap };
	struct wc_crashsim *rsim = NULL;
	char path[PATH_MAX + 32], why[1024] = "";
	struct wc_config cfg;
	wc_cache *c = NULL;
	bool ok = false;
	int ret;

	d->verified++;
	d->r->images++;
	if (depth > 0)
		d->r->recovery_images++;
	snprintf(path, sizeof(path), "%s/image-%d.cache", o->scratch_dir, depth);
	if (crash_write_file(path, cap->cache_img, cap->cache_len) != 0 ||
	    fault_origin_create(&rc.fo, cap->origin_len, ORIGIN_SECTOR) != 0 ||
	    fault_origin_load(rc.fo, cap->origin_img, cap->origin_len, 0) != 0) {
		crash_say(o, "cannot set up the image of [%s]\n", cap->label);
		d->r->errors++;
		goto out;
	}
	if (d->origin_name[0]) {
		fault_origin_set_name(rc.fo, d->origin_name);
		wc_test_hooks = NULL;
		if (!cap->formatting &&
		    !other_origin_refused(path, rc.fo, cap, bs, why, sizeof(why)))
			goto closed;
	}
	if (depth == 0 && o->recovery_every && d->verified % o->recovery_every == 0) {
		struct wc_crashsim_config sc = {
			.seed = wc_rng_next(&d->img_rng),
			.written_per_mille = o->written_per_mille,
			.point = recovery_point,
			.ctx = &rc,
		};

		if (wc_crashsim_new(&rsim, &sc) != 0)
			abort();
	}
	wc_test_hooks = rsim ? wc_crashsim_hooks(rsim) : NULL;
	open_config(&cfg, bs);
	ret = wc_open_origin(&c, path, fault_origin_origin(rc.fo), &cfg);
	/* A crash inside a re-bind: the image may still name the origin before. */
	if (ret == -EXDEV && d->prev_origin_name[0]) {
		fault_origin_set_name(rc.fo, d->prev_origin_name);
		ret = wc_open_origin(&c, path, fault_origin_origin(rc.fo), &cfg);
	}
	if (ret != 0) {
		const char *msg = wc_errmsg();

		c = NULL;
		if (!cap->formatting) {
			snprintf(why, sizeof(why), "open refused a crash image: %d %s", ret, msg);
		} else if (!msg || !msg[0]) {
			snprintf(why, sizeof(why), "open refused a torn format (%d) without a message", ret);
		} else {
			/* A torn format must be refused and must not brick the file. */
			wc_test_hooks = NULL;
			ret = wc_create_origin(&c, path, fault_origin_origin(rc.fo), &cfg);
			if (ret != 0)
				snprintf(why, sizeof(why), "create over a torn format failed: %d %s", ret,
				         wc_errmsg());
			else
				ok = true;
			d->r->refused++;
		}
		goto closed;
	}
	if (read_all(c, d->buf, bytes, why, sizeof(why)) != 0)
		goto closed;
	if (!wc_model_check(d->model, cap->w, d->buf, why, sizeof(why)))
		goto closed;
	if (!stats_hold(c, why, sizeof(why)))
		goto closed;
	ret = wc_close(c);
	c = NULL;
	if (ret != 0) {
		snprintf(why, sizeof(why), "close after recovery: %d %s", ret, wc_errmsg());
		goto closed;
	}
	ok = true;
	if (depth == 0 && o->probe_every && d->verified % o->probe_every == 0) {
		wc_test_hooks = NULL;
		d->r->probes++;
		ok = probe(d, path, rc.fo, d->buf, why, sizeof(why));
	}
closed:
	if (c)
		wc_close(c);
	wc_test_hooks = saved;
	if (!ok) {
		violations++;
		crash_say(o, "VIOLATION [%s] window [%" PRIu64 ", %" PRIu64 "]: %s\n", cap->label, cap->w.lo,
		    cap->w.hi, why);
		crash_dump_violation(d, cap, why);
	}
	for (size_t i = 0; i < rc.caps.n; i++)
		violations += crash_verify(d, &rc.caps.v[i], depth + 1);
out:
	capture_list_free(&rc.caps);
	wc_crashsim_free(rsim);
	if (rc.fo)
		fault_origin_destroy(rc.fo);
	return violations;
}

void crash_verify_captures(struct crash_drv *d)
{
	for (size_t i = 0; i < d->ncaps; i++)
		d->r->violations += crash_verify(d, &d->caps[i], 0);
	struct capture_list l = { d->caps, d->ncaps, d->cap_caps };

	capture_list_clear(&l);
	d->ncaps = 0;
}

/* ---- a run ---- */

int crash_run(const char *workload, const struct crash_opts *o, struct crash_result *r)
{
	const struct crash_workload *wl = crash_workload_find(workload);
	struct crash_drv d = { .o = o, .r = r, .wl = wl };
	struct wc_crashsim_config sc = {
		.seed = o->seed ^ 0x5eed,
		.written_per_mille = o->written_per_mille,
		.point = workload_point,
		.ctx = &d,
		.skip_every_nth_drain = o->sabotage_drain_every,
	};
	struct wc_test_hooks *saved = wc_test_hooks;
	struct wc_layout layout;
	uint64_t origin_bytes;
	uint8_t *init;
	int ret, fd;

	if (!wl)
		return -ENOENT;
	origin_bytes = wl->origin_blocks * wl->block_size;
	wc_rng_seed(&d.rng, o->seed);
	wc_rng_seed(&d.img_rng, ~o->seed);
	open_config(&d.cfg, wl->block_size);
	if (wl->autocommit_blocks)
		d.cfg.autocommit_blocks = wl->autocommit_blocks;
	ret = wc_layout_for_blocks(&layout, wl->cache_blocks, wl->block_size);
	if (ret)
		return ret;
	d.cache_bytes = layout.bytes_used;
	snprintf(d.cache_path, sizeof(d.cache_path), "%s/%s.cache", o->scratch_dir, wl->name);
	unlink(d.cache_path);
	fd = open(d.cache_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	ret = ftruncate(fd, (off_t)d.cache_bytes) == 0 ? 0 : -errno;
	close(fd);
	if (ret)
		return ret;

	d.buf = crash_io_buffer(origin_bytes);
	init = malloc(origin_bytes);
	ret = -ENOMEM;
	if (!d.buf || !init)
		goto out;
	for (uint64_t b = 0; b < wl->origin_blocks; b++)
		wc_pattern_fill(init + b * wl->block_size, wl->block_size, b, 0);
	ret = fault_origin_create(&d.fo, origin_bytes, ORIGIN_SECTOR);
	if (!ret)
		ret = fault_origin_load(d.fo, init, origin_bytes, 0);
	d.origin = fault_origin_origin(d.fo);
	if (!ret && o->trace) {
		ret = crash_trace_origin(&d.trace, d.origin, wl->block_size, o->trace);
		if (!ret)
			d.origin = crash_trace_get(d.trace);
	}
	if (!ret)
		ret = wc_model_new(&d.model, wl->origin_blocks, wl->block_size);
	if (!ret)
		ret = wc_crashsim_new(&d.sim, &sc);
	if (ret)
		goto out;

	d.race_buf = crash_io_buffer(origin_bytes);
	if (!d.race_buf) {
		ret = -ENOMEM;
		goto out;
	}
	wc_crashsim_hooks(d.sim)->commit_quiet = drv_commit_quiet;
	wc_crashsim_hooks(d.sim)->commit_quiet_arg = &d;
	wc_test_hooks = wc_crashsim_hooks(d.sim);
	ret = wl->run(&d);
	if (d.c) {
		wc_close(d.c);
		d.c = NULL;
	}
	wc_test_hooks = saved;
	crash_verify_captures(&d);
	r->drains += wc_crashsim_drains(d.sim);
	if (wc_crashsim_strays(d.sim)) {
		crash_say(o, "%s: %" PRIu64 " stray persistence events (outside the mapping, misaligned"
		    " atomic stores or while unmapped)\n", wl->name, wc_crashsim_strays(d.sim));
		r->violations++;
	}
out:
	wc_test_hooks = saved;
	{
		struct capture_list l = { d.caps, d.ncaps, d.cap_caps };

		capture_list_free(&l);
	}
	wc_crashsim_free(d.sim);
	wc_model_free(d.model);
	if (d.fo)
		fault_origin_destroy(d.fo);
	crash_trace_free(d.trace);
	free(d.buf);
	free(d.race_buf);
	free(init);
	unlink(d.cache_path);
	return ret;
}
