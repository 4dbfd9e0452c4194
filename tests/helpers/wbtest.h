/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wbtest.h -- what the write-back tests share (check_writeback,
 * check_writeback_faults): caches on the fault origin, a model of what every
 * origin block must hold, checks of the cache and of both origin images
 * against it, a random workload, and bounded waits.
 *
 * Most tests use the fault origin (fault_origin.h): its volatile image is
 * what reads see, its durable image what survives an origin power cut.
 * "The origin equals the model" is checked on both, byte for byte: a block
 * holds exactly ct_fill_block(block, version), or zeros if never written.
 */
#ifndef WC_WBTEST_H
#define WC_WBTEST_H

#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cachetest.h"
#include "fault_origin.h"
#include "core/format.h"
#include "testmain.h"
#include "wcache.h"

/* The cache file every helper below creates and opens. */
extern char cache_path[PATH_MAX];

#define BS 4096u
#define NEVER UINT64_MAX /* model version of a block never written: zeros */

void sleep_ms(unsigned ms);

/* A cache file that holds exactly `blocks` blocks of BS bytes. */
void make_cache_file(uint64_t blocks);
struct fault_origin *new_origin(uint64_t blocks);
/* wc_config_init, then `opts`; `open` leaves the block size to the file. */
void parse_opts(struct wc_config *cfg, const char *opts, bool open);
/* create_on and reopen_on hand the cache the fault origin flushed by
 * requests (false, the default) or by flush() alone (true). */
extern bool wbtest_sync_flush;
/* When set, what create_on and reopen_on hand the cache instead (a test's
 * wrapper around the fault origin). */
extern struct wc_origin (*wbtest_wrap_origin)(struct wc_origin o);
wc_cache *create_on(struct fault_origin *fo, uint64_t cache_blocks, const char *opts);
wc_cache *reopen_on(struct fault_origin *fo, const char *opts);
/* The block medium's cache file, on a disk-backed file system (tmpfs takes
 * no O_DIRECT): WC_TEST_DISK_DIR, else /var/tmp. */
extern char block_path[PATH_MAX];
/* Name block_path "<name>-<pid>.cache" and remove what is there. */
void block_file(const char *name);
/* A block-medium cache of cache_bytes on the fault origin, in a fresh
 * block_path; `opts` (NULL: none) follow medium= and cache_size=. */
wc_cache *create_block_on(struct fault_origin *fo, const char *name, uint32_t cache_bytes,
                          const char *opts);
/* The cache in block_path opened again; `opts` NULL: as it was made. */
wc_cache *reopen_block_on(struct fault_origin *fo, const char *opts);
struct wc_stats stats(wc_cache *c);
struct fault_origin_counters counters(struct fault_origin *fo);

/* ---- the model: the version every origin block must hold ---- */

struct model {
	uint64_t blocks;
	uint64_t *v;      /* version per block, NEVER = zeros */
	uint64_t next;    /* next version to write */
	uint8_t *buf, *rd;
};

struct model *model_new(uint64_t blocks);
void model_free(struct model *m);
/* Write blocks [b, b + n) with one new version; returns wc_write's result
 * and updates the model only if the write was acknowledged. */
ssize_t model_try_write(wc_cache *c, struct model *m, uint64_t b, unsigned n, unsigned flags);
void model_write(wc_cache *c, struct model *m, uint64_t b, unsigned n, unsigned flags);
void assert_block(const uint8_t *data, uint64_t b, uint64_t want, const char *where);
/* Reading through the cache gives the model, 16 blocks per read. */
void model_check_cache(wc_cache *c, struct model *m, const char *where);
void model_check_image(const struct model *m, const uint8_t *img, const char *where);
/* Both images of the fault origin equal the model. */
void model_check_origin(const struct model *m, struct fault_origin *fo);
/* Everything written back, nothing left in the cache, no error. */
void assert_clean(wc_cache *c);

/* A random workload of multi-block writes, reads checked against the
 * model, flushes and FUA writes; `poll_every` > 0 drives wc_poll (no_threads
 * mode).  A failed round reports -EIO through wc_poll and is retried later:
 * the host loop tolerates that, never a sticky error. */
void random_workload(wc_cache *c, struct model *m, uint64_t seed, unsigned ops,
                     unsigned poll_every);

/* Wait (bounded, no timing asserted) until cond(c) holds. */
bool wait_for(wc_cache *c, bool (*cond)(wc_cache *c), unsigned max_ms);
bool all_free(wc_cache *c);

#endif
