/* SPDX-License-Identifier: BSD-3-Clause */
/* error.h -- negative errno + a thread-local message (read by wc_errmsg). */
#ifndef WC_ERROR_H
#define WC_ERROR_H

#include <errno.h>
#include <stdarg.h>

/* Record "fmt ..." as this thread's last error and return `code` (a negative
 * errno), so that failure sites read: return wc_err(-EINVAL, "...", ...); */
int wc_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like wc_err, appending ": strerror(-code)". */
int wc_err_sys(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same with a va_list, for wrappers (the admin interface's). */
int wc_verr(int code, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
int wc_verr_sys(int code, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
