#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test-engine.sh -- the fio engine loaded by the installed fio (TAP output).
# Each check runs fio with the freshly built fio/.libs/libwcache-fio.so on
# files in a scratch folder under /dev/shm, and looks at fio's exit code,
# its messages and the cache's counters (wc_stats JSON).
set -u

build=${WC_TEST_BUILDDIR:-$(pwd)}
# The NBD and RBD backends are modules: the build tree's (lib/local.am).
export WCACHE_MODULE_DIR=${WCACHE_MODULE_DIR:-$build/lib/modules/.libs}
engine=$build/fio/.libs/libwcache-fio.so
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
	[ -f "$dir/out" ] && sed 's/^/# /' "$dir/out" | tail -15
}
check() { # check DESCRIPTION COMMAND...: ok if the command succeeds and
	# fio's output holds no sanitizer report (a run expected to fail must
	# fail for its own reason)
	local what=$1; shift
	rm -f "$dir/out"
	if "$@" && ! grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$dir/out" 2>/dev/null
	then ok "$what"; else not_ok "$what"; fi
}

if [ ! -f "$engine" ] || ! command -v fio >/dev/null; then
	echo "1..0 # SKIP no $engine or no fio"
	exit 0
fi
# A sanitizer build of the engine needs its runtime loaded first, and fio
# itself is not instrumented: preload the runtime, and ignore leaks (fio
# leaks its option strings at exit, which is not ours to fix).
san=$(ldd "$engine" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ { print $3 }' | tr '\n' ':')
if [ -n "$san" ]; then
	export LD_PRELOAD=${san%:}${LD_PRELOAD:+:$LD_PRELOAD}
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
export LD_LIBRARY_PATH=$build/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PMEM2_FORCE_GRANULARITY=CACHE_LINE

dir=$(mktemp -d /dev/shm/wcfio-test.XXXXXX) || { echo "1..0 # SKIP no /dev/shm"; exit 0; }
trap 'rm -rf "$dir"' EXIT
# fio writes verify state files (local-*-verify.state) into the working
# directory: keep them in the scratch folder.
cd "$dir" || exit 1
truncate -s 64M "$dir/origin"

engine_opts=(--thread "--ioengine=external:$engine" --filename=wcache
	"--wc_cache=$dir/cache" "--wc_origin=$dir/origin" "--wc_stats=$dir/stats.json")
runfio() { fio "$@" >"$dir/out" 2>&1; }
stat_of() { # the counter $1 of the last run's wc_stats file
	sed -n "s/^ *\"$1\": \\([0-9-]*\\),\$/\\1/p" "$dir/stats.json" 2>/dev/null
}

echo "1..13"

check "fio lists the engine's options" \
	bash -c "fio --enghelp='$engine' 2>&1 | grep -q '^wc_cache ' && fio --enghelp='$engine' | grep -q '^wc_stats '"

check "missing cache without wc_create=1 fails and says why" \
	bash -c "! fio --name=t ${engine_opts[*]} --rw=write --bs=4k --size=1m >'$dir/out' 2>&1 &&
		grep -q 'wcache: open cache $dir/cache' '$dir/out'"

check "wc_create=1 wc_cache_size=32m creates and formats the cache" \
	runfio --name=t "${engine_opts[@]}" --wc_create=1 --wc_cache_size=32m \
	--rw=write --bs=4k --size=4m
check "the cache file has the asked size" test "$(stat -c %s "$dir/cache")" -eq $((32 << 20))
check "fio saw the origin's size and every write counted" \
	test "$(stat_of size)" = $((64 << 20)) -a "$(stat_of writes)" = 1024

check "randtrim goes to wc_discard" runfio --name=t "${engine_opts[@]}" --rw=randtrim --bs=4k --size=1m
check "... 256 discards, 768 blocks still dirty" \
	test "$(stat_of discards)" = 256 -a "$(stat_of dirty_blocks)" = 768

check "sync=1 and fsync=4 run" runfio --name=t "${engine_opts[@]}" \
	--rw=randwrite --bs=4k --size=1m --sync=1 --fsync=4
# FUA commits each write; fsync=4 adds a wc_flush after every 4th write
# (fio issues 63 for 256 writes: none after the last).
check "... FUA commits every write, fsync reaches wc_flush" \
	test "$(stat_of commits)" -ge 256 -a "$(stat_of flushes)" -ge 63

check "a write the cache refuses fails fio with the library's message" \
	bash -c "! fio --name=t ${engine_opts[*]} --rw=write --bs=512 --size=64k >'$dir/out' 2>&1 &&
		grep -q 'wcache: write 512 bytes at offset 0: .*block size' '$dir/out'"

truncate -s 64M "$dir/other"
check "another origin is refused with the library's message" \
	bash -c "! fio --name=t ${engine_opts[*]/--wc_origin=$dir\/origin/--wc_origin=$dir/other} \
		--rw=write --bs=4k --size=64k >'$dir/out' 2>&1 &&
		grep -q 'another origin: refusing' '$dir/out'"

check "two forked jobs on one cache are refused" \
	bash -c "! fio --name=t ${engine_opts[*]/--thread/} --rw=write --bs=4k --size=1m --numjobs=2 \
		>'$dir/out' 2>&1 && grep -q 'set thread=1' '$dir/out'"

# Two threads on one cache, crc32c, more than the cache holds (write-back),
# then a second fio run verifies again after close + reopen.
vopts=(--name=v "${engine_opts[@]}" --rw=randwrite --bs=4k --numjobs=2 --size=24m
	--offset_increment=24m --verify=crc32c --verify_fatal=1)
check "verify=crc32c, 2 jobs, across write-back and a reopen" \
	bash -c "fio $(printf '%q ' "${vopts[@]}") --do_verify=1 --fsync=64 >'$dir/out' 2>&1 &&
		fio $(printf '%q ' "${vopts[@]}") --verify_only >>'$dir/out' 2>&1"

[ "$failed" -eq 0 ]
