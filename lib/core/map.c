/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * map.c -- the cache file as persistent memory, through libpmem2.
 *
 * We ask for PAGE granularity, the weakest, so any file maps; libpmem2 grants
 * the strongest the platform offers and we adapt the flush policy to what was
 * granted: BYTE (eADR) -> stores + drain, CACHE_LINE (DAX, or forced with
 * PMEM2_FORCE_GRANULARITY=CACHE_LINE) -> the flush engine, PAGE (a plain file)
 * -> libpmem2's msync-based persist.
 */
#include <fcntl.h>
#include <libpmem2.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cache.h"
#include "util/error.h"
#include "util/lock.h"
#include "core/map.h"
#include "core/testhooks.h"

struct wc_test_hooks *wc_test_hooks;

static int pmem2_fail(struct wc_cache *c, int ret, const char *what)
{
	/* libpmem2 1.12 declares pmem2_err_to_errno() but does not export it:
	 * its codes are -errno or its own range below -100000. */
	int err = ret > -4096 ? ret : (ret == PMEM2_E_NOSUPP ? -ENOTSUP : -EINVAL);

	return wc_err(err, "%s: %s: %s", c->cache_path, what, pmem2_errormsg());
}

int wc_map_lock_path(const char *path, int flags, int *err)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0) {
		*err = wc_err_sys(-errno, "%s: open", path);
		return -1;
	}
	/* Before a single byte is read for recovery or written by a format:
	 * another owner's commits and ours would overwrite each other. */
	*err = wc_lock_take(fd, "cache", path);
	if (*err) {
		close(fd);
		return -1;
	}
	return fd;
}

int wc_map_check_create_size(const char *path, const struct stat *st, uint64_t create_size)
{
	if (create_size && S_ISREG(st->st_mode) && (uint64_t)st->st_size > create_size)
		return wc_err(-EINVAL, "%s is %llu bytes, larger than cache_size %llu: remove or "
		              "truncate it, or leave cache_size unset to use all of it", path,
		              (unsigned long long)st->st_size, (unsigned long long)create_size);
	return 0;
}

static int prepare_file(struct wc_cache *c, bool create, uint64_t create_size)
{
	struct stat st;
	int ret;
	int flags = O_RDWR | O_CLOEXEC | ((create && create_size) ? O_CREAT : 0);

	/* wc_open and wc_create lock the file before they open the origin
	 * (wc_map_lock_path) and hand the descriptor in. */
	if (c->fd < 0) {
		c->fd = wc_map_lock_path(c->cache_path, flags, &ret);
		if (c->fd < 0) {
			if (ret == -ENOENT && create)
				return wc_err(-ENOENT, "%s: no such file (create it with the cache's "
				              "size, e.g. truncate -s 1G, or set cache_size)",
				              c->cache_path);
			return ret;
		}
	}
	if (fstat(c->fd, &st))
		return wc_err_sys(-errno, "%s: fstat", c->cache_path);
	if (S_ISDIR(st.st_mode))
		return wc_err(-EISDIR, "%s: is a directory", c->cache_path);
	if (create && (ret = wc_map_check_create_size(c->cache_path, &st, create_size)))
		return ret;
	if (create && create_size && S_ISREG(st.st_mode) && (uint64_t)st.st_size < create_size) {
		/* Allocate now: a tmpfs or DAX file must not fault on ENOSPC
		 * (SIGBUS) in the middle of a write. */
		int r = posix_fallocate(c->fd, 0, (off_t)create_size);

		if (r)
			return wc_err_sys(-r, "%s: allocate %llu bytes", c->cache_path,
			                  (unsigned long long)create_size);
	}
	return 0;
}

int wc_map_open(struct wc_cache *c, bool create, uint64_t create_size)
{
	struct pmem2_config *cfg = NULL;
	size_t size;
	int ret;

	ret = prepare_file(c, create, create_size);
	if (ret)
		return ret;
	ret = pmem2_source_from_fd(&c->src, c->fd);
	if (ret)
		return pmem2_fail(c, ret, "pmem2_source_from_fd");
	ret = pmem2_source_size(c->src, &size);
	if (ret)
		return pmem2_fail(c, ret, "pmem2_source_size");
	if (size < WC_SB_REGION && create) {
		struct wc_layout l;

		/* The caller's file is short, not the file system: -EINVAL. */
		ret = wc_layout_for_blocks(&l, 1, c->cfg.block_size);
		return wc_err(-EINVAL, "%s: %zu bytes are too small for a cache of %u-byte blocks: it "
		              "takes %llu bytes at least (set cache_size, or give a larger file)",
		              c->cache_path, size, c->cfg.block_size,
		              ret ? 0ull : (unsigned long long)l.bytes_used);
	}
	if (size == 0)
		return wc_err(-ENODATA, "%s: no cache here (an empty file)", c->cache_path);
	if (size < WC_SB_REGION)
		return wc_err(-EUCLEAN, "%s: %zu bytes, smaller than a cache's %u-byte superblock: a "
		              "cache cut short (truncated), or no cache", c->cache_path, size, WC_SB_REGION);
	ret = pmem2_config_new(&cfg);
	if (ret)
		return pmem2_fail(c, ret, "pmem2_config_new");
	ret = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE);
	if (!ret)
		ret = pmem2_map_new(&c->map, cfg, c->src);
	pmem2_config_delete(&cfg);
	if (ret)
		return pmem2_fail(c, ret, "pmem2_map_new");
	c->base = pmem2_map_get_address(c->map);
	c->map_len = pmem2_map_get_size(c->map);
	switch (pmem2_map_get_store_granularity(c->map)) {
	case PMEM2_GRANULARITY_BYTE:
		wc_persist_policy_set_granularity(&c->fp, WC_GRAN_BYTE, NULL, NULL);
		break;
	case PMEM2_GRANULARITY_CACHE_LINE:
		wc_persist_policy_set_granularity(&c->fp, WC_GRAN_CACHE_LINE, NULL, NULL);
		break;
	default:
		wc_persist_policy_set_granularity(&c->fp, WC_GRAN_PAGE, pmem2_get_flush_fn(c->map),
		                                pmem2_get_drain_fn(c->map));
		break;
	}
	c->hooks = wc_test_hooks; /* the same hooks see the unmap */
	if (c->hooks) {
		c->fp.observer = c->hooks->observer;
		if (c->hooks->mapped)
			c->hooks->mapped(c->hooks->ctx, c->base, c->map_len);
	}
	return 0;
}

void wc_map_unmap(struct wc_cache *c)
{
	if (c->map) {
		if (c->hooks && c->hooks->unmapped)
			c->hooks->unmapped(c->hooks->ctx, c->base, c->map_len);
		pmem2_map_delete(&c->map);
	}
	if (c->src)
		pmem2_source_delete(&c->src);
	c->base = NULL;
	c->map_len = 0;
}

int wc_map_probe(struct wc_cache *c, bool *page_only)
{
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	struct pmem2_map *map = NULL;
	size_t size;
	int ret;

	*page_only = false;
	ret = pmem2_source_from_fd(&src, c->fd);
	if (!ret)
		ret = pmem2_source_size(src, &size);
	if (!ret && size == 0) {
		/* Nothing to map: a new file is pmem only on a DAX mount. */
		*page_only = true;
		pmem2_source_delete(&src);
		return 0;
	}
	if (!ret)
		ret = pmem2_config_new(&cfg);
	if (!ret)
		ret = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE);
	if (!ret)
		ret = pmem2_map_new(&map, cfg, src);
	if (!ret)
		*page_only = pmem2_map_get_store_granularity(map) == PMEM2_GRANULARITY_PAGE;
	if (map)
		pmem2_map_delete(&map);
	if (cfg)
		pmem2_config_delete(&cfg);
	if (src)
		pmem2_source_delete(&src);
	return ret ? pmem2_fail(c, ret, "probing the mapping") : 0;
}

void wc_map_close(struct wc_cache *c)
{
	if (c->map) {
		if (c->hooks && c->hooks->unmapped)
			c->hooks->unmapped(c->hooks->ctx, c->base, c->map_len);
		pmem2_map_delete(&c->map);
	}
	if (c->src)
		pmem2_source_delete(&c->src);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->base = NULL;
}

const char *wc_map_granularity_name(const struct wc_cache *c)
{
	switch (c->fp.gran) {
	case WC_GRAN_BYTE:
		return "byte";
	case WC_GRAN_CACHE_LINE:
		return "cache-line";
	default:
		return "page";
	}
}
