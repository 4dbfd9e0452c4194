/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * format.c -- the on-pmem format: layout math and superblock validation
 * (pure: no I/O), and wc_format, which writes a fresh one.
 *
 * Format (torn-safe): store WC_MAGIC_FORMATTING and drain; write the
 * entries (all NONE), the superblock's static fields with their CRC,
 * seq_count = 0 and two empty commit records; drain; only then store the
 * magic and drain.  A crash anywhere before the last drain leaves a file
 * that wc_open refuses as "no cache here" and wc_create formats again.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cache.h"
#include "util/crc32c.h"
#include "util/error.h"
#include "core/format.h"

static int block_size_ok(uint32_t bs)
{
	return bs >= WC_MIN_BLOCK && bs <= WC_MAX_BLOCK && (bs & (bs - 1)) == 0;
}

static uint64_t round_up(uint64_t x, uint64_t align)
{
	return (x + align - 1) / align * align;
}

int wc_layout_for_blocks(struct wc_layout *out, uint64_t n_blocks, uint32_t block_size)
{
	/* Data blocks start page aligned at least, so a DAX mapping hands
	 * O_DIRECT write-back whole, aligned pages. */
	uint64_t align = block_size < 4096 ? 4096 : block_size;
	uint64_t meta, data;

	if (!block_size_ok(block_size))
		return wc_err(-EINVAL, "block size %u: must be a power of two in %u..%u",
		              block_size, WC_MIN_BLOCK, WC_MAX_BLOCK);
	if (n_blocks == 0)
		return wc_err(-EINVAL, "0 blocks: a cache holds one at least");
	if (n_blocks > (UINT64_MAX - WC_SB_REGION) / 16 / 2 || n_blocks >= UINT32_MAX)
		return wc_err(-EFBIG, "%llu blocks: outside 1..%u",
		              (unsigned long long)n_blocks, UINT32_MAX - 1);
	meta = WC_SB_REGION + n_blocks * sizeof(struct wc_pmem_entry);
	data = round_up(meta, align);
	if (n_blocks > (UINT64_MAX - data) / block_size)
		return wc_err(-EFBIG, "%llu blocks of %u bytes overflow 64 bits",
		              (unsigned long long)n_blocks, block_size);
	out->block_size = block_size;
	out->n_blocks = n_blocks;
	out->entries_offset = WC_SB_REGION;
	out->data_offset = data;
	out->bytes_used = data + n_blocks * block_size;
	return 0;
}

int wc_layout_compute(struct wc_layout *out, uint64_t file_size, uint32_t block_size)
{
	uint64_t n;
	int ret;

	if (!block_size_ok(block_size))
		return wc_err(-EINVAL, "block size %u: must be a power of two in %u..%u",
		              block_size, WC_MIN_BLOCK, WC_MAX_BLOCK);
	if (file_size <= WC_SB_REGION + sizeof(struct wc_pmem_entry) + block_size)
		goto too_small;
	n = (file_size - WC_SB_REGION) / (block_size + sizeof(struct wc_pmem_entry));
	if (n >= UINT32_MAX)
		n = UINT32_MAX - 1;
	/* The entry array's round-up to the data alignment may cost a block or
	 * two; step down until everything fits. */
	for (; n > 0; n--) {
		ret = wc_layout_for_blocks(out, n, block_size);
		if (ret)
			return ret;
		if (out->bytes_used <= file_size)
			return 0;
	}
too_small:
	/* The caller's file, not the file system, is short: -EINVAL, where
	 * -ENOSPC would read as a full disk. */
	ret = wc_layout_for_blocks(out, 1, block_size);
	return wc_err(-EINVAL, "%llu bytes are too small for a cache of %u-byte blocks: it takes "
	              "%llu bytes at least (superblock %u, entries, one block)",
	              (unsigned long long)file_size, block_size,
	              ret ? 0ull : (unsigned long long)out->bytes_used, WC_SB_REGION);
}

uint32_t wc_sb_crc(const struct wc_pmem_sb *sb)
{
	return wc_crc32c(0, (const char *)sb + WC_SB_CRC_START, WC_SB_CRC_END - WC_SB_CRC_START);
}

uint32_t wc_policy_crc(const struct wc_pmem_policy *pl)
{
	return wc_crc32c(0, pl, WC_POLICY_CRC_END);
}

int wc_policy_check(const struct wc_pmem_policy *pl)
{
	static const struct wc_pmem_policy zero;

	if (memcmp(pl, &zero, sizeof(zero)) == 0)
		return wc_err(-ENODATA, "no flush policy recorded (line at offset %u is zero)",
		              WC_POLICY_OFFSET);
	if (pl->magic != WC_POLICY_MAGIC || pl->version < 1 || pl->version > WC_POLICY_VERSION)
		return wc_err(-EBADMSG, "flush policy line at offset %u: magic 0x%016llx version %u "
		              "(expected 0x%016llx version 1..%u)", WC_POLICY_OFFSET,
		              (unsigned long long)pl->magic, pl->version,
		              (unsigned long long)WC_POLICY_MAGIC, WC_POLICY_VERSION);
	if (wc_policy_crc(pl) != pl->crc)
		return wc_err(-EBADMSG, "flush policy line at offset %u: CRC32C mismatch (stored "
		              "0x%08x, computed 0x%08x)", WC_POLICY_OFFSET, pl->crc,
		              wc_policy_crc(pl));
	return 0;
}

uint32_t wc_origin_id_crc(const struct wc_pmem_origin_id *id)
{
	return wc_crc32c(0, id, WC_ORIGIN_ID_CRC_END);
}

bool wc_origin_id_intact(const struct wc_pmem_origin_id *id)
{
	return id->magic == WC_ORIGIN_ID_MAGIC && id->version == WC_ORIGIN_ID_VERSION &&
	       id->generation > 0 && id->origin_size > 0 &&
	       memchr(id->id, 0, sizeof(id->id)) && memchr(id->name, 0, sizeof(id->name)) &&
	       wc_origin_id_crc(id) == id->crc;
}

int wc_origin_id_current(const struct wc_pmem_origin_id *slots)
{
	int best = -1;

	for (unsigned i = 0; i < WC_ORIGIN_ID_SLOTS; i++)
		if (wc_origin_id_intact(&slots[i]) &&
		    (best < 0 || slots[i].generation > slots[best].generation))
			best = (int)i;
	return best;
}

void wc_origin_id_seal(struct wc_pmem_origin_id *id)
{
	id->magic = WC_ORIGIN_ID_MAGIC;
	id->version = WC_ORIGIN_ID_VERSION;
	id->crc = wc_origin_id_crc(id);
}

uint32_t wc_record_crc(const struct wc_pmem_record *r)
{
	return wc_crc32c(0, r, offsetof(struct wc_pmem_record, crc));
}

bool wc_record_intact(const struct wc_pmem_record *r)
{
	return r->seq > 0 && r->seq < WC_SEQ_MAX && r->count <= UINT32_MAX &&
	       wc_record_crc(r) == r->crc;
}

void wc_commit_point(const struct wc_pmem_sb *sb, const struct wc_pmem_record *slots,
                     const struct wc_pmem_entry *entries, uint64_t n_blocks,
                     struct wc_commit_point *out)
{
	const struct wc_pmem_record *top = NULL, *other = NULL;
	uint64_t epoch, count = 0, digest = 0;

	out->floor = out->seq = sb->seq_count;
	out->top_seq = out->top_count = out->found_count = 0;
	out->top_valid = false;
	for (unsigned i = 0; i < WC_RECORD_SLOTS; i++) {
		const struct wc_pmem_record *r = &slots[i];

		if (!wc_record_intact(r))
			continue;
		if (!top || r->seq > top->seq) {
			other = top;
			top = r;
		} else {
			other = r;
		}
	}
	if (!top)
		return;
	out->top_seq = top->seq;
	out->top_count = top->count;
	if (top->seq <= out->floor)
		return; /* the floor already covers it */
	epoch = top->seq - 1;
	for (uint64_t i = 0; i < n_blocks; i++) {
		if (entries[i].seq != epoch)
			continue;
		count++;
		digest += wc_entry_digest(i, entries[i].origin_block, epoch);
	}
	out->found_count = count;
	out->top_valid = count == top->count && digest == top->digest;
	if (out->top_valid)
		out->seq = top->seq;
	else if (other && other->seq > out->seq)
		out->seq = other->seq;
}

int wc_sb_validate(const struct wc_pmem_sb *sb, uint64_t file_size, const char *path,
                   struct wc_layout *l)
{
	uint64_t magic = sb->magic;

	if (file_size < WC_SB_REGION)
		return wc_err(-EUCLEAN, "%s: %llu bytes, smaller than the %u-byte superblock: a cache "
		              "cut short (truncated), or no cache", path, (unsigned long long)file_size,
		              WC_SB_REGION);
	if (magic == WC_MAGIC_FORMATTING)
		return wc_err(-ENODATA, "%s: no cache here: a format that did not complete (wc_create "
		              "was interrupted); create it again", path);
	if (magic == 0 && sb->version == 0)
		return wc_err(-ENODATA, "%s: no cache here (magic is zero: never formatted, or a format "
		                       "cut short by a library before 0.7)", path);
	if (magic != WC_MAGIC)
		return wc_err(-EILSEQ, "%s: bad magic 0x%016llx at offset 0 (expected 0x%016llx): not a libwcache cache",
		              path, (unsigned long long)magic, (unsigned long long)WC_MAGIC);
	if (sb->version == 1)
		return wc_err(-EPROTO, "%s: format version 1 at offset 8 (an earlier libwcache, committed with "
		                       "seq_count alone); this library reads version %u: drain it with that "
		                       "library's 'wcctl writeback', then re-create it with 'wcctl create "
		                       "--force'",
		              path, WC_FORMAT_VERSION);
	if (sb->version != WC_FORMAT_VERSION && sb->version != WC_FORMAT_VERSION_NO_IDENTITY)
		return wc_err(-EPROTO, "%s: format version %u at offset 8, this library reads versions %u and %u",
		              path, sb->version, WC_FORMAT_VERSION_NO_IDENTITY, WC_FORMAT_VERSION);
	if (wc_sb_crc(sb) != sb->crc)
		return wc_err(-EBADMSG, "%s: superblock CRC32C mismatch (stored 0x%08x, computed 0x%08x at offset %u)",
		              path, sb->crc, wc_sb_crc(sb), WC_SB_CRC_END);
	if (wc_layout_for_blocks(l, sb->n_blocks, sb->block_size))
		return wc_err(-EUCLEAN, "%s: superblock geometry invalid (block_size %u, n_blocks %llu)",
		              path, sb->block_size, (unsigned long long)sb->n_blocks);
	if (sb->entries_offset != l->entries_offset || sb->data_offset != l->data_offset)
		return wc_err(-EUCLEAN, "%s: superblock offsets (entries %llu, data %llu) disagree with geometry (%llu, %llu)",
		              path, (unsigned long long)sb->entries_offset, (unsigned long long)sb->data_offset,
		              (unsigned long long)l->entries_offset, (unsigned long long)l->data_offset);
	if (sb->origin_size == 0 || sb->origin_size % sb->block_size)
		return wc_err(-EUCLEAN, "%s: origin size %llu in superblock is not a positive multiple of block size %u",
		              path, (unsigned long long)sb->origin_size, sb->block_size);
	if (l->bytes_used > file_size)
		return wc_err(-EUCLEAN, "%s: truncated: the superblock needs %llu bytes, the file has %llu",
		              path, (unsigned long long)l->bytes_used, (unsigned long long)file_size);
	if (sb->seq_count >= WC_SEQ_MAX)
		return wc_err(-EUCLEAN, "%s: commit counter seq_count %llu at offset %u is out of range (>= 2^63)",
		              path, (unsigned long long)sb->seq_count, WC_SEQ_OFFSET);
	return 0;
}

int wc_format(struct wc_cache *c, uint64_t origin_size, const struct wc_pmem_origin_id *id)
{
	struct wc_pmem_sb *sb = wc_sb(c->base), img;
	const struct wc_layout *l = &c->layout;
	struct timespec now;
	FILE *ur;

	/* First and alone: what was there no longer reads as a cache, and a
	 * torn format reads as one of ours that a new create may overwrite. */
	wc_persist_store8(&c->fp, &sb->magic, WC_MAGIC_FORMATTING);
	wc_persist_drain(&c->fp);

	memset(&img, 0, sizeof(img));
	img.version = WC_FORMAT_VERSION;
	img.block_size = l->block_size;
	img.n_blocks = l->n_blocks;
	img.origin_size = origin_size;
	ur = fopen("/dev/urandom", "rb");
	if (!ur || fread(img.uuid, 1, sizeof(img.uuid), ur) != sizeof(img.uuid)) {
		clock_gettime(CLOCK_REALTIME, &now);
		for (unsigned i = 0; i < sizeof(img.uuid); i++)
			img.uuid[i] = (uint8_t)((now.tv_nsec >> (i % 8)) ^ (i * 131) ^ getpid());
	}
	if (ur)
		fclose(ur);
	img.uuid[6] = (img.uuid[6] & 0x0f) | 0x40; /* RFC 4122 version 4 */
	img.uuid[8] = (img.uuid[8] & 0x3f) | 0x80;
	img.entries_offset = l->entries_offset;
	img.data_offset = l->data_offset;
	img.pmem_threshold = c->fp.threshold;
	img.pmem_force = (uint32_t)c->cfg.pmem.force;
	img.pmem_flush_insn = (uint32_t)c->cfg.pmem.flush_insn;
	clock_gettime(CLOCK_REALTIME, &now);
	img.format_time = (uint64_t)now.tv_sec;
	img.crc = wc_sb_crc(&img);
	img.seq_count = 0;
	c->commit.durable_floor = 0;

	wc_persist_set(&c->fp, wc_pmem_entry(c->base, l, 0), 0xff,
	             l->n_blocks * sizeof(struct wc_pmem_entry));
	wc_persist_copy(&c->fp, (char *)sb + 8, (const char *)&img + 8, sizeof(img) - 8);
	wc_persist_set(&c->fp, wc_pmem_record(c->base, 0), 0,
	             WC_RECORD_SLOTS * sizeof(struct wc_pmem_record));
	/* The origin's identity is durable before the magic: a cache that
	 * opens always names its origin. */
	wc_persist_copy(&c->fp, wc_origin_id_slot(c->base, 0), id, sizeof(*id));
	wc_persist_set(&c->fp, wc_origin_id_slot(c->base, 1), 0, sizeof(*id));
	wc_persist_drain(&c->fp);
	wc_persist_store8(&c->fp, &sb->magic, WC_MAGIC);
	wc_persist_drain(&c->fp);
	return 0;
}
