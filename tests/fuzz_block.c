/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_block.c -- fuzzed recovery of the block medium: the input overwrites
 * parts of a valid small block-medium image (superblock, state slots, the
 * heads of the identity slots, record headers and the first bytes of their
 * data, segment summaries), and wc_open_origin must either refuse it with a
 * negative errno and a message or give a cache that reads, writes, flushes,
 * writes back, closes and reopens (unless it holds forged records or
 * summaries: exercise()) -- never crash, hang or trip ASan/UBSan.
 *
 * The template: 320 KiB, 4 segments of 64 KiB with 512-byte blocks and
 * records (the smallest ring), written by a fixed workload of plain and
 * FUA writes and discards that wraps the ring (write-back,
 * reclaim, state slots of later generations) and captured while the cache
 * is open, as a crash leaves it: summarized segments and the open one
 * without summary.  Its cache_id, uuid and times are then made fixed (CRCs
 * recomputed), so the same input means the same image in every run and
 * the seeds can be kept.
 *
 * Input: byte 0 = flags, the rest overwrites the image's windows in order
 * (window_list(): superblock, state slots, identity heads, then per record
 * its header and the first data bytes, then per segment its summary head
 * and entries); a short input changes a prefix.  Flags, applied after:
 *   bit 0  recompute the superblock CRC
 *   bit 1  restore the superblock's magic and version and the identity slots
 *   bit 2  recompute both state slots' CRCs
 *   bit 3  recompute the data CRC of each windowed record (from its count)
 *   bit 4  recompute the header CRC of each windowed record
 *   bit 5  recompute each summary's CRC (when its n fits the summary)
 * so that the fuzzer reaches the checks behind each CRC.
 *
 * The device.  The file is on WC_FUZZ_DISK_DIR (run-fuzz: a folder on
 * WC_TEST_DISK_DIR, default /var/tmp), whose file system gives O_DIRECT a
 * 512-byte alignment (tmpfs states none: 4096, and 4 KiB blocks make every
 * buffer of an execution 8 times larger, slow under ASan).  The library
 * opens, sizes and locks it as usual, but its reads, writes and flushes
 * go to an image in memory through the block medium's test
 * hooks (core/testhooks.h): an execution then restores only what the input
 * and the library changed, instead of writing the whole file -- and a
 * write the library must never make aborts: past the end of the device (a
 * file would grow), or into the superblock or the unused head of the
 * device.  Only the superblock's unit is written to the file itself, for
 * the open to find the medium by the magic.
 *
 * Builds: libFuzzer (tests/run-fuzz --target block), and the replay
 * (WC_FUZZ_REPLAY, with fuzz_block_corpus.c and fuzz_replay.c: make check
 * replays tests/fuzz-corpus-block; --make-corpus DIR writes its seeds;
 * --describe prints the template).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_model.h"
#include "fault_origin.h"
#include "block/format.h"
#include "core/format.h"
#include "core/testhooks.h"
#include "util/crc32c.h"
#include "wcache.h"
#include "fuzz_block.h"

#define MAX_RECS 32u
#define REC_HEAD 112u           /* the fixed header and 8 origin numbers */
#define REC_DATA 16u            /* data bytes windowed after each header */
#define ID_HEAD 64u             /* of each identity slot: up to its id string */
#define FIXED_CACHE_ID 0x5eed0fb10c0ca5e1ull

static char image_path[PATH_MAX];
static int image_fd = -1;
static uint8_t *template_img;
static uint8_t *origin_img;
static uint8_t *io_buf;
static struct wc_blk_sb tsb;    /* the template's superblock */
static struct wc_blk_geom tg;   /* and geometry */
static struct window windows[8 + MAX_RECS * 2 + 64];
static unsigned n_windows, n_recs;
static uint64_t rec_off[MAX_RECS];
static size_t windows_len;
static char last_outcome[200];
/* The device in memory, and which of its 4 KiB units differ from the
 * template (written by the library or by the input). */
static uint8_t *dev;
static uint8_t dirty_units[IMAGE_BYTES / WC_BLK_UNIT];

#ifndef WC_FUZZ_REPLAY
#include "util/dram.h"

/* The cache's large DRAM tables (entries, buckets, free stacks): util/dram.c
 * maps each on 2 MiB huge pages; here they come from the heap (this
 * definition keeps dram.o out of the link), so that ASan knows their exact
 * bounds -- it sees nothing inside a mapping -- and an open costs no
 * mapping whose shadow ASan clears at every munmap (half the time of an
 * execution). */
void *wc_dram_table(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, bytes ? bytes : 1))
		return NULL;
	memset(p, 0, bytes);
	return p;
}

void wc_dram_table_free(void *p, size_t bytes)
{
	(void)bytes;
	free(p);
}
#endif

static void remove_image(void)
{
	unlink(image_path);
}

static void die(const char *what, long ret)
{
	fprintf(stderr, "fuzz_block setup: %s: %ld %s\n", what, ret, wc_errmsg());
	abort();
}

/* One origin for every execution (its images reloaded each time: a new one
 * each time costs more than the execution under ASan). */
static struct fault_origin *origin;

static int origin_new(struct fault_origin **fo)
{
	int ret = fault_origin_create(fo, ORIGIN_BLOCKS * BS, BS);

	if (!ret)
		ret = fault_origin_load(*fo, origin_img, ORIGIN_BLOCKS * BS, 0);
	return ret;
}

static void config(struct wc_config *cfg)
{
	wc_config_init(cfg);
	cfg->no_threads = true;
	cfg->autocommit_ms = 3600 * 1000;
	cfg->max_age_ms = 0;
}

static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void add_window(uint64_t off, uint32_t len)
{
	windows[n_windows++] = (struct window){ off, len };
	windows_len += len;
}

/* ---- the device in memory ---- */

static bool in_device(uint64_t off, size_t len)
{
	return off <= IMAGE_BYTES && len <= IMAGE_BYTES - off;
}

static void mark(uint64_t off, size_t len)
{
	for (uint64_t u = off / WC_BLK_UNIT; len && u <= (off + len - 1) / WC_BLK_UNIT; u++)
		dirty_units[u] = 1;
}

static int dev_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	(void)ctx;
	if (!in_device(off, len))
		return -EIO; /* what a file says past its end */
	memcpy(buf, dev + off, len);
	return 0;
}

static int dev_pwrite(void *ctx, const void *buf, size_t len, uint64_t off, bool dsync)
{
	(void)ctx;
	(void)dsync;
	if (!in_device(off, len)) {
		fprintf(stderr, "fuzz_block: the library wrote %zu bytes at %" PRIu64 ", past the end "
		        "of the %u-byte device\n", len, off, IMAGE_BYTES);
		abort();
	}
	/* Outside the ring, only the state and identity slots are written
	 * once a cache exists. */
	if (off < tg.seg_start &&
	    !(off >= WC_BLK_STATE_OFFSET && off + len <= WC_BLK_STATE_OFFSET + 2 * WC_BLK_UNIT) &&
	    !(off >= WC_BLK_ID_OFFSET && off + len <= WC_BLK_ID_OFFSET + 2 * WC_BLK_UNIT)) {
		fprintf(stderr, "fuzz_block: the library wrote %zu bytes at %" PRIu64 ", outside the "
		        "state and identity slots of the device's head\n", len, off);
		abort();
	}
	memcpy(dev + off, buf, len);
	mark(off, len);
	return 0;
}

static int dev_flush(void *ctx)
{
	(void)ctx;
	return 0;
}

static const struct wc_blk_io_hooks dev_io = {
	.pwrite = dev_pwrite, .pread = dev_pread, .flush = dev_flush,
};
static struct wc_test_hooks hooks = { .blk_io = &dev_io };

/* ---- the template ---- */

static void set_rec_crc(uint8_t *img, uint64_t off)
{
	struct wc_blk_rec *r = (struct wc_blk_rec *)(img + off);

	r->crc = wc_blk_rec_crc(r, tg.lba);
}

static void set_sum_crc(uint8_t *img, uint64_t seg_slot)
{
	struct wc_blk_sum_head *h =
		(struct wc_blk_sum_head *)(img + tg.seg_start + seg_slot * tg.seg_bytes + tg.seg_data_bytes);

	if (h->n <= tg.sum_cap)
		h->crc = wc_blk_sum_crc(h, (const struct wc_blk_sum_ent *)(h + 1));
}

/* Fixed identity and times, so that the template is the same bytes in
 * every run (the records and summaries name the cache_id). */
static void normalize(uint8_t *img)
{
	struct wc_blk_sb *sb = (struct wc_blk_sb *)img;
	uint64_t old = sb->cache_id;

	memset(sb->uuid, 0x5e, sizeof(sb->uuid));
	sb->cache_id = FIXED_CACHE_ID;
	sb->format_time = 0;
	sb->crc = wc_blk_sb_crc(sb);
	for (unsigned i = 0; i < 2; i++) {
		struct wc_blk_state *st = (struct wc_blk_state *)(img + WC_BLK_STATE_OFFSET + i * WC_BLK_UNIT);
		struct wc_pmem_origin_id *id = (struct wc_pmem_origin_id *)(img + WC_BLK_ID_OFFSET +
		                                                            i * WC_BLK_UNIT);

		if (st->magic == WC_BLK_STATE_MAGIC) {
			st->time = 0;
			st->crc = wc_blk_state_crc(st);
		}
		if (id->magic == WC_ORIGIN_ID_MAGIC) {
			id->time = 0;
			id->crc = wc_origin_id_crc(id);
		}
	}
	for (uint64_t s = 0; s < tg.n_segments; s++) {
		uint8_t *seg = img + tg.seg_start + s * tg.seg_bytes;
		struct wc_blk_sum_head *h = (struct wc_blk_sum_head *)(seg + tg.seg_data_bytes);

		for (uint64_t pos = 0; pos + tg.lba <= tg.seg_data_bytes; pos += tg.lba) {
			struct wc_blk_rec *r = (struct wc_blk_rec *)(seg + pos);

			if (r->magic == WC_BLK_REC_MAGIC && r->cache_id == old &&
			    r->crc == wc_blk_rec_crc(r, tg.lba)) {
				r->cache_id = FIXED_CACHE_ID;
				r->crc = wc_blk_rec_crc(r, tg.lba);
			}
		}
		if (h->magic == WC_BLK_SUM_MAGIC && h->cache_id == old) {
			h->cache_id = FIXED_CACHE_ID;
			set_sum_crc(img, s);
		}
	}
}

/* Where the input goes: the fixed parts, then valid records of the
 * template (a share per segment, in ring order from the tail of the state
 * in force), then each segment's summary. */
static void window_list(void)
{
	const struct wc_blk_state *slots[2] = {
		(const void *)(template_img + WC_BLK_STATE_OFFSET),
		(const void *)(template_img + WC_BLK_STATE_OFFSET + WC_BLK_UNIT),
	};
	int cur = wc_blk_state_current(slots);
	uint64_t tail = cur < 0 ? 0 : slots[cur]->tail_seg;

	add_window(0, WC_BLK_SB_CRC_END + 8);
	add_window(WC_BLK_STATE_OFFSET, sizeof(struct wc_blk_state));
	add_window(WC_BLK_STATE_OFFSET + WC_BLK_UNIT, sizeof(struct wc_blk_state));
	add_window(WC_BLK_ID_OFFSET, ID_HEAD);
	add_window(WC_BLK_ID_OFFSET + WC_BLK_UNIT, ID_HEAD);
	for (uint64_t k = 0; k < tg.n_segments; k++) {
		uint64_t s = (tail + k) % tg.n_segments, base = tg.seg_start + s * tg.seg_bytes, pos = 0;
		unsigned quota = n_recs + (MAX_RECS - n_recs) / (unsigned)(tg.n_segments - k);

		while (pos + tg.lba <= tg.seg_data_bytes && n_recs < quota) {
			const struct wc_blk_rec *r = (const void *)(template_img + base + pos);

			if (r->magic != WC_BLK_REC_MAGIC || r->cache_id != FIXED_CACHE_ID ||
			    !wc_blk_rec_valid(r, tg.lba, tg.block_size, FIXED_CACHE_ID, r->seg,
			                      tg.seg_data_bytes - pos, (const uint8_t *)r + tg.lba)) {
				pos += tg.lba;
				continue;
			}
			rec_off[n_recs++] = base + pos;
			add_window(base + pos, REC_HEAD);
			if (r->count)
				add_window(base + pos + tg.lba, REC_DATA);
			pos += tg.lba + (uint64_t)r->count * tg.block_size;
		}
	}
	for (uint64_t s = 0; s < tg.n_segments; s++)
		add_window(tg.seg_start + s * tg.seg_bytes + tg.seg_data_bytes,
		           (uint32_t)(sizeof(struct wc_blk_sum_head) + tg.sum_cap * sizeof(struct wc_blk_sum_ent)));
}

static void write_blocks(wc_cache *c, uint64_t first, unsigned n, uint64_t version, unsigned flags)
{
	for (unsigned i = 0; i < n; i++)
		wc_pattern_fill(io_buf + (size_t)i * BS, BS, first + i, version);
	if (wc_write(c, io_buf, (size_t)n * BS, first * BS, flags) != (ssize_t)(n * BS))
		die("template write", -EIO);
}

/* The valid image every input starts from. */
static void setup(void)
{
	struct fault_origin *fo;
	struct wc_config cfg;
	const char *dir;
	char opts[64];
	uint64_t rng = 1;
	wc_cache *c;
	int ret;

	if (template_img)
		return;
	dir = getenv("WC_FUZZ_DISK_DIR");
	if (!dir || !*dir)
		dir = getenv("WC_TEST_DISK_DIR");
	snprintf(image_path, sizeof(image_path), "%s/wcfuzzblk-%d.cache", dir && *dir ? dir : "/var/tmp",
	         (int)getpid());
	unlink(image_path);
	atexit(remove_image);
	origin_img = malloc(ORIGIN_BLOCKS * BS);
	template_img = malloc(IMAGE_BYTES);
	if (posix_memalign((void **)&io_buf, 4096, ORIGIN_BLOCKS * BS) || !origin_img || !template_img)
		die("malloc", -ENOMEM);
	for (unsigned b = 0; b < ORIGIN_BLOCKS; b++)
		wc_pattern_fill(origin_img + b * BS, BS, b, 0);
	if (origin_new(&fo))
		die("origin", -ENOMEM);
	config(&cfg);
	snprintf(opts, sizeof(opts), "medium=block,block_size=%u,cache_size=%u", BS, IMAGE_BYTES);
	if (wc_config_parse(&cfg, opts))
		die("config", -EINVAL);
	ret = wc_create_origin(&c, image_path, fault_origin_origin(fo), &cfg);
	if (ret)
		die("wc_create_origin", ret);
	/* Enough records to wrap the ring of ~160 once: write-back and
	 * reclaim run (the writer drives them, no_threads), the state moves on. */
	for (unsigned op = 1; op <= 260; op++) {
		uint64_t first = rng_next(&rng) % (ORIGIN_BLOCKS - 3), r = rng_next(&rng) % 10;
		unsigned n = 1 + (unsigned)(rng_next(&rng) % 3);

		if (r == 0) {
			if (wc_discard(c, first * BS, (uint64_t)n * BS))
				die("template discard", -EIO);
		} else {
			write_blocks(c, first, n, op, r < 3 ? WC_FUA : 0);
		}
		if (op % 12 == 0)
			wc_poll(c, 16);
	}
	/* The file as a crash would leave it. */
	image_fd = open(image_path, O_RDWR | O_CLOEXEC);
	if (image_fd < 0 || pread(image_fd, template_img, IMAGE_BYTES, 0) != (ssize_t)IMAGE_BYTES)
		die("reading the template", -errno);
	wc_close(c);
	origin = fo;
	memcpy(&tsb, template_img, sizeof(tsb));
	wc_blk_geom_from_sb(&tg, &tsb);
	if (tsb.magic != WC_BLK_MAGIC || tg.seg_start + tg.n_segments * tg.seg_bytes != IMAGE_BYTES ||
	    tg.lba != BS)
		die("the template is not a block-medium image of the expected size and logical block "
		    "(is WC_FUZZ_DISK_DIR on tmpfs?)", -EINVAL);
	normalize(template_img);
	window_list();
	dev = malloc(IMAGE_BYTES);
	if (!dev)
		die("malloc", -ENOMEM);
	memcpy(dev, template_img, IMAGE_BYTES);
	if (pwrite(image_fd, template_img, IMAGE_BYTES, 0) != (ssize_t)IMAGE_BYTES)
		die("writing the template", -errno);
	wc_test_hooks = &hooks;
}

/* ---- one input ---- */

static void fix_data_crc(uint8_t *img, uint64_t off)
{
	struct wc_blk_rec *r = (struct wc_blk_rec *)(img + off);
	uint64_t len = (uint64_t)r->count * tg.block_size;

	if (r->count && r->count <= WC_BLK_REC_MAX_BLOCKS && off + tg.lba + len <= IMAGE_BYTES)
		r->data_crc = wc_crc32c(0, img + off + tg.lba, len);
}

/* The device as the input makes it: the template where the last execution
 * or input changed it, then the windows and the fixes.  Every unit changed
 * is marked, to be restored next time. */
static void apply(const uint8_t *data, size_t size)
{
	unsigned flags = data[0];
	size_t at = 1;

	for (unsigned u = 0; u < IMAGE_BYTES / WC_BLK_UNIT; u++) {
		if (dirty_units[u]) {
			memcpy(dev + (size_t)u * WC_BLK_UNIT, template_img + (size_t)u * WC_BLK_UNIT,
			       WC_BLK_UNIT);
			dirty_units[u] = 0;
		}
	}
	for (unsigned i = 0; i < n_windows && at < size; i++) {
		size_t n = size - at < windows[i].len ? size - at : windows[i].len;

		memcpy(dev + windows[i].off, data + at, n);
		mark(windows[i].off, n);
		at += n;
	}
	if (flags & FIX_MAGIC) {
		struct wc_blk_sb *sb = (struct wc_blk_sb *)dev;

		sb->magic = WC_BLK_MAGIC;
		sb->version = WC_BLK_VERSION;
		memcpy(dev + WC_BLK_ID_OFFSET, template_img + WC_BLK_ID_OFFSET, 2 * WC_BLK_UNIT);
		mark(0, WC_BLK_UNIT);
	}
	for (unsigned i = 0; i < n_recs; i++) {
		if (flags & FIX_DATA_CRC)
			fix_data_crc(dev, rec_off[i]);
		if (flags & FIX_REC_CRC)
			set_rec_crc(dev, rec_off[i]);
		if (flags & (FIX_DATA_CRC | FIX_REC_CRC))
			mark(rec_off[i], WC_BLK_REC_FIXED);
	}
	if (flags & FIX_SUM_CRC)
		for (uint64_t s = 0; s < tg.n_segments; s++) {
			set_sum_crc(dev, s);
			mark(tg.seg_start + s * tg.seg_bytes + tg.seg_data_bytes, sizeof(struct wc_blk_sum_head));
		}
	if (flags & FIX_STATE_CRC)
		for (unsigned i = 0; i < 2; i++) {
			struct wc_blk_state *st =
				(struct wc_blk_state *)(dev + WC_BLK_STATE_OFFSET + i * WC_BLK_UNIT);

			st->crc = wc_blk_state_crc(st);
			mark(WC_BLK_STATE_OFFSET + i * WC_BLK_UNIT, sizeof(*st));
		}
	if (flags & FIX_SB_CRC) {
		struct wc_blk_sb *sb = (struct wc_blk_sb *)dev;

		sb->crc = wc_blk_sb_crc(sb);
		mark(0, WC_BLK_UNIT);
	}
}

/* Everything a user may do with a cache that opened. */
static void exercise(wc_cache *c, struct fault_origin *fo, unsigned flags)
{
	uint64_t size = wc_size(c), bs = wc_block_size(c), probe;
	struct wc_stats st;
	wc_cache *again;
	uint64_t v = 0;
	int ret;

	if (size > ORIGIN_BLOCKS * BS)
		size = ORIGIN_BLOCKS * BS;
	if (bs == 0 || bs > size || size % bs != 0) {
		fprintf(stderr, "fuzz_block: opened with block size %" PRIu64 " over %" PRIu64 " bytes\n",
		        bs, wc_size(c));
		abort();
	}
	if (wc_get_stats(c, &st) != 0 || strcmp(st.medium, "block") != 0 ||
	    st.free_blocks > st.blocks || st.dirty_blocks > st.blocks) {
		fprintf(stderr, "fuzz_block: stats break invariants after open\n");
		abort();
	}
	if (wc_read(c, io_buf, size, 0) != (ssize_t)size) {
		wc_close(c); /* a read error is an answer, not a crash */
		return;
	}
	probe = (size / bs) / 2;
	wc_pattern_fill(io_buf, (uint32_t)bs, probe, 1u << 20);
	if (wc_write(c, io_buf, bs, probe * bs, WC_FUA) != (ssize_t)bs) {
		wc_close(c);
		return;
	}
	if (probe != 0)
		wc_discard(c, 0, bs);
	wc_writeback(c);
	if (wc_close(c) != 0)
		return;
	/* A cache that opened and closed cleanly must open again, with the
	 * FUA write in it. */
	ret = wc_open_origin(&again, image_path, fault_origin_origin(fo), NULL);
	/* Except: a record or summary forged with a valid CRC may name a
	 * segment of the ring the first open had no reason to read (beyond
	 * the open limit, a later lap) and that the writes since reached; it
	 * counts then, and its numbers can be out of place.  A device never
	 * holds one: a segment is opened only under a durable open limit, and
	 * segment numbers are never reused. */
	if (ret == -EUCLEAN && (flags & (FIX_REC_CRC | FIX_SUM_CRC)))
		return;
	if (ret) {
		fprintf(stderr, "fuzz_block: a cache that opened and closed does not reopen: %d %s\n", ret,
		        wc_errmsg());
		abort();
	}
	/* The same goes for the FUA write: a forged state can put the open
	 * limit below a segment holding records of the template, whose
	 * higher seqs then win over it once the writes reach that segment --
	 * but every block is then still a whole pattern of its own; forged
	 * records or summaries can make it anything. */
	if (wc_read(again, io_buf, bs, probe * bs) == (ssize_t)bs &&
	    !(flags & (FIX_REC_CRC | FIX_SUM_CRC)) &&
	    (wc_pattern_decode(io_buf, (uint32_t)bs, probe, &v) != WC_PATTERN_OK ||
	     (v != 1u << 20 && !(flags & FIX_STATE_CRC)))) {
		fprintf(stderr, "fuzz_block: a FUA write did not survive close and reopen\n");
		abort();
	}
	wc_close(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fault_origin *fo;
	struct wc_config cfg;
	wc_cache *c;
	int ret;

	setup();
	if (size == 0)
		return 0;
	apply(data, size);
	/* The file's own superblock: the open picks the medium by its magic. */
	if (pwrite(image_fd, dev, WC_BLK_UNIT, 0) != (ssize_t)WC_BLK_UNIT ||
	    fault_origin_load(origin, origin_img, ORIGIN_BLOCKS * BS, 0) != 0)
		abort();
	fo = origin;
	config(&cfg);
	cfg.block_size = 0; /* take the superblock's */
	ret = wc_open_origin(&c, image_path, fault_origin_origin(fo), &cfg);
	if (ret) {
		const char *msg = wc_errmsg();

		if (ret >= 0 || !msg || !msg[0]) {
			fprintf(stderr, "fuzz_block: refusal %d without a message\n", ret);
			abort();
		}
		snprintf(last_outcome, sizeof(last_outcome), "refused %d: %s", ret, msg);
	} else {
		snprintf(last_outcome, sizeof(last_outcome), "opened");
		exercise(c, fo, data[0]);
	}
	return 0;
}

const struct fuzz_blk_template *fuzz_blk_template(void)
{
	static struct fuzz_blk_template t;

	setup();
	t = (struct fuzz_blk_template){ .img = template_img, .g = tg, .windows = windows,
	                                .n_windows = n_windows, .windows_len = windows_len,
	                                .rec_off = rec_off, .n_recs = n_recs };
	return &t;
}

const char *fuzz_blk_outcome(void)
{
	return last_outcome;
}
