/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_block_corpus.c -- the replay build of fuzz_block.c: its seeds
 * (--make-corpus DIR), a description of its template (--describe), and
 * the replay of tests/fuzz-corpus-block as TAP (make check).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "block/format.h"
#include "core/format.h"
#include "fuzz_block.h"
#include "fuzz_replay.h"

static const struct fuzz_blk_template *T;


/* An input that leaves the windows as the template has them, but for what
 * the caller changes in `in` (laid out as the windows) before saving. */
static uint8_t *input_of(const uint8_t *img)
{
	uint8_t *in = malloc(1 + T->windows_len);
	size_t at = 1;

	if (!in)
		abort();
	in[0] = 0;
	for (unsigned i = 0; i < T->n_windows; i++) {
		memcpy(in + at, img + T->windows[i].off, T->windows[i].len);
		at += T->windows[i].len;
	}
	return in;
}

static int save_seed(const char *dir, const char *name, unsigned flags, const uint8_t *img, size_t len)
{
	uint8_t *in = input_of(img);
	char path[PATH_MAX];
	FILE *f;
	int ret;

	in[0] = (uint8_t)flags;
	if (len > 1 + T->windows_len)
		len = 1 + T->windows_len;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f) {
		free(in);
		return -errno;
	}
	fwrite(in, 1, len, f);
	ret = fclose(f) == 0 ? 0 : -EIO;
	free(in);
	return ret;
}

static struct wc_blk_sum_head *summary(uint8_t *img, uint64_t slot)
{
	return (struct wc_blk_sum_head *)(img + T->g.seg_start + slot * T->g.seg_bytes + T->g.seg_data_bytes);
}

static struct wc_blk_state *state(uint8_t *img, unsigned slot)
{
	return (struct wc_blk_state *)(img + WC_BLK_STATE_OFFSET + slot * WC_BLK_UNIT);
}

/* The slot of a segment of the ring (from the tail of the state in force)
 * with an intact summary, or -1. */
static int summarized_slot(const uint8_t *img)
{
	const struct wc_blk_state *slots[2] = {
		(const void *)(img + WC_BLK_STATE_OFFSET),
		(const void *)(img + WC_BLK_STATE_OFFSET + WC_BLK_UNIT),
	};
	int cur = wc_blk_state_current(slots);

	for (uint64_t s = 0; cur >= 0 && s < T->g.n_segments; s++) {
		const struct wc_blk_sum_head *h = summary((uint8_t *)img, s);

		if (h->magic == WC_BLK_SUM_MAGIC && h->n && h->n <= T->g.sum_cap &&
		    h->seg >= slots[cur]->tail_seg && h->crc == wc_blk_sum_crc(h, (const void *)(h + 1)))
			return (int)s;
	}
	return -1;
}

/* Seeds aimed at each refusal of the block medium's open (format.c
 * wc_blk_sb_check, recover.c), at recovery's two ways of reading a
 * segment and at what an intact CRC over wrong numbers must not do. */
static int make_corpus(const char *dir)
{
	size_t all, sb_only = 1 + WC_BLK_SB_CRC_END + 8;
	uint8_t *img = malloc(IMAGE_BYTES);
	struct wc_blk_sb *sb = (struct wc_blk_sb *)img;
	struct wc_blk_rec *r0;
	int ret = 0, sum_slot;

	T = fuzz_blk_template();
	all = 1 + T->windows_len;
	if (!img)
		return -ENOMEM;
	mkdir(dir, 0755);
	r0 = (struct wc_blk_rec *)(img + T->rec_off[0]);
#define RESET() memcpy(img, T->img, IMAGE_BYTES)
	RESET();
	sum_slot = summarized_slot(img);
	if (T->n_recs < 8 || sum_slot < 0) {
		fprintf(stderr, "fuzz_block: the template has %u records and %s summary\n", T->n_recs,
		        sum_slot < 0 ? "no" : "a");
		free(img);
		return -EINVAL;
	}
	ret |= save_seed(dir, "valid", 0, img, all);
	ret |= save_seed(dir, "valid-sb-only", 0, img, sb_only);
	memset(img, 0, WC_BLK_UNIT);
	ret |= save_seed(dir, "never-formatted", 0, img, sb_only);
	RESET();
	sb->magic ^= 1;
	ret |= save_seed(dir, "bad-magic", 0, img, sb_only);
	RESET();
	sb->version = 2;
	ret |= save_seed(dir, "bad-version", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->n_segments++;
	ret |= save_seed(dir, "bad-crc", 0, img, sb_only);
	RESET();
	sb->block_size = 1000;
	ret |= save_seed(dir, "odd-block-size", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->lba_size = 2 * BS;
	ret |= save_seed(dir, "lba-above-block-size", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->lba_size = 256;
	ret |= save_seed(dir, "lba-256", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->lba_size = sb->block_size = 2 * BS;
	ret |= save_seed(dir, "larger-block-and-lba", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->n_segments = 1ull << 32;
	ret |= save_seed(dir, "huge-n-segments", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->n_segments = 3;
	ret |= save_seed(dir, "too-few-segments", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->seg_bytes = 65536;
	ret |= save_seed(dir, "other-seg-bytes", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->summary_bytes += WC_BLK_UNIT;
	ret |= save_seed(dir, "bad-summary-bytes", FIX_SB_CRC, img, sb_only);
	RESET();
	/* The end of the ring past 2^64: it must not wrap into the file. */
	sb->seg_start = 0ull - (uint64_t)sb->seg_bytes;
	ret |= save_seed(dir, "seg-start-wraps", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->seg_start += WC_BLK_UNIT;
	ret |= save_seed(dir, "seg-start-moved", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->origin_size = (uint64_t)ORIGIN_BLOCKS * BS * 2;
	ret |= save_seed(dir, "origin-size-larger", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->origin_size = BS;
	ret |= save_seed(dir, "origin-one-block", FIX_SB_CRC, img, sb_only);
	RESET();
	sb->cache_id ^= 2;
	ret |= save_seed(dir, "other-cache-id", FIX_SB_CRC, img, sb_only);

	/* The state slots. */
	RESET();
	state(img, 0)->crc ^= 1;
	state(img, 1)->crc ^= 1;
	ret |= save_seed(dir, "state-both-torn", 0, img, all);
	RESET();
	state(img, state(img, 0)->generation > state(img, 1)->generation ? 0 : 1)->crc ^= 1;
	ret |= save_seed(dir, "state-newer-torn", 0, img, all);
	RESET();
	for (unsigned i = 0; i < 2; i++)
		state(img, i)->tail_seg = state(img, i)->open_limit + 7;
	ret |= save_seed(dir, "state-tail-past-limit", FIX_STATE_CRC, img, all);
	RESET();
	for (unsigned i = 0; i < 2; i++)
		state(img, i)->open_limit += 1000;
	ret |= save_seed(dir, "state-limit-far-ahead", FIX_STATE_CRC, img, all);
	RESET();
	for (unsigned i = 0; i < 2; i++) {
		state(img, i)->tail_seg = UINT64_MAX - 2;
		state(img, i)->clean_seg = UINT64_MAX - 2;
		state(img, i)->open_limit = UINT64_MAX;
	}
	ret |= save_seed(dir, "state-at-limit", FIX_STATE_CRC, img, all);
	RESET();
	for (unsigned i = 0; i < 2; i++)
		state(img, i)->clean_seg = state(img, i)->open_limit + 5;
	ret |= save_seed(dir, "state-clean-ahead", FIX_STATE_CRC, img, all);

	/* The identity slots: refused unless no dirty block is found (the
	 * count scans the ring, which may find nothing at all). */
	RESET();
	img[WC_BLK_ID_OFFSET] ^= 1;
	img[WC_BLK_ID_OFFSET + WC_BLK_UNIT] ^= 1;
	ret |= save_seed(dir, "identity-both-torn", 0, img, all);
	state(img, 0)->crc ^= 1;
	state(img, 1)->crc ^= 1;
	ret |= save_seed(dir, "identity-and-state-torn", 0, img, all);

	/* Records. */
	RESET();
	r0->crc ^= 1;
	ret |= save_seed(dir, "record-torn", 0, img, all);
	RESET();
	img[T->rec_off[0] + T->g.lba] ^= 1;
	ret |= save_seed(dir, "record-data-torn", 0, img, all);
	RESET();
	r0->count = WC_BLK_REC_MAX_BLOCKS;
	ret |= save_seed(dir, "record-count-max", FIX_DATA_CRC | FIX_REC_CRC, img, all);
	RESET();
	for (unsigned i = 0; i < T->n_recs; i++) {
		struct wc_blk_rec *r = (struct wc_blk_rec *)(img + T->rec_off[i]);

		if (!(r->flags & WC_BLK_REC_DISCARD))
			r->origin[0] = ORIGIN_BLOCKS + i;
	}
	ret |= save_seed(dir, "record-past-origin", FIX_REC_CRC, img, all);
	RESET();
	for (unsigned i = 0; i < T->n_recs; i++)
		((struct wc_blk_rec *)(img + T->rec_off[i]))->seq = 5;
	ret |= save_seed(dir, "record-same-seq", FIX_REC_CRC, img, all);
	RESET();
	for (unsigned i = 0; i < T->n_recs; i++) {
		struct wc_blk_rec *r = (struct wc_blk_rec *)(img + T->rec_off[i]);

		if (r->flags & WC_BLK_REC_DISCARD) {
			r->origin[0] = 0;
			r->origin[1] = UINT64_MAX;
		}
	}
	ret |= save_seed(dir, "discard-huge", FIX_REC_CRC | FIX_SUM_CRC, img, all);
	RESET();
	r0->flags = WC_BLK_REC_DISCARD;
	r0->count = 0;
	r0->origin[0] = UINT64_MAX - 1;
	r0->origin[1] = 4;
	ret |= save_seed(dir, "discard-past-origin", FIX_REC_CRC, img, all);

	/* Summaries: an intact CRC over numbers that are wrong. */
	RESET();
	summary(img, (uint64_t)sum_slot)->crc ^= 1;
	ret |= save_seed(dir, "summary-torn", 0, img, all);
	RESET();
	{
		struct wc_blk_sum_head *h = summary(img, (uint64_t)sum_slot);
		struct wc_blk_sum_ent *e = (struct wc_blk_sum_ent *)(h + 1);

		/* Every entry the summary holds, all the same block. */
		for (uint32_t i = 0; i < T->g.sum_cap; i++)
			e[i] = (struct wc_blk_sum_ent){ 1, e[0].seq, e[0].off, 0 };
		h->n = (uint32_t)T->g.sum_cap;
	}
	ret |= save_seed(dir, "summary-full-one-block", FIX_SUM_CRC, img, all);
	RESET();
	{
		struct wc_blk_sum_head *h = summary(img, (uint64_t)sum_slot);
		struct wc_blk_sum_ent *e = (struct wc_blk_sum_ent *)(h + 1);

		e[0].off = UINT32_MAX;
	}
	ret |= save_seed(dir, "summary-entry-outside", FIX_SUM_CRC, img, all);
	RESET();
	{
		struct wc_blk_sum_head *h = summary(img, (uint64_t)sum_slot);
		struct wc_blk_sum_ent *e = (struct wc_blk_sum_ent *)(h + 1);

		if (h->n > 1) {
			struct wc_blk_sum_ent t = e[0];

			e[0] = e[1];
			e[1] = t;
			e[0].seq++;
		}
	}
	ret |= save_seed(dir, "summary-out-of-order", FIX_SUM_CRC, img, all);
	RESET();
	{
		struct wc_blk_sum_head *h = summary(img, (uint64_t)sum_slot);
		struct wc_blk_sum_ent *e = (struct wc_blk_sum_ent *)(h + 1);

		e[0].origin = UINT64_MAX;
		e[0].len = WC_BLK_SUM_DISCARD | 0x7fffffffu;
	}
	ret |= save_seed(dir, "summary-discard-huge", FIX_SUM_CRC, img, all);
	RESET();
	summary(img, (uint64_t)sum_slot)->n = UINT32_MAX;
	ret |= save_seed(dir, "summary-n-huge", FIX_SUM_CRC, img, all);
	RESET();
	for (uint64_t s = 0; s < T->g.n_segments; s++)
		summary(img, s)->seg += T->g.n_segments;
	ret |= save_seed(dir, "summary-other-lap", FIX_SUM_CRC, img, all);
	/* Found by the fuzzer: the last segment of the ring given records (an
	 * older lap's summary relabelled), the one before it (the template's
	 * head) holding none, as when a power failure loses all of a segment's
	 * records: write-back used to wait for that empty segment forever
	 * (wc_writeback hung). */
	RESET();
	{
		const struct wc_blk_state *st0 = state(img, 0), *st1 = state(img, 1);
		uint64_t last = (st0->generation > st1->generation ? st0 : st1)->tail_seg +
		                T->g.n_segments - 1;

		summary(img, last % T->g.n_segments)->seg = last;
		for (unsigned i = 0; i < T->n_recs; i++) {
			struct wc_blk_rec *r = (struct wc_blk_rec *)(img + T->rec_off[i]);

			if (r->seg == last - 1)
				r->crc ^= 1; /* the template's head: its records lost */
		}
	}
	ret |= save_seed(dir, "segment-empty-below-head", FIX_SUM_CRC, img, all);
#undef RESET
	free(img);
	return ret ? -EIO : 0;
}

/* What the template holds, for people. */
static void describe(void)
{
	const struct wc_blk_state *st[2];

	T = fuzz_blk_template();
	st[0] = (const void *)(T->img + WC_BLK_STATE_OFFSET);
	st[1] = (const void *)(T->img + WC_BLK_STATE_OFFSET + WC_BLK_UNIT);
	printf("image %u bytes: %" PRIu64 " segments of %" PRIu64 " bytes (summary %" PRIu64
	       ", %" PRIu64 " entries), block %u, lba %u\n", IMAGE_BYTES, T->g.n_segments, T->g.seg_bytes,
	       T->g.summary_bytes, T->g.sum_cap, T->g.block_size, T->g.lba);
	for (unsigned i = 0; i < 2; i++)
		printf("state %u: gen %" PRIu64 " tail %" PRIu64 " clean %" PRIu64 " open_limit %" PRIu64
		       "%s\n", i, st[i]->generation, st[i]->tail_seg, st[i]->clean_seg, st[i]->open_limit,
		       wc_blk_state_intact(st[i]) ? "" : " (not intact)");
	for (uint64_t s = 0; s < T->g.n_segments; s++) {
		const struct wc_blk_sum_head *h = summary((uint8_t *)T->img, s);
		unsigned recs = 0;

		for (unsigned i = 0; i < T->n_recs; i++)
			recs += (T->rec_off[i] - T->g.seg_start) / T->g.seg_bytes == s;
		printf("slot %" PRIu64 ": %u windowed records, summary %s (seg %" PRIu64 ", %u entries)\n",
		       s, recs, h->magic == WC_BLK_SUM_MAGIC && h->n <= T->g.sum_cap &&
		       h->crc == wc_blk_sum_crc(h, (const void *)(h + 1)) ? "intact" : "none",
		       h->magic == WC_BLK_SUM_MAGIC ? h->seg : 0, h->magic == WC_BLK_SUM_MAGIC ? h->n : 0);
	}
	printf("input: 1 + %zu bytes in %u windows, %u records\n", T->windows_len, T->n_windows, T->n_recs);
}

static void setup(void)
{
	T = fuzz_blk_template();
}

int main(int argc, char **argv)
{
	static const struct fuzz_harness h = {
		.corpus = "tests/fuzz-corpus-block", .setup = setup, .make_corpus = make_corpus,
		.outcome = fuzz_blk_outcome,
	};

	if (argc == 2 && strcmp(argv[1], "--describe") == 0) {
		describe();
		return 0;
	}
	return fuzz_replay_main(&h, argc, argv);
}
