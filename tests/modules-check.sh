#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# modules-check.sh -- what the origin backends as modules buy, checked on
# the build tree (lib/origin/module.h, docs/ORIGINS.md):
#  - libwcache.so needs no librbd, librados or libnbd, and exports nothing
#    beyond lib/libwcache.map;
#  - each module exports its entry point alone and needs its own library;
#  - an empty program linked with libwcache is within 3 MiB of resident
#    memory of the same program without it (VmRSS once main() runs);
#  - libwcache.a holds no backend, and a program linked with it loads the
#    modules: an NBD name reaches libnbd, and with the modules' folder
#    empty, the error names the module and the package.
set -u
top=${WC_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${WC_TEST_BUILDDIR:-.}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
. "$top/tests/tap.sh"

so=$builddir/lib/.libs/libwcache.so
mods=$builddir/lib/modules/.libs
[ -f "$so" ] || bail "no $so: build first"
command -v readelf >/dev/null || skip_all "readelf not installed (binutils)"

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

deps=$(needed "$so")
note "libwcache.so needs: $(echo $deps)"
if ! echo "$deps" | grep -q '^libpmem2\.so'; then
	not_ok "libwcache.so's NEEDED entries read (libpmem2 among them)"
elif echo "$deps" | grep -Eq '^lib(rbd|rados|nbd)\.so'; then
	not_ok "libwcache.so needs no librbd, librados, libnbd"
else
	ok "libwcache.so needs no librbd, librados, libnbd"
fi

# Every global symbol it defines is one the map exports: no internal
# helper leaked for the modules' sake.
sed -n '/global:/,/}/p' "$top/lib/libwcache.map" | sed 's,/\*.*\*/,,; s/global://; s/local:.*//' |
	tr -s ' \t;}' '\n' | grep -E '^wc_' | sort -u >"$D/map"
readelf --dyn-syms -W "$so" | awk '$5 == "GLOBAL" && $7 != "UND" && $8 !~ /^WCACHE_/ { sub(/@.*/, "", $8); print $8 }' |
	sort -u >"$D/exported"
extra=$(comm -23 "$D/exported" "$D/map")
if [ ! -s "$D/exported" ]; then not_ok "libwcache.so's exported symbols read"
elif [ -z "$extra" ]; then ok "libwcache.so exports only lib/libwcache.map's symbols"
else not_ok "libwcache.so exports symbols outside lib/libwcache.map"; echo "$extra" | sed 's/^/#   /'; fi

for m in nbd:libnbd rbd:librbd; do
	name=${m%%:*} lib=${m#*:} mod=$mods/wcache-${m%%:*}.so
	if [ ! -f "$mod" ]; then
		note "wcache-$name.so not built (configured without $lib)"
		continue
	fi
	syms=$(readelf --dyn-syms -W "$mod" | awk '$5 == "GLOBAL" && $7 != "UND" { print $8 }' | sort -u | paste -sd' ')
	if [ "$syms" = wc_module_entry ]; then ok "wcache-$name.so exports wc_module_entry alone"
	else not_ok "wcache-$name.so exports wc_module_entry alone (it exports: $syms)"; fi
	if needed "$mod" | grep -q "^$lib\\.so"; then ok "wcache-$name.so needs $lib"
	else not_ok "wcache-$name.so needs $lib"; fi
done

# Resident memory of an empty program, with and without the library.
if ldd "$so" 2>/dev/null | grep -Eq 'lib(a|ub|t)san'; then
	note "sanitized build: the runtime's own memory swamps the library's; see the plain build"
else
	rss() { # rss PROGRAM: its smallest VmRSS (KiB) of 5 runs, and what it maps
		local best= kib what
		for _ in 1 2 3 4 5; do
			read -r kib what < <("$1") || return 1
			if [ -z "$best" ] || [ "$kib" -lt "$best" ]; then best=$kib; fi
		done
		echo "$best $what"
	}
	plain=$(rss "$builddir/tests/modules/empty-plain") with=$(rss "$builddir/tests/modules/empty-wcache")
	note "VmRSS of an empty program: ${plain%% *} KiB without libwcache, ${with%% *} KiB with it"
	if [ "${with#* }" != libwcache ] || [ "${plain#* }" != - ]; then
		not_ok "the empty program with libwcache maps it, the other does not ($with / $plain)"
	elif [ $((${with%% *} - ${plain%% *})) -le 3072 ]; then
		ok "libwcache adds $((${with%% *} - ${plain%% *})) KiB to an empty program's VmRSS (at most 3072)"
	else
		not_ok "libwcache adds $((${with%% *} - ${plain%% *})) KiB to an empty program's VmRSS (at most 3072)"
	fi
fi

# The static library: built unless configured --disable-static.
a=$builddir/lib/.libs/libwcache.a
if [ ! -f "$a" ]; then
	note "no libwcache.a (configured --disable-static)"
	finish
fi
undef=$(nm "$a" 2>/dev/null | awk '$1 == "U" && $2 ~ /^(nbd_|rbd_|rados_)/' | sort -u | paste -sd' ')
if [ -z "$undef" ] && nm "$a" | grep -q ' T wc_module_get$'; then
	ok "libwcache.a holds the module loader and no backend"
else
	not_ok "libwcache.a holds the module loader and no backend (it calls: $undef)"
fi
prog=$builddir/tests/modules/static-open
real=$builddir/tests/modules/.libs/static-open
[ -f "$real" ] || real=$prog
if needed "$real" | grep -q '^libwcache\.so'; then
	not_ok "static-open has libwcache linked in (it needs libwcache.so)"
else
	ok "static-open has libwcache linked in"
fi
uri='nbd+unix:///?socket=/nonexistent/wcache-modules-check.sock'
mkdir "$D/empty"
out=$(WCACHE_MODULE_DIR=$D/empty "$prog" "$uri")
note "with no module: $out"
# -95: -ENOTSUP on Linux.
case $out in
"-95 "*"$D/empty/wcache-nbd.so"*"apt-get install"*) ok "libwcache.a without the NBD module: -ENOTSUP naming it and the package" ;;
*) not_ok "libwcache.a without the NBD module: -ENOTSUP naming it and the package" ;;
esac
if [ -f "$mods/wcache-nbd.so" ]; then
	out=$(WCACHE_MODULE_DIR=$mods "$prog" "$uri")
	note "with the module: $out"
	case $out in
	-95\ *) not_ok "libwcache.a loads the NBD module (the open reached libnbd)" ;;
	-*"origin nbd $uri"*) ok "libwcache.a loads the NBD module (the open reached libnbd)" ;;
	*) not_ok "libwcache.a loads the NBD module (the open reached libnbd)" ;;
	esac
fi
finish
