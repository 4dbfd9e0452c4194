/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * debug.h -- WC_ASSERT: invariants checked in a --enable-debug build only.
 *
 * Cheap checks of the rules the protocol relies on (commit.c's numbered
 * invariants, core/cache.h's lock order), so that a change breaking one
 * fails at the line that broke it rather than as a crash image the sweep
 * happens to find.  Without WC_DEBUG the condition is not evaluated and no
 * code is emitted: normal builds neither slow down nor change.
 */
#ifndef WC_DEBUG_H
#define WC_DEBUG_H

#ifdef WC_DEBUG
#include <stdlib.h>

#include "util/log.h"

static inline void wc_assert_fail(const char *cond, const char *file, int line, const char *fn)
{
	wc_log(WC_LOG_ERR, "%s:%d: %s: invariant violated: %s", file, line, fn, cond);
	abort();
}
#define WC_ASSERT(cond) \
	((cond) ? (void)0 : wc_assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
/* sizeof keeps the variables an assertion names "used", unevaluated. */
#define WC_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif /* WC_DEBUG_H */
