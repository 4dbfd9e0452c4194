/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * format.h -- the block medium's on-device layout (version 1): the cache on
 * an SSD, a disk or a file that is not persistent memory, written with
 * O_DIRECT and never mapped.  docs/FORMAT.md ("Block medium") describes the
 * same bytes for tools and people.
 *
 *   0        superblock (static fields, CRC)           4 KiB unit
 *   4096     state slot 0 \ tail, clean point, open    4 KiB units, written
 *   8192     state slot 1 / limit; newest intact wins  alone, alternately
 *   12288    origin identity slot 0 \ struct           4 KiB units
 *   16384    origin identity slot 1 / wc_pmem_origin_id
 *   seg_start  n_segments segments of seg_bytes each
 *
 * A segment is a log: records from its start, each an LBA-sized header
 * (struct wc_blk_rec: origin block numbers, sequence numbers, CRC32C over
 * header and data) followed by its data blocks, written with ONE device
 * write -- with RWF_DSYNC when the write is FUA.  Its last summary_bytes
 * hold the segment summary: every record's blocks, written once the
 * segment is full and its records durable, so that recovery reads one
 * summary per segment instead of the data.  A segment whose summary is
 * missing or damaged (the open ones at a crash) is read whole and its
 * records found by their headers; a record whose CRC fails was never
 * acknowledged and is ignored.
 *
 * Segments are used in a ring, in order of their sequence number (seg):
 * a version is always in a segment no older than the versions it
 * supersedes, so reclaiming the oldest segment first never brings a
 * superseded version back, and no write ever invalidates anything on the
 * device.  Every 4 KiB unit above is written alone, so a torn write damages
 * one slot at most, whatever the logical block size (512 or 4096).
 *
 * All integers little-endian.
 */
#ifndef WC_BLOCK_FORMAT_H
#define WC_BLOCK_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/format.h"

#define WC_BLK_MAGIC 0x314b434f4c424357ull     /* "WCBLOCK1" read as bytes */
/* The superblock's magic while a format runs (WC_MAGIC_FORMATTING's
 * counterpart): written alone and synced before anything else. */
#define WC_BLK_MAGIC_FORMATTING 0x544d524f46424357ull /* "WCBFORMT" */
#define WC_BLK_VERSION 1u
#define WC_BLK_UNIT 4096u
#define WC_BLK_STATE_OFFSET 4096u              /* two slots, one unit each */
#define WC_BLK_ID_OFFSET 12288u                /* two identity slots, one unit each */
#define WC_BLK_SEG_START 65536u                /* first segment (64 KiB aligned) */
#define WC_BLK_SEG_MAX (16u << 20)             /* dm-pcache's segment size */
#define WC_BLK_SEG_MIN_SEGMENTS 8u             /* fewer, larger segments cost free space */
#define WC_BLK_MIN_SEGMENTS 4u                 /* tail, head, one to spare, one being cleaned */

struct wc_blk_sb {
	uint64_t magic;          /*   0 WC_BLK_MAGIC */
	uint32_t version;        /*   8 WC_BLK_VERSION */
	uint32_t block_size;     /*  12 cache block size */
	uint32_t lba_size;       /*  16 logical block size at format: a record header's size */
	uint32_t pad0;           /*  20 */
	uint64_t seg_start;      /*  24 */
	uint64_t seg_bytes;      /*  32 */
	uint64_t n_segments;     /*  40 */
	uint64_t summary_bytes;  /*  48 at the end of each segment */
	uint64_t origin_size;    /*  56 bytes of origin at format */
	uint8_t uuid[16];        /*  64 */
	uint64_t cache_id;       /*  80 in every record header and summary: another cache's
	                                  records (a copied image, an old format) never count */
	uint64_t device_bytes;   /*  88 size of the device or file at format */
	uint64_t format_time;    /*  96 seconds since the epoch */
	uint32_t crc;            /* 104 CRC32C of bytes 0..103 */
	uint32_t pad1;           /* 108 */
};
#define WC_BLK_SB_CRC_END 104u
_Static_assert(__builtin_offsetof(struct wc_blk_sb, crc) == WC_BLK_SB_CRC_END, "crc");

/*
 * Where the ring stands.  Written alone (one 4 KiB unit, RWF_DSYNC), in the
 * slot not in force, with the next generation: a torn write leaves the
 * other in force.  Written when the tail moves (after the origin holds the
 * reclaimed segment's blocks durably), when the open limit must grow, and
 * at close.
 */
#define WC_BLK_STATE_MAGIC 0x4554415453424357ull /* "WCBSTATE" */
struct wc_blk_state {
	uint64_t magic;          /*  0 */
	uint64_t generation;     /*  8 the higher intact slot is in force */
	uint64_t tail_seg;       /* 16 oldest segment whose records count */
	uint64_t clean_seg;      /* 24 versions in segments below it are on the origin */
	uint64_t open_limit;     /* 32 no record is in a segment above it */
	uint64_t time;           /* 40 seconds since the epoch */
	uint64_t reserved;       /* 48 zero */
	uint32_t crc;            /* 56 CRC32C of bytes 0..55 */
	uint32_t pad;            /* 60 */
};
#define WC_BLK_STATE_CRC_END 56u
_Static_assert(sizeof(struct wc_blk_state) == 64, "state is 64 bytes");

/*
 * A record header: the first bytes of an LBA-sized unit, followed in the
 * same device write by `count` data blocks.  A discard record (flag
 * WC_BLK_REC_DISCARD) has no data: origin[0] is the first block discarded,
 * origin[1] how many, origin[2] whether the origin keeps them (a cache-only
 * invalidation) or not; it hides every older version of them.
 */
#define WC_BLK_REC_MAGIC 0x44524f4345524357ull /* "WCRECORD" */
#define WC_BLK_REC_DISCARD 1u
/* A discard record's third word, origin[2] (header bytes 64..71, zero in
 * every discard record before it was named): what the origin holds of the
 * range.  Recovery hides the older versions either way; the value says why,
 * for tools and people.  Bytes 72 on of a discard record's header stay 0. */
#define WC_BLK_REC_DISCARD_ORIGIN 2u
#define WC_BLK_DISCARD_GONE 0u       /* a discard: the origin's data is gone too */
#define WC_BLK_DISCARD_CACHE_ONLY 1u /* an invalidation: the origin holds the range */
struct wc_blk_rec {
	uint64_t magic;          /*  0 */
	uint64_t cache_id;       /*  8 the superblock's */
	uint64_t seq;            /* 16 record sequence number: grows with position in the ring */
	uint64_t seg;            /* 24 the segment sequence number it was written in */
	uint32_t count;          /* 32 data blocks after the header */
	uint32_t flags;          /* 36 WC_BLK_REC_* */
	uint32_t data_crc;       /* 40 CRC32C of the data blocks */
	uint32_t crc;            /* 44 CRC32C of the whole header unit, this field taken as 0 */
	uint64_t origin[];       /* 48 origin block of each data block */
};
#define WC_BLK_REC_FIXED 48u
/* Blocks one record carries: what a 512-byte header can name, and at most
 * 256 KiB, so one record is one device request on any device. */
#define WC_BLK_REC_MAX_BLOCKS ((512u - WC_BLK_REC_FIXED) / 8u)
#define WC_BLK_REC_MAX_BYTES (256u << 10)

#define WC_BLK_SUM_MAGIC 0x5952414d4d555357ull /* "WSUMMARY" */
struct wc_blk_sum_head {
	uint64_t magic;          /*  0 */
	uint64_t cache_id;       /*  8 */
	uint64_t seg;            /* 16 the segment sequence number it summarises */
	uint32_t n;              /* 24 entries that follow */
	uint32_t crc;            /* 28 CRC32C of the head (this field as 0) and the entries */
};
/* One per data block, or per discard record, in record order. */
#define WC_BLK_SUM_DISCARD 0x80000000u
struct wc_blk_sum_ent {
	uint64_t origin;         /*  0 origin block (a discard: the first) */
	uint64_t seq;            /*  8 its record's sequence number */
	uint32_t off;            /* 16 the data's offset in the segment, in LBAs */
	uint32_t len;            /* 20 a discard: WC_BLK_SUM_DISCARD | blocks; else 0 */
};
_Static_assert(sizeof(struct wc_blk_sum_ent) == 24, "summary entry is 24 bytes");
_Static_assert(sizeof(struct wc_blk_sum_head) == 32, "summary head is 32 bytes");

/* The geometry a device of `bytes` gets (format), or that a superblock
 * describes (open). */
struct wc_blk_geom {
	uint32_t block_size, lba;
	uint64_t seg_start, seg_bytes, n_segments, summary_bytes;
	uint64_t sum_cap;        /* summary entries a segment holds */
	uint64_t seg_data_bytes; /* seg_bytes - summary_bytes: room for records */
	uint64_t n_entries;      /* most versions the ring can hold at once */
};

int wc_blk_geom_compute(struct wc_blk_geom *g, uint64_t bytes, uint32_t block_size, uint32_t lba,
                        const char *path);
void wc_blk_geom_from_sb(struct wc_blk_geom *g, const struct wc_blk_sb *sb);

uint32_t wc_blk_sb_crc(const struct wc_blk_sb *sb);
uint32_t wc_blk_state_crc(const struct wc_blk_state *st);
/* Check a superblock read from a device of `bytes` bytes: 0, or -ENODATA (a
 * format that did not complete), -EILSEQ (not a block-medium cache),
 * -EPROTO (version), -EBADMSG (CRC), -EUCLEAN (inconsistent geometry, or
 * the device smaller than the format: damage either way), with a message
 * naming `path` and the field. */
int wc_blk_sb_check(const struct wc_blk_sb *sb, uint64_t bytes, const char *path);
bool wc_blk_state_intact(const struct wc_blk_state *st);
/* The slot in force of the two (newest intact), or -1. */
int wc_blk_state_current(const struct wc_blk_state *slots[2]);

/* A record header's CRC (over lba bytes, its crc field taken as 0). */
uint32_t wc_blk_rec_crc(const void *unit, uint32_t lba);
/* Is the header at `unit` a whole record of cache `cache_id` in segment
 * `seg`, whose data (if `data` is given) matches its CRC?  `room` is the
 * bytes from the header to the end of the segment's record area. */
bool wc_blk_rec_valid(const void *unit, uint32_t lba, uint32_t block_size, uint64_t cache_id,
                      uint64_t seg, uint64_t room, const void *data);
uint32_t wc_blk_sum_crc(const struct wc_blk_sum_head *h, const struct wc_blk_sum_ent *e);

static inline uint64_t wc_blk_seg_offset(const struct wc_blk_geom *g, uint64_t seg)
{
	return g->seg_start + (seg % g->n_segments) * g->seg_bytes;
}

/* The bytes wc_create looks at before it formats: where either medium's
 * superblock and metadata go, and where most other formats keep their
 * labels (partition tables, file systems' superblocks -- btrfs's at 64 KiB
 * --, LVM and md labels). */
#define WC_FORMAT_PROBE_BYTES (1u << 20)

/* Before a format, what is there: `head` holds the first `len` bytes (up to
 * WC_FORMAT_PROBE_BYTES) of the file or device, `size` bytes in all.  0 to
 * format: all zero, or a format of either medium that did not complete.
 * -EEXIST + a message naming `path` and what was found: a cache of either
 * medium that opens, whatever `force` says (a cache is destroyed by
 * removing it, never by a create); and unless `force`, anything else --
 * data that is not a cache (the offset of its first byte that is not zero),
 * or a cache that does not open (damaged, another version). */
int wc_format_target_check(const void *head, size_t len, uint64_t size, const char *path, bool force);

/* medium=auto: is this path for the block medium?  (create: the mapping's
 * granularity is page and nothing forced it; open: the magic, read by
 * device.c.  wcctl asks it too.) */
bool wc_blk_is_block_image(const char *path);

#endif /* WC_BLOCK_FORMAT_H */
