/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_block.c -- the cache on a block medium, on a file of a disk-backed
 * file system (WC_TEST_DISK_DIR, default /var/tmp: tmpfs is not a disk and
 * refuses O_DIRECT): reads equal a model through FUA and plain writes,
 * reopen, a ring that wraps many times (write-back and reclaim under
 * writers), discard, threads, a process killed with its writes
 * acknowledged, damaged records, superblock and state, and the medium
 * chosen and reported.
 */
#include <check.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "cachetest.h"
#include "testmain.h"
#include "block/format.h"
#include "core/testhooks.h"

#define BS 4096u
#define ORIGIN_BLOCKS 4096u   /* 16 MiB */
#define CACHE_BYTES (6u << 20)

static char cache_path[PATH_MAX], origin_path[PATH_MAX];
static uint64_t model[ORIGIN_BLOCKS]; /* version per block; UINT64_MAX: zero */

static void disk_path(char *out, size_t len, const char *name)
{
	const char *dir = getenv("WC_TEST_DISK_DIR");

	snprintf(out, len, "%s/wcblk-%d-%s", dir && *dir ? dir : "/var/tmp", (int)getpid(), name);
}

static void setup(void)
{
	disk_path(cache_path, sizeof(cache_path), "cache.img");
	disk_path(origin_path, sizeof(origin_path), "origin.img");
	unlink(cache_path);
	unlink(origin_path);
	{
		int fd = open(origin_path, O_RDWR | O_CREAT | O_TRUNC, 0644);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, (off_t)ORIGIN_BLOCKS * BS), 0);
		close(fd);
	}
	for (unsigned i = 0; i < ORIGIN_BLOCKS; i++)
		model[i] = UINT64_MAX;
}

static void teardown(void)
{
	unlink(cache_path);
	unlink(origin_path);
}

static void block_cfg(struct wc_config *cfg, const char *extra)
{
	char opts[256];

	wc_config_init(cfg);
	snprintf(opts, sizeof(opts), "medium=block,cache_size=%u%s%s", CACHE_BYTES, extra ? "," : "",
	         extra ? extra : "");
	ck_assert_msg(wc_config_parse(cfg, opts) == 0, "%s", wc_errmsg());
}

static wc_cache *create_block(const char *extra)
{
	struct wc_config cfg;
	wc_cache *c;

	block_cfg(&cfg, extra);
	ck_assert_msg(wc_create(&c, cache_path, origin_path, &cfg) == 0, "%s", wc_errmsg());
	return c;
}

static wc_cache *open_block(void)
{
	wc_cache *c;

	ck_assert_msg(wc_open(&c, cache_path, origin_path, NULL) == 0, "%s", wc_errmsg());
	return c;
}

static void write_blocks(wc_cache *c, uint64_t block, unsigned n, uint64_t version, unsigned flags)
{
	char *buf = aligned_alloc(4096, (size_t)n * BS);

	for (unsigned i = 0; i < n; i++) {
		ct_fill_block(buf + (size_t)i * BS, BS, block + i, version);
		model[block + i] = version;
	}
	ck_assert_msg(wc_write(c, buf, (size_t)n * BS, block * BS, flags) == (ssize_t)n * BS, "%s",
	              wc_errmsg());
	free(buf);
}

static void verify_all(wc_cache *c, const char *when)
{
	char *buf = aligned_alloc(4096, 64 * BS);

	for (unsigned b = 0; b < ORIGIN_BLOCKS; b += 64) {
		/* Odd offsets too: an unaligned buffer goes through a bounce. */
		char *dst = buf + ((b / 64) % 3 == 1 ? 8 : 0);

		ck_assert_msg(wc_read(c, dst, (size_t)(b / 64 % 3 == 1 ? 63 : 64) * BS, (uint64_t)b * BS) > 0,
		              "%s", wc_errmsg());
		for (unsigned i = 0; i < (b / 64 % 3 == 1 ? 63u : 64u); i++)
			ck_assert_msg(ct_block_is(dst + (size_t)i * BS, BS, b + i, model[b + i]) == 0,
			              "%s: block %u is not version %llu (holds %llu)", when, b + i,
			              (unsigned long long)model[b + i],
			              (unsigned long long)ct_block_version(dst + (size_t)i * BS, BS, b + i));
	}
	free(buf);
}

START_TEST(test_write_read_reopen)
{
	struct wc_stats st;
	wc_cache *c = create_block(NULL);
	uint64_t seed = 42;

	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_str_eq(st.medium, "block");
	ck_assert_str_eq(st.granularity, "block");
	for (unsigned v = 1; v <= 600; v++) {
		uint64_t b = ct_rand(&seed) % (ORIGIN_BLOCKS - 8);

		write_blocks(c, b, 1 + (unsigned)(ct_rand(&seed) % 8), v, v % 3 ? 0 : WC_FUA);
	}
	verify_all(c, "before close");
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_block();
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_str_eq(st.medium, "block");
	verify_all(c, "after reopen");
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* Many times the ring: write-back and reclaim run under the writers, and
 * reads stay right through the evictions. */
/* A create's cache_size smaller than the file already there is refused,
 * the file untouched; a create that made the file and failed removes it. */
START_TEST(test_create_size_mismatch)
{
	struct wc_config cfg;
	struct stat st;
	wc_cache *c = NULL;
	int fd = open(cache_path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)CACHE_BYTES * 2), 0);
	close(fd);
	block_cfg(&cfg, NULL);
	ck_assert_int_eq(wc_create(&c, cache_path, origin_path, &cfg), -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), "larger than cache_size"), "%s", wc_errmsg());
	ck_assert_ptr_null(c);
	ck_assert_int_eq(stat(cache_path, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)CACHE_BYTES * 2);

	ck_assert_int_eq(unlink(cache_path), 0);
	wc_config_init(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, "medium=block,cache_size=8K"), 0);
	ck_assert_int_lt(wc_create(&c, cache_path, origin_path, &cfg), 0);
	ck_assert_msg(stat(cache_path, &st) != 0 && errno == ENOENT,
	              "a failed create left %s behind", cache_path);
}
END_TEST

START_TEST(test_ring_wraps)
{
	struct wc_stats st;
	wc_cache *c = create_block("high_watermark=40,low_watermark=20");
	uint64_t seed = 7;

	for (unsigned v = 1; v <= 12000; v++) {
		uint64_t b = ct_rand(&seed) % (ORIGIN_BLOCKS - 4);

		write_blocks(c, b, 1 + (unsigned)(ct_rand(&seed) % 4), v, v % 50 ? 0 : WC_FUA);
		if (v % 3000 == 0)
			verify_all(c, "while wrapping");
	}
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_msg(st.medium_segments_reclaimed > 0, "the ring never wrapped");
	ck_assert_msg(st.writeback_bytes > 0, "nothing was written back");
	ck_assert_int_eq(wc_close(c), 0);
	c = open_block();
	verify_all(c, "after reopen");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.dirty_blocks, 0);
	ck_assert_int_eq(wc_close(c), 0);
	{
		/* The origin alone holds everything now. */
		int fd = open(origin_path, O_RDONLY);
		char *buf = aligned_alloc(4096, BS);

		for (unsigned b = 0; b < ORIGIN_BLOCKS; b++) {
			ck_assert_int_eq(pread(fd, buf, BS, (off_t)b * BS), BS);
			ck_assert_msg(ct_block_is(buf, BS, b, model[b]) == 0, "origin block %u", b);
		}
		free(buf);
		close(fd);
	}
}
END_TEST

/* A write without FUA returns with its record in flight: reading it back at
 * once must give the new data (from the record's buffer, or from the device
 * once the record completed), never the old. */
START_TEST(test_read_while_in_flight)
{
	wc_cache *c = create_block(NULL);
	char *buf = aligned_alloc(4096, 2 * BS), *back = aligned_alloc(4096, 2 * BS);
	uint64_t seed = 5;
	struct wc_stats st;

	for (uint64_t v = 1; v <= 3000; v++) {
		uint64_t b = ct_rand(&seed) % 64;

		ct_fill_block(buf, BS, b, v);
		ct_fill_block(buf + BS, BS, b + 1, v);
		ck_assert_int_eq(wc_write(c, buf, 2 * BS, b * BS, 0), (ssize_t)(2 * BS));
		ck_assert_int_eq(wc_read(c, back, 2 * BS, b * BS), (ssize_t)(2 * BS));
		ck_assert_msg(ct_block_is(back, BS, b, v) == 0 && ct_block_is(back + BS, BS, b + 1, v) == 0,
		              "block %llu read back otherwise right after its write",
		              (unsigned long long)b);
		model[b] = model[b + 1] = v;
	}
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_ge(st.medium_records, 3000);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_block();
	verify_all(c, "after reopen");
	ck_assert_int_eq(wc_close(c), 0);
	free(buf);
	free(back);
}
END_TEST

START_TEST(test_discard)
{
	wc_cache *c = create_block(NULL);

	write_blocks(c, 100, 32, 1, WC_FUA);
	write_blocks(c, 200, 8, 2, 0);
	ck_assert_int_eq(wc_discard(c, 104 * BS, 8 * BS), 0);
	for (unsigned i = 104; i < 112; i++)
		model[i] = UINT64_MAX; /* the origin's: never written */
	verify_all(c, "after discard");
	write_blocks(c, 106, 1, 3, WC_FUA);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_block();
	verify_all(c, "after reopen");
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* Writers and a discarder on the same few blocks: whatever order the cache
 * settles on while it runs is the order recovery finds (a discard hides
 * exactly the versions older than it, in DRAM as on the device). */
#define RACE_BLOCKS 64u
static atomic_bool race_stop;

static void *race_writer(void *arg)
{
	wc_cache *c = arg;
	uint64_t seed = (uint64_t)(uintptr_t)&seed;
	char *buf = aligned_alloc(4096, 4 * BS);

	for (uint64_t v = 1; !atomic_load(&race_stop); v++) {
		uint64_t b = ct_rand(&seed) % (RACE_BLOCKS - 4);
		unsigned n = 1 + (unsigned)(ct_rand(&seed) % 4);

		for (unsigned i = 0; i < n; i++)
			ct_fill_block(buf + (size_t)i * BS, BS, b + i, v);
		ck_assert_msg(wc_write(c, buf, (size_t)n * BS, b * BS, v % 3 ? 0 : WC_FUA) ==
		                      (ssize_t)n * BS, "%s", wc_errmsg());
	}
	free(buf);
	return NULL;
}

static void read_range(wc_cache *c, char *out)
{
	ck_assert_msg(wc_read(c, out, (size_t)RACE_BLOCKS * BS, 0) == (ssize_t)RACE_BLOCKS * BS, "%s",
	              wc_errmsg());
}

START_TEST(test_discard_races_writes)
{
	wc_cache *c = create_block(NULL);
	char *before = aligned_alloc(4096, (size_t)RACE_BLOCKS * BS);
	char *after = aligned_alloc(4096, (size_t)RACE_BLOCKS * BS);
	uint64_t seed = 99;
	pthread_t t[2];

	atomic_store(&race_stop, false);
	for (unsigned i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, race_writer, c), 0);
	for (unsigned i = 0; i < 400; i++) {
		uint64_t b = ct_rand(&seed) % (RACE_BLOCKS - 8);

		ck_assert_msg(wc_discard(c, b * BS, (1 + ct_rand(&seed) % 8) * BS) == 0, "%s", wc_errmsg());
	}
	atomic_store(&race_stop, true);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(wc_flush(c), 0);
	read_range(c, before);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_block();
	read_range(c, after);
	for (unsigned b = 0; b < RACE_BLOCKS; b++)
		ck_assert_msg(memcmp(before + (size_t)b * BS, after + (size_t)b * BS, BS) == 0,
		              "block %u reads otherwise after reopen", b);
	ck_assert_int_eq(wc_close(c), 0);
	free(before);
	free(after);
}
END_TEST

struct worker {
	wc_cache *c;
	unsigned id;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = 1000 + w->id;

	/* Each thread its own quarter of the origin. */
	for (unsigned v = 1; v <= 1500; v++) {
		uint64_t b = w->id * (ORIGIN_BLOCKS / 4) + ct_rand(&seed) % (ORIGIN_BLOCKS / 4 - 2);

		write_blocks(w->c, b, 1 + (unsigned)(ct_rand(&seed) % 2), v + w->id * 100000, v % 2 ? WC_FUA : 0);
	}
	return NULL;
}

START_TEST(test_threads)
{
	wc_cache *c = create_block(NULL);
	pthread_t t[4];
	struct worker w[4];

	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct worker){ c, i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	verify_all(c, "after threads");
	ck_assert_int_eq(wc_close(c), 0);
	c = open_block();
	verify_all(c, "after reopen");
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* A child writes with FUA and reports each acknowledged version, then dies
 * without closing: every acknowledged write is there at reopen. */
START_TEST(test_killed_owner)
{
	int fds[2];
	pid_t pid;
	wc_cache *c = create_block(NULL);

	ck_assert_int_eq(wc_close(c), 0);
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uint64_t seed = 99;
		wc_cache *cc;

		close(fds[0]);
		if (wc_open(&cc, cache_path, origin_path, NULL))
			_exit(2);
		for (uint64_t v = 1;; v++) {
			uint64_t b = ct_rand(&seed) % ORIGIN_BLOCKS, rec[2] = { b, v };
			char *buf = aligned_alloc(4096, BS);

			ct_fill_block(buf, BS, b, v);
			if (wc_write(cc, buf, BS, b * BS, WC_FUA) != BS)
				_exit(3);
			free(buf);
			if (write(fds[1], rec, sizeof(rec)) != sizeof(rec))
				_exit(4);
		}
	}
	close(fds[1]);
	{
		uint64_t rec[2];
		unsigned got = 0;

		while (got < 2000 && read(fds[0], rec, sizeof(rec)) == sizeof(rec)) {
			model[rec[0]] = rec[1];
			got++;
		}
		kill(pid, SIGKILL);
		while (read(fds[0], rec, sizeof(rec)) == sizeof(rec))
			model[rec[0]] = rec[1];
		close(fds[0]);
		waitpid(pid, NULL, 0);
		ck_assert_uint_ge(got, 2000);
	}
	c = open_block();
	/* A write in flight at the kill may show too: only what the child
	 * reported is known, and the model has the newest of those. */
	{
		char *buf = aligned_alloc(4096, BS);

		for (unsigned b = 0; b < ORIGIN_BLOCKS; b++) {
			uint64_t got;

			ck_assert_int_eq(wc_read(c, buf, BS, (uint64_t)b * BS), BS);
			got = ct_block_version(buf, BS, b);
			ck_assert_msg(got != UINT64_MAX - 1, "block %u is torn or misplaced", b);
			ck_assert_msg(model[b] == UINT64_MAX || (got != UINT64_MAX && got >= model[b]),
			              "block %u: acknowledged version %llu lost (holds %llu)", b,
			              (unsigned long long)model[b], (unsigned long long)got);
		}
		free(buf);
	}
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* A record whose data does not match its CRC (a torn write) never counts,
 * in a segment recovered without its summary. */
START_TEST(test_torn_record_ignored)
{
	wc_cache *c = create_block(NULL);
	struct wc_blk_sb sb;
	int fd;

	write_blocks(c, 10, 1, 1, WC_FUA);
	write_blocks(c, 10, 1, 2, WC_FUA); /* the second record of the segment */
	ck_assert_int_eq(wc_close(c), 0);
	fd = open(cache_path, O_RDWR);
	ck_assert_int_eq(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	{
		/* The first segment is number 1, in the ring's second place;
		 * the second record follows the first (a header LBA and one
		 * block). */
		uint64_t seg1 = sb.seg_start + sb.seg_bytes, second = seg1 + sb.lba_size + BS;
		char byte = 0x5a;

		/* The summary written at close names both: take it away, as
		 * a crash before it was written would have. */
		char zero[4096] = { 0 };

		ck_assert_int_eq(pwrite(fd, zero, sizeof(zero), (off_t)(seg1 + sb.seg_bytes - sb.summary_bytes)),
		                 (ssize_t)sizeof(zero));
		ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)(second + sb.lba_size + 100)), 1);
	}
	close(fd);
	model[10] = 1;
	c = open_block();
	verify_all(c, "after a torn record");
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* A segment whose records were all lost at a crash, with records after it:
 * write-back and reclaim must pass over it, or the ring fills for good. */
START_TEST(test_lost_segment_passed_over)
{
	wc_cache *c = create_block("high_watermark=40,low_watermark=20");
	struct wc_blk_sb sb;
	struct wc_stats st;
	uint64_t seed = 3;
	char *zero;
	int fd;

	for (unsigned b = 0; b < 400; b++)
		write_blocks(c, b, 1, 1, WC_FUA);
	ck_assert_int_eq(wc_close(c), 0);
	fd = open(cache_path, O_RDWR);
	ck_assert_int_eq(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	ck_assert_msg(400ull * (BS + sb.lba_size) > 2 * sb.seg_bytes, "400 records fill two segments");
	/* Segment 1 (the ring's second place) gone, summary and records. */
	zero = calloc(1, sb.seg_bytes);
	ck_assert_int_eq(pwrite(fd, zero, sb.seg_bytes, (off_t)(sb.seg_start + sb.seg_bytes)),
	                 (ssize_t)sb.seg_bytes);
	free(zero);
	close(fd);
	c = open_block();
	for (unsigned b = 0; b < 400; b++)
		write_blocks(c, b, 1, 2, 0);
	for (unsigned v = 3; v < 3000; v++)
		write_blocks(c, ct_rand(&seed) % (ORIGIN_BLOCKS - 1), 1, v, 0);
	verify_all(c, "after wrapping past a lost segment");
	ck_assert_int_eq(wc_writeback(c), 0);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_eq(st.dirty_blocks, 0);
	ck_assert_msg(st.medium_segments_reclaimed > 0, "the ring never wrapped");
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

START_TEST(test_damaged_metadata_refused)
{
	wc_cache *c = create_block(NULL);
	int fd;
	char byte = 1;

	write_blocks(c, 1, 1, 1, WC_FUA);
	ck_assert_int_eq(wc_close(c), 0);
	fd = open(cache_path, O_RDWR);
	/* block_size byte: the superblock's CRC no longer holds. */
	ck_assert_int_eq(pwrite(fd, &byte, 1, 13), 1);
	close(fd);
	ct_assert_err(wc_open(&c, cache_path, origin_path, NULL), -EBADMSG);
	ck_assert_ptr_null(c);

	/* Both state slots damaged. */
	teardown();
	setup();
	c = create_block(NULL);
	ck_assert_int_eq(wc_close(c), 0);
	fd = open(cache_path, O_RDWR);
	ck_assert_int_eq(pwrite(fd, &byte, 1, WC_BLK_STATE_OFFSET + 20), 1);
	ck_assert_int_eq(pwrite(fd, &byte, 1, WC_BLK_STATE_OFFSET + WC_BLK_UNIT + 20), 1);
	close(fd);
	ct_assert_err(wc_open(&c, cache_path, origin_path, NULL), -EBADMSG);
}
END_TEST

START_TEST(test_medium_mismatch)
{
	struct wc_config cfg;
	wc_cache *c = create_block(NULL);

	ck_assert_int_eq(wc_close(c), 0);
	wc_config_init(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, "medium=pmem"), 0);
	ct_assert_err(wc_open(&c, cache_path, origin_path, &cfg), -EINVAL);
	ct_assert_err(wc_config_parse(&cfg, "medium=ssd"), -EINVAL);
	/* A second create over it is refused. */
	block_cfg(&cfg, NULL);
	ct_assert_err(wc_create(&c, cache_path, origin_path, &cfg), -EEXIST);
}
END_TEST

/* no_threads: the host's wc_poll drives write-back and reclaim, and a
 * writer that finds the ring full does a step itself. */
START_TEST(test_no_threads)
{
	wc_cache *c = create_block("no_threads=1");
	uint64_t seed = 5;

	for (unsigned v = 1; v <= 5000; v++) {
		write_blocks(c, ct_rand(&seed) % ORIGIN_BLOCKS, 1, v, 0);
		if (v % 100 == 0)
			ck_assert_int_ge(wc_poll(c, 16), 0);
	}
	verify_all(c, "no_threads");
	ck_assert_int_eq(wc_close(c), 0);
}
END_TEST

/* Bytes of [0, size) of the file that are holes or unwritten extents;
 * -1 where the file system has no FIEMAP. */
static int64_t unwritten_bytes(const char *path, uint64_t size)
{
	const size_t q_len = sizeof(struct fiemap) + 256 * sizeof(struct fiemap_extent);
	struct fiemap *q = calloc(1, q_len);
	int fd = open(path, O_RDONLY);
	uint64_t pos = 0, bad = 0;

	ck_assert_ptr_nonnull(q);
	ck_assert_int_ge(fd, 0);
	q->fm_length = size;
	q->fm_flags = FIEMAP_FLAG_SYNC;
	q->fm_extent_count = 256;
	if (ioctl(fd, FS_IOC_FIEMAP, q) < 0) {
		close(fd);
		free(q);
		return -1;
	}
	close(fd);
	for (unsigned i = 0; i < q->fm_mapped_extents && pos < size; i++) {
		const struct fiemap_extent *e = &q->fm_extents[i];
		uint64_t hi = e->fe_logical + e->fe_length < size ? e->fe_logical + e->fe_length : size;

		if (e->fe_logical > pos)
			bad += e->fe_logical - pos;
		if (e->fe_flags & FIEMAP_EXTENT_UNWRITTEN)
			bad += hi - (e->fe_logical > pos ? e->fe_logical : pos);
		pos = hi > pos ? hi : pos;
	}
	free(q);
	return (int64_t)(bad + (size - pos));
}

/* A cache made on a preallocated (fallocate) or sparse file: its extents
 * are written at create, so no record write has to convert one (on ext4 a
 * record into an unwritten extent takes the inode exclusively and waits
 * for every write in flight). */
START_TEST(test_preallocated_file_filled)
{
	for (int sparse = 0; sparse <= 1; sparse++) {
		int fd = open(cache_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		int64_t before;
		wc_cache *c;

		ck_assert_int_ge(fd, 0);
		if (sparse)
			ck_assert_int_eq(ftruncate(fd, CACHE_BYTES), 0);
		else if (fallocate(fd, 0, 0, CACHE_BYTES)) {
			close(fd);
			continue; /* a file system without fallocate: nothing to show */
		}
		close(fd);
		before = unwritten_bytes(cache_path, CACHE_BYTES);
		if (before < 0)
			return; /* no FIEMAP here */
		ck_assert_msg(before > CACHE_BYTES / 2, "%s file: only %lld bytes unwritten before create",
		              sparse ? "sparse" : "fallocated", (long long)before);
		c = create_block(NULL);
		ck_assert_msg(unwritten_bytes(cache_path, CACHE_BYTES) == 0,
		              "%s file: %lld bytes still unwritten after create", sparse ? "sparse" : "fallocated",
		              (long long)unwritten_bytes(cache_path, CACHE_BYTES));
		write_blocks(c, 7, 2, 1, 0);
		write_blocks(c, 9, 1, 2, WC_FUA);
		verify_all(c, "preallocated");
		ck_assert_int_eq(wc_close(c), 0);
		c = open_block();
		verify_all(c, "preallocated, reopened");
		ck_assert_int_eq(wc_close(c), 0);
		unlink(cache_path);
		for (unsigned i = 0; i < ORIGIN_BLOCKS; i++)
			model[i] = UINT64_MAX;
	}
}
END_TEST

static void *nofua_writer(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = 77 + w->id;
	char *back = aligned_alloc(4096, 2 * BS);

	/* Each thread its own quarter; every write read back at once (from
	 * its record in flight, or the device). */
	for (unsigned v = 1; v <= 3000; v++) {
		uint64_t b = w->id * (ORIGIN_BLOCKS / 4) + ct_rand(&seed) % (ORIGIN_BLOCKS / 4 - 2);
		unsigned n = 1 + (unsigned)(ct_rand(&seed) % 2);
		uint64_t version = v + w->id * 100000;

		write_blocks(w->c, b, n, version, 0);
		ck_assert_int_eq(wc_read(w->c, back, (size_t)n * BS, b * BS), (ssize_t)n * BS);
		for (unsigned i = 0; i < n; i++)
			ck_assert_msg(ct_block_is(back + (size_t)i * BS, BS, b + i, version) == 0,
			              "block %llu reads otherwise right after its write",
			              (unsigned long long)(b + i));
	}
	free(back);
	return NULL;
}

/* Writers without FUA at once: their records, adjacent on the device, may
 * go as one request; each lands where its header says. */
static void concurrent_records(void)
{
	wc_cache *c = create_block(NULL);
	pthread_t t[4];
	struct worker w[4];
	struct wc_stats st;

	for (unsigned i = 0; i < 4; i++) {
		w[i] = (struct worker){ c, i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, nofua_writer, &w[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	verify_all(c, "after the writers");
	ck_assert_int_eq(wc_flush(c), 0);
	ck_assert_int_eq(wc_get_stats(c, &st), 0);
	ck_assert_uint_ge(st.medium_records, 12000);
	ck_assert_uint_ge(st.medium_record_writes, 1);
	ck_assert_uint_le(st.medium_record_writes, st.medium_records);
	ck_assert_int_eq(wc_close(c), 0);
	c = open_block();
	verify_all(c, "after reopen");
	ck_assert_int_eq(wc_close(c), 0);
}

START_TEST(test_concurrent_records)
{
	concurrent_records();
}
END_TEST

/* The same with the submitting writer leaving after one round: what it
 * leaves queued, the completion thread submits (and wc_flush waits for). */
START_TEST(test_concurrent_records_handoff)
{
	static struct wc_test_hooks one_round = { .blk_submit_rounds = 1 };

	wc_test_hooks = &one_round;
	concurrent_records();
	wc_test_hooks = NULL;
}
END_TEST

/* Write-back of a segment whose current versions are far apart (the rest
 * written again since): several reads of the device at once, each version
 * reaching the origin. */
START_TEST(test_writeback_sparse_segment)
{
	wc_cache *c = create_block("high_watermark=90,low_watermark=80");
	char *buf = aligned_alloc(4096, BS);
	int fd;

	/* 256 blocks in a row, then all but every 10th written again: the
	 * first segments keep one current version per ~46 KiB. */
	for (uint64_t b = 0; b < 256; b++)
		write_blocks(c, b, 1, 1, 0);
	for (uint64_t b = 0; b < 256; b++)
		if (b % 10)
			write_blocks(c, b, 1, 2, 0);
	write_blocks(c, 1000, 1, 3, WC_FUA);
	ck_assert_msg(wc_writeback(c) == 0, "%s", wc_errmsg());
	verify_all(c, "after write-back");
	ck_assert_int_eq(wc_close(c), 0);
	fd = open(origin_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	for (uint64_t b = 0; b <= 1000; b++) {
		if (model[b] == UINT64_MAX)
			continue;
		ck_assert_int_eq(pread(fd, buf, BS, (off_t)(b * BS)), BS);
		ck_assert_msg(ct_block_is(buf, BS, b, model[b]) == 0, "origin block %llu is not version %llu",
		              (unsigned long long)b, (unsigned long long)model[b]);
	}
	close(fd);
	free(buf);
}
END_TEST

static Suite *block_suite(void)
{
	Suite *s = suite_create("block medium");
	TCase *tc = tcase_create("block");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_write_read_reopen);
	tcase_add_test(tc, test_ring_wraps);
	tcase_add_test(tc, test_create_size_mismatch);
	tcase_add_test(tc, test_read_while_in_flight);
	tcase_add_test(tc, test_discard);
	tcase_add_test(tc, test_discard_races_writes);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_killed_owner);
	tcase_add_test(tc, test_torn_record_ignored);
	tcase_add_test(tc, test_lost_segment_passed_over);
	tcase_add_test(tc, test_damaged_metadata_refused);
	tcase_add_test(tc, test_medium_mismatch);
	tcase_add_test(tc, test_no_threads);
	tcase_add_test(tc, test_preallocated_file_filled);
	tcase_add_test(tc, test_concurrent_records);
	tcase_add_test(tc, test_concurrent_records_handoff);
	tcase_add_test(tc, test_writeback_sparse_segment);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(block_suite());
}
