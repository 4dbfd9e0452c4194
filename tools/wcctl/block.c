/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * block.c -- `wcctl check`, `dump` and `status` of a cache on the block
 * medium (lib/block/format.h): the same commands, the same exit statuses
 * and the same kinds of lines as on pmem, over the block layout -- the
 * superblock, two ring state slots, two identity slots and a ring of
 * segments, each records and a summary.  The reading is the admin
 * interface's (wcadm_blk_*, lib/admin/image_block.c): read only, never a
 * byte written, live or not.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "wcctl.h"

/* ---- shared views -------------------------------------------------------- */

static const char *state_word(const struct wcadm_blk_image *bi, int slot)
{
	const struct wcadm_blk_state *s = &bi->state[slot];

	if (slot == bi->state_slot)
		return "in force";
	if (s->zero)
		return "never written";
	if (!s->magic_ok)
		return "DAMAGED (bad magic)";
	if (s->crc != s->crc_computed)
		return "DAMAGED (CRC32C mismatch)";
	if (!s->intact)
		return "DAMAGED (fields out of range)";
	return "older";
}

static const char *identity_str(char *buf, size_t len, const struct wcadm_blk_image *bi)
{
	char desc[512];

	if (bi->oid_slot < 0) {
		snprintf(buf, len, "DAMAGED: neither identity slot (offsets %u, %u) is intact; wc_open "
		         "refuses the cache until `wcctl set-origin --force`", WCADM_BLK_ID_OFFSET,
		         WCADM_BLK_ID_OFFSET + WCADM_BLK_UNIT);
		return buf;
	}
	snprintf(buf, len, "%s, recorded %s, generation %" PRIu64,
	         wcadm_origin_id_str(desc, sizeof(desc), &bi->oid),
	         wcadm_origin_id_source(bi->oid.source), bi->oid.generation);
	return buf;
}

static void json_identity(struct wct_json *j, const char *key, const struct wcadm_blk_image *bi)
{
	if (bi->oid_slot < 0) {
		wct_json_null(j, key);
		return;
	}
	wct_json_object(j, key, false);
	wct_json_str(j, "kind", wcadm_origin_kind_name(bi->oid.kind));
	wct_json_str(j, "name", bi->oid.name);
	wct_json_str(j, "id", bi->oid.id[0] ? bi->oid.id : NULL);
	wct_json_u64(j, "size", bi->oid.size);
	wct_json_u64(j, "generation", bi->oid.generation);
	wct_json_u64(j, "slot", (uint64_t)bi->oid_slot);
	wct_json_u64(j, "time", bi->oid.time);
	wct_json_end(j);
}

static void print_sb(const struct wcadm_blk_image *bi, const char *p)
{
	char s1[32], s2[32], s3[32], uuid[40], when[64], id[1024];

	printf("%s%s: block medium, format %u, %u-byte blocks, %u-byte record headers (LBA), "
	       "origin %s (%" PRIu64 " blocks)\n", p, bi->path, bi->version, bi->block_size,
	       bi->lba_size, wct_size_str(s1, sizeof(s1), wcadm_blk_origin_size(bi)),
	       bi->block_size ? wcadm_blk_origin_size(bi) / bi->block_size : 0);
	printf("%suuid %s, formatted %s, cache id %016" PRIx64 "\n", p,
	       wcctl_uuid_str(uuid, sizeof(uuid), bi->uuid),
	       wcctl_time_str(when, sizeof(when), bi->format_time), bi->cache_id);
	printf("%sorigin identity %s\n", p, identity_str(id, sizeof(id), bi));
	printf("%s%" PRIu64 " segments of %s from offset %" PRIu64 " (summary %s at each end, "
	       "room for %" PRIu64 " versions), device %" PRIu64 " bytes (%s at format)\n", p,
	       bi->n_segments, wct_size_str(s2, sizeof(s2), bi->seg_bytes), bi->seg_start,
	       wct_size_str(s3, sizeof(s3), bi->summary_bytes), bi->n_entries, bi->file_size,
	       wct_size_str(s1, sizeof(s1), bi->device_bytes));
}

static void print_states(const struct wcadm_blk_image *bi, const char *p)
{
	for (int i = 0; i < 2; i++) {
		const struct wcadm_blk_state *s = &bi->state[i];

		printf("%sstate slot %d (offset %" PRIu64 "): generation %" PRIu64 ", tail %" PRIu64
		       ", clean point %" PRIu64 ", open limit %" PRIu64 ": %s\n", p, i, s->offset,
		       s->generation, s->tail_seg, s->clean_seg, s->open_limit, state_word(bi, i));
	}
}

static void json_sb(struct wct_json *j, const char *key, const struct wcadm_blk_image *bi)
{
	char uuid[40];

	wct_json_object(j, key, false);
	wct_json_u64(j, "version", bi->version);
	wct_json_u64(j, "block_size", bi->block_size);
	wct_json_u64(j, "lba_size", bi->lba_size);
	wct_json_u64(j, "seg_start", bi->seg_start);
	wct_json_u64(j, "seg_bytes", bi->seg_bytes);
	wct_json_u64(j, "n_segments", bi->n_segments);
	wct_json_u64(j, "summary_bytes", bi->summary_bytes);
	wct_json_u64(j, "n_entries", bi->n_entries);
	wct_json_u64(j, "origin_size", wcadm_blk_origin_size(bi));
	wct_json_str(j, "uuid", wcctl_uuid_str(uuid, sizeof(uuid), bi->uuid));
	wct_json_u64(j, "cache_id", bi->cache_id);
	wct_json_u64(j, "format_time", bi->format_time);
	wct_json_u64(j, "device_bytes", bi->device_bytes);
	wct_json_u64(j, "file_size", bi->file_size);
	wct_json_end(j);
}

static void json_states(struct wct_json *j, const char *key, const struct wcadm_blk_image *bi)
{
	wct_json_object(j, key, true);
	if (bi->state_slot < 0)
		wct_json_null(j, "in_force");
	else
		wct_json_u64(j, "in_force", (uint64_t)bi->state_slot);
	wct_json_array(j, "slots", true);
	for (int i = 0; i < 2; i++) {
		const struct wcadm_blk_state *s = &bi->state[i];

		wct_json_object(j, NULL, false);
		wct_json_u64(j, "slot", (uint64_t)i);
		wct_json_u64(j, "offset", s->offset);
		wct_json_u64(j, "generation", s->generation);
		wct_json_u64(j, "tail", s->tail_seg);
		wct_json_u64(j, "clean", s->clean_seg);
		wct_json_u64(j, "open_limit", s->open_limit);
		wct_json_bool(j, "intact", s->intact);
		wct_json_str(j, "state", state_word(bi, i));
		wct_json_end(j);
	}
	wct_json_end(j);
	wct_json_end(j);
}

/* The ring as the scan found it: members of the open object. */
static void json_ring(struct wct_json *j, const struct wcadm_blk_image *bi)
{
	wct_json_u64(j, "segments", bi->n_segments);
	wct_json_u64(j, "tail", bi->tail);
	wct_json_u64(j, "head", bi->head);
	wct_json_u64(j, "clean", bi->clean);
	wct_json_u64(j, "open_limit", bi->open_limit);
	wct_json_u64(j, "segments_read", bi->scan_end - bi->tail);
	wct_json_u64(j, "summarized", bi->n_summarized);
	wct_json_u64(j, "unsummarized", bi->n_unsummarized);
	wct_json_u64(j, "summaries_damaged", bi->n_sum_damaged);
	wct_json_u64(j, "records", bi->records);
	wct_json_u64(j, "discards", bi->discards);
	wct_json_u64(j, "bad_records", bi->bad_records);
	wct_json_u64(j, "versions", bi->versions);
	wct_json_u64(j, "cached_blocks", bi->cached_blocks);
	wct_json_u64(j, "dirty_blocks", bi->dirty_blocks);
}

static void print_ring(const struct wcadm_blk_image *bi, const char *p)
{
	printf("%sring: segments %" PRIu64 "..%" PRIu64 " read (tail %" PRIu64 ", head %" PRIu64
	       ", clean point %" PRIu64 ", open limit %" PRIu64 "): %" PRIu64 " with an intact "
	       "summary, %" PRIu64 " without (%" PRIu64 " damaged)\n", p, bi->tail,
	       bi->scan_end ? bi->scan_end - 1 : 0, bi->tail, bi->head, bi->clean, bi->open_limit,
	       bi->n_summarized, bi->n_unsummarized, bi->n_sum_damaged);
	printf("%srecords: %" PRIu64 " (%" PRIu64 " discards), %" PRIu64 " block versions, %" PRIu64
	       " records whose CRC32C fails\n", p, bi->records, bi->discards, bi->versions,
	       bi->bad_records);
	printf("%sblocks: %" PRIu64 " cached, %" PRIu64 " of them dirty (not yet written back)\n", p,
	       bi->cached_blocks, bi->dirty_blocks);
}

static void json_head(struct wct_json *j, const struct wcadm_blk_image *bi)
{
	wct_json_init(j, stdout);
	wct_json_object(j, NULL, true);
	wct_json_str(j, "cache", bi->path);
	wct_json_str(j, "medium", "block");
	wct_json_bool(j, "live", bi->live);
	if (bi->live && bi->holder_pid > 0)
		wct_json_int(j, "in_use_by", bi->holder_pid);
	else
		wct_json_null(j, "in_use_by");
}

static const char *live_str(char *buf, size_t len, const struct wcadm_blk_image *bi)
{
	snprintf(buf, len, "live, in use by %s", bi->holder);
	return buf;
}

/* ---- check --------------------------------------------------------------- */

struct check {
	uint64_t printed, max, left_out;
	bool json;
	struct wct_json j;
};

static void check_finding(void *arg, const struct wcadm_blk_finding *f)
{
	struct check *c = arg;

	if (c->max && c->printed >= c->max) {
		c->left_out++;
		return;
	}
	c->printed++;
	if (c->json) {
		wct_json_object(&c->j, NULL, false);
		wct_json_str(&c->j, "kind", f->damage ? "damage" : "info");
		wct_json_u64(&c->j, "offset", f->offset);
		wct_json_str(&c->j, "text", f->text);
		wct_json_end(&c->j);
	} else {
		printf("%s: %s\n", f->damage ? "damage" : "info", f->text);
	}
}

int wcctl_blk_check(const char *cmd, const char *path, uint64_t max, bool json)
{
	struct wcadm_blk_image bi;
	struct check c = { .max = max, .json = json };
	struct wcadm_blk_scan_ops ops = { .verify = true, .finding = check_finding, .arg = &c };
	char live[256];
	bool bad;
	int ret = wcadm_blk_open(&bi, path);

	if (bi.fd < 0) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		return WCCTL_FAIL;
	}
	if (bi.live && !json)
		printf("state: %s: read without writing while its owner works on it\n",
		       live_str(live, sizeof(live), &bi));
	if (ret) {
		if (json) {
			json_head(&c.j, &bi);
			wct_json_object(&c.j, "superblock", false);
			wct_json_bool(&c.j, "ok", false);
			wct_json_str(&c.j, "error", wc_errmsg());
			wct_json_end(&c.j);
			wct_json_str(&c.j, "result", "damaged");
			wct_json_end(&c.j);
		} else {
			printf("superblock: DAMAGED: %s\n", wc_errmsg());
			printf("result: %s: DAMAGED (superblock; ring not checked)\n", path);
		}
		wcadm_blk_close(&bi);
		return WCCTL_FAIL;
	}
	if (json) {
		json_head(&c.j, &bi);
		wct_json_object(&c.j, "superblock", false);
		wct_json_bool(&c.j, "ok", true);
		json_sb(&c.j, "fields", &bi);
		wct_json_end(&c.j);
		json_states(&c.j, "state", &bi);
		json_identity(&c.j, "origin_identity", &bi);
		wct_json_array(&c.j, "problems", true);
	} else {
		printf("superblock: ok\n");
		print_sb(&bi, "  ");
		print_states(&bi, "  ");
	}
	ret = wcadm_blk_scan(&bi, &ops);
	if (ret) {
		/* Nothing past the state can be judged: recovery refuses here. */
		if (json) {
			wct_json_object(&c.j, NULL, false);
			wct_json_str(&c.j, "kind", "damage");
			wct_json_u64(&c.j, "offset", WCADM_BLK_STATE_OFFSET);
			wct_json_str(&c.j, "text", wc_errmsg());
			wct_json_end(&c.j);
			wct_json_end(&c.j);
			wct_json_str(&c.j, "result", "damaged");
			wct_json_end(&c.j);
		} else {
			printf("damage: %s\n", wc_errmsg());
			printf("result: %s: DAMAGED (ring state; segments not checked)\n", path);
		}
		wcadm_blk_close(&bi);
		return WCCTL_FAIL;
	}
	/* As on pmem: what a read racing the owner sees is not judged as
	 * damage, except the identity and state, which it writes alone. */
	bad = bi.oid_slot < 0 || (bi.n_damage && !bi.live);
	if (json) {
		wct_json_end(&c.j);
		wct_json_bool(&c.j, "problems_left_out", c.left_out);
		wct_json_object(&c.j, "ring", false);
		json_ring(&c.j, &bi);
		wct_json_end(&c.j);
		wct_json_u64(&c.j, "damage", bi.n_damage);
		wct_json_u64(&c.j, "info", bi.n_info);
		wct_json_bool(&c.j, "origin_identity_damaged", bi.oid_slot < 0);
		wct_json_str(&c.j, "result", !bi.n_damage ? "clean" : bad ? "damaged" : "live-unsettled");
		wct_json_end(&c.j);
		wcadm_blk_close(&bi);
		return bad ? WCCTL_FAIL : WCCTL_OK;
	}
	if (c.left_out)
		printf("(%" PRIu64 " more problems not printed: --max %" PRIu64 ")\n", c.left_out, c.max);
	print_ring(&bi, "");
	if (!bi.n_damage)
		printf("result: %s: clean%s%s%s\n", path, bi.live ? " (" : "",
		       bi.live ? live_str(live, sizeof(live), &bi) : "", bi.live ? ")" : "");
	else if (!bad)
		printf("result: %s: %s: %" PRIu64 " problems in a read that raced its owner's writes; "
		       "check it again once it is closed\n", path, live_str(live, sizeof(live), &bi),
		       bi.n_damage);
	else
		printf("result: %s: DAMAGED (%" PRIu64 " problems: wc_open would refuse it, serve "
		       "damaged data or lose data)\n", path, bi.n_damage);
	wcadm_blk_close(&bi);
	return bad ? WCCTL_FAIL : WCCTL_OK;
}

/* ---- dump ---------------------------------------------------------------- */

/* A segment's records are held until its line is printed (its summary is
 * read after them). */
struct held {
	uint64_t offset, seq;
	uint32_t count, flags;
	bool header_ok, data_ok, taken;
	uint64_t origin[64];
};

struct dump {
	bool json, all;
	struct wct_json j;
	struct held *h;
	size_t n, cap;
	uint64_t next_seg;       /* --all: segments outside the ring, printed in order */
	int err;
};

static void dump_record(void *arg, const struct wcadm_blk_record *r)
{
	struct dump *d = arg;
	struct held *h;
	unsigned n;

	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 256;
		struct held *p = realloc(d->h, cap * sizeof(*p));

		if (!p) {
			d->err = -ENOMEM;
			return;
		}
		d->h = p;
		d->cap = cap;
	}
	h = &d->h[d->n++];
	*h = (struct held){ r->offset, r->seq, r->count, r->flags, r->header_ok, r->data_ok, r->taken, { 0 } };
	n = r->flags & 1 ? 2 : r->count;
	if (n > 64 || !r->header_ok)
		n = r->header_ok ? 64 : 0;
	memcpy(h->origin, r->origin, n * sizeof(uint64_t));
}

static const char *held_state(const struct held *h)
{
	if (!h->header_ok)
		return "bad-header";
	if (!h->data_ok)
		return "bad-data";
	return h->flags & 1 ? "discard" : "ok";
}

static void dump_segment(void *arg, const struct wcadm_blk_seg *s)
{
	struct dump *d = arg;

	if (d->json) {
		wct_json_object(&d->j, NULL, true);
		wct_json_u64(&d->j, "seg", s->seg);
		wct_json_u64(&d->j, "offset", s->offset);
		wct_json_bool(&d->j, "clean", s->clean);
		wct_json_object(&d->j, "summary", false);
		wct_json_u64(&d->j, "offset", s->summary_offset);
		wct_json_str(&d->j, "state", wcadm_blk_sum_state_name(s->sum_state));
		wct_json_u64(&d->j, "entries", s->sum_n);
		wct_json_u64(&d->j, "crc", s->sum_crc);
		wct_json_u64(&d->j, "crc_computed", s->sum_crc_computed);
		wct_json_end(&d->j);
		wct_json_bool(&d->j, "from_summary", s->from_summary);
		wct_json_u64(&d->j, "records_taken", s->records);
		wct_json_u64(&d->j, "blocks", s->blocks);
		wct_json_u64(&d->j, "discards", s->discards);
		wct_json_u64(&d->j, "bad_records", s->bad_records);
		wct_json_u64(&d->j, "used", s->used);
		wct_json_array(&d->j, "records", true);
		for (size_t i = 0; i < d->n; i++) {
			const struct held *h = &d->h[i];
			unsigned n = h->flags & 1 ? 0 : h->count > 64 ? 64 : h->count;

			wct_json_object(&d->j, NULL, false);
			wct_json_u64(&d->j, "offset", h->offset);
			wct_json_u64(&d->j, "seq", h->seq);
			wct_json_u64(&d->j, "count", h->count);
			wct_json_str(&d->j, "state", held_state(h));
			if (h->header_ok && (h->flags & 1)) {
				wct_json_u64(&d->j, "discard_first", h->origin[0]);
				wct_json_u64(&d->j, "discard_blocks", h->origin[1]);
			}
			wct_json_array(&d->j, "origin_blocks", false);
			for (unsigned k = 0; h->header_ok && k < n; k++)
				wct_json_u64(&d->j, NULL, h->origin[k]);
			wct_json_end(&d->j);
			wct_json_end(&d->j);
		}
		wct_json_end(&d->j);
		wct_json_end(&d->j);
		d->n = 0;
		return;
	}
	printf("# segment %" PRIu64 " at offset %" PRIu64 ": %s, summary %s (offset %" PRIu64
	       ", %u entries%s), %" PRIu64 " records taken (%" PRIu64 " blocks, %" PRIu64
	       " discards), %" PRIu64 " bad, %" PRIu64 " bytes used\n",
	       s->seg, s->offset, s->clean ? "clean" : "dirty", wcadm_blk_sum_state_name(s->sum_state),
	       s->summary_offset, s->sum_n, s->from_summary ? ", recovery reads it" : "",
	       s->records, s->blocks, s->discards, s->bad_records, s->used);
	for (size_t i = 0; i < d->n; i++) {
		const struct held *h = &d->h[i];
		char blocks[400] = "";
		size_t at = 0;

		if (!h->header_ok)
			snprintf(blocks, sizeof(blocks), "-");
		else if (h->flags & 1)
			snprintf(blocks, sizeof(blocks), "%" PRIu64 "+%" PRIu64, h->origin[0], h->origin[1]);
		else
			for (unsigned k = 0; k < h->count && k < 64 && at < sizeof(blocks) - 24; k++)
				at += (size_t)snprintf(blocks + at, sizeof(blocks) - at, "%s%" PRIu64,
				                       k ? "," : "", h->origin[k]);
		printf("%8" PRIu64 " %14" PRIu64 " %12" PRIu64 " %5u %-10s %s\n", s->seg, h->offset,
		       h->seq, h->count, held_state(h), blocks);
	}
	d->n = 0;
}

int wcctl_blk_dump(const char *cmd, const char *path, bool all, bool json)
{
	struct wcadm_blk_image bi;
	struct dump d = { .json = json, .all = all };
	struct wcadm_blk_scan_ops ops = { .verify = true, .segment = dump_segment,
	                                  .record = dump_record, .arg = &d };
	int ret = wcadm_blk_open(&bi, path);

	if (ret) {
		fprintf(stderr, "%s: %s%s\n", cmd, wc_errmsg(), bi.fd >= 0 ? " (wcctl check tells more)" : "");
		wcadm_blk_close(&bi);
		return WCCTL_FAIL;
	}
	if (bi.state_slot < 0) {
		/* The scan names both slots; dump says it before anything is printed. */
		wcadm_blk_scan(&bi, NULL);
		fprintf(stderr, "%s: %s (wcctl check tells more)\n", cmd, wc_errmsg());
		wcadm_blk_close(&bi);
		return WCCTL_FAIL;
	}
	if (json) {
		json_head(&d.j, &bi);
		json_sb(&d.j, "superblock", &bi);
		json_states(&d.j, "state", &bi);
		json_identity(&d.j, "origin_identity", &bi);
		wct_json_array(&d.j, "segments", true);
	} else {
		if (bi.live)
			printf("# state: live, in use by %s: read without writing while its owner works "
			       "on it\n", bi.holder);
		print_sb(&bi, "# ");
		print_states(&bi, "# ");
		printf("#%7s %14s %12s %5s %-10s %s\n", "segment", "offset", "seq", "count", "state",
		       "origin blocks");
	}
	ret = wcadm_blk_scan(&bi, &ops);
	if (!ret && d.err)
		ret = wcadm_err(d.err, "%s: out of memory listing records", path);
	if (ret) {
		if (json) {
			wct_json_end(&d.j);
			wct_json_str(&d.j, "error", wc_errmsg());
			wct_json_end(&d.j);
		}
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		free(d.h);
		wcadm_blk_close(&bi);
		return WCCTL_FAIL;
	}
	if (json) {
		wct_json_end(&d.j);
		if (all) {
			/* Outside the ring: what the slots hold from earlier laps
			 * (never read by recovery). */
			wct_json_array(&d.j, "free_segments", false);
			for (uint64_t s = bi.scan_end; s < bi.tail + bi.n_segments; s++)
				wct_json_u64(&d.j, NULL, s);
			wct_json_end(&d.j);
		}
		wct_json_object(&d.j, "ring", false);
		json_ring(&d.j, &bi);
		wct_json_end(&d.j);
		wct_json_end(&d.j);
	} else {
		if (all)
			for (uint64_t s = bi.scan_end; s < bi.tail + bi.n_segments; s++)
				printf("# segment %" PRIu64 " at offset %" PRIu64 ": free (outside the ring: "
				       "recovery never reads it)\n", s,
				       bi.seg_start + (s % bi.n_segments) * bi.seg_bytes);
		print_ring(&bi, "# ");
	}
	free(d.h);
	wcadm_blk_close(&bi);
	return WCCTL_OK;
}

/* ---- status -------------------------------------------------------------- */

/*
 * One schema, live or not: a cache open elsewhere is read from the image
 * (no recovery, nothing written) and the members only its owner knows --
 * the counters since its open, the medium's reason, the free space it
 * computes -- are null.
 */
struct blk_status {
	const char *cache, *origin;
	bool opened;             /* through the library (not live) */
	struct wc_stats st;
	char reason[256], origin_mode[512], origin_identity[1024];
	uint32_t block_size;
	uint64_t size;
	struct wcadm_blk_image bi;  /* read after the close (or, live, instead of the open) */
	bool scanned;
	char scan_error[512];
};

static void blk_status_json(const struct blk_status *v)
{
	const struct wcadm_blk_image *bi = &v->bi;
	const struct wc_stats *st = &v->st;
	char uuid[40], live[256];
	struct wct_json j;

	wct_json_init(&j, stdout);
	wct_json_object(&j, NULL, true);
	wct_json_str(&j, "cache", v->cache);
	wct_json_str(&j, "origin", v->origin);
	wct_json_str(&j, "medium", "block");
	wct_json_str(&j, "medium_reason", v->opened ? v->reason : NULL);
	wct_json_bool(&j, "live", bi->live);
	if (bi->live && bi->holder_pid > 0)
		wct_json_int(&j, "in_use_by", bi->holder_pid);
	else
		wct_json_null(&j, "in_use_by");
	wct_json_str(&j, "holder", bi->live ? live_str(live, sizeof(live), bi) : NULL);
	wct_json_u64(&j, "blocks", bi->n_entries);
	wct_json_u64(&j, "block_size", bi->block_size);
	wct_json_u64(&j, "size", v->opened ? v->size : wcadm_blk_origin_size(bi));
	wct_json_u64(&j, "dirty_blocks", v->opened ? st->dirty_blocks : bi->dirty_blocks);
	if (v->opened) {
		wct_json_u64(&j, "free", st->free_blocks);
		wct_json_int(&j, "error", st->error);
	} else {
		wct_json_null(&j, "free");
		wct_json_null(&j, "error");
	}
	wct_json_str(&j, "uuid", wcctl_uuid_str(uuid, sizeof(uuid), bi->uuid));
	wct_json_u64(&j, "format_time", bi->format_time);
	wct_json_str(&j, "origin_mode", v->opened ? v->origin_mode : NULL);
	json_identity(&j, "origin_identity", bi);
	if (v->opened) {
		wct_json_object(&j, "counters", false);
		wct_json_stats(&j, st);
		wct_json_end(&j);
	} else {
		wct_json_null(&j, "counters");
	}
	wct_json_object(&j, "block", true);
	wct_json_u64(&j, "lba_size", bi->lba_size);
	wct_json_u64(&j, "seg_start", bi->seg_start);
	wct_json_u64(&j, "seg_bytes", bi->seg_bytes);
	wct_json_u64(&j, "summary_bytes", bi->summary_bytes);
	if (bi->state_slot >= 0) {
		wct_json_u64(&j, "state_slot", (uint64_t)bi->state_slot);
		wct_json_u64(&j, "state_generation", bi->state[bi->state_slot].generation);
	} else {
		wct_json_null(&j, "state_slot");
		wct_json_null(&j, "state_generation");
	}
	json_ring(&j, bi);
	wct_json_str(&j, "scan_error", v->scanned ? NULL : v->scan_error);
	if (v->opened) {
		wct_json_object(&j, "since_open", false);
		wct_json_u64(&j, "records_written", st->medium_records);
		wct_json_u64(&j, "record_writes", st->medium_record_writes);
		wct_json_u64(&j, "device_reads", st->medium_reads);
		wct_json_u64(&j, "dsync_writes", st->medium_dsync_writes);
		wct_json_u64(&j, "device_flushes", st->medium_flushes);
		wct_json_u64(&j, "segments_reclaimed", st->medium_segments_reclaimed);
		wct_json_u64(&j, "recovery_us", st->recovery_us);
		wct_json_end(&j);
	} else {
		wct_json_null(&j, "since_open");
	}
	wct_json_end(&j);
	wct_json_null(&j, "flush_policy");
	wct_json_end(&j);
}

static void blk_status_text(const struct blk_status *v)
{
	const struct wcadm_blk_image *bi = &v->bi;
	const struct wc_stats *st = &v->st;
	char s1[32], s2[32], uuid[40], when[64], line[1024];

	if (v->opened)
		printf("%d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		       " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		       st->error, st->blocks, st->free_blocks, st->writeback_blocks, st->reads,
		       st->read_hits, st->writes, st->write_hits_uncommitted, st->write_hits_committed,
		       st->writes_around, st->writes_allocate, st->writes_blocked_on_freelist,
		       st->flushes, st->discards);
	else
		printf("state          %s\n               read from the image without opening it: no "
		       "recovery, nothing written; the I/O counters are the owner's and not shown\n",
		       live_str(line, sizeof(line), bi));
	printf("cache          %s: room for %" PRIu64 " blocks of %u B (%s)\n", v->cache,
	       bi->n_entries, bi->block_size,
	       wct_size_str(s1, sizeof(s1), bi->n_entries * (uint64_t)bi->block_size));
	printf("               uuid %s, formatted %s\n", wcctl_uuid_str(uuid, sizeof(uuid), bi->uuid),
	       wcctl_time_str(when, sizeof(when), bi->format_time));
	printf("medium         block%s%s\n", v->opened ? ": " : " (the image's magic)",
	       v->opened ? v->reason : "");
	printf("segments       %" PRIu64 " of %s from offset %" PRIu64 ", summary %s each, "
	       "%u-byte record headers\n", bi->n_segments, wct_size_str(s1, sizeof(s1), bi->seg_bytes),
	       bi->seg_start, wct_size_str(s2, sizeof(s2), bi->summary_bytes), bi->lba_size);
	if (v->scanned) {
		printf("ring           tail %" PRIu64 ", head %" PRIu64 ", clean point %" PRIu64
		       ", open limit %" PRIu64 " (state slot %d, generation %" PRIu64 ")\n", bi->tail,
		       bi->head, bi->clean, bi->open_limit, bi->state_slot,
		       bi->state[bi->state_slot].generation);
		printf("records        %" PRIu64 " (%" PRIu64 " discards), %" PRIu64 " block versions; "
		       "%" PRIu64 " segments summarized, %" PRIu64 " not\n", bi->records, bi->discards,
		       bi->versions, bi->n_summarized, bi->n_unsummarized);
		printf("blocks         %" PRIu64 " cached, %" PRIu64 " dirty (as the image reads%s)\n",
		       bi->cached_blocks, bi->dirty_blocks, bi->live ? " now" : " after the close");
	} else {
		printf("ring           not read: %s\n", v->scan_error);
	}
	printf("origin         %s: %s\n", v->origin,
	       wct_size_str(s1, sizeof(s1), v->opened ? v->size : wcadm_blk_origin_size(bi)));
	if (v->opened)
		printf("origin mode    %s\n", v->origin_mode);
	printf("origin id      %s\n", v->opened ? v->origin_identity : identity_str(line, sizeof(line), bi));
	if (!v->opened)
		return;
	if (st->error)
		printf("state          ERROR %d (%s): writes and flushes fail, reads work\n", st->error,
		       strerror(-st->error));
	else if (st->dirty_blocks)
		printf("state          %" PRIu64 " dirty blocks (%s) not yet written back\n",
		       st->dirty_blocks, wct_size_str(s1, sizeof(s1), st->dirty_blocks * (uint64_t)bi->block_size));
	else
		printf("state          clean: every block is on the origin\n");
	printf("free           %" PRIu64 " blocks (%" PRIu64 "%%)\n", st->free_blocks,
	       st->blocks ? st->free_blocks * 100 / st->blocks : 0);
	printf("device I/O     %" PRIu64 " records in %" PRIu64 " writes, %" PRIu64 " synced writes, %"
	       PRIu64 " flushes, %" PRIu64 " reads, %" PRIu64 " segments reclaimed (since this open); "
	       "recovery %" PRIu64 " us\n",
	       st->medium_records, st->medium_record_writes, st->medium_dsync_writes, st->medium_flushes,
	       st->medium_reads, st->medium_segments_reclaimed, st->recovery_us);
	printf("flush policy   none: the block medium writes with O_DIRECT device writes, not CPU "
	       "stores\n");
	printf("DRAM           %s for metadata (%.1f B per block)\n",
	       wct_size_str(s1, sizeof(s1), st->dram_bytes),
	       st->blocks ? (double)st->dram_bytes / (double)st->blocks : 0.0);
}

/* Read the ring after the close (or, live, instead of the open). */
static int blk_status_read(const char *cmd, struct blk_status *v)
{
	int ret = wcadm_blk_open(&v->bi, v->cache);

	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		wcadm_blk_close(&v->bi);
		return WCCTL_FAIL;
	}
	ret = wcadm_blk_scan(&v->bi, NULL);
	v->scanned = ret == 0;
	if (ret)
		snprintf(v->scan_error, sizeof(v->scan_error), "%s", wc_errmsg());
	wcadm_blk_close(&v->bi);
	return WCCTL_OK;
}

int wcctl_blk_status(const char *cmd, const char *cache, const char *origin, struct wc_config *cfg,
                     bool live, bool json)
{
	struct blk_status *v = calloc(1, sizeof(*v));
	wc_cache *c;
	int ret;

	if (!v) {
		fprintf(stderr, "%s: out of memory\n", cmd);
		return WCCTL_FAIL;
	}
	v->cache = cache;
	v->origin = origin;
	if (!live) {
		ret = wc_open(&c, cache, origin, cfg);
		if (ret == -EBUSY && wcadm_blk_is_image(cache)) {
			live = true; /* opened elsewhere since the test */
		} else if (ret) {
			fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
			free(v);
			return WCCTL_FAIL;
		}
	}
	if (!live) {
		wc_get_stats(c, &v->st);
		snprintf(v->reason, sizeof(v->reason), "%s", v->st.medium_reason);
		snprintf(v->origin_mode, sizeof(v->origin_mode), "%s", v->st.origin_mode);
		snprintf(v->origin_identity, sizeof(v->origin_identity), "%s", v->st.origin_identity);
		/* The pointers into the cache do not outlive the close. */
		v->st.granularity = "block";
		v->st.origin_mode = v->origin_mode;
		v->st.origin_identity = v->origin_identity;
		v->st.medium = "block";
		v->st.medium_reason = v->reason;
		v->st.pmem_source = "none (block medium)";
		v->block_size = wc_block_size(c);
		v->size = wc_size(c);
		v->opened = true;
		ret = wc_close(c);
		if (ret) {
			fprintf(stderr, "%s: close: %s\n", cmd, wc_errmsg());
			free(v);
			return WCCTL_FAIL;
		}
	}
	ret = blk_status_read(cmd, v);
	if (ret == WCCTL_OK) {
		if (json)
			blk_status_json(v);
		else
			blk_status_text(v);
	}
	free(v);
	return ret;
}

/* ---- create, set-origin -------------------------------------------------- */

int wcctl_blk_created(const char *cmd, const char *cache, const char *origin,
                      const struct wc_stats *st, uint32_t bs, uint64_t addressable)
{
	struct wcadm_blk_image bi;
	char s1[32], s2[32], uuid[40], id[1024];
	int ret = wcadm_blk_open(&bi, cache);

	if (ret) {
		fprintf(stderr, "%s: created, but reading it back failed: %s\n", cmd, wc_errmsg());
		wcadm_blk_close(&bi);
		return WCCTL_FAIL;
	}
	printf("created %s in front of %s\n", cache, origin);
	printf("  medium         block: %s\n", st->medium_reason);
	printf("  blocks         %" PRIu64 " (the ring's room for versions)\n", bi.n_entries);
	printf("  block size     %u\n", bs);
	printf("  cache data     %s\n", wct_size_str(s1, sizeof(s1), bi.n_entries * (uint64_t)bs));
	printf("  segments       %" PRIu64 " of %s from offset %" PRIu64 " (summary %" PRIu64
	       " B each)\n", bi.n_segments, wct_size_str(s2, sizeof(s2), bi.seg_bytes), bi.seg_start,
	       bi.summary_bytes);
	printf("  record header  %u B (the device's logical block)\n", bi.lba_size);
	printf("  bytes used     %" PRIu64 " of %" PRIu64 "\n",
	       bi.seg_start + bi.n_segments * bi.seg_bytes, bi.file_size);
	printf("  origin         %s (%" PRIu64 " blocks)\n",
	       wct_size_str(s2, sizeof(s2), addressable), addressable / bs);
	printf("  origin id      %s\n", identity_str(id, sizeof(id), &bi));
	printf("  uuid           %s\n", wcctl_uuid_str(uuid, sizeof(uuid), bi.uuid));
	printf("  DRAM estimate  %s for metadata (%.1f B per block)\n",
	       wct_size_str(s1, sizeof(s1), st->dram_bytes),
	       st->blocks ? (double)st->dram_bytes / (double)st->blocks : 0.0);
	wcadm_blk_close(&bi);
	return WCCTL_OK;
}

int wcctl_blk_look(const char *cmd, const char *cache, char *recorded, size_t len, uint64_t *dirty,
                   uint32_t *block_size)
{
	struct wcadm_blk_image bi;
	char live[256];
	int ret = wcadm_blk_open(&bi, cache);

	if (!ret && bi.live) {
		fprintf(stderr, "%s: %s: close it first\n", cmd, live_str(live, sizeof(live), &bi));
		wcadm_blk_close(&bi);
		return WCCTL_FAIL;
	}
	if (!ret)
		ret = wcadm_blk_scan(&bi, NULL);
	if (ret) {
		fprintf(stderr, "%s: %s\n", cmd, wc_errmsg());
		wcadm_blk_close(&bi);
		return WCCTL_FAIL;
	}
	identity_str(recorded, len, &bi);
	*dirty = bi.dirty_blocks;
	*block_size = bi.block_size;
	wcadm_blk_close(&bi);
	return WCCTL_OK;
}
