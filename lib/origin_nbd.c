/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin_nbd.c -- the NBD origin backend.
 */
#include "config.h"

#include <errno.h>

#include "error.h"
#include "origin.h"

#ifndef WC_HAVE_LIBNBD_BACKEND /* the backend is not written yet */
int wc_origin_open_nbd(struct wc_origin *out, const char *name)
{
	(void)out;
	return wc_err(-ENOTSUP, "origin %s: this libwcache was built without libnbd "
	              "(apt-get install libnbd-dev, then configure and build again)", name ? name : "(null)");
}
#endif
