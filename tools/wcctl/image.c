/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * image.c -- a cache file read offline, without the library and without
 * the origin: the superblock through wc_sb_validate (format.h), the entries
 * through a read-only mapping.  Nothing here ever writes the file, so
 * `wcctl check` and `wcctl dump` are safe on an image kept for a post-mortem.
 *
 * The classification follows recovery (lib/recover.c) entry by entry, but
 * looks at the whole picture: recovery stops at the first inconsistency,
 * a check wants to list them all.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "wcctl.h"

int wcctl_image_open(struct wcctl_image *img, const char *path)
{
	struct stat st;
	off_t end;
	ssize_t got;
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
	got = pread(img->fd, &img->sb, sizeof(img->sb), 0);
	if (got < 0) {
		int err = -errno;

		wcctl_image_close(img);
		return wc_err_sys(err, "%s: read superblock", path);
	}
	ret = wc_sb_validate(&img->sb, img->file_size, path, &img->layout);
	img->sb_ok = ret == 0;
	return ret;
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
				 * reuses the entry), so the metadata is corrupt. */
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

int wcctl_image_classify(struct wcctl_image *img)
{
	const struct wc_layout *l = &img->layout;
	uint64_t seq_count = img->sb.seq_count;
	uint64_t origin_blocks = img->sb.origin_size / l->block_size;
	struct key *keys;
	size_t nk = 0;

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
		} else if (pe->seq >= seq_count) {
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
