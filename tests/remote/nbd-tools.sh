#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-tools.sh -- every tool takes an NBD URI as its origin, as TAP:
# wcctl create/status/writeback, the fio engine's wc_origin= (its data then
# verified on the export by fio's own nbd engine), the nbdkit plugin's
# origin= (a cache served over NBD in front of an NBD export), and wcbench
# writeback --origin.  The origin is nbdkit's memory plugin on a unix
# socket.  Parts whose tool was not built (or, for fio and the plugin,
# that cannot load a sanitized library) are skipped with a note.
. "$(dirname "$0")/nbdkit.sh"
WCCTL=$builddir/tools/wcctl/wcctl
WCBENCH=$builddir/tools/wcbench/wcbench
ENGINE=$builddir/fio/.libs/libwcache-fio.so
PLUGIN=$builddir/nbdkit/.libs/nbdkit-wcache-plugin.so
[ -x "$WCCTL" ] || skip_all "wcctl not built"
require_nbdkit memory
command -v nbdcopy >/dev/null 2>&1 || skip_all "nbdcopy not installed (apt-get install libnbd-bin)"
scratch
export LD_LIBRARY_PATH=$builddir/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# fio and nbdkit are not sanitized: they cannot load a library that needs
# the sanitizer runtime.
sanitized=
ldd "$builddir/lib/.libs/libwcache.so" 2>/dev/null | grep -Eq 'lib(a|ub|t)san' && sanitized=1

serve origin memory 64M || bail "nbdkit memory did not start"
ORIGIN=$URI
if ! "$WCCTL" create "$D/cache" "$ORIGIN" --size 16M >"$D/create.out" 2>&1; then
	grep -q 'built without libnbd' "$D/create.out" && skip_all "this libwcache was built without libnbd"
	not_ok "wcctl create CACHE URI"; sed 's/^/#   /' "$D/create.out"
else
	ok "wcctl create CACHE URI"
fi
check "wcctl status: the origin mode names the URI" \
	sh -c '"$1" status "$2" "$3" | grep -F "origin mode    nbd $3 ("' - "$WCCTL" "$D/cache" "$ORIGIN"

# fio: random writes through the cache, verified through it; written back;
# then verified again on the export alone by fio's nbd engine.
FIO_JOB="--name=t --rw=randwrite --bs=4k --size=8m --verify=crc32c --randseed=42"
if [ -n "$sanitized" ]; then note "fio engine: skipped in a sanitized build"
elif ! command -v fio >/dev/null 2>&1 || [ ! -f "$ENGINE" ]; then
	note "fio engine: skipped (fio or fio/.libs/libwcache-fio.so missing)"
else
	# shellcheck disable=SC2086
	check "fio wc_origin=URI: writes through the cache, verified" \
		fio $FIO_JOB --thread --ioengine="external:$ENGINE" --wc_cache="$D/cache" \
		--wc_origin="$ORIGIN" --do_verify=1
fi
check "wcctl writeback CACHE URI" "$WCCTL" writeback "$D/cache" "$ORIGIN" --quiet
if [ -z "$sanitized" ] && command -v fio >/dev/null 2>&1 && [ -f "$ENGINE" ] &&
	fio --enghelp 2>/dev/null | grep -qw nbd; then
	# shellcheck disable=SC2086
	check "the export alone holds what fio wrote (fio's nbd engine, verify_only)" \
		fio $FIO_JOB --ioengine=nbd --uri="$ORIGIN" --verify_only
fi

# The plugin: a cache served over NBD, in front of the NBD export.
if [ -n "$sanitized" ]; then note "nbdkit plugin: skipped in a sanitized build"
elif [ ! -f "$PLUGIN" ]; then note "nbdkit plugin: not built"
else
	head -c 4M /dev/urandom >"$D/data"
	if serve front "$PLUGIN" cache="$D/cache2" origin="$ORIGIN" create=true \
		config=cache_size=8M; then
		ok "nbdkit wcache origin=URI starts"
		check "nbdcopy into the plugin" nbdcopy "$D/data" "$URI"
		check "the plugin stops on SIGTERM" unserve front TERM
		check "wcctl writeback of the plugin's cache" "$WCCTL" writeback "$D/cache2" "$ORIGIN" --quiet
		check "the export holds the data" sh -c \
			'nbdcopy "$1" - | head -c 4194304 | cmp - "$2"' - "$ORIGIN" "$D/data"
	else
		not_ok "nbdkit wcache origin=URI starts"
	fi
fi

if [ -x "$WCBENCH" ]; then
	check "wcbench writeback --origin URI" "$WCBENCH" writeback --origin "$ORIGIN" \
		--cache "$D/bench.cache" --cache-size 8M --working-set 32M --runs 1 --no-latency --quiet
else
	note "wcbench: not built"
fi
unserve origin
finish
