/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dram.h -- large DRAM tables (the entries, the buckets, the free stacks) on
 * transparent huge pages where the kernel allows.
 */
#ifndef WC_DRAM_H
#define WC_DRAM_H

#include <stddef.h>

/* A zeroed table of `bytes`; NULL when out of memory. */
void *wc_dram_table(size_t bytes);
void wc_dram_table_free(void *p, size_t bytes);

#endif
