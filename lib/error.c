/* SPDX-License-Identifier: BSD-3-Clause */
/* error.c -- the thread-local message behind wc_errmsg(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "wcache.h"

#define WC_ERRMSG_MAX 512

static __thread char last_msg[WC_ERRMSG_MAX];

static void format_msg(const char *fmt, va_list ap)
{
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
}

int wc_err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	format_msg(fmt, ap);
	va_end(ap);
	return code;
}

int wc_err_sys(int code, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	format_msg(fmt, ap);
	va_end(ap);
	len = strlen(last_msg);
	if (len < sizeof(last_msg))
		snprintf(last_msg + len, sizeof(last_msg) - len, ": %s", strerror(-code));
	return code;
}

const char *wc_errmsg(void)
{
	return last_msg;
}
