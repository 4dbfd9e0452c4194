/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c -- wcctl: administration of a libwcache cache, in the manner of
 * dmsetup for dm-writecache.
 *
 * Every subcommand is one row of `commands` and parses its own options
 * (and --help).  Files: admin.c (create, status, writeback: through the
 * library), inspect.c (check, dump: offline, through the admin
 * interface's image reader, shown by image.c, never writing),
 * calibrate.c.  Exit status: 0 ok, 1 failure, 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "wcctl.h"

struct wcctl_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *args;
	const char *summary;
};

static const struct wcctl_command commands[] = {
	{ "create", wcctl_create, "CACHE ORIGIN [--options S] [--size B]",
	  "format a new cache in front of ORIGIN" },
	{ "status", wcctl_status, "CACHE ORIGIN [--json]",
	  "open (recover) the cache and show it; a cache in use is only read" },
	{ "writeback", wcctl_writeback, "CACHE ORIGIN",
	  "write every dirty block back to ORIGIN, with a progress bar" },
	{ "set-origin", wcctl_set_origin, "CACHE ORIGIN [--force]",
	  "bind the cache to another origin (a moved one, or a clean cache reused)" },
	{ "check", wcctl_check, "CACHE",
	  "offline consistency check of a cache image (exit 1 if damaged)" },
	{ "dump", wcctl_dump, "CACHE [--all]",
	  "list the metadata of a cache image (entries; block: segments, records)" },
	{ "calibrate", wcctl_calibrate, "[CACHE] [--json]",
	  "measure the flush engine's width and crossover; the policy in force (and CACHE's)" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: wcctl <command> [options]   (wcctl <command> --help)\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %-38s %s\n", commands[i].name, commands[i].args,
		        commands[i].summary);
	fprintf(f, "\nexit status: 0 ok, 1 failure (or a damaged image for check), 2 usage error\n"
	           "see wcctl(8)\n");
}

int main(int argc, char **argv)
{
	char name[64];

	if (argc < 2) {
		usage(stderr);
		return WCCTL_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return WCCTL_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("wcctl (libwcache) %d.%d, on-pmem format version %u, block-medium format "
		       "version %u\n", WCACHE_VERSION_MAJOR, WCACHE_VERSION_MINOR, WCADM_FORMAT_VERSION,
		       WCADM_BLK_VERSION);
		return WCCTL_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		/* getopt prefixes its own messages with argv[0]. */
		snprintf(name, sizeof(name), "wcctl %s", commands[i].name);
		argv[1] = name;
		return commands[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "wcctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return WCCTL_USAGE;
}
