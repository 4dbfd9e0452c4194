/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testhooks.h -- test-only hooks, NULL in production.  The power-failure
 * simulator (tests/crashsim/crashsim.c) sets them before creating or opening a cache:
 * the cache installs `observer` into its flush policy right after mapping
 * (so format and recovery are observed too) and reports the mapping.
 */
#ifndef WC_TESTHOOKS_H
#define WC_TESTHOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flush/flush.h"

/* The block medium's device I/O (lib/block/device.c).  Set, every write,
 * read and flush of the cache device goes here instead of the system calls
 * (the file is still opened and locked as usual): the power-failure
 * simulator keeps what a flush made durable and keeps, drops or tears at
 * the logical block size what it did not.  Each returns 0 or -errno; a
 * write or read moves all `len` bytes or fails. */
struct wc_blk_io_hooks {
	int (*pwrite)(void *ctx, const void *buf, size_t len, uint64_t off, bool dsync);
	int (*pread)(void *ctx, void *buf, size_t len, uint64_t off);
	int (*flush)(void *ctx);
	void *ctx;
};

struct wc_test_hooks {
	const struct wc_persist_observer *observer;
	void (*mapped)(void *ctx, void *base, size_t len);   /* before format/recovery */
	void (*unmapped)(void *ctx, void *base, size_t len); /* before munmap */
	void *ctx;
	/* Inside a commit, after the epoch moved on and every writer of the
	 * old one finished, before anything is flushed: where a write of
	 * another thread can land in the next epoch (commit.c). */
	void (*commit_quiet)(void *arg);
	void *commit_quiet_arg;
	/* The block medium's device I/O (NULL: the system calls). */
	const struct wc_blk_io_hooks *blk_io;
	/* wc_writeback's patience with a failing origin, in ms (0: 60 s). */
	unsigned writeback_give_up_ms;
	/* The block medium: rounds a writer submits the queue of records
	 * before the completion thread takes over (0: the default). */
	unsigned blk_submit_rounds;
};

extern struct wc_test_hooks *wc_test_hooks;

#endif
