/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * image.c -- how wcctl shows a cache image read offline: its origin
 * identity, its owner, its commit records and commit point, as text and as
 * JSON.  The reading itself -- the superblock validated, the records and
 * identity slots decoded, the commit point as recovery computes it, every
 * entry classified -- is the admin interface's (wcadm_image, wcadmin.h):
 * nothing ever writes the file, so `wcctl check` and `wcctl dump` are safe
 * on an image kept for a post-mortem.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "wcctl.h"

const char *wcctl_identity_str(char *buf, size_t len, const struct wcadm_image *img)
{
	char desc[512];

	if (img->oid_slot < 0) {
		snprintf(buf, len, "%s", wcadm_image_identity_damaged(img)
		         ? "DAMAGED: neither identity slot (offsets 1024, 1536) is intact; "
		           "wc_open refuses the cache until `wcctl set-origin --force`"
		         : "none recorded (format version 2): recorded at the next open");
		return buf;
	}
	snprintf(buf, len, "%s, recorded %s, generation %" PRIu64,
	         wcadm_origin_id_str(desc, sizeof(desc), &img->oid),
	         wcadm_origin_id_source(img->oid.source), img->oid.generation);
	return buf;
}

void wcctl_json_identity(struct wct_json *j, const char *key, const struct wcadm_image *img)
{
	const struct wcadm_origin_id *id = &img->oid;

	if (img->oid_slot < 0) {
		wct_json_null(j, key);
		return;
	}
	wct_json_object(j, key, false);
	wct_json_str(j, "kind", wcadm_origin_kind_name(id->kind));
	wct_json_str(j, "name", id->name);
	if (id->id[0])
		wct_json_str(j, "id", id->id);
	else
		wct_json_null(j, "id");
	wct_json_u64(j, "size", id->size);
	wct_json_u64(j, "generation", id->generation);
	wct_json_u64(j, "slot", (uint64_t)img->oid_slot);
	wct_json_u64(j, "time", id->time);
	wct_json_end(j);
}

const char *wcctl_live_str(char *buf, size_t len, const struct wcadm_image *img)
{
	snprintf(buf, len, "live, in use by %s", img->holder);
	return buf;
}

void wcctl_json_live(struct wct_json *j, const struct wcadm_image *img)
{
	wct_json_bool(j, "live", img->live);
	if (img->live && img->holder_pid > 0)
		wct_json_int(j, "in_use_by", img->holder_pid);
	else
		wct_json_null(j, "in_use_by");
}

const char *wcctl_state_name(enum wcadm_entry_state s)
{
	switch (s) {
	case WCADM_FREE: return "free";
	case WCADM_UNCOMMITTED: return "uncommitted";
	case WCADM_COMMITTED: return "committed";
	case WCADM_SUPERSEDED: return "superseded";
	case WCADM_OUTSIDE: return "outside-origin";
	case WCADM_DUPLICATE: return "duplicate";
	}
	return "?";
}

const char *wcctl_record_state_name(enum wcadm_record_state s)
{
	switch (s) {
	case WCADM_REC_EMPTY: return "empty";
	case WCADM_REC_TORN: return "torn";
	case WCADM_REC_COVERED: return "covered";
	case WCADM_REC_VALID: return "valid";
	case WCADM_REC_MISMATCH: return "mismatch";
	case WCADM_REC_FALLBACK: return "fallback";
	case WCADM_REC_OLDER: return "older";
	}
	return "?";
}

const char *wcctl_record_str(char *buf, size_t len, const struct wcadm_image *img, unsigned slot)
{
	const struct wcadm_record *r = &img->rec[slot];
	char head[96];

	snprintf(head, sizeof(head), "seq %" PRIu64 ", count %" PRIu64, r->seq, r->count);
	switch ((enum wcadm_record_state)r->state) {
	case WCADM_REC_EMPTY:
		snprintf(buf, len, "empty");
		break;
	case WCADM_REC_TORN:
		snprintf(buf, len, "torn (seq %" PRIu64 ", CRC32C 0x%08x stored, 0x%08x computed): ignored",
		         r->seq, r->crc, r->crc_computed);
		break;
	case WCADM_REC_COVERED:
		snprintf(buf, len, "%s, intact, covered by the floor", head);
		break;
	case WCADM_REC_VALID:
		snprintf(buf, len, "%s, intact, valid (%" PRIu64 " entries of epoch %" PRIu64
		         " match): the commit point", head, r->found, r->seq - 1);
		break;
	case WCADM_REC_MISMATCH:
		snprintf(buf, len, "%s, intact, NOT valid (%" PRIu64 " entries of epoch %" PRIu64
		         " found%s): that commit did not happen", head, r->found, r->seq - 1,
		         r->found == r->count ? ", digest differs" : "");
		break;
	case WCADM_REC_FALLBACK:
		snprintf(buf, len, "%s, intact: the commit point (the newer record does not match)",
		         head);
		break;
	case WCADM_REC_OLDER:
		snprintf(buf, len, "%s, intact, older than the other slot", head);
		break;
	}
	return buf;
}

const char *wcctl_commit_source(char *buf, size_t len, const struct wcadm_image *img)
{
	if (img->cp_slot < 0)
		snprintf(buf, len, "floor");
	else
		snprintf(buf, len, "record %d", img->cp_slot);
	return buf;
}

void wcctl_print_commit(const struct wcadm_image *img, const char *prefix)
{
	char line[256];

	printf("%sfloor seq_count %" PRIu64 " (offset %u)\n", prefix, img->cp_floor, WCADM_SEQ_OFFSET);
	for (unsigned i = 0; i < WCADM_RECORD_SLOTS; i++)
		printf("%srecord %u (offset %" PRIu64 "): %s\n", prefix, i, wcadm_record_offset(i),
		       wcctl_record_str(line, sizeof(line), img, i));
	printf("%scommit point %" PRIu64 " (from %s%s): entries with seq below it are committed\n",
	       prefix, img->cp_seq, img->cp_slot < 0 ? "the " : "",
	       wcctl_commit_source(line, sizeof(line), img));
}

void wcctl_json_commit(struct wct_json *j, const char *key, const struct wcadm_image *img)
{
	char src[32];

	wct_json_object(j, key, true);
	wct_json_u64(j, "point", img->cp_seq);
	wct_json_str(j, "source", wcctl_commit_source(src, sizeof(src), img));
	wct_json_u64(j, "floor", img->cp_floor);
	wct_json_array(j, "records", true);
	for (unsigned i = 0; i < WCADM_RECORD_SLOTS; i++) {
		const struct wcadm_record *r = &img->rec[i];

		wct_json_object(j, NULL, false);
		wct_json_u64(j, "slot", i);
		wct_json_u64(j, "offset", wcadm_record_offset(i));
		wct_json_u64(j, "seq", r->seq);
		wct_json_u64(j, "count", r->count);
		wct_json_u64(j, "found", r->found);
		wct_json_bool(j, "intact", r->intact);
		wct_json_bool(j, "valid", r->matches);
		wct_json_str(j, "state", wcctl_record_state_name((enum wcadm_record_state)r->state));
		wct_json_end(j);
	}
	wct_json_end(j);
	wct_json_end(j);
}
