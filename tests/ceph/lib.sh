# SPDX-License-Identifier: BSD-3-Clause
# lib.sh -- sourced by the shell tests in tests/ceph/: tests/tap.sh, a
# scratch folder, and a Ceph cluster:
#   WC_CEPH_DIR set: that one (tests/ceph/up on it: reused when up, its
#     daemons restarted when not), never taken down here;
#   else a private one in /tmp/wc-ceph-test-XXXXXX, brought up by
#     ceph_cluster and taken down by the EXIT trap.
# Without Ceph installed the test is skipped ("1..0 # SKIP why", exit 0).

set -u
builddir=${WC_TEST_BUILDDIR:-.}
# The NBD and RBD backends are modules: the build tree's (lib/local.am).
export WCACHE_MODULE_DIR=${WCACHE_MODULE_DIR:-$(cd "$builddir" && pwd)/lib/modules/.libs}
CEPH_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PMEM2_FORCE_GRANULARITY=${PMEM2_FORCE_GRANULARITY:-CACHE_LINE}
# shellcheck source=tests/tap.sh
. "$CEPH_TESTS/../tap.sh"

require_ceph() {
	local c
	for c in ceph-mon ceph-mgr ceph-osd rbd; do
		command -v "$c" >/dev/null 2>&1 ||
			skip_all "$c not installed (tools/install-deps installs Ceph)"
	done
}

CEPH_OWNED=
D=
cleanup() {
	local rc=$?
	# ceph_image runs in $(...): it notes its images in a file, not a variable.
	[ -n "$D" ] && [ -f "$D/ceph-images" ] && while read -r i; do
		ceph_rbd rm --no-progress "$i" >/dev/null 2>&1
	done <"$D/ceph-images"
	if [ -n "$CEPH_OWNED" ]; then "$CEPH_TESTS/down" "$CEPH_OWNED" >&2; fi
	if [ -n "$D" ]; then
		if [ -n "${KEEP:-}" ]; then echo "# kept $D"; else rm -rf "$D"; fi
	fi
	exit $rc
}

# scratch: $D under /dev/shm (caches, exports), removed at exit.
scratch() {
	D=$(mktemp -d /dev/shm/wc-ceph-test-XXXXXX) || bail "no scratch folder in /dev/shm"
	trap cleanup EXIT
	trap 'exit 130' INT TERM
}

# ceph_cluster: the cluster (see the head), its settings in WC_CEPH_CONF,
# WC_CEPH_ID, WC_CEPH_POOL.  Its messages go to stderr (the log), not to
# the TAP stream.
ceph_cluster() {
	local dir=${WC_CEPH_DIR:-}
	if [ -z "$dir" ]; then
		dir=$(mktemp -d /tmp/wc-ceph-test-XXXXXX) || bail "mktemp failed"
		CEPH_OWNED=$dir
	fi
	"$CEPH_TESTS/up" "$dir" >&2 || bail "tests/ceph/up $dir failed (its messages are in the log)"
	# shellcheck disable=SC1091
	. "$dir/env"
	note "ceph cluster $dir ($([ -n "$CEPH_OWNED" ] && echo private || echo given))"
}

ceph_rbd() { timeout 120 rbd -c "$WC_CEPH_CONF" --id "$WC_CEPH_ID" "$@"; }

# ceph_image NAME SIZE: a fresh image, removed at exit; prints its spec.
# (Called as $(ceph_image ...): what it notes for the exit goes to a file.)
ceph_image() {
	ceph_rbd rm --no-progress "$WC_CEPH_POOL/$1" >/dev/null 2>&1
	ceph_rbd create --size "$2" "$WC_CEPH_POOL/$1" >&2 || bail "rbd create $WC_CEPH_POOL/$1 failed"
	echo "$WC_CEPH_POOL/$1" >>"$D/ceph-images"
	echo "rbd:$WC_CEPH_POOL/$1:conf=$WC_CEPH_CONF:id=$WC_CEPH_ID"
}
