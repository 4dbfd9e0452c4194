/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * size.h -- the one grammar for byte counts, shared by wc_config_parse and
 * the tools.  Internal: not part of the installed API (lib/libwcache.map).
 *
 *   digits [unit [suffix]]    unit: K, M, G or T (powers of 1024, any case)
 *                             suffix after a unit: "iB" or "B" (any case)
 *   digits "B"                plain bytes
 *
 * "4096", "4K", "4KiB", "4kb", "64M", "1G", "512B".  No sign, no spaces, no
 * fractions; a value that does not fit in 64 bits is an error, not a wrap.
 */
#ifndef WC_SIZE_H
#define WC_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* 0, or -EINVAL (not a size) / -ERANGE (too large for 64 bits); on error
 * *why (if not NULL) says which, in words fit for a message. */
int wc_size_parse(const char *s, uint64_t *out, const char **why);

/* "512 B", "4 KiB", "1.5 MiB" (binary units up to PiB, one decimal where
 * the value is not whole).  Returns buf. */
const char *wc_size_format(char *buf, size_t len, uint64_t bytes);

#endif
