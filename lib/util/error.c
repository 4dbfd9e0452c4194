/* SPDX-License-Identifier: BSD-3-Clause */
/* error.c -- the thread-local message behind wc_errmsg(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "wcache.h"

#define WC_ERRMSG_MAX 512

static __thread char last_msg[WC_ERRMSG_MAX];

static void format_msg(const char *fmt, va_list ap)
{
	char msg[WC_ERRMSG_MAX];

	/* Callers often prefix the previous message: wc_err(r, "%s: %s",
	 * path, wc_errmsg()).  Formatting straight into last_msg would read
	 * the buffer it is writing. */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	memcpy(last_msg, msg, sizeof(msg));
}

int wc_verr(int code, const char *fmt, va_list ap)
{
	format_msg(fmt, ap);
	return code;
}

int wc_verr_sys(int code, const char *fmt, va_list ap)
{
	size_t len;

	format_msg(fmt, ap);
	len = strlen(last_msg);
	if (len < sizeof(last_msg))
		snprintf(last_msg + len, sizeof(last_msg) - len, ": %s", strerror(-code));
	return code;
}

int wc_err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = wc_verr(code, fmt, ap);
	va_end(ap);
	return code;
}

int wc_err_sys(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = wc_verr_sys(code, fmt, ap);
	va_end(ap);
	return code;
}

const char *wc_errmsg(void)
{
	return last_msg;
}
