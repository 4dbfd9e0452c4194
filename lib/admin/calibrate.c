/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate.c -- the flush engine's measurement of non-temporal against
 * cached stores for the tools (wcadmin.h): on a private buffer for
 * `wcbench calibrate`, and on a cache file's free blocks for `wcbench
 * calibrate --cache`, which records it in the superblock's flush-policy
 * line; that line read and decoded for `wcctl calibrate CACHE`.
 *
 * The offline measurement is the one wc_create runs (core/policy_line.c):
 * only blocks whose entry reads free are written, never a block holding
 * data, and the owner's lock is held throughout, as wc_open holds it, since
 * an owner could be allocating exactly those blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "admin/wcadmin.h"
#include "core/format.h"
#include "core/policy_line.h"
#include "flush/engine.h"
#include "util/error.h"
#include "util/lock.h"

/* A cache with no flush options of its own: its inputs are the CPU's and
 * the environment's. */
static const struct wc_pmem_config no_options;

static void decode(struct wcadm_policy *out, const struct wc_pmem_policy *pl)
{
	unsigned features;
	int flush_insn;

	memset(out, 0, sizeof(*out));
	out->valid = wc_policy_check(pl);
	if (out->valid && out->valid != -ENODATA)
		snprintf(out->damage, sizeof(out->damage), "%s", wc_errmsg());
	if (out->valid)
		return;
	wc_policy_inputs(&no_options, &features, &flush_insn);
	out->threshold = pl->threshold;
	out->max_size_kib = pl->max_size_kib;
	out->elapsed_us = pl->elapsed_us;
	out->time = pl->time;
	out->matches = wc_policy_matches(pl, features, flush_insn);
	wc_policy_result_str(out->result, sizeof(out->result), pl);
	wc_policy_cpu_str(out->cpu, sizeof(out->cpu), pl);
}

int wcadm_image_policy(struct wcadm_image *img, struct wcadm_policy *out)
{
	struct wc_pmem_policy pl;

	if (pread(img->fd, &pl, sizeof(pl), WC_POLICY_OFFSET) != (ssize_t)sizeof(pl))
		return wc_err_sys(-errno, "%s: read the flush policy line at offset %u", img->path,
		                  WC_POLICY_OFFSET);
	decode(out, &pl);
	return 0;
}

static void copy_calibration(struct wcadm_calibration *out, const struct wc_calibration *cal)
{
	_Static_assert(WCADM_CALIBRATION_MAX_POINTS == WC_CALIBRATION_MAX_POINTS, "points");
	_Static_assert(WCADM_CALIBRATION_MAX_NT == WC_CAL_MAX_NT, "widths");

	out->nt_name = cal->nt_name;
	out->cached_name = cal->cached_name;
	out->npoints = cal->npoints;
	out->rounds = cal->rounds;
	for (unsigned i = 0; i < cal->npoints && i < WC_CALIBRATION_MAX_POINTS; i++)
		out->pt[i] = (struct wcadm_calibration_point){
			.size = cal->pt[i].size,
			.nt_fenced = cal->pt[i].nt_fenced,
			.cached_fenced = cal->pt[i].cached_fenced,
			.nt_batched = cal->pt[i].nt_batched,
			.cached_batched = cal->pt[i].cached_batched,
		};
	out->threshold = cal->threshold;
	out->elapsed_ms = cal->elapsed_ms;
	wc_flush_choice_str(out->choice, sizeof(out->choice), &cal->choice);
	out->n_nt = cal->n_nt;
	for (unsigned w = 0; w < cal->n_nt && w < WCADM_CALIBRATION_MAX_NT; w++) {
		out->nt_names[w] = wc_strategy_get(cal->nt_ids[w])->name;
		for (unsigned i = 0; i < cal->npoints && i < WC_CALIBRATION_MAX_POINTS; i++) {
			out->pt[i].w_fenced[w] = cal->pt[i].w_fenced[w];
			out->pt[i].w_batched[w] = cal->pt[i].w_batched[w];
		}
	}
}

int wcadm_calibrate(struct wcadm_calibration *out, unsigned features, int flush_insn,
                    unsigned rounds, size_t bytes_per_point)
{
	struct wc_calibration cal;
	int ret = wc_calibrate_run(&cal, features, flush_insn, rounds, bytes_per_point, 0);

	memset(out, 0, sizeof(*out));
	if (!ret)
		copy_calibration(out, &cal);
	return ret;
}

/* The cache file, locked and mapped. */
struct cache_map {
	int fd;
	struct pmem2_source *src;
	struct pmem2_map *map;
	void *base;
	size_t len;
	enum pmem2_granularity gran;
};

static void unmap(struct cache_map *m)
{
	if (m->map)
		pmem2_map_delete(&m->map);
	if (m->src)
		pmem2_source_delete(&m->src);
	if (m->fd >= 0)
		close(m->fd);
}

static int map_cache(struct cache_map *m, const char *path)
{
	struct pmem2_config *cfg = NULL;
	int ret;

	memset(m, 0, sizeof(*m));
	m->fd = open(path, O_RDWR | O_CLOEXEC);
	if (m->fd < 0)
		return wc_err_sys(-errno, "open %s", path);
	/* The owner's lock, as wc_open takes it: held until unmap() closes
	 * the file. */
	ret = wc_lock_take(m->fd, "cache", path);
	if (ret)
		return wc_err(ret, "%s (%s)", wc_errmsg(), strerror(-ret));
	if ((ret = pmem2_source_from_fd(&m->src, m->fd)) != 0 ||
	    (ret = pmem2_config_new(&cfg)) != 0 ||
	    (ret = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE)) != 0 ||
	    (ret = pmem2_map_new(&m->map, cfg, m->src)) != 0) {
		ret = wc_err(-EIO, "map %s with libpmem2: %s", path, pmem2_errormsg());
		if (cfg)
			pmem2_config_delete(&cfg);
		return ret;
	}
	pmem2_config_delete(&cfg);
	m->base = pmem2_map_get_address(m->map);
	m->len = pmem2_map_get_size(m->map);
	m->gran = pmem2_map_get_store_granularity(m->map);
	return 0;
}

/* Measure on the mapped image's free blocks and record the result. */
static int measure(struct cache_map *m, const char *path, unsigned rounds,
                   struct wcadm_policy_run *out)
{
	struct wc_pmem_policy before, now;
	struct wc_persist_policy fp;
	struct wc_calibration cal;
	struct wc_layout l;
	unsigned features;
	int flush_insn, ret;

	ret = wc_sb_validate(wc_sb(m->base), m->len, path, &l);
	if (ret)
		return ret;
	if (m->gran != PMEM2_GRANULARITY_CACHE_LINE)
		return wc_err(-ENOTSUP, "%s maps at %s granularity: the cache persists without flush "
		              "instructions there, so there is nothing to measure", path,
		              m->gran == PMEM2_GRANULARITY_BYTE ? "byte (eADR)" : "page (msync)");
	ret = wc_persist_policy_init(&fp, &no_options);
	if (ret)
		return ret;
	wc_persist_policy_set_granularity(&fp, WC_GRAN_CACHE_LINE, NULL, NULL);
	before = *wc_policy_line(m->base);
	wc_policy_inputs(&no_options, &features, &flush_insn);
	/* Offline: no time limit, as many rounds as asked. */
	ret = wc_policy_measure(m->base, &l, features, flush_insn, rounds, 0, &cal, &out->area);
	if (ret)
		return wc_err(ret, "%s: %s", path, wc_errmsg());
	wc_policy_fill(&now, &cal, features, flush_insn, WC_POLICY_SRC_OFFLINE);
	wc_policy_write(&fp, m->base, &now);
	out->n_blocks = l.n_blocks;
	out->block_size = l.block_size;
	copy_calibration(&out->cal, &cal);
	decode(&out->before, &before);
	decode(&out->now, &now);
	return 0;
}

int wcadm_policy_measure_file(const char *path, unsigned rounds, struct wcadm_policy_run *out)
{
	struct cache_map m;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = map_cache(&m, path);
	if (!ret)
		ret = measure(&m, path, rounds, out);
	unmap(&m);
	return ret;
}
