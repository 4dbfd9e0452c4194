#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-identity.sh -- a cache knows its origin (tests/identity-lib.sh) when
# the origin is an NBD export: three nbdkit servers (file plugin, unix
# sockets), X, Y and a larger Y.  An export is known by its URI alone
# ("name only"): another server is another origin.  As TAP.
. "$(dirname "$0")/nbdkit.sh"
require_nbdkit file
grep -q "define WC_HAVE_LIBNBD 1" "$builddir/config.h" 2>/dev/null ||
	skip_all "this libwcache was built without libnbd"
scratch
. "$(dirname "$0")/../identity-lib.sh"

truncate -s 16M "$V/x" "$V/y" && truncate -s 32M "$V/ybig" || bail "export files"
for e in x y ybig; do
	serve "$e" file "$V/$e" || bail "nbdkit for $e did not start"
	eval "uri_$e=\$URI"
done
read_export() { cat "$V/$1"; }
# The file plugin sizes the export at each connection: the same URI, grown.
grow_export() { truncate -s "$1" "$V/x"; }
# shellcheck disable=SC2154
identity_suite "$uri_x" "$uri_y" "$uri_ybig" read_export grow_export
check "wcctl status names the export by its URI alone" \
	grep -q "origin id .*NBD export $uri_y (name only" <("$W" status "$ID_CACHE" "$uri_y")
finish
