/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * internal.h -- what the files of lib/admin share among themselves.  Not
 * the admin interface: the tools include wcadmin.h and never this file.
 */
#ifndef WCADM_INTERNAL_H
#define WCADM_INTERNAL_H

#include "admin/wcadmin.h"
#include "flush/flush.h"

/* flush.c: copy a resolved policy's functions and info into `out`. */
void wcadm_persist_from(struct wcadm_persist *out, const struct wc_persist_policy *p);

#endif
