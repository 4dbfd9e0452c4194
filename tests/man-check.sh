#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# man-check.sh -- the man pages held to the header and the release, so that
# they cannot fall behind: every function and function-like macro that
# include/wcache.h declares is in libwcache(3)'s SYNOPSIS and described in
# its body (in bold, as a man page names what it describes), everything in
# the SYNOPSIS is declared in the header, and the pages the build makes
# (man/, from docs/man/ and nbdkit/ with the version put in) carry the
# release that configure was given.  A function added without its
# documentation fails here, naming it.
set -u
top=${WC_TEST_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${WC_TEST_BUILDDIR:-$top}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
. "$top/tests/tap.sh"

header=$top/include/wcache.h
page=$top/docs/man/libwcache.3
[ -r "$header" ] || bail "no header at $header"
[ -r "$page" ] || bail "no man page at $page"
command -v perl >/dev/null || bail "perl not found"

# Functions and function-like macros the header declares, one a line.
# Comments go first (they name functions in prose); the C++ guard's brace
# is not a block; a top-level declaration is a statement without a brace
# whose first parenthesis follows its wc_ name (a struct's function
# pointers and a typedef of a pointer to a function are neither).
perl -0777 -ne '
	s{/\*.*?\*/}{ }gs;
	s{//[^\n]*}{}g;
	s{#ifdef __cplusplus.*?#endif}{}gs;
	my %seen;
	while (/^[ \t]*#[ \t]*define[ \t]+(wc_\w+)\(/mg) { $seen{$1} = 1; }
	s{^[ \t]*#[^\n]*}{}mg;
	my ($depth, $stmt) = (0, "");
	for my $ch (split //) {
		$depth++ if $ch eq "{";
		$depth-- if $ch eq "}";
		$stmt .= $ch;
		next unless $depth == 0 && ($ch eq ";" || $ch eq "}");
		if ($stmt !~ /[{}]/ && $stmt !~ /^\s*typedef\b/ &&
		    $stmt =~ /^[^(]*?\b(wc_\w+)\s*\(/) {
			$seen{$1} = 1;
		}
		$stmt = "";
	}
	print "$_\n" for sort keys %seen;
' "$header" >"$D/header" || bail "could not read $header"
[ -s "$D/header" ] || bail "found no function in $header"

# The SYNOPSIS: each name written as a call, with the escapes of troff gone.
awk '/^\.SH/ { in_syn = ($2 == "SYNOPSIS"); next } in_syn' "$page" |
	sed 's/\\-/-/g; s/\\f[BIRP]//g' | grep -o 'wc_[A-Za-z0-9_]*(' | tr -d '(' |
	sort -u >"$D/synopsis"
# The body: everything after the SYNOPSIS.
awk '/^\.SH/ { if (in_syn) after = 1; in_syn = ($2 == "SYNOPSIS"); next } after' "$page" \
	>"$D/body"

while read -r f; do
	where=""
	grep -qx "$f" "$D/synopsis" || where="not in the SYNOPSIS"
	# Described: in bold (.B, .BR, .BI or \fB) in the body.
	if ! grep -Eq "^\.B[IR]?[[:space:]]+\"?$f\\b|\\\\fB$f\\b" "$D/body"; then
		where="${where:+$where, }not described in the body"
	fi
	if [ -z "$where" ]; then ok "$f: in libwcache(3)"; else
		not_ok "$f (include/wcache.h) is $where of docs/man/libwcache.3"; fi
done <"$D/header"

stray=$(comm -23 "$D/synopsis" "$D/header")
if [ -z "$stray" ]; then ok "every function of the SYNOPSIS is declared in wcache.h"; else
	not_ok "libwcache(3)'s SYNOPSIS names what wcache.h does not declare: $(echo $stray)"; fi

# The release, as configure wrote it into wcache_version.h.
version=$(sed -n 's/^#define WCACHE_VERSION_STRING "\(.*\)"$/\1/p' "$build/wcache_version.h" 2>/dev/null)
[ -n "$version" ] || bail "no WCACHE_VERSION_STRING in $build/wcache_version.h (run configure)"
for src in "$top"/docs/man/*.[0-9] "$top"/nbdkit/*.[0-9]; do
	name=$(basename "$src")
	rel=${src#"$top"/}
	# The source pages carry the placeholder, never a number to bump by hand.
	if grep -q '^\.TH .*"libwcache @VERSION@"' "$src"; then
		ok "$rel: .TH carries @VERSION@"
	else
		not_ok "$rel: .TH does not carry \"libwcache @VERSION@\": $(grep '^\.TH' "$src")"
	fi
	gen=$build/man/$name
	if [ ! -r "$gen" ]; then
		not_ok "man/$name was not generated in $build (make all)"
	elif grep -q "^\\.TH .*\"libwcache $version\"" "$gen" && ! grep -q '@VERSION@' "$gen"; then
		ok "man/$name: footer says libwcache $version"
	else
		not_ok "man/$name: footer is not libwcache $version: $(grep '^\.TH' "$gen")"
	fi
done
finish
