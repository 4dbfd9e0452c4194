/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bind.c -- a cache knows its origin.
 *
 * A cache holds the newest version of some of its origin's blocks.  Opened
 * with another origin, it would serve those blocks as that origin's and
 * write them back into it: one mistyped device path in a service's
 * configuration overwrites the wrong disk.  So the superblock records the
 * origin's identity (format.h, docs/FORMAT.md "Origin identity") and
 * wc_open compares it with the origin in hand before recovery writes a byte
 * of the cache, and before write-back could write one of the origin.
 *
 * Identities match when their kinds match and, where the recorded one has a
 * stable id (WWID, serial, inode + tag, RBD ids), the ids match: the name
 * may change (a renamed device or file).  Where the recorded one has none
 * (an NBD export, an embedder's origin, a disk that reports no serial),
 * the names must match.
 *
 * The recorded identity changes (a version-2 cache's first open, a grown
 * origin, a new name, a re-bind) by writing the slot not in force with the
 * next generation and draining once; a torn write fails that slot's CRC and
 * leaves the previous identity in force.  It is written after recovery and
 * before write-back starts: until then nothing has been written to the
 * origin, so a crash before the drain costs nothing but the note.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/bind.h"
#include "core/cache.h"
#include "core/medium.h"
#include "util/error.h"
#include "util/log.h"
#include "util/size.h"

_Static_assert(WC_ORIGIN_IDENTITY_ID_LEN == WC_ORIGIN_ID_ID_LEN &&
               WC_ORIGIN_IDENTITY_NAME_LEN == WC_ORIGIN_ID_NAME_LEN,
               "an identity fits its slot's fields");

const char *wc_bind_describe(char *buf, size_t len, unsigned kind, const char *name,
                             const char *id, uint64_t size)
{
	char sz[32];

	/* An embedder's origin is what its describe() says: no kind word. */
	snprintf(buf, len, "%s%s%s (%s, %s)", kind == WC_ORIGIN_IDENTITY_CUSTOM ? "" : wc_origin_kind_name(kind),
	         kind == WC_ORIGIN_IDENTITY_CUSTOM ? "" : " ", name, id[0] ? id : "name only",
	         wc_size_format(sz, sizeof(sz), size));
	return buf;
}

static bool identity_matches(const struct wc_pmem_origin_id *rec, const struct wc_origin_identity *now)
{
	if (rec->kind != now->kind)
		return false;
	if (rec->id[0])
		return strcmp(rec->id, now->id) == 0;
	return strcmp(rec->name, now->name) == 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Dirty blocks (origin blocks with a committed version), from the image
 * alone, as recovery would count them: read only. */
static uint64_t count_dirty(struct wc_cache *c)
{
	const struct wc_layout *l = &c->layout;
	const struct wc_pmem_entry *pe;
	struct wc_commit_point cp;
	uint64_t n = 0, distinct = 0, *blocks;

	if (c->medium)
		return c->medium->dirty_in_image(c);
	pe = wc_pmem_entry(c->base, l, 0);
	wc_commit_point(wc_sb(c->base), wc_pmem_record(c->base, 0), pe, l->n_blocks, &cp);
	for (uint64_t i = 0; i < l->n_blocks; i++)
		n += pe[i].seq != WC_NONE && pe[i].seq < cp.seq;
	if (!n)
		return 0;
	blocks = malloc(n * sizeof(*blocks));
	if (!blocks)
		return n; /* versions, not blocks: close enough for a message */
	n = 0;
	for (uint64_t i = 0; i < l->n_blocks; i++)
		if (pe[i].seq != WC_NONE && pe[i].seq < cp.seq)
			blocks[n++] = pe[i].origin_block;
	qsort(blocks, n, sizeof(*blocks), cmp_u64);
	for (uint64_t i = 0; i < n; i++)
		distinct += i == 0 || blocks[i] != blocks[i - 1];
	free(blocks);
	return distinct;
}

/* "3,812" */
static const char *thousands(char *buf, size_t len, uint64_t v)
{
	char digits[24];
	size_t n, o = 0;

	snprintf(digits, sizeof(digits), "%" PRIu64, v);
	n = strlen(digits);
	for (size_t i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

/* The identity slots and the origin size at format, wherever the medium
 * keeps them. */
static const struct wc_pmem_origin_id *id_slots(struct wc_cache *c)
{
	return c->medium ? c->medium->id_slots(c) : wc_origin_id_slot(c->base, 0);
}

static uint64_t format_origin_size(struct wc_cache *c)
{
	return c->medium ? c->medium->format_origin_size(c) : wc_sb(c->base)->origin_size;
}

static int refuse_other(struct wc_cache *c, const struct wc_pmem_origin_id *rec,
                        uint64_t origin_size, uint64_t dirty)
{
	const struct wc_origin_identity *now = &c->bind.now;
	char was[512], is[512], n[32];
	const char *how;

	wc_bind_describe(was, sizeof(was), rec->kind, rec->name, rec->id, rec->origin_size);
	wc_bind_describe(is, sizeof(is), now->kind, now->name, now->id, origin_size);
	if (dirty && c->cfg.origin_rebind == WC_ORIGIN_REBIND_CLEAN)
		how = "; origin_rebind=1 binds only a cache without dirty blocks: if the "
		      "origin was moved or copied with its data, re-bind with `wcctl set-origin --force` "
		      "(origin_rebind=force), and the dirty blocks will be written back into it";
	else if (dirty)
		how = "; if it is the same origin renamed or moved, `wcctl set-origin --force` "
		      "re-binds it (the dirty blocks will be written back into it)";
	else
		how = "; to use this cache for it, `wcctl set-origin` (origin_rebind=1) re-binds it";
	if (dirty)
		return wc_err(-EXDEV, "cache %s holds %s dirty blocks of origin %s; the origin given is "
		              "%s, another origin: refusing, neither was touched%s", c->cache_path,
		              thousands(n, sizeof(n), dirty), was, is, how);
	return wc_err(-EXDEV, "cache %s belongs to origin %s (no dirty blocks); the origin given is "
	              "%s, another origin: refusing, neither was touched%s", c->cache_path, was, is,
	              how);
}

int wc_bind_create(struct wc_cache *c, uint64_t origin_size, struct wc_pmem_origin_id *slot)
{
	struct wc_bind *b = &c->bind;
	int ret = wc_origin_identify(&c->origin, &b->now, true);

	if (ret)
		return wc_err(ret, "%s: identifying the origin: %s", c->cache_path, wc_errmsg());
	memset(slot, 0, sizeof(*slot));
	slot->kind = b->now.kind;
	slot->source = WC_OID_SRC_CREATE;
	slot->generation = 1;
	slot->origin_size = origin_size;
	slot->time = (uint64_t)time(NULL);
	memcpy(slot->id, b->now.id, sizeof(slot->id));
	memcpy(slot->name, b->now.name, sizeof(slot->name));
	wc_origin_id_seal(slot);
	b->recorded = *slot;
	b->slot = 0;
	b->size = origin_size;
	b->pending = 0;
	return 0;
}

/* A version-3 cache with no intact identity, or a version-2 cache. */
static int check_unrecorded(struct wc_cache *c, uint64_t origin_size)
{
	struct wc_bind *b = &c->bind;

	if (origin_size < format_origin_size(c))
		return wc_err(-EINVAL, "%s: origin %s has %llu bytes, the cache was formatted for %llu",
		              c->cache_path, b->now.name, (unsigned long long)origin_size,
		              (unsigned long long)format_origin_size(c));
	if (!c->medium && wc_sb(c->base)->version == WC_FORMAT_VERSION_NO_IDENTITY) {
		b->pending = WC_OID_SRC_ADOPT;
	} else if (c->cfg.origin_rebind == WC_ORIGIN_REBIND_FORCE) {
		b->pending = WC_OID_SRC_REBIND;
	} else {
		char n[32];

		return wc_err(-EBADMSG, "%s: both origin identity slots (offsets %u and %u) are "
		              "damaged, and the cache holds %s dirty blocks of an origin it can no "
		              "longer name; if %s is that origin, `wcctl set-origin --force` records it",
		              c->cache_path, c->medium ? c->medium->id_offset : WC_ORIGIN_ID_OFFSET,
		              c->medium ? c->medium->id_offset + c->medium->id_stride
		                        : WC_ORIGIN_ID_OFFSET + 512,
		              thousands(n, sizeof(n), count_dirty(c)), b->now.name);
	}
	b->size = origin_size;
	return 0;
}

int wc_bind_check(struct wc_cache *c, uint64_t origin_size)
{
	struct wc_bind *b = &c->bind;
	const struct wc_pmem_origin_id *rec;
	uint64_t dirty;
	int ret;

	b->pending = 0;
	ret = wc_origin_identify(&c->origin, &b->now, false);
	if (ret)
		return wc_err(ret, "%s: identifying the origin: %s", c->cache_path, wc_errmsg());
	b->slot = wc_origin_id_current(id_slots(c));
	if (b->slot < 0)
		return check_unrecorded(c, origin_size);
	b->recorded = id_slots(c)[b->slot];
	rec = &b->recorded;
	if (identity_matches(rec, &b->now)) {
		if (origin_size < rec->origin_size)
			return wc_err(-EINVAL, "%s: origin %s has %llu bytes, the cache was %s %llu: it "
			              "shrank", c->cache_path, b->now.name, (unsigned long long)origin_size,
			              rec->origin_size == format_origin_size(c)
			                      ? "formatted for" : "serving it grown to",
			              (unsigned long long)rec->origin_size);
		b->size = origin_size;
		if (origin_size > rec->origin_size)
			b->pending = WC_OID_SRC_GROWN;
		else if (strcmp(rec->name, b->now.name))
			b->pending = WC_OID_SRC_RENAMED;
		return 0;
	}
	dirty = count_dirty(c);
	if (c->cfg.origin_rebind == WC_ORIGIN_REBIND_NEVER ||
	    (dirty && c->cfg.origin_rebind != WC_ORIGIN_REBIND_FORCE))
		return refuse_other(c, rec, origin_size, dirty);
	/* The dirty blocks go to the new origin: all of them must fit. */
	if (dirty && origin_size < rec->origin_size)
		return wc_err(-EINVAL, "%s: origin %s has %llu bytes, fewer than the %llu of origin "
		              "%s whose dirty blocks it would receive", c->cache_path, b->now.name,
		              (unsigned long long)origin_size, (unsigned long long)rec->origin_size,
		              rec->name);
	/* A clean cache holds nothing of any origin: any size will do. */
	b->size = origin_size;
	b->pending = WC_OID_SRC_REBIND;
	return 0;
}

void wc_bind_settle(struct wc_cache *c)
{
	struct wc_bind *b = &c->bind;
	struct wc_pmem_origin_id slot;
	unsigned to;
	char desc[512];

	if (!b->pending) {
		wc_bind_text(c, false);
		return;
	}
	/* A file gets its tag now that it is (again) this cache's origin;
	 * without one it is still known by device and inode. */
	if (b->pending == WC_OID_SRC_ADOPT || b->pending == WC_OID_SRC_REBIND)
		wc_origin_identify(&c->origin, &b->now, true);
	memset(&slot, 0, sizeof(slot));
	slot.kind = b->now.kind;
	slot.source = b->pending;
	slot.generation = b->slot < 0 ? 1 : b->recorded.generation + 1;
	slot.origin_size = b->size;
	slot.time = (uint64_t)time(NULL);
	memcpy(slot.id, b->now.id, sizeof(slot.id));
	memcpy(slot.name, b->now.name, sizeof(slot.name));
	wc_origin_id_seal(&slot);
	to = b->slot < 0 ? 0 : 1u - (unsigned)b->slot;
	if (c->medium) {
		/* A failed write leaves the previous slot in force: the cache
		 * goes on under the identity it had (the note is lost). */
		if (c->medium->write_id_slot(c, to, &slot))
			wc_log(WC_LOG_WARNING, "%s", wc_errmsg());
	} else {
		wc_persist_copy(&c->fp, wc_origin_id_slot(c->base, to), &slot, sizeof(slot));
		wc_persist_drain(&c->fp);
	}
	/* Once in a cache's life, and not asked for: said where a service's
	 * log will keep it (a re-bind was asked for, and wc_stats says it). */
	if (b->pending == WC_OID_SRC_ADOPT)
		wc_log(WC_LOG_NOTICE, "%s: made by an earlier libwcache, which recorded no origin "
		       "identity: from now on it belongs to origin %s", c->cache_path,
		       wc_bind_describe(desc, sizeof(desc), slot.kind, slot.name, slot.id,
		                        slot.origin_size));
	b->recorded = slot;
	b->slot = (int)to;
	wc_bind_text(c, b->pending == WC_OID_SRC_ADOPT);
}

const char *wc_bind_text(struct wc_cache *c, bool adopted)
{
	struct wc_bind *b = &c->bind;
	const struct wc_pmem_origin_id *r = &b->recorded;
	char desc[512];

	snprintf(b->text, sizeof(b->text), "%s%s",
	         wc_bind_describe(desc, sizeof(desc), r->kind, r->name, r->id, r->origin_size),
	         adopted ? "; recorded at this open: the cache was made by an earlier libwcache" : "");
	return b->text;
}
