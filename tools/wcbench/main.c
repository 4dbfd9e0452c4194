/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c -- wcbench: benchmarks that print a ratio against a baseline
 * measured in the same run.
 *
 * Every subcommand lives in its own file and is one row of `commands`.
 * To add one (e.g. `wcbench run`, `wcbench writeback`, `wcbench recover`):
 *   1. write tools/wcbench/<name>.c with `int wcbench_<name>(int argc,
 *      char **argv)` that parses its own options (and --help) and returns
 *      the exit status;
 *   2. declare it in wcbench.h;
 *   3. add one row below and the file to tools/wcbench/local.am.
 */
#include <stdio.h>
#include <string.h>

#include "wcache.h"
#include "wcbench.h"

struct wcbench_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct wcbench_command commands[] = {
	{ "flush", wcbench_flush,
	  "persist bandwidth per copy size: the engine's policy vs every strategy and libpmem2" },
	{ "calibrate", wcbench_calibrate,
	  "measure the non-temporal widths and the cached+flush crossover; recommend a threshold" },
	{ "run", wcbench_run,
	  "a workload on a cache vs its cost floor (flush engine alone), IOPS, latency, scaling" },
	{ "recover", wcbench_recover,
	  "time wc_open's recovery of a full cache (1,000,000 blocks by default)" },
	{ "writeback", wcbench_writeback,
	  "write-back bandwidth vs the origin's raw libaio bandwidth; foreground latency under it" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: wcbench <command> [options]   (wcbench <command> --help, wcbench "
	           "--version)\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("wcbench (libwcache) %d.%d\n", WCACHE_VERSION_MAJOR, WCACHE_VERSION_MINOR);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "wcbench: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
