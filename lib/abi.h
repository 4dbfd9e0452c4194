/* SPDX-License-Identifier: BSD-3-Clause */
/* abi.h -- symbol versions of the entry points that read a caller's struct
 * wc_config or origin ops table (docs/ABI.md, lib/libwcache.map). */
#ifndef WC_ABI_H
#define WC_ABI_H

#include "wcache.h"

/* Bind `impl` to a versioned name; "name@@NODE" is the default version
 * (what new programs, and static links, get), "name@NODE" an old one kept
 * for programs built against that release. */
#define WC_SYMVER(impl, sym) __asm__(".symver " #impl ", " sym)

/* The current versions (lib/api/cache.c), exported as wc_create@@WCACHE_0.2
 * etc.  The _origin ones read the table as 0.4's; wc_create_origin_sized
 * and wc_open_origin_sized (lib/abi.c, WCACHE_0.5) check and wrap a 0.5
 * table and call them. */
int wc_create_0_2(wc_cache **out, const char *cache_path, const char *origin_path,
                  const struct wc_config *cfg);
int wc_open_0_2(wc_cache **out, const char *cache_path, const char *origin_path,
                const struct wc_config *cfg);
int wc_create_origin_0_2(wc_cache **out, const char *cache_path, struct wc_origin origin,
                         const struct wc_config *cfg);
int wc_open_origin_0_2(wc_cache **out, const char *cache_path, struct wc_origin origin,
                       const struct wc_config *cfg);

#endif
