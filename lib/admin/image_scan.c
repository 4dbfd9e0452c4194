/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * image_scan.c -- every entry of an image read offline (image.c maps them
 * and finds the commit point) classified as recovery would: the same rules
 * as core/recover.c, entry by entry, but looking at the whole picture:
 * recovery stops at the first inconsistency, a check wants to list them
 * all.  Only wcadmin.h's decoded view is needed here.
 */
#include <errno.h>
#include <stdlib.h>

#include "admin/wcadmin.h"

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

static void classify_runs(struct wcadm_image *img, const struct key *k, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t head = i, j;

		img->info[k[head].idx].state = WCADM_COMMITTED;
		img->n_committed++;
		for (j = i + 1; j < n && k[j].origin == k[head].origin; j++) {
			struct wcadm_entry_info *e = &img->info[k[j].idx];

			if (k[j].seq == k[j - 1].seq) {
				/* Two committed versions of one block in one commit: the
				 * protocol never writes that (a rewrite in the same epoch
				 * invalidates the older entry, and the commit's record
				 * counts only the newer), so the metadata is corrupt. */
				struct wcadm_entry_info *prev = &img->info[k[j - 1].idx];

				if (prev->state != WCADM_DUPLICATE) {
					if (prev->state == WCADM_COMMITTED)
						img->n_committed--;
					else
						img->n_superseded--;
					prev->state = WCADM_DUPLICATE;
					prev->other = k[j].idx;
					img->n_duplicate++;
				}
				e->state = WCADM_DUPLICATE;
				e->other = k[j - 1].idx;
				img->n_duplicate++;
			} else {
				e->state = WCADM_SUPERSEDED;
				e->other = k[head].idx;
				img->n_superseded++;
			}
		}
		i = j;
	}
}

int wcadm_image_classify(struct wcadm_image *img)
{
	const struct wcadm_layout *l = &img->layout;
	uint64_t origin_blocks, point;
	struct key *keys;
	size_t nk = 0;
	int ret = wcadm_image_commit(img);

	if (ret)
		return ret;
	origin_blocks = wcadm_image_origin_size(img) / l->block_size;
	point = img->cp_seq; /* committed: seq below the commit point */
	img->info = calloc(l->n_blocks, sizeof(*img->info));
	if (!img->info)
		return wcadm_err(-ENOMEM, "%s: classify %llu entries", img->path,
		              (unsigned long long)l->n_blocks);
	for (uint64_t i = 0; i < l->n_blocks; i++) {
		const struct wcadm_entry *pe = &img->entries[i];
		struct wcadm_entry_info *e = &img->info[i];

		e->other = WCADM_NO_ENTRY;
		if (pe->seq == WCADM_NONE) {
			e->state = WCADM_FREE;
			img->n_free++;
		} else if (pe->seq >= point) {
			e->state = WCADM_UNCOMMITTED;
			img->n_uncommitted++;
		} else if (pe->origin_block >= origin_blocks) {
			e->state = WCADM_OUTSIDE;
			img->n_outside++;
		} else {
			e->state = WCADM_COMMITTED; /* for now: classify_runs decides */
			nk++;
		}
	}
	keys = malloc((nk ? nk : 1) * sizeof(*keys));
	if (!keys)
		return wcadm_err(-ENOMEM, "%s: sort %zu committed entries", img->path, nk);
	nk = 0;
	for (uint64_t i = 0; i < l->n_blocks; i++)
		if (img->info[i].state == WCADM_COMMITTED)
			keys[nk++] = (struct key){ img->entries[i].origin_block, img->entries[i].seq,
			                           (uint32_t)i };
	qsort(keys, nk, sizeof(*keys), key_cmp);
	classify_runs(img, keys, nk);
	free(keys);
	return 0;
}
