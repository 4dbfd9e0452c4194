/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin_rbd.c -- the RBD origin backend.
 */
#include "config.h"

#include <errno.h>

#include "error.h"
#include "origin.h"

#ifndef WC_HAVE_LIBRBD_BACKEND /* the backend is not written yet */
int wc_origin_open_rbd(struct wc_origin *out, const char *name)
{
	(void)out;
	return wc_err(-ENOTSUP, "origin %s: this libwcache was built without librbd "
	              "(apt-get install librbd-dev, then configure and build again)", name ? name : "(null)");
}
#endif
