/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calibrate_cache.c -- `wcbench calibrate --cache PATH`: measure the flush
 * policy of an existing cache file on its own free blocks, in place and
 * offline, and record it in its superblock (the line wc_open trusts on this
 * CPU; docs/FORMAT.md).  The measurement is the one wc_create runs, done by
 * the admin interface (wcadm_policy_measure_file): only blocks whose entry
 * reads free are written, never a block holding data, and a cache open
 * elsewhere is refused (-EBUSY): the owner's lock is taken for the whole
 * measurement.
 */
#include <errno.h>
#include <stdio.h>

#include "wcadmin.h"
#include "wcbench.h"

static void print_record(const char *label, const struct wcadm_policy *pl)
{
	if (pl->valid == -ENODATA)
		printf("%-9s none\n", label);
	else if (pl->valid)
		printf("%-9s damaged (%s)\n", label, pl->damage);
	else
		printf("%-9s %s, measured up to %u KiB in %.1f ms on %s\n", label, pl->result,
		       pl->max_size_kib, pl->elapsed_us / 1e3, pl->cpu);
}

static void print_json(const char *path, const struct wcadm_policy_run *r)
{
	struct wct_json j;

	wcb_json_head(&j, "wcbench calibrate");
	wct_json_str(&j, "cache", path);
	wcb_json_calibration(&j, &r->cal, &r->area);
	wct_json_bool(&j, "previous_record_valid", r->before.valid == 0);
	wct_json_end(&j);
}

static void print_text(const char *path, const struct wcadm_policy_run *r)
{
	char s1[32], s2[32];

	printf("cache %s: %llu blocks of %s; measured on %s of free blocks, copies up to one "
	       "block\n", path, (unsigned long long)r->n_blocks,
	       wct_size_str(s1, sizeof(s1), r->block_size), wct_size_str(s2, sizeof(s2), r->area));
	printf("%s vs %s, best of %u rounds, %.0f ms\n", r->cal.nt_name, r->cal.cached_name,
	       r->cal.rounds, r->cal.elapsed_ms);
	wcb_text_calibration(stdout, &r->cal);
	printf("\n");
	print_record("before", &r->before);
	print_record("recorded", &r->now);
	printf("wc_open on this CPU now uses the record (wcctl status shows it)\n");
}

int wcbench_calibrate_cache(const char *path, unsigned rounds, bool json)
{
	struct wcadm_policy_run r;

	if (wct_pmem_emulate() && !json)
		fprintf(stderr, "wcbench calibrate: " WCT_PMEM_EMULATE_NOTE "\n");
	if (wcadm_policy_measure_file(path, rounds, &r) != 0) {
		fprintf(stderr, "wcbench calibrate: %s\n", wc_errmsg());
		return 1;
	}
	(json ? print_json : print_text)(path, &r);
	return 0;
}
