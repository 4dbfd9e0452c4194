#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# rbd-identity.sh -- a cache knows its origin (tests/identity-lib.sh) when
# the origin is an RBD image: three images, X, Y and a larger Y, read back
# with `rbd export`, X grown with `rbd resize`.  An image is known by its
# cluster, pool and image ids, so X renamed (`rbd rename`) is still X.
# As TAP; brings up a cluster unless WC_CEPH_DIR names one (tests/ceph/lib.sh).
. "$(dirname "$0")/lib.sh"
require_ceph
builddir=${WC_TEST_BUILDDIR:-.}
grep -q "define WC_HAVE_LIBRBD 1" "$builddir/config.h" 2>/dev/null ||
	skip_all "this libwcache was built without librbd"
scratch
ceph_cluster
. "$(dirname "$0")/../identity-lib.sh"

spec_x=$(ceph_image "idx-$$" 16M)
spec_y=$(ceph_image "idy-$$" 16M)
spec_ybig=$(ceph_image "idybig-$$" 32M)
read_image() {
	local name
	case $1 in x) name=idx ;; y) name=idy ;; ybig) name=idybig ;; esac
	rm -f "$D/export.img"
	ceph_rbd export --no-progress "$WC_CEPH_POOL/$name-$$" "$D/export.img" >/dev/null 2>&1 &&
		cat "$D/export.img"
}
grow_image() { ceph_rbd resize --no-progress --size "$(($1 / 1048576))M" "$WC_CEPH_POOL/idx-$$"; }
identity_suite "$spec_x" "$spec_y" "$spec_ybig" read_image grow_image
check "wcctl status names the image by its ids" \
	grep -Eq "origin id .*RBD image rbd:$WC_CEPH_POOL/idy-$$ \(cluster [-0-9a-f]+ pool [0-9]+ image [0-9a-f]+," \
	<("$W" status "$ID_CACHE" "$spec_y")

# Renamed, the image keeps its id: the same origin under a new name.
check "a dirty block in the cache of Y" "$H" "$ID_CACHE" "$spec_y" 3 </dev/null
ceph_rbd rename "$WC_CEPH_POOL/idy-$$" "$WC_CEPH_POOL/idy-renamed-$$" >&2
echo "$WC_CEPH_POOL/idy-renamed-$$" >>"$D/ceph-images"
check "Y renamed is still the cache's origin" \
	"$W" writeback --quiet "$ID_CACHE" "${spec_y/idy-$$/idy-renamed-$$}"
finish
