/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cachetest.h -- helpers shared by the cache's Check programs: scratch
 * files, self-identifying block contents, and an in-memory model.
 */
#ifndef WC_CACHETEST_H
#define WC_CACHETEST_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testmain.h"
#include "testutil.h"
#include "wcache.h"

/* A sized file in the scratch folder (removed first). */
void ct_make_file(char *path, size_t len, const char *name, uint64_t size);

/* xorshift64*: reproducible from the seed printed on failure. */
uint64_t ct_rand(uint64_t *s);

/* Block content: a header naming block and version, the rest derived from
 * both, so a torn or misplaced block never passes ct_block_is. */
struct ct_stamp {
	uint64_t block, version, check;
};

void ct_fill_block(void *buf, uint32_t bs, uint64_t block, uint64_t version);

/* 0 if buf is exactly (block, version); version UINT64_MAX = all zero. */
int ct_block_is(const void *buf, uint32_t bs, uint64_t block, uint64_t version);

/* The version a block holds if it is a whole, untorn block of `block`;
 * UINT64_MAX for all zero; UINT64_MAX - 1 for anything else. */
uint64_t ct_block_version(const void *buf, uint32_t bs, uint64_t block);

#define ct_assert_err(expr, code)                                                          \
	do {                                                                               \
		long long ct_r_ = (long long)(expr);                                       \
		ck_assert_msg(ct_r_ == (code), "%s returned %lld, expected %d (%s)", #expr, \
		              ct_r_, (code), wc_errmsg());                                  \
		ck_assert_msg(wc_errmsg()[0] != '\0', "%s: empty wc_errmsg()", #expr);      \
	} while (0)

#endif
