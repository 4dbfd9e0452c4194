/* SPDX-License-Identifier: BSD-3-Clause */
/* crc32c.c -- reflected CRC32C, polynomial 0x82F63B78, byte-wise table.  It
 * runs once per open/format over ~100 bytes, so the table is plenty fast. */
#include <pthread.h>

#include "crc32c.h"

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

uint32_t wc_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&table_once, table_init);
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
