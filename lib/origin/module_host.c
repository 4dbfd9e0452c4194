/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module_host.c -- linked into each backend module (module.h): its entry
 * point, and the library helpers its backend calls, forwarded to the
 * library that loaded it.  The backend's files keep calling wc_err() and
 * wc_errmsg() as they do inside the library, and their messages land in the
 * library's thread-local one, which the caller reads.
 *
 * These definitions are the module's own: its link exports the entry
 * point alone (-export-symbols-regex, lib/local.am), so they bind inside
 * the module, never to a program's or the library's symbols of the same
 * name.
 */
#include "config.h"

#include <stdio.h>

#include "origin/module.h"

/* Set once, by the entry point, before any backend code runs: the loader
 * calls it under its lock and publishes the module afterwards. */
static const struct wc_module_host *host;

const struct wc_module *wc_module_entry(const struct wc_module_host *h, char *why, size_t why_len)
{
	if (!h || h->abi != WC_MODULE_ABI || h->size != sizeof(*h)) {
		snprintf(why, why_len, "it was built for another libwcache (module interface %u, %zu "
		         "bytes; the library's %u, %u bytes)", (unsigned)WC_MODULE_ABI, sizeof(*h),
		         h ? (unsigned)h->abi : 0u, h ? (unsigned)h->size : 0u);
		return NULL;
	}
	host = h;
	return &wc_module_self;
}

int wc_verr(int code, const char *fmt, va_list ap)
{
	return host->verr(code, fmt, ap);
}

int wc_verr_sys(int code, const char *fmt, va_list ap)
{
	return host->verr_sys(code, fmt, ap);
}

int wc_err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = host->verr(code, fmt, ap);
	va_end(ap);
	return code;
}

int wc_err_sys(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = host->verr_sys(code, fmt, ap);
	va_end(ap);
	return code;
}

const char *wc_errmsg(void)
{
	return host->errmsg();
}

void wc_origin_identity_set(char *dst, size_t len, const char *src)
{
	host->identity_set(dst, len, src);
}
