/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_recover.c -- recovery from hand-made images: uncommitted entries,
 * two versions of a block, duplicates, torn entries, torn and damaged
 * superblocks, and the commit records of format version 2 (a valid record
 * above the floor, one with an entry missing, a torn one, none, one below
 * the floor).  Every refusal leaves the image byte for byte as it was.
 */
#include <check.h>
#include <stdio.h>
#include <sys/mman.h>

#include "cachetest.h"
#include "testmain.h"
#include "util/crc32c.h"
#include "core/format.h"

#define BS 4096u
#define ORIGIN_BLOCKS 256u

static char cache_path[PATH_MAX], origin_path[PATH_MAX];

/* A formatted, empty cache of ~60 blocks; returns its layout. */
static void fresh_image(struct wc_layout *l)
{
	struct wc_config cfg;
	wc_cache *c;

	ct_make_file(cache_path, sizeof(cache_path), "rec.pmem", 256 << 10);
	ct_make_file(origin_path, sizeof(origin_path), "rec.origin", (uint64_t)ORIGIN_BLOCKS * BS);
	wc_config_init(&cfg);
	ck_assert_int_eq(wc_create(&c, cache_path, origin_path, &cfg), 0);
	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_int_eq(wc_layout_compute(l, 256 << 10, BS), 0);
}

static void *map_image(size_t *len)
{
	int fd = open(cache_path, O_RDWR);
	struct stat st;
	void *p;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	close(fd);
	return p;
}

static void put(void *base, const struct wc_layout *l, uint64_t idx, uint64_t origin, uint64_t seq,
                uint64_t version)
{
	struct wc_pmem_entry *e = wc_pmem_entry(base, l, idx);

	e->origin_block = origin;
	e->seq = seq;
	if (version != UINT64_MAX)
		ct_fill_block(wc_pmem_data(base, l, idx), BS, origin, version);
}

/* Store a commit record in `slot` (the commit of epoch seq - 1 writes slot
 * (seq - 1) % 2), its CRC computed. */
static void put_record(void *base, unsigned slot, uint64_t seq, uint64_t count, uint64_t digest)
{
	struct wc_pmem_record *r = wc_pmem_record(base, slot);

	memset(r, 0, sizeof(*r));
	r->seq = seq;
	r->count = count;
	r->digest = digest;
	r->crc = wc_record_crc(r);
}

/* The record the commit of `epoch` writes over the entries the image holds
 * now: every entry with seq == epoch, counted and digested. */
static void put_commit_record(void *base, const struct wc_layout *l, uint64_t epoch)
{
	uint64_t count = 0, digest = 0;

	for (uint64_t i = 0; i < l->n_blocks; i++) {
		const struct wc_pmem_entry *e = wc_pmem_entry(base, l, i);

		if (e->seq != epoch)
			continue;
		count++;
		digest += wc_entry_digest(i, e->origin_block, epoch);
	}
	put_record(base, (unsigned)(epoch % 2), epoch + 1, count, digest);
}

static bool record_erased(void *base, unsigned slot)
{
	static const struct wc_pmem_record zero;

	return memcmp(wc_pmem_record(base, slot), &zero, sizeof(zero)) == 0;
}

static wc_cache *open_ok(void)
{
	wc_cache *c = NULL;
	int ret = wc_open(&c, cache_path, origin_path, NULL);

	ck_assert_msg(ret == 0, "wc_open: %d %s", ret, wc_errmsg());
	return c;
}

static uint64_t read_version(wc_cache *c, uint64_t block)
{
	uint8_t *buf = aligned_alloc(4096, BS);
	uint64_t v;

	ck_assert_int_eq(wc_read(c, buf, BS, block * BS), BS);
	v = ct_block_version(buf, BS, block);
	free(buf);
	return v;
}

/* Open must fail with `code`, and the image must not change. */
static void open_refused(int code)
{
	size_t len;
	void *img = map_image(&len), *copy = malloc(len);
	wc_cache *c = NULL;

	memcpy(copy, img, len);
	ct_assert_err(wc_open(&c, cache_path, origin_path, NULL), code);
	ck_assert_ptr_null(c);
	ck_assert_msg(memcmp(copy, img, len) == 0, "a refused open modified the image");
	munmap(img, len);
	free(copy);
}

START_TEST(test_uncommitted_dropped)
{
	struct wc_layout l;
	size_t len;
	void *img;
	uint64_t seq;
	wc_cache *c;

	fresh_image(&l);
	img = map_image(&len);
	seq = wc_sb(img)->seq_count;
	put(img, &l, 0, 5, seq, 1);        /* written, never committed */
	put(img, &l, 1, 6, seq + 3, 1);    /* from an epoch after a lost commit */
	put(img, &l, 2, 7, seq, 1);        /* same epoch, another block */
	munmap(img, len);
	c = open_ok();
	ck_assert_uint_eq(read_version(c, 5), UINT64_MAX);
	ck_assert_uint_eq(read_version(c, 6), UINT64_MAX);
	ck_assert_uint_eq(read_version(c, 7), UINT64_MAX);
	/* a new write and commit must not resurrect the dropped entries */
	{
		uint8_t *buf = aligned_alloc(4096, BS);

		ct_fill_block(buf, BS, 9, 1);
		ck_assert_int_eq(wc_write(c, buf, BS, 9 * BS, WC_FUA), BS);
		free(buf);
	}
	ck_assert_int_eq(wc_close(c), 0);
	c = open_ok();
	ck_assert_uint_eq(read_version(c, 5), UINT64_MAX);
	ck_assert_uint_eq(read_version(c, 6), UINT64_MAX);
	ck_assert_uint_eq(read_version(c, 9), 1);
	ck_assert_int_eq(wc_close(c), 0);
	img = map_image(&len);
	ck_assert_uint_eq(wc_pmem_entry(img, &l, 1)->seq, WC_NONE);
	munmap(img, len);
}
END_TEST

START_TEST(test_newest_version_wins)
{
	struct wc_layout l;
	size_t len;
	void *img;
	wc_cache *c;
	struct wc_stats st;

	fresh_image(&l);
	img = map_image(&len);
	wc_sb(img)->seq_count = 10;
	put(img, &l, 3, 7, 3, 1);
	put(img, &l, 4, 7, 8, 2);
	put(img, &l, 5, 7, 5, 3);
	put(img, &l, 6, 8, 9, 4);
	munmap(img, len);
	c = open_ok();
	ck_assert_uint_eq(read_version(c, 7), 2);
	ck_assert_uint_eq(read_version(c, 8), 4);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.dirty_blocks, 2);
	ck_assert_uint_eq(st.free_blocks, st.blocks - 2);
	ck_assert_int_eq(wc_close(c), 0);
	img = map_image(&len);
	ck_assert_uint_eq(wc_pmem_entry(img, &l, 3)->seq, WC_NONE);
	ck_assert_uint_eq(wc_pmem_entry(img, &l, 5)->seq, WC_NONE);
	ck_assert_uint_eq(wc_pmem_entry(img, &l, 4)->seq, 8);
	munmap(img, len);
}
END_TEST

START_TEST(test_torn_entries)
{
	struct wc_layout l;
	size_t len;
	void *img;
	uint64_t seq;
	wc_cache *c;

	fresh_image(&l);
	img = map_image(&len);
	wc_sb(img)->seq_count = 4;
	seq = 4;
	put(img, &l, 0, 11, WC_NONE, 1);        /* origin landed, seq did not */
	put(img, &l, 1, WC_NONE - 5, seq, 1);   /* seq landed, origin is stale garbage */
	put(img, &l, 2, 12, 2, 1);              /* a good committed entry */
	munmap(img, len);
	c = open_ok();
	ck_assert_uint_eq(read_version(c, 11), UINT64_MAX);
	ck_assert_uint_eq(read_version(c, 12), 1);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

START_TEST(test_corrupt_entries_refused)
{
	struct wc_layout l;
	size_t len;
	void *img;

	fresh_image(&l);
	img = map_image(&len);
	wc_sb(img)->seq_count = 6;
	put(img, &l, 0, 20, 3, 1);
	put(img, &l, 9, 20, 3, 2);              /* same block, same committed seq */
	munmap(img, len);
	open_refused(-EUCLEAN);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "origin block 20"));

	fresh_image(&l);
	img = map_image(&len);
	wc_sb(img)->seq_count = 6;
	put(img, &l, 0, ORIGIN_BLOCKS, 2, UINT64_MAX); /* committed, outside the origin */
	munmap(img, len);
	open_refused(-EUCLEAN);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "beyond the origin"));
}
END_TEST

START_TEST(test_superblock_damage)
{
	struct wc_layout l;
	size_t len;
	struct wc_pmem_sb *sb;

	/* torn format: everything but the magic, which says a format ran */
	fresh_image(&l);
	sb = map_image(&len);
	sb->magic = WC_MAGIC_FORMATTING;
	munmap(sb, len);
	open_refused(-ENODATA);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "did not complete"));
	/* ... which a create then formats */
	{
		struct wc_config cfg;
		wc_cache *c;

		wc_config_init(&cfg);
		ck_assert_int_eq(wc_create(&c, cache_path, origin_path, &cfg), 0);
		ck_assert_int_eq(wc_close(c), 0);
	}
	/* The same with the magic gone: a torn format of a library before
	 * 0.7, or a superblock wiped by hand over the entries of a cache.
	 * That is not zeros: refused without force, formatted with it. */
	sb = map_image(&len);
	sb->magic = 0;
	sb->version = 0;
	munmap(sb, len);
	open_refused(-ENODATA);
	{
		struct wc_config cfg;
		wc_cache *c = NULL;

		wc_config_init(&cfg);
		ct_assert_err(wc_create(&c, cache_path, origin_path, &cfg), -EEXIST);
		ck_assert_ptr_nonnull(strstr(wc_errmsg(), "not a cache"));
		cfg.force = 1;
		ck_assert_int_eq(wc_create(&c, cache_path, origin_path, &cfg), 0);
		ck_assert_int_eq(wc_close(c), 0);
	}
	/* a static field changed behind the CRC */
	sb = map_image(&len);
	sb->n_blocks--;
	munmap(sb, len);
	open_refused(-EBADMSG);
	/* the previous format version, named with what to do */
	fresh_image(&l);
	sb = map_image(&len);
	sb->version = 1;
	munmap(sb, len);
	open_refused(-EPROTO);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "format version 1"));
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "re-create"));
	/* a later one */
	fresh_image(&l);
	sb = map_image(&len);
	sb->version = WC_FORMAT_VERSION + 1;
	munmap(sb, len);
	open_refused(-EPROTO);
	/* inconsistent geometry with a valid CRC */
	fresh_image(&l);
	sb = map_image(&len);
	sb->data_offset += 4096;
	sb->crc = wc_sb_crc(sb);
	munmap(sb, len);
	open_refused(-EUCLEAN);
	/* an absurd commit counter */
	fresh_image(&l);
	sb = map_image(&len);
	sb->seq_count = WC_NONE;
	munmap(sb, len);
	open_refused(-EUCLEAN);
}
END_TEST

/*
 * The image a commit of epoch 4 leaves when power fails around its drain:
 * floor 3; epoch 2 (block 6 v1, block 5 v1) below it; epoch 3 (block 8 v4)
 * with its record {4} in slot 1; epoch 4 (block 6 v2, block 7 v3) with its
 * record {5} in slot 0.  The callers then damage what the crash would.
 */
static void records_image(struct wc_layout *l)
{
	void *img;
	size_t len;

	fresh_image(l);
	img = map_image(&len);
	wc_sb(img)->seq_count = 3;
	put(img, l, 0, 5, 2, 1);
	put(img, l, 4, 6, 2, 1);
	put(img, l, 3, 8, 3, 4);
	put(img, l, 1, 6, 4, 2);
	put(img, l, 2, 7, 4, 3);
	put_commit_record(img, l, 3);
	put_commit_record(img, l, 4);
	munmap(img, len);
}

/* After recovery from the epoch-4 image: which versions the blocks hold. */
static void assert_blocks(wc_cache *c, bool epoch4)
{
	ck_assert_uint_eq(read_version(c, 5), 1);
	ck_assert_uint_eq(read_version(c, 8), 4);
	ck_assert_uint_eq(read_version(c, 6), epoch4 ? 2 : 1);
	ck_assert_uint_eq(read_version(c, 7), epoch4 ? 3 : UINT64_MAX);
}

/* (a) The newest record is intact, above the floor, and its entries match:
 * its epoch is committed, and recovery raises the floor to it before the
 * cache takes a write. */
START_TEST(test_record_commits_epoch)
{
	struct wc_layout l;
	size_t len;
	void *img;
	wc_cache *c;

	records_image(&l);
	c = open_ok();
	assert_blocks(c, true);
	img = map_image(&len);
	ck_assert_uint_eq(wc_sb(img)->seq_count, 5);
	ck_assert(!record_erased(img, 0)); /* the floor covers it now */
	/* the superseded v1 of block 6 is invalidated, the versions stay */
	ck_assert_uint_eq(wc_pmem_entry(img, &l, 4)->seq, WC_NONE);
	munmap(img, len);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_ok();
	assert_blocks(c, true);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* Recovery fell back from epoch 4: its blocks read as before, the record
 * that claimed it is gone, and a new commit of the same epoch number (the
 * next open starts at 4 again) cannot be mistaken for the old one. */
static void assert_fallback(const struct wc_layout *l)
{
	uint8_t *buf = aligned_alloc(4096, BS);
	size_t len;
	void *img;
	wc_cache *c;

	c = open_ok();
	assert_blocks(c, false);
	img = map_image(&len);
	ck_assert_uint_eq(wc_sb(img)->seq_count, 4);
	ck_assert_msg(record_erased(img, 0), "the record of epoch 4 survived recovery");
	ck_assert(!record_erased(img, 1));
	ck_assert_uint_eq(wc_pmem_entry(img, l, 1)->seq, WC_NONE);
	ck_assert_uint_eq(wc_pmem_entry(img, l, 2)->seq, WC_NONE);
	munmap(img, len);
	ct_fill_block(buf, BS, 9, 5);
	ck_assert_int_eq(wc_write(c, buf, BS, 9 * BS, WC_FUA), BS);
	free(buf);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_ok();
	assert_blocks(c, false);
	ck_assert_uint_eq(read_version(c, 9), 5);
	ck_assert_int_eq(wc_close(c), 0);
}

/* (b) One of the newest record's entries did not reach pmem: the count
 * does not match, the other slot's seq is the commit point. */
START_TEST(test_record_entry_missing)
{
	struct wc_layout l;
	size_t len;
	void *img;

	records_image(&l);
	img = map_image(&len);
	put(img, &l, 2, WC_NONE, WC_NONE, UINT64_MAX); /* block 7's entry was lost */
	munmap(img, len);
	assert_fallback(&l);
}
END_TEST

/* The right count, but an entry torn (its origin_block did not land): the
 * digest does not match. */
START_TEST(test_record_digest_mismatch)
{
	struct wc_layout l;
	size_t len;
	void *img;

	records_image(&l);
	img = map_image(&len);
	wc_pmem_entry(img, &l, 2)->origin_block = 9;
	munmap(img, len);
	assert_fallback(&l);
}
END_TEST

/* (c) The newest record's line is torn: its CRC fails, the other slot
 * decides even though every entry of epoch 4 is there. */
START_TEST(test_record_torn)
{
	struct wc_layout l;
	size_t len;
	void *img;

	records_image(&l);
	img = map_image(&len);
	wc_pmem_record(img, 0)->count ^= 1ull << 40; /* one word of the line is stale */
	munmap(img, len);
	assert_fallback(&l);
}
END_TEST

/* (d) No record at all: the floor is the commit point, epoch 3 and 4 are
 * dropped. */
START_TEST(test_record_none)
{
	struct wc_layout l;
	size_t len;
	void *img;
	wc_cache *c;

	records_image(&l);
	img = map_image(&len);
	memset(wc_pmem_record(img, 0), 0, WC_RECORD_SLOTS * sizeof(struct wc_pmem_record));
	munmap(img, len);
	c = open_ok();
	ck_assert_uint_eq(read_version(c, 5), 1);
	ck_assert_uint_eq(read_version(c, 6), 1);
	ck_assert_uint_eq(read_version(c, 7), UINT64_MAX);
	ck_assert_uint_eq(read_version(c, 8), UINT64_MAX);
	img = map_image(&len);
	ck_assert_uint_eq(wc_sb(img)->seq_count, 3);
	munmap(img, len);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* (e) A record below the floor says nothing, even one that would not
 * match: the floor commits its epoch and everything up to itself. */
START_TEST(test_record_below_floor)
{
	struct wc_layout l;
	size_t len;
	void *img;
	wc_cache *c;

	records_image(&l);
	img = map_image(&len);
	wc_sb(img)->seq_count = 6;
	put(img, &l, 2, WC_NONE, WC_NONE, UINT64_MAX); /* epoch 4's record no longer matches */
	munmap(img, len);
	c = open_ok();
	ck_assert_uint_eq(read_version(c, 5), 1);
	ck_assert_uint_eq(read_version(c, 6), 2);
	ck_assert_uint_eq(read_version(c, 7), UINT64_MAX);
	ck_assert_uint_eq(read_version(c, 8), 4);
	img = map_image(&len);
	ck_assert_uint_eq(wc_sb(img)->seq_count, 6);
	ck_assert(!record_erased(img, 0)); /* not above the point: left alone */
	munmap(img, len);
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* A valid record above the floor makes its epoch's duplicate committed:
 * the open is refused, and the floor is not raised (nothing written). */
START_TEST(test_record_refusal_writes_nothing)
{
	struct wc_layout l;
	size_t len;
	void *img;

	fresh_image(&l);
	img = map_image(&len);
	wc_sb(img)->seq_count = 3;
	put(img, &l, 0, 20, 3, 1);
	put(img, &l, 9, 20, 3, 2);              /* same block, same seq: corrupt */
	put(img, &l, 4, 21, 5, 1);              /* uncommitted: would be invalidated */
	put_commit_record(img, &l, 3);
	put_record(img, 0, 9, 1, 0);             /* torn (no CRC): would be erased */
	wc_pmem_record(img, 0)->crc ^= 1;
	munmap(img, len);
	open_refused(-EUCLEAN);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "origin block 20"));
	/* the same entries below the floor alone are not committed: it opens */
	img = map_image(&len);
	memset(wc_pmem_record(img, 1), 0, sizeof(struct wc_pmem_record));
	munmap(img, len);
	wc_close(open_ok());
}
END_TEST

/* The instruction against the table (RFC 3720's vectors first), at every
 * length up to a few words past 256 and every misalignment, whole and
 * chained. */
START_TEST(test_crc32c)
{
	uint8_t zeros[32] = {0}, ones[32], buf[300 + 8];
	uint32_t (*const impl[])(uint32_t, const void *, size_t) = { wc_crc32c_table, wc_crc32c_hw,
		                                                      wc_crc32c };

	memset(ones, 0xff, sizeof(ones));
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 3));
	for (unsigned k = 0; k < 3; k++) {
		ck_assert_uint_eq(impl[k](0, "123456789", 9), 0xE3069283u);
		ck_assert_uint_eq(impl[k](0, zeros, 32), 0x8A9136AAu);
		ck_assert_uint_eq(impl[k](0, ones, 32), 0x62A8AB43u);
		ck_assert_uint_eq(impl[k](0, buf, 0), 0);
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 300; len++) {
			uint32_t want = wc_crc32c_table(0, buf + off, len);
			size_t half = len / 3;

			ck_assert_msg(wc_crc32c_hw(0, buf + off, len) == want, "offset %zu length %zu", off, len);
			ck_assert_msg(wc_crc32c(0, buf + off, len) == want, "offset %zu length %zu", off, len);
			ck_assert_uint_eq(wc_crc32c(wc_crc32c(0, buf + off, half), buf + off + half, len - half),
			                  want);
		}
	if (!wc_crc32c_hw_available())
		fprintf(stderr, "check_recover: no CRC32C instruction here, the table checked alone\n");
}
END_TEST

START_TEST(test_layout_math)
{
	struct wc_layout l;

	ck_assert_int_eq(wc_layout_compute(&l, 1 << 20, 4096), 0);
	ck_assert_uint_le(l.bytes_used, 1 << 20);
	ck_assert_uint_eq(l.data_offset % 4096, 0);
	ck_assert_uint_ge(l.data_offset, l.entries_offset + l.n_blocks * 16);
	/* one more block would not fit */
	{
		struct wc_layout more;

		ck_assert_int_eq(wc_layout_for_blocks(&more, l.n_blocks + 1, 4096), 0);
		ck_assert_uint_gt(more.bytes_used, 1 << 20);
	}
	ck_assert_int_eq(wc_layout_compute(&l, 65536 * 3, 65536), 0);
	ck_assert_uint_eq(l.data_offset % 65536, 0);
	ct_assert_err(wc_layout_compute(&l, 4096 + 16 + 4096, 4096), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wc_errmsg(), "12288 bytes at least"));
	ct_assert_err(wc_layout_compute(&l, 1 << 20, 3000), -EINVAL);
	ct_assert_err(wc_layout_for_blocks(&l, UINT64_MAX / 8, 4096), -EFBIG);
	ct_assert_err(wc_layout_for_blocks(&l, 0, 4096), -EINVAL);
}
END_TEST

static Suite *recover_suite(void)
{
	Suite *s = suite_create("recover");
	TCase *tc = tcase_create("images");

	tcase_add_test(tc, test_uncommitted_dropped);
	tcase_add_test(tc, test_newest_version_wins);
	tcase_add_test(tc, test_torn_entries);
	tcase_add_test(tc, test_corrupt_entries_refused);
	tcase_add_test(tc, test_superblock_damage);
	tcase_add_test(tc, test_record_commits_epoch);
	tcase_add_test(tc, test_record_entry_missing);
	tcase_add_test(tc, test_record_digest_mismatch);
	tcase_add_test(tc, test_record_torn);
	tcase_add_test(tc, test_record_none);
	tcase_add_test(tc, test_record_below_floor);
	tcase_add_test(tc, test_record_refusal_writes_nothing);
	tcase_add_test(tc, test_crc32c);
	tcase_add_test(tc, test_layout_math);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(recover_suite());
}
