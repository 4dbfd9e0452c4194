# SPDX-License-Identifier: BSD-3-Clause
# identity-lib.sh -- sourced by the origin-identity tests of each backend
# (tests/identity-local.sh: files and loop devices; tests/remote/
# nbd-identity.sh; tests/ceph/rbd-identity.sh), after tests/tap.sh and a
# library that made the scratch folder $D.  What a cache made for origin X
# must do with the tools, whatever X is:
#   - refuse Y (another origin of the same size) and YBIG (larger), for a
#     plain open, `wcctl status`, `wcctl writeback` and `wcctl set-origin`
#     without --force, with a message that names both, and touch neither
#     the cache file nor Y (their bytes compared);
#   - reopen with X, every dirty block there; X grown is served at its new
#     size; written back, X holds the blocks;
#   - `wcctl set-origin` re-binds the clean cache to Y, after which X is
#     refused and Y served.
#
# identity_suite X Y YBIG READ GROW
#   X, Y, YBIG  origins as wc_origin_open takes them
#   READ NAME   a command that prints the bytes of origin NAME (x, y or
#               ybig) on stdout, read without the cache
#   GROW SIZE   a command that grows X to SIZE bytes

W=$builddir/tools/wcctl/wcctl
H=$builddir/tests/hold_cache
ID_BS=4096

[ -x "$W" ] && [ -x "$H" ] || bail "$W or $H not built"

# expect_refused DESCRIPTION PATTERN CMD...: CMD fails, its output matches
# PATTERN (grep -E), and neither the cache nor Y changed by a byte.
expect_refused() {
	local desc=$1 pat=$2
	shift 2
	if "$@" >"$D/refused.out" 2>&1; then
		not_ok "$desc: exit 0"; sed 's/^/#   /' "$D/refused.out" | tail -5; return
	fi
	if ! grep -Eq -- "$pat" "$D/refused.out"; then
		not_ok "$desc: the message lacks /$pat/"; sed 's/^/#   /' "$D/refused.out" | tail -5
		return
	fi
	if ! cmp -s "$ID_CACHE" "$D/cache.before"; then
		not_ok "$desc: the cache file changed"; return
	fi
	if ! "$ID_READ" y | cmp -s - "$D/y.before"; then
		not_ok "$desc: origin Y changed"; return
	fi
	ok "$desc"
}

# block_is NAME BLOCK: origin NAME holds hold_cache's pattern (0xa5) there.
block_is() {
	head -c $ID_BS /dev/zero | tr '\0' '\245' >"$D/a5.block"
	"$ID_READ" "$1" | dd bs=$ID_BS skip="$2" count=1 2>/dev/null | cmp -s - "$D/a5.block"
}

# status_size ORIGIN: the size `wcctl status --json` says the cache serves.
status_size() {
	"$W" status "$ID_CACHE" "$1" --json 2>/dev/null | sed -n 's/^  "size": \([0-9]*\),$/\1/p'
}

identity_suite() {
	local x=$1 y=$2 ybig=$3 b size
	ID_READ=$4
	local grow=$5
	ID_CACHE=$D/identity.cache
	rm -f "$ID_CACHE"

	check "create a cache for X ($x)" "$W" create "$ID_CACHE" "$x" --size 8M \
		--options block_size=$ID_BS
	for b in 5 7 9; do
		check "a FUA write of block $b through the cache" "$H" "$ID_CACHE" "$x" $b </dev/null
	done
	size=$(status_size "$x")
	cp "$ID_CACHE" "$D/cache.before"
	"$ID_READ" y >"$D/y.before" || bail "cannot read origin Y"

	expect_refused "another origin of the same size is refused, neither touched" \
		"holds 3 dirty blocks of origin .*another origin: refusing" "$H" "$ID_CACHE" "$y" 11
	expect_refused "a larger other origin is refused, neither touched" \
		"another origin: refusing" "$H" "$ID_CACHE" "$ybig" 11
	expect_refused "wcctl writeback CACHE Y fails, Y unchanged" "another origin" \
		"$W" writeback "$ID_CACHE" "$y"
	expect_refused "wcctl status CACHE Y fails" "another origin" "$W" status "$ID_CACHE" "$y"
	expect_refused "wcctl set-origin refuses a dirty cache without --force" \
		"--force re-binds it" "$W" set-origin "$ID_CACHE" "$y"

	check "reopened with X: the 3 dirty blocks are there" \
		grep -q "3 dirty blocks" <("$W" status "$ID_CACHE" "$x")
	if [ -n "$grow" ] && "$grow" $((2 * size)) >"$D/grow.out" 2>&1; then
		check "X grown to twice its size is served at the new size" \
			test "$(status_size "$x")" = $((2 * size))
		check "the new size is recorded (wcctl check)" \
			grep -q "recorded when the origin grew" <("$W" check "$ID_CACHE")
	elif [ -n "$grow" ]; then
		not_ok "grow X"; sed 's/^/#   /' "$D/grow.out" | tail -5
	fi
	check "wcctl writeback CACHE X" "$W" writeback --quiet "$ID_CACHE" "$x"
	check "X holds the blocks written through the cache" block_is x 7
	check "wcctl set-origin re-binds the clean cache to Y" "$W" set-origin "$ID_CACHE" "$y"
	check "now X is refused" bash -c "! '$W' status '$ID_CACHE' '$x'"
	check "and Y is served" "$W" status "$ID_CACHE" "$y"
}
