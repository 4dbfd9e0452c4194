/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * image.c -- a cache file read offline, without the library and without
 * the origin: the superblock through wc_sb_validate (format.h), the entries
 * through a read-only mapping.  Nothing here ever writes the file, so
 * `wcctl check` and `wcctl dump` are safe on an image kept for a post-mortem.
 *
 * The commit point is the library's own (wc_commit_point: the floor
 * seq_count, or a commit record above it whose entries match); the tool
 * adds what each record slot says, so a reader sees why.  The
 * classification follows recovery (lib/recover.c) entry by entry, but
 * looks at the whole picture: recovery stops at the first inconsistency,
 * a check wants to list them all.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bind.h"
#include "util/error.h"
#include "wcctl.h"

int wcctl_image_open(struct wcctl_image *img, const char *path)
{
	struct stat st;
	off_t end;
	int ret;

	memset(img, 0, sizeof(*img));
	img->path = path;
	img->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (img->fd < 0)
		return wc_err_sys(-errno, "%s: open read-only", path);
	if (fstat(img->fd, &st)) {
		int err = -errno;

		wcctl_image_close(img);
		return wc_err_sys(err, "%s: fstat", path);
	}
	if (S_ISDIR(st.st_mode)) {
		wcctl_image_close(img);
		return wc_err(-EISDIR, "%s: is a directory, not a cache image", path);
	}
	/* A test, not a lock: taking it, even for a moment, could refuse the
	 * owner's own open.  A file system without locks has no owner to
	 * report. */
	img->live = wc_lock_probe(img->fd, path, &img->holder) == 1;
	/* A block device reports its size through lseek, not st_size. */
	end = lseek(img->fd, 0, SEEK_END);
	if (end < 0) {
		int err = -errno;

		wcctl_image_close(img);
		return wc_err_sys(err, "%s: size", path);
	}
	img->file_size = (uint64_t)end;
	/* A file shorter than the superblock reads as zeros past its end;
	 * wc_sb_validate then names the truncation. */
	{
		const struct { void *buf; size_t len; unsigned off; const char *what; } parts[] = {
			{ &img->sb, sizeof(img->sb), 0, "the superblock" },
			{ img->rec, sizeof(img->rec), WC_RECORD_OFFSET, "the commit records" },
			{ img->oid, sizeof(img->oid), WC_ORIGIN_ID_OFFSET, "the origin identity" },
		};

		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			if (pread(img->fd, parts[i].buf, parts[i].len, parts[i].off) >= 0)
				continue;
			ret = -errno;
			wcctl_image_close(img);
			return wc_err_sys(ret, "%s: read %s at offset %u", path, parts[i].what,
			                  parts[i].off);
		}
	}
	img->oid_slot = wc_origin_id_current(img->oid);
	ret = wc_sb_validate(&img->sb, img->file_size, path, &img->layout);
	img->sb_ok = ret == 0;
	return ret;
}

uint64_t wcctl_origin_size(const struct wcctl_image *img)
{
	return img->oid_slot >= 0 ? img->oid[img->oid_slot].origin_size : img->sb.origin_size;
}

bool wcctl_identity_damaged(const struct wcctl_image *img)
{
	return img->sb_ok && img->sb.version != WC_FORMAT_VERSION_NO_IDENTITY && img->oid_slot < 0;
}

static const char *source_name(unsigned source)
{
	switch (source) {
	case WC_OID_SRC_CREATE: return "at create";
	case WC_OID_SRC_ADOPT: return "at its first open by this library (it predates origin identities)";
	case WC_OID_SRC_GROWN: return "when the origin grew";
	case WC_OID_SRC_RENAMED: return "when the origin was opened under this name";
	case WC_OID_SRC_REBIND: return "when the cache was re-bound to it";
	default: return "(unknown occasion)";
	}
}

const char *wcctl_identity_str(char *buf, size_t len, const struct wcctl_image *img)
{
	const struct wc_pmem_origin_id *id;
	char desc[512];

	if (img->oid_slot < 0) {
		snprintf(buf, len, "%s", wcctl_identity_damaged(img)
		         ? "DAMAGED: neither identity slot (offsets 1024, 1536) is intact; "
		           "wc_open refuses the cache until `wcctl set-origin --force`"
		         : "none recorded (format version 2): recorded at the next open");
		return buf;
	}
	id = &img->oid[img->oid_slot];
	snprintf(buf, len, "%s, recorded %s, generation %" PRIu64,
	         wc_bind_describe(desc, sizeof(desc), id->kind, id->name, id->id, id->origin_size),
	         source_name(id->source), id->generation);
	return buf;
}

void wcctl_json_identity(struct wct_json *j, const char *key, const struct wcctl_image *img)
{
	const struct wc_pmem_origin_id *id;

	if (img->oid_slot < 0) {
		wct_json_null(j, key);
		return;
	}
	id = &img->oid[img->oid_slot];
	wct_json_object(j, key, false);
	wct_json_str(j, "kind", wc_origin_kind_name(id->kind));
	wct_json_str(j, "name", id->name);
	if (id->id[0])
		wct_json_str(j, "id", id->id);
	else
		wct_json_null(j, "id");
	wct_json_u64(j, "size", id->origin_size);
	wct_json_u64(j, "generation", id->generation);
	wct_json_u64(j, "slot", (uint64_t)img->oid_slot);
	wct_json_u64(j, "time", id->time);
	wct_json_end(j);
}

struct key {
	uint64_t origin, seq;
	uint32_t idx;
};

/* Origin ascending, then newest first, then index: the head of each run of
 * one origin block is the version recovery keeps. */
static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->origin != y->origin)
		return x->origin < y->origin ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq > y->seq ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void classify_runs(struct wcctl_image *img, const struct key *k, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t head = i, j;

		img->info[k[head].idx].state = WCCTL_COMMITTED;
		img->n_committed++;
		for (j = i + 1; j < n && k[j].origin == k[head].origin; j++) {
			struct wcctl_entry_info *e = &img->info[k[j].idx];

			if (k[j].seq == k[j - 1].seq) {
				/* Two committed versions of one block in one commit: the
				 * protocol never writes that (a rewrite in the same epoch
				 * invalidates the older entry, and the commit's record
				 * counts only the newer), so the metadata is corrupt. */
				struct wcctl_entry_info *prev = &img->info[k[j - 1].idx];

				if (prev->state != WCCTL_DUPLICATE) {
					if (prev->state == WCCTL_COMMITTED)
						img->n_committed--;
					else
						img->n_superseded--;
					prev->state = WCCTL_DUPLICATE;
					prev->other = k[j].idx;
					img->n_duplicate++;
				}
				e->state = WCCTL_DUPLICATE;
				e->other = k[j - 1].idx;
				img->n_duplicate++;
			} else {
				e->state = WCCTL_SUPERSEDED;
				e->other = k[head].idx;
				img->n_superseded++;
			}
		}
		i = j;
	}
}

static bool all_zero(const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* Count the entries of a record's epoch and check its digest. */
static void record_scan(struct wcctl_image *img, unsigned slot)
{
	const struct wc_pmem_record *r = &img->rec[slot];
	struct wcctl_record_info *ri = &img->rinfo[slot];
	uint64_t epoch = r->seq - 1, digest = 0;

	ri->found = 0;
	for (uint64_t i = 0; i < img->layout.n_blocks; i++) {
		if (img->entries[i].seq != epoch)
			continue;
		ri->found++;
		digest += wc_entry_digest(i, img->entries[i].origin_block, epoch);
	}
	ri->matches = ri->found == r->count && digest == r->digest;
}

int wcctl_image_commit(struct wcctl_image *img)
{
	const struct wc_layout *l = &img->layout;
	int top = -1;

	if (img->cp_ok)
		return 0;
	if (!img->sb_ok)
		return wc_err(-EINVAL, "%s: superblock not valid, entries not read", img->path);
	img->map_len = l->entries_offset + l->n_blocks * sizeof(struct wc_pmem_entry);
	img->map = mmap(NULL, img->map_len, PROT_READ, MAP_SHARED, img->fd, 0);
	if (img->map == MAP_FAILED) {
		img->map = NULL;
		return wc_err_sys(-errno, "%s: map %zu bytes of metadata read-only", img->path,
		                  img->map_len);
	}
	img->entries = (const struct wc_pmem_entry *)((const char *)img->map + l->entries_offset);
	wc_commit_point(&img->sb, img->rec, img->entries, l->n_blocks, &img->cp);

	/* What each slot says, by the rule wc_commit_point applies: the newest
	 * intact record above the floor decides, the other slot stands in. */
	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++) {
		struct wcctl_record_info *ri = &img->rinfo[i];

		memset(ri, 0, sizeof(*ri));
		ri->intact = wc_record_intact(&img->rec[i]);
		if (!ri->intact)
			continue;
		record_scan(img, i);
		if (top < 0 || img->rec[i].seq > img->rec[top].seq)
			top = (int)i;
	}
	img->cp_slot = -1;
	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++) {
		const struct wc_pmem_record *r = &img->rec[i];
		struct wcctl_record_info *ri = &img->rinfo[i];

		if (!ri->intact)
			ri->state = all_zero(r, sizeof(*r)) ? WCCTL_REC_EMPTY : WCCTL_REC_TORN;
		else if (r->seq <= img->cp.floor)
			ri->state = WCCTL_REC_COVERED;
		else if ((int)i == top)
			ri->state = ri->matches ? WCCTL_REC_VALID : WCCTL_REC_MISMATCH;
		else
			ri->state = img->rinfo[top].matches ? WCCTL_REC_OLDER : WCCTL_REC_FALLBACK;
		if ((ri->state == WCCTL_REC_VALID || ri->state == WCCTL_REC_FALLBACK) &&
		    r->seq == img->cp.seq)
			img->cp_slot = (int)i;
	}
	img->cp_ok = true;
	return 0;
}

int wcctl_image_classify(struct wcctl_image *img)
{
	const struct wc_layout *l = &img->layout;
	uint64_t origin_blocks = wcctl_origin_size(img) / l->block_size, point;
	struct key *keys;
	size_t nk = 0;
	int ret = wcctl_image_commit(img);

	if (ret)
		return ret;
	point = img->cp.seq; /* committed: seq below the commit point */
	img->info = calloc(l->n_blocks, sizeof(*img->info));
	if (!img->info)
		return wc_err(-ENOMEM, "%s: classify %llu entries", img->path,
		              (unsigned long long)l->n_blocks);
	for (uint64_t i = 0; i < l->n_blocks; i++) {
		const struct wc_pmem_entry *pe = &img->entries[i];
		struct wcctl_entry_info *e = &img->info[i];

		e->other = WCCTL_NO_ENTRY;
		if (pe->seq == WC_NONE) {
			e->state = WCCTL_FREE;
			img->n_free++;
		} else if (pe->seq >= point) {
			e->state = WCCTL_UNCOMMITTED;
			img->n_uncommitted++;
		} else if (pe->origin_block >= origin_blocks) {
			e->state = WCCTL_OUTSIDE;
			img->n_outside++;
		} else {
			e->state = WCCTL_COMMITTED; /* for now: classify_runs decides */
			nk++;
		}
	}
	keys = malloc((nk ? nk : 1) * sizeof(*keys));
	if (!keys)
		return wc_err(-ENOMEM, "%s: sort %zu committed entries", img->path, nk);
	nk = 0;
	for (uint64_t i = 0; i < l->n_blocks; i++)
		if (img->info[i].state == WCCTL_COMMITTED)
			keys[nk++] = (struct key){ img->entries[i].origin_block, img->entries[i].seq,
			                           (uint32_t)i };
	qsort(keys, nk, sizeof(*keys), key_cmp);
	classify_runs(img, keys, nk);
	free(keys);
	return 0;
}

void wcctl_image_close(struct wcctl_image *img)
{
	if (img->map)
		munmap(img->map, img->map_len);
	img->map = NULL;
	img->entries = NULL;
	free(img->info);
	img->info = NULL;
	if (img->fd >= 0)
		close(img->fd);
	img->fd = -1;
}

const char *wcctl_live_str(char *buf, size_t len, const struct wcctl_image *img)
{
	char who[200];

	snprintf(buf, len, "live, in use by %s", wc_lock_holder_str(who, sizeof(who), &img->holder));
	return buf;
}

void wcctl_json_live(struct wct_json *j, const struct wcctl_image *img)
{
	wct_json_bool(j, "live", img->live);
	if (img->live && img->holder.pid > 0)
		wct_json_int(j, "in_use_by", img->holder.pid);
	else
		wct_json_null(j, "in_use_by");
}

uint64_t wcctl_entry_offset(const struct wcctl_image *img, uint64_t idx)
{
	return img->layout.entries_offset + idx * sizeof(struct wc_pmem_entry);
}

const char *wcctl_state_name(enum wcctl_entry_state s)
{
	switch (s) {
	case WCCTL_FREE: return "free";
	case WCCTL_UNCOMMITTED: return "uncommitted";
	case WCCTL_COMMITTED: return "committed";
	case WCCTL_SUPERSEDED: return "superseded";
	case WCCTL_OUTSIDE: return "outside-origin";
	case WCCTL_DUPLICATE: return "duplicate";
	}
	return "?";
}

const char *wcctl_record_state_name(enum wcctl_record_state s)
{
	switch (s) {
	case WCCTL_REC_EMPTY: return "empty";
	case WCCTL_REC_TORN: return "torn";
	case WCCTL_REC_COVERED: return "covered";
	case WCCTL_REC_VALID: return "valid";
	case WCCTL_REC_MISMATCH: return "mismatch";
	case WCCTL_REC_FALLBACK: return "fallback";
	case WCCTL_REC_OLDER: return "older";
	}
	return "?";
}

uint64_t wcctl_record_offset(unsigned slot)
{
	return WC_RECORD_OFFSET + (uint64_t)slot * sizeof(struct wc_pmem_record);
}

const char *wcctl_record_str(char *buf, size_t len, const struct wcctl_image *img, unsigned slot)
{
	const struct wc_pmem_record *r = &img->rec[slot];
	const struct wcctl_record_info *ri = &img->rinfo[slot];
	char head[96];

	snprintf(head, sizeof(head), "seq %" PRIu64 ", count %" PRIu64, r->seq, r->count);
	switch ((enum wcctl_record_state)ri->state) {
	case WCCTL_REC_EMPTY:
		snprintf(buf, len, "empty");
		break;
	case WCCTL_REC_TORN:
		snprintf(buf, len, "torn (seq %" PRIu64 ", CRC32C 0x%08x stored, 0x%08x computed): ignored",
		         r->seq, r->crc, wc_record_crc(r));
		break;
	case WCCTL_REC_COVERED:
		snprintf(buf, len, "%s, intact, covered by the floor", head);
		break;
	case WCCTL_REC_VALID:
		snprintf(buf, len, "%s, intact, valid (%" PRIu64 " entries of epoch %" PRIu64
		         " match): the commit point", head, ri->found, r->seq - 1);
		break;
	case WCCTL_REC_MISMATCH:
		snprintf(buf, len, "%s, intact, NOT valid (%" PRIu64 " entries of epoch %" PRIu64
		         " found%s): that commit did not happen", head, ri->found, r->seq - 1,
		         ri->found == r->count ? ", digest differs" : "");
		break;
	case WCCTL_REC_FALLBACK:
		snprintf(buf, len, "%s, intact: the commit point (the newer record does not match)",
		         head);
		break;
	case WCCTL_REC_OLDER:
		snprintf(buf, len, "%s, intact, older than the other slot", head);
		break;
	}
	return buf;
}

const char *wcctl_commit_source(char *buf, size_t len, const struct wcctl_image *img)
{
	if (img->cp_slot < 0)
		snprintf(buf, len, "floor");
	else
		snprintf(buf, len, "record %d", img->cp_slot);
	return buf;
}

void wcctl_print_commit(const struct wcctl_image *img, const char *prefix)
{
	char line[256];

	printf("%sfloor seq_count %" PRIu64 " (offset %u)\n", prefix, img->cp.floor, WC_SEQ_OFFSET);
	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++)
		printf("%srecord %u (offset %" PRIu64 "): %s\n", prefix, i, wcctl_record_offset(i),
		       wcctl_record_str(line, sizeof(line), img, i));
	printf("%scommit point %" PRIu64 " (from %s%s): entries with seq below it are committed\n",
	       prefix, img->cp.seq, img->cp_slot < 0 ? "the " : "",
	       wcctl_commit_source(line, sizeof(line), img));
}

void wcctl_json_commit(struct wct_json *j, const char *key, const struct wcctl_image *img)
{
	char src[32];

	wct_json_object(j, key, true);
	wct_json_u64(j, "point", img->cp.seq);
	wct_json_str(j, "source", wcctl_commit_source(src, sizeof(src), img));
	wct_json_u64(j, "floor", img->cp.floor);
	wct_json_array(j, "records", true);
	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++) {
		const struct wc_pmem_record *r = &img->rec[i];
		const struct wcctl_record_info *ri = &img->rinfo[i];

		wct_json_object(j, NULL, false);
		wct_json_u64(j, "slot", i);
		wct_json_u64(j, "offset", wcctl_record_offset(i));
		wct_json_u64(j, "seq", r->seq);
		wct_json_u64(j, "count", r->count);
		wct_json_u64(j, "found", ri->found);
		wct_json_bool(j, "intact", ri->intact);
		wct_json_bool(j, "valid", ri->matches);
		wct_json_str(j, "state", wcctl_record_state_name((enum wcctl_record_state)ri->state));
		wct_json_end(j);
	}
	wct_json_end(j);
	wct_json_end(j);
}
