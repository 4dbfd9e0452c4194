# SPDX-License-Identifier: BSD-3-Clause
# tap.sh -- sourced by the shell tests' own libraries (tests/nbd/lib.sh,
# tests/remote/nbdkit.sh, tests/ceph/lib.sh), so that every script speaks
# TAP the same way: ok and not_ok count the results, check turns a
# command's status into one, note and bail are TAP's comment and bail out,
# finish prints the plan last and exits with the verdict, and skip_all
# skips the whole script.  check keeps its command's output in $D, the
# scratch folder the sourcing library makes.

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
note() { echo "# $*"; }
bail() { echo "Bail out! $*"; exit 1; }
finish() { echo "1..$n"; [ "$failed" -eq 0 ]; exit $?; }

# The plan "1..0 # SKIP why" is the skip, on exit 0: to automake's TAP
# driver an exit 77 after a plan is an error, not a skip.
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

# check DESCRIPTION COMMAND...: one TAP line for COMMAND's status, with the
# tail of its output as comments when it fails.  COMMAND runs in this
# shell, not a subshell, so what it sets (a mount point, a pid) stays set.
check() {
	local desc=$1
	shift
	if "$@" >"$D/check.out" 2>&1; then ok "$desc"; else
		not_ok "$desc"; tail -20 "$D/check.out" | sed 's/^/#   /'; fi
}
