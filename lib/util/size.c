/* SPDX-License-Identifier: BSD-3-Clause */
/* size.c -- byte counts in and out (see size.h). */
#include <errno.h>
#include <stdio.h>
#include <strings.h>

#include "util/size.h"

int wc_size_parse(const char *s, uint64_t *out, const char **why)
{
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;

	if (!s || *s < '0' || *s > '9') {
		if (why)
			*why = s && *s == '-' ? "a size cannot be negative" :
			       "not a size (e.g. 4096, 4K, 4KiB, 256M, 1G)";
		return -EINVAL;
	}
	/* By hand rather than strtoull: strtoull takes signs and spaces and
	 * saturates on overflow, all of which must be errors here. */
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10) {
			if (why)
				*why = "too large (the most is 16 EiB - 1)";
			return -ERANGE;
		}
		v = v * 10 + d;
	}
	switch (*p) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: break;
	}
	if (shift) {
		p++;
		if (!strcasecmp(p, "ib") || !strcasecmp(p, "b"))
			p += p[1] ? 2 : 1;
	} else if (!strcasecmp(p, "b")) {
		p++;
	}
	if (*p) {
		if (why)
			*why = "not a size (e.g. 4096, 4K, 4KiB, 256M, 1G)";
		return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift)) {
		if (why)
			*why = "too large (the most is 16 EiB - 1)";
		return -ERANGE;
	}
	*out = v << shift;
	return 0;
}

const char *wc_size_format(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}
