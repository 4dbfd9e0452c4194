/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate_cache.c -- `wcbench calibrate --cache PATH`: measure the flush
 * policy of an existing cache file on its own free blocks, in place and
 * offline, and record it in its superblock (the line wc_open trusts on this
 * CPU; docs/FORMAT.md).  The same measurement wc_create runs
 * (lib/policy_line.c): only blocks whose entry reads free are written, never
 * a block holding data.  A cache open elsewhere is refused (-EBUSY): the
 * library's owner's lock is taken for the whole measurement.
 */
#include <errno.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/lock.h"
#include "core/policy_line.h"
#include "wcbench.h"

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
	if (m->fd < 0) {
		fprintf(stderr, "wcbench calibrate: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	/* The owner's lock, as wc_open takes it: the measurement writes the
	 * free blocks and the record, and an owner may be allocating those
	 * blocks right now.  Held until unmap() closes the file. */
	ret = wc_lock_take(m->fd, "cache", path);
	if (ret) {
		fprintf(stderr, "wcbench calibrate: %s (%s)\n", wc_errmsg(), strerror(-ret));
		return -1;
	}
	if ((ret = pmem2_source_from_fd(&m->src, m->fd)) != 0 ||
	    (ret = pmem2_config_new(&cfg)) != 0 ||
	    (ret = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE)) != 0 ||
	    (ret = pmem2_map_new(&m->map, cfg, m->src)) != 0) {
		fprintf(stderr, "wcbench calibrate: map %s with libpmem2: %s\n", path,
		        pmem2_errormsg());
		if (cfg)
			pmem2_config_delete(&cfg);
		return -1;
	}
	pmem2_config_delete(&cfg);
	m->base = pmem2_map_get_address(m->map);
	m->len = pmem2_map_get_size(m->map);
	m->gran = pmem2_map_get_store_granularity(m->map);
	return 0;
}

static void print_record(const char *label, const struct wc_pmem_policy *pl)
{
	char cpu[160], res[64];
	int valid = wc_policy_check(pl);

	if (valid == -ENODATA)
		printf("%-9s none\n", label);
	else if (valid)
		printf("%-9s damaged (%s)\n", label, wc_errmsg());
	else
		printf("%-9s %s, measured up to %u KiB in %.1f ms on %s\n", label,
		       wc_policy_result_str(res, sizeof(res), pl->threshold), pl->max_size_kib,
		       pl->elapsed_us / 1e3, wc_policy_cpu_str(cpu, sizeof(cpu), pl));
}

int wcbench_calibrate_cache(const char *path, unsigned rounds, bool json)
{
	static const struct wc_pmem_config none;
	struct cache_map m;
	struct wc_layout l;
	struct wc_pmem_policy before, now;
	struct wc_calibration cal;
	struct wc_persist_policy fp;
	unsigned features;
	int flush_insn, ret, status = 1;
	uint64_t area;
	char s1[32], s2[32];

	if (wct_pmem_emulate() && !json)
		fprintf(stderr, "wcbench calibrate: " WCT_PMEM_EMULATE_NOTE "\n");
	if (map_cache(&m, path) != 0)
		goto out;
	ret = wc_sb_validate(wc_sb(m.base), m.len, path, &l);
	if (ret) {
		fprintf(stderr, "wcbench calibrate: %s\n", wc_errmsg());
		goto out;
	}
	if (m.gran != PMEM2_GRANULARITY_CACHE_LINE) {
		fprintf(stderr, "wcbench calibrate: %s maps at %s granularity: the cache persists "
		        "without flush instructions there, so there is nothing to measure\n", path,
		        m.gran == PMEM2_GRANULARITY_BYTE ? "byte (eADR)" : "page (msync)");
		goto out;
	}
	ret = wc_persist_policy_init(&fp, &none);
	if (ret) {
		fprintf(stderr, "wcbench calibrate: %s\n", wc_errmsg());
		goto out;
	}
	wc_persist_policy_set_granularity(&fp, WC_GRAN_CACHE_LINE, NULL, NULL);
	before = *wc_policy_line(m.base);
	wc_policy_inputs(&none, &features, &flush_insn);
	/* Offline: no time limit, as many rounds as asked. */
	ret = wc_policy_measure(m.base, &l, features, flush_insn, rounds, 0, &cal, &area);
	if (ret) {
		fprintf(stderr, "wcbench calibrate: %s: %s\n", path, wc_errmsg());
		goto out;
	}
	wc_policy_fill(&now, &cal, features, flush_insn, WC_POLICY_SRC_OFFLINE);
	wc_policy_write(&fp, m.base, &now);

	if (json) {
		struct wct_json j;

		wct_json_init(&j, stdout);
		wct_json_object(&j, NULL, true);
		wct_json_str(&j, "tool", "wcbench calibrate");
		wct_json_str(&j, "cache", path);
		wct_json_str(&j, "nt", cal.nt_name);
		wct_json_str(&j, "cached", cal.cached_name);
		wct_json_u64(&j, "area_bytes", area);
		wcb_json_calibration(&j, &cal);
		wct_json_bool(&j, "previous_record_valid", wc_policy_check(&before) == 0);
		wct_json_end(&j);
		status = 0;
		goto out;
	}
	printf("cache %s: %llu blocks of %s; measured on %s of free blocks, copies up to one "
	       "block\n", path, (unsigned long long)l.n_blocks,
	       wct_size_str(s1, sizeof(s1), l.block_size), wct_size_str(s2, sizeof(s2), area));
	printf("%s vs %s, best of %u rounds, %.0f ms\n", cal.nt_name, cal.cached_name, cal.rounds,
	       cal.elapsed_ms);
	wcb_text_calibration(stdout, &cal);
	printf("\n");
	print_record("before", &before);
	print_record("recorded", &now);
	printf("wc_open on this CPU now uses the record (wcctl status shows it)\n");
	status = 0;
out:
	unmap(&m);
	return status;
}
