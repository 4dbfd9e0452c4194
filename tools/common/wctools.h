/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wctools.h -- what wcbench, wcctl, the fio engine and the nbdkit plugin
 * share, so that each grammar, each JSON rule and each message exists once.
 *
 *   sizes      the library's grammar (wcadm_size_parse) with a message that
 *              names the option
 *   options    a table per subcommand instead of a getopt_long switch
 *   JSON       one writer: escaping, null and numbers done in one place
 *   scratch    files a benchmark creates and must not leave behind
 *   progress   one line on stderr, redrawn in place on a terminal
 *   pmem       the emulated-pmem setup (PMEM2_FORCE_GRANULARITY)
 *
 * json.c needs only the public wcache.h, so the plugins compile it alone;
 * the rest uses the admin interface (lib/admin/wcadmin.h) and links
 * libwcache-core.  This header includes neither.
 */
#ifndef WCTOOLS_H
#define WCTOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct wc_pmem_info;
struct wc_stats;

/* ---- sizes (wctools.c) ---------------------------------------------------- */

/* Parse `arg` with the one size grammar (wcadm_size_parse) into *out, within
 * [min, max].  On error prints "<cmd>: --<name> <arg>: <why>" and returns
 * -1. */
int wct_parse_size(const char *cmd, const char *name, const char *arg, uint64_t min,
                   uint64_t max, uint64_t *out);
/* A plain decimal integer in [min, max], same message style. */
int wct_parse_uint(const char *cmd, const char *name, const char *arg, uint64_t min,
                   uint64_t max, uint64_t *out);
/* "64 B", "1.5 KiB", "64 MiB" */
const char *wct_size_str(char *buf, size_t len, uint64_t bytes);
/* For --help texts: how every size option is written. */
#define WCT_SIZE_HELP \
	"Sizes: bytes, or a number with K, M, G or T (powers of 1024), optionally\n" \
	"followed by B or iB: 4096, 4K, 4KiB, 256M, 1G.\n"

/* ---- options (wctools.c) -------------------------------------------------- */

enum wct_opt_kind {
	WCT_FLAG,    /* bool *, set to true */
	WCT_STR,     /* const char **, the argument as given */
	WCT_UINT,    /* unsigned *, decimal in [min, max] */
	WCT_U64,     /* uint64_t *, decimal in [min, max] */
	WCT_SIZE,    /* uint64_t *, the size grammar, in [min, max] */
	WCT_DOUBLE,  /* double *, in (min, max] */
	WCT_CHOICE,  /* unsigned *, the index of the argument in `choices` */
};

struct wct_opt {
	const char *name;        /* the long option, without "--" */
	enum wct_opt_kind kind;
	void *dst;
	uint64_t min, max;
	const char *const *choices; /* WCT_CHOICE: NULL-terminated */
	bool *given;             /* optional: set when the option appears */
};

#define WCT_OPT(n, k, d, lo, hi) { .name = (n), .kind = (k), .dst = (d), .min = (lo), .max = (hi) }
#define WCT_OPT_FLAG(n, d) WCT_OPT(n, WCT_FLAG, d, 0, 0)
#define WCT_OPT_STR(n, d) WCT_OPT(n, WCT_STR, d, 0, 0)
#define WCT_OPT_CHOICE(n, d, c) { .name = (n), .kind = WCT_CHOICE, .dst = (d), .choices = (c) }
#define WCT_OPT_END { .name = NULL }

/* Parse argv against `opts` (ended by a NULL name); --help prints
 * usage(stdout) and exits 0.  With `positional` false, a leftover argument
 * is an error.  Returns 0, or 2 after printing why (usage(stderr) for an
 * unknown option). */
int wct_opts_parse(const char *cmd, const struct wct_opt *opts, int argc, char **argv,
                   void (*usage)(FILE *), bool positional);

/* ---- JSON (json.c) ----------------------------------------------------- */

#define WCT_JSON_DEPTH 8

/* A pretty container puts each member on its own line, indented two spaces
 * per level; an inline one separates members with ", ".  Closing the
 * outermost container ends the line. */
struct wct_json {
	FILE *f;
	unsigned depth;
	bool first[WCT_JSON_DEPTH];
	bool pretty[WCT_JSON_DEPTH];
	char close[WCT_JSON_DEPTH];
};

void wct_json_init(struct wct_json *j, FILE *f);
/* `key` is NULL for an array element or the outermost value. */
void wct_json_object(struct wct_json *j, const char *key, bool pretty);
void wct_json_array(struct wct_json *j, const char *key, bool pretty);
void wct_json_end(struct wct_json *j);
/* NULL is written as null, everywhere. */
void wct_json_str(struct wct_json *j, const char *key, const char *s);
void wct_json_u64(struct wct_json *j, const char *key, uint64_t v);
void wct_json_int(struct wct_json *j, const char *key, long long v);
/* `fmt` is one printf conversion for a double ("%.3f"); a value that is
 * not finite is written as null, which JSON can carry. */
void wct_json_num(struct wct_json *j, const char *key, const char *fmt, double v);
void wct_json_bool(struct wct_json *j, const char *key, bool v);
void wct_json_null(struct wct_json *j, const char *key);
/* A threshold of the flush policy: SIZE_MAX (none, non-temporal at every
 * size) is null. */
void wct_json_threshold(struct wct_json *j, const char *key, size_t t);
/* A string literal, escaped; NULL is null.  For output that is not built
 * with the writer. */
void wct_json_string(FILE *f, const char *s);
/* The CPU the flush policy `in` was resolved on, as members of the open
 * object: "vendor", "family", "model", "stepping", "line_size". */
void wct_json_cpu(struct wct_json *j, const struct wc_pmem_info *in);
/* The counters of wc_stats every stats file carries ("blocks" ..
 * "dram_bytes"), as members of the open object. */
void wct_json_stats(struct wct_json *j, const struct wc_stats *st);

/* ---- progress, time (wctools.c) ------------------------------------------- */

double wct_now_ns(void);
/* One line on stderr: overwritten in place on a terminal, else printed
 * whole. */
void wct_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void wct_progress_done(void);

/* ---- emulated pmem (wctools.c) -------------------------------------------- */

/* Without PMEM2_FORCE_GRANULARITY, libpmem2 maps a /dev/shm file at page
 * granularity and the flush code never runs; set it to CACHE_LINE unless
 * the user chose.  Returns whether this call set it. */
bool wct_pmem_emulate(void);
/* What wct_pmem_emulate did, for a note on stderr (no newline). */
#define WCT_PMEM_EMULATE_NOTE \
	"PMEM2_FORCE_GRANULARITY was unset; set to CACHE_LINE (on /dev/shm this runs " \
	"the real flush code on DRAM: not power-fail safe)"
/* For --help texts. */
#define WCT_PMEM_EMULATE_HELP \
	"Without PMEM2_FORCE_GRANULARITY, wcbench sets it to CACHE_LINE so a /dev/shm\n" \
	"file runs the real flush code (on DRAM: not power-fail safe).\n"

/* ---- scratch files (wctools.c) ----------------------------------------- */

/* Files a command made: unlinked if SIGINT/SIGTERM ends it (the handler is
 * installed by the first add).  Forget a file once it is removed or handed
 * over; release unlinks what is left (unless `keep`) and restores the
 * default handlers. */
void wct_scratch_add(const char *path);
void wct_scratch_forget(const char *path);
void wct_scratch_release(bool keep);
/* Make `path` ours to create: absent (ours), or a regular file that only
 * `force` lets us remove first; a device is used as it is (not ours) when
 * `devices` allows it.  Registers what is ours.  0, or -1 after printing
 * why. */
int wct_scratch_claim(const char *cmd, const char *path, bool force, bool devices, bool *ours);
/* Create `path` (which must not exist) `size` bytes long, sparse, and
 * register it; the open descriptor, or -1 after printing why. */
int wct_scratch_create(const char *cmd, const char *path, uint64_t size);
/* A file of `size` bytes under `dir` named "<prefix>XXXXXX" (path gets the
 * name, `len` >= strlen(dir) + strlen(prefix) + 8); the open descriptor or
 * -1 after printing why.  The caller removes it. */
int wct_scratch_temp(const char *cmd, char *path, size_t len, const char *dir,
                     const char *prefix, uint64_t size);

#endif
