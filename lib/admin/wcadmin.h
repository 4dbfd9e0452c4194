/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wcadmin.h -- the admin interface: what only the project's own tools may
 * do, beside the public API of wcache.h.
 *
 * Why it exists.  wcctl and wcbench look where an embedder never needs to:
 * they read a cache image's superblock, commit records, identity slots and
 * entries offline (`wcctl check`, `dump`, `status` of a cache in use,
 * `calibrate`), test the cache file's owner lock without taking it, read
 * and write the superblock's flush-policy line (`wcctl calibrate`,
 * `wcbench calibrate --cache`), run the flush engine's individual
 * strategies (`wcbench flush`, `calibrate`) and look at an open cache's
 * mapping, configuration and resolved flush policy (`wcbench run`'s cost
 * floor).  They used to include a dozen of the library's internal headers
 * for that, which tied them to every struct and file of lib/.  This header
 * is the one door: files under tools/ include wcache.h and this header and
 * nothing else of the library, and the tools are built with -I lib/admin,
 * not -I lib.
 *
 * Self-contained: it includes wcache.h and the C library only.  The image
 * is shown as small structs of decoded values named after docs/FORMAT.md;
 * the on-media structs stay in lib/core/format.h, and lib/admin/image.c
 * checks every number repeated here against that header at compile time.
 *
 * Not installed and not exported: the code is the .c files of lib/admin,
 * built into the convenience library libwcache-core.la that the tools and
 * the tests link statically.  libwcache.so exports only what
 * lib/libwcache.map lists (the public API), so nothing here is part of the
 * ABI; it changes with the library.  Names start with wcadm_.  Functions
 * that fail return 0 or a negative errno and leave a message for
 * wc_errmsg(), as the library does.
 */
#ifndef WCADMIN_H
#define WCADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wcache.h"

/* ==== messages and sizes (common.c) ===================================== */

/* Leave "fmt ..." as this thread's message for wc_errmsg() and return
 * `code` (a negative errno): return wcadm_err(-EINVAL, "...").  The _sys
 * form appends ": strerror(-code)". */
int wcadm_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int wcadm_err_sys(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The library's one grammar for byte counts (wc_config_parse reads it
 * too): digits, optionally K, M, G or T (powers of 1024, any case) and then
 * "iB" or "B"; or digits and "B".  No sign, no spaces, no fractions.
 * 0, or -EINVAL (not a size) / -ERANGE (beyond 64 bits) with *why, when
 * not NULL, saying which in words fit for a message. */
int wcadm_size_parse(const char *s, uint64_t *out, const char **why);
/* "512 B", "4 KiB", "1.5 MiB" (binary units up to PiB).  Returns buf. */
const char *wcadm_size_format(char *buf, size_t len, uint64_t bytes);

/* ==== the image's layout (docs/FORMAT.md) =============================== */

#define WCADM_FORMAT_VERSION 3u          /* what wc_create writes */
#define WCADM_MIN_BLOCK 512u             /* block sizes: powers of two in */
#define WCADM_MAX_BLOCK 65536u           /*   [MIN_BLOCK, MAX_BLOCK] */
#define WCADM_NONE UINT64_MAX            /* an entry field: free / invalidated */
#define WCADM_SEQ_OFFSET 256u            /* the floor seq_count */
#define WCADM_RECORD_SLOTS 2u            /* commit records: wcadm_record_offset() */
#define WCADM_ORIGIN_ID_OFFSET 1024u     /* identity slots, WCADM_ORIGIN_ID_SIZE each */
#define WCADM_ORIGIN_ID_SIZE 512u
#define WCADM_ORIGIN_ID_ID_LEN 192u      /* the fields of an identity slot */
#define WCADM_ORIGIN_ID_NAME_LEN 256u

/* The bytes a cache file of `n_blocks` blocks of `block_size` uses (what
 * wc_create makes of cache_size).  0, or -EINVAL (block size, 0 blocks) or
 * -EFBIG (too many blocks) with a message. */
int wcadm_layout_bytes(uint64_t n_blocks, uint32_t block_size, uint64_t *bytes);
/* Byte offset of commit record slot `slot` in the file. */
uint64_t wcadm_record_offset(unsigned slot);

/* ==== a cache image, read offline (image.c, image_scan.c) =============== */

/*
 * A cache file read without the library's open and without its origin:
 * the superblock validated as wc_open validates it, the records and the
 * identity slots copied, the entries mapped read-only.  Nothing ever
 * writes the file, so it is safe on an image kept for a post-mortem, and
 * on a cache another process has open (`live`: it moves while it is read).
 * The values stay readable after wcadm_image_close.
 */

/* The superblock's fields (its static part and the floor). */
struct wcadm_sb {
	uint32_t version, block_size;
	uint64_t n_blocks;
	uint64_t origin_size;    /* bytes of origin it was formatted for */
	uint8_t uuid[16];
	uint64_t format_time;    /* seconds since the epoch */
	uint64_t seq_count;      /* the floor: every epoch below it is committed */
};

/* The geometry the superblock validated to. */
struct wcadm_layout {
	uint32_t block_size;
	uint64_t n_blocks, entries_offset, data_offset;
	uint64_t bytes_used;     /* data_offset + n_blocks * block_size */
};

/* One entry as the file holds it (16 bytes): committed iff seq is below
 * the commit point; seq WCADM_NONE: free. */
struct wcadm_entry {
	uint64_t origin_block;
	uint64_t seq;
};

/* What a commit record slot says (docs/FORMAT.md, "Commit records"). */
enum wcadm_record_state {
	WCADM_REC_EMPTY = 0, /* all zero: never written, or erased by recovery */
	WCADM_REC_TORN,      /* CRC32C or seq out of range: the line is not whole */
	WCADM_REC_COVERED,   /* intact, seq <= the floor: nothing to decide */
	WCADM_REC_VALID,     /* the newest intact record above the floor, and its
	                      * entries match: it is the commit point */
	WCADM_REC_MISMATCH,  /* the newest intact record above the floor, but its
	                      * entries do not match: that commit did not happen */
	WCADM_REC_FALLBACK,  /* the other slot, above the floor, while the newest
	                      * does not match: it is the commit point */
	WCADM_REC_OLDER,     /* the other slot, above the floor, below a valid newest */
};

struct wcadm_record {
	uint64_t seq, count;     /* as stored: epoch seq - 1 committed, its entry count */
	uint32_t crc;            /* as stored */
	uint32_t crc_computed;   /* CRC32C of bytes 0..23 as read */
	bool intact;             /* the CRC holds and seq is in range */
	/* after wcadm_image_commit: */
	uint64_t found;          /* entries that hold seq == record seq - 1 */
	bool matches;            /* intact, found == count and the digests add up */
	uint8_t state;           /* enum wcadm_record_state */
};

/* The origin identity slot in force, decoded. */
struct wcadm_origin_id {
	uint8_t kind;            /* which kind of origin: wcadm_origin_kind_name() */
	uint8_t source;          /* why it was written: wcadm_origin_id_source() */
	uint64_t generation;
	uint64_t size;           /* bytes the cache serves */
	uint64_t time;           /* when written, seconds since the epoch */
	char id[WCADM_ORIGIN_ID_ID_LEN];     /* stable identity; "" = name only */
	char name[WCADM_ORIGIN_ID_NAME_LEN]; /* the name it was opened by */
};

/* What recovery would make of one entry (wcadm_image_classify). */
enum wcadm_entry_state {
	WCADM_FREE = 0,    /* seq == WCADM_NONE */
	WCADM_UNCOMMITTED, /* seq >= the commit point: recovery drops it */
	WCADM_COMMITTED,   /* the newest committed version of its origin block */
	WCADM_SUPERSEDED,  /* committed, but a newer committed entry holds its block */
	WCADM_OUTSIDE,     /* committed, origin block beyond the origin: damage */
	WCADM_DUPLICATE,   /* committed, same origin block and seq as another: damage */
};

/* 8 bytes per entry: a check of a 100 GiB cache of 4 KiB blocks needs
 * ~200 MiB (plus 24 bytes per committed entry while sorting). */
struct wcadm_entry_info {
	/* SUPERSEDED: the entry holding the newer version; DUPLICATE: the other
	 * entry with the same seq; WCADM_NO_ENTRY otherwise.  The format keeps
	 * n_blocks below UINT32_MAX. */
	uint32_t other;
	uint8_t state;           /* enum wcadm_entry_state */
};
#define WCADM_NO_ENTRY UINT32_MAX

struct wcadm_image_raw;

struct wcadm_image {
	const char *path;
	int fd;                        /* -1 once closed, or if it could not be read */
	uint64_t file_size;
	struct wcadm_sb sb;
	bool sb_ok;                    /* the superblock validated */
	bool block;                    /* a cache on the block medium: wcadm_blk_open reads
	                                  it (wcadm_image_open returned -EMEDIUMTYPE) */
	struct wcadm_layout layout;    /* valid only if sb_ok */
	struct wcadm_record rec[WCADM_RECORD_SLOTS];
	int oid_slot;                  /* the identity slot in force; -1: none */
	struct wcadm_origin_id oid;    /* that slot (if oid_slot >= 0) */
	/* Open elsewhere (the owner's lock is held): the image moves while it
	 * is read, and must only be read. */
	bool live;
	pid_t holder_pid;              /* > 0 when known (live) */
	char holder[200];              /* "pid 1234 (server)", or why unknown (live) */
	/* After wcadm_image_commit: the commit point as recovery computes it
	 * (the floor, or the newest intact record above it whose entries match,
	 * else the other slot), and the record states above. */
	bool cp_ok;
	uint64_t cp_seq;               /* entries with seq below it are committed */
	uint64_t cp_floor;             /* the superblock's seq_count */
	int cp_slot;                   /* the slot the point comes from; -1 = the floor */
	const struct wcadm_entry *entries; /* read-only mapping, until close */
	/* After wcadm_image_classify: one per entry, and the counts. */
	struct wcadm_entry_info *info;
	uint64_t n_free, n_uncommitted, n_committed, n_superseded, n_outside, n_duplicate;
	struct wcadm_image_raw *raw;   /* lib/admin's: the slots as read, the mapping */
};

/* Open `path` read-only, test for an owner's lock (`live`: never a reason
 * to refuse, the image is only read), copy the superblock, the records and
 * the identity slots and validate the superblock as wc_open does.
 * Returns 0 (sb_ok), a negative errno from the validation (the image stays
 * open so the caller can print fields; wc_errmsg() says what is wrong), or
 * -errno with img->fd == -1 when the file cannot be read at all. */
int wcadm_image_open(struct wcadm_image *img, const char *path);
/* Map the entries (needs sb_ok) and compute the commit point and what each
 * record slot says (cp_*, rec[].found/matches/state).  0 or -errno. */
int wcadm_image_commit(struct wcadm_image *img);
/* wcadm_image_commit, then classify every entry as recovery would (info,
 * n_*).  0 or -errno with a message. */
int wcadm_image_classify(struct wcadm_image *img);
void wcadm_image_close(struct wcadm_image *img);

/* The origin size the cache serves: its identity's (which grows with the
 * origin), else the superblock's. */
uint64_t wcadm_image_origin_size(const struct wcadm_image *img);
/* A format-3 image without an intact identity slot: damaged (wc_open
 * refuses it until a forced re-bind). */
bool wcadm_image_identity_damaged(const struct wcadm_image *img);
/* Byte offset of entry `idx` in the file. */
uint64_t wcadm_entry_offset(const struct wcadm_image *img, uint64_t idx);

/* "file /o.img (inode 12 tag 9f..., 8 MiB)": the origin an identity names. */
const char *wcadm_origin_id_str(char *buf, size_t len, const struct wcadm_origin_id *id);
/* Why a slot was written: "at create", "when the origin grew", ... */
const char *wcadm_origin_id_source(unsigned source);
/* "block device", "file", "NBD export", "RBD image", "origin". */
const char *wcadm_origin_kind_name(unsigned kind);

/* ==== a cache on the block medium, read offline (image_block.c) ======== */

/*
 * The block medium's image (lib/block/format.h, docs/FORMAT.md "Block
 * medium") read with pread, never written: the superblock checked as
 * wc_open checks it, both ring state slots, both identity slots, and then
 * (wcadm_blk_scan) every segment of the ring -- its summary, and its record
 * area read whole with every record's header and data CRC verified -- the
 * way recovery reads them, to list what recovery would take, ignore or
 * refuse.  wcadm_image_open sends such an image here: it returns
 * -EMEDIUMTYPE with img->block set.
 */
#define WCADM_BLK_VERSION 1u             /* the block format this library reads */
#define WCADM_BLK_STATE_OFFSET 4096u     /* two state slots, 4 KiB each */
#define WCADM_BLK_ID_OFFSET 12288u       /* two identity slots, 4 KiB each */
#define WCADM_BLK_UNIT 4096u

struct wcadm_blk_state {
	uint64_t offset;         /* of the slot */
	uint64_t generation, tail_seg, clean_seg, open_limit, time;
	uint32_t crc, crc_computed;
	bool magic_ok;           /* the state's magic is there */
	bool zero;               /* never written */
	bool intact;             /* magic, CRC and ranges hold */
};

/* A segment's summary, as found at the end of the segment. */
enum wcadm_blk_sum_state {
	WCADM_SUM_NONE = 0,      /* no summary (the open segment at a crash, or zeros) */
	WCADM_SUM_STALE,         /* another segment's or cache's: an earlier lap of the ring */
	WCADM_SUM_INTACT,        /* this segment's, CRC holds: recovery takes it */
	WCADM_SUM_DAMAGED,       /* this segment's, CRC or count wrong: recovery reads the
	                            segment whole instead */
};

/* One segment of the ring, as the scan found it. */
struct wcadm_blk_seg {
	uint64_t seg;            /* its sequence number */
	uint64_t offset;         /* device offset of its first byte */
	uint64_t summary_offset;
	uint8_t sum_state;       /* enum wcadm_blk_sum_state */
	uint32_t sum_n;          /* entries the summary claims */
	uint32_t sum_crc, sum_crc_computed;
	bool clean;              /* below the clean point: written back */
	bool from_summary;       /* recovery takes its records from the summary */
	bool area_read;          /* its record area was read and verified */
	uint64_t records, discards, blocks;  /* intact records found (or summarized) */
	uint64_t bad_records;    /* headers of this segment whose CRC (header or data) fails */
	uint64_t used;           /* bytes of records, to the end of the last intact one */
	uint64_t first_seq, last_seq;
};

/* One record found in a segment's area (wcadm_blk_scan's `record`). */
struct wcadm_blk_record {
	uint64_t seg, offset;    /* segment, device offset of the header */
	uint64_t seq;
	uint32_t count, flags;   /* data blocks, WC_BLK_REC_* (1: discard) */
	const uint64_t *origin;  /* count origin blocks; a discard: first, count */
	uint32_t data_crc;
	bool header_ok;          /* header CRC holds */
	bool data_ok;            /* data CRC holds (header_ok) */
	bool taken;              /* recovery takes it */
};

/* Something the scan has to say: damage (recovery refuses it, or would
 * serve wrong data) or info (a crash leaves it; recovery copes). */
struct wcadm_blk_finding {
	bool damage;
	uint64_t offset;         /* where, on the device */
	const char *text;        /* names what and where */
};

struct wcadm_blk_scan_ops {
	bool verify;             /* read every segment's records, even summarized ones */
	void (*finding)(void *arg, const struct wcadm_blk_finding *f);
	void (*segment)(void *arg, const struct wcadm_blk_seg *s);
	void (*record)(void *arg, const struct wcadm_blk_record *r);
	void *arg;
};

struct wcadm_blk_raw;

struct wcadm_blk_image {
	const char *path;
	int fd;                        /* -1 once closed, or if it could not be read */
	uint64_t file_size;
	bool live;                     /* as struct wcadm_image */
	pid_t holder_pid;
	char holder[200];
	/* the superblock, as stored */
	uint32_t version, block_size, lba_size;
	uint64_t seg_start, seg_bytes, n_segments, summary_bytes, origin_size;
	uint8_t uuid[16];
	uint64_t cache_id, device_bytes, format_time;
	uint32_t sb_crc, sb_crc_computed;
	bool sb_ok;                    /* wc_open's checks hold */
	/* geometry (sb_ok) */
	uint64_t sum_cap, seg_data_bytes, n_entries;
	struct wcadm_blk_state state[2];
	int state_slot;                /* the slot in force; -1: neither is intact */
	int oid_slot;                  /* the identity slot in force; -1: none */
	struct wcadm_origin_id oid;
	/* after wcadm_blk_scan */
	bool scanned;
	uint64_t tail, clean, open_limit; /* the state in force */
	uint64_t head;                 /* newest segment holding a record (tail if none) */
	uint64_t scan_end;             /* segments tail..scan_end - 1 were read */
	uint64_t n_summarized, n_unsummarized, n_sum_damaged;
	uint64_t records, discards, bad_records;
	uint64_t versions;             /* block versions in the ring */
	uint64_t cached_blocks;        /* origin blocks recovery would serve from the cache */
	uint64_t dirty_blocks;         /* of them not yet written back */
	uint64_t max_seq;
	uint64_t n_damage, n_info;
	struct wcadm_blk_raw *raw;
};

/* Is `path` (readable) a cache on the block medium?  (Its magic only.) */
bool wcadm_blk_is_image(const char *path);
/* Open read-only, test the owner's lock, read the superblock, state and
 * identity slots and check the superblock.  0, a negative errno from the
 * check (image stays open, fields readable, wc_errmsg() names the field and
 * the offset), or -errno with bi->fd == -1. */
int wcadm_blk_open(struct wcadm_blk_image *bi, const char *path);
/* Read the ring as recovery does (ops->verify: every record's CRCs too),
 * reporting through ops (any callback may be NULL).  0: read, even if
 * damage was found (n_damage); -errno with a message when it cannot be
 * read or no state slot is intact. */
int wcadm_blk_scan(struct wcadm_blk_image *bi, const struct wcadm_blk_scan_ops *ops);
void wcadm_blk_close(struct wcadm_blk_image *bi);
/* The origin size the cache serves: its identity's, else the superblock's. */
uint64_t wcadm_blk_origin_size(const struct wcadm_blk_image *bi);
const char *wcadm_blk_sum_state_name(unsigned state);

/* ==== the flush engine (flush.c) ======================================= */

typedef void (*wcadm_copy_fn)(void *dst, const void *src, size_t n);
typedef void (*wcadm_set_fn)(void *dst, int c, size_t n);
typedef void (*wcadm_range_fn)(const void *addr, size_t n);
typedef void (*wcadm_drain_fn)(void);

/*
 * A resolved persist policy's functions, copied: what a cache (or the
 * process default of wc_pmem_*) runs per copy, to call in a timed loop
 * with no more than the indirect call the library makes.  Nothing here
 * fences but drain.  (A copy leaves out the tests' persistence observer.)
 */
struct wcadm_persist {
	size_t threshold;                   /* copies >= threshold take the large path */
	wcadm_copy_fn copy_small, copy_large;
	wcadm_set_fn set_small, set_large;
	wcadm_range_fn flush;               /* write back cached stores */
	wcadm_drain_fn drain;               /* the fence */
	struct wc_pmem_info info;           /* what is in force, and why */
};

static inline void wcadm_persist_copy(const struct wcadm_persist *p, void *dst, const void *src,
                                      size_t n)
{
	(n < p->threshold ? p->copy_small : p->copy_large)(dst, src, n);
}

static inline void wcadm_persist_set(const struct wcadm_persist *p, void *dst, int c, size_t n)
{
	(n < p->threshold ? p->set_small : p->set_large)(dst, c, n);
}

static inline void wcadm_persist_drain(const struct wcadm_persist *p)
{
	p->drain();
}

/* The process default: the policy of wc_pmem_memcpy and the others
 * (the WC_PMEM_* environment included). */
void wcadm_persist_default(struct wcadm_persist *out);

/* What the process default chooses from: the CPU's features less those
 * the WC_PMEM_* environment disables, and (flush_insn may be NULL) the
 * flush instruction of its cached path, WC_PMEM_CLWB or WC_PMEM_CLFLUSHOPT. */
void wcadm_flush_inputs(unsigned *features, int *flush_insn);

/* One of the engine's strategies: one way to copy, used alone. */
struct wcadm_strategy {
	const char *name;        /* "nt-avx512", "cached+clwb", ... */
	wcadm_copy_fn copy;
	bool nt;                 /* non-temporal stores; else cached stores + flush */
};
/* The non-temporal and cached strategies usable with `features`, in the
 * engine's order (non-temporal ones narrowest first, then cached +
 * CLFLUSHOPT and cached + CLWB); how many were written to out[0..max). */
unsigned wcadm_strategies(unsigned features, struct wcadm_strategy *out, unsigned max);
/* The non-temporal strategy the engine prefers with `features` (libpmem2's
 * memcpy off x86); false if there is none. */
bool wcadm_strategy_best_nt(unsigned features, struct wcadm_strategy *out);

/* ==== measuring the flush policy (calibrate.c) ========================== */

/* A measurement of non-temporal stores against cached stores + flush. */
#define WCADM_CALIBRATION_MAX_POINTS 16
#define WCADM_CALIBRATION_MAX_NT 4
struct wcadm_calibration_point {
	size_t size;
	/* the non-temporal width chosen for this size, and the cached path */
	double nt_fenced, cached_fenced;       /* ns per copy, a fence after every copy */
	double nt_batched, cached_batched;     /* ns per copy, one fence per 64 copies */
	/* every width measured, in nt_names order */
	double w_fenced[WCADM_CALIBRATION_MAX_NT], w_batched[WCADM_CALIBRATION_MAX_NT];
};
struct wcadm_calibration {
	const char *nt_name, *cached_name;     /* the NT width chosen (small sizes); cached */
	unsigned n_nt;                         /* NT widths measured */
	const char *nt_names[WCADM_CALIBRATION_MAX_NT];
	char choice[160];                      /* "nt-avx512 at every size (runner-up ...)" */
	unsigned npoints, rounds;              /* rounds completed */
	struct wcadm_calibration_point pt[WCADM_CALIBRATION_MAX_POINTS];
	size_t threshold;                      /* recommended; SIZE_MAX = NT everywhere */
	double elapsed_ms;
};

/* The engine's measurement on a private buffer larger than L2 (16 MiB),
 * best of `rounds` rounds of `bytes_per_point` bytes per size and strategy,
 * no time limit (wc_pmem_calibrate is its quick form).  0 or -errno. */
int wcadm_calibrate(struct wcadm_calibration *out, unsigned features, int flush_insn,
                    unsigned rounds, size_t bytes_per_point);

/* The policy a cache measured on its own memory, as its superblock keeps
 * it, decoded; and whether wc_open would use it here. */
struct wcadm_policy {
	int valid;               /* 0; -ENODATA: none (never written); -EBADMSG:
	                            damaged (torn, or from a newer library) */
	char damage[512];        /* why, if damaged */
	uint64_t threshold;      /* bytes; UINT64_MAX = non-temporal at every size */
	unsigned max_size_kib;   /* largest copy measured */
	uint32_t elapsed_us;     /* how long the measurement took */
	uint64_t time;           /* when, seconds since the epoch */
	bool matches;            /* valid, and measured on this CPU with the inputs a
	                            cache without flush options has: wc_open uses it */
	char result[160];        /* "crossover 2048 B: nt-avx2 below 2048 B, cached+clwb
	                            from there", "non-temporal wins at every size: ..." */
	char cpu[160];           /* "GenuineIntel family 0x6 model 0x55 stepping 4,
	                            features 0xff, clwb": where it was measured */
};

/* The policy line of an image opened with wcadm_image_open (sb_ok).
 * 0 or -errno with a message. */
int wcadm_image_policy(struct wcadm_image *img, struct wcadm_policy *out);

/* The measurement on the free blocks of the cache file at `path`, in place
 * and offline, as wc_create measures (blocks holding any data are never
 * written), recorded in its superblock's policy line.  The owner's lock is
 * taken for the whole time, so a cache open anywhere is refused (-EBUSY).
 * 0, or -errno with a message and nothing written.  On success: */
struct wcadm_policy_run {
	uint64_t n_blocks;
	uint32_t block_size;
	uint64_t area;                   /* bytes of free blocks measured on */
	struct wcadm_calibration cal;
	struct wcadm_policy before, now; /* the line as it was, and as recorded */
};
int wcadm_policy_measure_file(const char *path, unsigned rounds, struct wcadm_policy_run *out);

/* ==== an open cache (cache.c) ========================================== */

/* What wcbench run's cost floor shares with the cache it measures.
 * The configuration the cache runs with (defaults resolved): */
void wcadm_cache_config(const wc_cache *c, struct wc_config *out);
/* The cache file's mapping (NULL, 0 on the block medium: it is not mapped). */
void wcadm_cache_mapping(const wc_cache *c, void **base, size_t *len);
/* Its blocks (the data area is blocks x wc_block_size). */
uint64_t wcadm_cache_blocks(const wc_cache *c);
/* Its own resolved flush policy (wc_stats.pmem is the same info). */
void wcadm_cache_persist(const wc_cache *c, struct wcadm_persist *out);

/* ==== origins (origin.c) =============================================== */

/* wc_origin_open takes `name` as a path (a file or block device, opened
 * with the libaio backend), not as an NBD URI or an RBD spec. */
bool wcadm_origin_is_path(const char *name);

/* The ops of an origin (wc_origin_open's), with the library's defaults for
 * the optional ones (alignment 1). */
int wcadm_origin_size(struct wc_origin *o, uint64_t *bytes);
uint32_t wcadm_origin_alignment(struct wc_origin *o);
int wcadm_origin_submit(struct wc_origin *o, struct wc_origin_io *io);
int wcadm_origin_poll(struct wc_origin *o, unsigned min_events, uint64_t timeout_ns);
int wcadm_origin_flush(struct wc_origin *o);
void wcadm_origin_close(struct wc_origin *o);
/* Read or write [off, off + len) synchronously (short transfers completed).
 * 0 or -errno with a message naming the origin, offset and length. */
int wcadm_origin_rw_sync(struct wc_origin *o, enum wc_origin_op op, void *buf, size_t len,
                         uint64_t off);

#endif /* WCADMIN_H */
