/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bind.h -- which origin a cache belongs to (bind.c): the identity recorded
 * in the superblock (format.h, struct wc_pmem_origin_id) against the
 * identity of the origin it is opened with (origin.h).
 */
#ifndef WC_BIND_H
#define WC_BIND_H

#include <stdbool.h>
#include <stdint.h>

#include "core/format.h"
#include "origin/origin.h"

struct wc_cache;

struct wc_bind {
	struct wc_origin_identity now;        /* the origin the cache was opened with */
	struct wc_pmem_origin_id recorded;    /* the slot in force at open (if slot >= 0) */
	int slot;                             /* which slot that was; -1: none */
	uint64_t size;                        /* bytes the cache serves */
	uint8_t pending;                      /* WC_OID_SRC_* to record after recovery, or 0 */
	char text[WC_ORIGIN_IDENTITY_ID_LEN + WC_ORIGIN_IDENTITY_NAME_LEN + 160]; /* wc_stats */
};

/* wc_create: identify the origin (tagging a file), and fill the slot that
 * format writes (generation 1). */
int wc_bind_create(struct wc_cache *c, uint64_t origin_size, struct wc_pmem_origin_id *slot);

/* wc_open, after the superblock validated and before recovery writes
 * anything: the origin is the cache's own (possibly renamed or grown), or
 * cfg.origin_rebind allows binding it; otherwise -EXDEV (another origin),
 * -EINVAL (the same origin, shrunk) or -EBADMSG (a version-3 cache whose
 * identity slots are both damaged), with a message naming both origins and
 * the dirty blocks at stake.  Reads the image only.  On success
 * c->bind.size is the origin size the cache serves. */
int wc_bind_check(struct wc_cache *c, uint64_t origin_size);

/* After recovery: record what wc_bind_check found to record (a version-2
 * cache's first identity, a new size or name, a re-bind) in the other slot,
 * with one drain.  A crash before the drain leaves the previous slot in
 * force; nothing of the origin has been written yet. */
void wc_bind_settle(struct wc_cache *c);

/* What wc_stats.origin_identity says (kept in c->bind.text). */
const char *wc_bind_text(struct wc_cache *c, bool adopted);

/* "file /var/tmp/o.img, inode 12 tag 9f..., 64 MiB" into buf. */
const char *wc_bind_describe(char *buf, size_t len, unsigned kind, const char *name,
                             const char *id, uint64_t size);

#endif
