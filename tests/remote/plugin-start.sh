#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# plugin-start.sh -- the nbdkit plugin fails before nbdkit forks into the
# background: in daemon mode (no -f), a cache that is missing, in use,
# damaged, or made for another origin, a stats file in a folder that does
# not exist, and create=true without a size make nbdkit exit non-zero with
# the reason on stderr, and leave no server, socket or cache file behind.
# A good cache starts in daemon mode and serves.  As TAP.
. "$(dirname "$0")/nbdkit.sh"
PLUGIN=$builddir/nbdkit/.libs/nbdkit-wcache-plugin.so
W=$builddir/tools/wcctl/wcctl
H=$builddir/tests/hold_cache
command -v nbdkit >/dev/null 2>&1 || skip_all "nbdkit not installed"
[ -f "$PLUGIN" ] || skip_all "plugin not built"
[ -x "$W" ] && [ -x "$H" ] || bail "wcctl or hold_cache not built"
if ldd "$PLUGIN" "$builddir/lib/.libs/libwcache.so" 2>/dev/null | grep -Eq 'lib(a|ub|t)san'; then
	skip_all "sanitized build: nbdkit cannot load a plugin that needs the sanitizer runtime"
fi
export LD_LIBRARY_PATH=$builddir/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
scratch

# daemon_fails DESCRIPTION PATTERN ARGS...: nbdkit in daemon mode exits
# non-zero, says PATTERN on stderr, and leaves no pid file or socket.
daemon_fails() {
	local desc=$1 pat=$2
	shift 2
	rm -f "$D/d.sock" "$D/d.pid"
	if nbdkit -U "$D/d.sock" -P "$D/d.pid" "$PLUGIN" "$@" >"$D/d.out" 2>"$D/d.err"; then
		not_ok "$desc: nbdkit exited 0"
		[ -s "$D/d.pid" ] && kill "$(cat "$D/d.pid")" 2>/dev/null
		return
	fi
	if ! grep -Eq -- "$pat" "$D/d.err"; then
		not_ok "$desc: stderr lacks /$pat/"; sed 's/^/#   /' "$D/d.err" | tail -5; return
	fi
	if [ -e "$D/d.pid" ] || [ -e "$D/d.sock" ]; then
		not_ok "$desc: a pid file or socket was left"; return
	fi
	ok "$desc"
}

truncate -s 64M "$V/a" "$V/b"
daemon_fails "a missing cache" "/missing: open: No such file" cache="$D/missing" origin="$V/a"
check "a cache for A" "$W" create "$D/c" "$V/a" --size 16M
check "with a dirty block" "$H" "$D/c" "$V/a" 4 </dev/null
daemon_fails "a cache made for another origin" "holds 1 dirty blocks of origin file $V/a.*another origin" \
	cache="$D/c" origin="$V/b"
coproc HOLD { "$H" "$D/c" "$V/a"; }
read -r ready _ <&"${HOLD[0]}"
[ "$ready" = ready ] || bail "hold_cache did not start"
daemon_fails "a cache in use" "in use by pid [0-9]+ \(hold_cache\)" cache="$D/c" origin="$V/a"
exec {HOLD[1]}>&-
wait "$HOLD_PID"
cp "$D/c" "$D/damaged" && printf 'Z' | dd of="$D/damaged" bs=1 seek=40 conv=notrunc 2>/dev/null
daemon_fails "a damaged cache" "CRC32C mismatch" cache="$D/damaged" origin="$V/a"
daemon_fails "stats= in a folder that does not exist" "stats=$D/nowhere/s.json: the folder" \
	cache="$D/c" origin="$V/a" stats="$D/nowhere/s.json"
daemon_fails "create=true without a size" "needs the size to make it: config=cache_size" \
	cache="$D/new" origin="$V/a" create=true
check "and that left no file" test ! -e "$D/new"
truncate -s 1000000 "$V/odd"
daemon_fails "create=true that fails" "not a positive multiple of the block size" \
	cache="$D/new" origin="$V/odd" create=true config=cache_size=16M
check "and that left no file" test ! -e "$D/new"

# The good case, in daemon mode too: it serves, and the cache it opened
# after the fork holds the block written before.
rm -f "$D/d.sock" "$D/d.pid"
check "daemon mode serves a good cache" nbdkit -U "$D/d.sock" -P "$D/d.pid" "$PLUGIN" \
	cache="$D/c" origin="$V/a"
for _ in $(seq 250); do [ -S "$D/d.sock" ] && break; sleep 0.02; done
if command -v nbdinfo >/dev/null 2>&1; then
	check "its export is the origin's size" \
		grep -q "export-size: 67108864" <(nbdinfo "nbd+unix:///?socket=$D/d.sock")
fi
[ -s "$D/d.pid" ] && pid=$(cat "$D/d.pid") && kill "$pid" && while kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
check "closed cleanly, the block still dirty" grep -q "1 dirty blocks" <("$W" status "$D/c" "$V/a")
finish
