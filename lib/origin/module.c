/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.c -- loading the NBD and RBD backends (module.h), and the entry
 * points that reach them: wc_origin_open_nbd(), wc_origin_open_rbd() and
 * the NBD backend's options.
 *
 * Where: $WCACHE_MODULE_DIR when set (tests and tools in a build tree; not
 * for a set-user-ID program: secure_getenv), else WC_MODULE_DIR, the
 * folder `make install` puts them in ($(pkglibdir), lib/local.am).
 *
 * A loaded module stays loaded: the origins it opened hold its code.  A
 * failed load is not remembered; each call tries again, which costs a
 * stat() or a failed dlopen(), and sees a package installed since.
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "origin/module.h"

#ifndef WC_MODULE_DIR
#error "WC_MODULE_DIR (where the backend modules are installed) comes from lib/local.am"
#endif

struct module_kind {
	const char *file;     /* in the module folder */
	const char *what;     /* for messages */
	const char *runtime;  /* the Debian packages of the libraries it needs */
	const char *dev;      /* ... and of their headers, for configure */
	const char *lib;      /* the library configure looks for */
	bool built;           /* configure found it for this build */
};

static const struct module_kind kinds[WC_MODULE_COUNT] = {
	[WC_MODULE_NBD] = {
		.file = "wcache-nbd.so", .what = "NBD", .runtime = "libnbd0",
		.dev = "libnbd-dev", .lib = "libnbd",
#ifdef WC_HAVE_LIBNBD
		.built = true,
#endif
	},
	[WC_MODULE_RBD] = {
		.file = "wcache-rbd.so", .what = "RBD", .runtime = "librbd1 librados2",
		.dev = "librbd-dev librados-dev", .lib = "librbd",
#ifdef WC_HAVE_LIBRBD
		.built = true,
#endif
	},
};

static const struct wc_module_host host = {
	.size = sizeof(struct wc_module_host),
	.abi = WC_MODULE_ABI,
	.version = WCACHE_VERSION_STRING,
	.verr = wc_verr,
	.verr_sys = wc_verr_sys,
	.errmsg = wc_errmsg,
	.identity_set = wc_origin_identity_set,
};

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
/* Published with release once loaded, so a reader without the lock sees
 * the module's table whole. */
static _Atomic(const struct wc_module *) loaded[WC_MODULE_COUNT];

static const char *module_dir(void)
{
	const char *dir = secure_getenv("WCACHE_MODULE_DIR");

	return dir && *dir ? dir : WC_MODULE_DIR;
}

/* The module file is not there. */
static int not_found(const struct module_kind *k, const char *name, const char *path)
{
	if (!k->built)
		return wc_err(-ENOTSUP, "origin %s: the %s backend is a module, %s, and this libwcache "
		              "was built without it (apt-get install %s, then configure and build "
		              "again)", name, k->what, path, k->dev);
	return wc_err(-ENOTSUP, "origin %s: the %s backend is a module, %s, which is not there: it "
	              "is installed with libwcache (built with %s) and needs apt-get install %s; "
	              "WCACHE_MODULE_DIR names another folder", name, k->what, path, k->lib,
	              k->runtime);
}

/* Under load_lock: dlopen the module and check its table. */
static int load(enum wc_module_id id, const char *name, const struct wc_module **out)
{
	const struct module_kind *k = &kinds[id];
	char path[4096], why[256] = "";
	const struct wc_module *m;
	wc_module_entry_fn *entry;
	struct stat st;
	void *h;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", module_dir(), k->file) >= sizeof(path))
		return wc_err(-ENOTSUP, "origin %s: the %s module's path is longer than %zu bytes "
		              "(WCACHE_MODULE_DIR?)", name, k->what, sizeof(path));
	/* Absent is the common case and has its own advice; anything else
	 * (a folder we may not read) dlopen() puts in words below. */
	if (stat(path, &st) != 0 && errno == ENOENT)
		return not_found(k, name, path);
	/* RTLD_NOW: a library it needs that is missing fails here, not at
	 * the first call into it; RTLD_LOCAL: its symbols stay its own. */
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return wc_err(-ENOTSUP, "origin %s: the %s module %s does not load: %s (apt-get "
		              "install %s)", name, k->what, path, dlerror(), k->runtime);
	*(void **)&entry = dlsym(h, WC_MODULE_ENTRY);
	if (!entry) {
		dlclose(h);
		return wc_err(-ENOTSUP, "origin %s: %s is not a libwcache module (no %s)", name, path,
		              WC_MODULE_ENTRY);
	}
	m = entry(&host, why, sizeof(why));
	if (!m && !why[0])
		snprintf(why, sizeof(why), "its entry point refused this library");
	else if (m && (m->abi != WC_MODULE_ABI || m->size != sizeof(*m)))
		snprintf(why, sizeof(why), "it was built for another libwcache (%s; module interface "
		         "%u, %u bytes; this library's %u, %zu bytes)", m->version ? m->version : "?",
		         (unsigned)m->abi, (unsigned)m->size, (unsigned)WC_MODULE_ABI, sizeof(*m));
	else if (m && (id == WC_MODULE_NBD ? !m->open_nbd : !m->open_rbd))
		snprintf(why, sizeof(why), "it is not the %s backend (it says \"%s\")", k->what,
		         m->name ? m->name : "?");
	if (why[0]) {
		dlclose(h);
		return wc_err(-ENOTSUP, "origin %s: %s refused: %s: install the module of libwcache %s",
		              name, path, why, WCACHE_VERSION_STRING);
	}
	/* Never dlclose'd: it stays for the origins it will open. */
	*out = m;
	return 0;
}

int wc_module_get(enum wc_module_id id, const char *name, const struct wc_module **out)
{
	const struct wc_module *m = atomic_load_explicit(&loaded[id], memory_order_acquire);
	int ret = 0;

	if (!m) {
		pthread_mutex_lock(&load_lock);
		m = atomic_load_explicit(&loaded[id], memory_order_relaxed);
		if (!m) {
			ret = load(id, name, &m);
			if (!ret)
				atomic_store_explicit(&loaded[id], m, memory_order_release);
		}
		pthread_mutex_unlock(&load_lock);
		if (ret)
			return ret;
	}
	*out = m;
	return 0;
}

bool wc_module_ops_known(const struct wc_origin_ops *ops)
{
	for (unsigned i = 0; i < WC_MODULE_COUNT; i++) {
		const struct wc_module *m = atomic_load_explicit(&loaded[i], memory_order_acquire);

		if (m && m->ops == ops)
			return true;
	}
	return false;
}

int wc_origin_open_nbd_opts(struct wc_origin *out, const char *uri,
                            const struct wc_origin_nbd_opts *opts)
{
	const struct wc_module *m;
	int ret = wc_module_get(WC_MODULE_NBD, uri ? uri : "(null)", &m);

	return ret ? ret : m->open_nbd(out, uri, opts);
}

int wc_origin_open_nbd(struct wc_origin *out, const char *uri)
{
	return wc_origin_open_nbd_opts(out, uri, NULL);
}

int wc_origin_open_rbd(struct wc_origin *out, const char *spec)
{
	const struct wc_module *m;
	int ret = wc_module_get(WC_MODULE_RBD, spec ? spec : "(null)", &m);

	return ret ? ret : m->open_rbd(out, spec);
}
