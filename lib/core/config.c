/* SPDX-License-Identifier: BSD-3-Clause */
/* config.c -- defaults, "key=value,..." parsing and validation. */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/wcconfig.h"
#include "util/error.h"
#include "util/size.h"

/* dm-writecache's defaults for pmem (HIGH_WATERMARK 50, LOW_WATERMARK 45,
 * AUTOCOMMIT_BLOCKS_PMEM 64, AUTOCOMMIT_MSEC 1000).  block_size stays 0:
 * a default of 4096 read as a request made wc_open refuse every cache
 * formatted with another size; 0 is 4096 at create (wc_config_resolve)
 * and the cache's own at open. */
void wc_config_defaults(struct wc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->high_watermark = 50;
	cfg->low_watermark = 45;
	cfg->writeback_jobs = 256;
	cfg->autocommit_blocks = 64;
	cfg->autocommit_ms = 1000;
	cfg->fua = true;
	cfg->writeback_max_io_kib = 1024;
	/* 16 MiB: one round's worth (writeback.c). */
	cfg->writeback_window_max_kib = 16384;
}

static int parse_u64(const char *key, const char *val, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	*out = 0;
	if (wc_size_parse(val, &v, NULL) != 0 || v > max)
		return wc_err(-EINVAL, "option %s: \"%s\" is not a number in 0..%llu", key,
		              val ? val : "", (unsigned long long)max);
	*out = v;
	return 0;
}

static int parse_uint(const char *key, const char *val, unsigned max, unsigned *out)
{
	uint64_t v;
	int ret = parse_u64(key, val, max, &v);

	if (!ret)
		*out = (unsigned)v;
	return ret;
}

static int parse_bool(const char *key, const char *val, bool *out)
{
	if (!val || !strcmp(val, "1") || !strcmp(val, "yes") || !strcmp(val, "on") || !strcmp(val, "true"))
		*out = true;
	else if (!strcmp(val, "0") || !strcmp(val, "no") || !strcmp(val, "off") || !strcmp(val, "false"))
		*out = false;
	else
		return wc_err(-EINVAL, "option %s: \"%s\" is not a boolean (0/1)", key, val);
	return 0;
}

/* Fields past the 0.1 layout that an option sets: wc_config_parse stores
 * them in the caller's struct only when the options name them (a program
 * built against 0.1 has none of them; the 0.1 part it always has).  A new
 * option for such a field takes a bit here and a line in wc_config_parse:
 * without them it would parse and be dropped. */
enum {
	LATE_WINDOW = 1u << 0,
	LATE_REBIND = 1u << 1,
	LATE_MEDIUM = 1u << 2,
	LATE_FORCE = 1u << 3,
};

static int parse_one(struct wc_config *cfg, const char *key, const char *val, unsigned *late)
{
	uint64_t v;
	int ret;

	if (!strcmp(key, "block_size")) {
		ret = parse_u64(key, val, 65536, &v);
		cfg->block_size = (uint32_t)v;
		return ret;
	}
	if (!strcmp(key, "high_watermark"))
		return parse_uint(key, val, 100, &cfg->high_watermark);
	if (!strcmp(key, "low_watermark"))
		return parse_uint(key, val, 100, &cfg->low_watermark);
	if (!strcmp(key, "writeback_jobs"))
		return parse_uint(key, val, 1u << 20, &cfg->writeback_jobs);
	if (!strcmp(key, "autocommit_blocks"))
		return parse_uint(key, val, UINT_MAX, &cfg->autocommit_blocks);
	if (!strcmp(key, "autocommit_ms") || !strcmp(key, "autocommit_time"))
		return parse_uint(key, val, 3600000, &cfg->autocommit_ms);
	if (!strcmp(key, "max_age_ms") || !strcmp(key, "max_age"))
		return parse_uint(key, val, 86400000, &cfg->max_age_ms);
	if (!strcmp(key, "writeback_window_max_kib")) {
		*late |= LATE_WINDOW;
		return parse_uint(key, val, 1u << 30, &cfg->writeback_window_max_kib);
	}
	if (!strcmp(key, "writeback_max_io_kib"))
		return parse_uint(key, val, 1u << 20, &cfg->writeback_max_io_kib);
	if (!strcmp(key, "cache_size"))
		return parse_u64(key, val, UINT64_MAX, &cfg->cache_size);
	if (!strcmp(key, "cleaner"))
		return parse_bool(key, val, &cfg->cleaner);
	if (!strcmp(key, "fua"))
		return parse_bool(key, val, &cfg->fua);
	if (!strcmp(key, "nofua")) {
		/* "nofua", "nofua=1" and "nofua=0" all say what they mean. */
		bool no;

		ret = parse_bool(key, val, &no);
		if (ret == 0)
			cfg->fua = !no;
		return ret;
	}
	if (!strcmp(key, "force")) {
		bool on;

		*late |= LATE_FORCE;
		ret = parse_bool(key, val, &on);
		if (ret == 0)
			cfg->force = on;
		return ret;
	}
	if (!strcmp(key, "medium")) {
		*late |= LATE_MEDIUM;
		if (val && !strcmp(val, "auto"))
			cfg->medium = WC_MEDIUM_AUTO;
		else if (val && !strcmp(val, "pmem"))
			cfg->medium = WC_MEDIUM_PMEM;
		else if (val && !strcmp(val, "block"))
			cfg->medium = WC_MEDIUM_BLOCK;
		else
			return wc_err(-EINVAL, "option medium: \"%s\" is not auto, pmem or block", val ? val : "");
		return 0;
	}
	if (!strcmp(key, "no_threads"))
		return parse_bool(key, val, &cfg->no_threads);
	if (!strcmp(key, "origin_rebind")) {
		*late |= LATE_REBIND;
		if (val && (!strcmp(val, "0") || !strcmp(val, "no") || !strcmp(val, "never")))
			cfg->origin_rebind = WC_ORIGIN_REBIND_NEVER;
		else if (!val || !strcmp(val, "1") || !strcmp(val, "yes") || !strcmp(val, "clean"))
			cfg->origin_rebind = WC_ORIGIN_REBIND_CLEAN;
		else if (!strcmp(val, "force") || !strcmp(val, "2"))
			cfg->origin_rebind = WC_ORIGIN_REBIND_FORCE;
		else
			return wc_err(-EINVAL, "option origin_rebind: \"%s\" is not 0 (never), 1 (clean) "
			              "or force", val);
		return 0;
	}
	if (!strcmp(key, "pmem_threshold")) {
		if (val && !strcmp(val, "auto"))
			cfg->pmem.threshold = WC_PMEM_THRESHOLD_AUTO;
		else if (val && !strcmp(val, "nt"))
			cfg->pmem.threshold = SIZE_MAX;
		else {
			ret = parse_u64(key, val, SIZE_MAX - 2, &v);
			cfg->pmem.threshold = (size_t)v;
			return ret;
		}
		return 0;
	}
	if (!strcmp(key, "pmem_force")) {
		if (val && !strcmp(val, "auto"))
			cfg->pmem.force = WC_PMEM_AUTO;
		else if (val && !strcmp(val, "nt"))
			cfg->pmem.force = WC_PMEM_FORCE_NT;
		else if (val && !strcmp(val, "cached"))
			cfg->pmem.force = WC_PMEM_FORCE_CACHED;
		else
			return wc_err(-EINVAL, "option pmem_force: \"%s\" is not auto, nt or cached", val ? val : "");
		return 0;
	}
	if (!strcmp(key, "pmem_flush")) {
		if (val && !strcmp(val, "clflushopt"))
			cfg->pmem.flush_insn = WC_PMEM_CLFLUSHOPT;
		else if (val && !strcmp(val, "clwb"))
			cfg->pmem.flush_insn = WC_PMEM_CLWB;
		else
			return wc_err(-EINVAL, "option pmem_flush: \"%s\" is not clflushopt or clwb", val ? val : "");
		return 0;
	}
	return wc_err(-EINVAL, "unknown option \"%s\" (known: block_size, high_watermark, low_watermark, "
	              "writeback_jobs, autocommit_blocks, autocommit_ms, max_age_ms, cleaner, fua, nofua, "
	              "no_threads, medium, force, writeback_max_io_kib, writeback_window_max_kib, cache_size, origin_rebind, pmem_threshold, pmem_force, pmem_flush)", key);
}

/*
 * All or nothing: the options go into a copy, and the caller's struct
 * changes only when every one of them parsed and the result is consistent
 * -- a caller that reports the error and goes on with its config would
 * otherwise run with half of a string it was told was refused.  Only the
 * 0.1 part of the caller's struct is read (every caller has it); a later
 * field is written only when an option names it, as before.
 */
int wc_config_parse(struct wc_config *cfg, const char *options)
{
	struct wc_config tmp;
	char *copy, *tok, *save = NULL;
	unsigned late = 0;
	int ret = 0;

	if (!cfg)
		return wc_err(-EINVAL, "wc_config_parse: NULL config");
	if (!options)
		return 0;
	copy = strdup(options);
	if (!copy)
		return wc_err(-ENOMEM, "wc_config_parse: copy of options");
	memset(&tmp, 0, sizeof(tmp));
	memcpy(&tmp, cfg, WC_CONFIG_SIZE_0_1);
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		while (isspace((unsigned char)*tok))
			tok++;
		if (!*tok)
			continue;
		if (eq)
			*eq = '\0';
		ret = parse_one(&tmp, tok, eq ? eq + 1 : NULL, &late);
	}
	free(copy);
	/* block_size 0 stays legal here: wc_open takes the superblock's. */
	if (!ret)
		ret = wc_config_validate(&tmp, true);
	if (ret)
		return ret;
	memcpy(cfg, &tmp, WC_CONFIG_SIZE_0_1);
	if (late & LATE_WINDOW)
		cfg->writeback_window_max_kib = tmp.writeback_window_max_kib;
	if (late & LATE_REBIND)
		cfg->origin_rebind = tmp.origin_rebind;
	if (late & LATE_MEDIUM)
		cfg->medium = tmp.medium;
	if (late & LATE_FORCE)
		cfg->force = tmp.force;
	return 0;
}

void wc_config_resolve(struct wc_config *cfg, bool open)
{
	if (!open && cfg->block_size == 0)
		cfg->block_size = WC_DEFAULT_BLOCK_SIZE;
}

int wc_config_validate(const struct wc_config *cfg, bool block_size_optional)
{
	uint32_t bs = cfg->block_size;

	if (!(block_size_optional && bs == 0) &&
	    (bs < WC_MIN_BLOCK_SIZE || bs > WC_MAX_BLOCK_SIZE || (bs & (bs - 1))))
		return wc_err(-EINVAL, "block_size %u: must be a power of two in 512..65536", bs);
	if (cfg->high_watermark > 100 || cfg->low_watermark > 100)
		return wc_err(-EINVAL, "watermarks %u/%u: must be percentages (0..100)",
		              cfg->high_watermark, cfg->low_watermark);
	if (cfg->low_watermark > cfg->high_watermark)
		return wc_err(-EINVAL, "low_watermark %u is above high_watermark %u",
		              cfg->low_watermark, cfg->high_watermark);
	if (cfg->writeback_jobs == 0)
		return wc_err(-EINVAL, "writeback_jobs must be at least 1");
	if (cfg->autocommit_blocks == 0)
		return wc_err(-EINVAL, "autocommit_blocks must be at least 1");
	if (cfg->writeback_max_io_kib == 0)
		return wc_err(-EINVAL, "writeback_max_io_kib must be at least 1");
	return 0;
}
