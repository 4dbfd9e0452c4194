#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# identity-local.sh -- a cache knows its origin (tests/identity-lib.sh), for
# origins that are files (on /var/tmp: a disk file system that keeps the
# origin's tag in an extended attribute) and block devices (loop devices
# over such files: the backing file is the identity).  As TAP.
set -u
. "$(dirname "$0")/tap.sh"
builddir=${WC_TEST_BUILDDIR:-.}
export PMEM2_FORCE_GRANULARITY=${PMEM2_FORCE_GRANULARITY:-CACHE_LINE}
D=$(mktemp -d /dev/shm/wc-identity-XXXXXX) || bail "no scratch folder in /dev/shm"
V=$(mktemp -d /var/tmp/wc-identity-XXXXXX) || bail "no scratch folder in /var/tmp"
LOOPS=
cleanup() {
	local rc=$? l
	for l in $LOOPS; do losetup -d "$l" 2>/dev/null; done
	rm -rf "$D" "$V"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$(dirname "$0")/identity-lib.sh"

truncate -s 16M "$V/x" "$V/y" && truncate -s 32M "$V/ybig" || bail "origin files"

note "files"
read_file() { cat "$V/$1"; }
grow_file() { truncate -s "$1" "$V/x"; }
identity_suite "$V/x" "$V/y" "$V/ybig" read_file grow_file

# The same origin renamed is still the cache's; a new file under the old
# name (the old one deleted) is not.
rm -f "$V/x" "$V/y" "$V/ybig" && truncate -s 16M "$V/x" "$V/y" "$V/ybig"
check "a cache for a file" "$W" create "$D/r.cache" "$V/x" --size 8M
check "a dirty block" "$H" "$D/r.cache" "$V/x" 3 </dev/null
mv "$V/x" "$V/x.moved"
check "the file renamed is still its origin" "$W" status "$D/r.cache" "$V/x.moved"
mv "$V/x.moved" "$V/x"
cp "$V/x" "$V/x.copy" && rm "$V/x" && cp "$V/x.copy" "$V/x"
check "a copy under the old name is another origin" \
	grep -q "another origin" <("$W" status "$D/r.cache" "$V/x" 2>&1)
check "set-origin --force binds it, naming where the dirty blocks go" \
	grep -q "will be written back into $V/x" <("$W" set-origin --force "$D/r.cache" "$V/x" 2>&1)
check "and it is served" "$W" writeback --quiet "$D/r.cache" "$V/x"

note "block devices (loop devices)"
if ! command -v losetup >/dev/null 2>&1 || ! lx=$(losetup -f --show "$V/x" 2>/dev/null); then
	ok "block devices # SKIP no loop device here"
	finish
fi
LOOPS=$lx
ly=$(losetup -f --show "$V/y") && LOOPS="$LOOPS $ly"
lybig=$(losetup -f --show "$V/ybig") && LOOPS="$LOOPS $lybig"
read_dev() { case $1 in x) cat "$V/x" ;; y) cat "$V/y" ;; ybig) cat "$V/ybig" ;; esac; }
grow_dev() { truncate -s "$1" "$V/x" && losetup -c "$lx"; }
identity_suite "$lx" "$ly" "$lybig" read_dev grow_dev

# The device under another name (here: the same file behind another loop
# device) is the same origin.
check "a cache for a loop device" "$W" create "$D/l.cache" "$lx" --size 8M
check "a dirty block" "$H" "$D/l.cache" "$lx" 3 </dev/null
losetup -d "$lx"
lx2=$(losetup -f --show "$V/x") && LOOPS="$LOOPS $lx2"
check "the same backing file behind another loop device is the same origin" \
	"$W" writeback --quiet "$D/l.cache" "$lx2"
finish
