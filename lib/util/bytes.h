/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bytes.h -- small checks on raw bytes: reserved space that must be zero
 * (a struct's tail from a newer caller, an ops table's unknown fields, an
 * image's unused slot).
 */
#ifndef WC_BYTES_H
#define WC_BYTES_H

#include <stdbool.h>
#include <stddef.h>

static inline bool wc_all_zero(const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

#endif /* WC_BYTES_H */
