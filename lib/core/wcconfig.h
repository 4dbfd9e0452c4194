/* SPDX-License-Identifier: BSD-3-Clause */
/* wcconfig.h -- cache configuration checks shared by create and open.  Not
 * named config.h: that is configure's header, and with lib/ first on the
 * include path a library header of that name hid it. */
#ifndef WC_WCCONFIG_H
#define WC_WCCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "wcache.h"

#define WC_MIN_BLOCK_SIZE 512u
#define WC_MAX_BLOCK_SIZE 65536u
/* What block_size 0 means at create (the contract's default). */
#define WC_DEFAULT_BLOCK_SIZE 4096u

/* Defaults in the whole struct as this library knows it (size not set). */
void wc_config_defaults(struct wc_config *cfg);

/* The first bytes of struct wc_config in each layout: 0.1 had no size. */
#define WC_CONFIG_SIZE_0_1 offsetof(struct wc_config, size)
#define WC_CONFIG_SIZE_0_2 (offsetof(struct wc_config, origin_rebind) + 6 * sizeof(uint64_t))

/* Copy a caller's config, as much of it as its `size` says, into the whole
 * struct; -EINVAL + message for a size that does not cover `size` itself, or
 * a set field (reserved, or beyond this library's struct) it does not know. */
int wc_config_import(struct wc_config *dst, const struct wc_config *src);

/* block_size 0 is 4096 at create; at open it stays 0 (the superblock's). */
void wc_config_resolve(struct wc_config *cfg, bool open);

/* -EINVAL + message for an inconsistent config; block_size 0 is accepted
 * when `block_size_optional` (wc_open: take the superblock's). */
int wc_config_validate(const struct wc_config *cfg, bool block_size_optional);

#endif
