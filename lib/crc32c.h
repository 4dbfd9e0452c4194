/* SPDX-License-Identifier: BSD-3-Clause */
/* crc32c.h -- CRC32C (Castagnoli), as used by iSCSI/ext4/btrfs: it guards the
 * superblock's static fields.  Too small to deserve a dependency (Debian 12
 * ships no ISA-L; zlib has only the IEEE polynomial). */
#ifndef WC_CRC32C_H
#define WC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc32c(0, "123456789", 9) == 0xE3069283 */
uint32_t wc_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
