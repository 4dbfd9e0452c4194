/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * empty.c -- a program that does nothing, built twice: with libwcache and
 * without (tests/modules.am).  It prints its resident memory once main()
 * runs, when the loader has mapped and relocated every library it needs,
 * and whether libwcache is among them (so a link that dropped it cannot
 * pass for a small library).
 */
#include <stdio.h>
#include <string.h>

int main(void)
{
	char line[4096];
	long rss_kib = -1;
	int mapped = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &rss_kib) == 1)
			break;
	if (f)
		fclose(f);
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "/libwcache.so"))
			mapped = 1;
	if (f)
		fclose(f);
	if (rss_kib < 0)
		return 1;
	printf("%ld %s\n", rss_kib, mapped ? "libwcache" : "-");
	return 0;
}
