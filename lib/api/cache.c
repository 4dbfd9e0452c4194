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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "block/block.h"
#include "core/bind.h"
#include "core/cache.h"
#include "core/readahead.h"
#include "core/wcconfig.h"
#include "util/error.h"
#include "core/map.h"
#include "core/medium.h"
#include "core/policy_line.h"
#include "api/async.h"
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
	else
		wc_config_init(&c->cfg);
	wc_config_resolve(&c->cfg, open);
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
	c->room_step = wc_host_room_step;
	ret = wc_async_init(c);
	return ret ? ret : wc_writeback_init(c);
}

/* Release everything; the origin only if the cache owns it. */
static void cache_free(struct wc_cache *c, bool close_origin)
{
	if (!c)
		return;
	wc_async_fini(c);
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
	if (c->blk) {
		wc_blk_wb_stop(c);
		wc_blk_aio_stop(c);
		wc_blk_log_fini(c);
		wc_blk_device_close(c);
		free(c->blk->wb.buf);
		free(c->blk->wb.job);
		free(c->blk);
		c->blk = NULL;
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
/*
 * A create that failed after making the cache file (ENOSPC while
 * allocating it, a size too small for a cache) leaves no empty or half
 * formatted file behind.  Only the file this cache holds open and locked
 * is removed -- never a path another process made meanwhile.
 */
static void remove_made_file(struct wc_cache *c)
{
	struct stat held, named;

	if (!c->path_was_absent || c->fd < 0)
		return;
	if (fstat(c->fd, &held) || !S_ISREG(held.st_mode) || stat(c->cache_path, &named) ||
	    held.st_dev != named.st_dev || held.st_ino != named.st_ino)
		return;
	unlink(c->cache_path); /* best effort: the create's own error is what is reported */
}

static int cache_end(wc_cache **out, struct wc_cache *c, int ret, bool created)
{
	if (!ret)
		ret = c->blk ? wc_blk_recover(c) : wc_recover(c);
	/* Before write-back can write a byte of the origin. */
	if (!ret)
		wc_bind_settle(c);
	/* Recovery made every free block durably free: measure there. */
	if (!ret && !c->blk)
		wc_policy_settle(c, created);
	if (!ret && c->blk)
		ret = wc_blk_aio_start(c);
	if (!ret)
		ret = c->blk ? wc_blk_wb_start(c) : wc_writeback_start(c);
	if (!ret) {
		*out = c;
		return 0;
	}
	if (c)
		wc_writeback_stop(c);
	if (c && created)
		remove_made_file(c);
	cache_free(c, false);
	return ret;
}

/* ---- the block medium ---------------------------------------------------- */

static int blk_new(struct wc_cache *c)
{
	c->blk = calloc(1, sizeof(*c->blk));
	if (!c->blk)
		return wc_err(-ENOMEM, "%s: block medium state", c->cache_path);
	c->blk->fd = -1;
	c->blk->host_efd = -1; /* wc_event_fd sets it */
	pthread_mutex_init(&c->blk->flush_lock, NULL);
	pthread_mutex_init(&c->blk->wb.lock, NULL);
	pthread_mutex_init(&c->blk->wb.step, NULL);
	pthread_cond_init(&c->blk->wb.cond, NULL);
	c->medium = &wc_blk_medium_ops;
	return 0;
}

static int blk_geometry(struct wc_cache *c)
{
	struct wc_blk *b = c->blk;

	c->layout.block_size = b->g.block_size;
	c->layout.n_blocks = b->g.n_entries;
	c->layout.bytes_used = b->g.seg_start + b->g.n_segments * b->g.seg_bytes;
	c->map_len = b->dev_bytes;
	return wc_blk_log_init(c);
}

static int blk_create(struct wc_cache *c, uint64_t origin_size, const char *reason)
{
	struct wc_pmem_origin_id id;
	void *head;
	int ret;

	ret = blk_new(c);
	if (!ret)
		ret = wc_blk_device_open(c, true, c->cfg.cache_size);
	if (ret)
		return ret;
	snprintf(c->blk->reason, sizeof(c->blk->reason), "%s", reason);
	{
		/* Whole units: the device's logical block divides them. */
		size_t len = c->blk->dev_bytes < WC_FORMAT_PROBE_BYTES ? (size_t)c->blk->dev_bytes
		                                                       : WC_FORMAT_PROBE_BYTES;

		len -= len % WC_BLK_UNIT;
		head = wc_blk_alloc_buf(c, len ? len : WC_BLK_UNIT);
		if (!head)
			return wc_err(-ENOMEM, "%s: buffer for the first %zu bytes", c->cache_path, len);
		ret = len ? wc_blk_pread(c, head, len, 0, "the bytes a format overwrites") : 0;
		if (!ret)
			ret = wc_format_target_check(head, len, c->blk->dev_bytes, c->cache_path,
			                             c->cfg.force);
		free(head);
		if (ret)
			return ret;
	}
	ret = wc_blk_geom_compute(&c->blk->g, c->blk->dev_bytes, c->cfg.block_size, c->blk->lba,
	                          c->cache_path);
	if (!ret)
		ret = blk_geometry(c);
	if (!ret)
		ret = setup_blocks(c, origin_size);
	if (!ret)
		ret = wc_bind_create(c, origin_size, &id);
	if (!ret)
		ret = wc_blk_format(c, origin_size, &id);
	return ret;
}

static int blk_open(struct wc_cache *c, uint64_t origin_size)
{
	struct wc_blk *b;
	void *u;
	int ret;

	ret = blk_new(c);
	if (!ret)
		ret = wc_blk_device_open(c, false, 0);
	if (ret)
		return ret;
	b = c->blk;
	snprintf(b->reason, sizeof(b->reason), "the cache was formatted on a block medium");
	u = wc_blk_alloc_buf(c, WC_BLK_ID_OFFSET + 2 * WC_BLK_UNIT);
	if (!u)
		return wc_err(-ENOMEM, "%s: superblock buffer", c->cache_path);
	ret = wc_blk_pread(c, u, WC_BLK_ID_OFFSET + 2 * WC_BLK_UNIT, 0, "superblock");
	if (!ret)
		ret = wc_blk_sb_check(u, b->dev_bytes, c->cache_path);
	if (!ret) {
		memcpy(&b->sb, u, sizeof(b->sb));
		memcpy(&b->id_slots[0], (char *)u + WC_BLK_ID_OFFSET, sizeof(b->id_slots[0]));
		memcpy(&b->id_slots[1], (char *)u + WC_BLK_ID_OFFSET + WC_BLK_UNIT, sizeof(b->id_slots[1]));
	}
	free(u);
	if (ret)
		return ret;
	b->cache_id = b->sb.cache_id;
	if (b->lba > b->sb.lba_size)
		return wc_err(-EINVAL, "%s: the device's logical block size is %u now, but the cache "
		              "was formatted with %u-byte records", c->cache_path, b->lba, b->sb.lba_size);
	b->lba = b->sb.lba_size;
	if (c->cfg.block_size && c->cfg.block_size != b->sb.block_size)
		return wc_err(-EINVAL, "%s: block size %u requested, but the cache was formatted with %u",
		              c->cache_path, c->cfg.block_size, b->sb.block_size);
	c->cfg.block_size = b->sb.block_size;
	wc_blk_geom_from_sb(&b->g, &b->sb);
	ret = blk_geometry(c);
	if (!ret)
		ret = wc_bind_check(c, origin_size);
	if (ret)
		return ret;
	if (c->bind.size % b->sb.block_size)
		return wc_err(-EINVAL, "%s: origin %s is %llu bytes, not a multiple of the block size %u",
		              c->cache_path, wc_origin_describe(&c->origin),
		              (unsigned long long)c->bind.size, b->sb.block_size);
	return setup_blocks(c, c->bind.size);
}

/* Which medium a new cache goes on, and why (wc_stats.medium_reason).
 * c->fd is the locked file when it exists. */
static int choose_medium(struct wc_cache *c, bool *block, const char **why)
{
	bool page_only;
	int ret;

	*block = false;
	if (c->cfg.medium == WC_MEDIUM_BLOCK) {
		*block = true;
		*why = "medium=block was asked for";
		return 0;
	}
	if (c->cfg.medium == WC_MEDIUM_PMEM) {
		*why = "medium=pmem was asked for";
		return 0;
	}
	if (getenv("PMEM2_FORCE_GRANULARITY")) {
		*why = "PMEM2_FORCE_GRANULARITY is set: mapped as persistent memory";
		return 0;
	}
	if (c->fd < 0) {
		/* A new file: on a DAX file system libpmem2 would map it with
		 * cache-line granularity once it has a size; make it one to ask. */
		c->fd = wc_map_lock_path(c->cache_path, O_RDWR | (c->cfg.cache_size ? O_CREAT : 0), &ret);
		if (c->fd < 0)
			return ret == -ENOENT ? wc_err(-ENOENT, "%s: no such file (create it with the "
			                               "cache's size, or set cache_size)", c->cache_path)
			                      : ret;
	}
	{
		struct stat st;

		if (fstat(c->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 && c->cfg.cache_size) {
			/* Sparse: nothing allocated by the probe. */
			if (ftruncate(c->fd, (off_t)c->cfg.cache_size) == 0) {
				ret = wc_map_probe(c, &page_only);
				if (ftruncate(c->fd, 0))
					return wc_err_sys(-errno, "%s: truncate", c->cache_path);
				if (ret)
					return ret;
				goto decided;
			}
		}
	}
	ret = wc_map_probe(c, &page_only);
	if (ret)
		return ret;
decided:
	*block = page_only;
	*why = page_only ? "libpmem2 maps the path with page granularity only: not persistent memory"
	                 : "libpmem2 maps the path as persistent memory";
	return 0;
}

static int create_locked(wc_cache **out, const char *cache_path, struct wc_origin origin,
                         const struct wc_config *cfg, int locked_fd)
{
	struct wc_cache *c;
	struct wc_pmem_origin_id id;
	uint64_t origin_size;
	int ret;

	struct stat st;
	bool absent = cache_path && stat(cache_path, &st) != 0 && errno == ENOENT;

	ret = cache_begin(out, &c, cache_path, origin, cfg, false, &origin_size, locked_fd);
	if (c)
		c->path_was_absent = absent;
	if (ret)
		goto fail;
	if (origin_size == 0 || origin_size % c->cfg.block_size) {
		ret = wc_err(-EINVAL, "%s: origin %s is %llu bytes, not a positive multiple of the block size %u",
		             cache_path, wc_origin_describe(&c->origin), (unsigned long long)origin_size,
		             c->cfg.block_size);
		goto fail;
	}
	{
		bool block;
		const char *why = "";

		ret = choose_medium(c, &block, &why);
		if (ret)
			goto fail;
		if (block) {
			ret = blk_create(c, origin_size, why);
			goto fail;
		}
		c->pmem_reason = why;
	}
	ret = wc_map_open(c, true, c->cfg.cache_size);
	if (ret)
		goto fail;
	ret = wc_format_target_check(c->base, c->map_len < WC_FORMAT_PROBE_BYTES ? c->map_len
	                                                                      : WC_FORMAT_PROBE_BYTES,
	                             c->map_len, cache_path, c->cfg.force);
	if (ret)
		goto fail;
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
	if (ret)
		goto fail;
	if (wc_blk_is_block_image(cache_path)) {
		if (c->cfg.medium == WC_MEDIUM_PMEM) {
			ret = wc_err(-EINVAL, "%s: medium=pmem asked for, but the cache is on a block medium",
			             cache_path);
			goto fail;
		}
		ret = blk_open(c, origin_size);
		goto fail;
	}
	if (c->cfg.medium == WC_MEDIUM_BLOCK) {
		ret = wc_err(-EINVAL, "%s: medium=block asked for, but this is not a cache on a block "
		             "medium", cache_path);
		goto fail;
	}
	c->pmem_reason = "the cache was formatted on persistent memory";
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
	/* Requests in flight finish (their done() runs here) before anything
	 * they use goes. */
	wc_async_drain(c);
	/* Stop write-back first: a round in flight completes (its I/O is
	 * waited for inside the round) and frees only what is durable. */
	if (c->blk) {
		/* Records done and durable, summaries written, the state last. */
		wc_blk_wb_stop(c);
		ret = wc_blk_flush(c, false);
		if (!ret && !wc_has_error(c)) {
			wc_blk_close_head(c);
			ret = wc_blk_write_summaries(c);
			if (ret >= 0)
				ret = wc_blk_flush(c, false);
			if (ret >= 0) {
				/* No record above the head: the next open reads no
				 * segment past it. */
				pthread_mutex_lock(&c->blk->log.lock);
				c->blk->log.open_limit = c->blk->log.head;
				pthread_mutex_unlock(&c->blk->log.lock);
				ret = wc_blk_state_write(c, 0, 0);
			}
		}
		if (ret > 0)
			ret = 0;
		err = wc_has_error(c);
		cache_free(c, true);
		if (err)
			return wc_err(err, "cache closed in error state (%d)", err);
		return ret;
	}
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
	if (c->blk) {
		if (wc_has_error(c))
			return wc_err(-EIO, "%s flush: the cache is in error state (%d)", c->cache_path,
			              wc_has_error(c));
		return wc_blk_flush(c, true);
	}
	return wc_commit(c, true);
}

int wc_writeback(wc_cache *c)
{
	if (!c)
		return wc_err(-EINVAL, "wc_writeback: NULL cache");
	if (c->blk) {
		int ret = wc_blk_flush(c, false);

		return ret ? ret : wc_blk_writeback_all(c);
	}
	return wc_writeback_everything(c);
}

int wc_set_cleaner(wc_cache *c, bool on)
{
	if (!c)
		return wc_err(-EINVAL, "wc_set_cleaner: NULL cache");
	wc_writeback_set_cleaner(c, on);
	if (c->blk)
		wc_blk_wb_kick(c);
	return 0;
}

uint64_t wc_size(const wc_cache *c)
{
	return c ? c->origin_blocks << c->block_shift : 0;
}

uint32_t wc_block_size(const wc_cache *c)
{
	return c ? c->layout.block_size : 0;
}
