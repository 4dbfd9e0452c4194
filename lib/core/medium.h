/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * medium.h -- what the core asks of a medium other than persistent memory
 * (lib/block/): the few places outside the data path where the core reads
 * or writes the cache's image -- the origin identity slots (bind.c).  A
 * cache on pmem has no table (c->medium is NULL): the core reads and
 * writes the mapping itself.
 */
#ifndef WC_CORE_MEDIUM_H
#define WC_CORE_MEDIUM_H

#include <stdint.h>

#include "core/format.h"

struct wc_cache;

struct wc_medium_ops {
	const char *name;                                   /* "block" */
	uint32_t id_offset, id_stride;                      /* where the two slots are (messages) */
	/* The two identity slots as read at open. */
	const struct wc_pmem_origin_id *(*id_slots)(struct wc_cache *c);
	/* Bytes of origin at format. */
	uint64_t (*format_origin_size)(struct wc_cache *c);
	/* Write identity slot `slot` durably (a torn write fails its CRC). */
	int (*write_id_slot)(struct wc_cache *c, unsigned slot, const struct wc_pmem_origin_id *id);
	/* Distinct origin blocks with a dirty version, from the image alone. */
	uint64_t (*dirty_in_image)(struct wc_cache *c);
};

#endif
