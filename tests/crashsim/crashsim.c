/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crashsim.c -- the persistent-image engine of the power-failure simulator
 * (model and semantics in crashsim.h).
 *
 * Per line the engine keeps at most one pending snapshot per thread in a
 * vector; `latest[line]` points at the newest one so that repeated flushes
 * of one line by one thread (entries packed four to a line) replace their
 * snapshot in place instead of growing the vector.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crashsim.h"

#define WORDS_PER_LINE (WC_CRASH_LINE / 8)

struct pending_line {
	size_t line;
	pthread_t thread;
	uint8_t data[WC_CRASH_LINE];
};

struct wc_crashsim {
	struct wc_crashsim_config cfg;
	pthread_mutex_t lock;
	struct wc_rng rng;

	uint8_t *base;          /* the watched mapping, NULL when detached */
	size_t len, lines;
	uint8_t *persist;       /* what the media holds */
	uint32_t *latest;       /* per line: index + 1 of its newest pending snapshot */
	struct pending_line *pend;
	size_t npend, cap_pend;

	uint8_t *retained;      /* persistent image of the last detached mapping */
	size_t retained_len;

	uint64_t drains, writes, strays;

	struct wc_persist_observer observer;
	struct wc_test_hooks hooks;
};

/* ---- random numbers: xoshiro256** seeded by splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void wc_rng_seed(struct wc_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t wc_rng_next(struct wc_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t wc_crashsim_random(struct wc_crashsim *sim)
{
	uint64_t v;

	pthread_mutex_lock(&sim->lock);
	v = wc_rng_next(&sim->rng);
	pthread_mutex_unlock(&sim->lock);
	return v;
}

/* ---- pending snapshots ---- */

static int pending_reserve(struct wc_crashsim *sim)
{
	struct pending_line *p;
	size_t cap;

	if (sim->npend < sim->cap_pend)
		return 0;
	cap = sim->cap_pend ? sim->cap_pend * 2 : 256;
	p = realloc(sim->pend, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	sim->pend = p;
	sim->cap_pend = cap;
	return 0;
}

static void snapshot_line(struct wc_crashsim *sim, size_t line)
{
	pthread_t self = pthread_self();
	uint32_t idx = sim->latest[line];
	struct pending_line *p;

	if (idx && pthread_equal(sim->pend[idx - 1].thread, self)) {
		p = &sim->pend[idx - 1];
	} else {
		if (pending_reserve(sim) != 0) {
			/* Out of memory: count it so the test fails loudly rather
			 * than silently losing a flush. */
			sim->strays++;
			return;
		}
		p = &sim->pend[sim->npend++];
		p->line = line;
		p->thread = self;
		sim->latest[line] = (uint32_t)sim->npend;
	}
	memcpy(p->data, sim->base + line * WC_CRASH_LINE, WC_CRASH_LINE);
}

/* Apply the calling thread's snapshots (or every thread's) in the order
 * they were taken, drop them, and compact the vector. */
static void drain_pending(struct wc_crashsim *sim)
{
	pthread_t self = pthread_self();
	size_t keep = 0;

	for (size_t i = 0; i < sim->npend; i++) {
		struct pending_line *p = &sim->pend[i];

		if (sim->cfg.global_drain || pthread_equal(p->thread, self)) {
			memcpy(sim->persist + p->line * WC_CRASH_LINE, p->data, WC_CRASH_LINE);
			if (sim->latest[p->line] == i + 1)
				sim->latest[p->line] = 0;
			continue;
		}
		if (keep != i)
			sim->pend[keep] = *p;
		if (sim->latest[p->line] == i + 1)
			sim->latest[p->line] = (uint32_t)(keep + 1);
		keep++;
	}
	sim->npend = keep;
}

/* ---- observer ---- */

static void observe_written(void *ctx, const void *addr, size_t n, int atomic8)
{
	struct wc_crashsim *sim = ctx;
	const uint8_t *a = addr;
	bool point = false;

	if (n == 0)
		return;
	pthread_mutex_lock(&sim->lock);
	sim->writes++;
	if (!sim->base || a < sim->base || n > sim->len || a - sim->base > (ptrdiff_t)(sim->len - n)) {
		sim->strays++;
		pthread_mutex_unlock(&sim->lock);
		return;
	}
	size_t off = (size_t)(a - sim->base);
	size_t first = off / WC_CRASH_LINE, last = (off + n - 1) / WC_CRASH_LINE;

	/* An atomic8 store stays whole in every image because an aligned word
	 * is the smallest unit the images choose; what is left to check is
	 * that the store really is one aligned word. */
	if (atomic8 && (n != 8 || off % 8 != 0))
		sim->strays++;
	for (size_t line = first; line <= last; line++)
		snapshot_line(sim, line);
	if (sim->cfg.point && sim->cfg.written_per_mille &&
	    wc_rng_next(&sim->rng) % 1000 < sim->cfg.written_per_mille)
		point = true;
	uint64_t drains = sim->drains;
	pthread_mutex_unlock(&sim->lock);

	if (point)
		sim->cfg.point(sim->cfg.ctx, sim, WC_CRASH_WRITTEN, drains);
}

static void observe_drained(void *ctx)
{
	struct wc_crashsim *sim = ctx;
	uint64_t n;

	pthread_mutex_lock(&sim->lock);
	n = sim->drains + 1;
	pthread_mutex_unlock(&sim->lock);

	if (sim->cfg.point)
		sim->cfg.point(sim->cfg.ctx, sim, WC_CRASH_BEFORE_DRAIN, n);

	pthread_mutex_lock(&sim->lock);
	if (!sim->base)
		sim->strays++;
	else if (!sim->cfg.skip_every_nth_drain || n % sim->cfg.skip_every_nth_drain != 0)
		drain_pending(sim);
	sim->drains++;
	n = sim->drains;
	pthread_mutex_unlock(&sim->lock);

	if (sim->cfg.point)
		sim->cfg.point(sim->cfg.ctx, sim, WC_CRASH_AFTER_DRAIN, n);
}

static void hook_mapped(void *ctx, void *base, size_t len)
{
	struct wc_crashsim *sim = ctx;

	if (wc_crashsim_attach(sim, base, len) != 0) {
		pthread_mutex_lock(&sim->lock);
		sim->strays++;
		pthread_mutex_unlock(&sim->lock);
	}
}

static void hook_unmapped(void *ctx, void *base, size_t len)
{
	struct wc_crashsim *sim = ctx;

	if (sim->base != base) {
		pthread_mutex_lock(&sim->lock);
		sim->strays++;
		pthread_mutex_unlock(&sim->lock);
		return;
	}
	if (sim->cfg.point)
		sim->cfg.point(sim->cfg.ctx, sim, WC_CRASH_UNMAP, wc_crashsim_drains(sim));
	wc_crashsim_detach(sim);
}

/* ---- life cycle ---- */

int wc_crashsim_new(struct wc_crashsim **out, const struct wc_crashsim_config *cfg)
{
	struct wc_crashsim *sim = calloc(1, sizeof(*sim));

	if (!sim)
		return -ENOMEM;
	if (cfg)
		sim->cfg = *cfg;
	pthread_mutex_init(&sim->lock, NULL);
	wc_rng_seed(&sim->rng, sim->cfg.seed);
	sim->observer.written = observe_written;
	sim->observer.drained = observe_drained;
	sim->observer.ctx = sim;
	sim->hooks.observer = &sim->observer;
	sim->hooks.mapped = hook_mapped;
	sim->hooks.unmapped = hook_unmapped;
	sim->hooks.ctx = sim;
	*out = sim;
	return 0;
}

void wc_crashsim_free(struct wc_crashsim *sim)
{
	if (!sim)
		return;
	wc_crashsim_detach(sim);
	free(sim->retained);
	free(sim->pend);
	pthread_mutex_destroy(&sim->lock);
	free(sim);
}

const struct wc_persist_observer *wc_crashsim_observer(struct wc_crashsim *sim)
{
	return &sim->observer;
}

struct wc_test_hooks *wc_crashsim_hooks(struct wc_crashsim *sim)
{
	return &sim->hooks;
}

int wc_crashsim_attach(struct wc_crashsim *sim, void *base, size_t len)
{
	size_t lines = (len + WC_CRASH_LINE - 1) / WC_CRASH_LINE;
	uint8_t *persist;
	uint32_t *latest;

	if (!base || len == 0 || len % WC_CRASH_LINE != 0)
		return -EINVAL;
	latest = calloc(lines, sizeof(*latest));
	if (!latest)
		return -ENOMEM;

	pthread_mutex_lock(&sim->lock);
	if (sim->base) {
		pthread_mutex_unlock(&sim->lock);
		free(latest);
		return -EBUSY;
	}
	if (sim->retained && sim->retained_len == len) {
		persist = sim->retained;
		sim->retained = NULL;
	} else {
		persist = malloc(len);
		if (!persist) {
			pthread_mutex_unlock(&sim->lock);
			free(latest);
			return -ENOMEM;
		}
		memcpy(persist, base, len);
	}
	free(sim->retained);
	sim->retained = NULL;
	sim->retained_len = 0;
	sim->base = base;
	sim->len = len;
	sim->lines = lines;
	sim->persist = persist;
	sim->latest = latest;
	sim->npend = 0;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

void wc_crashsim_detach(struct wc_crashsim *sim)
{
	pthread_mutex_lock(&sim->lock);
	if (sim->base) {
		/* Snapshots never drained were never persistent: drop them. */
		free(sim->retained);
		sim->retained = sim->persist;
		sim->retained_len = sim->len;
		sim->persist = NULL;
		free(sim->latest);
		sim->latest = NULL;
		sim->npend = 0;
		sim->base = NULL;
		sim->len = sim->lines = 0;
	}
	pthread_mutex_unlock(&sim->lock);
}

void wc_crashsim_forget(struct wc_crashsim *sim)
{
	pthread_mutex_lock(&sim->lock);
	free(sim->retained);
	sim->retained = NULL;
	sim->retained_len = 0;
	pthread_mutex_unlock(&sim->lock);
}

bool wc_crashsim_attached(struct wc_crashsim *sim)
{
	bool a;

	pthread_mutex_lock(&sim->lock);
	a = sim->base != NULL;
	pthread_mutex_unlock(&sim->lock);
	return a;
}

size_t wc_crashsim_len(struct wc_crashsim *sim)
{
	size_t len;

	pthread_mutex_lock(&sim->lock);
	len = sim->len;
	pthread_mutex_unlock(&sim->lock);
	return len;
}

/* ---- images ---- */

static void image_line(struct wc_crashsim *sim, enum wc_crash_mode mode, size_t line, uint8_t *out)
{
	const uint8_t *old = sim->persist + line * WC_CRASH_LINE;
	uint32_t idx = sim->latest[line];
	const uint8_t *snap = idx ? sim->pend[idx - 1].data : NULL;
	const uint8_t *cand[3];
	uint8_t now[WC_CRASH_LINE];
	unsigned ncand = 0;

	/* One read of the live line: another thread may be storing to it. */
	memcpy(now, sim->base + line * WC_CRASH_LINE, WC_CRASH_LINE);
	if (!snap && memcmp(now, old, WC_CRASH_LINE) == 0) {
		memcpy(out, old, WC_CRASH_LINE);
		return;
	}
	switch (mode) {
	case WC_CRASH_OLD:
		memcpy(out, old, WC_CRASH_LINE);
		return;
	case WC_CRASH_NEW:
		memcpy(out, now, WC_CRASH_LINE);
		return;
	case WC_CRASH_LINES:
	case WC_CRASH_TORN:
		break;
	}
	cand[ncand++] = old;
	if (snap && memcmp(snap, old, WC_CRASH_LINE) != 0)
		cand[ncand++] = snap;
	if (memcmp(now, old, WC_CRASH_LINE) != 0 && (!snap || memcmp(now, snap, WC_CRASH_LINE) != 0))
		cand[ncand++] = now;
	if (mode == WC_CRASH_LINES) {
		memcpy(out, cand[wc_rng_next(&sim->rng) % ncand], WC_CRASH_LINE);
		return;
	}
	for (unsigned w = 0; w < WORDS_PER_LINE; w++)
		memcpy(out + w * 8, cand[wc_rng_next(&sim->rng) % ncand] + w * 8, 8);
}

int wc_crashsim_image(struct wc_crashsim *sim, enum wc_crash_mode mode, void *out)
{
	pthread_mutex_lock(&sim->lock);
	if (!sim->base) {
		pthread_mutex_unlock(&sim->lock);
		return -ENODEV;
	}
	for (size_t line = 0; line < sim->lines; line++)
		image_line(sim, mode, line, (uint8_t *)out + line * WC_CRASH_LINE);
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

int wc_crashsim_write_image(struct wc_crashsim *sim, enum wc_crash_mode mode, const char *path)
{
	size_t len = wc_crashsim_len(sim);
	uint8_t *buf;
	int fd, ret;

	if (len == 0)
		return -ENODEV;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	ret = wc_crashsim_image(sim, mode, buf);
	if (ret == 0) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			ret = -errno;
		} else {
			size_t done = 0;

			while (done < len) {
				ssize_t w = pwrite(fd, buf + done, len - done, (off_t)done);

				if (w <= 0) {
					ret = w < 0 ? -errno : -EIO;
					break;
				}
				done += (size_t)w;
			}
			if (close(fd) != 0 && ret == 0)
				ret = -errno;
		}
	}
	free(buf);
	return ret;
}

/* ---- counters ---- */

uint64_t wc_crashsim_drains(struct wc_crashsim *sim)
{
	uint64_t v;

	pthread_mutex_lock(&sim->lock);
	v = sim->drains;
	pthread_mutex_unlock(&sim->lock);
	return v;
}

uint64_t wc_crashsim_writes(struct wc_crashsim *sim)
{
	uint64_t v;

	pthread_mutex_lock(&sim->lock);
	v = sim->writes;
	pthread_mutex_unlock(&sim->lock);
	return v;
}

size_t wc_crashsim_pending(struct wc_crashsim *sim)
{
	size_t v;

	pthread_mutex_lock(&sim->lock);
	v = sim->npend;
	pthread_mutex_unlock(&sim->lock);
	return v;
}

size_t wc_crashsim_dirty_lines(struct wc_crashsim *sim)
{
	size_t n = 0;

	pthread_mutex_lock(&sim->lock);
	for (size_t line = 0; sim->base && line < sim->lines; line++)
		if (memcmp(sim->base + line * WC_CRASH_LINE, sim->persist + line * WC_CRASH_LINE,
		           WC_CRASH_LINE) != 0)
			n++;
	pthread_mutex_unlock(&sim->lock);
	return n;
}

uint64_t wc_crashsim_strays(struct wc_crashsim *sim)
{
	uint64_t v;

	pthread_mutex_lock(&sim->lock);
	v = sim->strays;
	pthread_mutex_unlock(&sim->lock);
	return v;
}
