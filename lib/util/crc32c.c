/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc32c.c -- reflected CRC32C, polynomial 0x82F63B78.
 *
 * Every commit checksums its 24-byte record, so the CRC sits on the path of
 * a FUA write: the byte-wise table took ~50 ns there (a chain of 24
 * dependent table loads), the SSE4.2 instruction takes three 8-byte steps.
 * The table stays as the fallback for CPUs without it and as the reference
 * the tests hold the instruction to.
 */
#include <pthread.h>

#include "util/crc32c.h"

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[i] = c;
	}
}

uint32_t wc_crc32c_table(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&table_once, table_init);
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
#include <string.h>

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *buf,
                                                                size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, p, 8); /* unaligned buffers too */
		c = __builtin_ia32_crc32di(c, w);
	}
	for (; len; len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

static bool have_sse42;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void cpu_init(void)
{
	/* The flush engine's CPU report names SSE4.2 too, but the flush engine
	 * sits above util/: asking the compiler's CPU model keeps the
	 * dependency one way. */
	__builtin_cpu_init();
	have_sse42 = __builtin_cpu_supports("sse4.2");
}

bool wc_crc32c_hw_available(void)
{
	pthread_once(&cpu_once, cpu_init);
	return have_sse42;
}

uint32_t wc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_sse42(crc, buf, len);
}

uint32_t wc_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return wc_crc32c_hw_available() ? crc32c_sse42(crc, buf, len) : wc_crc32c_table(crc, buf, len);
}
#else
bool wc_crc32c_hw_available(void)
{
	return false;
}

uint32_t wc_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return wc_crc32c_table(crc, buf, len);
}

uint32_t wc_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return wc_crc32c_table(crc, buf, len);
}
#endif
