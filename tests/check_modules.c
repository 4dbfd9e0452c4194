/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_modules.c -- the NBD and RBD backends as modules (lib/origin/
 * module.h), loaded through WCACHE_MODULE_DIR as a program's library does.
 *
 * A module that is missing, is not a shared object, is not a libwcache
 * module, or was built for another module interface is refused with
 * -ENOTSUP and a message naming its path and what to install, through each
 * entry point (wc_origin_open_nbd, wc_origin_open_rbd, wc_origin_open);
 * the next call tries again and loads it once it is there.  The real
 * modules report their errors in the calling thread's wc_errmsg(), and
 * threads racing for the first load all get the module.
 *
 * Each test starts in a fresh process (Check's fork mode, the default):
 * the first load of a module is what they test.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "origin/module.h"
#include "testmain.h"
#include "wcache.h"

/* A connection to this fails at once, in the NBD module. */
#define NBD_NOWHERE "nbd+unix:///?socket=/nonexistent/wcache-check-modules.sock"
/* The RBD module refuses a snapshot before reaching any cluster. */
#define RBD_SNAP "rbd:pool/image@snap"

static char real_dir[PATH_MAX];

/* An empty folder of the scratch folder, as the module folder. */
static const char *empty_dir(const char *name)
{
	static char dir[PATH_MAX];

	wc_test_path(dir, sizeof(dir), name);
	ck_assert_msg(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
	setenv("WCACHE_MODULE_DIR", dir, 1);
	return dir;
}

static void assert_msg_has(const char *what)
{
	ck_assert_msg(strstr(wc_errmsg(), what), "message lacks \"%s\": %s", what, wc_errmsg());
}

/* Put `target` in the folder as both modules' file. */
static void plant(const char *dir, const char *target)
{
	char path[PATH_MAX];

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, i ? "wcache-rbd.so" : "wcache-nbd.so");
		unlink(path);
		ck_assert_msg(symlink(target, path) == 0, "symlink %s: %s", path, strerror(errno));
	}
}

START_TEST(missing_module_names_path_and_package)
{
	const char *dir = empty_dir("empty");
	struct wc_origin o = { 0 };
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/wcache-nbd.so", dir);
	ck_assert_int_eq(wc_origin_open_nbd(&o, NBD_NOWHERE), -ENOTSUP);
	assert_msg_has(NBD_NOWHERE);
	assert_msg_has(path);
#ifdef WC_HAVE_LIBNBD
	assert_msg_has("apt-get install libnbd0");
#else
	assert_msg_has("apt-get install libnbd-dev");
#endif
	ck_assert_ptr_null(o.ops);
	ck_assert_int_eq(wc_origin_open(&o, "nbd://127.0.0.1:1/x"), -ENOTSUP);
	assert_msg_has(path);

	snprintf(path, sizeof(path), "%s/wcache-rbd.so", dir);
	ck_assert_int_eq(wc_origin_open_rbd(&o, RBD_SNAP), -ENOTSUP);
	assert_msg_has(path);
#ifdef WC_HAVE_LIBRBD
	assert_msg_has("apt-get install librbd1");
#else
	assert_msg_has("apt-get install librbd-dev");
#endif
	ck_assert_int_eq(wc_origin_open(&o, "rbd:pool/image"), -ENOTSUP);
	assert_msg_has(path);
	ck_assert_ptr_null(o.ops);
}
END_TEST

START_TEST(not_a_shared_object)
{
	const char *dir = empty_dir("garbage");
	char path[PATH_MAX];
	struct wc_origin o;
	FILE *f;

	snprintf(path, sizeof(path), "%s/wcache-nbd.so", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not an ELF file\n", f);
	fclose(f);
	ck_assert_int_eq(wc_origin_open_nbd(&o, NBD_NOWHERE), -ENOTSUP);
	assert_msg_has(path);
	assert_msg_has("does not load");
	assert_msg_has("apt-get install libnbd0");
}
END_TEST

/* A shared object that is not a module: the libaio this process maps. */
START_TEST(not_a_module)
{
	const char *dir = empty_dir("stranger");
	char line[PATH_MAX + 128], lib[PATH_MAX] = "";
	struct wc_origin o;
	FILE *maps = fopen("/proc/self/maps", "r");

	ck_assert_ptr_nonnull(maps);
	while (!lib[0] && fgets(line, sizeof(line), maps)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libaio.so")) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(lib, sizeof(lib), "%s", p);
		}
	}
	fclose(maps);
	ck_assert_msg(lib[0], "libaio is not mapped");
	plant(dir, lib);
	ck_assert_int_eq(wc_origin_open_rbd(&o, RBD_SNAP), -ENOTSUP);
	assert_msg_has("wcache-rbd.so is not a libwcache module (no wc_module_entry)");
}
END_TEST

/* tests/modules/fake.c, told by WC_FAKE_MODULE how to misbehave. */
static void fake(const char *dir_name, const char *how)
{
	char target[PATH_MAX];

	snprintf(target, sizeof(target), "%s/tests/modules/.libs/wcache-fake.so",
	         getenv("WC_TEST_BUILDDIR"));
	ck_assert_msg(access(target, R_OK) == 0, "%s: %s", target, strerror(errno));
	plant(empty_dir(dir_name), target);
	setenv("WC_FAKE_MODULE", how, 1);
}

START_TEST(other_interface_refused)
{
	struct wc_origin o = { 0 };
	char want[64];

	fake("abi", "abi");
	ck_assert_int_eq(wc_origin_open_nbd(&o, NBD_NOWHERE), -ENOTSUP);
	assert_msg_has("wcache-nbd.so refused: it was built for another libwcache (0.0.fake");
	snprintf(want, sizeof(want), "this library's %u,", WC_MODULE_ABI);
	assert_msg_has(want);
	ck_assert_ptr_null(o.ops);
	/* The fake's open would have said "fake opened". */
	ck_assert_ptr_null(strstr(wc_errmsg(), "fake opened"));

	setenv("WC_FAKE_MODULE", "size", 1);
	ck_assert_int_eq(wc_origin_open_rbd(&o, RBD_SNAP), -ENOTSUP);
	assert_msg_has("built for another libwcache");
}
END_TEST

START_TEST(module_refuses_host)
{
	struct wc_origin o;

	fake("refuse", "refuse");
	ck_assert_int_eq(wc_origin_open_nbd(&o, NBD_NOWHERE), -ENOTSUP);
	assert_msg_has("wcache-nbd.so refused: the fake refuses");
	setenv("WC_FAKE_MODULE", "mute", 1);
	ck_assert_int_eq(wc_origin_open_nbd(&o, NBD_NOWHERE), -ENOTSUP);
	assert_msg_has("its entry point refused this library");
}
END_TEST

START_TEST(wrong_backend_refused)
{
	struct wc_origin o;

	fake("kind", "rbd-only");
	ck_assert_int_eq(wc_origin_open_nbd(&o, NBD_NOWHERE), -ENOTSUP);
	assert_msg_has("it is not the NBD backend (it says \"rbd\")");
}
END_TEST

/* The fake, well-behaved, is loaded and called: the checks above are what
 * refused it, not the fake itself. */
START_TEST(fake_accepted_when_right)
{
	struct wc_origin o;

	fake("right", "ok");
	ck_assert_int_eq(wc_origin_open_nbd(&o, NBD_NOWHERE), -EPROTO);
	assert_msg_has("fake opened " NBD_NOWHERE);
}
END_TEST

/* ------------------------------------------------------- the real modules */

static void *open_nbd_thread(void *arg)
{
	struct wc_origin o = { 0 };
	int ret = wc_origin_open_nbd(&o, arg);

	/* This thread's message, set by the module. */
	if (ret == 0 || ret == -ENOTSUP || !strstr(wc_errmsg(), arg))
		return strdup(wc_errmsg()[0] ? wc_errmsg() : "succeeded");
	return NULL;
}

START_TEST(nbd_module_errors_are_the_callers)
{
	struct wc_config cfg;
	char msg[512];
	pthread_t t;
	void *bad;

#ifndef WC_HAVE_LIBNBD
	WC_TEST_SKIP("built without libnbd: no NBD module");
#endif
	setenv("WCACHE_MODULE_DIR", real_dir, 1);
	wc_config_init(&cfg);
	ck_assert_int_eq(wc_config_parse(&cfg, "no_such_key=1"), -EINVAL);
	snprintf(msg, sizeof(msg), "%s", wc_errmsg());
	ck_assert_int_eq(pthread_create(&t, NULL, open_nbd_thread, NBD_NOWHERE), 0);
	ck_assert_int_eq(pthread_join(t, &bad), 0);
	ck_assert_msg(!bad, "thread: %s", (char *)bad);
	/* The other thread's failure did not touch this thread's message. */
	ck_assert_str_eq(wc_errmsg(), msg);
}
END_TEST

#define RACERS 8

static pthread_barrier_t start;

static void *race_thread(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	return open_nbd_thread(NBD_NOWHERE);
}

START_TEST(first_use_from_many_threads)
{
	pthread_t t[RACERS];

#ifndef WC_HAVE_LIBNBD
	WC_TEST_SKIP("built without libnbd: no NBD module");
#endif
	setenv("WCACHE_MODULE_DIR", real_dir, 1);
	pthread_barrier_init(&start, NULL, RACERS);
	for (int i = 0; i < RACERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, race_thread, NULL), 0);
	for (int i = 0; i < RACERS; i++) {
		void *bad;

		ck_assert_int_eq(pthread_join(t[i], &bad), 0);
		ck_assert_msg(!bad, "thread %d: %s", i, (char *)bad);
	}
	pthread_barrier_destroy(&start);
}
END_TEST

/* A failed load is not remembered: the module installed since is found. */
START_TEST(missing_then_installed)
{
	struct wc_origin o;
	int ret;

#ifndef WC_HAVE_LIBRBD
	WC_TEST_SKIP("built without librbd: no RBD module");
#endif
	empty_dir("later");
	ck_assert_int_eq(wc_origin_open_rbd(&o, RBD_SNAP), -ENOTSUP);
	setenv("WCACHE_MODULE_DIR", real_dir, 1);
	ret = wc_origin_open(&o, RBD_SNAP);
	ck_assert_msg(ret == -EROFS, "%d %s", ret, wc_errmsg());
	assert_msg_has("snapshots are read-only");
	/* The spec grammar runs in the module too, with its messages. */
	ck_assert_int_eq(wc_origin_open_rbd(&o, "rbd:"), -EINVAL);
	assert_msg_has("'rbd:'");
}
END_TEST

static Suite *modules_suite(void)
{
	Suite *s = suite_create("modules");
	TCase *refused = tcase_create("refused");
	TCase *real = tcase_create("real");

	tcase_add_test(refused, missing_module_names_path_and_package);
	tcase_add_test(refused, not_a_shared_object);
	tcase_add_test(refused, not_a_module);
	tcase_add_test(refused, other_interface_refused);
	tcase_add_test(refused, module_refuses_host);
	tcase_add_test(refused, wrong_backend_refused);
	tcase_add_test(refused, fake_accepted_when_right);
	suite_add_tcase(s, refused);
	tcase_add_test(real, nbd_module_errors_are_the_callers);
	tcase_add_test(real, first_use_from_many_threads);
	tcase_add_test(real, missing_then_installed);
	suite_add_tcase(s, real);
	return s;
}

int main(void)
{
	const char *dir = getenv("WCACHE_MODULE_DIR");

	/* make check names the build tree's modules (tests/local.am). */
	if (!dir || !getenv("WC_TEST_BUILDDIR"))
		return wc_test_skip_all("WCACHE_MODULE_DIR and WC_TEST_BUILDDIR unset: run by make check");
	snprintf(real_dir, sizeof(real_dir), "%s", dir);
	return wc_test_main(modules_suite());
}
