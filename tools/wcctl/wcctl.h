/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wcctl.h -- what the wcctl subcommands share: their entry points (one row
 * each in main.c's table), the offline image reader (image.c) and small
 * output helpers (util.c); what every tool shares is tools/common/wctools.h.
 */
#ifndef WCCTL_H
#define WCCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/format.h"
#include "util/lock.h"
#include "wcache.h"
#include "wctools.h"

/* Process exit status of every subcommand (dmsetup's convention). */
enum { WCCTL_OK = 0, WCCTL_FAIL = 1, WCCTL_USAGE = 2 };

/* A subcommand: argv[0] is "wcctl <name>" (getopt's messages then name the
 * subcommand); returns the exit status. */
int wcctl_create(int argc, char **argv);
int wcctl_status(int argc, char **argv);
int wcctl_writeback(int argc, char **argv);
int wcctl_set_origin(int argc, char **argv);
int wcctl_check(int argc, char **argv);
int wcctl_dump(int argc, char **argv);
int wcctl_calibrate(int argc, char **argv);

/* ---- image.c: a cache file read without the library (never written) ---- */

enum wcctl_entry_state {
	WCCTL_FREE = 0,    /* seq == WC_NONE */
	WCCTL_UNCOMMITTED, /* seq >= the commit point: recovery drops it */
	WCCTL_COMMITTED,   /* the newest committed version of its origin block */
	WCCTL_SUPERSEDED,  /* committed, but a newer committed entry holds its block */
	WCCTL_OUTSIDE,     /* committed, origin block beyond the origin: damage */
	WCCTL_DUPLICATE,   /* committed, same origin block and seq as another: damage */
};

/* 8 bytes per entry: a check of a 100 GiB cache of 4 KiB blocks needs
 * ~200 MiB (plus 24 bytes per committed entry while sorting). */
struct wcctl_entry_info {
	/* SUPERSEDED: the entry holding the newer version; DUPLICATE: the other
	 * entry with the same seq; WCCTL_NO_ENTRY otherwise.  The format keeps
	 * n_blocks below UINT32_MAX. */
	uint32_t other;
	uint8_t state; /* enum wcctl_entry_state */
};
#define WCCTL_NO_ENTRY UINT32_MAX

/* What a commit record slot says (docs/FORMAT.md, "Commit records"). */
enum wcctl_record_state {
	WCCTL_REC_EMPTY = 0, /* all zero: never written, or erased by recovery */
	WCCTL_REC_TORN,      /* CRC32C or seq out of range: the line is not whole */
	WCCTL_REC_COVERED,   /* intact, seq <= the floor: nothing to decide */
	WCCTL_REC_VALID,     /* the newest intact record above the floor, and its
	                      * entries match: it is the commit point */
	WCCTL_REC_MISMATCH,  /* the newest intact record above the floor, but its
	                      * entries do not match: that commit did not happen */
	WCCTL_REC_FALLBACK,  /* the other slot, above the floor, while the newest
	                      * does not match: it is the commit point */
	WCCTL_REC_OLDER,     /* the other slot, above the floor, below a valid newest */
};

struct wcctl_record_info {
	uint64_t found;          /* entries that hold seq == record seq - 1 */
	bool intact;             /* wc_record_intact */
	bool matches;            /* intact, found == count and the digests add up */
	uint8_t state;           /* enum wcctl_record_state */
};

struct wcctl_image {
	const char *path;
	int fd;
	uint64_t file_size;
	struct wc_pmem_sb sb;          /* a copy of the superblock region's head */
	struct wc_pmem_record rec[WC_RECORD_SLOTS]; /* copies of the record slots */
	struct wc_pmem_origin_id oid[WC_ORIGIN_ID_SLOTS]; /* copies of the identity slots */
	int oid_slot;                  /* the one in force (wc_origin_id_current), -1: none */
	struct wc_layout layout;       /* valid only if sb_ok */
	bool sb_ok;
	/* Open elsewhere (the owner's lock is held): the image moves while it
	 * is read, and must only be read. */
	bool live;
	struct wc_lock_holder holder;  /* valid if live */
	const struct wc_pmem_entry *entries; /* read-only mapping (NULL until mapped) */
	void *map;
	size_t map_len;
	/* After wcctl_image_commit: the commit point as recovery computes it
	 * (wc_commit_point), and what each record slot says.  Values: they
	 * stay readable after wcctl_image_close. */
	bool cp_ok;
	struct wc_commit_point cp;
	struct wcctl_record_info rinfo[WC_RECORD_SLOTS];
	int cp_slot;                   /* the slot the commit point comes from; -1 = the floor */
	struct wcctl_entry_info *info; /* one per entry, after wcctl_image_classify */
	uint64_t n_free, n_uncommitted, n_committed, n_superseded, n_outside, n_duplicate;
};

/* Open `path` read-only, test for an owner's lock (img->live: never a
 * reason to refuse, the image is only read) and validate its superblock
 * with wc_sb_validate.
 * Returns 0 (sb_ok), a negative errno from the validation (the image stays
 * open so the caller can print fields; wc_errmsg() says what is wrong), or
 * -errno with img->fd == -1 when the file cannot be read at all. */
int wcctl_image_open(struct wcctl_image *img, const char *path);
/* "live, in use by pid 1234 (server)" (img->live). */
const char *wcctl_live_str(char *buf, size_t len, const struct wcctl_image *img);
/* Members "live": true, "in_use_by": 1234 (null when the pid is unknown). */
void wcctl_json_live(struct wct_json *j, const struct wcctl_image *img);
/* Map the entry array (needs sb_ok) and compute the commit point from the
 * floor, the two records and the entries, as recovery does (fills cp,
 * rinfo, cp_slot).  0 or -errno with a message. */
int wcctl_image_commit(struct wcctl_image *img);
/* wcctl_image_commit, then classify every entry against the commit point
 * as recovery would.  0 or -errno with a message. */
int wcctl_image_classify(struct wcctl_image *img);
void wcctl_image_close(struct wcctl_image *img);
/* The origin size the cache serves: its identity's (which grows with the
 * origin), else the superblock's. */
uint64_t wcctl_origin_size(const struct wcctl_image *img);
/* The recorded origin, e.g. "file /o.img (inode 12 tag 9f..., 8 MiB), recorded at
 * create, generation 1"; or why there is none. */
const char *wcctl_identity_str(char *buf, size_t len, const struct wcctl_image *img);
/* A version-3 image without an intact identity slot: damaged. */
bool wcctl_identity_damaged(const struct wcctl_image *img);
/* The same as the JSON object `key` (null when none is recorded). */
void wcctl_json_identity(struct wct_json *j, const char *key, const struct wcctl_image *img);

/* Byte offset of entry `idx` in the file. */
uint64_t wcctl_entry_offset(const struct wcctl_image *img, uint64_t idx);
const char *wcctl_state_name(enum wcctl_entry_state s);
/* "empty", "torn", "covered", "valid", "mismatch", "fallback", "older". */
const char *wcctl_record_state_name(enum wcctl_record_state s);
/* Byte offset of record slot `slot` in the file. */
uint64_t wcctl_record_offset(unsigned slot);
/* One line about a slot after wcctl_image_commit, e.g. "seq 8, count 3,
 * 3 entries of epoch 7 found, valid: the commit point". */
const char *wcctl_record_str(char *buf, size_t len, const struct wcctl_image *img, unsigned slot);
/* Where the commit point comes from: "floor", "record 0", "record 1". */
const char *wcctl_commit_source(char *buf, size_t len, const struct wcctl_image *img);
/* The floor, both records and the commit point, one line each, every line
 * starting with `prefix`. */
void wcctl_print_commit(const struct wcctl_image *img, const char *prefix);
/* The same as the JSON object `key`. */
void wcctl_json_commit(struct wct_json *j, const char *key, const struct wcctl_image *img);

/* ---- util.c ----------------------------------------------------------- */

/* 36 characters + NUL. */
const char *wcctl_uuid_str(char *buf, size_t len, const uint8_t uuid[16]);
/* "2024-05-01 12:00:00 UTC" */
const char *wcctl_time_str(char *buf, size_t len, uint64_t epoch_s);
/* A config from --options (and --size, NULL = none); `for_open` leaves the
 * block size to the superblock.  Prints the error and returns WCCTL_USAGE
 * on a bad string, else WCCTL_OK. */
int wcctl_config(struct wc_config *cfg, const char *cmd, const char *options,
                 const char *size, bool for_open);
/* wct_opts_parse, then exactly `want` positional arguments (wcctl_positional);
 * they start at argv[optind]. */
int wcctl_options(const char *cmd, const struct wct_opt *opts, int argc, char **argv,
                  void (*usage)(FILE *), int want, const char *what);
/* Print "wcctl <cmd>: unexpected/missing argument" and return WCCTL_USAGE
 * unless argc - optind == want. */
int wcctl_positional(const char *cmd, int argc, char **argv, int optind_now, int want,
                     const char *what);

/* A progress bar on stderr: redrawn in place on a terminal, otherwise one
 * line per tenth so logs stay short. */
struct wcctl_progress {
	uint64_t total;
	bool tty;
	int last_tenth;
	uint64_t last_done;
	double t0, last_draw;
};
void wcctl_progress_start(struct wcctl_progress *p, uint64_t total);
void wcctl_progress_update(struct wcctl_progress *p, uint64_t done, const char *note);
void wcctl_progress_end(struct wcctl_progress *p);

#endif
