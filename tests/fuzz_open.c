/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_open.c -- fuzzed recovery: the input overwrites the superblock and
 * the entries of a valid small cache image, and wc_open_origin must either
 * refuse it with a message or give a cache that reads, writes, flushes,
 * closes and reopens -- never crash, hang or trip ASan/UBSan.
 *
 * Input: byte 0 = flags, the rest overwrites the image from offset 0 (at
 * most up to the data area; a short input changes only a prefix):
 *   bit 0  recompute the superblock CRC afterwards (reach the entry checks
 *          instead of dying at the CRC)
 *   bit 1  restore magic and version afterwards, and the template's origin
 *          identity slots (reach recovery: a version-3 image without an
 *          intact identity is refused before it)
 *   bit 2  recompute the CRC of both commit records afterwards (reach the
 *          count and digest checks instead of dying at the record's CRC)
 *   bit 3  make both commit records (those with a seq) match the entries:
 *          count and digest of the entries that hold their epoch, then the
 *          CRC (reach recovery with the record's epoch committed)
 * The template (format version 3) has a valid record in slot 0 above the
 * floor: its first epoch is committed through the record alone.
 *
 * Builds:
 *  - libFuzzer (clang -fsanitize=fuzzer,...): tests/run-fuzz builds and runs it;
 *  - replay (WC_FUZZ_REPLAY, with fuzz_replay.c): a main() that runs every
 *    file of a corpus folder through the same function and prints TAP (make
 *    check), or writes the seed corpus (--make-corpus DIR).
 */
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_model.h"
#include "fault_origin.h"
#include "core/format.h"
#include "wcache.h"
#ifdef WC_FUZZ_REPLAY
#include "fuzz_replay.h"
#endif

#define BS 512u
#define CACHE_BLOCKS 8u
#define ORIGIN_BLOCKS 16u

enum { FUZZ_FIX_CRC = 1, FUZZ_FIX_MAGIC = 2, FUZZ_FIX_RECORD_CRC = 4, FUZZ_FIX_RECORDS = 8 };

static char image_path[PATH_MAX];
static uint8_t *template_img;   /* a valid image with committed and uncommitted entries */
static size_t template_len;
static size_t meta_len;         /* superblock + entries: what the input may overwrite */
static uint8_t *origin_img;
static uint8_t *io_buf;
static char last_outcome[200]; /* for the replay's TAP lines */

static void remove_image(void)
{
	unlink(image_path);
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "fuzz_open setup: %s: %d %s\n", what, ret, wc_errmsg());
	abort();
}

static int write_image(const uint8_t *img, size_t len)
{
	int fd = open(image_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, img, len);
	close(fd);
	return w == (ssize_t)len ? 0 : -EIO;
}

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
	cfg->block_size = BS;
	cfg->no_threads = true;
	cfg->autocommit_ms = 3600 * 1000;
}

/* The valid image every input starts from: blocks committed, overwritten
 * (superseded versions), and uncommitted ones, as a crash leaves them. */
static void setup(void)
{
	struct wc_layout layout;
	struct fault_origin *fo;
	struct wc_config cfg;
	wc_cache *c;
	int ret, fd;

	if (template_img)
		return;
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	/* run-fuzz points WC_FUZZ_DIR at a folder it removes even after a
	 * crash (which skips atexit). */
	snprintf(image_path, sizeof(image_path), "%s/wcfuzz-%d.cache",
	         getenv("WC_FUZZ_DIR") ? getenv("WC_FUZZ_DIR") : "/dev/shm", (int)getpid());
	atexit(remove_image);
	ret = wc_layout_for_blocks(&layout, CACHE_BLOCKS, BS);
	if (ret)
		die("layout", ret);
	template_len = layout.bytes_used;
	meta_len = layout.data_offset;
	origin_img = malloc(ORIGIN_BLOCKS * BS);
	if (posix_memalign((void **)&io_buf, 4096, ORIGIN_BLOCKS * BS) || !origin_img)
		die("malloc", -ENOMEM);
	for (unsigned b = 0; b < ORIGIN_BLOCKS; b++)
		wc_pattern_fill(origin_img + b * BS, BS, b, 0);

	fd = open(image_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)template_len) != 0)
		die("image file", -errno);
	close(fd);
	if (origin_new(&fo))
		die("origin", -ENOMEM);
	config(&cfg);
	ret = wc_create_origin(&c, image_path, fault_origin_origin(fo), &cfg);
	if (ret)
		die("wc_create_origin", ret);
	for (unsigned b = 0; b < 6; b++) {
		wc_pattern_fill(io_buf, BS, b, 1);
		if (wc_write(c, io_buf, BS, b * BS, 0) != BS)
			die("write", -EIO);
	}
	if (wc_flush(c))
		die("flush", -EIO);
	for (unsigned b = 2; b < 4; b++) {
		wc_pattern_fill(io_buf, BS, b, 2);
		if (wc_write(c, io_buf, BS, b * BS, 0) != BS)
			die("write", -EIO);
	}
	/* The file as a crash would leave it: the last writes uncommitted. */
	template_img = malloc(template_len);
	fd = open(image_path, O_RDONLY);
	if (!template_img || fd < 0 || pread(fd, template_img, template_len, 0) != (ssize_t)template_len)
		die("reading the template", -EIO);
	close(fd);
	wc_close(c);
	fault_origin_destroy(fo);
}

/* Make record slot `slot` of `img` (len bytes) say what the commit of its
 * epoch would: count and digest of the entries that hold seq - 1, over the
 * entries the superblock claims that lie inside the buffer. */
static void record_match(uint8_t *img, size_t len, unsigned slot)
{
	const struct wc_pmem_sb *sb = wc_sb(img);
	struct wc_pmem_record *r = wc_pmem_record(img, slot);
	const struct wc_pmem_entry *e = (const struct wc_pmem_entry *)(img + WC_SB_REGION);
	uint64_t n = sb->n_blocks, room = (len - WC_SB_REGION) / sizeof(*e), epoch = r->seq - 1;

	if (r->seq == 0)
		return;
	if (n > room)
		n = room;
	r->count = r->digest = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (e[i].seq != epoch)
			continue;
		r->count++;
		r->digest += wc_entry_digest(i, e[i].origin_block, epoch);
	}
	r->crc = wc_record_crc(r);
}

/* Everything a user may do with a cache that opened. */
static void exercise(wc_cache *c, struct fault_origin *fo)
{
	uint64_t size = wc_size(c), bs = wc_block_size(c), probe = 0;
	struct wc_stats st;
	wc_cache *again;
	uint64_t v = 0;
	int ret;

	/* Whatever geometry the input made acceptable: read all of it. */
	if (size > ORIGIN_BLOCKS * BS)
		size = ORIGIN_BLOCKS * BS;
	if (bs == 0 || bs > size || size % bs != 0) {
		fprintf(stderr, "fuzz_open: opened with block size %" PRIu64 " over %" PRIu64 " bytes\n",
		        bs, wc_size(c));
		abort();
	}
	if (wc_read(c, io_buf, size, 0) != (ssize_t)size) {
		wc_close(c); /* a read error is an answer, not a crash */
		return;
	}
	if (wc_get_stats(c, &st) != 0 || st.free_blocks > st.blocks || st.dirty_blocks > st.blocks) {
		fprintf(stderr, "fuzz_open: stats break invariants after open\n");
		abort();
	}
	probe = (size / bs) / 2;
	wc_pattern_fill(io_buf, (uint32_t)bs, probe, 99);
	if (wc_write(c, io_buf, bs, probe * bs, WC_FUA) != (ssize_t)bs) {
		wc_close(c);
		return;
	}
	/* Discard another block (a one-block origin has none: found by the
	 * fuzzer, the harness discarded its own probe). */
	if (probe != 0)
		wc_discard(c, 0, bs);
	wc_writeback(c);
	if (wc_close(c) != 0)
		return;
	/* A cache that opened and closed cleanly must open again, with the
	 * FUA write in it. */
	ret = wc_open_origin(&again, image_path, fault_origin_origin(fo), NULL);
	if (ret) {
		fprintf(stderr, "fuzz_open: a cache that opened and closed does not reopen: %d %s\n", ret,
		        wc_errmsg());
		abort();
	}
	if (wc_read(again, io_buf, bs, probe * bs) == (ssize_t)bs &&
	    (wc_pattern_decode(io_buf, (uint32_t)bs, probe, &v) != WC_PATTERN_OK || v != 99)) {
		fprintf(stderr, "fuzz_open: a FUA write did not survive close and reopen\n");
		abort();
	}
	wc_close(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *img;
	struct fault_origin *fo;
	struct wc_config cfg;
	wc_cache *c;
	unsigned flags;
	size_t n;
	int ret;

	setup();
	if (!img && !(img = malloc(template_len)))
		abort();
	if (size == 0)
		return 0;
	flags = data[0];
	n = size - 1 < meta_len ? size - 1 : meta_len;
	memcpy(img, template_img, template_len);
	memcpy(img, data + 1, n);
	if (flags & FUZZ_FIX_MAGIC) {
		struct wc_pmem_sb *sb = wc_sb(img);

		sb->magic = WC_MAGIC;
		sb->version = WC_FORMAT_VERSION;
		memcpy(img + WC_ORIGIN_ID_OFFSET, template_img + WC_ORIGIN_ID_OFFSET,
		       WC_ORIGIN_ID_SLOTS * sizeof(struct wc_pmem_origin_id));
	}
	if (flags & FUZZ_FIX_CRC) {
		struct wc_pmem_sb *sb = wc_sb(img);

		sb->crc = wc_sb_crc(sb);
	}
	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++) {
		if (flags & FUZZ_FIX_RECORDS)
			record_match(img, meta_len, i);
		else if (flags & FUZZ_FIX_RECORD_CRC)
			wc_pmem_record(img, i)->crc = wc_record_crc(wc_pmem_record(img, i));
	}
	if (write_image(img, template_len) != 0 || origin_new(&fo) != 0)
		abort();
	config(&cfg);
	cfg.block_size = 0; /* take the superblock's */
	ret = wc_open_origin(&c, image_path, fault_origin_origin(fo), &cfg);
	if (ret) {
		const char *msg = wc_errmsg();

		if (ret >= 0 || !msg || !msg[0]) {
			fprintf(stderr, "fuzz_open: refusal %d without a message\n", ret);
			abort();
		}
		snprintf(last_outcome, sizeof(last_outcome), "refused %d: %s", ret, msg);
	} else {
		snprintf(last_outcome, sizeof(last_outcome), "opened");
		exercise(c, fo);
	}
	fault_origin_destroy(fo);
	return 0;
}

#ifdef WC_FUZZ_REPLAY
/* ---- the plain build: replay a corpus (make check), or write one ---- */

static int save_seed(const char *dir, const char *name, unsigned flags, const uint8_t *img,
                     size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	fputc((int)flags, f);
	fwrite(img, 1, len, f);
	return fclose(f) == 0 ? 0 : -EIO;
}

/* Seeds aimed at each refusal of wc_open, at recovery's classes of entries
 * (see recover.c) and at each way a commit record can decide the commit
 * point (format.c, wc_commit_point): short where only the superblock
 * matters.  All of format version 3, from the template, except the one
 * that checks version 1 is refused. */
static int make_corpus(const char *dir)
{
	uint8_t *img;
	struct wc_pmem_sb *sb;
	struct wc_pmem_entry *e;
	struct wc_pmem_record *rec;
	struct wc_layout l;
	int ret = 0;

	setup();
	img = malloc(meta_len);
	if (!img)
		return -ENOMEM;
	mkdir(dir, 0755);
	sb = wc_sb(img);
	wc_layout_for_blocks(&l, CACHE_BLOCKS, BS);
	e = wc_pmem_entry(img, &l, 0);
	rec = wc_pmem_record(img, 0);
#define RESET() memcpy(img, template_img, meta_len)
	RESET();
	/* The record seeds below start from the template's: slot 0 valid,
	 * above the floor, slot 1 empty. */
	if (rec[0].seq == 0 || rec[0].seq <= sb->seq_count || rec[1].seq != 0) {
		fprintf(stderr, "fuzz_open: the template's records are not as the seeds expect "
		                "(floor %" PRIu64 ", slot 0 seq %" PRIu64 ", slot 1 seq %" PRIu64 ")\n",
		        sb->seq_count, rec[0].seq, rec[1].seq);
		free(img);
		return -EINVAL;
	}

	RESET();
	ret |= save_seed(dir, "valid", 0, img, meta_len);
	ret |= save_seed(dir, "valid-sb-only", 0, img, 512);
	memset(img, 0, 512);
	ret |= save_seed(dir, "never-formatted", 0, img, 512);
	RESET();
	sb->magic ^= 1;
	ret |= save_seed(dir, "bad-magic", 0, img, 512);
	RESET();
	sb->version = 7;
	ret |= save_seed(dir, "bad-version", FUZZ_FIX_CRC, img, 512);
	RESET();
	sb->n_blocks += 1;
	ret |= save_seed(dir, "bad-crc", 0, img, 512);
	RESET();
	sb->n_blocks = UINT64_MAX / 16;
	ret |= save_seed(dir, "huge-n-blocks", FUZZ_FIX_CRC, img, 512);
	RESET();
	sb->block_size = 4096;
	ret |= save_seed(dir, "other-block-size", FUZZ_FIX_CRC, img, 512);
	RESET();
	sb->block_size = 1000;
	ret |= save_seed(dir, "odd-block-size", FUZZ_FIX_CRC, img, 512);
	RESET();
	sb->data_offset = 4096 + 8;
	ret |= save_seed(dir, "misaligned-data", FUZZ_FIX_CRC, img, 512);
	RESET();
	sb->entries_offset = 1u << 30;
	ret |= save_seed(dir, "entries-past-end", FUZZ_FIX_CRC, img, 512);
	RESET();
	sb->origin_size = (uint64_t)ORIGIN_BLOCKS * BS * 2;
	ret |= save_seed(dir, "origin-too-small", FUZZ_FIX_CRC, img, 512);
	RESET();
	sb->seq_count = 0;
	memset(rec, 0, WC_RECORD_SLOTS * sizeof(*rec));
	ret |= save_seed(dir, "nothing-committed", 0, img, meta_len);
	RESET();
	sb->seq_count = 1; /* the floor above every entry's seq */
	for (unsigned i = 0; i < CACHE_BLOCKS; i++)
		if (e[i].seq != WC_NONE && e[i].seq >= sb->seq_count)
			sb->seq_count = e[i].seq + 1;
	ret |= save_seed(dir, "all-committed", 0, img, meta_len);
	RESET();
	e[1].origin_block = ORIGIN_BLOCKS;
	ret |= save_seed(dir, "entry-outside-origin", FUZZ_FIX_CRC | FUZZ_FIX_RECORDS, img, meta_len);
	RESET();
	e[1] = e[0];
	ret |= save_seed(dir, "duplicate-entry", FUZZ_FIX_CRC | FUZZ_FIX_RECORDS, img, meta_len);
	RESET();
	for (unsigned i = 0; i < CACHE_BLOCKS; i++)
		e[i].origin_block = 3;
	ret |= save_seed(dir, "one-block-everywhere", FUZZ_FIX_CRC | FUZZ_FIX_RECORDS, img, meta_len);
	RESET();
	for (unsigned i = 0; i < CACHE_BLOCKS; i++)
		e[i].seq = e[i].seq == WC_NONE ? 0 : e[i].seq;
	ret |= save_seed(dir, "free-entries-committed", FUZZ_FIX_CRC | FUZZ_FIX_RECORDS, img, meta_len);

	/* Format version 1 (seq_count alone): refused with what to do. */
	RESET();
	sb->version = 1;
	ret |= save_seed(dir, "format-version-1", FUZZ_FIX_CRC, img, 512);
	/* Found by the fuzzer (version 1 form): an origin of one block, which
	 * the harness's own discard once hit. */
	RESET();
	sb->n_blocks = 3;
	sb->origin_size = BS;
	ret |= save_seed(dir, "one-block-origin", FUZZ_FIX_CRC | FUZZ_FIX_MAGIC, img, WC_SEQ_OFFSET + 1);
	/* Found by the fuzzer (version 1 form): a floor so close to 2^64 that
	 * one commit made the image unreadable; refused at open since. */
	RESET();
	sb->seq_count = UINT64_MAX - 2;
	ret |= save_seed(dir, "seq-count-at-limit", 0, img, WC_SEQ_OFFSET + 8);

	/* The commit records.  Slot 0 holds the commit of epoch 0 (seq 1),
	 * the floor is 0: the template's committed blocks hang on it. */
	RESET();
	rec[0].crc ^= 1;
	ret |= save_seed(dir, "record-torn", 0, img, meta_len);
	RESET();
	rec[0].seq = WC_SEQ_MAX;
	rec[0].crc = wc_record_crc(&rec[0]);
	ret |= save_seed(dir, "record-seq-out-of-range", 0, img, meta_len);
	RESET();
	rec[0].count++;
	ret |= save_seed(dir, "record-count-mismatch", FUZZ_FIX_RECORD_CRC, img, meta_len);
	RESET();
	rec[0].digest ^= 1ull << 17;
	ret |= save_seed(dir, "record-digest-mismatch", FUZZ_FIX_RECORD_CRC, img, meta_len);
	RESET();
	for (unsigned i = 0; i < CACHE_BLOCKS; i++) {
		if (e[i].seq == rec[0].seq - 1) {
			e[i].seq = WC_NONE; /* one entry of the epoch did not land */
			break;
		}
	}
	ret |= save_seed(dir, "record-entry-missing", 0, img, meta_len);
	RESET();
	for (unsigned i = 0; i < CACHE_BLOCKS; i++) {
		if (e[i].seq == rec[0].seq - 1) {
			e[i].origin_block ^= 1; /* torn: another block, same count */
			break;
		}
	}
	ret |= save_seed(dir, "record-entry-torn", 0, img, meta_len);
	/* The commit of epoch 1 (the template's uncommitted writes) landed:
	 * both slots valid, the newer decides. */
	RESET();
	rec[1].seq = rec[0].seq + 1;
	ret |= save_seed(dir, "record-both-slots", FUZZ_FIX_RECORDS, img, meta_len);
	/* ... or did not: the newer does not match, the older stands in. */
	RESET();
	rec[1].seq = rec[0].seq + 1;
	rec[1].count = CACHE_BLOCKS + 1;
	ret |= save_seed(dir, "record-fallback", FUZZ_FIX_RECORD_CRC, img, meta_len);
	/* Records below the floor say nothing. */
	RESET();
	sb->seq_count = rec[0].seq + 1;
	ret |= save_seed(dir, "record-below-floor", 0, img, meta_len);
	/* No records: the floor alone. */
	RESET();
	memset(rec, 0, WC_RECORD_SLOTS * sizeof(*rec));
	ret |= save_seed(dir, "record-none", 0, img, meta_len);
	/* A valid record at the top of the seq range: the next commit would
	 * reach 2^63 (the cache must stop there, not make an unreadable image). */
	RESET();
	for (unsigned i = 0; i < CACHE_BLOCKS; i++)
		if (e[i].seq == rec[0].seq - 1)
			e[i].seq = WC_SEQ_MAX - 2;
	memset(rec, 0, WC_RECORD_SLOTS * sizeof(*rec));
	rec[(WC_SEQ_MAX - 2) % 2].seq = WC_SEQ_MAX - 1;
	ret |= save_seed(dir, "record-seq-at-limit", FUZZ_FIX_RECORDS, img, meta_len);
#undef RESET
	free(img);
	return ret ? -EIO : 0;
}

static const char *outcome(void)
{
	return last_outcome;
}

int main(int argc, char **argv)
{
	static const struct fuzz_harness h = {
		.corpus = "tests/fuzz-corpus", .setup = setup, .make_corpus = make_corpus,
		.outcome = outcome,
	};

	return fuzz_replay_main(&h, argc, argv);
}
#endif
