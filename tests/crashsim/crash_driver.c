/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_driver.c -- the calls a crash workload makes (crash_run_impl.h):
 * each records itself in the model before it is issued, acknowledges what
 * the contract makes durable once it returned, then has every crash image
 * captured meanwhile recovered and checked, and the live cache read back.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "crash_run_impl.h"

static int call_failed(struct crash_drv *d, long ret)
{
	crash_say(d->o, "%s: %s failed: %ld %s\n", d->wl->name, d->op, ret, wc_errmsg());
	d->r->errors++;
	return ret < 0 ? (int)ret : -EIO;
}

static void begin(struct crash_drv *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void begin(struct crash_drv *d, const char *fmt, ...)
{
	va_list ap;

	d->ops++;
	d->r->calls++;
	va_start(ap, fmt);
	vsnprintf(d->op, sizeof(d->op), fmt, ap);
	va_end(ap);
	if (d->o->trace)
		fprintf(d->o->trace, "op %" PRIu64 ": %s (call %" PRIu64 ")\n", d->ops, d->op,
		        wc_model_window(d->model).hi + 1);
}

/* After every call: check what was captured, and that the live cache
 * reads back exactly what the model says (a returned write is readable). */
static int end(struct crash_drv *d)
{
	uint32_t bs = wc_model_block_size(d->model);
	uint64_t n = wc_model_blocks(d->model), v;

	crash_verify_captures(d);
	if (!d->c)
		return 0;
	if (wc_read(d->c, d->buf, n * bs, 0) != (ssize_t)(n * bs))
		return call_failed(d, -EIO);
	for (uint64_t b = 0; b < n; b++) {
		uint64_t want = wc_model_current(d->model, b);
		enum wc_pattern_kind k = wc_pattern_decode(d->buf + b * bs, bs, b, &v);

		if (want == UINT64_MAX ? k == WC_PATTERN_GARBAGE : (k != WC_PATTERN_OK || v != want)) {
			crash_say(d->o, "%s: after %s the live cache reads block %" PRIu64
			    " wrong (want v%" PRIu64 ")\n", d->wl->name, d->op, b, want);
			d->r->violations++;
		}
	}
	return 0;
}

int drv_create(struct crash_drv *d)
{
	int ret;

	begin(d, "create");
	d->formatting = true;
	ret = wc_create_origin(&d->c, d->cache_path, d->origin, &d->cfg);
	d->formatting = false;
	if (ret != 0) {
		d->c = NULL;
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	return end(d);
}

int drv_open(struct crash_drv *d)
{
	int ret;

	begin(d, "open");
	ret = wc_open_origin(&d->c, d->cache_path, d->origin, &d->cfg);
	if (ret != 0) {
		d->c = NULL;
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	return end(d);
}

void drv_name_origin(struct crash_drv *d, const char *name)
{
	snprintf(d->origin_name, sizeof(d->origin_name), "%s", name);
	fault_origin_set_name(d->fo, name);
}

int drv_rebind(struct crash_drv *d, const char *name, unsigned rebind)
{
	struct wc_config cfg = d->cfg;
	int ret;

	begin(d, "rebind to \"%s\"", name);
	snprintf(d->prev_origin_name, sizeof(d->prev_origin_name), "%s", d->origin_name);
	snprintf(d->origin_name, sizeof(d->origin_name), "%s", name);
	fault_origin_set_name(d->fo, name);
	cfg.origin_rebind = rebind;
	ret = wc_open_origin(&d->c, d->cache_path, d->origin, &cfg);
	if (ret != 0) {
		d->c = NULL;
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	ret = end(d);
	/* Durable now: an image taken from here on names the new origin. */
	d->prev_origin_name[0] = '\0';
	return ret;
}

int drv_close(struct crash_drv *d)
{
	int ret;

	begin(d, "close");
	ret = wc_close(d->c);
	d->c = NULL;
	if (ret != 0) {
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	wc_model_ack(d->model); /* close commits */
	return end(d);
}

int drv_write(struct crash_drv *d, uint64_t first, uint64_t count, unsigned flags)
{
	uint32_t bs = wc_model_block_size(d->model);
	uint64_t version;
	ssize_t ret;

	begin(d, "write %" PRIu64 "+%" PRIu64 "%s", first, count, flags & WC_FUA ? " fua" : "");
	version = wc_model_write(d->model, first, count);
	for (uint64_t i = 0; i < count; i++)
		wc_pattern_fill(d->buf + i * bs, bs, first + i, version);
	ret = wc_write(d->c, d->buf, count * bs, first * bs, flags);
	if (ret != (ssize_t)(count * bs)) {
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	if (flags & WC_FUA)
		wc_model_ack(d->model);
	return end(d);
}

int drv_flush(struct crash_drv *d)
{
	int ret;

	begin(d, "flush");
	ret = wc_flush(d->c);
	if (ret != 0) {
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	wc_model_ack(d->model);
	return end(d);
}

void drv_commit_quiet(void *arg)
{
	struct crash_drv *d = arg;
	uint32_t bs = wc_model_block_size(d->model);
	uint64_t version, count = d->race_count;

	if (!count || !d->c)
		return;
	d->race_count = 0;
	version = wc_model_write(d->model, d->race_first, count);
	for (uint64_t i = 0; i < count; i++)
		wc_pattern_fill(d->race_buf + i * bs, bs, d->race_first + i, version);
	d->race_ret = wc_write(d->c, d->race_buf, count * bs, d->race_first * bs, 0);
}

int drv_flush_racing(struct crash_drv *d, uint64_t first, uint64_t count)
{
	uint32_t bs = wc_model_block_size(d->model);
	uint64_t before = wc_model_window(d->model).hi;
	int ret;

	begin(d, "flush raced by write %" PRIu64 "+%" PRIu64, first, count);
	d->race_first = first;
	d->race_count = count;
	d->race_ret = (long)(count * bs);
	ret = wc_flush(d->c);
	if (d->race_count) {
		/* Nothing to commit, so no commit to race: a workload bug. */
		crash_say(d->o, "%s: %s: the flush committed nothing\n", d->wl->name, d->op);
		d->race_count = 0;
		return call_failed(d, -EINVAL);
	}
	if (ret != 0 || d->race_ret != (long)(count * bs)) {
		crash_verify_captures(d);
		return call_failed(d, ret ? ret : d->race_ret);
	}
	wc_model_ack_upto(d->model, before);
	return end(d);
}

int drv_discard(struct crash_drv *d, uint64_t first, uint64_t count)
{
	uint32_t bs = wc_model_block_size(d->model);
	int ret;

	begin(d, "discard %" PRIu64 "+%" PRIu64, first, count);
	wc_model_discard(d->model, first, count);
	ret = wc_discard(d->c, first * bs, count * bs);
	if (ret != 0) {
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	wc_model_ack(d->model); /* discard commits */
	return end(d);
}

int drv_writeback(struct crash_drv *d)
{
	int ret;

	begin(d, "writeback");
	ret = wc_writeback(d->c);
	if (ret != 0) {
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	wc_model_ack(d->model); /* write-back starts with a commit */
	return end(d);
}

int drv_poll(struct crash_drv *d, unsigned budget)
{
	int ret;

	begin(d, "poll %u", budget);
	ret = wc_poll(d->c, budget);
	if (ret < 0) {
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	return end(d);
}

int drv_cleaner(struct crash_drv *d, bool on)
{
	int ret;

	begin(d, "cleaner %s", on ? "on" : "off");
	ret = wc_set_cleaner(d->c, on);
	if (ret != 0) {
		crash_verify_captures(d);
		return call_failed(d, ret);
	}
	return end(d);
}

uint64_t drv_random(struct crash_drv *d, uint64_t below)
{
	return wc_rng_next(&d->rng) % below;
}

