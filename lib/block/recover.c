/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recover.c -- the block medium's format, and its DRAM state rebuilt from
 * what is on the device.
 *
 * Recovery reads the state slot in force (where the ring's tail is, up to
 * where records may be), then each segment of the ring in order: its
 * summary when it has an intact one, else the segment's record area whole,
 * taking each record whose header and data CRCs hold (a torn or never
 * written record fails them and is skipped, as it was never acknowledged).
 * Records are applied in seq order -- segment by segment, and by position
 * within one -- so the newest version of each block wins and a discard
 * hides what came before it.  Data is never read but in a segment without
 * summary: the open ones at a crash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "block/block.h"
#include "core/cache.h"
#include "util/error.h"

/* ---- format -------------------------------------------------------------- */

int wc_blk_format(struct wc_cache *c, uint64_t origin_size, const struct wc_pmem_origin_id *id)
{
	struct wc_blk *b = c->blk;
	struct wc_pmem_origin_id none;
	struct wc_blk_sb *sb;
	int ret;

	memset(&none, 0, sizeof(none));
	memset(&b->sb, 0, sizeof(b->sb));
	sb = &b->sb;
	sb->magic = WC_BLK_MAGIC;
	sb->version = WC_BLK_VERSION;
	sb->block_size = b->g.block_size;
	sb->lba_size = b->g.lba;
	sb->seg_start = b->g.seg_start;
	sb->seg_bytes = b->g.seg_bytes;
	sb->n_segments = b->g.n_segments;
	sb->summary_bytes = b->g.summary_bytes;
	sb->origin_size = origin_size;
	if (getrandom(sb->uuid, sizeof(sb->uuid), 0) != (ssize_t)sizeof(sb->uuid))
		return wc_err_sys(-errno, "%s: random uuid", c->cache_path);
	memcpy(&sb->cache_id, sb->uuid, sizeof(sb->cache_id));
	sb->cache_id |= 1; /* never 0 */
	sb->device_bytes = b->dev_bytes;
	sb->format_time = (uint64_t)time(NULL);
	sb->crc = wc_blk_sb_crc(sb);
	b->cache_id = sb->cache_id;

	/* The format's own magic first, synced before anything else is
	 * written: whatever was there no longer opens as a cache, and a crash
	 * from here on leaves a file that says it is a format of ours, which a
	 * create formats again without being forced.  Then everything but the
	 * superblock, then the superblock alone.  Records of an earlier format
	 * carry its cache_id and never count. */
	{
		void *u = wc_blk_alloc_buf(c, WC_BLK_UNIT);
		const uint64_t mark = WC_BLK_MAGIC_FORMATTING;

		if (!u)
			return wc_err(-ENOMEM, "%s: format buffer", c->cache_path);
		memset(u, 0, WC_BLK_UNIT);
		memcpy(u, &mark, sizeof(mark));
		ret = wc_blk_pwrite(c, u, WC_BLK_UNIT, 0, true, "format");
		memset(u, 0, WC_BLK_UNIT);
		for (unsigned i = 0; i < 2 && !ret; i++)
			ret = wc_blk_pwrite(c, u, WC_BLK_UNIT, WC_BLK_STATE_OFFSET + i * WC_BLK_UNIT, false,
			                    "format");
		free(u);
	}
	if (ret)
		return ret;
	b->log.tail = b->log.head = b->log.clean = 1;
	b->log.open_limit = 0;
	b->log.state_gen = 0;
	b->log.state_slot = 1; /* the first write goes to slot 0 */
	ret = wc_blk_id_write(c, 0, id);
	if (!ret)
		ret = wc_blk_id_write(c, 1, &none);
	if (!ret)
		ret = wc_blk_state_write(c, 1, 0);
	if (!ret) {
		void *u = wc_blk_alloc_buf(c, WC_BLK_UNIT);

		if (!u)
			return wc_err(-ENOMEM, "%s: format buffer", c->cache_path);
		memset(u, 0, WC_BLK_UNIT);
		memcpy(u, sb, sizeof(*sb));
		ret = wc_blk_pwrite(c, u, WC_BLK_UNIT, 0, true, "superblock");
		free(u);
	}
	return ret;
}

/* ---- reading the ring ---------------------------------------------------- */

struct scan {
	struct wc_cache *c;
	struct wc_blk_state st;
	void *area;              /* a segment's record area, when read whole */
	struct wc_blk_sum_head *sum;
	uint64_t max_seq;
	uint64_t last_used;      /* newest segment holding a record; 0: none */
	/* Called for each segment read, with its entries in record order. */
	int (*segment)(struct scan *sc, uint64_t seg, const struct wc_blk_sum_ent *e, uint32_t n,
	               bool from_summary, uint64_t used);
	void *arg;
};

static int read_state(struct wc_cache *c, struct wc_blk_state *out)
{
	struct wc_blk *b = c->blk;
	void *u = wc_blk_alloc_buf(c, 2 * WC_BLK_UNIT);
	const struct wc_blk_state *slots[2];
	int cur, ret;

	if (!u)
		return wc_err(-ENOMEM, "%s: state buffer", c->cache_path);
	ret = wc_blk_pread(c, u, 2 * WC_BLK_UNIT, WC_BLK_STATE_OFFSET, "state");
	if (ret) {
		free(u);
		return ret;
	}
	slots[0] = u;
	slots[1] = (const void *)((char *)u + WC_BLK_UNIT);
	cur = wc_blk_state_current(slots);
	if (cur < 0) {
		free(u);
		return wc_err(-EBADMSG, "%s: both ring state slots (offsets %u and %u) are damaged",
		              c->cache_path, WC_BLK_STATE_OFFSET, WC_BLK_STATE_OFFSET + WC_BLK_UNIT);
	}
	*out = *slots[cur];
	b->log.state_gen = out->generation;
	b->log.state_slot = (unsigned)cur;
	free(u);
	return 0;
}

/* The records of segment `seg` found by their headers in its area. */
static uint32_t scan_area(struct scan *sc, uint64_t seg, struct wc_blk_sum_ent *out, uint64_t *used)
{
	struct wc_blk *b = sc->c->blk;
	const struct wc_blk_geom *g = &b->g;
	uint64_t pos = 0, last_seq = 0;
	uint32_t n = 0;

	*used = 0;
	while (pos + g->lba <= g->seg_data_bytes) {
		const char *p = (const char *)sc->area + pos;
		const struct wc_blk_rec *r = (const void *)p;

		if (!wc_blk_rec_valid(p, g->lba, g->block_size, b->cache_id, seg, g->seg_data_bytes - pos,
		                      p + g->lba) ||
		    r->seq <= last_seq || n + (r->count ? r->count : 1) > g->sum_cap) {
			pos += g->lba;
			continue;
		}
		last_seq = r->seq;
		if (r->flags & WC_BLK_REC_DISCARD) {
			out[n++] = (struct wc_blk_sum_ent){ r->origin[0], r->seq, (uint32_t)(pos / g->lba),
			                                    WC_BLK_SUM_DISCARD | (uint32_t)(r->origin[1] & 0x7fffffffu) };
		} else {
			for (uint32_t i = 0; i < r->count; i++)
				out[n++] = (struct wc_blk_sum_ent){
					r->origin[i], r->seq,
					(uint32_t)((pos + g->lba) / g->lba + i * (g->block_size / g->lba)), 0 };
		}
		pos += g->lba + (uint64_t)r->count * g->block_size;
		*used = pos;
	}
	return n;
}

static bool summary_ok(const struct wc_blk *b, const struct wc_blk_sum_head *h, uint64_t seg)
{
	return h->magic == WC_BLK_SUM_MAGIC && h->cache_id == b->cache_id && h->seg == seg &&
	       h->n <= b->g.sum_cap && h->crc == wc_blk_sum_crc(h, (const void *)(h + 1));
}

/* Check a summary's entries against the geometry: an intact CRC over
 * wrong numbers is a bug or a forgery, not a crash.  The writer places
 * records one after the other, so entries name disjoint ranges in
 * increasing order: that also bounds the data blocks by what the segment
 * holds (the segment's list of versions has room for no more). */
static int entries_ok(struct wc_cache *c, const struct wc_blk_sum_ent *e, uint32_t n, uint64_t seg)
{
	const struct wc_blk_geom *g = &c->blk->g;
	uint64_t next = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t start = (uint64_t)e[i].off * g->lba,
		         end = start + ((e[i].len & WC_BLK_SUM_DISCARD) ? g->lba : g->block_size);

		if (end > g->seg_data_bytes || start < next || (i && e[i].seq < e[i - 1].seq))
			return wc_err(-EUCLEAN, "%s: summary of segment %llu: entry %u is out of place",
			              c->cache_path, (unsigned long long)seg, i);
		next = end;
	}
	return 0;
}

static int scan_ring(struct scan *sc)
{
	struct wc_cache *c = sc->c;
	struct wc_blk *b = c->blk;
	const struct wc_blk_geom *g = &b->g;
	struct wc_blk_sum_ent *found = NULL;
	int ret;

	ret = read_state(c, &sc->st);
	if (ret)
		return ret;
	sc->sum = wc_blk_alloc_buf(c, g->summary_bytes);
	found = malloc(g->sum_cap * sizeof(*found));
	if (!sc->sum || !found) {
		ret = wc_err(-ENOMEM, "%s: recovery buffers", c->cache_path);
		goto out;
	}
	/* The limit may run ahead of the ring's end: a segment past it is
	 * the tail's own place. */
	for (uint64_t s = sc->st.tail_seg;
	     s <= sc->st.open_limit && s < sc->st.tail_seg + g->n_segments; s++) {
		uint64_t off = wc_blk_seg_offset(g, s), used = 0;
		uint32_t n;
		bool from_summary;

		ret = wc_blk_pread(c, sc->sum, g->summary_bytes, off + g->seg_data_bytes, "summary");
		if (ret)
			goto out;
		from_summary = summary_ok(b, sc->sum, s);
		if (from_summary) {
			n = sc->sum->n;
			memcpy(found, sc->sum + 1, (size_t)n * sizeof(*found));
			ret = entries_ok(c, found, n, s);
			if (ret)
				goto out;
			used = g->seg_data_bytes;
		} else {
			if (!sc->area) {
				sc->area = wc_blk_alloc_buf(c, g->seg_data_bytes);
				if (!sc->area) {
					ret = wc_err(-ENOMEM, "%s: recovery buffer", c->cache_path);
					goto out;
				}
			}
			ret = wc_blk_pread(c, sc->area, g->seg_data_bytes, off, "segment");
			if (ret)
				goto out;
			n = scan_area(sc, s, found, &used);
		}
		if (n) {
			sc->last_used = s;
			if (found[n - 1].seq > sc->max_seq)
				sc->max_seq = found[n - 1].seq;
		}
		ret = sc->segment(sc, s, found, n, from_summary, used);
		if (ret)
			goto out;
	}
out:
	free(found);
	free(sc->sum);
	free(sc->area);
	sc->sum = NULL;
	sc->area = NULL;
	return ret;
}

/* ---- rebuilding the index ------------------------------------------------ */

struct rebuild {
	uint32_t next_idx;       /* entries never used yet start here */
	uint32_t *recycled;      /* freed during recovery */
	uint64_t n_recycled;
};

static uint32_t entry_take(struct wc_cache *c, struct rebuild *rb)
{
	if (rb->n_recycled)
		return rb->recycled[--rb->n_recycled];
	if (rb->next_idx < c->layout.n_blocks)
		return rb->next_idx++;
	return WC_NIL;
}

static void version_drop(struct wc_cache *c, struct rebuild *rb, struct wc_shard *s, uint32_t idx)
{
	struct wc_entry *e = &c->e[idx];

	wc_index_remove(c, s, idx);
	if (!(e->flags & WC_E_CLEAN))
		s->current--;
	wc_entry_set_flags(e, 0);
	e->seq = WC_NONE;
	wc_entry_set_origin(e, WC_NONE);
	rb->recycled[rb->n_recycled++] = idx;
}

static int apply_segment(struct scan *sc, uint64_t seg, const struct wc_blk_sum_ent *ent, uint32_t n,
                         bool from_summary, uint64_t used)
{
	struct wc_cache *c = sc->c;
	struct wc_blk *b = c->blk;
	struct rebuild *rb = sc->arg;
	struct wc_blk_seg *sg = &b->log.segs[seg % b->g.n_segments];
	uint64_t seg_off = wc_blk_seg_offset(&b->g, seg);
	bool clean = seg < sc->st.clean_seg;
	int ret;

	ret = wc_blk_seg_alloc(c, sg, seg);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < n; i++) {
		const struct wc_blk_sum_ent *x = &ent[i];

		sg->sum[sg->n_sum++] = *x;
		if (x->len & WC_BLK_SUM_DISCARD) {
			uint64_t len = x->len & ~WC_BLK_SUM_DISCARD;

			if (x->origin >= c->origin_blocks)
				continue;
			if (len > c->origin_blocks - x->origin)
				len = c->origin_blocks - x->origin;
			for (uint64_t k = 0; k < len; k++) {
				struct wc_shard *s = wc_shard_of(c, x->origin + k);
				uint32_t old = wc_index_find(c, s, x->origin + k);

				if (old != WC_NIL)
					version_drop(c, rb, s, old);
			}
			continue;
		}
		if (x->origin >= c->origin_blocks)
			return wc_err(-EUCLEAN, "%s: segment %llu holds block %llu, past the origin's %llu "
			              "blocks", c->cache_path, (unsigned long long)seg,
			              (unsigned long long)x->origin, (unsigned long long)c->origin_blocks);
		{
			struct wc_shard *s = wc_shard_of(c, x->origin);
			uint32_t old = wc_index_find(c, s, x->origin), idx;
			struct wc_entry *e;

			if (old != WC_NIL)
				version_drop(c, rb, s, old);
			idx = entry_take(c, rb);
			if (idx == WC_NIL)
				return wc_err(-EUCLEAN, "%s: more versions than the ring holds (segment %llu)",
				              c->cache_path, (unsigned long long)seg);
			e = &c->e[idx];
			wc_entry_set_origin(e, x->origin);
			e->seq = x->seq;
			wc_blk_set_where(e, seg_off + (uint64_t)x->off * b->g.lba);
			wc_entry_set_flags(e, WC_E_CURRENT | (clean ? WC_E_CLEAN : 0));
			wc_index_insert(c, s, idx);
			if (!clean)
				s->current++;
			sg->live[sg->n_live++] = (struct wc_blk_live){ idx, (uint32_t)x->seq };
		}
	}
	sg->used = used;
	sg->closed = n > 0;
	sg->summarized = from_summary;
	return 0;
}

int wc_blk_recover(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;
	struct rebuild rb = { 0 };
	struct scan sc = { .c = c, .segment = apply_segment, .arg = &rb };
	uint64_t t0 = wc_clock_ns();
	uint32_t *free_idx;
	uint64_t n_free = 0;
	int ret;

	rb.recycled = malloc(c->layout.n_blocks * sizeof(uint32_t));
	if (!rb.recycled)
		return wc_err(-ENOMEM, "%s: recovery list", c->cache_path);
	ret = scan_ring(&sc);
	if (ret) {
		free(rb.recycled);
		return ret;
	}
	b->log.tail = sc.st.tail_seg;
	b->log.head = sc.last_used ? sc.last_used : sc.st.tail_seg;
	b->log.clean = sc.st.clean_seg;
	if (b->log.clean > b->log.head + 1)
		b->log.clean = b->log.head + 1;
	/* A state may put the clean point one below its tail (it passes
	 * wc_blk_state_intact); the segment there is gone, and write-back,
	 * which starts at the clean point, would wait for it forever. */
	if (b->log.clean < b->log.tail)
		b->log.clean = b->log.tail;
	b->log.open_limit = sc.st.open_limit;
	b->log.next_seq = sc.max_seq + 1;
	/* A segment below the head whose records were all lost (none of them
	 * durable at the crash) is closed too: write-back and reclaim pass
	 * over it in ring order, and its (empty) summary is written below. */
	for (uint64_t s = b->log.tail; s < b->log.head; s++)
		b->log.segs[s % b->g.n_segments].closed = true;
	if (b->log.head == sc.st.tail_seg && !sc.last_used) {
		ret = wc_blk_seg_alloc(c, &b->log.segs[b->log.head % b->g.n_segments], b->log.head);
		if (ret)
			goto out;
	}
	/* Every entry not holding a version is free. */
	free_idx = rb.recycled;
	n_free = rb.n_recycled;
	for (uint64_t i = rb.next_idx; i < c->layout.n_blocks; i++)
		free_idx[n_free++] = (uint32_t)i;
	for (uint64_t i = 0; i < n_free; i++) {
		/* Published, as far as the generation goes: the free makes it odd. */
		if (c->e[free_idx[i]].gen & 1)
			c->e[free_idx[i]].gen++;
	}
	wc_free_batch(c, free_idx, n_free);
	wc_freelist_mark_cold(c);
	b->recover_ns = wc_clock_ns() - t0;
	/* The segments found without a summary get one now, and the state
	 * says where records may go next. */
	ret = wc_blk_write_summaries(c);
	if (ret >= 0)
		ret = wc_blk_state_write(c, b->log.head + 4, 0);
out:
	free(rb.recycled);
	return ret < 0 ? ret : 0;
}

/* ---- the dirty blocks of an image (an origin refused at open) ------------ */

struct dirty_count {
	uint64_t *blocks;
	uint64_t n, cap;
};

static int count_segment(struct scan *sc, uint64_t seg, const struct wc_blk_sum_ent *e, uint32_t n,
                         bool from_summary, uint64_t used)
{
	struct dirty_count *d = sc->arg;

	(void)from_summary;
	(void)used;
	if (seg < sc->st.clean_seg)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if (e[i].len & WC_BLK_SUM_DISCARD)
			continue;
		if (d->n == d->cap) {
			uint64_t cap = d->cap ? 2 * d->cap : 4096;
			uint64_t *p = realloc(d->blocks, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			d->blocks = p;
			d->cap = cap;
		}
		d->blocks[d->n++] = e[i].origin;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t wc_blk_dirty_in_image(struct wc_cache *c)
{
	struct dirty_count d = { 0 };
	struct scan sc = { .c = c, .segment = count_segment, .arg = &d };
	uint64_t distinct = 0;

	/* A failed read counts what it got: the number is for a message. */
	scan_ring(&sc);
	if (d.n) /* d.blocks is NULL when nothing was found */
		qsort(d.blocks, d.n, sizeof(*d.blocks), cmp_u64);
	for (uint64_t i = 0; i < d.n; i++)
		distinct += i == 0 || d.blocks[i] != d.blocks[i - 1];
	free(d.blocks);
	return distinct;
}
