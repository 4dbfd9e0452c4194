/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * static_open.c -- opens the origin named by argv[1] with libwcache.a
 * linked in (tests/modules.am): the static library loads the backend
 * modules as the shared one does.  Prints the return code and the message;
 * exits 0 when the open ran (whatever it returned).
 */
#include <stdio.h>

#include "wcache.h"

int main(int argc, char **argv)
{
	struct wc_origin o;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: static_open ORIGIN\n");
		return 2;
	}
	ret = wc_origin_open(&o, argv[1]);
	printf("%d %s\n", ret, ret ? wc_errmsg() : "opened");
	if (ret == 0)
		o.ops->close(o.ctx);
	return 0;
}
