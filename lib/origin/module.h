/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.h -- the optional origin backends as loadable modules.
 *
 * The NBD and RBD backends need libnbd, and librbd + librados: 50 shared
 * libraries and ~24 MB of a process's memory for a program that never
 * names a remote origin.  So they are built as modules (wcache-nbd.so,
 * wcache-rbd.so) that the library dlopen()s at the first use of their
 * origin names, once per process, and libwcache.so itself needs libpmem2
 * and libaio only.  docs/ORIGINS.md, "Backends as modules", is the user's
 * side: where they live, WCACHE_MODULE_DIR, the error when one is missing.
 *
 * The two sides meet through the tables below and nothing else.  The
 * library exports only its public API (lib/libwcache.map), and a static
 * libwcache.a exports nothing at run time, so a module cannot link against
 * the library's internals: what it needs of them -- the thread-local
 * message behind wc_errmsg() above all -- it calls through the host table
 * it is given at load (module_host.c forwards wc_err() and friends to it).
 * A module exports one symbol, WC_MODULE_ENTRY.
 *
 * Each side checks the other's table (abi, size) and refuses a mismatch
 * with a message naming both: a module left from another build of the
 * library is refused, never called.  So the first three fields of both
 * tables stay what and where they are whatever the interface's number.
 */
#ifndef WC_ORIGIN_MODULE_H
#define WC_ORIGIN_MODULE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "origin/origin.h"

/*
 * The interface's number.  Bump it when anything here changes, or what it
 * points to that is not public: struct wc_origin_nbd_opts (origin.h) is
 * such.  The _Static_asserts at the end stop a build whose structs changed
 * size without it.
 */
#define WC_MODULE_ABI 1

/* What the library gives a module: its own functions behind the
 * helpers the backends call (util/error.h, wc_errmsg, identity.c). */
struct wc_module_host {
	uint32_t size;       /* sizeof(struct wc_module_host) of the library */
	uint32_t abi;        /* WC_MODULE_ABI of the library */
	const char *version; /* the library's WCACHE_VERSION_STRING, for messages */
	int (*verr)(int code, const char *fmt, va_list ap);
	int (*verr_sys)(int code, const char *fmt, va_list ap);
	const char *(*errmsg)(void);
	void (*identity_set)(char *dst, size_t len, const char *src);
};

/* What a module gives the library. */
struct wc_module {
	uint32_t size;       /* sizeof(struct wc_module) of the module's build */
	uint32_t abi;        /* WC_MODULE_ABI of the module's build */
	const char *version; /* WCACHE_VERSION_STRING of the module's build */
	const char *name;    /* "nbd", "rbd" */
	/* Its backend's ops table: origin.c reads what follows the 0.4 ops
	 * of the library's own tables only, and this is one. */
	const struct wc_origin_ops *ops;
	/* The one set for the module's backend; the other NULL. */
	int (*open_nbd)(struct wc_origin *out, const char *uri, const struct wc_origin_nbd_opts *opts);
	int (*open_rbd)(struct wc_origin *out, const char *spec);
};

/*
 * The symbol a module exports: checks the host's table, keeps it, and
 * returns the module's own; or NULL with why a mismatched host is refused
 * in `why` (the module cannot set the library's message without a host
 * it trusts).
 */
#define WC_MODULE_ENTRY "wc_module_entry"
typedef const struct wc_module *wc_module_entry_fn(const struct wc_module_host *host, char *why,
                                                   size_t why_len);
const struct wc_module *wc_module_entry(const struct wc_module_host *host, char *why,
                                        size_t why_len);

/* Inside a module: its descriptor (nbd.c, rbd.c), which the entry point
 * (module_host.c) hands out. */
extern const struct wc_module wc_module_self;

_Static_assert(sizeof(struct wc_module_host) == 48 && sizeof(struct wc_module) == 48 &&
                       sizeof(struct wc_origin_nbd_opts) == 24,
               "the module interface changed: bump WC_MODULE_ABI and these sizes");

/* ---- the library's side (module.c) ---- */

enum wc_module_id { WC_MODULE_NBD, WC_MODULE_RBD, WC_MODULE_COUNT };

/*
 * The module `id`, loaded at the first call (thread-safe; once loaded it
 * stays for the life of the process).  0 and *out, or -ENOTSUP with a
 * message beginning "origin <name>: " that names the module's path, why it
 * did not load and what to install.  A failed load is tried again by the
 * next call (the package may have been installed since).
 */
int wc_module_get(enum wc_module_id id, const char *name, const struct wc_module **out);

/* Whether `ops` is the table of a loaded module's backend. */
bool wc_module_ops_known(const struct wc_origin_ops *ops);

#endif
