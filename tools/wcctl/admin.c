/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * admin.c -- the subcommands that go through the library: `wcctl create`,
 * `wcctl status` and `wcctl writeback` (and `wcctl set-origin`, in
 * set_origin.c).
 *
 * The library lives in the caller's process, so unlike dmsetup there is no
 * running target to ask: status and writeback open the cache (which runs
 * recovery), act, and close it.  A cache another process holds is never
 * opened: the library's lock refuses create and writeback with -EBUSY, and
 * status reads the image read-only instead (status_live).  Both open it with no_threads, so nothing
 * happens behind their back: status sees the image exactly as recovery
 * left it, and writeback drives every round itself, which is what lets it
 * draw an honest progress bar.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "wcctl.h"

/* The superblock as the file holds it now (after wc_close). */
static bool read_sb(const char *path, struct wcadm_image *img)
{
	int ret = wcadm_image_open(img, path);

	if (img->fd >= 0)
		wcadm_image_close(img);
	return ret == 0;
}

/* The superblock and the commit point (floor, records) as the file holds
 * them now; the values stay in *img after it is closed. */
static bool read_commit(const char *path, struct wcadm_image *img)
{
	int ret = wcadm_image_open(img, path);

	if (!ret)
		ret = wcadm_image_commit(img);
	if (img->fd >= 0)
		wcadm_image_close(img);
	return ret == 0;
}

static void create_usage(FILE *f)
{
	fprintf(f,
	        "usage: wcctl create CACHE ORIGIN [--options STRING] [--size BYTES] [--force]\n"
	        "Format CACHE (a file on pmem/DAX, /dev/shm for development, or with\n"
	        "medium=auto or medium=block a disk file or device: the block medium) as a new\n"
	        "cache in front of ORIGIN: a file, a block device or an NBD URI\n"
	        "(nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT?socket=PATH).  Refuses a CACHE\n"
	        "that already holds a valid cache, and one whose first MiB holds anything but\n"
	        "zeros (data that is not a cache, a damaged cache) unless --force.\n\n"
	        "  --options S  configuration, \"key=value,...\" (block_size=4096, high_watermark,\n"
	        "               low_watermark, writeback_jobs, autocommit_blocks, autocommit_ms,\n"
	        "               max_age_ms, cleaner, fua, pmem_threshold, pmem_force, ...;\n"
	        "               see libwcache(3))\n"
	        "  --size B     create CACHE, or grow it, to B bytes\n"
	        "  --force      format CACHE even if it holds data that is not a cache (never\n"
	        "               over a valid cache: remove that first)\n"
	        "  --help\n\n"
	        WCT_SIZE_HELP);
}

int wcctl_create(int argc, char **argv)
{
	const char *cmd = argv[0], *options = NULL, *size = NULL, *cache, *origin;
	struct wc_config cfg;
	struct wcadm_image img;
	struct wc_stats st;
	wc_cache *c;
	char s1[32], s2[32], uuid[40], granularity[16], idbuf[1024], reason[256];
	bool block, force = false;
	uint32_t bs;
	uint64_t addressable;
	const struct wct_opt opts[] = {
		WCT_OPT_STR("options", &options),
		WCT_OPT_STR("size", &size),
		WCT_OPT_FLAG("force", &force),
		WCT_OPT_END,
	};
	int ret;

	ret = wcctl_options(cmd, opts, argc, argv, create_usage, 2, "CACHE ORIGIN");
	if (!ret)
		ret = wcctl_config(&cfg, cmd, options, size, false);
	if (ret)
		return ret;
	cache = argv[optind];
	origin = argv[optind + 1];
	if (force)
		cfg.force = 1;

	ret = wc_create(&c, cache, origin, &cfg);
	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	wc_get_stats(c, &st);
	snprintf(granularity, sizeof(granularity), "%s", st.granularity); /* outlives wc_close */
	snprintf(reason, sizeof(reason), "%s", st.medium_reason);
	st.medium_reason = reason;
	block = !strcmp(st.medium, "block");
	bs = wc_block_size(c);
	addressable = wc_size(c);
	ret = wc_close(c);
	if (ret) {
		fprintf(stderr, "%s: close: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	if (block)
		return wcctl_blk_created(cmd, cache, origin, &st, bs, addressable);
	if (!read_sb(cache, &img)) {
		fprintf(stderr, "%s: created, but reading it back failed: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	printf("created %s in front of %s\n", cache, origin);
	printf("  blocks         %" PRIu64 "\n", st.blocks);
	printf("  block size     %u\n", bs);
	printf("  cache data     %s\n", wct_size_str(s1, sizeof(s1), st.blocks * (uint64_t)bs));
	printf("  entries at     %" PRIu64 "\n", img.layout.entries_offset);
	printf("  data offset    %" PRIu64 "\n", img.layout.data_offset);
	printf("  bytes used     %" PRIu64 " of %" PRIu64 "\n", img.layout.bytes_used,
	       img.file_size);
	printf("  origin         %s (%" PRIu64 " blocks)\n",
	       wct_size_str(s2, sizeof(s2), addressable), addressable / bs);
	printf("  origin id      %s\n", wcctl_identity_str(idbuf, sizeof(idbuf), &img));
	printf("  uuid           %s\n", wcctl_uuid_str(uuid, sizeof(uuid), img.sb.uuid));
	printf("  medium         pmem: %s\n", reason);
	printf("  granularity    %s\n", granularity);
	/* dm-writecache budgets 88 B of DRAM per block (lvm2). */
	printf("  DRAM estimate  %s for metadata (%.1f B per block)\n",
	       wct_size_str(s1, sizeof(s1), st.dram_bytes),
	       st.blocks ? (double)st.dram_bytes / (double)st.blocks : 0.0);
	return WCCTL_OK;
}

static void status_usage(FILE *f)
{
	fprintf(f,
	        "usage: wcctl status CACHE ORIGIN [--options STRING] [--json]\n"
	        "Open the cache in front of ORIGIN (a file, block device or NBD URI; running\n"
	        "recovery), print dm-writecache's status line:\n"
	        "  error blocks free under_writeback reads read_hits writes\n"
	        "  write_hits_uncommitted write_hits_committed writes_around writes_allocate\n"
	        "  writes_blocked_on_freelist flushes discards\n"
	        "and a readable view, then close it.  The I/O counters count since this\n"
	        "open, so they are zero here; blocks, free and error describe the image.\n"
	        "The view shows the commit point (floor, both commit records) the image\n"
	        "had before the open and has after the close.\n"
	        "A cache in use by another process (or handle) is not opened: the view is\n"
	        "read from the image without writing it, says \"state live, in use by pid\n"
	        "N\" (when the pid can be known) and has no status line; exit 0.\n\n"
	        "  --options S  configuration for the open (e.g. pmem_force=nt)\n"
	        "  --json       one JSON object instead\n"
	        "  --help\n");
}

static const char *status_line(char *buf, size_t len, const struct wc_stats *st)
{
	snprintf(buf, len, "%d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	       " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
	       st->error, st->blocks, st->free_blocks, st->writeback_blocks, st->reads,
	       st->read_hits, st->writes, st->write_hits_uncommitted, st->write_hits_committed,
	       st->writes_around, st->writes_allocate, st->writes_blocked_on_freelist,
	       st->flushes, st->discards);
	return buf;
}

static void threshold_str(char *buf, size_t len, size_t t)
{
	if (t == SIZE_MAX)
		snprintf(buf, len, "none (non-temporal at every size)");
	else
		snprintf(buf, len, "%zu", t);
}

struct status_view {
	const char *cache, *origin;
	struct wc_stats st;
	uint32_t block_size;
	uint64_t size;
	struct wc_pmem_info pmem;
	const char *pmem_source;
	struct wcadm_image img;        /* after wc_close */
	bool sb_ok;
	struct wcadm_image before;     /* before wc_open: what recovery started from */
	bool before_ok;
	/* st.granularity and st.origin_mode point into the cache: copies
	 * that outlive wc_close */
	char granularity[16], origin_mode[512], origin_identity[1024], medium_reason[256];
};

/*
 * One schema, opened or live (a program reading it sees the same keys
 * whether or not another process holds the cache): a cache open elsewhere
 * is read from the image, without recovery or a byte written, and what
 * only its owner knows -- the status line, the counters since its open,
 * its sticky error, the free count it keeps, the medium's reason, the
 * mapping, the flush policy in force -- is null; after an open of our own,
 * what only a read of a live image gives (its holder, its entries as of
 * the read) is null.  `live` is that image, or NULL.
 */
static void status_json(const struct status_view *v, const struct wcadm_image *live)
{
	const struct wcadm_image *img = live ? live : v->sb_ok ? &v->img : NULL;
	const struct wc_stats *st = live ? NULL : &v->st;
	char uuid[40], line[1024];
	struct wct_json j;

	wct_json_init(&j, stdout);
	wct_json_object(&j, NULL, true);
	wct_json_str(&j, "cache", v->cache);
	wct_json_str(&j, "origin", v->origin);
	wct_json_str(&j, "medium", "pmem");
	wct_json_str(&j, "medium_reason", live ? NULL : v->medium_reason);
	if (live) {
		wcctl_json_live(&j, live);
		wct_json_str(&j, "holder", wcctl_live_str(line, sizeof(line), live));
	} else {
		wct_json_bool(&j, "live", false);
		wct_json_null(&j, "in_use_by");
		wct_json_null(&j, "holder");
	}
	wct_json_str(&j, "status_line", st ? status_line(line, sizeof(line), st) : NULL);
	if (st)
		wct_json_int(&j, "error", st->error);
	else
		wct_json_null(&j, "error");
	wct_json_u64(&j, "blocks", live ? live->sb.n_blocks : st->blocks);
#define M(name, field) (st ? wct_json_u64(&j, name, st->field) : wct_json_null(&j, name))
	M("free", free_blocks); M("under_writeback", writeback_blocks);
	M("reads", reads); M("read_hits", read_hits); M("writes", writes);
	M("write_hits_uncommitted", write_hits_uncommitted);
	M("write_hits_committed", write_hits_committed); M("writes_around", writes_around);
	M("writes_allocate", writes_allocate);
	M("writes_blocked_on_freelist", writes_blocked_on_freelist); M("flushes", flushes);
	M("discards", discards);
	/* Live: the image's committed entries, as of this read. */
	if (live)
		wct_json_u64(&j, "dirty_blocks", live->n_committed);
	else
		M("dirty_blocks", dirty_blocks);
	M("commits", commits);
	M("writeback_ios", writeback_ios); M("writeback_bytes", writeback_bytes);
	M("writeback_errors", writeback_errors); M("dram_bytes", dram_bytes);
	M("writeback_window", writeback_window); M("writeback_latency_us", writeback_latency_us);
	M("writeback_failing_ms", writeback_failing_ms);
#undef M
	if (st)
		wct_json_int(&j, "writeback_last_error", st->writeback_last_error);
	else
		wct_json_null(&j, "writeback_last_error");
	wct_json_u64(&j, "block_size", live ? live->sb.block_size : v->block_size);
	wct_json_u64(&j, "size", live ? wcadm_image_origin_size(live) : v->size);
	wct_json_str(&j, "granularity", st ? st->granularity : NULL);
	wct_json_str(&j, "origin_mode", st ? st->origin_mode : NULL);
	wct_json_str(&j, "origin_identity", st ? st->origin_identity
	                                       : wcctl_identity_str(line, sizeof(line), live));
	wct_json_str(&j, "uuid", img ? wcctl_uuid_str(uuid, sizeof(uuid), img->sb.uuid) : NULL);
	wct_json_u64(&j, "seq_count", img ? img->sb.seq_count : 0);
	wct_json_u64(&j, "format_time", img ? img->sb.format_time : 0);
	if (img)
		wcctl_json_commit(&j, "commit", img);
	else
		wct_json_null(&j, "commit");
	if (!live && v->before_ok)
		wcctl_json_commit(&j, "commit_at_open", &v->before);
	else
		wct_json_null(&j, "commit_at_open");
	if (live) {
		wct_json_object(&j, "entries", false);
		wct_json_u64(&j, "committed", live->n_committed);
		wct_json_u64(&j, "superseded", live->n_superseded);
		wct_json_u64(&j, "uncommitted", live->n_uncommitted);
		wct_json_u64(&j, "free", live->n_free);
		wct_json_end(&j);
	} else {
		wct_json_null(&j, "entries");
	}
	if (live) {
		wct_json_null(&j, "flush_policy");
	} else {
		wct_json_object(&j, "flush_policy", false);
		wct_json_str(&j, "source", v->pmem_source);
		wcctl_json_policy(&j, &v->pmem);
		wct_json_u64(&j, "line_size", v->pmem.line_size);
		wct_json_end(&j);
	}
	wct_json_null(&j, "block"); /* the block medium's ring (wcctl_blk_status) */
	wct_json_end(&j);
}

static void status_text(const struct status_view *v)
{
	const struct wc_stats *st = &v->st;
	char s1[32], s2[32], uuid[40], when[64], thr[48], line[512];

	printf("%s\n", status_line(line, sizeof(line), st));
	printf("cache          %s: %" PRIu64 " blocks of %u B (%s)\n", v->cache, st->blocks,
	       v->block_size, wct_size_str(s1, sizeof(s1), st->blocks * (uint64_t)v->block_size));
	if (v->sb_ok) {
		printf("               uuid %s, formatted %s\n",
		       wcctl_uuid_str(uuid, sizeof(uuid), v->img.sb.uuid),
		       wcctl_time_str(when, sizeof(when), v->img.sb.format_time));
		printf("commit point   %" PRIu64 " (from %s%s), floor seq_count %" PRIu64 "\n",
		       v->img.cp_seq, v->img.cp_slot < 0 ? "the " : "",
		       wcctl_commit_source(s1, sizeof(s1), &v->img), v->img.cp_floor);
		for (unsigned i = 0; i < WCADM_RECORD_SLOTS; i++)
			printf("%s%u: %s\n", i ? "               record " : "records        record ", i,
			       wcctl_record_str(line, sizeof(line), &v->img, i));
	}
	if (v->before_ok)
		printf("at open        commit point %" PRIu64 " (from %s%s), floor seq_count %" PRIu64
		       "\n", v->before.cp_seq, v->before.cp_slot < 0 ? "the " : "",
		       wcctl_commit_source(s1, sizeof(s1), &v->before), v->before.cp_floor);
	printf("medium         pmem: %s\n", v->medium_reason);
	printf("origin         %s: %s\n", v->origin, wct_size_str(s1, sizeof(s1), v->size));
	printf("origin mode    %s\n", st->origin_mode);
	printf("origin id      %s\n", st->origin_identity);
	if (st->error)
		printf("state          ERROR %d (%s): writes and flushes fail, reads work\n", st->error,
		       strerror(-st->error));
	else if (st->dirty_blocks)
		printf("state          %" PRIu64 " dirty blocks (%s) not yet written back\n",
		       st->dirty_blocks,
		       wct_size_str(s1, sizeof(s1), st->dirty_blocks * (uint64_t)v->block_size));
	else
		printf("state          clean: every block is on the origin\n");
	printf("free           %" PRIu64 " blocks (%" PRIu64 "%%)\n", st->free_blocks,
	       st->blocks ? st->free_blocks * 100 / st->blocks : 0);
	printf("granularity    %s\n", st->granularity);
	printf("commits        %" PRIu64 ", flushes %" PRIu64 " (since this open)\n", st->commits,
	       st->flushes);
	printf("write-back     %" PRIu64 " I/Os, %s, %" PRIu64 " errors, %" PRIu64
	       " blocks in flight (window %" PRIu64 ", %" PRIu64 " us per write)\n",
	       st->writeback_ios, wct_size_str(s2, sizeof(s2), st->writeback_bytes),
	       st->writeback_errors, st->writeback_blocks, st->writeback_window,
	       st->writeback_latency_us);
	if (st->writeback_last_error)
		printf("               failing for %" PRIu64 " ms: %s\n", st->writeback_failing_ms,
		       strerror((int)-st->writeback_last_error));
	threshold_str(thr, sizeof(thr), v->pmem.threshold);
	printf("flush policy   %s: threshold %s\n", v->pmem_source, thr);
	printf("               why: %s\n", v->pmem.reason);
	printf("               small copies %s, large copies %s, line %u B\n",
	       v->pmem.small_strategy, v->pmem.large_strategy, v->pmem.line_size);
	if (strcmp(st->granularity, "cache-line") != 0)
		printf("               (at %s granularity the cache persists %s)\n", st->granularity,
		       strcmp(st->granularity, "byte") == 0 ? "with plain stores and a fence"
		                                            : "through libpmem2's msync");
	printf("DRAM           %s for metadata (%.1f B per block)\n",
	       wct_size_str(s1, sizeof(s1), st->dram_bytes),
	       st->blocks ? (double)st->dram_bytes / (double)st->blocks : 0.0);
}

/*
 * A cache in use elsewhere: opening it would run recovery under its owner's
 * feet (and the owner's lock refuses that anyway), so the view comes from
 * the image alone, read-only -- no wc_open, no byte written.  The owner's
 * counters live in its process; what the image shows is the superblock,
 * the commit point and the entries as of this read.
 */
static int status_live(const char *cmd, const char *cache, const char *origin, bool json)
{
	struct wcadm_image img;
	char s1[32], s2[32], uuid[40], when[64], live[256], line[1024];
	uint64_t used;
	int ret = wcadm_image_open(&img, cache);

	if (img.fd < 0) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	if (!ret)
		ret = wcadm_image_classify(&img);
	if (ret) {
		fprintf(stderr, "%s: %s: %s%s\n", cmd, wcctl_live_str(live, sizeof(live), &img),
		        wc_errmsg(), img.sb_ok ? "" : " (its owner may be formatting it)");
		wcadm_image_close(&img);
		return WCCTL_FAIL;
	}
	used = img.n_committed + img.n_superseded + img.n_uncommitted + img.n_outside +
	       img.n_duplicate;
	if (json) {
		struct status_view v;

		memset(&v, 0, sizeof(v));
		v.cache = cache;
		v.origin = origin;
		status_json(&v, &img);
		wcadm_image_close(&img);
		return WCCTL_OK;
	}
	printf("state          %s\n", wcctl_live_str(live, sizeof(live), &img));
	printf("               read from the image without opening it: no recovery, nothing\n"
	       "               written; the I/O counters are the owner's and not shown\n");
	printf("cache          %s: %" PRIu64 " blocks of %u B (%s)\n", cache, img.sb.n_blocks,
	       img.sb.block_size,
	       wct_size_str(s1, sizeof(s1), img.sb.n_blocks * (uint64_t)img.sb.block_size));
	printf("               uuid %s, formatted %s\n", wcctl_uuid_str(uuid, sizeof(uuid), img.sb.uuid),
	       wcctl_time_str(when, sizeof(when), img.sb.format_time));
	printf("commit point   %" PRIu64 " (from %s%s), floor seq_count %" PRIu64 "\n", img.cp_seq,
	       img.cp_slot < 0 ? "the " : "", wcctl_commit_source(s1, sizeof(s1), &img),
	       img.cp_floor);
	for (unsigned i = 0; i < WCADM_RECORD_SLOTS; i++)
		printf("%s%u: %s\n", i ? "               record " : "records        record ", i,
		       wcctl_record_str(line, sizeof(line), &img, i));
	printf("entries        %" PRIu64 " committed (dirty), %" PRIu64 " superseded, %" PRIu64
	       " uncommitted (written since the last commit), as of this read\n",
	       img.n_committed, img.n_superseded, img.n_uncommitted);
	printf("free           %" PRIu64 " blocks (%" PRIu64 "%%)\n", img.n_free,
	       img.sb.n_blocks ? img.n_free * 100 / img.sb.n_blocks : 0);
	printf("in use         %" PRIu64 " blocks (%s)\n", used,
	       wct_size_str(s2, sizeof(s2), used * (uint64_t)img.sb.block_size));
	printf("origin         %s: %s (held by the same owner)\n", origin,
	       wct_size_str(s1, sizeof(s1), wcadm_image_origin_size(&img)));
	/* The owner holds the origin (locked, O_EXCL): it cannot be opened
	 * here to compare identities, only names. */
	if (img.oid_slot >= 0 && strcmp(img.oid.name, origin))
		printf("               not the name the cache records (%s): the owner's origin is "
		       "that one, whatever its name here\n", img.oid.name);
	printf("origin id      %s\n", wcctl_identity_str(line, sizeof(line), &img));
	wcadm_image_close(&img);
	return WCCTL_OK;
}

int wcctl_status(int argc, char **argv)
{
	const char *cmd = argv[0], *options = NULL;
	struct status_view v;
	struct wc_config cfg;
	wc_cache *c;
	bool json = false;
	const struct wct_opt opts[] = {
		WCT_OPT_STR("options", &options),
		WCT_OPT_FLAG("json", &json),
		WCT_OPT_END,
	};
	int ret;

	ret = wcctl_options(cmd, opts, argc, argv, status_usage, 2, "CACHE ORIGIN");
	if (!ret)
		ret = wcctl_config(&cfg, cmd, options, NULL, true);
	if (ret)
		return ret;
	memset(&v, 0, sizeof(v));
	v.cache = argv[optind];
	v.origin = argv[optind + 1];
	cfg.no_threads = true;

	/* The commit point recovery is about to settle (a refusal below
	 * names the problem itself). */
	v.before_ok = read_commit(v.cache, &v.before);
	if (v.before.block)
		return wcctl_blk_status(cmd, v.cache, v.origin, &cfg, v.before.live, json);
	if (v.before.live)
		return status_live(cmd, v.cache, v.origin, json);
	ret = wc_open(&c, v.cache, v.origin, &cfg);
	/* Opened elsewhere since the test above: the lock refused before
	 * anything was touched. */
	if (ret == -EBUSY && read_commit(v.cache, &v.before) && v.before.live)
		return status_live(cmd, v.cache, v.origin, json);
	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	wc_get_stats(c, &v.st);
	snprintf(v.granularity, sizeof(v.granularity), "%s", v.st.granularity);
	snprintf(v.origin_mode, sizeof(v.origin_mode), "%s", v.st.origin_mode);
	snprintf(v.origin_identity, sizeof(v.origin_identity), "%s", v.st.origin_identity);
	snprintf(v.medium_reason, sizeof(v.medium_reason), "%s",
	         v.st.medium_reason ? v.st.medium_reason : "");
	v.st.granularity = v.granularity;
	v.st.origin_mode = v.origin_mode;
	v.st.origin_identity = v.origin_identity;
	v.block_size = wc_block_size(c);
	v.size = wc_size(c);
	ret = wc_close(c);
	if (ret) {
		fprintf(stderr, "%s: close: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	/* The cache's own policy: measured on its memory, recorded, or from
	 * its options or the environment (wc_stats says which). */
	v.pmem = v.st.pmem;
	v.pmem_source = v.st.pmem_source;
	v.sb_ok = read_commit(v.cache, &v.img);
	if (json)
		status_json(&v, NULL);
	else
		status_text(&v);
	return WCCTL_OK;
}

static void writeback_usage(FILE *f)
{
	fprintf(f,
	        "usage: wcctl writeback CACHE ORIGIN [--options STRING] [--quiet]\n"
	        "Open the cache, write every dirty block back to ORIGIN (a file, block device\n"
	        "or NBD URI; a progress bar on stderr), make the origin durable (fdatasync, or\n"
	        "an NBD flush) and close.  Afterwards the origin alone\n"
	        "holds all the data: the cache can be dropped (dm-writecache's `flush`\n"
	        "message before removal).\n\n"
	        "  --options S  configuration for the open (e.g. writeback_jobs=64)\n"
	        "  --quiet      no progress bar\n"
	        "  --help\n");
}

int wcctl_writeback(int argc, char **argv)
{
	const char *cmd = argv[0], *options = NULL;
	struct wcctl_progress bar;
	struct wc_config cfg;
	struct wc_stats st;
	wc_cache *c;
	uint64_t total, done = 0;
	bool quiet = false;
	char s1[32];
	double t0;
	int ret, r;

	const struct wct_opt opts[] = {
		WCT_OPT_STR("options", &options),
		WCT_OPT_FLAG("quiet", &quiet),
		WCT_OPT_END,
	};

	ret = wcctl_options(cmd, opts, argc, argv, writeback_usage, 2, "CACHE ORIGIN");
	if (!ret)
		ret = wcctl_config(&cfg, cmd, options, NULL, true);
	if (ret)
		return ret;
	cfg.no_threads = true;

	t0 = wct_now_ns() / 1e9;
	ret = wc_open(&c, argv[optind], argv[optind + 1], &cfg);
	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	wc_get_stats(c, &st);
	total = st.dirty_blocks;
	/* Cleaner mode makes every round pick any dirty block, not only those
	 * above the watermark; the bar moves as the host's steps free blocks,
	 * until nothing is due. */
	ret = wc_set_cleaner(c, true);
	quiet = quiet || total == 0;
	if (!quiet)
		wcctl_progress_start(&bar, total);
	while (!ret) {
		r = wc_poll_timeout(c, 64, 100);
		wc_get_stats(c, &st);
		done = total > st.dirty_blocks ? total - st.dirty_blocks : 0;
		if (!quiet)
			wcctl_progress_update(&bar, done, "");
		/* A failing origin: wc_writeback below waits it out. */
		if (r < 0 || st.dirty_blocks == 0 || (r == 0 && wc_next_deadline_ms(c) < 0) ||
		    st.writeback_failing_since_ms)
			break;
	}
	if (!quiet)
		wcctl_progress_end(&bar);
	/* wc_writeback finishes the job whatever happened above: it retries a
	 * failed round until it succeeds or the origin has failed for a
	 * minute, and it returns only once the origin is durable. */
	if (!ret)
		ret = wc_writeback(c);
	if (ret)
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
	wc_get_stats(c, &st);
	r = wc_close(c);
	if (r && !ret) {
		fprintf(stderr, "%s: close: %s\n", cmd, wc_errmsg());
		ret = r;
	}
	if (ret)
		return WCCTL_FAIL;
	printf("wrote back %" PRIu64 " blocks (%s in %" PRIu64 " I/Os) in %.2f s; %" PRIu64
	       " dirty blocks left, origin durable\n",
	       total, wct_size_str(s1, sizeof(s1), st.writeback_bytes), st.writeback_ios,
	       wct_now_ns() / 1e9 - t0, st.dirty_blocks);
	return st.dirty_blocks ? WCCTL_FAIL : WCCTL_OK;
}
