/* SPDX-License-Identifier: BSD-3-Clause */
/* config.h -- cache configuration checks shared by create and open. */
#ifndef WC_CONFIG_H
#define WC_CONFIG_H

#include <stdbool.h>

#include "wcache.h"

#define WC_MIN_BLOCK_SIZE 512u
#define WC_MAX_BLOCK_SIZE 65536u

/* -EINVAL + message for an inconsistent config; block_size 0 is accepted
 * when `block_size_optional` (wc_open: take the superblock's). */
int wc_config_validate(const struct wc_config *cfg, bool block_size_optional);

#endif
