/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake.c -- a backend module that is not one (tests/check_modules.c): the
 * library must refuse what $WC_FAKE_MODULE makes of it, and call it when it
 * is right.
 *   abi       a module of another interface number
 *   size      a module whose table has another size
 *   refuse    the module refuses the library's host table, saying why
 *   mute      ... without saying why
 *   rbd-only  an RBD module, whatever file name it was found under
 *   ok        a right NBD and RBD module, whose open fails with -EPROTO
 *             and "fake opened <name>" through the library's message
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "origin/module.h"

static const struct wc_module_host *host;

static int say(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = host->verr(code, fmt, ap);
	va_end(ap);
	return code;
}

static int fake_open_nbd(struct wc_origin *out, const char *uri, const struct wc_origin_nbd_opts *opts)
{
	(void)out;
	(void)opts;
	return say(-EPROTO, "fake opened %s", uri);
}

static int fake_open_rbd(struct wc_origin *out, const char *spec)
{
	(void)out;
	return say(-EPROTO, "fake opened %s", spec);
}

static struct wc_module self;

const struct wc_module *wc_module_entry(const struct wc_module_host *h, char *why, size_t why_len)
{
	const char *how = getenv("WC_FAKE_MODULE");

	how = how ? how : "ok";
	host = h;
	self = (struct wc_module){
		.size = sizeof(self),
		.abi = WC_MODULE_ABI,
		.version = "0.0.fake",
		.name = "fake",
		.open_nbd = fake_open_nbd,
		.open_rbd = fake_open_rbd,
	};
	if (!strcmp(how, "abi")) {
		self.abi = WC_MODULE_ABI + 1;
	} else if (!strcmp(how, "size")) {
		self.size = sizeof(self) + 8;
	} else if (!strcmp(how, "refuse")) {
		snprintf(why, why_len, "the fake refuses");
		return NULL;
	} else if (!strcmp(how, "mute")) {
		return NULL;
	} else if (!strcmp(how, "rbd-only")) {
		self.name = "rbd";
		self.open_nbd = NULL;
	}
	return &self;
}
