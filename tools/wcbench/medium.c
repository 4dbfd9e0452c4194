/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * medium.c -- which medium a benchmark's cache path gets, and the raw file
 * a block-medium benchmark measures its floor on.
 *
 * wct_pmem_emulate() sets PMEM2_FORCE_GRANULARITY, which makes
 * medium=auto choose pmem for ANY path: a cache file on a disk would then
 * be mapped and flushed through the page cache, and no block-medium code
 * would run.  Emulation is for memory only: a tmpfs or ramfs path (/dev/shm,
 * the default of every wcbench command), when the options do not ask for
 * the block medium.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <unistd.h>

#include "wcache.h"
#include "wcbench.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

void wcb_dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (slash && slash != path)
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
	else
		snprintf(dir, len, "%s", slash ? "/" : ".");
}

bool wcb_path_in_memory(const char *path)
{
	char dir[PATH_MAX];
	struct statfs sf;
	struct stat st;

	if (stat(path, &st) == 0) {
		if (S_ISBLK(st.st_mode))
			return false; /* a device: pmem or not, libpmem2 tells */
		if (statfs(path, &sf) == 0)
			return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
	}
	wcb_dir_of(path, dir, sizeof(dir));
	return statfs(dir, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

bool wcb_pmem_emulate_for(const char *path, const char *options)
{
	struct wc_config cfg;

	wc_config_init(&cfg);
	/* A bad string is reported where the command parses it for real. */
	if (options && wc_config_parse(&cfg, options) != 0)
		return false;
	if (cfg.medium == WC_MEDIUM_BLOCK)
		return false;
	if (cfg.medium == WC_MEDIUM_AUTO && !wcb_path_in_memory(path))
		return false;
	return wct_pmem_emulate();
}

int wcb_raw_file(const char *cmd, const char *dir, uint64_t size, bool quiet)
{
	char path[PATH_MAX];
	size_t chunk = 1u << 20;
	char *buf = NULL;
	double t0 = wct_now_ns();
	int fd, dfd;

	fd = wct_scratch_temp(cmd, path, sizeof(path), dir, "wcbench-raw-", 0);
	if (fd < 0)
		return -1;
	close(fd);
	dfd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	unlink(path); /* the descriptor keeps it; nothing to clean up */
	if (dfd < 0) {
		fprintf(stderr, "%s: raw file in %s: O_DIRECT: %s\n", cmd, dir, strerror(errno));
		return -1;
	}
	if (posix_memalign((void **)&buf, 4096, chunk) != 0) {
		fprintf(stderr, "%s: raw file buffer: out of memory\n", cmd);
		close(dfd);
		return -1;
	}
	/* Written, not fallocated: an unwritten extent's first synced write
	 * costs a journal commit that the cache's (written) file never pays. */
	memset(buf, 0xa5, chunk);
	for (uint64_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		ssize_t w = pwrite(dfd, buf, (n + 4095) & ~(size_t)4095, (off_t)off);

		if (w < 0) {
			fprintf(stderr, "%s: writing the raw file in %s at %llu: %s\n", cmd, dir,
			        (unsigned long long)off, strerror(errno));
			free(buf);
			close(dfd);
			return -1;
		}
		if (!quiet && wct_now_ns() - t0 > 2e9 && off % (64u << 20) == 0)
			wct_progress("%s: writing the raw file %llu%%", cmd,
			             (unsigned long long)(off * 100 / size));
	}
	free(buf);
	if (fdatasync(dfd) != 0) {
		fprintf(stderr, "%s: raw file in %s: fdatasync: %s\n", cmd, dir, strerror(errno));
		close(dfd);
		return -1;
	}
	if (!quiet && wct_now_ns() - t0 > 2e9)
		wct_progress_done();
	return dfd;
}
