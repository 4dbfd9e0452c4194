/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wcctl.h -- what the wcctl subcommands share: their entry points (one row
 * each in main.c's table), how an image read offline is shown (image.c; the
 * reading is the admin interface's, wcadm_image in lib/admin/wcadmin.h) and
 * small output helpers (util.c); what every tool shares is
 * tools/common/wctools.h.
 */
#ifndef WCCTL_H
#define WCCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wcache.h"
#include "wcadmin.h"
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

/* ---- image.c: how an image read offline (wcadm_image) is shown ---------- */

/* "live, in use by pid 1234 (server)" (img->live). */
const char *wcctl_live_str(char *buf, size_t len, const struct wcadm_image *img);
/* Members "live": true, "in_use_by": 1234 (null when the pid is unknown). */
void wcctl_json_live(struct wct_json *j, const struct wcadm_image *img);
/* The recorded origin, e.g. "file /o.img (inode 12 tag 9f..., 8 MiB), recorded at
 * create, generation 1"; or why there is none. */
const char *wcctl_identity_str(char *buf, size_t len, const struct wcadm_image *img);
/* The same as the JSON object `key` (null when none is recorded). */
void wcctl_json_identity(struct wct_json *j, const char *key, const struct wcadm_image *img);
const char *wcctl_state_name(enum wcadm_entry_state s);
/* "empty", "torn", "covered", "valid", "mismatch", "fallback", "older". */
const char *wcctl_record_state_name(enum wcadm_record_state s);
/* One line about a slot after wcadm_image_commit, e.g. "seq 8, count 3,
 * 3 entries of epoch 7 found, valid: the commit point". */
const char *wcctl_record_str(char *buf, size_t len, const struct wcadm_image *img, unsigned slot);
/* Where the commit point comes from: "floor", "record 0", "record 1". */
const char *wcctl_commit_source(char *buf, size_t len, const struct wcadm_image *img);
/* The floor, both records and the commit point, one line each, every line
 * starting with `prefix`. */
void wcctl_print_commit(const struct wcadm_image *img, const char *prefix);
/* The same as the JSON object `key`. */
void wcctl_json_commit(struct wct_json *j, const char *key, const struct wcadm_image *img);

/* ---- block.c: the block medium's image (wcadm_blk_*) -------------------- */

/* check, dump and status of a cache on the block medium: the same options,
 * output kinds and exit statuses as on pmem. */
int wcctl_blk_check(const char *cmd, const char *path, uint64_t max, bool json);
int wcctl_blk_dump(const char *cmd, const char *path, bool all, bool json);
/* `live`: the cache is open elsewhere (read from the image, not opened). */
int wcctl_blk_status(const char *cmd, const char *cache, const char *origin, struct wc_config *cfg,
                     bool live, bool json);
/* What `wcctl create` prints once a cache on the block medium is made. */
int wcctl_blk_created(const char *cmd, const char *cache, const char *origin,
                      const struct wc_stats *st, uint32_t bs, uint64_t addressable);
/* set-origin's look at the image: recorded identity and dirty blocks. */
int wcctl_blk_look(const char *cmd, const char *cache, char *recorded, size_t len, uint64_t *dirty,
                   uint32_t *block_size);

/* ---- util.c ----------------------------------------------------------- */

/* 36 characters + NUL. */
const char *wcctl_uuid_str(char *buf, size_t len, const uint8_t uuid[16]);
/* "2024-05-01 12:00:00 UTC" */
const char *wcctl_time_str(char *buf, size_t len, uint64_t epoch_s);
/* A flush policy's "threshold" (null: non-temporal at every size), "small",
 * "large" and "reason", as members of the open JSON object. */
void wcctl_json_policy(struct wct_json *j, const struct wc_pmem_info *in);
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
