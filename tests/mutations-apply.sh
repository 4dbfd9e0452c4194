#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# mutations-apply.sh -- every mutation kept in tests/crash-regressions still
# applies to the tree.  Each patch breaks one ordering the block medium's
# protocol relies on, and tests/crashsim/run-mutations shows the sweep
# catches it; a patch that no longer applies proves nothing, and it went
# stale once unnoticed when the record write moved.  Here only the patch's
# fit is checked (fast, no rebuild); run-mutations does the rest.
set -u
top=${WC_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
. "$top/tests/tap.sh"
cd "$top" || bail "no source tree at $top"
command -v git >/dev/null 2>&1 || skip_all "git is not installed (git apply checks the patches)"

found=0
for p in tests/crash-regressions/*/mutation.patch; do
	[ -f "$p" ] || continue
	found=1
	# git apply works outside a repository too (a distcheck tree) and
	# --check writes nothing.  Inside a repository it takes paths from the
	# repository's root and ignores those outside the current folder: the
	# ceiling keeps it from finding a repository above the tree (distcheck
	# unpacks into a clone's build folder).
	check "$(basename "$(dirname "$p")"): the mutation applies" \
		env GIT_CEILING_DIRECTORIES="$(dirname "$top")" git apply --check "$p"
done
[ "$found" -eq 1 ] || not_ok "no mutation patch under tests/crash-regressions"
finish
