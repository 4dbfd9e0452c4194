/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * policy_line.h -- the flush policy a cache measures on its own memory and
 * keeps in its superblock (the line at WC_POLICY_OFFSET, format.h), shared
 * by the cache (api/cache.c calls wc_policy_settle) and the tools that measure
 * or show it offline (`wcbench calibrate --cache`, `wcctl calibrate`).
 */
#ifndef WC_POLICY_LINE_H
#define WC_POLICY_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flush/engine.h"
#include "core/format.h"

struct wc_cache;

/* Bytes of free blocks a measurement streams over: 8x the L2 of any CPU
 * measured so far, so every copy writes cold lines as a cache write does,
 * and little enough to map in quickly (mapping the pages in is most of the
 * time: ~21 ms of ~25 on a KVM guest's tmpfs file).  Fewer free bytes than
 * the minimum and the cache does not measure. */
#define WC_POLICY_AREA     (16u << 20)
#define WC_POLICY_MIN_AREA (4u << 20)

/* What a measurement for a cache with flush config `cfg` (its own fields,
 * then the WC_PMEM_* environment) depends on: the usable CPU features and
 * the flush instruction of the cached path. */
void wc_policy_inputs(const struct wc_pmem_config *cfg, unsigned *features, int *flush_insn);

/*
 * Measure NT against cached + flush on the free blocks of a mapped cache
 * image (entries whose durable seq is free; blocks holding any version of
 * any data, committed or not, are never written), up to WC_POLICY_AREA of
 * them, with copies of up to one block, `rounds` rounds at most and no new
 * one after `budget_ms` (0 = no limit).  *area receives the bytes used.
 * 0, or -ENOSPC (fewer than WC_POLICY_MIN_AREA free bytes) or another
 * -errno, with a message; nothing is written on failure.
 */
int wc_policy_measure(void *base, const struct wc_layout *l, unsigned features, int flush_insn,
                      unsigned rounds, double budget_ms, struct wc_calibration *cal,
                      uint64_t *area);
/* What wc_create and wc_open use: at most 5 rounds, 20 ms of them.  With
 * mapping the 16 MiB in first: ~25-45 ms on a 1 GiB cache on tmpfs. */
#define WC_POLICY_ROUNDS 5u
#define WC_POLICY_BUDGET_MS 20.0

/* A complete record (CRC included) of `cal` on this CPU. */
void wc_policy_fill(struct wc_pmem_policy *pl, const struct wc_calibration *cal,
                    unsigned features, int flush_insn, int source);
/* Store the record through the flush engine (store, flush, drain). */
void wc_policy_write(const struct wc_persist_policy *fp, void *base,
                     const struct wc_pmem_policy *pl);
/* 1 if a valid record was measured on this CPU with these inputs. */
int wc_policy_matches(const struct wc_pmem_policy *pl, unsigned features, int flush_insn);
/* The on-disk code of a strategy (WC_POLICY_STRAT_*), NONE if it has none. */
uint8_t wc_policy_strat_code(enum wc_strategy_id id);
/* The strategies a valid record chose (a version-1 record: the widest
 * non-temporal width of its features, and the cached path).  0, or
 * -EBADMSG with a message for codes this library does not know. */
int wc_policy_choice(const struct wc_pmem_policy *pl, struct wc_flush_choice *out);
/* "non-temporal wins at every size: nt-avx512 at every size",
 * "crossover 2048 B: nt-avx2 below 2048 B, cached+clwb from there" -- the
 * result alone, of a valid record. */
const char *wc_policy_result_str(char *buf, size_t len, const struct wc_pmem_policy *pl);
/* "AuthenticAMD family 0x1a model 0x2 stepping 1, clwb avx512f ..." of a record. */
const char *wc_policy_cpu_str(char *buf, size_t len, const struct wc_pmem_policy *pl);

/*
 * After recovery, before any thread runs: give the cache the policy it
 * keeps in its superblock, or measure one on its free blocks and keep it
 * there.  `created`: wc_create formatted it just now.  Never fails: when
 * nothing can be measured the cache keeps the engine's policy, and
 * c->fp.info.reason / c->policy_source say which and why.
 */
void wc_policy_settle(struct wc_cache *c, bool created);

#endif
