/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cachetest.c -- scratch files and self-identifying blocks (see the header).
 */
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cachetest.h"

void ct_make_file(char *path, size_t len, const char *name, uint64_t size)
{
	int fd;

	wc_test_path(path, len, name);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	if (size)
		ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

uint64_t ct_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

void ct_fill_block(void *buf, uint32_t bs, uint64_t block, uint64_t version)
{
	/* Stored with memcpy: a test may pass a buffer at any address. */
	uint64_t s = block * 0x9E3779B97F4A7C15ull ^ (version + 1) * 0xC2B2AE3D27D4EB4Full, w;
	char *p = buf;

	for (uint32_t i = 3; i < bs / 8; i++) {
		w = ct_rand(&s) | 1;
		memcpy(p + 8 * i, &w, 8);
	}
	memcpy(p, &block, 8);
	memcpy(p + 8, &version, 8);
	w = block ^ version ^ 0x5a5a5a5a5a5a5a5aull;
	memcpy(p + 16, &w, 8);
}

int ct_block_is(const void *buf, uint32_t bs, uint64_t block, uint64_t version)
{
	uint8_t *want = malloc(bs);
	int r;

	if (version == UINT64_MAX)
		memset(want, 0, bs);
	else
		ct_fill_block(want, bs, block, version);
	r = memcmp(want, buf, bs);
	free(want);
	return r;
}

uint64_t ct_block_version(const void *buf, uint32_t bs, uint64_t block)
{
	const uint64_t *w = buf;
	int zero = 1;

	for (uint32_t i = 0; i < bs / 8 && zero; i++)
		zero = w[i] == 0;
	if (zero)
		return UINT64_MAX;
	if (w[0] != block || w[2] != (block ^ w[1] ^ 0x5a5a5a5a5a5a5a5aull) || ct_block_is(buf, bs, block, w[1]))
		return UINT64_MAX - 1;
	return w[1];
}
