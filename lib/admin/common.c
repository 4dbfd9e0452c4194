/* SPDX-License-Identifier: BSD-3-Clause */
/* common.c -- the admin interface's messages, sizes and layout sums
 * (wcadmin.h): the library's own, behind names the tools may use. */
#include <stdarg.h>

#include "admin/wcadmin.h"
#include "core/format.h"
#include "util/error.h"
#include "util/size.h"

int wcadm_err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = wc_verr(code, fmt, ap);
	va_end(ap);
	return code;
}

int wcadm_err_sys(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = wc_verr_sys(code, fmt, ap);
	va_end(ap);
	return code;
}

int wcadm_size_parse(const char *s, uint64_t *out, const char **why)
{
	return wc_size_parse(s, out, why);
}

const char *wcadm_size_format(char *buf, size_t len, uint64_t bytes)
{
	return wc_size_format(buf, len, bytes);
}

int wcadm_layout_bytes(uint64_t n_blocks, uint32_t block_size, uint64_t *bytes)
{
	struct wc_layout l;
	int ret = wc_layout_for_blocks(&l, n_blocks, block_size);

	if (!ret)
		*bytes = l.bytes_used;
	return ret;
}

uint64_t wcadm_record_offset(unsigned slot)
{
	return WC_RECORD_OFFSET + (uint64_t)slot * sizeof(struct wc_pmem_record);
}
