/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crash_trace.c -- an origin that forwards to another and prints every
 * request, completion and flush: how a violation of the crash sweep is
 * explained (crash-sweep --trace).  Not used otherwise.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "crash_trace.h"

struct trace_origin {
	struct wc_origin inner;
	FILE *out;
	uint32_t block_size;
};

struct trace_io {
	struct wc_origin_io io;
	struct wc_origin_io *outer;
	struct trace_origin *t;
};

/* The first block's pattern header says which version went out. */
static void print_io(struct trace_origin *t, const char *what, const struct wc_origin_io *io,
                     ssize_t res)
{
	size_t len = 0;

	for (int i = 0; i < io->iovcnt; i++)
		len += io->iov[i].iov_len;
	fprintf(t->out, "  origin %s %s block %" PRIu64 " +%zu", what,
	        io->op == WC_ORIGIN_WRITE ? "write" : "read", io->offset / t->block_size,
	        len / t->block_size);
	if (io->op == WC_ORIGIN_WRITE) {
		fprintf(t->out, " versions");
		for (int i = 0; i < io->iovcnt; i++)
			for (size_t off = 0; off < io->iov[i].iov_len; off += t->block_size)
				fprintf(t->out, " %" PRIu64,
				        ((const uint64_t *)((const char *)io->iov[i].iov_base + off))[2]);
	}
	if (res != INT64_MIN)
		fprintf(t->out, " -> %zd", res);
	fprintf(t->out, "\n");
}

static void trace_done(struct wc_origin_io *io, ssize_t res)
{
	struct trace_io *ti = (struct trace_io *)io;
	struct wc_origin_io *outer = ti->outer;

	print_io(ti->t, "done", io, res);
	free(ti);
	outer->done(outer, res);
}

static int t_size(void *ctx, uint64_t *bytes)
{
	struct trace_origin *t = ctx;

	return t->inner.ops->size(t->inner.ctx, bytes);
}

static int t_submit(void *ctx, struct wc_origin_io *io)
{
	struct trace_origin *t = ctx;
	struct trace_io *ti = calloc(1, sizeof(*ti));
	int ret;

	if (!ti)
		return -ENOMEM;
	ti->io = *io;
	ti->io.done = trace_done;
	ti->outer = io;
	ti->t = t;
	print_io(t, "submit", io, INT64_MIN);
	ret = t->inner.ops->submit(t->inner.ctx, &ti->io);
	if (ret)
		free(ti);
	return ret;
}

static int t_poll(void *ctx, unsigned min_events, uint64_t timeout_ns)
{
	struct trace_origin *t = ctx;

	return t->inner.ops->poll(t->inner.ctx, min_events, timeout_ns);
}

static int t_flush(void *ctx)
{
	struct trace_origin *t = ctx;
	int ret = t->inner.ops->flush(t->inner.ctx);

	fprintf(t->out, "  origin flush -> %d\n", ret);
	return ret;
}

static int t_discard(void *ctx, uint64_t offset, uint64_t len)
{
	struct trace_origin *t = ctx;
	int ret = t->inner.ops->discard ? t->inner.ops->discard(t->inner.ctx, offset, len) : -EOPNOTSUPP;

	fprintf(t->out, "  origin discard block %" PRIu64 " +%" PRIu64 " -> %d\n",
	        offset / t->block_size, len / t->block_size, ret);
	return ret;
}

static void t_close(void *ctx)
{
	struct trace_origin *t = ctx;

	fprintf(t->out, "  origin close\n");
	t->inner.ops->close(t->inner.ctx);
}

static uint32_t t_alignment(void *ctx)
{
	struct trace_origin *t = ctx;

	return t->inner.ops->alignment ? t->inner.ops->alignment(t->inner.ctx) : 1;
}

static const char *t_describe(void *ctx)
{
	struct trace_origin *t = ctx;

	return t->inner.ops->describe ? t->inner.ops->describe(t->inner.ctx) : "traced origin";
}

static const struct wc_origin_ops trace_ops = {
	.size = t_size, .submit = t_submit, .poll = t_poll, .flush = t_flush,
	.discard = t_discard, .close = t_close, .alignment = t_alignment, .describe = t_describe,
};

int crash_trace_origin(struct trace_origin **out, struct wc_origin inner, uint32_t block_size,
                       FILE *f)
{
	struct trace_origin *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->inner = inner;
	t->out = f;
	t->block_size = block_size;
	*out = t;
	return 0;
}

struct wc_origin crash_trace_get(struct trace_origin *t)
{
	return (struct wc_origin){ .ops = &trace_ops, .ctx = t };
}

void crash_trace_free(struct trace_origin *t)
{
	free(t);
}
