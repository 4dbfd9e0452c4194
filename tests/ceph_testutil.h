/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ceph_testutil.h -- a Ceph cluster for a Check program, and images on it.
 *
 * ceph_test_cluster(), called from main() before the runner forks:
 *   - WC_CEPH_DIR set: that cluster (tests/ceph/up on it: reused when up,
 *     its daemons restarted when not); never taken down here;
 *   - else a private one in /tmp/wc-ceph-test-XXXXXX, brought up now and
 *     taken down when the program exits;
 *   - Ceph not installed: the program ends there, skipped
 *     (wc_test_skip_all).
 * Images are made and removed through librbd as the cluster's client.
 */
#ifndef WC_CEPH_TESTUTIL_H
#define WC_CEPH_TESTUTIL_H

#include <check.h>
#include <limits.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testmain.h"

struct ceph_cluster {
	char dir[PATH_MAX];
	char conf[PATH_MAX + 16];
	char id[64];
	char pool[64];
	char srcdir[PATH_MAX];
	bool owned;
	pid_t owner;
};

static struct ceph_cluster ceph_cl_;

static inline bool ceph_in_path_(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static inline void ceph_down_(void)
{
	char cmd[3 * PATH_MAX];

	if (!ceph_cl_.owned || getpid() != ceph_cl_.owner)
		return;
	snprintf(cmd, sizeof(cmd), "'%s/tests/ceph/down' '%s' >&2", ceph_cl_.srcdir, ceph_cl_.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: %s failed\n", cmd);
}

/* KEY=value from the env file tests/ceph/up writes. */
static inline void ceph_env_get_(const char *file, const char *key, char *out, size_t len)
{
	char line[PATH_MAX + 64];
	size_t klen = strlen(key);
	FILE *f = fopen(file, "r");

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%s", line + klen + 1);
		}
	}
	fclose(f);
}

static inline const struct ceph_cluster *ceph_test_cluster(void)
{
	const char *dir = getenv("WC_CEPH_DIR"), *src = getenv("WC_TEST_SRCDIR");
	char cmd[3 * PATH_MAX], env[PATH_MAX + 8];

	if (!ceph_in_path_("ceph-mon") || !ceph_in_path_("ceph-osd") || !ceph_in_path_("ceph-mgr"))
		exit(wc_test_skip_all(
			"Ceph not installed (tools/install-deps installs ceph-mon, ceph-mgr, ceph-osd)"));
	snprintf(ceph_cl_.srcdir, sizeof(ceph_cl_.srcdir), "%s", src && *src ? src : ".");
	if (dir && *dir) {
		snprintf(ceph_cl_.dir, sizeof(ceph_cl_.dir), "%s", dir);
	} else {
		snprintf(ceph_cl_.dir, sizeof(ceph_cl_.dir), "/tmp/wc-ceph-test-XXXXXX");
		if (!mkdtemp(ceph_cl_.dir)) {
			printf("Bail out! mkdtemp %s failed\n", ceph_cl_.dir);
			exit(1);
		}
		ceph_cl_.owned = true;
		ceph_cl_.owner = getpid();
		atexit(ceph_down_);
	}
	/* Its output goes to stderr: stdout is the TAP stream. */
	snprintf(cmd, sizeof(cmd), "'%s/tests/ceph/up' '%s' >&2", ceph_cl_.srcdir, ceph_cl_.dir);
	if (system(cmd) != 0) {
		printf("Bail out! tests/ceph/up %s failed (its messages are in the test's log)\n",
		       ceph_cl_.dir);
		exit(1);
	}
	snprintf(env, sizeof(env), "%s/env", ceph_cl_.dir);
	ceph_env_get_(env, "WC_CEPH_CONF", ceph_cl_.conf, sizeof(ceph_cl_.conf));
	ceph_env_get_(env, "WC_CEPH_ID", ceph_cl_.id, sizeof(ceph_cl_.id));
	ceph_env_get_(env, "WC_CEPH_POOL", ceph_cl_.pool, sizeof(ceph_cl_.pool));
	if (!ceph_cl_.conf[0] || !ceph_cl_.id[0] || !ceph_cl_.pool[0]) {
		printf("Bail out! %s lacks WC_CEPH_CONF, WC_CEPH_ID or WC_CEPH_POOL\n", env);
		exit(1);
	}
	fprintf(stderr, "# ceph cluster %s (%s)\n", ceph_cl_.dir, ceph_cl_.owned ? "private" : "given");
	return &ceph_cl_;
}

static inline const char *ceph_test_cluster_pool(void)
{
	return ceph_cl_.pool;
}

/* "rbd:POOL/NAME:conf=CONF:id=ID" */
static inline char *ceph_spec(char *buf, size_t len, const char *image)
{
	snprintf(buf, len, "rbd:%s/%s:conf=%s:id=%s", ceph_cl_.pool, image, ceph_cl_.conf,
	         ceph_cl_.id);
	return buf;
}

/* A unique image name for this process and `tag`. */
static inline char *ceph_image_name(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "chk-%d-%s", (int)getpid(), tag);
	return buf;
}

struct ceph_conn {
	rados_t cluster;
	rados_ioctx_t io;
};

static inline void ceph_connect(struct ceph_conn *c)
{
	int ret = rados_create(&c->cluster, ceph_cl_.id);

	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(rados_conf_read_file(c->cluster, ceph_cl_.conf), 0);
	ck_assert_int_eq(rados_conf_set(c->cluster, "client_mount_timeout", "30"), 0);
	ret = rados_connect(c->cluster);
	ck_assert_msg(ret == 0, "rados_connect %s: %s", ceph_cl_.conf, strerror(-ret));
	ret = rados_ioctx_create(c->cluster, ceph_cl_.pool, &c->io);
	ck_assert_msg(ret == 0, "pool %s: %s", ceph_cl_.pool, strerror(-ret));
}

static inline void ceph_disconnect(struct ceph_conn *c)
{
	rados_ioctx_destroy(c->io);
	rados_shutdown(c->cluster);
}

/* Create (replacing any leftover of the same name) an image of `size`. */
static inline void ceph_image_create(const char *name, uint64_t size)
{
	struct ceph_conn c;
	int order = 22, ret;

	ceph_connect(&c);
	rbd_remove(c.io, name);
	ret = rbd_create2(c.io, name, size,
	                  RBD_FEATURE_LAYERING | RBD_FEATURE_EXCLUSIVE_LOCK |
	                  RBD_FEATURE_OBJECT_MAP | RBD_FEATURE_FAST_DIFF, &order);
	ck_assert_msg(ret == 0, "rbd_create2 %s: %s", name, strerror(-ret));
	ceph_disconnect(&c);
}

static inline void ceph_image_remove(const char *name)
{
	struct ceph_conn c;

	ceph_connect(&c);
	rbd_remove(c.io, name);
	ceph_disconnect(&c);
}

static inline void ceph_image_resize(const char *name, uint64_t size)
{
	struct ceph_conn c;
	rbd_image_t img;

	ceph_connect(&c);
	ck_assert_int_eq(rbd_open(c.io, name, &img, NULL), 0);
	ck_assert_int_eq(rbd_resize(img, size), 0);
	rbd_close(img);
	ceph_disconnect(&c);
}

#endif
