/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi.c -- the caller's struct sizes (docs/ABI.md).
 *
 * Programs allocate struct wc_config and struct wc_stats themselves, at the
 * size of the header they were compiled with.  A program built against
 * 0.1 has neither a `size` field nor reserved space, so the 0.1 entry
 * points that take a config stay exported under WCACHE_0.1 (bound by such
 * programs) and read only the 0.1 layout; the default versions, WCACHE_0.2,
 * read `size`.  Later releases grow the structs into the reserved space
 * or past it without new symbol versions: `size` says what the caller has.
 *
 * The origin's ops table is the program's too.  0.5 grew it (ops_size,
 * caps, identify), but wc_create_origin and wc_open_origin keep reading
 * the 0.4 layout: programs built before 0.5 call them, and their tables
 * may end after the 8 ops.  wcache.h makes those names macros for
 * wc_create_origin_sized and wc_open_origin_sized (WCACHE_0.5, below),
 * which read the table as the header the program was built with has it.
 */
#include <string.h>

#include "abi.h"
#include "core/wcconfig.h"
#include "origin/origin.h"
#include "util/error.h"
#include "util/bytes.h"

_Static_assert(WC_CONFIG_SIZE_0_2 == sizeof(struct wc_config),
               "struct wc_config changed: update WC_CONFIG_SIZE_0_2's meaning and docs/ABI.md");

/* configure wrote the release into wcache_version.h for the library and the
 * installed header alike: this is the library's, whatever header the
 * program was compiled with. */
const char *wc_version(void)
{
	return WCACHE_VERSION_STRING;
}

static void copy_prefix(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
}

void wc_config_init_size(struct wc_config *cfg, size_t size)
{
	struct wc_config d;

	if (!cfg)
		return;
	wc_config_defaults(&d);
	d.size = (uint32_t)size;
	/* A caller newer than this library: its fields unknown here are 0,
	 * which for every later field means "as before". */
	if (size > sizeof(d))
		memset((char *)cfg + sizeof(d), 0, size - sizeof(d));
	copy_prefix(cfg, size, &d, sizeof(d));
}

/* 0.1: the struct ended before `size`. */
void (wc_config_init)(struct wc_config *cfg)
{
	struct wc_config d;

	if (!cfg)
		return;
	wc_config_defaults(&d);
	/* What 0.1 gave: such a program may size its buffers by it, and its
	 * wc_open@WCACHE_0.1 keeps asking for 4096 as it always did. */
	d.block_size = WC_DEFAULT_BLOCK_SIZE;
	memcpy(cfg, &d, WC_CONFIG_SIZE_0_1);
}

int wc_config_import(struct wc_config *dst, const struct wc_config *src)
{
	size_t size = src->size ? src->size : WC_CONFIG_SIZE_0_2;

	if (size < WC_CONFIG_SIZE_0_1 + sizeof(src->size))
		return wc_err(-EINVAL, "struct wc_config: size %zu is too small (initialise it with "
		              "wc_config_init())", size);
	if (size > sizeof(*dst) && !wc_all_zero((const char *)src + sizeof(*dst), size - sizeof(*dst)))
		return wc_err(-EINVAL, "struct wc_config: fields past the %zu bytes libwcache %s knows "
		              "are set (the program was built against a newer libwcache)",
		              sizeof(*dst), WCACHE_VERSION_STRING);
	memset(dst, 0, sizeof(*dst));
	copy_prefix(dst, sizeof(*dst), src, size);
	if (!wc_all_zero(dst->reserved, sizeof(dst->reserved)))
		return wc_err(-EINVAL, "struct wc_config: reserved fields are set (the program was "
		              "built against a newer libwcache than %s, or did not zero them)",
		              WCACHE_VERSION_STRING);
	if (dst->origin_rebind > WC_ORIGIN_REBIND_FORCE)
		return wc_err(-EINVAL, "struct wc_config: origin_rebind %u is not one of "
		              "WC_ORIGIN_REBIND_NEVER, _CLEAN or _FORCE", dst->origin_rebind);
	if (dst->medium > WC_MEDIUM_BLOCK)
		return wc_err(-EINVAL, "struct wc_config: medium %u is not one of WC_MEDIUM_AUTO, "
		              "_PMEM or _BLOCK", dst->medium);
	dst->size = sizeof(*dst);
	return 0;
}

static void import_0_1(struct wc_config *dst, const struct wc_config *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, src, WC_CONFIG_SIZE_0_1);
	dst->size = sizeof(*dst);
}

/* The 0.1 entry points: a NULL config stays NULL (the defaults). */
#define COMPAT_0_1(name, ...)                                                       \
	int name##_0_1(wc_cache **out, const char *cache_path, __VA_ARGS__,         \
	               const struct wc_config *cfg);                                \
	WC_SYMVER(name##_0_1, #name "@WCACHE_0.1");                                 \
	int name##_0_1(wc_cache **out, const char *cache_path, __VA_ARGS__,         \
	               const struct wc_config *cfg)                                 \
	{                                                                           \
		struct wc_config full;                                              \
                                                                                    \
		if (cfg)                                                            \
			import_0_1(&full, cfg);                                     \
		return name##_0_2(out, cache_path, ARG, cfg ? &full : NULL);              \
	}

#define ARG origin_path
COMPAT_0_1(wc_create, const char *origin_path)
COMPAT_0_1(wc_open, const char *origin_path)
#undef ARG
#define ARG origin
COMPAT_0_1(wc_create_origin, struct wc_origin origin)
COMPAT_0_1(wc_open_origin, struct wc_origin origin)
#undef ARG

/* 0.5: the origin's table is read by its ops_size.  Checked, and wrapped
 * if it offers more than 0.4's, before the cache touches anything; the
 * wrapper is the cache's once it took the origin, else freed here. */
static int with_adopted(int (*entry)(wc_cache **, const char *, struct wc_origin,
                                     const struct wc_config *),
                        const char *what, wc_cache **out, const char *cache_path,
                        struct wc_origin origin, const struct wc_config *cfg)
{
	struct wc_origin adopted;
	int ret;

	if (out)
		*out = NULL;
	ret = wc_origin_adopt(&adopted, origin);
	if (ret)
		return wc_err(ret, "%s: %s", cache_path ? cache_path : what, wc_errmsg());
	ret = entry(out, cache_path, adopted, cfg);
	if (ret)
		wc_origin_adopt_undo(&adopted);
	return ret;
}

int wc_create_origin_sized(wc_cache **out, const char *cache_path, struct wc_origin origin,
                           const struct wc_config *cfg)
{
	return with_adopted(wc_create_origin_0_2, "wc_create_origin", out, cache_path, origin, cfg);
}

int wc_open_origin_sized(wc_cache **out, const char *cache_path, struct wc_origin origin,
                         const struct wc_config *cfg)
{
	return with_adopted(wc_open_origin_0_2, "wc_open_origin", out, cache_path, origin, cfg);
}
