/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rbd_spec.h -- the name of an RBD image as qemu writes it:
 *
 *   [rbd:]pool[/namespace]/image[@snap][:key=value[:key=value...]]
 *
 * A backslash takes the next character literally (`\:` is a colon in a
 * name or value).  Keys: conf= (a ceph.conf to read), id= (the client, as
 * in client.ID); any other key is a librados/librbd option passed to
 * rados_conf_set.  Kept apart from the backend so that it builds and is
 * tested without librbd.
 */
#ifndef WC_RBD_SPEC_H
#define WC_RBD_SPEC_H

#include <stddef.h>

struct wc_rbd_opt {
	const char *key, *value;
};

struct wc_rbd_spec {
	const char *pool;
	const char *ns;     /* NULL: the pool's default namespace */
	const char *image;
	const char *snap;   /* NULL: the image itself */
	const char *conf;   /* NULL: librados's default search */
	const char *id;     /* NULL: librados's default (admin, or CEPH_ARGS) */
	struct wc_rbd_opt *opts; /* the other key=value pairs, in order */
	size_t nopts;
	char *buf_;         /* every string above points into it */
};

/* 0, or -EINVAL with a message naming what is wrong and where (the spec
 * is quoted without its options, which may hold a key).  On failure *s
 * holds nothing to free. */
int wc_rbd_spec_parse(struct wc_rbd_spec *s, const char *spec);
void wc_rbd_spec_free(struct wc_rbd_spec *s);

/* "pool[/namespace]/image[@snap]" into buf (truncated to len). */
void wc_rbd_spec_name(const struct wc_rbd_spec *s, char *buf, size_t len);

#endif
