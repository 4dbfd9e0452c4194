/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inspect.c -- `wcctl check` and `wcctl dump`: offline views of a cache
 * image (wcadm_image, shown by image.c), without the origin and without
 * writing a byte.
 *
 * Both print the commit point the way recovery computes it: the floor
 * seq_count, the two commit records and which of them, if any, moves the
 * point above the floor.
 *
 * What counts as damage is what makes recovery refuse, or what the commit
 * protocol can never produce: a superblock wc_open's validation rejects, a
 * committed entry beyond the origin, two committed entries with one origin
 * block and one seq.  Uncommitted entries and torn or mismatching records
 * are not damage: a crash between a write and its commit leaves them, and
 * recovery drops or erases them.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wcctl.h"

static void print_sb(const struct wcadm_image *img, const char *prefix)
{
	const struct wcadm_sb *sb = &img->sb;
	char s1[32], s2[32], uuid[40], when[64], idbuf[1024];

	printf("%s%s: format %u, %" PRIu64 " blocks of %u B (%s), origin %s (%" PRIu64
	       " blocks)\n",
	       prefix, img->path, sb->version, sb->n_blocks, sb->block_size,
	       wct_size_str(s1, sizeof(s1), sb->n_blocks * (uint64_t)sb->block_size),
	       wct_size_str(s2, sizeof(s2), wcadm_image_origin_size(img)),
	       sb->block_size ? wcadm_image_origin_size(img) / sb->block_size : 0);
	printf("%suuid %s, formatted %s\n", prefix, wcctl_uuid_str(uuid, sizeof(uuid), sb->uuid),
	       wcctl_time_str(when, sizeof(when), sb->format_time));
	printf("%sorigin identity %s\n", prefix, wcctl_identity_str(idbuf, sizeof(idbuf), img));
	printf("%sentries at offset %" PRIu64 ", data at offset %" PRIu64 ", file %" PRIu64
	       " bytes (%" PRIu64 " used)\n",
	       prefix, img->layout.entries_offset, img->layout.data_offset, img->file_size,
	       img->layout.bytes_used);
}

static void check_usage(FILE *f)
{
	fprintf(f,
	        "usage: wcctl check CACHE [--max N] [--json]\n"
	        "Offline consistency check of a cache image, without the origin; the file\n"
	        "is only read.  Checks the superblock (magic, version, CRC32C, geometry,\n"
	        "truncation), prints the commit point (the floor seq_count, both commit\n"
	        "records, and which one counts), then checks that every committed entry\n"
	        "lies inside the origin and that no two committed entries hold one origin\n"
	        "block with one seq.  Uncommitted entries and torn or mismatching records\n"
	        "are reported as info: recovery drops or erases them.  A cache in use\n"
	        "(open elsewhere) is read all the same and reported as live; what a read\n"
	        "racing its owner's commits sees is not judged as damage.\n"
	        "A cache on the block medium: the superblock, both state slots, both\n"
	        "identity slots, then every segment of the ring -- its summary, every record's\n"
	        "header and data CRC32C, the summary against the records (wcctl(8)).\n\n"
	        "  --max N   print at most N problems (default 100; 0 = all)\n"
	        "  --json    one JSON object instead\n"
	        "  --help\n\n"
	        "exit status: 0 clean (or live), 1 damaged (or unreadable), 2 usage error\n");
}

/* Where check's problems go: text lines, or the elements of a JSON array. */
struct problems {
	uint64_t printed, max, left_out;
	bool json;
	struct wct_json j;
};

static void problem(struct problems *p, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void problem(struct problems *p, const char *kind, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	if (p->max && p->printed >= p->max) {
		p->left_out++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (p->json) {
		wct_json_object(&p->j, NULL, false);
		wct_json_str(&p->j, "kind", kind);
		wct_json_str(&p->j, "text", text);
		wct_json_end(&p->j);
	} else {
		printf("%s: %s\n", kind, text);
	}
	p->printed++;
}

/* The superblock's fields as the JSON object `key`. */
static void json_sb(struct wct_json *j, const char *key, const struct wcadm_image *img)
{
	const struct wcadm_sb *sb = &img->sb;
	char uuid[40];

	wct_json_object(j, key, false);
	wct_json_u64(j, "version", sb->version);
	wct_json_u64(j, "block_size", sb->block_size);
	wct_json_u64(j, "n_blocks", sb->n_blocks);
	wct_json_u64(j, "origin_size", wcadm_image_origin_size(img));
	wct_json_str(j, "uuid", wcctl_uuid_str(uuid, sizeof(uuid), sb->uuid));
	wct_json_u64(j, "format_time", sb->format_time);
	wct_json_u64(j, "entries_offset", img->layout.entries_offset);
	wct_json_u64(j, "data_offset", img->layout.data_offset);
	wct_json_u64(j, "file_size", img->file_size);
	wct_json_end(j);
}

static void json_counts(struct wct_json *j, const char *key, const struct wcadm_image *img)
{
	wct_json_object(j, key, false);
	wct_json_u64(j, "committed", img->n_committed);
	wct_json_u64(j, "superseded", img->n_superseded);
	wct_json_u64(j, "uncommitted", img->n_uncommitted);
	wct_json_u64(j, "free", img->n_free);
	wct_json_u64(j, "outside_origin", img->n_outside);
	wct_json_u64(j, "duplicate", img->n_duplicate);
	wct_json_end(j);
}

/* The head every JSON view of an image starts with. */
static void json_head(struct wct_json *j, const struct wcadm_image *img)
{
	wct_json_init(j, stdout);
	wct_json_object(j, NULL, true);
	wct_json_str(j, "cache", img->path);
	wcctl_json_live(j, img);
}

int wcctl_check(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct wcadm_image img;
	struct problems pr = { .max = 100 };
	uint64_t origin_blocks, damage;
	bool id_damaged;
	char live[256];
	const struct wct_opt opts[] = {
		WCT_OPT("max", WCT_U64, &pr.max, 0, UINT64_MAX),
		WCT_OPT_FLAG("json", &pr.json),
		WCT_OPT_END,
	};
	int ret;

	ret = wcctl_options(cmd, opts, argc, argv, check_usage, 1, "CACHE");
	if (ret)
		return ret;

	ret = wcadm_image_open(&img, argv[optind]);
	if (img.fd < 0) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	if (img.block) {
		wcadm_image_close(&img);
		return wcctl_blk_check(cmd, argv[optind], pr.max, pr.json);
	}
	if (img.live && !pr.json)
		printf("state: %s: read without writing while its owner works on it\n",
		       wcctl_live_str(live, sizeof(live), &img));
	if (ret && pr.json) {
		json_head(&pr.j, &img);
		wct_json_object(&pr.j, "superblock", false);
		wct_json_bool(&pr.j, "ok", false);
		wct_json_str(&pr.j, "error", wc_errmsg());
		wct_json_end(&pr.j);
		wct_json_str(&pr.j, "result", "damaged");
		wct_json_end(&pr.j);
		wcadm_image_close(&img);
		return WCCTL_FAIL;
	}
	if (ret) {
		printf("superblock: DAMAGED: %s\n", wc_errmsg());
		printf("result: %s: DAMAGED (superblock; entries not checked)%s\n", img.path,
		       img.live ? "; its owner may be formatting it" : "");
		wcadm_image_close(&img);
		return WCCTL_FAIL;
	}
	ret = wcadm_image_classify(&img);
	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		wcadm_image_close(&img);
		return WCCTL_FAIL;
	}
	if (pr.json) {
		json_head(&pr.j, &img);
		wct_json_object(&pr.j, "superblock", false);
		wct_json_bool(&pr.j, "ok", true);
		json_sb(&pr.j, "fields", &img);
		wct_json_end(&pr.j);
		wcctl_json_identity(&pr.j, "origin_identity", &img);
		wcctl_json_commit(&pr.j, "commit", &img);
		wct_json_array(&pr.j, "problems", true);
	} else {
		printf("superblock: ok\n");
		print_sb(&img, "  ");
		wcctl_print_commit(&img, "  ");
	}
	for (unsigned i = 0; i < WCADM_RECORD_SLOTS; i++) {
		const struct wcadm_record *r = &img.rec[i];

		if (r->state == WCADM_REC_TORN)
			problem(&pr, "info",
			        "record %u (offset %" PRIu64 "): torn (CRC32C of bytes 0..23 or seq out "
			        "of range): ignored%s",
			        i, wcadm_record_offset(i), r->seq ? ", recovery erases it" : "");
		else if (r->state == WCADM_REC_MISMATCH)
			problem(&pr, "info",
			        "record %u (offset %" PRIu64 "): seq %" PRIu64 " claims %" PRIu64
			        " entries of epoch %" PRIu64 ", the entries hold %" PRIu64 "%s: that "
			        "commit did not happen, recovery erases the record",
			        i, wcadm_record_offset(i), r->seq, r->count, r->seq - 1, r->found,
			        r->found == r->count ? " with another digest" : "");
	}
	if (wcadm_image_identity_damaged(&img))
		problem(&pr, "damage", "origin identity (offsets %u and %u): neither slot is intact; "
		        "the cache opens only with `wcctl set-origin --force`", WCADM_ORIGIN_ID_OFFSET,
		        WCADM_ORIGIN_ID_OFFSET + WCADM_ORIGIN_ID_SIZE);
	origin_blocks = wcadm_image_origin_size(&img) / img.sb.block_size;
	for (uint64_t i = 0; i < img.layout.n_blocks; i++) {
		const struct wcadm_entry *pe = &img.entries[i];
		const struct wcadm_entry_info *e = &img.info[i];

		if (e->state == WCADM_OUTSIDE)
			problem(&pr, "damage",
			        "entry %" PRIu64 " (offset %" PRIu64 "): origin block %" PRIu64
			        " (seq %" PRIu64 ") is beyond the origin's %" PRIu64 " blocks",
			        i, wcadm_entry_offset(&img, i), pe->origin_block, pe->seq,
			        origin_blocks);
		else if (e->state == WCADM_DUPLICATE)
			problem(&pr, "damage",
			        "entry %" PRIu64 " (offset %" PRIu64 "): origin block %" PRIu64
			        " seq %" PRIu64 " is also held by entry %" PRIu32 " (offset %" PRIu64
			        "): two committed versions in one commit",
			        i, wcadm_entry_offset(&img, i), pe->origin_block, pe->seq, e->other,
			        wcadm_entry_offset(&img, e->other));
		else if (e->state == WCADM_UNCOMMITTED)
			problem(&pr, "info",
			        "entry %" PRIu64 " (offset %" PRIu64 "): origin block %" PRIu64
			        " uncommitted (seq %" PRIu64 " >= commit point %" PRIu64
			        "): recovery drops it",
			        i, wcadm_entry_offset(&img, i), pe->origin_block, pe->seq,
			        img.cp_seq);
	}
	damage = img.n_outside + img.n_duplicate;
	id_damaged = wcadm_image_identity_damaged(&img);
	/* A live image moves under the read: the owner's recovery accepted
	 * it, so what looks inconsistent here is a read that raced a commit,
	 * not damage. */
	if (pr.json) {
		wct_json_end(&pr.j);
		wct_json_bool(&pr.j, "problems_left_out", pr.left_out);
		json_counts(&pr.j, "entries", &img);
		wct_json_u64(&pr.j, "damaged_entries", damage);
		wct_json_bool(&pr.j, "origin_identity_damaged", id_damaged);
		wct_json_str(&pr.j, "result", id_damaged ? "damaged" : !damage ? "clean"
		             : img.live ? "live-unsettled" : "damaged");
		wct_json_end(&pr.j);
		wcadm_image_close(&img);
		return id_damaged || (damage && !img.live) ? WCCTL_FAIL : WCCTL_OK;
	}
	if (pr.left_out)
		printf("(%" PRIu64 " more problems not printed: --max %" PRIu64 ")\n", pr.left_out,
		       pr.max);
	printf("entries: %" PRIu64 " committed (dirty), %" PRIu64 " superseded, %" PRIu64
	       " uncommitted, %" PRIu64 " free, %" PRIu64 " outside the origin, %" PRIu64
	       " duplicate\n",
	       img.n_committed, img.n_superseded, img.n_uncommitted, img.n_free, img.n_outside,
	       img.n_duplicate);
	if (id_damaged)
		printf("result: %s: DAMAGED (origin identity%s; wc_open would refuse it)\n", img.path,
		       damage ? " and entries" : "");
	else if (damage && img.live)
		printf("result: %s: %s: %" PRIu64 " entries looked inconsistent in a read that "
		       "raced its owner's commits; check it again once it is closed\n",
		       img.path, wcctl_live_str(live, sizeof(live), &img), damage);
	else if (damage)
		printf("result: %s: DAMAGED (%" PRIu64 " bad entries; wc_open would refuse it)\n",
		       img.path, damage);
	else
		printf("result: %s: clean%s%s%s\n", img.path, img.live ? " (" : "",
		       img.live ? wcctl_live_str(live, sizeof(live), &img) : "", img.live ? ")" : "");
	wcadm_image_close(&img);
	return id_damaged || (damage && !img.live) ? WCCTL_FAIL : WCCTL_OK;
}

static void dump_usage(FILE *f)
{
	fprintf(f,
	        "usage: wcctl dump CACHE [--all] [--json]\n"
	        "List the metadata of a cache image (read only, live or not): the floor, both\n"
	        "commit records and the commit point, then per entry its index, entry\n"
	        "offset, origin block, seq, state, data offset, and for a superseded entry\n"
	        "the entry that holds the newer version.  A cache on the block medium: the\n"
	        "superblock, state slots, and per segment its summary and its records.\n\n"
	        "  --all    also list free entries\n"
	        "  --json   one JSON object instead\n"
	        "  --help\n");
}

int wcctl_dump(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct wcadm_image img;
	bool all = false, json = false;
	char live[256];
	const struct wct_opt opts[] = {
		WCT_OPT_FLAG("all", &all),
		WCT_OPT_FLAG("json", &json),
		WCT_OPT_END,
	};
	int ret;

	ret = wcctl_options(cmd, opts, argc, argv, dump_usage, 1, "CACHE");
	if (ret)
		return ret;

	ret = wcadm_image_open(&img, argv[optind]);
	if (img.block) {
		wcadm_image_close(&img);
		return wcctl_blk_dump(cmd, argv[optind], all, json);
	}
	if (!ret)
		ret = wcadm_image_classify(&img);
	if (ret) {
		fprintf(stderr, "%s: %s%s\n", cmd, wc_errmsg(),
		        img.fd >= 0 ? " (wcctl check tells more)" : "");
		wcadm_image_close(&img);
		return WCCTL_FAIL;
	}
	if (json) {
		struct wct_json j;

		json_head(&j, &img);
		json_sb(&j, "superblock", &img);
		wcctl_json_commit(&j, "commit", &img);
		json_counts(&j, "counts", &img);
		wct_json_array(&j, "entries", true);
		for (uint64_t i = 0; i < img.layout.n_blocks; i++) {
			const struct wcadm_entry *pe = &img.entries[i];
			const struct wcadm_entry_info *e = &img.info[i];

			if (e->state == WCADM_FREE && !all)
				continue;
			wct_json_object(&j, NULL, false);
			wct_json_u64(&j, "index", i);
			wct_json_u64(&j, "offset", wcadm_entry_offset(&img, i));
			/* null for all-ones: a free entry's seq, a never used entry's block */
			if (pe->origin_block == WCADM_NONE)
				wct_json_null(&j, "origin_block");
			else
				wct_json_u64(&j, "origin_block", pe->origin_block);
			if (pe->seq == WCADM_NONE)
				wct_json_null(&j, "seq");
			else
				wct_json_u64(&j, "seq", pe->seq);
			wct_json_str(&j, "state", wcctl_state_name(e->state));
			wct_json_u64(&j, "data_offset",
			             img.layout.data_offset + i * (uint64_t)img.layout.block_size);
			if (e->other == WCADM_NO_ENTRY)
				wct_json_null(&j, "other");
			else
				wct_json_u64(&j, "other", e->other);
			wct_json_end(&j);
		}
		wct_json_end(&j);
		wct_json_end(&j);
		wcadm_image_close(&img);
		return WCCTL_OK;
	}
	if (img.live)
		printf("# state: %s: read without writing while its owner works on it\n",
		       wcctl_live_str(live, sizeof(live), &img));
	print_sb(&img, "# ");
	wcctl_print_commit(&img, "# ");
	printf("# %" PRIu64 " committed, %" PRIu64 " superseded, %" PRIu64 " uncommitted, %" PRIu64
	       " free, %" PRIu64 " damaged\n",
	       img.n_committed, img.n_superseded, img.n_uncommitted, img.n_free,
	       img.n_outside + img.n_duplicate);
	printf("#%9s %12s %14s %12s %-14s %14s %s\n", "index", "offset", "origin_block", "seq",
	       "state", "data_offset", "note");
	for (uint64_t i = 0; i < img.layout.n_blocks; i++) {
		const struct wcadm_entry *pe = &img.entries[i];
		const struct wcadm_entry_info *e = &img.info[i];
		char origin[24], seq[24], note[48] = "";

		if (e->state == WCADM_FREE && !all)
			continue;
		if (e->state == WCADM_FREE) {
			/* A freed entry keeps the origin block it last held. */
			if (pe->origin_block == WCADM_NONE)
				snprintf(origin, sizeof(origin), "-");
			else
				snprintf(origin, sizeof(origin), "(%" PRIu64 ")", pe->origin_block);
			snprintf(seq, sizeof(seq), "-");
		} else {
			snprintf(origin, sizeof(origin), "%" PRIu64, pe->origin_block);
			snprintf(seq, sizeof(seq), "%" PRIu64, pe->seq);
		}
		if (e->state == WCADM_SUPERSEDED)
			snprintf(note, sizeof(note), "superseded-by %" PRIu32, e->other);
		else if (e->state == WCADM_DUPLICATE)
			snprintf(note, sizeof(note), "same-seq-as %" PRIu32, e->other);
		printf("%10" PRIu64 " %12" PRIu64 " %14s %12s %-14s %14" PRIu64 " %s\n", i,
		       wcadm_entry_offset(&img, i), origin, seq, wcctl_state_name(e->state),
		       img.layout.data_offset + i * (uint64_t)img.layout.block_size, note);
	}
	wcadm_image_close(&img);
	return WCCTL_OK;
}
