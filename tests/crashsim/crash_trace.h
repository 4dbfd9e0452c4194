/* SPDX-License-Identifier: BSD-3-Clause */
/* crash_trace.h -- a tracing origin wrapper, to explain crash-sweep violations. */
#ifndef WC_CRASH_TRACE_H
#define WC_CRASH_TRACE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "wcache.h"

struct trace_origin;

/* Wrap `inner` (which stays the caller's); print to f.  close() is passed on. */
int crash_trace_origin(struct trace_origin **out, struct wc_origin inner, uint32_t block_size,
                       FILE *f);
struct wc_origin crash_trace_get(struct trace_origin *t);
void crash_trace_free(struct trace_origin *t);

#endif
