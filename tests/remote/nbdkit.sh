# SPDX-License-Identifier: BSD-3-Clause
# nbdkit.sh -- sourced by the remote-origin scripts: tests/tap.sh, a
# scratch folder, and nbdkit servers on unix sockets that the EXIT trap stops.
# Needs no root and no kernel nbd: the cache reaches the server through
# libnbd.

set -u
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
builddir=${WC_TEST_BUILDDIR:-.}
# The NBD and RBD backends are modules: the build tree's (lib/local.am).
export WCACHE_MODULE_DIR=${WCACHE_MODULE_DIR:-$(cd "$builddir" && pwd)/lib/modules/.libs}
export PMEM2_FORCE_GRANULARITY=${PMEM2_FORCE_GRANULARITY:-CACHE_LINE}

# require_nbdkit PLUGIN...: skip unless nbdkit and these plugins are here.
require_nbdkit() {
	local p
	command -v nbdkit >/dev/null 2>&1 || skip_all "nbdkit not installed (apt-get install nbdkit)"
	for p in "$@"; do
		nbdkit --dump-plugin "$p" >/dev/null 2>&1 || skip_all "nbdkit plugin $p not installed"
	done
}

# scratch: $D under /dev/shm (caches, sockets), $V under /var/tmp (origin
# files on a disk file system).  Both go at exit, as do the servers.
SERVERS=
scratch() {
	D=$(mktemp -d /dev/shm/wc-remote-XXXXXX) || bail "no scratch folder in /dev/shm"
	V=$(mktemp -d /var/tmp/wc-remote-XXXXXX) || bail "no scratch folder in /var/tmp"
	trap cleanup EXIT
	trap 'exit 130' INT TERM
}

cleanup() {
	local rc=$? p
	for p in $SERVERS; do kill -KILL "$p" 2>/dev/null; done
	if [ -n "${KEEP:-}" ]; then echo "# kept $D $V"; else rm -rf "$D" "$V"; fi
	exit $rc
}

# serve NAME NBDKIT-ARGS...: nbdkit on $D/NAME.sock in the foreground of
# a background job (so that its pid is ours to signal); returns when it
# accepts connections (it writes the pid file then).  Sets URI.
serve() {
	local name=$1 i pid
	shift
	rm -f "$D/$name.sock" "$D/$name.pid"
	nbdkit -f --exit-with-parent -U "$D/$name.sock" -P "$D/$name.pid" "$@" \
		>>"$D/$name.log" 2>&1 &
	pid=$!
	# Not a job of ours any more: bash would report its SIGKILL on stderr.
	disown "$pid"
	SERVERS="$SERVERS $pid"
	for i in $(seq 300); do
		[ -s "$D/$name.pid" ] && break
		kill -0 "$pid" 2>/dev/null || { sed 's/^/#   /' "$D/$name.log" | tail -5; return 1; }
		sleep 0.02
	done
	[ -s "$D/$name.pid" ] || return 1
	URI="nbd+unix:///?socket=$D/$name.sock"
}

# unserve NAME [SIGNAL]: stop the server NAME, TERM by default.
unserve() {
	local pid
	pid=$(cat "$D/$1.pid" 2>/dev/null) || return 0
	kill -"${2:-TERM}" "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
	rm -f "$D/$1.pid"
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
