/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * origin.c -- origins for the tools (wcadmin.h): the library's dispatchers
 * over an ops table (origin/origin.h), with its defaults for the optional
 * ops, and its synchronous helper.  wcbench's raw baselines drive an origin
 * with them exactly as write-back does.
 */
#include "admin/wcadmin.h"
#include "origin/origin.h"

bool wcadm_origin_is_path(const char *name)
{
	return wc_origin_kind_of(name) == WC_ORIGIN_KIND_PATH;
}

int wcadm_origin_size(struct wc_origin *o, uint64_t *bytes)
{
	return wc_origin_size(o, bytes);
}

uint32_t wcadm_origin_alignment(struct wc_origin *o)
{
	return wc_origin_alignment(o);
}

int wcadm_origin_submit(struct wc_origin *o, struct wc_origin_io *io)
{
	return wc_origin_submit(o, io);
}

int wcadm_origin_poll(struct wc_origin *o, unsigned min_events, uint64_t timeout_ns)
{
	return wc_origin_poll(o, min_events, timeout_ns);
}

int wcadm_origin_flush(struct wc_origin *o)
{
	return wc_origin_flush(o);
}

void wcadm_origin_close(struct wc_origin *o)
{
	wc_origin_close(o);
}

int wcadm_origin_rw_sync(struct wc_origin *o, enum wc_origin_op op, void *buf, size_t len,
                         uint64_t off)
{
	return wc_origin_rw_sync(o, op, buf, len, off);
}
