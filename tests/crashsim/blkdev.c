/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blkdev.c -- the simulated block device (model in blkdev.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "blkdev.h"

/* ---- copy-on-write images ---- */

struct bpage {
	atomic_uint refs;
	uint8_t d[BLKDEV_PAGE];
};

struct bimage {
	uint64_t size, npages;
	struct bpage **pages;    /* NULL: a page of zeros */
};

static void page_put(struct bpage *p)
{
	if (p && atomic_fetch_sub(&p->refs, 1) == 1)
		free(p);
}

struct bimage *bimage_new(uint64_t size)
{
	struct bimage *img = calloc(1, sizeof(*img));

	if (!img)
		return NULL;
	img->size = size;
	img->npages = (size + BLKDEV_PAGE - 1) / BLKDEV_PAGE;
	img->pages = calloc(img->npages ? img->npages : 1, sizeof(*img->pages));
	if (!img->pages) {
		free(img);
		return NULL;
	}
	return img;
}

struct bimage *bimage_clone(const struct bimage *src)
{
	struct bimage *img = bimage_new(src->size);

	if (!img)
		return NULL;
	for (uint64_t i = 0; i < src->npages; i++) {
		img->pages[i] = src->pages[i];
		if (img->pages[i])
			atomic_fetch_add(&img->pages[i]->refs, 1);
	}
	return img;
}

void bimage_free(struct bimage *img)
{
	if (!img)
		return;
	for (uint64_t i = 0; i < img->npages; i++)
		page_put(img->pages[i]);
	free(img->pages);
	free(img);
}

uint64_t bimage_size(const struct bimage *img)
{
	return img->size;
}

void bimage_read(const struct bimage *img, void *buf, size_t len, uint64_t off)
{
	uint8_t *out = buf;

	while (len) {
		uint64_t pg = off / BLKDEV_PAGE, in = off % BLKDEV_PAGE;
		size_t n = BLKDEV_PAGE - in < len ? BLKDEV_PAGE - in : len;

		if (img->pages[pg])
			memcpy(out, img->pages[pg]->d + in, n);
		else
			memset(out, 0, n);
		out += n;
		off += n;
		len -= n;
	}
}

int bimage_write(struct bimage *img, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *in = buf;

	while (len) {
		uint64_t pg = off / BLKDEV_PAGE, at = off % BLKDEV_PAGE;
		size_t n = BLKDEV_PAGE - at < len ? BLKDEV_PAGE - at : len;
		struct bpage *p = img->pages[pg];

		if (!p || atomic_load(&p->refs) > 1) {
			struct bpage *q = malloc(sizeof(*q));

			if (!q)
				return -ENOMEM;
			atomic_init(&q->refs, 1);
			if (p)
				memcpy(q->d, p->d, BLKDEV_PAGE);
			else
				memset(q->d, 0, BLKDEV_PAGE);
			page_put(p);
			img->pages[pg] = p = q;
		}
		memcpy(p->d + at, in, n);
		in += n;
		off += n;
		len -= n;
	}
	return 0;
}

void bimage_copy_out(const struct bimage *img, uint8_t *out)
{
	bimage_read(img, out, img->size, 0);
}

/* ---- the device ---- */

struct bwrite {
	uint64_t off;
	size_t len;
	uint8_t *data;
	uint8_t *live;           /* per sector: not yet overtaken by a synced write */
};

struct blkdev {
	pthread_mutex_t lock;
	struct blkdev_config cfg;
	struct bimage *durable, *current;
	struct bwrite *pend;
	size_t npend, cap;
	uint64_t durable_gen;
	uint64_t n_flush, n_dsync;
	struct blkdev_counters cnt;
	struct wc_blk_io_hooks hooks;
};

static void bwrite_free(struct bwrite *w)
{
	free(w->data);
	free(w->live);
}

static int push_pending(struct blkdev *d, const void *buf, size_t len, uint64_t off)
{
	size_t sectors = (len + d->cfg.sector - 1) / d->cfg.sector;
	struct bwrite *w;

	if (d->npend == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		struct bwrite *p = realloc(d->pend, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		d->pend = p;
		d->cap = cap;
	}
	w = &d->pend[d->npend];
	w->off = off;
	w->len = len;
	w->data = malloc(len);
	w->live = malloc(sectors);
	if (!w->data || !w->live) {
		bwrite_free(w);
		return -ENOMEM;
	}
	memcpy(w->data, buf, len);
	memset(w->live, 1, sectors);
	d->npend++;
	return 0;
}

/* A synced write landed on [off, off+len): older pending writes can no
 * longer show there. */
static void overtake(struct blkdev *d, size_t upto, uint64_t off, size_t len)
{
	uint32_t s = d->cfg.sector;

	for (size_t i = 0; i < upto; i++) {
		struct bwrite *w = &d->pend[i];

		if (w->off >= off + len || off >= w->off + w->len)
			continue;
		for (size_t k = 0; k * s < w->len; k++) {
			uint64_t a = w->off + k * s, b = a + s;

			if (a >= off && b <= off + len)
				w->live[k] = 0;
		}
	}
}

static int dev_pwrite(void *ctx, const void *buf, size_t len, uint64_t off, bool dsync)
{
	struct blkdev *d = ctx;
	int ret;

	if (off > d->cfg.size || len > d->cfg.size - off || len % d->cfg.sector || off % d->cfg.sector)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	d->cnt.writes++;
	d->cnt.bytes_written += len;
	if (dsync) {
		d->cnt.dsync_writes++;
		if (d->cfg.sabotage_dsync_every && ++d->n_dsync % d->cfg.sabotage_dsync_every == 0)
			dsync = false;
	}
	/* In progress: pending (reads do not run meanwhile: the lock). */
	ret = push_pending(d, buf, len, off);
	if (!ret)
		ret = bimage_write(d->current, buf, len, off);
	if (ret)
		goto out;
	if (d->cfg.point)
		d->cfg.point(d->cfg.ctx, d, BLKDEV_BEFORE_WRITE, off, len, dsync);
	if (dsync) {
		ret = bimage_write(d->durable, buf, len, off);
		overtake(d, d->npend - 1, off, len);
		bwrite_free(&d->pend[--d->npend]);
		d->durable_gen++;
	}
	if (!ret && d->cfg.point)
		d->cfg.point(d->cfg.ctx, d, BLKDEV_AFTER_WRITE, off, len, dsync);
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

static int dev_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct blkdev *d = ctx;

	if (off > d->cfg.size || len > d->cfg.size - off)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	d->cnt.reads++;
	bimage_read(d->current, buf, len, off);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int dev_flush(void *ctx)
{
	struct blkdev *d = ctx;
	struct bimage *img;
	int ret = 0;

	pthread_mutex_lock(&d->lock);
	d->cnt.flushes++;
	if (d->cfg.point)
		d->cfg.point(d->cfg.ctx, d, BLKDEV_BEFORE_FLUSH, 0, 0, false);
	if (d->cfg.sabotage_flush_every && ++d->n_flush % d->cfg.sabotage_flush_every == 0)
		goto points;
	if (d->npend) {
		img = bimage_clone(d->current);
		if (!img) {
			ret = -ENOMEM;
			goto out;
		}
		bimage_free(d->durable);
		d->durable = img;
		for (size_t i = 0; i < d->npend; i++)
			bwrite_free(&d->pend[i]);
		d->npend = 0;
		d->durable_gen++;
	}
points:
	if (d->cfg.point)
		d->cfg.point(d->cfg.ctx, d, BLKDEV_AFTER_FLUSH, 0, 0, false);
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int blkdev_new(struct blkdev **out, const struct blkdev_config *cfg, const struct bimage *from)
{
	struct blkdev *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	if (cfg->sector < 512 || cfg->sector > BLKDEV_PAGE || (cfg->sector & (cfg->sector - 1)) ||
	    cfg->size % BLKDEV_PAGE) {
		free(d);
		return -EINVAL;
	}
	d->cfg = *cfg;
	pthread_mutex_init(&d->lock, NULL);
	d->durable = from ? bimage_clone(from) : bimage_new(cfg->size);
	d->current = d->durable ? bimage_clone(d->durable) : NULL;
	if (!d->current || (from && bimage_size(from) != cfg->size)) {
		blkdev_free(d);
		return d->current ? -EINVAL : -ENOMEM;
	}
	d->hooks = (struct wc_blk_io_hooks){ dev_pwrite, dev_pread, dev_flush, d };
	*out = d;
	return 0;
}

void blkdev_free(struct blkdev *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->npend; i++)
		bwrite_free(&d->pend[i]);
	free(d->pend);
	bimage_free(d->durable);
	bimage_free(d->current);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

const struct wc_blk_io_hooks *blkdev_hooks(struct blkdev *d)
{
	return &d->hooks;
}

void blkdev_set_point(struct blkdev *d, blkdev_point_fn point, void *ctx)
{
	pthread_mutex_lock(&d->lock);
	d->cfg.point = point;
	d->cfg.ctx = ctx;
	pthread_mutex_unlock(&d->lock);
}

size_t blkdev_pending(struct blkdev *d)
{
	return d->npend;
}

uint64_t blkdev_durable_gen(struct blkdev *d)
{
	return d->durable_gen;
}

static int apply(struct bimage *img, const struct bwrite *w, uint32_t s, bool torn, struct wc_rng *rng)
{
	for (size_t k = 0; k * s < w->len; k++) {
		int ret;

		if (!w->live[k] || (torn && (wc_rng_next(rng) & 1)))
			continue;
		ret = bimage_write(img, w->data + k * s, s, w->off + k * s);
		if (ret)
			return ret;
	}
	return 0;
}

struct bimage *blkdev_capture(struct blkdev *d, enum blkdev_mode mode, struct wc_rng *rng)
{
	struct bimage *img = bimage_clone(mode == BLKDEV_NEW ? d->current : d->durable);

	if (!img || mode == BLKDEV_OLD || mode == BLKDEV_NEW)
		return img;
	for (size_t i = 0; i < d->npend; i++) {
		const struct bwrite *w = &d->pend[i];
		unsigned how = mode == BLKDEV_WRITES ? (unsigned)(wc_rng_next(rng) & 1)
		             : mode == BLKDEV_TORN   ? 2u
		                                     : (unsigned)(wc_rng_next(rng) % 3);

		/* 0: dropped, 1: whole, 2: torn */
		if (how && apply(img, w, d->cfg.sector, how == 2, rng) != 0) {
			bimage_free(img);
			return NULL;
		}
	}
	return img;
}

void blkdev_counters(struct blkdev *d, struct blkdev_counters *out)
{
	pthread_mutex_lock(&d->lock);
	*out = d->cnt;
	pthread_mutex_unlock(&d->lock);
}
