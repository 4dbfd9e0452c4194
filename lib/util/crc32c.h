/* SPDX-License-Identifier: BSD-3-Clause */
/* crc32c.h -- CRC32C (Castagnoli), as used by iSCSI/ext4/btrfs: it guards the
 * superblock's static fields and every commit record.  Too small to deserve a
 * dependency (Debian 12 ships no ISA-L; zlib has only the IEEE polynomial). */
#ifndef WC_CRC32C_H
#define WC_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* crc32c(0, "123456789", 9) == 0xE3069283; the SSE4.2 instruction where the
 * CPU has it, the table otherwise. */
uint32_t wc_crc32c(uint32_t crc, const void *buf, size_t len);

/* For the tests: the byte-wise table, and the instruction (the table where
 * the CPU or the architecture has none; wc_crc32c_hw_available says). */
uint32_t wc_crc32c_table(uint32_t crc, const void *buf, size_t len);
uint32_t wc_crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool wc_crc32c_hw_available(void);

#endif
