/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cache.c -- an open cache as wcbench run's cost floor sees it (wcadmin.h):
 * its configuration, mapping, size and resolved flush policy.  The one file
 * of lib/admin that reads struct wc_cache (core/cache.h), one field per
 * function.
 */
#include "admin/internal.h"
#include "core/cache.h"

void wcadm_cache_config(const wc_cache *c, struct wc_config *out)
{
	*out = c->cfg;
}

void wcadm_cache_mapping(const wc_cache *c, void **base, size_t *len)
{
	/* The block medium maps nothing: no mapping to fault in or measure. */
	*base = c->blk ? NULL : c->base;
	*len = c->blk || !c->base ? 0 : c->map_len;
}

uint64_t wcadm_cache_blocks(const wc_cache *c)
{
	return c->layout.n_blocks;
}

void wcadm_cache_persist(const wc_cache *c, struct wcadm_persist *out)
{
	wcadm_persist_from(out, &c->fp);
}
