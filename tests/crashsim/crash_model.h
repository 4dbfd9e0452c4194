/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_model.h -- what a cache may present after a crash, and the check.
 *
 * Block content is self-identifying: pattern(block, version) is a header
 * {magic, block, version, hash} followed by words derived from the hash,
 * so one read tells which write a block came from and whether it is whole.
 * Version 0 is the origin's initial content.
 *
 * The model numbers the workload's calls 1, 2, ...: a write call writes
 * version = its number into each of its blocks; a discard call makes its
 * blocks "anything once written, or zeros" (the data becomes the origin's).
 * Acknowledging (a flush, a FUA write, a close, ... returned 0) makes every
 * call so far durable.
 *
 * The durability contract, as checked: a crash image captured while calls
 * 1..hi had started and 1..lo were acknowledged must present the state
 * after calls 1..j for ONE j in [lo, hi], where call j+1 (a call in progress
 * when a commit happened) may be applied to any subset of its blocks.
 * Nothing acknowledged is lost (j >= lo), nothing torn, no block from after
 * j mixed with blocks from before it.
 */
#ifndef WC_CRASH_MODEL_H
#define WC_CRASH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- block patterns ---- */

void wc_pattern_fill(void *buf, uint32_t block_size, uint64_t block, uint64_t version);

enum wc_pattern_kind {
	WC_PATTERN_OK,      /* whole pattern of this block: *version set */
	WC_PATTERN_ZERO,    /* all zero */
	WC_PATTERN_GARBAGE, /* torn, foreign or another block's */
};
enum wc_pattern_kind wc_pattern_decode(const void *buf, uint32_t block_size, uint64_t block,
                                       uint64_t *version);

/* ---- the model ---- */

struct wc_model;

struct wc_window {
	uint64_t lo;   /* calls acknowledged */
	uint64_t hi;   /* calls started */
};

int wc_model_new(struct wc_model **out, uint64_t n_blocks, uint32_t block_size);
void wc_model_free(struct wc_model *m);

/* Record a call before issuing it; returns its number (= the version the
 * write call stores).  count >= 1. */
uint64_t wc_model_write(struct wc_model *m, uint64_t first, uint64_t count);
uint64_t wc_model_discard(struct wc_model *m, uint64_t first, uint64_t count);
/* Every call so far is durable. */
void wc_model_ack(struct wc_model *m);
/* Calls 1..n are durable (a flush that another call raced: the flush
 * covers what was issued before it began). */
void wc_model_ack_upto(struct wc_model *m, uint64_t n);
struct wc_window wc_model_window(const struct wc_model *m);
uint64_t wc_model_blocks(const struct wc_model *m);
uint32_t wc_model_block_size(const struct wc_model *m);

/* The version block b holds after all calls so far, or UINT64_MAX when it
 * was discarded since its last write (then anything once written, or
 * zeros, is right). */
uint64_t wc_model_current(const struct wc_model *m, uint64_t b);

/*
 * Check the content of every block (n_blocks x block_size bytes, as read
 * back through a recovered cache) against window w.  Returns true when it
 * satisfies the contract; else false with a description in `why`.
 */
bool wc_model_check(const struct wc_model *m, struct wc_window w, const uint8_t *blocks,
                    char *why, size_t why_len);

/* The call list, to rebuild the model elsewhere (a regression test):
 * "blocks N block_size B\n" then one "w FIRST COUNT\n" / "d FIRST COUNT\n" /
 * "a N\n" (calls 1..N acknowledged; "a\n": every call so far) per event. */
int wc_model_save(const struct wc_model *m, FILE *f);
int wc_model_load(struct wc_model **out, FILE *f);

#endif
