/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testhooks.h -- test-only hooks, NULL in production.  The power-failure
 * simulator (tests/crashsim/crashsim.c) sets them before creating or opening a cache:
 * the cache installs `observer` into its flush policy right after mapping
 * (so format and recovery are observed too) and reports the mapping.
 */
#ifndef WC_TESTHOOKS_H
#define WC_TESTHOOKS_H

#include <stddef.h>

#include "flush/flush.h"

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
	/* wc_writeback's patience with a failing origin, in ms (0: 60 s). */
	unsigned writeback_give_up_ms;
};

extern struct wc_test_hooks *wc_test_hooks;

#endif
