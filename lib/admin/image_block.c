/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * image_block.c -- a cache on the block medium read offline (wcadmin.h):
 * opened read-only with plain pread (no O_DIRECT: nothing here needs the
 * device's alignment, and a cache in use stays coherent enough for a view
 * that says it is live), its owner's lock tested and never taken.  The
 * checks are lib/block/format.h's own (wc_blk_sb_check, wc_blk_state_current,
 * wc_blk_rec_valid, wc_blk_sum_crc), so a tool and wc_open judge one image
 * alike; what is added is that the scan goes on past what recovery would
 * refuse, to list everything, and that it reads the record area of a
 * summarized segment too (verify), to find a summary that names records
 * which are not whole -- recovery trusts the summary and would serve them.
 *
 * What is damage: a superblock wc_open refuses; neither state slot intact;
 * neither identity slot intact; a summary whose entries do not fit the
 * segment, or that disagrees with the records it summarizes; a block beyond
 * the origin; a segment found empty before a summarized one (holes()).  What is info: one state slot torn; a summary missing or torn
 * (it is written unsynced, after the records are durable: recovery reads
 * the segment whole); a record of an unsummarized segment whose CRC fails
 * (a write in flight at a crash, never acknowledged).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/wcadmin.h"
#include "block/format.h"
#include "core/bind.h"
#include "core/format.h"
#include "util/bytes.h"
#include "util/crc32c.h"
#include "util/error.h"
#include "util/lock.h"

_Static_assert(WCADM_BLK_VERSION == WC_BLK_VERSION, "block format version");
_Static_assert(WCADM_BLK_STATE_OFFSET == WC_BLK_STATE_OFFSET && WCADM_BLK_ID_OFFSET == WC_BLK_ID_OFFSET &&
               WCADM_BLK_UNIT == WC_BLK_UNIT, "block layout");

struct wcadm_blk_raw {
	struct wc_blk_sb sb;
	struct wc_blk_state st[2];
	struct wc_pmem_origin_id oid[2];
};

bool wcadm_blk_is_image(const char *path)
{
	return wc_blk_is_block_image(path);
}

/* Whole reads; past the end of the file reads as zeros (the checks then
 * name what is missing). */
static int read_at(struct wcadm_blk_image *bi, void *buf, size_t len, uint64_t off, const char *what)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(bi->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return wc_err_sys(-errno, "%s: read %s (%zu bytes at offset %llu)", bi->path, what,
			                  len, (unsigned long long)off);
		if (n == 0) {
			memset((char *)buf + done, 0, len - done);
			break;
		}
		done += (size_t)n;
	}
	return 0;
}

static void probe_owner(struct wcadm_blk_image *bi)
{
	struct wc_lock_holder h;

	bi->live = wc_lock_probe(bi->fd, bi->path, &h) == 1;
	if (bi->live) {
		bi->holder_pid = h.pid;
		wc_lock_holder_str(bi->holder, sizeof(bi->holder), &h);
	}
}

static void decode_state(struct wcadm_blk_state *out, const struct wc_blk_state *st, unsigned slot)
{
	memset(out, 0, sizeof(*out));
	out->offset = WC_BLK_STATE_OFFSET + (uint64_t)slot * WC_BLK_UNIT;
	out->generation = st->generation;
	out->tail_seg = st->tail_seg;
	out->clean_seg = st->clean_seg;
	out->open_limit = st->open_limit;
	out->time = st->time;
	out->crc = st->crc;
	out->crc_computed = wc_blk_state_crc(st);
	out->magic_ok = st->magic == WC_BLK_STATE_MAGIC;
	out->zero = wc_all_zero(st, sizeof(*st));
	out->intact = wc_blk_state_intact(st);
}

static void decode_sb(struct wcadm_blk_image *bi, const struct wc_blk_sb *sb)
{
	bi->version = sb->version;
	bi->block_size = sb->block_size;
	bi->lba_size = sb->lba_size;
	bi->seg_start = sb->seg_start;
	bi->seg_bytes = sb->seg_bytes;
	bi->n_segments = sb->n_segments;
	bi->summary_bytes = sb->summary_bytes;
	bi->origin_size = sb->origin_size;
	memcpy(bi->uuid, sb->uuid, sizeof(bi->uuid));
	bi->cache_id = sb->cache_id;
	bi->device_bytes = sb->device_bytes;
	bi->format_time = sb->format_time;
	bi->sb_crc = sb->crc;
	bi->sb_crc_computed = wc_blk_sb_crc(sb);
}

static void decode_oid(struct wcadm_blk_image *bi)
{
	const struct wc_pmem_origin_id *id;

	bi->oid_slot = wc_origin_id_current(bi->raw->oid);
	if (bi->oid_slot < 0)
		return;
	id = &bi->raw->oid[bi->oid_slot];
	bi->oid.kind = id->kind;
	bi->oid.source = id->source;
	bi->oid.generation = id->generation;
	bi->oid.size = id->origin_size;
	bi->oid.time = id->time;
	snprintf(bi->oid.id, sizeof(bi->oid.id), "%s", id->id);
	snprintf(bi->oid.name, sizeof(bi->oid.name), "%s", id->name);
}

static int fail(struct wcadm_blk_image *bi, int ret)
{
	wcadm_blk_close(bi);
	return ret;
}

int wcadm_blk_open(struct wcadm_blk_image *bi, const char *path)
{
	struct wcadm_blk_raw *raw;
	struct wc_blk_geom g;
	struct stat st;
	char msg[512];
	off_t end;
	int ret;

	memset(bi, 0, sizeof(*bi));
	bi->path = path;
	bi->state_slot = -1;
	bi->oid_slot = -1;
	bi->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (bi->fd < 0)
		return wc_err_sys(-errno, "%s: open read-only", path);
	bi->raw = raw = calloc(1, sizeof(*raw));
	if (!raw)
		return fail(bi, wc_err(-ENOMEM, "%s: out of memory", path));
	if (fstat(bi->fd, &st))
		return fail(bi, wc_err_sys(-errno, "%s: fstat", path));
	if (S_ISDIR(st.st_mode))
		return fail(bi, wc_err(-EISDIR, "%s: is a directory, not a cache image", path));
	probe_owner(bi);
	end = lseek(bi->fd, 0, SEEK_END); /* a block device's size */
	if (end < 0)
		return fail(bi, wc_err_sys(-errno, "%s: size", path));
	bi->file_size = (uint64_t)end;
	ret = read_at(bi, &raw->sb, sizeof(raw->sb), 0, "the superblock");
	for (unsigned i = 0; i < 2 && !ret; i++)
		ret = read_at(bi, &raw->st[i], sizeof(raw->st[i]),
		              WC_BLK_STATE_OFFSET + (uint64_t)i * WC_BLK_UNIT, "a ring state slot");
	for (unsigned i = 0; i < 2 && !ret; i++)
		ret = read_at(bi, &raw->oid[i], sizeof(raw->oid[i]),
		              WC_BLK_ID_OFFSET + (uint64_t)i * WC_BLK_UNIT, "an origin identity slot");
	if (ret)
		return fail(bi, ret);
	decode_sb(bi, &raw->sb);
	for (unsigned i = 0; i < 2; i++)
		decode_state(&bi->state[i], &raw->st[i], i);
	{
		const struct wc_blk_state *slots[2] = { &raw->st[0], &raw->st[1] };

		bi->state_slot = wc_blk_state_current(slots);
	}
	decode_oid(bi);
	ret = wc_blk_sb_check(&raw->sb, bi->file_size, path);
	if (ret) {
		/* The check names the field; say where the superblock is. */
		snprintf(msg, sizeof(msg), "%s", wc_errmsg());
		return wc_err(ret, "%s (superblock at offset 0, %zu bytes)", msg, sizeof(raw->sb));
	}
	bi->sb_ok = true;
	wc_blk_geom_from_sb(&g, &raw->sb);
	bi->sum_cap = g.sum_cap;
	bi->seg_data_bytes = g.seg_data_bytes;
	bi->n_entries = g.n_entries;
	return 0;
}

void wcadm_blk_close(struct wcadm_blk_image *bi)
{
	free(bi->raw);
	bi->raw = NULL;
	if (bi->fd >= 0)
		close(bi->fd);
	bi->fd = -1;
}

uint64_t wcadm_blk_origin_size(const struct wcadm_blk_image *bi)
{
	return bi->oid_slot >= 0 ? bi->oid.size : bi->origin_size;
}

const char *wcadm_blk_sum_state_name(unsigned state)
{
	switch (state) {
	case WCADM_SUM_NONE: return "none";
	case WCADM_SUM_STALE: return "stale";
	case WCADM_SUM_INTACT: return "intact";
	case WCADM_SUM_DAMAGED: return "damaged";
	}
	return "?";
}

/* ---- the ring ------------------------------------------------------------ */

/* A data version (origin block, seq, dirty) or a discard (first, count, seq). */
struct version {
	uint64_t origin, seq;
	bool dirty;
};
struct discard {
	uint64_t first, len, seq;
};

struct scan {
	struct wcadm_blk_image *bi;
	const struct wcadm_blk_scan_ops *ops;
	struct wc_blk_geom g;
	uint64_t origin_blocks;
	void *area;
	struct wc_blk_sum_head *sum;
	struct wc_blk_sum_ent *found;    /* entries from the area, as recovery's scan_area */
	uint32_t n_found;
	struct version *v;
	uint64_t n_v, cap_v;
	struct discard *d;
	uint64_t n_d, cap_d;
	uint8_t *holds;          /* per segment read: 1 records, 2 an intact summary */
};

static void finding(struct scan *sc, bool damage, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void finding(struct scan *sc, bool damage, uint64_t offset, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	if (damage)
		sc->bi->n_damage++;
	else
		sc->bi->n_info++;
	if (!sc->ops->finding)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	sc->ops->finding(sc->ops->arg, &(struct wcadm_blk_finding){ damage, offset, text });
}

static int push_version(struct scan *sc, uint64_t origin, uint64_t seq, bool dirty)
{
	if (sc->n_v == sc->cap_v) {
		uint64_t cap = sc->cap_v ? 2 * sc->cap_v : 4096;
		struct version *p = realloc(sc->v, cap * sizeof(*p));

		if (!p)
			return wc_err(-ENOMEM, "%s: %llu block versions", sc->bi->path,
			              (unsigned long long)cap);
		sc->v = p;
		sc->cap_v = cap;
	}
	sc->v[sc->n_v++] = (struct version){ origin, seq, dirty };
	return 0;
}

static int push_discard(struct scan *sc, uint64_t first, uint64_t len, uint64_t seq)
{
	if (sc->n_d == sc->cap_d) {
		uint64_t cap = sc->cap_d ? 2 * sc->cap_d : 256;
		struct discard *p = realloc(sc->d, cap * sizeof(*p));

		if (!p)
			return wc_err(-ENOMEM, "%s: %llu discards", sc->bi->path, (unsigned long long)cap);
		sc->d = p;
		sc->cap_d = cap;
	}
	sc->d[sc->n_d++] = (struct discard){ first, len, seq };
	return 0;
}

static void classify_summary(struct scan *sc, struct wcadm_blk_seg *s)
{
	const struct wc_blk_sum_head *h = sc->sum;

	s->sum_n = h->n;
	s->sum_crc = h->crc;
	if (h->magic != WC_BLK_SUM_MAGIC) {
		s->sum_state = WCADM_SUM_NONE;
		return;
	}
	if (h->cache_id != sc->bi->cache_id || h->seg != s->seg) {
		s->sum_state = WCADM_SUM_STALE;
		return;
	}
	if (h->n > sc->g.sum_cap) {
		s->sum_state = WCADM_SUM_DAMAGED;
		return;
	}
	s->sum_crc_computed = wc_blk_sum_crc(h, (const void *)(h + 1));
	s->sum_state = h->crc == s->sum_crc_computed ? WCADM_SUM_INTACT : WCADM_SUM_DAMAGED;
}

/* Recovery's entries_ok: an intact CRC over entries that do not fit the
 * segment is not a crash; recovery refuses the cache. */
static bool summary_fits(struct scan *sc, const struct wcadm_blk_seg *s)
{
	const struct wc_blk_sum_ent *e = (const void *)(sc->sum + 1);

	for (uint32_t i = 0; i < sc->sum->n; i++) {
		uint64_t end = (uint64_t)e[i].off * sc->g.lba +
		               ((e[i].len & WC_BLK_SUM_DISCARD) ? sc->g.lba : sc->g.block_size);

		if (end > sc->g.seg_data_bytes || (i && e[i].seq < e[i - 1].seq)) {
			finding(sc, true, s->summary_offset + sizeof(struct wc_blk_sum_head) + i * sizeof(*e),
			        "segment %llu summary (offset %llu): entry %u (origin block %llu, seq %llu, "
			        "offset %u LBAs) %s: recovery refuses the cache",
			        (unsigned long long)s->seg, (unsigned long long)s->summary_offset, i,
			        (unsigned long long)e[i].origin, (unsigned long long)e[i].seq, e[i].off,
			        end > sc->g.seg_data_bytes ? "lies past the segment's record area"
			                                   : "is older than the entry before it");
			return false;
		}
	}
	return true;
}

/* The record area, header by header, as recovery's scan_area walks it; the
 * entries go to sc->found, every record to ops->record. */
static void scan_area(struct scan *sc, struct wcadm_blk_seg *s, bool summarized)
{
	const struct wc_blk_geom *g = &sc->g;
	uint64_t pos = 0, last_seq = 0;

	sc->n_found = 0;
	while (pos + g->lba <= g->seg_data_bytes) {
		const char *p = (const char *)sc->area + pos;
		const struct wc_blk_rec *r = (const void *)p;
		uint64_t room = g->seg_data_bytes - pos;
		struct wcadm_blk_record rec;
		bool ours = r->magic == WC_BLK_REC_MAGIC && r->cache_id == sc->bi->cache_id &&
		            r->seg == s->seg;
		bool head_ok, data_ok;

		if (!ours) {
			pos += g->lba;
			continue;
		}
		head_ok = wc_blk_rec_valid(p, g->lba, g->block_size, sc->bi->cache_id, s->seg, room, NULL);
		data_ok = head_ok &&
		          wc_blk_rec_valid(p, g->lba, g->block_size, sc->bi->cache_id, s->seg, room, p + g->lba);
		rec = (struct wcadm_blk_record){
			.seg = s->seg, .offset = s->offset + pos, .seq = r->seq, .count = r->count,
			.flags = r->flags, .origin = r->origin, .data_crc = r->data_crc,
			.header_ok = head_ok, .data_ok = data_ok,
		};
		if (!data_ok) {
			s->bad_records++;
			sc->bi->bad_records++;
			/* In a summarized segment, compare() judges it. */
			if (!summarized)
				finding(sc, false, rec.offset,
				        "segment %llu: record at offset %llu (seq %llu): %s CRC32C fails: a write "
				        "in flight at a crash (never acknowledged) or damage; recovery ignores it",
				        (unsigned long long)s->seg, (unsigned long long)rec.offset,
				        (unsigned long long)r->seq, head_ok ? "data" : "header");
			if (sc->ops->record)
				sc->ops->record(sc->ops->arg, &rec);
			/* A header whose own CRC holds says how long it is. */
			pos += head_ok ? g->lba + (uint64_t)r->count * g->block_size : g->lba;
			continue;
		}
		if (r->seq <= last_seq || sc->n_found + (r->count ? r->count : 1) > g->sum_cap) {
			finding(sc, false, rec.offset,
			        "segment %llu: record at offset %llu (seq %llu) %s: a scan of the segment "
			        "skips it",
			        (unsigned long long)s->seg, (unsigned long long)rec.offset,
			        (unsigned long long)r->seq,
			        r->seq <= last_seq ? "is not newer than the record before it"
			                           : "overflows the segment's summary");
			if (sc->ops->record)
				sc->ops->record(sc->ops->arg, &rec);
			pos += g->lba;
			continue;
		}
		last_seq = r->seq;
		rec.taken = !summarized;
		if (r->flags & WC_BLK_REC_DISCARD) {
			sc->found[sc->n_found++] = (struct wc_blk_sum_ent){
				r->origin[0], r->seq, (uint32_t)(pos / g->lba),
				WC_BLK_SUM_DISCARD | (uint32_t)(r->origin[1] & 0x7fffffffu) };
		} else {
			for (uint32_t i = 0; i < r->count; i++)
				sc->found[sc->n_found++] = (struct wc_blk_sum_ent){
					r->origin[i], r->seq,
					(uint32_t)((pos + g->lba) / g->lba + i * (g->block_size / g->lba)), 0 };
		}
		if (sc->ops->record)
			sc->ops->record(sc->ops->arg, &rec);
		pos += g->lba + (uint64_t)r->count * g->block_size;
		s->used = pos;
	}
}

static bool ent_eq(const struct wc_blk_sum_ent *a, const struct wc_blk_sum_ent *b)
{
	return a->origin == b->origin && a->seq == b->seq && a->off == b->off && a->len == b->len;
}

/* An intact summary against the records it names: recovery takes the
 * summary's word, so a difference is data it would serve wrongly or lose. */
static void compare(struct scan *sc, const struct wcadm_blk_seg *s)
{
	const struct wc_blk_sum_ent *e = (const void *)(sc->sum + 1);
	uint32_t n = sc->sum->n, i = 0, j = 0, reported = 0;

	while ((i < n || j < sc->n_found) && reported < 8) {
		if (i < n && j < sc->n_found && ent_eq(&e[i], &sc->found[j])) {
			i++;
			j++;
			continue;
		}
		/* Whichever sits first in the segment is the one missing on the other side. */
		if (i < n && (j >= sc->n_found || e[i].off <= sc->found[j].off)) {
			uint64_t at = s->offset + (uint64_t)e[i].off * sc->g.lba;
			uint32_t k = i + 1;

			/* One line per record: the entries of its seq missing alike. */
			while (k < n && e[k].seq == e[i].seq &&
			       (j >= sc->n_found || e[k].off < sc->found[j].off))
				k++;
			if (k - i > 1)
				finding(sc, true, at,
				        "segment %llu: summary entries %u..%u (origin block %llu first, seq "
				        "%llu) name data from offset %llu, but no intact record holds those "
				        "versions there (a CRC32C fails, or the record says otherwise): "
				        "recovery would trust the summary", (unsigned long long)s->seg, i,
				        k - 1, (unsigned long long)e[i].origin, (unsigned long long)e[i].seq,
				        (unsigned long long)at);
			else
				finding(sc, true, at,
				        "segment %llu: summary entry %u (origin block %llu, seq %llu) names "
				        "data at offset %llu, but no intact record holds that version there "
				        "(a CRC32C fails, or the record says otherwise): recovery would trust "
				        "the summary", (unsigned long long)s->seg, i,
				        (unsigned long long)e[i].origin, (unsigned long long)e[i].seq,
				        (unsigned long long)at);
			i = k;
		} else {
			uint64_t at = s->offset + (uint64_t)sc->found[j].off * sc->g.lba;

			finding(sc, true, at,
			        "segment %llu: an intact record (origin block %llu, seq %llu) at offset %llu "
			        "is not in the segment's summary (offset %llu): recovery, reading the "
			        "summary, would not see it",
			        (unsigned long long)s->seg, (unsigned long long)sc->found[j].origin,
			        (unsigned long long)sc->found[j].seq, (unsigned long long)at,
			        (unsigned long long)s->summary_offset);
			j++;
		}
		reported++;
	}
}

/* The segment's entries, as recovery applies them: versions and discards. */
static int apply(struct scan *sc, struct wcadm_blk_seg *s, const struct wc_blk_sum_ent *e, uint32_t n)
{
	struct wcadm_blk_image *bi = sc->bi;
	uint64_t last = 0;
	int ret = 0;

	for (uint32_t i = 0; i < n && !ret; i++) {
		if (e[i].seq != last) {
			s->records++;
			bi->records++;
			last = e[i].seq;
			if (!s->first_seq)
				s->first_seq = e[i].seq;
			s->last_seq = e[i].seq;
			if (e[i].seq > bi->max_seq)
				bi->max_seq = e[i].seq;
		}
		if (e[i].len & WC_BLK_SUM_DISCARD) {
			s->discards++;
			bi->discards++;
			ret = push_discard(sc, e[i].origin, e[i].len & ~WC_BLK_SUM_DISCARD, e[i].seq);
			continue;
		}
		s->blocks++;
		bi->versions++;
		if (e[i].origin >= sc->origin_blocks) {
			finding(sc, true, s->offset + (uint64_t)e[i].off * sc->g.lba,
			        "segment %llu: origin block %llu (seq %llu, data at offset %llu) is beyond "
			        "the origin's %llu blocks: recovery refuses the cache",
			        (unsigned long long)s->seg, (unsigned long long)e[i].origin,
			        (unsigned long long)e[i].seq,
			        (unsigned long long)(s->offset + (uint64_t)e[i].off * sc->g.lba),
			        (unsigned long long)sc->origin_blocks);
			continue;
		}
		ret = push_version(sc, e[i].origin, e[i].seq, !s->clean);
	}
	return ret;
}

static int scan_segment(struct scan *sc, uint64_t seg)
{
	struct wcadm_blk_image *bi = sc->bi;
	const struct wc_blk_geom *g = &sc->g;
	struct wcadm_blk_seg s = { 0 };
	bool verify = sc->ops->verify;
	int ret;

	s.seg = seg;
	s.offset = wc_blk_seg_offset(g, seg);
	s.summary_offset = s.offset + g->seg_data_bytes;
	s.clean = seg < bi->clean;
	ret = read_at(bi, sc->sum, g->summary_bytes, s.summary_offset, "a segment summary");
	if (ret)
		return ret;
	classify_summary(sc, &s);
	if (s.sum_state == WCADM_SUM_INTACT && !summary_fits(sc, &s))
		s.sum_state = WCADM_SUM_DAMAGED; /* reported as damage: recovery refuses it */
	else if (s.sum_state == WCADM_SUM_DAMAGED)
		finding(sc, false, s.summary_offset,
		        "segment %llu summary (offset %llu): %s: a torn write (summaries are written "
		        "unsynced); recovery reads the segment whole",
		        (unsigned long long)seg, (unsigned long long)s.summary_offset,
		        s.sum_n > g->sum_cap ? "entry count out of range" : "CRC32C mismatch");
	s.from_summary = s.sum_state == WCADM_SUM_INTACT;
	if (s.from_summary)
		bi->n_summarized++;
	else
		bi->n_unsummarized++;
	if (s.sum_state == WCADM_SUM_DAMAGED)
		bi->n_sum_damaged++;
	if (!s.from_summary || verify) {
		ret = read_at(bi, sc->area, g->seg_data_bytes, s.offset, "a segment's records");
		if (ret)
			return ret;
		s.area_read = true;
		scan_area(sc, &s, s.from_summary);
	}
	if (s.from_summary) {
		if (s.area_read)
			compare(sc, &s);
		else
			s.used = g->seg_data_bytes;
		ret = apply(sc, &s, (const void *)(sc->sum + 1), sc->sum->n);
	} else {
		ret = apply(sc, &s, sc->found, sc->n_found);
	}
	if (ret)
		return ret;
	if (s.records)
		bi->head = seg;
	sc->holds[seg - bi->tail] = (s.records ? 1 : 0) | (s.from_summary ? 2 : 0);
	if (sc->ops->segment)
		sc->ops->segment(sc->ops->arg, &s);
	return 0;
}

static int cmp_version(const void *a, const void *b)
{
	const struct version *x = a, *y = b;

	if (x->origin != y->origin)
		return x->origin < y->origin ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

static int cmp_discard(const void *a, const void *b)
{
	const struct discard *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* What recovery would serve: each block's newest version, unless a newer
 * discard covers it.  Blocks ascend, so the discards that cover the current
 * block are those started at or before it and not yet ended. */
static void settle(struct scan *sc)
{
	struct wcadm_blk_image *bi = sc->bi;
	uint64_t di = 0, n_active = 0;
	struct discard *active = sc->d; /* compacted in place behind di */

	/* No list when nothing was found: qsort wants a pointer all the same. */
	if (sc->n_v)
		qsort(sc->v, sc->n_v, sizeof(*sc->v), cmp_version);
	if (sc->n_d)
		qsort(sc->d, sc->n_d, sizeof(*sc->d), cmp_discard);
	for (uint64_t i = 0; i < sc->n_v;) {
		const struct version *v = &sc->v[i];
		bool dropped = false;
		uint64_t keep = 0;

		while (di < sc->n_d && sc->d[di].first <= v->origin)
			active[n_active++] = sc->d[di++];
		for (uint64_t k = 0; k < n_active; k++) {
			if (active[k].first + active[k].len <= v->origin)
				continue;
			active[keep++] = active[k];
			if (active[k].seq > v->seq)
				dropped = true;
		}
		n_active = keep;
		if (!dropped) {
			bi->cached_blocks++;
			if (v->dirty)
				bi->dirty_blocks++;
		}
		for (i++; i < sc->n_v && sc->v[i].origin == v->origin; i++)
			;
	}
}

/*
 * A segment between the tail and the head always held records: the next
 * one opens only once it has some.  Found empty, its records are gone --
 * overwritten, or (the segments past the last summary only) never made
 * durable before a crash: a summary is written after a device flush, so
 * an empty segment before an intact summary lost records that were.
 */
static void holes(struct scan *sc)
{
	struct wcadm_blk_image *bi = sc->bi;
	uint64_t last_sum = 0;
	bool any_sum = false;

	for (uint64_t s = bi->tail; s <= bi->head; s++)
		if (sc->holds[s - bi->tail] & 2) {
			last_sum = s;
			any_sum = true;
		}
	for (uint64_t s = bi->tail; s < bi->head; s++) {
		uint64_t off = wc_blk_seg_offset(&sc->g, s);
		bool damage = any_sum && s < last_sum;

		if (sc->holds[s - bi->tail] & 1)
			continue;
		finding(sc, damage, off,
		        "segment %llu (offset %llu) holds no record of this cache, though segment %llu "
		        "after it does: %s", (unsigned long long)s, (unsigned long long)off,
		        (unsigned long long)(damage ? last_sum : bi->head),
		        damage ? "its records, made durable before a later segment's summary, are lost "
		                 "(overwritten?)"
		               : "records never made durable before a crash, or lost");
	}
}

int wcadm_blk_scan(struct wcadm_blk_image *bi, const struct wcadm_blk_scan_ops *ops)
{
	static const struct wcadm_blk_scan_ops none;
	struct scan sc = { .bi = bi, .ops = ops ? ops : &none };
	const struct wcadm_blk_state *st;
	uint64_t end;
	int ret = 0;

	if (!bi->sb_ok || !bi->raw)
		return wc_err(-EINVAL, "%s: superblock not valid, ring not read", bi->path);
	if (bi->state_slot < 0)
		return wc_err(-EBADMSG, "%s: both ring state slots (offsets %u and %u) are damaged "
		              "(slot 0: %s; slot 1: %s): wc_open refuses the cache", bi->path,
		              WC_BLK_STATE_OFFSET, WC_BLK_STATE_OFFSET + WC_BLK_UNIT,
		              bi->state[0].zero ? "never written" : !bi->state[0].magic_ok ? "bad magic" :
		              bi->state[0].crc != bi->state[0].crc_computed ? "CRC32C mismatch" : "fields out of range",
		              bi->state[1].zero ? "never written" : !bi->state[1].magic_ok ? "bad magic" :
		              bi->state[1].crc != bi->state[1].crc_computed ? "CRC32C mismatch" : "fields out of range");
	wc_blk_geom_from_sb(&sc.g, &bi->raw->sb);
	sc.origin_blocks = wcadm_blk_origin_size(bi) / bi->block_size;
	st = &bi->state[bi->state_slot];
	bi->n_damage = bi->n_info = 0;
	bi->records = bi->discards = bi->bad_records = bi->versions = 0;
	bi->cached_blocks = bi->dirty_blocks = bi->max_seq = 0;
	bi->n_summarized = bi->n_unsummarized = bi->n_sum_damaged = 0;
	bi->tail = st->tail_seg;
	bi->clean = st->clean_seg;
	bi->open_limit = st->open_limit;
	bi->head = bi->tail;

	/* The other slot: older, never written, or torn (a crash while it was
	 * written: the slot in force is the one before). */
	{
		const struct wcadm_blk_state *o = &bi->state[bi->state_slot ^ 1];

		if (!o->zero && !o->intact)
			finding(&sc, false, o->offset,
			        "ring state slot %d (offset %llu): %s: a torn write; slot %d "
			        "(generation %llu) is in force", bi->state_slot ^ 1,
			        (unsigned long long)o->offset,
			        !o->magic_ok ? "bad magic" : o->crc != o->crc_computed
			                ? "CRC32C mismatch" : "fields out of range",
			        bi->state_slot, (unsigned long long)st->generation);
	}
	if (bi->oid_slot < 0)
		finding(&sc, true, WC_BLK_ID_OFFSET,
		        "origin identity (offsets %u and %u): neither slot is intact; the cache opens "
		        "only with `wcctl set-origin --force`", WC_BLK_ID_OFFSET,
		        WC_BLK_ID_OFFSET + WC_BLK_UNIT);

	sc.sum = malloc(sc.g.summary_bytes);
	sc.area = malloc(sc.g.seg_data_bytes);
	sc.found = malloc(sc.g.sum_cap * sizeof(*sc.found));
	/* Recovery's range: the tail up to the open limit, one lap at most. */
	end = st->open_limit + 1;
	if (end > st->tail_seg + sc.g.n_segments)
		end = st->tail_seg + sc.g.n_segments;
	sc.holds = calloc(end > st->tail_seg ? end - st->tail_seg : 1, 1);
	if (!sc.sum || !sc.area || !sc.found || !sc.holds) {
		ret = wc_err(-ENOMEM, "%s: scan buffers (%llu bytes a segment)", bi->path,
		             (unsigned long long)sc.g.seg_bytes);
		goto out;
	}
	for (uint64_t s = st->tail_seg; s < end && !ret; s++)
		ret = scan_segment(&sc, s);
	bi->scan_end = end;
	if (!ret) {
		holes(&sc);
		settle(&sc);
		bi->scanned = true;
	}
out:
	free(sc.sum);
	free(sc.area);
	free(sc.found);
	free(sc.v);
	free(sc.d);
	free(sc.holds);
	return ret;
}
