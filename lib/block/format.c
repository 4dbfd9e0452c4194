/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * format.c -- the block medium's geometry and the checks of what it reads
 * back: superblock, state slots, record headers, summaries (pure: no I/O).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "block/format.h"
#include "util/crc32c.h"
#include "util/error.h"

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* Summary entries and bytes for a segment of seg_bytes: one entry per block
 * the segment can hold, plus room for discards (each takes an LBA of
 * records and an entry; the writer closes a segment whose summary is full). */
static void seg_fill(struct wc_blk_geom *g)
{
	g->sum_cap = g->seg_bytes / g->block_size + 16;
	g->summary_bytes = round_up(sizeof(struct wc_blk_sum_head) +
	                            g->sum_cap * sizeof(struct wc_blk_sum_ent), WC_BLK_UNIT);
	g->seg_data_bytes = g->seg_bytes - g->summary_bytes;
	g->n_entries = g->n_segments * (g->seg_data_bytes / g->block_size);
}

int wc_blk_geom_compute(struct wc_blk_geom *g, uint64_t bytes, uint32_t block_size, uint32_t lba,
                        const char *path)
{
	uint64_t avail, seg, min_seg;

	memset(g, 0, sizeof(*g));
	if (lba < 512 || lba > WC_BLK_UNIT || (lba & (lba - 1)))
		return wc_err(-EINVAL, "%s: logical block size %u is not 512..4096", path, lba);
	if (block_size < lba)
		return wc_err(-EINVAL, "%s: block size %u is smaller than the device's logical block "
		              "size %u", path, block_size, lba);
	g->block_size = block_size;
	g->lba = lba;
	g->seg_start = WC_BLK_SEG_START;
	/* A segment holds at least 8 records of a block each and its summary. */
	min_seg = round_up(8ull * (block_size + lba) + 2 * WC_BLK_UNIT, 65536);
	/* The caller's file is short, not the file system: -EINVAL. */
	if (bytes < g->seg_start + WC_BLK_MIN_SEGMENTS * min_seg)
		return wc_err(-EINVAL, "%s: %llu bytes are too small for a cache on a block medium with "
		              "%u-byte blocks: it takes %llu bytes at least", path, (unsigned long long)bytes,
		              block_size,
		              (unsigned long long)(g->seg_start + WC_BLK_MIN_SEGMENTS * min_seg));
	avail = bytes - g->seg_start;
	/* 16 MiB segments (dm-pcache's), fewer only on a small device: at
	 * least 8 segments where it fits, 4 at the least. */
	seg = avail / WC_BLK_SEG_MIN_SEGMENTS;
	if (seg < min_seg)
		seg = avail / WC_BLK_MIN_SEGMENTS;
	if (seg > WC_BLK_SEG_MAX)
		seg = WC_BLK_SEG_MAX;
	seg = seg / 65536 * 65536;
	if (seg < min_seg)
		seg = min_seg;
	g->seg_bytes = seg;
	g->n_segments = avail / seg;
	seg_fill(g);
	if (g->n_entries >= UINT32_MAX)
		return wc_err(-EFBIG, "%s: %llu blocks is more than one cache holds (4 Gi - 1)", path,
		              (unsigned long long)g->n_entries);
	return 0;
}

void wc_blk_geom_from_sb(struct wc_blk_geom *g, const struct wc_blk_sb *sb)
{
	memset(g, 0, sizeof(*g));
	g->block_size = sb->block_size;
	g->lba = sb->lba_size;
	g->seg_start = sb->seg_start;
	g->seg_bytes = sb->seg_bytes;
	g->n_segments = sb->n_segments;
	seg_fill(g);
}

uint32_t wc_blk_sb_crc(const struct wc_blk_sb *sb)
{
	return wc_crc32c(0, sb, WC_BLK_SB_CRC_END);
}

uint32_t wc_blk_state_crc(const struct wc_blk_state *st)
{
	return wc_crc32c(0, st, WC_BLK_STATE_CRC_END);
}

int wc_blk_sb_check(const struct wc_blk_sb *sb, uint64_t bytes, const char *path)
{
	struct wc_blk_geom g;

	if (sb->magic == WC_BLK_MAGIC_FORMATTING)
		return wc_err(-ENODATA, "%s: no cache here: a format on a block medium that did not "
		              "complete (wc_create was interrupted); create it again", path);
	if (sb->magic != WC_BLK_MAGIC)
		return wc_err(-EILSEQ, "%s: not a libwcache cache on a block medium (bad magic)", path);
	if (sb->version != WC_BLK_VERSION)
		return wc_err(-EPROTO, "%s: block-medium format version %u; this library reads %u",
		              path, sb->version, WC_BLK_VERSION);
	if (sb->crc != wc_blk_sb_crc(sb))
		return wc_err(-EBADMSG, "%s: superblock CRC mismatch (stored 0x%08x, computed 0x%08x)",
		              path, sb->crc, wc_blk_sb_crc(sb));
	if (sb->block_size < WC_MIN_BLOCK || sb->block_size > WC_MAX_BLOCK ||
	    (sb->block_size & (sb->block_size - 1)))
		return wc_err(-EUCLEAN, "%s: superblock block_size %u is invalid", path, sb->block_size);
	if (sb->lba_size < 512 || sb->lba_size > WC_BLK_UNIT || (sb->lba_size & (sb->lba_size - 1)) ||
	    sb->lba_size > sb->block_size)
		return wc_err(-EUCLEAN, "%s: superblock lba_size %u is invalid", path, sb->lba_size);
	if (sb->seg_start < WC_BLK_SEG_START || sb->seg_start % WC_BLK_UNIT ||
	    sb->seg_bytes % 65536 || sb->seg_bytes == 0 || sb->seg_bytes > WC_BLK_SEG_MAX ||
	    sb->n_segments < WC_BLK_MIN_SEGMENTS || sb->n_segments > (1ull << 32))
		return wc_err(-EUCLEAN, "%s: superblock segment geometry is invalid (start %llu, %llu "
		              "segments of %llu bytes)", path, (unsigned long long)sb->seg_start,
		              (unsigned long long)sb->n_segments, (unsigned long long)sb->seg_bytes);
	wc_blk_geom_from_sb(&g, sb);
	if (sb->summary_bytes != g.summary_bytes || g.seg_data_bytes < 2ull * (sb->block_size + sb->lba_size))
		return wc_err(-EUCLEAN, "%s: superblock summary_bytes %llu does not match its segments",
		              path, (unsigned long long)sb->summary_bytes);
	if (sb->origin_size == 0 || sb->origin_size % sb->block_size)
		return wc_err(-EUCLEAN, "%s: superblock origin_size %llu is invalid", path,
		              (unsigned long long)sb->origin_size);
	if (sb->seg_start + sb->n_segments * sb->seg_bytes > bytes)
		return wc_err(-EUCLEAN, "%s: truncated: %llu bytes, but the cache was formatted for %llu",
		              path, (unsigned long long)bytes,
		              (unsigned long long)(sb->seg_start + sb->n_segments * sb->seg_bytes));
	return 0;
}

bool wc_blk_state_intact(const struct wc_blk_state *st)
{
	return st->magic == WC_BLK_STATE_MAGIC && st->crc == wc_blk_state_crc(st) &&
	       st->generation > 0 && st->tail_seg > 0 && st->tail_seg <= st->clean_seg + 1 &&
	       st->tail_seg <= st->open_limit + 1;
}

int wc_blk_state_current(const struct wc_blk_state *slots[2])
{
	bool a = wc_blk_state_intact(slots[0]), b = wc_blk_state_intact(slots[1]);

	if (a && b)
		return slots[1]->generation > slots[0]->generation;
	return a ? 0 : b ? 1 : -1;
}

uint32_t wc_blk_rec_crc(const void *unit, uint32_t lba)
{
	static const uint32_t zero;
	uint32_t crc = wc_crc32c(0, unit, offsetof(struct wc_blk_rec, crc));

	crc = wc_crc32c(crc, &zero, sizeof(zero));
	return wc_crc32c(crc, (const char *)unit + offsetof(struct wc_blk_rec, crc) + 4,
	                 lba - offsetof(struct wc_blk_rec, crc) - 4);
}

bool wc_blk_rec_valid(const void *unit, uint32_t lba, uint32_t block_size, uint64_t cache_id,
                      uint64_t seg, uint64_t room, const void *data)
{
	const struct wc_blk_rec *r = unit;

	if (r->magic != WC_BLK_REC_MAGIC || r->cache_id != cache_id || r->seg != seg)
		return false;
	if (r->flags & ~WC_BLK_REC_DISCARD)
		return false;
	if (r->flags & WC_BLK_REC_DISCARD ? r->count != 0 : (r->count == 0 || r->count > WC_BLK_REC_MAX_BLOCKS))
		return false;
	if ((uint64_t)lba + (uint64_t)r->count * block_size > room)
		return false;
	if (r->crc != wc_blk_rec_crc(unit, lba))
		return false;
	if (data && r->count && wc_crc32c(0, data, (size_t)r->count * block_size) != r->data_crc)
		return false;
	return true;
}

uint32_t wc_blk_sum_crc(const struct wc_blk_sum_head *h, const struct wc_blk_sum_ent *e)
{
	struct wc_blk_sum_head c = *h;

	c.crc = 0;
	return wc_crc32c(wc_crc32c(0, &c, sizeof(c)), e, (size_t)h->n * sizeof(*e));
}

/*
 * What a create finds where it would format.  Both media's layouts are read
 * here (a create on one medium must not format over a cache on the other),
 * and anything else is data: wc_create used to format every file that was
 * not a valid cache, a mistyped path being enough to lose a file system.
 */
int wc_format_target_check(const void *head, size_t len, uint64_t size, const char *path, bool force)
{
	const unsigned char *p = head;
	struct wc_layout l;
	uint64_t magic = 0;
	char what[400];
	size_t i;

	if (len >= sizeof(magic))
		memcpy(&magic, head, sizeof(magic));
	if (magic == WC_MAGIC_FORMATTING || magic == WC_BLK_MAGIC_FORMATTING)
		return 0;
	if (magic == WC_MAGIC && len >= sizeof(struct wc_pmem_sb)) {
		const struct wc_pmem_sb *sb = head;

		if (wc_sb_validate(sb, size, path, &l) == 0)
			return wc_err(-EEXIST, "%s already holds a valid cache (%llu blocks of %u bytes); "
			              "open it, or remove it to make another (a device: wipe its first "
			              "MiB); force=1 does not format over a cache", path,
			              (unsigned long long)sb->n_blocks, sb->block_size);
		snprintf(what, sizeof(what), "a libwcache cache that does not open (%s)", wc_errmsg());
	} else if (magic == WC_BLK_MAGIC && len >= sizeof(struct wc_blk_sb)) {
		const struct wc_blk_sb *sb = head;

		if (wc_blk_sb_check(sb, size, path) == 0)
			return wc_err(-EEXIST, "%s already holds a valid cache on a block medium (%llu "
			              "segments of %llu bytes); open it, or remove it to make another (a "
			              "device: wipe its first MiB); force=1 does not format over a cache",
			              path, (unsigned long long)sb->n_segments,
			              (unsigned long long)sb->seg_bytes);
		snprintf(what, sizeof(what), "a libwcache cache on a block medium that does not open (%s)",
		         wc_errmsg());
	} else {
		for (i = 0; i < len && !p[i]; i++)
			;
		if (i == len)
			return 0;
		snprintf(what, sizeof(what), "data that is not a cache (byte %zu is 0x%02x; the first "
		         "%zu bytes, where a cache's superblock and metadata go, are not all zero)",
		         i, p[i], len);
	}
	if (force)
		return 0;
	return wc_err(-EEXIST, "%s holds %s: formatting would destroy it; set force=1 (wcctl create "
	              "--force) to format it anyway", path, what);
}
