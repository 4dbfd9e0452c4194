/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_block.h -- between the block-medium fuzz harness (fuzz_block.c) and
 * its replay build's seeds (fuzz_block_corpus.c): the template image and
 * where an input goes in it.
 */
#ifndef WC_FUZZ_BLOCK_H
#define WC_FUZZ_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "block/format.h"

#define BS 512u
#define ORIGIN_BLOCKS 64u
#define IMAGE_BYTES (320u << 10)

/* The input's first byte. */
enum {
	FIX_SB_CRC = 1, FIX_MAGIC = 2, FIX_STATE_CRC = 4, FIX_DATA_CRC = 8, FIX_REC_CRC = 16,
	FIX_SUM_CRC = 32,
};

struct window {
	uint64_t off;
	uint32_t len;
};

struct fuzz_blk_template {
	const uint8_t *img;              /* IMAGE_BYTES, as every execution starts */
	struct wc_blk_geom g;
	const struct window *windows;    /* where the input's bytes go, in order */
	unsigned n_windows;
	size_t windows_len;
	const uint64_t *rec_off;         /* the windowed records' headers */
	unsigned n_recs;
};

/* Made at the first call (the harness's setup). */
const struct fuzz_blk_template *fuzz_blk_template(void);
/* What the last input did, for the replay's TAP line. */
const char *fuzz_blk_outcome(void);

#endif
