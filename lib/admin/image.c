/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * image.c -- a cache file read offline (wcadmin.h): opened read-only, its
 * owner's lock tested and never taken, the superblock validated by
 * wc_sb_validate (core/format.h), the commit records and the identity slots
 * copied and decoded into the admin interface's own structs, and the
 * entries mapped read-only.  Nothing here ever writes the file.
 *
 * The commit point is the library's own (wc_commit_point: the floor
 * seq_count, or a commit record above it whose entries match); what each
 * record slot says is added, so a reader sees why.  The entries are
 * classified in image_scan.c.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/wcadmin.h"
#include "block/format.h"
#include "core/bind.h"
#include "core/format.h"
#include "util/error.h"
#include "util/lock.h"
#include "util/bytes.h"

/* The numbers wcadmin.h repeats from the format, checked here. */
_Static_assert(WCADM_FORMAT_VERSION == WC_FORMAT_VERSION, "format version");
_Static_assert(WCADM_MIN_BLOCK == WC_MIN_BLOCK && WCADM_MAX_BLOCK == WC_MAX_BLOCK, "block sizes");
_Static_assert(WCADM_NONE == WC_NONE, "free entry");
_Static_assert(WCADM_SEQ_OFFSET == WC_SEQ_OFFSET, "seq_count offset");
_Static_assert(WCADM_RECORD_SLOTS == WC_RECORD_SLOTS, "record slots");
_Static_assert(WCADM_ORIGIN_ID_OFFSET == WC_ORIGIN_ID_OFFSET &&
               WCADM_ORIGIN_ID_SIZE == sizeof(struct wc_pmem_origin_id), "identity slots");
_Static_assert(WCADM_ORIGIN_ID_ID_LEN == WC_ORIGIN_ID_ID_LEN &&
               WCADM_ORIGIN_ID_NAME_LEN == WC_ORIGIN_ID_NAME_LEN, "identity fields");
/* The tools read the mapped entries through struct wcadm_entry. */
_Static_assert(sizeof(struct wcadm_entry) == sizeof(struct wc_pmem_entry) &&
               __builtin_offsetof(struct wcadm_entry, origin_block) ==
                       __builtin_offsetof(struct wc_pmem_entry, origin_block) &&
               __builtin_offsetof(struct wcadm_entry, seq) ==
                       __builtin_offsetof(struct wc_pmem_entry, seq), "entry layout");

/* The slots as read (wc_commit_point reads them) and the mapping. */
struct wcadm_image_raw {
	struct wc_pmem_sb sb;
	struct wc_pmem_record rec[WC_RECORD_SLOTS];
	struct wc_pmem_origin_id oid[WC_ORIGIN_ID_SLOTS];
	void *map;
	size_t map_len;
};

static void decode_sb(struct wcadm_sb *out, const struct wc_pmem_sb *sb)
{
	out->version = sb->version;
	out->block_size = sb->block_size;
	out->n_blocks = sb->n_blocks;
	out->origin_size = sb->origin_size;
	memcpy(out->uuid, sb->uuid, sizeof(out->uuid));
	out->format_time = sb->format_time;
	out->seq_count = sb->seq_count;
}

static void decode_record(struct wcadm_record *out, const struct wc_pmem_record *r)
{
	memset(out, 0, sizeof(*out));
	out->seq = r->seq;
	out->count = r->count;
	out->crc = r->crc;
	out->crc_computed = wc_record_crc(r);
	out->intact = wc_record_intact(r);
}

static void decode_origin_id(struct wcadm_origin_id *out, const struct wc_pmem_origin_id *id)
{
	out->kind = id->kind;
	out->source = id->source;
	out->generation = id->generation;
	out->size = id->origin_size;
	out->time = id->time;
	/* An intact slot's strings are terminated (wc_origin_id_intact). */
	snprintf(out->id, sizeof(out->id), "%s", id->id);
	snprintf(out->name, sizeof(out->name), "%s", id->name);
}

static void decode_layout(struct wcadm_layout *out, const struct wc_layout *l)
{
	out->block_size = l->block_size;
	out->n_blocks = l->n_blocks;
	out->entries_offset = l->entries_offset;
	out->data_offset = l->data_offset;
	out->bytes_used = l->bytes_used;
}

/* The head of the file: the superblock, the records and the identity slots.
 * A file shorter than that reads as zeros past its end; wc_sb_validate
 * then names the truncation. */
static int read_head(struct wcadm_image *img)
{
	struct wcadm_image_raw *raw = img->raw;
	const struct { void *buf; size_t len; unsigned off; const char *what; } parts[] = {
		{ &raw->sb, sizeof(raw->sb), 0, "the superblock" },
		{ raw->rec, sizeof(raw->rec), WC_RECORD_OFFSET, "the commit records" },
		{ raw->oid, sizeof(raw->oid), WC_ORIGIN_ID_OFFSET, "the origin identity" },
	};

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (pread(img->fd, parts[i].buf, parts[i].len, parts[i].off) < 0)
			return wc_err_sys(-errno, "%s: read %s at offset %u", img->path, parts[i].what,
			                  parts[i].off);
	return 0;
}

/* A test, not a lock: taking it, even for a moment, could refuse the
 * owner's own open.  A file system without locks has no owner to report. */
static void probe_owner(struct wcadm_image *img)
{
	struct wc_lock_holder h;

	img->live = wc_lock_probe(img->fd, img->path, &h) == 1;
	if (!img->live)
		return;
	img->holder_pid = h.pid;
	wc_lock_holder_str(img->holder, sizeof(img->holder), &h);
}

static int fail(struct wcadm_image *img, int ret)
{
	wcadm_image_close(img);
	return ret;
}

int wcadm_image_open(struct wcadm_image *img, const char *path)
{
	struct wc_layout l;
	struct stat st;
	off_t end;
	int ret;

	memset(img, 0, sizeof(*img));
	img->path = path;
	img->oid_slot = -1;
	img->cp_slot = -1;
	img->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (img->fd < 0)
		return wc_err_sys(-errno, "%s: open read-only", path);
	img->raw = calloc(1, sizeof(*img->raw));
	if (!img->raw)
		return fail(img, wc_err(-ENOMEM, "%s: out of memory", path));
	if (fstat(img->fd, &st))
		return fail(img, wc_err_sys(-errno, "%s: fstat", path));
	if (S_ISDIR(st.st_mode))
		return fail(img, wc_err(-EISDIR, "%s: is a directory, not a cache image", path));
	probe_owner(img);
	/* A block device reports its size through lseek, not st_size. */
	end = lseek(img->fd, 0, SEEK_END);
	if (end < 0)
		return fail(img, wc_err_sys(-errno, "%s: size", path));
	img->file_size = (uint64_t)end;
	ret = read_head(img);
	if (ret)
		return fail(img, ret);
	/* Another medium's layout: image_block.c reads it. */
	if (img->raw->sb.magic == WC_BLK_MAGIC || img->raw->sb.magic == WC_BLK_MAGIC_FORMATTING) {
		img->block = true;
		return wc_err(-EMEDIUMTYPE, "%s: a cache on the block medium, not on pmem", path);
	}
	decode_sb(&img->sb, &img->raw->sb);
	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++)
		decode_record(&img->rec[i], &img->raw->rec[i]);
	img->oid_slot = wc_origin_id_current(img->raw->oid);
	if (img->oid_slot >= 0)
		decode_origin_id(&img->oid, &img->raw->oid[img->oid_slot]);
	ret = wc_sb_validate(&img->raw->sb, img->file_size, path, &l);
	img->sb_ok = ret == 0;
	if (img->sb_ok)
		decode_layout(&img->layout, &l);
	return ret;
}

/* Count the entries of a record's epoch and check its digest. */
static void record_scan(struct wcadm_image *img, const struct wc_pmem_entry *entries,
                        unsigned slot)
{
	const struct wc_pmem_record *r = &img->raw->rec[slot];
	struct wcadm_record *ri = &img->rec[slot];
	uint64_t epoch = r->seq - 1, digest = 0;

	ri->found = 0;
	for (uint64_t i = 0; i < img->layout.n_blocks; i++) {
		if (entries[i].seq != epoch)
			continue;
		ri->found++;
		digest += wc_entry_digest(i, entries[i].origin_block, epoch);
	}
	ri->matches = ri->found == r->count && digest == r->digest;
}

/* What each slot says, by the rule wc_commit_point applies: the newest
 * intact record above the floor decides, the other slot stands in. */
static void record_states(struct wcadm_image *img, const struct wc_pmem_entry *entries)
{
	const struct wc_pmem_record *raw = img->raw->rec;
	int top = -1;

	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++) {
		struct wcadm_record *ri = &img->rec[i];

		ri->found = 0;
		ri->matches = false;
		ri->state = 0;
		if (!ri->intact)
			continue;
		record_scan(img, entries, i);
		if (top < 0 || raw[i].seq > raw[top].seq)
			top = (int)i;
	}
	img->cp_slot = -1;
	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++) {
		const struct wc_pmem_record *r = &raw[i];
		struct wcadm_record *ri = &img->rec[i];

		if (!ri->intact)
			ri->state = wc_all_zero(r, sizeof(*r)) ? WCADM_REC_EMPTY : WCADM_REC_TORN;
		else if (r->seq <= img->cp_floor)
			ri->state = WCADM_REC_COVERED;
		else if ((int)i == top)
			ri->state = ri->matches ? WCADM_REC_VALID : WCADM_REC_MISMATCH;
		else
			ri->state = img->rec[top].matches ? WCADM_REC_OLDER : WCADM_REC_FALLBACK;
		if ((ri->state == WCADM_REC_VALID || ri->state == WCADM_REC_FALLBACK) &&
		    r->seq == img->cp_seq)
			img->cp_slot = (int)i;
	}
}

int wcadm_image_commit(struct wcadm_image *img)
{
	const struct wcadm_layout *l = &img->layout;
	struct wcadm_image_raw *raw = img->raw;
	const struct wc_pmem_entry *entries;
	struct wc_commit_point cp;

	if (img->cp_ok)
		return 0;
	if (!img->sb_ok || !raw)
		return wc_err(-EINVAL, "%s: superblock not valid, entries not read", img->path);
	raw->map_len = l->entries_offset + l->n_blocks * sizeof(struct wc_pmem_entry);
	raw->map = mmap(NULL, raw->map_len, PROT_READ, MAP_SHARED, img->fd, 0);
	if (raw->map == MAP_FAILED) {
		raw->map = NULL;
		return wc_err_sys(-errno, "%s: map %zu bytes of metadata read-only", img->path,
		                  raw->map_len);
	}
	entries = (const struct wc_pmem_entry *)((const char *)raw->map + l->entries_offset);
	img->entries = (const struct wcadm_entry *)entries;
	wc_commit_point(&raw->sb, raw->rec, entries, l->n_blocks, &cp);
	img->cp_seq = cp.seq;
	img->cp_floor = cp.floor;
	record_states(img, entries);
	img->cp_ok = true;
	return 0;
}

void wcadm_image_close(struct wcadm_image *img)
{
	if (img->raw && img->raw->map)
		munmap(img->raw->map, img->raw->map_len);
	free(img->raw);
	img->raw = NULL;
	img->entries = NULL;
	free(img->info);
	img->info = NULL;
	if (img->fd >= 0)
		close(img->fd);
	img->fd = -1;
}

uint64_t wcadm_image_origin_size(const struct wcadm_image *img)
{
	return img->oid_slot >= 0 ? img->oid.size : img->sb.origin_size;
}

bool wcadm_image_identity_damaged(const struct wcadm_image *img)
{
	return img->sb_ok && img->sb.version != WC_FORMAT_VERSION_NO_IDENTITY && img->oid_slot < 0;
}

uint64_t wcadm_entry_offset(const struct wcadm_image *img, uint64_t idx)
{
	return img->layout.entries_offset + idx * sizeof(struct wc_pmem_entry);
}

const char *wcadm_origin_id_str(char *buf, size_t len, const struct wcadm_origin_id *id)
{
	return wc_bind_describe(buf, len, id->kind, id->name, id->id, id->size);
}

const char *wcadm_origin_id_source(unsigned source)
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

const char *wcadm_origin_kind_name(unsigned kind)
{
	return wc_origin_kind_name(kind);
}
