/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * run_suite.c -- `wcbench run --block-targets`: the block medium's three
 * judged configurations, one `wcbench run --check` each, in turn, with the
 * caller's other options (cache path, rounds, duration, sizes), then one
 * summary: each ratio, PASS or FAIL, and exit 1 on any FAIL.
 *
 * Each configuration gets a cache of its own (formatted afresh), so one
 * configuration's log never carries into the next one's measurement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "wcbench.h"

struct suite_conf {
	const char *label;
	const char *args[6];
};

static const struct suite_conf confs[] = {
	{ "4 KiB random FUA writes, QD1, 1 thread", { "--workload", "randwrite", "--fua", NULL } },
	{ "4 KiB random FUA writes, QD1, 4 threads",
	  { "--workload", "randwrite", "--fua", "--threads", "4", NULL } },
	{ "4 KiB random read hits, 1 thread", { "--workload", "randread", NULL } },
};
#define NCONFS (sizeof(confs) / sizeof(confs[0]))

/* Options the suite sets itself, or that would change what is judged. */
static const char *const owned[] = { "--workload", "--threads", "--fua", "--scaling", "--bs",
                                     "--read-pct", "--flush-every", "--no-floor", "--json",
                                     NULL };

static const char *value_of(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], name) == 0 && i + 1 < argc)
			return argv[i + 1];
		if (strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
			return argv[i] + n + 1;
	}
	return NULL;
}

int run_block_targets(int argc, char **argv)
{
	struct run_target got[NCONFS][3];
	unsigned n[NCONFS];
	int st[NCONFS], status = 0;
	const char *cache = value_of(argc, argv, "--cache");
	const char *options = value_of(argc, argv, "--options");
	char **av;

	for (int i = 1; i < argc; i++)
		for (unsigned k = 0; owned[k]; k++) {
			size_t l = strlen(owned[k]);

			if (strncmp(argv[i], owned[k], l) == 0 && (argv[i][l] == 0 || argv[i][l] == '=')) {
				fprintf(stderr, "wcbench run: --block-targets sets the workload itself: drop "
				        "%s\n", owned[k]);
				return 2;
			}
		}
	if ((!cache || wcb_path_in_memory(cache)) &&
	    !(options && strstr(options, "medium=block"))) {
		fprintf(stderr, "wcbench run: --block-targets: the cache %s is in memory (tmpfs): "
		        "put it on a disk file system (e.g. --cache /var/tmp/wc.img)\n",
		        cache ? cache : "/dev/shm/wcbench.pmem (the default)");
		return 2;
	}
	av = calloc((size_t)argc + 8, sizeof(*av));
	if (!av) {
		fprintf(stderr, "wcbench run: out of memory\n");
		return 1;
	}
	for (unsigned c = 0; c < NCONFS; c++) {
		int k = 0;

		for (int i = 0; i < argc; i++)
			if (strcmp(argv[i], "--block-targets") != 0 && strcmp(argv[i], "--check") != 0)
				av[k++] = argv[i];
		for (unsigned j = 0; confs[c].args[j]; j++)
			av[k++] = (char *)confs[c].args[j];
		av[k++] = (char *)"--check";
		av[k] = NULL;
		printf("=== %s ===\n", confs[c].label);
		fflush(stdout);
		st[c] = run_invoke(k, av, got[c], &n[c]);
		printf("\n");
		fflush(stdout);
		if (st[c] == 2) {
			free(av);
			return 2;
		}
	}
	free(av);
	printf("block-medium targets (median of per-round cache/raw ratios):\n");
	for (unsigned c = 0; c < NCONFS; c++) {
		if (!n[c]) {
			printf("  %-42s  no verdict (%s)  FAIL\n", confs[c].label,
			       st[c] ? "the run failed" : "not the block medium, or waits for free space");
			status = 1;
			continue;
		}
		for (unsigned t = 0; t < n[c]; t++) {
			printf("  %-42s  %.3f >= %.2f  %s\n", confs[c].label, got[c][t].value,
			       got[c][t].min, got[c][t].met ? "PASS" : "FAIL");
			if (!got[c][t].met)
				status = 1;
		}
		if (st[c])
			status = 1;
	}
	return status;
}
