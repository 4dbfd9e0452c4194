/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h -- the library's messages to the host (log.c): every line it has to
 * say goes through wc_log(), which hands it to the function the host set
 * with wc_set_log() (wcache.h), or writes it to stderr as
 * "libwcache: <message>".
 *
 * A message is one line, without the trailing newline, that names the cache
 * (its path) it is about.  Levels are syslog's (WC_LOG_ERR .. WC_LOG_DEBUG).
 */
#ifndef WC_LOG_H
#define WC_LOG_H

#include "wcache.h"

/* Format and hand over one message; never fails (a long one is cut). */
void wc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* WC_LOG_H */
