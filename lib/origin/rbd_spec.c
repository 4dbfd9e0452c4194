/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rbd_spec.c -- parsing the qemu-style name of an RBD image (rbd_spec.h).
 *
 * One pass over the text: each field is copied, unescaped, into one
 * buffer and ends with a NUL there, so the result is a handful of pointers
 * into one allocation.  Messages quote the spec only up to its options:
 * an option may be key=SECRET, which must not end up in a log.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "origin/rbd_spec.h"

#define RBD_PREFIX "rbd:"

struct cursor {
	const char *in;
	size_t i;       /* next input character */
	char *out;
	size_t w;       /* next output character */
	const char *quoted; /* the spec without options, for messages */
};

/*
 * Copy input up to (not including) an unescaped character of `stops`, or
 * the end, unescaping; NUL-terminate the copy.  *stop is the character
 * that ended it ('\0' at the end).  Returns the copy, or NULL for a
 * trailing backslash (nothing left to escape).
 */
static const char *take(struct cursor *c, const char *stops, char *stop)
{
	const char *start = c->out + c->w;

	for (;;) {
		char ch = c->in[c->i];

		if (ch == '\0' || strchr(stops, ch)) {
			*stop = ch;
			if (ch)
				c->i++;
			c->out[c->w++] = '\0';
			return start;
		}
		if (ch == '\\') {
			if (c->in[c->i + 1] == '\0')
				return NULL;
			ch = c->in[++c->i];
		}
		c->out[c->w++] = ch;
		c->i++;
	}
}

/* The spec up to its first unescaped ':' after the image (its options). */
static char *quote_without_options(const char *spec)
{
	size_t n = 0;

	if (strncmp(spec, RBD_PREFIX, strlen(RBD_PREFIX)) == 0)
		n = strlen(RBD_PREFIX);
	for (; spec[n] && spec[n] != ':'; n++)
		if (spec[n] == '\\' && spec[n + 1])
			n++;
	return strndup(spec, n);
}

static int fail(struct wc_rbd_spec *s, char *quoted, const char *what)
{
	int ret = wc_err(-EINVAL, "rbd spec '%s': %s (expected [rbd:]pool[/namespace]/image[@snap][:key=value...])",
	                 quoted ? quoted : "?", what);

	free(quoted);
	free(s->buf_);
	free(s->opts);
	memset(s, 0, sizeof(*s));
	return ret;
}

static int parse_options(struct wc_rbd_spec *s, struct cursor *c, char *quoted)
{
	char msg[160], stop;
	size_t cap = 0;

	for (unsigned n = 1;; n++) {
		const char *key = take(c, "=:", &stop), *value;

		if (!key)
			return fail(s, quoted, "a backslash at the end escapes nothing");
		if (!*key) {
			snprintf(msg, sizeof(msg), stop == '=' ? "option %u has no key before '='"
			         : "option %u is empty (a ':' too many?)", n);
			return fail(s, quoted, msg);
		}
		if (stop != '=') {
			snprintf(msg, sizeof(msg), "option %u ('%.60s') is not key=value", n, key);
			return fail(s, quoted, msg);
		}
		value = take(c, ":", &stop);
		if (!value)
			return fail(s, quoted, "a backslash at the end escapes nothing");
		if (!*value) {
			snprintf(msg, sizeof(msg), "option %u ('%.60s') has an empty value", n, key);
			return fail(s, quoted, msg);
		}
		if (strcmp(key, "conf") == 0) {
			s->conf = value;
		} else if (strcmp(key, "id") == 0) {
			s->id = value;
		} else {
			if (s->nopts == cap) {
				struct wc_rbd_opt *o;

				cap = cap ? 2 * cap : 8;
				o = realloc(s->opts, cap * sizeof(*o));
				if (!o) {
					free(quoted);
					free(s->buf_);
					free(s->opts);
					memset(s, 0, sizeof(*s));
					return wc_err(-ENOMEM, "rbd spec: out of memory for %zu options", cap);
				}
				s->opts = o;
			}
			s->opts[s->nopts++] = (struct wc_rbd_opt){ key, value };
		}
		if (stop == '\0')
			return 0;
	}
}

int wc_rbd_spec_parse(struct wc_rbd_spec *s, const char *spec)
{
	struct cursor c = { 0 };
	const char *first;
	char *quoted;
	char stop;
	int ret;

	memset(s, 0, sizeof(*s));
	if (!spec)
		return wc_err(-EINVAL, "rbd spec: NULL");
	quoted = quote_without_options(spec);
	if (!quoted)
		return wc_err(-ENOMEM, "rbd spec: out of memory");
	c.in = spec;
	if (strncmp(spec, RBD_PREFIX, strlen(RBD_PREFIX)) == 0)
		c.i = strlen(RBD_PREFIX);
	/* Unescaping only shrinks; each separator becomes one NUL. */
	s->buf_ = c.out = malloc(strlen(spec) + 2);
	if (!s->buf_) {
		free(quoted);
		return wc_err(-ENOMEM, "rbd spec: out of memory");
	}

	s->pool = take(&c, "/@:", &stop);
	if (!s->pool)
		return fail(s, quoted, "a backslash at the end escapes nothing");
	if (!*s->pool)
		return fail(s, quoted, "no pool name");
	if (stop != '/')
		return fail(s, quoted, "no image name");
	first = take(&c, "/@:", &stop);
	if (!first)
		return fail(s, quoted, "a backslash at the end escapes nothing");
	if (stop == '/') {
		if (!*first)
			return fail(s, quoted, "empty namespace (write pool/image for the default one)");
		s->ns = first;
		s->image = take(&c, "/@:", &stop);
		if (!s->image)
			return fail(s, quoted, "a backslash at the end escapes nothing");
		if (stop == '/')
			return fail(s, quoted, "too many '/' (a name with a '/' in it is written \\/)");
	} else {
		s->image = first;
	}
	if (!*s->image)
		return fail(s, quoted, "no image name");
	if (stop == '@') {
		s->snap = take(&c, ":", &stop);
		if (!s->snap)
			return fail(s, quoted, "a backslash at the end escapes nothing");
		if (!*s->snap)
			return fail(s, quoted, "empty snapshot name after '@'");
	}
	if (stop == ':') {
		ret = parse_options(s, &c, quoted);
		if (ret)
			return ret; /* parse_options freed everything */
	}
	free(quoted);
	return 0;
}

void wc_rbd_spec_free(struct wc_rbd_spec *s)
{
	if (!s)
		return;
	free(s->buf_);
	free(s->opts);
	memset(s, 0, sizeof(*s));
}

void wc_rbd_spec_name(const struct wc_rbd_spec *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s/%s%s%s", s->pool, s->ns ? "/" : "", s->ns ? s->ns : "",
	         s->image, s->snap ? "@" : "", s->snap ? s->snap : "");
}
