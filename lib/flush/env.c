/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * env.c -- the WC_PMEM_* environment, read once at first use.
 *
 *   WC_PMEM_THRESHOLD=<bytes>|auto|nt   size switch (auto = calibrate here,
 *                                       nt = non-temporal at every size)
 *   WC_PMEM_FORCE=nt|cached|auto        one strategy at every size
 *   WC_PMEM_FLUSH=clflushopt|clwb       flush instruction of the cached path
 *   WC_PMEM_NO_CLFLUSHOPT=1, WC_PMEM_NO_CLWB=1, WC_PMEM_NO_AVX=1
 *                                       pretend the feature is absent
 *   WC_PMEM_NO_QUIRKS=1                 ignore the CPU quirk table: measure
 *                                       at first use as on an unknown CPU
 *
 * A bad value is never silently ignored: it is recorded with a message that
 * wc_pmem_configure/wc_pmem_info/wc_persist_policy_init return as -EINVAL,
 * and the copy functions (which cannot fail) warn once (wc_log) and run
 * without that variable.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush/engine.h"

static void env_error(struct wc_pmem_env *env, const char *name, const char *value,
                      const char *expected)
{
	size_t len = strlen(env->errmsg);

	/* Keep every bad variable in the message, not only the first. */
	snprintf(env->errmsg + len, sizeof(env->errmsg) - len, "%s%s=\"%s\": environment: %s",
	         len ? "; " : "", name, value, expected);
	env->error = -EINVAL;
}

static int parse_bytes(const char *s, size_t *out)
{
	uintmax_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > (UINTMAX_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uintmax_t)(*s - '0');
	}
	if (v == 0 || v >= SIZE_MAX - 1) /* 0 and the two sentinels are not sizes */
		return -1;
	*out = (size_t)v;
	return 0;
}

/* "1" sets the flag, "0" or "" leaves it clear, anything else is an error. */
static void parse_flag(struct wc_pmem_env *env, const char *name, unsigned bits)
{
	const char *v = getenv(name);

	if (!v || !*v || strcmp(v, "0") == 0)
		return;
	if (strcmp(v, "1") != 0) {
		env_error(env, name, v, "expected 1 or 0");
		return;
	}
	env->cfg.disable |= bits;
	env->set |= WC_ENV_DISABLE;
}

void wc_pmem_env_parse(struct wc_pmem_env *env)
{
	const char *v;

	memset(env, 0, sizeof(*env));

	v = getenv("WC_PMEM_THRESHOLD");
	if (v && *v) {
		if (strcmp(v, "auto") == 0)
			env->cfg.threshold = WC_PMEM_THRESHOLD_AUTO;
		else if (strcmp(v, "nt") == 0)
			env->cfg.threshold = SIZE_MAX;
		else if (parse_bytes(v, &env->cfg.threshold) != 0)
			env_error(env, "WC_PMEM_THRESHOLD", v,
			          "expected a byte count >= 1, \"auto\" or \"nt\"");
		if (env->cfg.threshold)
			env->set |= WC_ENV_THRESHOLD;
	}

	v = getenv("WC_PMEM_FORCE");
	if (v && *v) {
		if (strcmp(v, "nt") == 0)
			env->cfg.force = WC_PMEM_FORCE_NT;
		else if (strcmp(v, "cached") == 0)
			env->cfg.force = WC_PMEM_FORCE_CACHED;
		else if (strcmp(v, "auto") != 0)
			env_error(env, "WC_PMEM_FORCE", v, "expected nt, cached or auto");
		if (env->cfg.force)
			env->set |= WC_ENV_FORCE;
	}

	v = getenv("WC_PMEM_FLUSH");
	if (v && *v) {
		if (strcmp(v, "clwb") == 0) {
			env->cfg.flush_insn = WC_PMEM_CLWB;
			env->set |= WC_ENV_FLUSH;
		} else if (strcmp(v, "clflushopt") == 0) {
			env->cfg.flush_insn = WC_PMEM_CLFLUSHOPT;
			env->set |= WC_ENV_FLUSH;
		} else {
			env_error(env, "WC_PMEM_FLUSH", v, "expected clflushopt or clwb");
		}
	}

	parse_flag(env, "WC_PMEM_NO_CLFLUSHOPT", WC_CPU_CLFLUSHOPT);
	parse_flag(env, "WC_PMEM_NO_CLWB", WC_CPU_CLWB);
	parse_flag(env, "WC_PMEM_NO_AVX", WC_CPU_AVX2 | WC_CPU_AVX512F);

	v = getenv("WC_PMEM_NO_QUIRKS");
	if (v && *v && strcmp(v, "0") != 0) {
		if (strcmp(v, "1") == 0)
			env->set |= WC_ENV_NO_QUIRKS;
		else
			env_error(env, "WC_PMEM_NO_QUIRKS", v, "expected 1 or 0");
	}
}

static struct wc_pmem_env the_env;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void env_init(void)
{
	wc_pmem_env_parse(&the_env);
}

const struct wc_pmem_env *wc_pmem_env_get(void)
{
	pthread_once(&env_once, env_init);
	return &the_env;
}

void wc_pmem_env_reset(void)
{
	pthread_once_t fresh = PTHREAD_ONCE_INIT;

	memcpy(&env_once, &fresh, sizeof(fresh));
	memset(&the_env, 0, sizeof(the_env));
}
