/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.h -- one owner at a time for a cache file or an origin: an
 * open-file-description lock, and naming the process that holds it.
 */
#ifndef WC_LOCK_H
#define WC_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Who holds a lock, as far as this process can tell. */
struct wc_lock_holder {
	pid_t pid;          /* > 0 when known, else 0 */
	bool self;          /* pid is this process */
	bool inherited;     /* this process holds it too, through a descriptor
	                       shared with pid (fork) */
	char comm[20];      /* the holder's /proc/PID/comm, "" if unknown */
	/* Why the pid is unknown (pid == 0): "", or a sentence fragment. */
	char why[120];
};

/* Take the exclusive lock on `fd` (opened for writing).  `what` names the
 * file in the message ("cache", "origin").  0; -EBUSY with a message naming
 * the holder; or -errno (a file system without locks) with a message. */
int wc_lock_take(int fd, const char *what, const char *path);

/* Test for the lock without taking it (fd may be read-only): 0 free,
 * 1 held (*holder filled when not NULL), or -errno with a message. */
int wc_lock_probe(int fd, const char *path, struct wc_lock_holder *holder);

/* "pid 1234 (server)", "this process (pid 1234)" or "another process (its
 * pid ...: why)". */
const char *wc_lock_holder_str(char *buf, size_t len, const struct wc_lock_holder *h);

#endif
