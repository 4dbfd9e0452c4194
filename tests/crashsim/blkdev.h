/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blkdev.h -- the power-failure simulator's block device: an in-memory
 * device behind the block medium's I/O hooks (core/testhooks.h, struct
 * wc_blk_io_hooks), so the cache runs its real code and the device decides
 * what a power cut leaves.
 *
 * Model (a disk or SSD with a volatile write cache):
 *  - a write that returned without dsync is "pending": a flush makes every
 *    pending write durable; until then a power cut keeps it, drops it, or
 *    tears it -- each `sector` (the tear unit: 512 or 4096) of it kept or
 *    dropped on its own;
 *  - a write with dsync (RWF_DSYNC: FUA, or write + flush) is durable when
 *    it returns, and only it: earlier pending writes stay pending;
 *  - a write in progress (a crash point before it returns) is pending too:
 *    it may land whole, in part, or not at all;
 *  - reads see every completed write.
 * Pending writes to the same sector apply in order: an image may show any of
 * the versions written to it since the last flush, or the durable one.
 *
 * Images are copy-on-write page tables (struct bimage): a capture costs a
 * table copy and the pages it changes.
 *
 * Crash points: a callback before and after each write and each flush,
 * called with the device's lock held (from the thread doing the I/O):
 * capture images there (blkdev_capture), check them later.
 */
#ifndef WC_BLKDEV_H
#define WC_BLKDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/testhooks.h"
#include "crashsim.h"

#define BLKDEV_PAGE 4096u

/* ---- images ---- */

struct bimage;

struct bimage *bimage_new(uint64_t size);           /* all zero */
struct bimage *bimage_clone(const struct bimage *src);
void bimage_free(struct bimage *img);
uint64_t bimage_size(const struct bimage *img);
void bimage_read(const struct bimage *img, void *buf, size_t len, uint64_t off);
int bimage_write(struct bimage *img, const void *buf, size_t len, uint64_t off);
/* The whole image, size bytes, into out. */
void bimage_copy_out(const struct bimage *img, uint8_t *out);

/* ---- the device ---- */

struct blkdev;

enum blkdev_event {
	BLKDEV_BEFORE_WRITE,  /* the write is in progress: pending, may land in part */
	BLKDEV_AFTER_WRITE,   /* it returned (durable if dsync) */
	BLKDEV_BEFORE_FLUSH,
	BLKDEV_AFTER_FLUSH,
};

enum blkdev_mode {
	BLKDEV_OLD,    /* nothing pending survived */
	BLKDEV_NEW,    /* every pending write landed whole */
	BLKDEV_WRITES, /* each pending write landed whole or not at all */
	BLKDEV_TORN,   /* each sector of each pending write on its own */
	BLKDEV_MIXED,  /* each pending write whole, absent or torn */
};

typedef void (*blkdev_point_fn)(void *ctx, struct blkdev *d, enum blkdev_event ev, uint64_t off,
                                uint64_t len, bool dsync);

struct blkdev_config {
	uint64_t size;
	uint32_t sector;               /* tear unit: 512 or 4096 */
	blkdev_point_fn point;         /* NULL: no crash points */
	void *ctx;
	/* Sabotage, to prove a sweep can fail: every Nth flush makes nothing
	 * durable, every Nth dsync write is not synced (0 = off). */
	unsigned sabotage_flush_every, sabotage_dsync_every;
};

/* A device holding `from` (NULL: zeros), durable. */
int blkdev_new(struct blkdev **out, const struct blkdev_config *cfg, const struct bimage *from);
void blkdev_free(struct blkdev *d);
const struct wc_blk_io_hooks *blkdev_hooks(struct blkdev *d);
/* Another crash point callback from now on (NULL: none). */
void blkdev_set_point(struct blkdev *d, blkdev_point_fn point, void *ctx);

/* A crash image now (lock held: from the point callback). */
struct bimage *blkdev_capture(struct blkdev *d, enum blkdev_mode mode, struct wc_rng *rng);
/* Writes pending (in progress ones included), and a number that changes
 * whenever the durable content does (lock held). */
size_t blkdev_pending(struct blkdev *d);
uint64_t blkdev_durable_gen(struct blkdev *d);

struct blkdev_counters {
	uint64_t writes, dsync_writes, flushes, reads, bytes_written;
};
void blkdev_counters(struct blkdev *d, struct blkdev_counters *out);

#endif
