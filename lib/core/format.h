/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * format.h -- the on-pmem layout (version 3).  The only code that knows
 * offsets; docs/FORMAT.md describes the same bytes for tools and people.
 *
 *   offset 0                 superblock (4 KiB region): static fields,
 *                            seq_count (256), two commit records (320, 384),
 *                            the flush policy line (512), two origin
 *                            identity slots (1024, 1536)
 *   offset 4096              entries: n_blocks x struct wc_pmem_entry (16 B)
 *   offset data_offset       data: n_blocks x block_size, block-size aligned
 *
 * All integers little-endian (only little-endian hosts are supported).
 */
#ifndef WC_FORMAT_H
#define WC_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "origin/origin.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libwcache's on-pmem format is little-endian and only built for little-endian hosts"
#endif

#define WC_MAGIC 0x3130454843414357ull /* "WCACHE01" read as bytes */
/* The magic while a format runs: stored and drained before anything else
 * it writes, so whatever a crash leaves of a format says whose it is, and
 * wc_create formats over it without being forced (a format starts only
 * over zeros, over one of these, or over what the caller forced it over). */
#define WC_MAGIC_FORMATTING 0x54414d524f464357ull /* "WCFORMAT" */
#define WC_FORMAT_VERSION 3u
/* Version 2 differs only in having no origin identity written at format:
 * such a cache is read as it is and records the identity of the origin it
 * is next opened with (lib/bind.c). */
#define WC_FORMAT_VERSION_NO_IDENTITY 2u
#define WC_SB_REGION 4096u             /* superblock region; entries follow */
#define WC_SEQ_OFFSET 256u             /* seq_count sits alone in its cache line */
#define WC_RECORD_OFFSET 320u          /* commit record slots, one line each */
#define WC_RECORD_SLOTS 2u
#define WC_NONE UINT64_MAX             /* entry field value: free / invalidated */
/* The commit counter's ceiling: a commit every nanosecond takes 292 years to
 * reach it, and every seq below it stays distinct from WC_NONE. */
#define WC_SEQ_MAX (1ull << 63)
#define WC_MIN_BLOCK 512u
#define WC_MAX_BLOCK 65536u

/* Static fields, covered by `crc` (bytes 8 .. offsetof(crc)).  The magic is
 * outside the CRC because format writes it last, on its own. */
struct wc_pmem_sb {
	uint64_t magic;          /*  0 */
	uint32_t version;        /*  8 */
	uint32_t block_size;     /* 12 */
	uint64_t n_blocks;       /* 16 */
	uint64_t origin_size;    /* 24 bytes of origin this cache was formatted for */
	uint8_t uuid[16];        /* 32 */
	uint64_t entries_offset; /* 48 */
	uint64_t data_offset;    /* 56 */
	uint64_t pmem_threshold; /* 64 flush policy in force at format (informational) */
	uint32_t pmem_force;     /* 72 */
	uint32_t pmem_flush_insn;/* 76 */
	uint64_t format_time;    /* 80 seconds since the epoch */
	uint32_t crc;            /* 88 CRC32C of bytes 8..87 */
	uint32_t pad0;           /* 92 */
	uint8_t reserved[WC_SEQ_OFFSET - 96];
	/* The durable floor of the commit counter: every epoch below it is
	 * committed, whatever the records say.  One aligned 8-byte store,
	 * written with a drain of its own (recovery, close, before write-back
	 * or discard invalidates a committed entry, a commit whose entries
	 * could not all be listed), so it is never covered by the CRC. */
	uint64_t seq_count;      /* 256 */
	uint8_t pad1[WC_RECORD_OFFSET - 264];
};

/*
 * A commit record (one 64-byte line; two slots, commit of epoch E writes
 * slot E % 2).  Written together with epoch E's entries and drained ONCE:
 * it proves itself, so no second fence is needed.  It says "epoch E is
 * committed" (seq = E + 1) only if its CRC holds AND the entries that hold
 * seq == E number `count` and their digests add up to `digest`; a torn or
 * mismatching record means the commit did not happen.  The other slot holds
 * the previous commit's record, durable before this one was started.
 */
struct wc_pmem_record {
	uint64_t seq;            /*  0 E + 1 */
	uint64_t count;          /*  8 entries with seq == E */
	uint64_t digest;         /* 16 sum of wc_entry_digest() over them */
	uint32_t crc;            /* 24 CRC32C of bytes 0..23 */
	uint32_t pad;            /* 28 */
	uint8_t reserved[32];
};

#define WC_SB_CRC_START 8u
#define WC_SB_CRC_END 88u

/* One per cache block.  Committed iff seq < seq_count; free or invalidated
 * iff seq == WC_NONE (which is never < seq_count). */
struct wc_pmem_entry {
	uint64_t origin_block;
	uint64_t seq;
};

_Static_assert(sizeof(struct wc_pmem_entry) == 16, "entry is 16 bytes");
_Static_assert(sizeof(struct wc_pmem_record) == 64, "a record is one line");
_Static_assert(sizeof(struct wc_pmem_sb) == WC_RECORD_OFFSET, "records follow seq_count's line");
_Static_assert(__builtin_offsetof(struct wc_pmem_sb, crc) == WC_SB_CRC_END, "crc offset");
_Static_assert(__builtin_offsetof(struct wc_pmem_sb, seq_count) == WC_SEQ_OFFSET, "seq offset");
_Static_assert(sizeof(struct wc_pmem_sb) <= WC_SB_REGION, "superblock fits its region");

/*
 * The flush policy this cache measured on its own memory, in a 64-byte line
 * of its own inside the superblock region.  It has its own CRC and is never
 * covered by the superblock's: a torn or damaged line only means "measure
 * again" (lib/policy_line.c), and an all-zero line (caches formatted before
 * it existed) means the same.
 */
#define WC_POLICY_OFFSET 512u
#define WC_POLICY_MAGIC 0x5943494c4f504357ull /* "WCPOLICY" read as bytes */
#define WC_POLICY_VERSION 2u     /* 1 is read too: it recorded no strategies */
#define WC_POLICY_CRC_END 60u

/* The strategies a version-2 line records (bytes 58, 59).  0 in a
 * version-1 line: the widest non-temporal width the CPU has below the
 * threshold, the cached path with flush_insn from it. */
enum {
	WC_POLICY_STRAT_NONE = 0,
	WC_POLICY_STRAT_NT_MOVNTI = 1,      /* 64-bit MOVNTI */
	WC_POLICY_STRAT_NT_SSE2 = 2,        /* 128-bit MOVNTDQ */
	WC_POLICY_STRAT_NT_AVX2 = 3,        /* 256-bit VMOVNTDQ */
	WC_POLICY_STRAT_NT_AVX512 = 4,      /* 512-bit VMOVNTDQ */
	WC_POLICY_STRAT_CACHED_CLFLUSHOPT = 5,
	WC_POLICY_STRAT_CACHED_CLWB = 6,
};

enum {
	WC_POLICY_SRC_CREATE = 1,  /* measured by wc_create */
	WC_POLICY_SRC_OPEN = 2,    /* measured again by wc_open */
	WC_POLICY_SRC_OFFLINE = 3, /* measured by `wcbench calibrate --cache` */
};

struct wc_pmem_policy {
	uint64_t magic;          /*  0 WC_POLICY_MAGIC */
	uint16_t version;        /*  8 WC_POLICY_VERSION */
	uint8_t source;          /* 10 WC_POLICY_SRC_* */
	uint8_t flush_insn;      /* 11 WC_PMEM_CLFLUSHOPT / WC_PMEM_CLWB of the cached path */
	uint32_t features;       /* 12 WC_CPU_* bits the measurement could use */
	uint64_t threshold;      /* 16 bytes; UINT64_MAX = non-temporal at every size */
	char vendor[12];         /* 24 CPUID vendor string (not NUL-terminated) */
	uint16_t family;         /* 36 CPUID family (base + extended) */
	uint8_t model;           /* 38 CPUID model (base + extended) */
	uint8_t stepping;        /* 39 */
	uint16_t line_size;      /* 40 CLFLUSH line size, bytes */
	uint16_t max_size_kib;   /* 42 largest copy measured, KiB (the block size, <= 64) */
	uint32_t elapsed_us;     /* 44 how long the measurement took */
	uint64_t time;           /* 48 when, seconds since the epoch */
	uint16_t cached_vs_nt;   /* 56 cached time / NT time at the largest size, x1000
	                                (version 1: the low half of a uint32_t) */
	uint8_t small_strategy;  /* 58 WC_POLICY_STRAT_*: copies below threshold */
	uint8_t large_strategy;  /* 59 WC_POLICY_STRAT_*: copies at and above it */
	uint32_t crc;            /* 60 CRC32C of bytes 0..59 */
};

_Static_assert(sizeof(struct wc_pmem_policy) == 64, "the policy is one cache line");
_Static_assert(__builtin_offsetof(struct wc_pmem_policy, crc) == WC_POLICY_CRC_END, "crc");
_Static_assert(WC_POLICY_OFFSET % 64 == 0 && WC_POLICY_OFFSET >= WC_SB_CRC_END &&
               WC_POLICY_OFFSET >= WC_SEQ_OFFSET + 64 &&
               WC_POLICY_OFFSET >= WC_RECORD_OFFSET + WC_RECORD_SLOTS * 64 &&
               WC_POLICY_OFFSET + 64 <= WC_SB_REGION,
               "the policy line shares no line with the other superblock fields");

uint32_t wc_policy_crc(const struct wc_pmem_policy *pl);
/* 0 if `pl` is a valid record; -ENODATA if it is all zero (never written);
 * -EBADMSG (bad magic, version or CRC: torn, damaged, or from a newer
 * library), with a message. */
int wc_policy_check(const struct wc_pmem_policy *pl);

static inline struct wc_pmem_policy *wc_policy_line(void *base)
{
	return (struct wc_pmem_policy *)((char *)base + WC_POLICY_OFFSET);
}

/*
 * The origin this cache belongs to (docs/FORMAT.md, "Origin identity"): two
 * slots of 512 bytes, each with its own CRC and a generation.  The newest
 * intact slot is the identity in force; a change (a re-bind, a grown origin,
 * a new name) writes the other slot with the next generation and drains, so
 * a torn write leaves the previous identity in force.  Format writes slot 0
 * before it writes the magic.
 */
#define WC_ORIGIN_ID_OFFSET 1024u
#define WC_ORIGIN_ID_SLOTS 2u
#define WC_ORIGIN_ID_MAGIC 0x4e494749524f4357ull /* "WCORIGIN" read as bytes */
#define WC_ORIGIN_ID_VERSION 1u
#define WC_ORIGIN_ID_ID_LEN 192u
#define WC_ORIGIN_ID_NAME_LEN 256u

/* struct wc_pmem_origin_id.kind: WC_ORIGIN_IDENTITY_* (wcache.h). */

/* Why the slot was written (informational). */
enum {
	WC_OID_SRC_CREATE = 1,  /* wc_create */
	WC_OID_SRC_ADOPT = 2,   /* a version-2 cache's first open by this library */
	WC_OID_SRC_GROWN = 3,   /* the same origin, grown */
	WC_OID_SRC_RENAMED = 4, /* the same origin under another name */
	WC_OID_SRC_REBIND = 5,  /* bound to another origin (origin_rebind) */
};

struct wc_pmem_origin_id {
	uint64_t magic;          /*   0 WC_ORIGIN_ID_MAGIC */
	uint16_t version;        /*   8 WC_ORIGIN_ID_VERSION */
	uint8_t kind;            /*  10 WC_ORIGIN_IDENTITY_* */
	uint8_t source;          /*  11 WC_OID_SRC_* */
	uint32_t reserved0;      /*  12 zero */
	uint64_t generation;     /*  16 the newer slot has the higher one (1 at create) */
	uint64_t origin_size;    /*  24 bytes the cache serves: at least the superblock's */
	uint64_t time;           /*  32 when written, seconds since the epoch */
	uint64_t reserved1;      /*  40 zero */
	char id[WC_ORIGIN_ID_ID_LEN];     /*  48 stable identity, NUL-terminated; "" = name only */
	char name[WC_ORIGIN_ID_NAME_LEN]; /* 240 the name it was opened by, NUL-terminated */
	uint8_t reserved2[12];   /* 496 zero */
	uint32_t crc;            /* 508 CRC32C of bytes 0..507 */
};
#define WC_ORIGIN_ID_CRC_END 508u

_Static_assert(sizeof(struct wc_pmem_origin_id) == 512, "an identity slot is 512 bytes");
_Static_assert(__builtin_offsetof(struct wc_pmem_origin_id, crc) == WC_ORIGIN_ID_CRC_END, "crc");
_Static_assert(WC_ORIGIN_ID_OFFSET >= WC_POLICY_OFFSET + 64 && WC_ORIGIN_ID_OFFSET % 64 == 0 &&
               WC_ORIGIN_ID_OFFSET + WC_ORIGIN_ID_SLOTS * 512 <= WC_SB_REGION,
               "the identity slots share no line with the other superblock fields");

static inline struct wc_pmem_origin_id *wc_origin_id_slot(void *base, unsigned slot)
{
	return (struct wc_pmem_origin_id *)((char *)base + WC_ORIGIN_ID_OFFSET) + slot;
}

uint32_t wc_origin_id_crc(const struct wc_pmem_origin_id *id);
/* Magic, version, CRC, NUL-terminated strings, a size: the slot is whole. */
bool wc_origin_id_intact(const struct wc_pmem_origin_id *id);
/* The slot in force among `slots` (the newest intact one), or -1 when
 * neither is intact. */
int wc_origin_id_current(const struct wc_pmem_origin_id *slots);
/* Fill magic, version and crc of a slot built in DRAM. */
void wc_origin_id_seal(struct wc_pmem_origin_id *id);

/* The geometry of a cache file, derived from its size and block size. */
struct wc_layout {
	uint32_t block_size;
	uint64_t n_blocks;
	uint64_t entries_offset;
	uint64_t data_offset;
	uint64_t bytes_used;     /* data_offset + n_blocks * block_size */
};

/* Largest layout that fits `file_size` bytes.  -EINVAL (bad block size, or
 * not even one block fits: the message gives the smallest size). */
int wc_layout_compute(struct wc_layout *out, uint64_t file_size, uint32_t block_size);
/* The layout a given n_blocks needs: -EINVAL for 0, -EFBIG for more than a
 * cache holds or a size past 64 bits. */
int wc_layout_for_blocks(struct wc_layout *out, uint64_t n_blocks, uint32_t block_size);

uint32_t wc_sb_crc(const struct wc_pmem_sb *sb);

/* Validate a mapped superblock against the file it sits in.  0, or a
 * negative errno with a message naming `path` and the failing field:
 * -ENODATA (never formatted: magic and version zero; or a format that did
 * not complete), -EILSEQ (foreign file / bad magic), -EPROTO (version),
 * -EBADMSG (CRC), -EUCLEAN (fields inconsistent, or the file cut short:
 * damage either way). */
int wc_sb_validate(const struct wc_pmem_sb *sb, uint64_t file_size, const char *path,
                   struct wc_layout *layout_out);

static inline struct wc_pmem_sb *wc_sb(void *base)
{
	return (struct wc_pmem_sb *)base;
}

static inline struct wc_pmem_record *wc_pmem_record(void *base, unsigned slot)
{
	return (struct wc_pmem_record *)((char *)base + WC_RECORD_OFFSET) + slot;
}

/* An entry's contribution to a record's digest.  The digest is a sum, so a
 * commit adds its entries in the order it logged them and recovery in index
 * order; a missing, extra or torn entry changes it (a 64-bit mix of index,
 * origin block and seq). */
static inline uint64_t wc_entry_digest(uint64_t idx, uint64_t origin, uint64_t seq)
{
	uint64_t h = origin ^ (idx * 0x9E3779B97F4A7C15ull) ^ (seq * 0xC2B2AE3D27D4EB4Full);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

uint32_t wc_record_crc(const struct wc_pmem_record *r);
/* Is the record's line whole (CRC) and its seq in range? */
bool wc_record_intact(const struct wc_pmem_record *r);

/* Where the commit point of an image is, and why (wc_commit_point). */
struct wc_commit_point {
	uint64_t seq;            /* epochs below it are committed */
	uint64_t floor;          /* the superblock's seq_count */
	uint64_t top_seq;        /* the newest intact record's seq, 0 if none */
	uint64_t top_count, found_count; /* what it claims, what the entries hold */
	bool top_valid;          /* the newest intact record matched its entries */
};

/*
 * The commit point of a validated superblock and its entries (pure: reads
 * only).  seq = the newest intact record's seq if its entries match it,
 * else the other slot's seq (durable before the newest was started), and
 * never below the floor seq_count.  One pass over the entries, only when
 * the newest record is above the floor.
 */
void wc_commit_point(const struct wc_pmem_sb *sb, const struct wc_pmem_record *slots,
                     const struct wc_pmem_entry *entries, uint64_t n_blocks,
                     struct wc_commit_point *out);

/* The 64-byte line holding p (entries are 16 bytes, four to a line). */
static inline const void *wc_line_of(const void *p)
{
	return (const void *)((uintptr_t)p & ~(uintptr_t)63);
}

static inline struct wc_pmem_entry *wc_pmem_entry(void *base, const struct wc_layout *l,
                                                  uint64_t idx)
{
	return (struct wc_pmem_entry *)((char *)base + l->entries_offset) + idx;
}

static inline void *wc_pmem_data(void *base, const struct wc_layout *l, uint64_t idx)
{
	return (char *)base + l->data_offset + idx * (uint64_t)l->block_size;
}

struct wc_cache;
/* Write a fresh, empty format (torn-safe: see format.c). */
int wc_format(struct wc_cache *c, uint64_t origin_size, const struct wc_pmem_origin_id *id);
/* Rebuild the DRAM state from the entries (recover.c). */
int wc_recover(struct wc_cache *c);

#endif /* WC_FORMAT_H */
