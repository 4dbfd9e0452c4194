/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_rbd_spec.c -- the qemu-style names of RBD images (lib/rbd_spec.c):
 * what is accepted and how it splits, what is refused and with which
 * message, and that a refused spec's options (which may hold a key) stay
 * out of the message.  Needs no Ceph; without librbd, the RBD origin says
 * how to get it.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "origin/rbd_spec.h"
#include "testmain.h"
#include "wcache.h"

static void streq_or_null(const char *got, const char *want, const char *what, const char *spec)
{
	if (!want)
		ck_assert_msg(got == NULL, "%s: %s is '%s', want none", spec, what, got);
	else
		ck_assert_msg(got && strcmp(got, want) == 0, "%s: %s is '%s', want '%s'", spec, what,
		              got ? got : "(none)", want);
}

START_TEST(spec_accepts_qemu_forms)
{
	static const struct {
		const char *spec, *pool, *ns, *image, *snap, *conf, *id;
		size_t nopts;
	} ok[] = {
		{ "rbd:wc/img", "wc", NULL, "img", NULL, NULL, NULL, 0 },
		{ "wc/img", "wc", NULL, "img", NULL, NULL, NULL, 0 },
		{ "rbd:wc/ns/img", "wc", "ns", "img", NULL, NULL, NULL, 0 },
		{ "rbd:wc/img@snap1", "wc", NULL, "img", "snap1", NULL, NULL, 0 },
		{ "rbd:wc/ns/img@s:id=admin", "wc", "ns", "img", "s", NULL, "admin", 0 },
		{ "rbd:wc/img:conf=/etc/ceph/ceph.conf:id=wcache", "wc", NULL, "img", NULL,
		  "/etc/ceph/ceph.conf", "wcache", 0 },
		{ "rbd:wc/img:rbd_cache=true:client_mount_timeout=3", "wc", NULL, "img", NULL, NULL,
		  NULL, 2 },
		/* Escapes: a colon, a slash and an at sign inside names. */
		{ "rbd:w\\:c/im\\/g\\@x:conf=/a\\:b/c.conf", "w:c", NULL, "im/g@x", NULL, "/a:b/c.conf",
		  NULL, 0 },
		/* '=' inside a value; the last conf= wins. */
		{ "rbd:p/i:conf=/x:mon_host=v2\\:1.2.3.4\\:3300:conf=/y", "p", NULL, "i", NULL, "/y",
		  NULL, 1 },
		{ "p/i:key=AQ==", "p", NULL, "i", NULL, NULL, NULL, 1 },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct wc_rbd_spec s;
		int ret = wc_rbd_spec_parse(&s, ok[i].spec);

		ck_assert_msg(ret == 0, "%s: %d %s", ok[i].spec, ret, wc_errmsg());
		streq_or_null(s.pool, ok[i].pool, "pool", ok[i].spec);
		streq_or_null(s.ns, ok[i].ns, "namespace", ok[i].spec);
		streq_or_null(s.image, ok[i].image, "image", ok[i].spec);
		streq_or_null(s.snap, ok[i].snap, "snap", ok[i].spec);
		streq_or_null(s.conf, ok[i].conf, "conf", ok[i].spec);
		streq_or_null(s.id, ok[i].id, "id", ok[i].spec);
		ck_assert_msg(s.nopts == ok[i].nopts, "%s: %zu options", ok[i].spec, s.nopts);
		wc_rbd_spec_free(&s);
	}
}
END_TEST

START_TEST(spec_keeps_options_in_order)
{
	struct wc_rbd_spec s;
	char name[128];

	ck_assert_int_eq(wc_rbd_spec_parse(&s, "rbd:p/n/i:a=1:b=x\\:y:a=2"), 0);
	ck_assert_uint_eq(s.nopts, 3);
	ck_assert_str_eq(s.opts[0].key, "a");
	ck_assert_str_eq(s.opts[0].value, "1");
	ck_assert_str_eq(s.opts[1].key, "b");
	ck_assert_str_eq(s.opts[1].value, "x:y");
	ck_assert_str_eq(s.opts[2].value, "2");
	wc_rbd_spec_name(&s, name, sizeof(name));
	ck_assert_str_eq(name, "p/n/i");
	wc_rbd_spec_free(&s);

	ck_assert_int_eq(wc_rbd_spec_parse(&s, "p/i@snap"), 0);
	wc_rbd_spec_name(&s, name, sizeof(name));
	ck_assert_str_eq(name, "p/i@snap");
	wc_rbd_spec_free(&s);
	wc_rbd_spec_free(NULL);
}
END_TEST

START_TEST(spec_refuses_with_a_reason)
{
	static const struct { const char *spec, *why; } bad[] = {
		{ "", "no pool name" },
		{ "rbd:", "no pool name" },
		{ "rbd:pool", "no image name" },
		{ "rbd:pool:conf=/x", "no image name" },
		{ "rbd:pool@snap", "no image name" },
		{ "rbd:pool/", "no image name" },
		{ "rbd:/img", "no pool name" },
		{ "rbd:pool//img", "empty namespace" },
		{ "rbd:pool/ns/img/x", "too many '/'" },
		{ "rbd:pool/ns/", "no image name" },
		{ "rbd:pool/img@", "empty snapshot" },
		{ "rbd:pool/img@:id=x", "empty snapshot" },
		{ "rbd:pool/img:", "option 1 is empty" },
		{ "rbd:pool/img:id=a::conf=b", "option 2 is empty" },
		{ "rbd:pool/img:conf", "option 1 ('conf') is not key=value" },
		{ "rbd:pool/img:=x", "option 1 has no key" },
		{ "rbd:pool/img:id=a:conf=", "option 2 ('conf') has an empty value" },
		{ "rbd:pool/img\\", "backslash at the end" },
		{ "rbd:pool/img:conf=x\\", "backslash at the end" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct wc_rbd_spec s;
		int ret = wc_rbd_spec_parse(&s, bad[i].spec);

		ck_assert_msg(ret == -EINVAL, "%s: %d", bad[i].spec, ret);
		ck_assert_msg(strstr(wc_errmsg(), bad[i].why), "%s: '%s' lacks '%s'", bad[i].spec,
		              wc_errmsg(), bad[i].why);
		ck_assert_msg(strstr(wc_errmsg(), "expected [rbd:]pool"), "%s: %s", bad[i].spec,
		              wc_errmsg());
		ck_assert(s.pool == NULL && s.buf_ == NULL && s.opts == NULL);
	}
	ck_assert_int_eq(wc_rbd_spec_parse(&(struct wc_rbd_spec){ 0 }, NULL), -EINVAL);
}
END_TEST

START_TEST(spec_message_hides_options)
{
	struct wc_rbd_spec s;

	ck_assert_int_eq(wc_rbd_spec_parse(&s, "rbd:wc/img:key=AQSECRET:bogus"), -EINVAL);
	ck_assert_msg(strstr(wc_errmsg(), "'rbd:wc/img'"), "%s", wc_errmsg());
	ck_assert_msg(!strstr(wc_errmsg(), "SECRET"), "%s", wc_errmsg());
	ck_assert_msg(strstr(wc_errmsg(), "option 2 ('bogus')"), "%s", wc_errmsg());
}
END_TEST

#ifndef WC_HAVE_LIBRBD
START_TEST(open_without_librbd_says_how)
{
	struct wc_origin o;

	ck_assert_int_eq(wc_origin_open_rbd(&o, "rbd:wc/img"), -ENOTSUP);
	ck_assert(strstr(wc_errmsg(), "librbd-dev"));
	ck_assert_int_eq(wc_origin_open(&o, "rbd:wc/img"), -ENOTSUP);
}
END_TEST
#endif

static Suite *spec_suite(void)
{
	Suite *s = suite_create("rbd_spec");
	TCase *tc = tcase_create("spec");

	tcase_add_test(tc, spec_accepts_qemu_forms);
	tcase_add_test(tc, spec_keeps_options_in_order);
	tcase_add_test(tc, spec_refuses_with_a_reason);
	tcase_add_test(tc, spec_message_hides_options);
#ifndef WC_HAVE_LIBRBD
	tcase_add_test(tc, open_without_librbd_says_how);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return wc_test_main(spec_suite());
}
