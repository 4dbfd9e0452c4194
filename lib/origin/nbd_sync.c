/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nbd_sync.c -- the NBD backend's flush and discard (a trim): the
 * requests it issues and waits for itself (nbd.h has the objects).
 * They go through the same commands and completions as a caller's reads
 * and writes, but their completion only wakes the waiter: poll() never
 * sees them, and waiting for them never runs a caller's done().
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "origin/nbd.h"

/* A trim's length is a 32-bit field on the wire. */
#define NBD_MAX_TRIM_BYTES (1u << 30)
/* Waiting for a flush or trim of our own: the longest step; one that
 * completes wakes the wait at once. */
#define NBD_OWN_WAIT_SLICE_NS 10000000ull /* 10 ms */

/* Wait for one of our own requests; 0 or a positive errno. */
static int own_wait(struct nbd_origin *o, struct nbd_req *r)
{
	int err;

	wc_nbd_req_put(r); /* the issuer's reference */
	while (!atomic_load(&r->done))
		wc_nbd_step(o, NBD_OWN_WAIT_SLICE_NS, r);
	err = atomic_load(&r->err);
	free(r);
	return err;
}

/* The connections a flush must go to: with multi-conn one is enough --
 * the server then makes every write completed on any connection durable
 * before it answers a flush on one (the NBD spec's multi-conn); without
 * it, each connection may cache its own writes, so every one.  Returns
 * how many links (with references) are in ls, or -errno. */
static int flush_links(struct nbd_origin *o, struct nbd_link **ls)
{
	int n = 0, ret;

	if (atomic_load(&o->multi_conn)) {
		ls[0] = wc_nbd_pick_link(o, &ret);
		return ls[0] ? 1 : ret;
	}
	for (unsigned i = 0; i < o->nconns; i++) {
		struct nbd_link *l = wc_nbd_link_get(o, i);

		if (!l && i == 0) {
			bool attempted = false;

			l = wc_nbd_conn_reconnect(o, 0, &ret, &attempted);
			if (!l)
				return ret;
		}
		if (l)
			ls[n++] = l;
	}
	return n;
}

/* Send a flush to each of ls[0, nl) that takes one, as commands of r;
 * returns 0, or -errno of the one that could not be issued (the rest are
 * abandoned, r fails with it) and why. */
static int flush_issue(struct nbd_origin *o, struct nbd_req *r, struct nbd_link **ls, int nl,
                       char *why, size_t why_len)
{
	unsigned issued = 0;

	for (int i = 0; i < nl && issued < r->ncmds; i++) {
		if (!ls[i]->can_flush)
			continue; /* a server without flush writes through */
		r->cmds[issued] = (struct nbd_cmd){ .req = r, .link = ls[i] };
		if (wc_nbd_cmd_issue(&r->cmds[issued], CMD_FLUSH, NULL, 0, 0) == -1) {
			int err = wc_nbd_errno();

			snprintf(why, why_len, "%s", nbd_get_error());
			wc_nbd_link_failed(o, ls[i], why);
			wc_nbd_req_abandon_rest(r, issued, err);
			return err;
		}
		issued++;
	}
	return 0;
}

int wc_nbd_flush_submit(struct nbd_origin *o, struct wc_origin_io *io)
{
	struct nbd_link *ls[NBD_MAX_CONNS];
	char why[NBD_WHY_LEN] = "";
	struct nbd_req *r;
	uint64_t snap;
	unsigned ncmds = 0;
	int nl, ret;

	ret = wc_nbd_writer_flush_begin(o, &snap);
	if (ret)
		return ret;
	nl = flush_links(o, ls);
	if (nl < 0) {
		ret = wc_err(nl, "%s (flush not sent)", wc_errmsg());
		wc_nbd_writer_flush_end(o, snap, ret);
		return ret;
	}
	for (int i = 0; i < nl; i++)
		ncmds += ls[i]->can_flush;
	r = wc_nbd_req_new(o, io, ncmds);
	if (!r) {
		ret = wc_err(-ENOMEM, "origin %s: flush: out of memory", o->desc);
		wc_nbd_writer_flush_end(o, snap, ret);
	} else {
		/* The writer table's end of it runs when poll() delivers it. */
		r->flush = true;
		r->writer = pthread_self();
		r->flush_snap = snap;
		flush_issue(o, r, ls, nl, why, sizeof(why));
		wc_nbd_req_put(r); /* the issuer's reference: it may complete here */
	}
	for (int i = 0; i < nl; i++)
		wc_nbd_link_put(ls[i]);
	return ret;
}

int wc_nbd_flush(void *ctx)
{
	struct nbd_origin *o = ctx;
	struct nbd_link *ls[NBD_MAX_CONNS];
	struct nbd_req *r = NULL;
	char why[NBD_WHY_LEN] = "";
	uint64_t snap;
	unsigned ncmds = 0;
	int nl, ret, err = 0;

	ret = wc_nbd_writer_flush_begin(o, &snap);
	if (ret)
		return ret;
	nl = flush_links(o, ls);
	if (nl < 0) {
		ret = wc_err(nl, "%s (flush not sent)", wc_errmsg());
		goto out;
	}
	for (int i = 0; i < nl; i++)
		ncmds += ls[i]->can_flush;
	r = wc_nbd_req_new(o, NULL, ncmds);
	if (!r) {
		ret = wc_err(-ENOMEM, "origin %s: flush: out of memory", o->desc);
		goto out;
	}
	flush_issue(o, r, ls, nl, why, sizeof(why));
	err = own_wait(o, r);
	ret = err ? wc_err_sys(-err, "origin %s: flush%s%s", o->desc, why[0] ? ": " : "", why) : 0;
out:
	for (int i = 0; i < nl; i++)
		wc_nbd_link_put(ls[i]);
	wc_nbd_writer_flush_end(o, snap, ret);
	return ret;
}

int wc_nbd_discard(void *ctx, uint64_t offset, uint64_t len)
{
	struct nbd_origin *o = ctx;
	char why[NBD_WHY_LEN] = "";
	struct nbd_link *l;
	struct nbd_req *r;
	unsigned ncmds, i;
	int ret, err;

	if (len == 0)
		return 0;
	if (offset > o->size || len > o->size - offset)
		return wc_err(-EINVAL, "origin %s: discard of %llu bytes at offset %llu: beyond the end (%llu bytes)",
		              o->desc, (unsigned long long)len, (unsigned long long)offset,
		              (unsigned long long)o->size);
	if ((offset | len) & (o->align - 1))
		return wc_err(-EINVAL, "origin %s: discard of %llu bytes at offset %llu: not aligned to %u bytes",
		              o->desc, (unsigned long long)len, (unsigned long long)offset, o->align);
	l = wc_nbd_pick_link(o, &ret);
	if (!l)
		return wc_err(ret, "%s (discard not sent)", wc_errmsg());
	if (!l->can_trim) {
		wc_nbd_link_put(l);
		return wc_err(-EOPNOTSUPP, "origin %s: discard: the server does not support trim", o->desc);
	}
	/* A trim changes what a read returns: as durable (or not) as a write. */
	ret = wc_nbd_writer_note(o, l->conn);
	ncmds = (unsigned)((len + NBD_MAX_TRIM_BYTES - 1) / NBD_MAX_TRIM_BYTES);
	r = ret ? NULL : wc_nbd_req_new(o, NULL, ncmds);
	if (!r) {
		wc_nbd_link_put(l);
		if (!ret)
			wc_nbd_writer_done(o, pthread_self());
		return ret ? ret : wc_err(-ENOMEM, "origin %s: discard: out of memory", o->desc);
	}
	r->tracked = true;
	r->writer = pthread_self();
	for (i = 0; i < ncmds; i++) {
		uint64_t off = (uint64_t)i * NBD_MAX_TRIM_BYTES;
		uint64_t n = len - off < NBD_MAX_TRIM_BYTES ? len - off : NBD_MAX_TRIM_BYTES;

		r->cmds[i] = (struct nbd_cmd){ .req = r, .link = l };
		if (wc_nbd_cmd_issue(&r->cmds[i], CMD_TRIM, NULL, n, offset + off) == -1) {
			snprintf(why, sizeof(why), "%s", nbd_get_error());
			wc_nbd_req_abandon_rest(r, i, wc_nbd_errno());
			wc_nbd_link_failed(o, l, why);
			break;
		}
	}
	wc_nbd_link_put(l);
	err = own_wait(o, r);
	if (err)
		return wc_err_sys(-err, "origin %s: trim of %llu bytes at offset %llu%s%s", o->desc,
		                  (unsigned long long)len, (unsigned long long)offset,
		                  why[0] ? ": " : "", why);
	return 0;
}
