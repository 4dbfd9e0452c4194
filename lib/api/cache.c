/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cache.c -- a cache's life: create (format), open (recover), close.
 *
 * Every refusal unwinds completely: nothing stays mapped or open, and the
 * caller's origin is still the caller's.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "core/bind.h"
#include "core/cache.h"
#include "core/readahead.h"
#include "core/wcconfig.h"
#include "util/error.h"
#include "core/map.h"
#include "core/policy_line.h"
#include "writeback/writeback.h"

static int cache_new(struct wc_cache **out, const char *cache_path, const struct wc_config *cfg,
                     bool open)
{
	struct wc_cache *c;
	int ret;

	*out = NULL;
	if (!cache_path || !*cache_path)
		return wc_err(-EINVAL, "%s: no cache path", open ? "wc_open" : "wc_create");
	c = calloc(1, sizeof(*c));
	if (!c)
		return wc_err(-ENOMEM, "%s: cache state", cache_path);
	c->fd = -1;
	ret = 0;
	if (cfg)
		ret = wc_config_import(&c->cfg, cfg);
	else {
		wc_config_init(&c->cfg);
		if (open)
			c->cfg.block_size = 0; /* the superblock's */
	}
	c->cache_path = strdup(cache_path);
	if (!c->cache_path) {
		free(c);
		return wc_err(-ENOMEM, "%s: cache state", cache_path);
	}
	wc_storelock_init(&c->commit.lock);
	wc_writers_register(c);
	wc_writers_init(c);
	*out = c;
	if (!ret)
		ret = wc_config_validate(&c->cfg, open);
	if (ret)
		return wc_err(ret, "%s: %s", cache_path, wc_errmsg());
	ret = wc_persist_policy_init(&c->fp, &c->cfg.pmem);
	if (ret)
		return wc_err(ret, "%s: flush policy: %s", cache_path, wc_errmsg());
	c->t0_ms = wc_clock_coarse_ms() - 1;
	return wc_writeback_init(c);
}

/* Release everything; the origin only if the cache owns it. */
static void cache_free(struct wc_cache *c, bool close_origin)
{
	if (!c)
		return;
	wc_writers_unregister(c); /* before its writer slots go */
	wc_ra_fini(c); /* its loads in flight use the origin */
	if (c->e)
		wc_index_fini(c);
	wc_dram_table_free(c->e, c->layout.n_blocks * sizeof(*c->e));
	wc_freelist_fini(c);
	free(c->commit.pending);
	for (unsigned i = 0; i < WC_SHARDS; i++) {
		free(c->shards[i].log[0]);
		free(c->shards[i].log[1]);
	}
	wc_map_close(c);
	if (close_origin && c->origin.ops)
		wc_origin_close(&c->origin);
	wc_writeback_fini(c);
	free(c->cache_path);
	free(c);
}

static int attach_origin(struct wc_cache *c, struct wc_origin origin, uint64_t *size)
{
	int ret;

	c->origin = origin;
	ret = wc_origin_check(&c->origin);
	if (ret)
		return ret;
	ret = wc_origin_size(&c->origin, size);
	if (ret)
		return wc_err(ret, "%s: origin size: %s", c->cache_path, wc_errmsg());
	c->origin_align = wc_origin_alignment(&c->origin);
	return 0;
}

static int setup_blocks(struct wc_cache *c, uint64_t origin_size)
{
	uint32_t bs = c->layout.block_size;
	int ret;

	if (c->origin_align > bs)
		return wc_err(-EINVAL, "%s: block size %u is smaller than the origin's I/O alignment %u",
		              c->cache_path, bs, c->origin_align);
	c->block_shift = (uint32_t)__builtin_ctz(bs);
	c->origin_blocks = origin_size >> c->block_shift;
	c->e = wc_dram_table(c->layout.n_blocks * sizeof(*c->e));
	if (!c->e)
		return wc_err(-ENOMEM, "%s: %llu DRAM entries", c->cache_path,
		              (unsigned long long)c->layout.n_blocks);
	c->dram_bytes = c->layout.n_blocks * sizeof(*c->e) + sizeof(*c);
	ret = wc_shard_logs_init(c);
	if (!ret)
		ret = wc_index_init(c);
	if (!ret)
		ret = wc_freelist_init(c);
	if (!ret)
		ret = wc_ra_init(c);
	return ret;
}

/* The common start of create and open: state, config, the origin.
 * `locked_fd` is the cache file already open and locked (wc_open and
 * wc_create), or -1; the cache owns it from here on. */
static int cache_begin(wc_cache **out, struct wc_cache **c, const char *cache_path,
                       struct wc_origin origin, const struct wc_config *cfg, bool open,
                       uint64_t *origin_size, int locked_fd)
{
	int ret;

	*c = NULL;
	if (!out) {
		if (locked_fd >= 0)
			close(locked_fd);
		return wc_err(-EINVAL, "%s: NULL result pointer", open ? "wc_open" : "wc_create");
	}
	*out = NULL;
	ret = cache_new(c, cache_path, cfg, open);
	if (*c)
		(*c)->fd = locked_fd;
	else if (locked_fd >= 0)
		close(locked_fd);
	if (!ret)
		ret = attach_origin(*c, origin, origin_size);
	return ret;
}

/* The common end of create and open: rebuild the DRAM state from the
 * entries (all free after a format), start write-back and hand the cache
 * over; or unwind everything on the first error. */
static int cache_end(wc_cache **out, struct wc_cache *c, int ret, bool created)
{
	if (!ret)
		ret = wc_recover(c);
	/* Before write-back can write a byte of the origin. */
	if (!ret)
		wc_bind_settle(c);
	/* Recovery made every free block durably free: measure there. */
	if (!ret)
		wc_policy_settle(c, created);
	if (!ret)
		ret = wc_writeback_start(c);
	if (!ret) {
		*out = c;
		return 0;
	}
	if (c)
		wc_writeback_stop(c);
	cache_free(c, false);
	return ret;
}

static int create_locked(wc_cache **out, const char *cache_path, struct wc_origin origin,
                         const struct wc_config *cfg, int locked_fd)
{
	struct wc_cache *c;
	struct wc_pmem_sb *sb;
	struct wc_pmem_origin_id id;
	uint64_t origin_size;
	int ret;

	ret = cache_begin(out, &c, cache_path, origin, cfg, false, &origin_size, locked_fd);
	if (ret)
		goto fail;
	if (origin_size == 0 || origin_size % c->cfg.block_size) {
		ret = wc_err(-EINVAL, "%s: origin %s is %llu bytes, not a positive multiple of the block size %u",
		             cache_path, wc_origin_describe(&c->origin), (unsigned long long)origin_size,
		             c->cfg.block_size);
		goto fail;
	}
	ret = wc_map_open(c, true, c->cfg.cache_size);
	if (ret)
		goto fail;
	sb = wc_sb(c->base);
	if (wc_sb_validate(sb, c->map_len, cache_path, &c->layout) == 0) {
		ret = wc_err(-EEXIST, "%s already holds a valid cache (%llu blocks of %u bytes); "
		             "open it, or wipe its first 4 KiB to reformat", cache_path,
		             (unsigned long long)sb->n_blocks, sb->block_size);
		goto fail;
	}
	ret = wc_layout_compute(&c->layout, c->map_len, c->cfg.block_size);
	if (ret) {
		ret = wc_err(ret, "%s: %s", cache_path, wc_errmsg());
		goto fail;
	}
	ret = setup_blocks(c, origin_size);
	if (!ret)
		ret = wc_bind_create(c, origin_size, &id);
	if (ret)
		goto fail;
	ret = wc_format(c, origin_size, &id);
fail:
	return cache_end(out, c, ret, true);
}

static int open_locked(wc_cache **out, const char *cache_path, struct wc_origin origin,
                       const struct wc_config *cfg, int locked_fd)
{
	struct wc_cache *c;
	struct wc_pmem_sb *sb;
	uint64_t origin_size;
	int ret;

	ret = cache_begin(out, &c, cache_path, origin, cfg, true, &origin_size, locked_fd);
	if (!ret)
		ret = wc_map_open(c, false, 0);
	if (ret)
		goto fail;
	sb = wc_sb(c->base);
	ret = wc_sb_validate(sb, c->map_len, cache_path, &c->layout);
	if (ret)
		goto fail;
	if (c->cfg.block_size && c->cfg.block_size != sb->block_size) {
		ret = wc_err(-EINVAL, "%s: block size %u requested, but the cache was formatted with %u",
		             cache_path, c->cfg.block_size, sb->block_size);
		goto fail;
	}
	c->cfg.block_size = sb->block_size;
	/* Before recovery writes a byte: is this the cache's origin? */
	ret = wc_bind_check(c, origin_size);
	if (ret)
		goto fail;
	if (c->bind.size % sb->block_size) {
		ret = wc_err(-EINVAL, "%s: origin %s is %llu bytes, not a multiple of the block size %u",
		             cache_path, wc_origin_describe(&c->origin),
		             (unsigned long long)c->bind.size, sb->block_size);
		goto fail;
	}
	ret = setup_blocks(c, c->bind.size);
fail:
	return cache_end(out, c, ret, false);
}

WC_SYMVER(wc_create_origin_0_2, "wc_create_origin@@WCACHE_0.2");
int wc_create_origin_0_2(wc_cache **out, const char *cache_path, struct wc_origin origin,
                     const struct wc_config *cfg)
{
	return create_locked(out, cache_path, origin, cfg, -1);
}

WC_SYMVER(wc_open_origin_0_2, "wc_open_origin@@WCACHE_0.2");
int wc_open_origin_0_2(wc_cache **out, const char *cache_path, struct wc_origin origin,
                   const struct wc_config *cfg)
{
	return open_locked(out, cache_path, origin, cfg, -1);
}

static int with_path_origin(wc_cache **out, const char *cache_path, const char *origin_path,
                            const struct wc_config *cfg, bool open)
{
	struct wc_origin origin;
	int ret, fd = -1;

	if (out)
		*out = NULL;
	if (!origin_path || !*origin_path)
		return wc_err(-EINVAL, "%s: no origin path", cache_path ? cache_path : "wc_create");
	/* The cache's lock before the origin's: a second open of a cache in
	 * use is refused for the cache (the origin is its owner's too), and
	 * the origin is not touched.  A file that does not exist yet (or
	 * cannot be opened) is left to wc_map_open, which creates it or names
	 * the problem, and locks it then. */
	if (cache_path && *cache_path) {
		fd = wc_map_lock_path(cache_path, O_RDWR, &ret);
		if (fd < 0 && ret == -EBUSY)
			return ret;
	}
	ret = wc_origin_open(&origin, origin_path);
	if (ret) {
		if (fd >= 0)
			close(fd);
		return ret;
	}
	ret = open ? open_locked(out, cache_path, origin, cfg, fd)
	           : create_locked(out, cache_path, origin, cfg, fd);
	if (ret)
		wc_origin_close(&origin);
	return ret;
}

WC_SYMVER(wc_create_0_2, "wc_create@@WCACHE_0.2");
int wc_create_0_2(wc_cache **out, const char *cache_path, const char *origin_path,
              const struct wc_config *cfg)
{
	return with_path_origin(out, cache_path, origin_path, cfg, false);
}

WC_SYMVER(wc_open_0_2, "wc_open@@WCACHE_0.2");
int wc_open_0_2(wc_cache **out, const char *cache_path, const char *origin_path,
            const struct wc_config *cfg)
{
	return with_path_origin(out, cache_path, origin_path, cfg, true);
}

int wc_close(wc_cache *c)
{
	int ret, err;

	if (!c)
		return wc_err(-EINVAL, "wc_close: NULL cache");
	/* Stop write-back first: a round in flight completes (its I/O is
	 * waited for inside the round) and frees only what is durable. */
	wc_writeback_stop(c);
	ret = wc_commit(c, false);
	/* The last commit's invalidations must be durable before the next
	 * open treats those blocks as free (found by the crash sweep); the
	 * floor moves up to the last commit, so the next open has no record
	 * to check. */
	wc_storelock_lock(&c->commit.lock);
	wc_commit_confirm_locked(c);
	wc_storelock_unlock(&c->commit.lock);
	err = wc_has_error(c);
	cache_free(c, true);
	if (err)
		return wc_err(err, "cache closed in error state (%d)", err);
	return ret;
}

int wc_flush(wc_cache *c)
{
	if (!c)
		return wc_err(-EINVAL, "wc_flush: NULL cache");
	return wc_commit(c, true);
}

uint64_t wc_size(const wc_cache *c)
{
	return c ? c->origin_blocks << c->block_shift : 0;
}

uint32_t wc_block_size(const wc_cache *c)
{
	return c ? c->layout.block_size : 0;
}
