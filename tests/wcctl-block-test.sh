#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# wcctl-block-test.sh -- every wcctl subcommand on a cache on the block
# medium (lib/block/format.h, docs/FORMAT.md "Block medium"), as TAP: a
# cache made by `wcctl create` on a plain disk file (medium=auto picks the
# block medium there), a known pattern written through the public API
# (tests/blk_write), then status, check, dump, calibrate, set-origin and
# writeback, on a closed cache, on one in use (tests/hold_cache) and on one
# whose owner was killed; then images damaged with dd: the superblock's
# CRC, one state slot and both, a record's data, a summary's CRC, a summary
# entry under a recomputed CRC, both identity slots, a whole segment.  The tools' view is
# compared with the library's: the dirty blocks `wcctl check` counts offline
# are the ones wc_open finds (`wcctl status`).
#
# Needs: $WC_TEST_BUILDDIR (set by `make check`, else the current
# directory), a disk file system under ${WC_TEST_DISK_DIR:-/var/tmp} (never
# tmpfs: the block medium writes with O_DIRECT), 64 MiB there; python3 for
# the JSON checks (skipped without it).

set -u
builddir=${WC_TEST_BUILDDIR:-.}
W=$builddir/tools/wcctl/wcctl
BW=$builddir/tests/blk_write
HOLD=$builddir/tests/hold_cache
# The block medium is what medium=auto picks for a plain file only when
# nothing forces a granularity.
unset PMEM2_FORCE_GRANULARITY

for p in "$W" "$BW" "$HOLD"; do
	if [ ! -x "$p" ]; then
		echo "Bail out! $p not built"
		exit 1
	fi
done
DISK=${WC_TEST_DISK_DIR:-/var/tmp}
if [ "$(stat -f -c %T "$DISK" 2>/dev/null)" = tmpfs ]; then
	echo "1..0 # SKIP $DISK is tmpfs: set WC_TEST_DISK_DIR to a disk file system"
	exit 0
fi
D=$(mktemp -d "$DISK/wcctl-block-test-XXXXXX") || { echo "Bail out! no scratch dir in $DISK"; exit 1; }
holder=
cleanup() {
	[ -n "$holder" ] && kill -9 "$holder" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT

n=0
failed=0
rc=0

pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
	n=$((n + 1)); failed=$((failed + 1))
	echo "not ok $n - $1"
	echo "# exit status $rc; stdout:"; sed 's/^/#   /' "$D/out" | head -40
	echo "# stderr:"; sed 's/^/#   /' "$D/err" | head -20
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# run WANT_STATUS DESCRIPTION [grep -E PATTERN that stdout+stderr must match] -- CMD...
run() {
	local want=$1 desc=$2 pat=""
	shift 2
	if [ "$1" != "--" ]; then pat=$1; shift; fi
	shift
	"$@" >"$D/out" 2>"$D/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$desc (exit $rc, expected $want)"
	elif [ -n "$pat" ] && ! cat "$D/out" "$D/err" | grep -Eq -- "$pat"; then
		fail "$desc (output lacks /$pat/)"
	else
		pass "$desc"
	fi
}
assert() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}
# the last run's output lacks PATTERN
lacks() { ! cat "$D/out" "$D/err" | grep -Eq -- "$1"; }

# poke FILE OFFSET BYTE...: overwrite bytes (decimal values).
poke() {
	local f=$1 off=$2 b s=""
	shift 2
	for b in "$@"; do s="$s$(printf '\\x%02x' "$b")"; done
	printf "$s" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
}
# flip FILE OFFSET: invert one byte.
flip() {
	local v
	v=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	poke "$1" "$2" $((v ^ 0xff))
}
# bytes FILE OFFSET COUNT: the bytes as decimal numbers.
bytes() { od -An -tu1 -v -j "$2" -N "$3" "$1"; }
# CRC32C (Castagnoli, reflected, init and xorout ~0) of the bytes given as numbers.
crc32c() {
	local crc=$((0xffffffff)) b k
	for b in "$@"; do
		crc=$((crc ^ b))
		for k in 0 1 2 3 4 5 6 7; do
			crc=$(((crc >> 1) ^ (0x82F63B78 & -(crc & 1))))
		done
	done
	echo $((crc ^ 0xffffffff))
}
le32() { echo $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }

have_python=no
command -v python3 >/dev/null 2>&1 && have_python=yes
json_ok() { python3 -m json.tool "$D/out" >/dev/null 2>&1; }
# json_path KEY...: a nested value (numbers index lists)
json_path() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    d = d[int(k)] if k.isdigit() else d[k]
print(d)' "$D/out" "$@"
}
json_keys() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(sorted(d)), "|", " ".join(sorted(d["block"])))' "$D/out"; }

cache=$D/cache
origin=$D/origin
truncate -s 64M "$origin"
truncate -s 64M "$cache"

# ---- create, through the library -------------------------------------------
run 0 "create on a disk file picks the block medium" "medium +block: " -- "$W" create "$cache" "$origin"
assert "create prints the segments" grep -Eq "segments +[0-9]+ of" "$D/out"
run 1 "create refuses a cache already there" "already holds a valid cache on a block medium" -- \
	"$W" create "$cache" "$origin"
run 0 "--version names the block format" "block-medium format version 1" -- "$W" --version

# ---- a known pattern --------------------------------------------------------
# 16 blocks, 4, 1 synced, a discard of 4..5, 8..9 again, a flush, one more:
# 24 versions in 6 records, 20 blocks cached (0..3, 6..15, 100..103, 200, 300).
run 0 "write a pattern through the library" -- \
	"$BW" "$cache" "$origin" w:0:16 w:100:4 F:200:1 d:4:2 w:8:2 f w:300:1
cp --sparse=always "$cache" "$D/good"

run 0 "check: a closed cache is clean" "result: .*: clean$" -- "$W" check "$cache"
assert "check: counts what recovery would take" grep -q "blocks: 20 cached, 20 of them dirty" "$D/out"
assert "check: 6 records, 1 discard, 24 versions" grep -q "records: 6 (1 discards), 24 block versions, 0 records" "$D/out"
assert "check: both state slots shown" grep -Eq "state slot 1 \(offset 8192\): .*(in force|older)" "$D/out"
assert "check: the superblock line says block medium" grep -q "block medium, format 1" "$D/out"

run 0 "dump lists every record" -- "$W" dump "$cache"
assert "dump: 6 record rows" [ "$(grep -vc '^#' "$D/out")" -eq 6 ]
assert "dump: the discard record" grep -Eq " discard +4\+2$" "$D/out"
assert "dump: the first record names blocks 0..15" grep -Eq " 16 ok +0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15$" "$D/out"
assert "dump: a segment line with its summary" grep -Eq "^# segment [0-9]+ at offset [0-9]+: dirty, summary intact" "$D/out"
# Where the damage below goes, from dump's own numbers.
seg_line=$(grep -E "^# segment [0-9]+ at offset [0-9]+: dirty, summary intact" "$D/out" | head -1)
sum_off=$(echo "$seg_line" | sed -E 's/.*summary intact \(offset ([0-9]+),.*/\1/')
rec_off=$(grep -v '^#' "$D/out" | head -1 | awk '{ print $2 }')
run 0 "dump --all also lists the segments outside the ring" "free \(outside the ring" -- "$W" dump "$cache" --all

run 0 "status opens it through the library" "^medium +block: " -- "$W" status "$cache" "$origin"
assert "status: the library's dirty blocks are check's" grep -q "^state .*20 dirty blocks" "$D/out"
assert "status: the ring" grep -Eq "^ring +tail [0-9]+, head [0-9]+, clean point [0-9]+, open limit" "$D/out"
assert "status: no flush policy on the block medium" grep -q "^flush policy   none" "$D/out"
if [ $have_python = yes ]; then
	run 0 "status --json" -- "$W" status "$cache" "$origin" --json
	assert "status --json parses" json_ok
	assert "status --json: medium block" [ "$(json_path medium)" = block ]
	assert "status --json: medium_reason from the library" [ -n "$(json_path medium_reason)" ]
	assert "status --json: dirty blocks 20 (library)" [ "$(json_path dirty_blocks)" = 20 ]
	assert "status --json: dirty blocks 20 (image)" [ "$(json_path block dirty_blocks)" = 20 ]
	assert "status --json: records 6" [ "$(json_path block records)" = 6 ]
	assert "status --json: tail <= head" [ "$(json_path block tail)" -le "$(json_path block head)" ]
	keys_closed=$(json_keys)
	run 0 "check --json" -- "$W" check "$cache" --json
	assert "check --json: clean" [ "$(json_path result)" = clean ]
	assert "check --json: ring dirty 20" [ "$(json_path ring dirty_blocks)" = 20 ]
	run 0 "dump --json" -- "$W" dump "$cache" --json
	assert "dump --json parses" json_ok
	assert "dump --json: 6 records in the first segment" \
		[ "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(s["records"]) for s in d["segments"]))' "$D/out")" = 6 ]
else
	for t in "status --json" "check --json" "dump --json"; do skip "$t" "no python3"; done
fi
run 0 "calibrate CACHE: nothing to calibrate, said so" "nothing to calibrate: a cache on the block medium" -- \
	"$W" calibrate "$cache"
run 0 "set-origin with its own origin: nothing to do" "already belongs to" -- "$W" set-origin "$cache" "$origin"

# ---- in use: read from the image, never opened -------------------------------
coproc HOLD { exec "$HOLD" "$cache" "$origin" 500 2>&1; }
read -r -t 20 ready pid <&"${HOLD[0]}"
if [ "${ready:-}" = ready ]; then
	holder=$pid
	run 0 "status of a cache in use: live" "live, in use by pid $pid" -- "$W" status "$cache" "$origin"
	assert "status live: the image's dirty blocks (21)" grep -q "21 cached, 21 dirty" "$D/out"
	if [ $have_python = yes ]; then
		run 0 "status --json of a cache in use" -- "$W" status "$cache" "$origin" --json
		assert "status --json live: live, in_use_by" [ "$(json_path live)/$(json_path in_use_by)" = "True/$pid" ]
		assert "status --json: the same schema live or not" [ "$(json_keys)" = "$keys_closed" ]
	else
		skip "status --json live" "no python3"
		skip "status --json schema" "no python3"
	fi
	run 0 "check of a cache in use" "clean \(live, in use by pid $pid" -- "$W" check "$cache"
	run 1 "writeback refuses a cache in use" -- "$W" writeback "$cache" "$origin" --quiet
	# Killed: the open segment keeps no summary.
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	holder=
	run 0 "check after the owner was killed" "result: .*: clean$" -- "$W" check "$cache"
	run 0 "dump after the owner was killed" -- "$W" dump "$cache"
	row=$(grep -v '^#' "$D/out" | awk '$6 == "500"' | head -1)
	seg=$(echo "$row" | awk '{ print $1 }')
	assert "dump: block 500's record is in a segment without a summary" \
		grep -Eq "^# segment $seg at offset [0-9]+: dirty, summary none" "$D/out"
	# Its seq damaged: a torn record of the open segment, never
	# acknowledged: info, and recovery drops it.
	off=$(echo "$row" | awk '{ print $2 }')
	flip "$cache" $((off + 16))
	run 0 "check: a torn record in an open segment is info" \
		"info: segment $seg: record at offset $off \(seq [0-9]+\): header CRC32C fails" -- "$W" check "$cache"
	assert "check: it no longer counts" grep -q "blocks: 20 cached, 20 of them dirty" "$D/out"
	run 0 "status: recovery agrees (20 dirty)" "20 dirty blocks" -- "$W" status "$cache" "$origin"
else
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; do skip "live cache" "hold_cache did not start"; done
fi

# ---- write-back, through the library ----------------------------------------
run 0 "writeback" "0 dirty blocks left, origin durable" -- "$W" writeback "$cache" "$origin" --quiet
run 0 "check after writeback: nothing dirty" "20 cached, 0 of them dirty" -- "$W" check "$cache"
assert "origin holds block 9's second version" \
	grep -q "block 9 op 4" <(dd if="$origin" bs=4096 skip=9 count=1 status=none | head -c 32)
assert "origin holds block 300" grep -q "block 300 op 6" <(dd if="$origin" bs=4096 skip=300 count=1 status=none | head -c 32)
assert "block 4 was discarded: the origin never got it" \
	[ "$(dd if="$origin" bs=4096 skip=4 count=1 status=none | tr -d '\0' | wc -c)" -eq 0 ]

truncate -s 64M "$D/origin2"
run 1 "set-origin refuses to re-bind a dirty cache" "refusing: .* holds 20 dirty blocks" -- \
	"$W" set-origin "$D/good" "$D/origin2"
run 0 "set-origin re-binds a clean cache" "now belongs to file $D/origin2" -- "$W" set-origin "$cache" "$D/origin2"
run 0 "check: the identity slot moved" "origin identity file $D/origin2 .*re-bound to it, generation 2" -- "$W" check "$cache"
run 0 "set-origin back" "now belongs to file $origin" -- "$W" set-origin "$cache" "$origin"

# ---- damage -----------------------------------------------------------------
fresh() { cp --sparse=always "$D/good" "$cache"; }

fresh
flip "$cache" 104
run 1 "check: superblock CRC" "superblock: DAMAGED: .*superblock CRC mismatch \(stored 0x[0-9a-f]+, computed 0x[0-9a-f]+\) \(superblock at offset 0" -- \
	"$W" check "$cache"
assert "check: the ring is not judged" grep -q "DAMAGED (superblock; ring not checked)" "$D/out"
run 1 "dump: superblock CRC" "superblock CRC mismatch" -- "$W" dump "$cache"
run 1 "status: superblock CRC (the library refuses)" "CRC" -- "$W" status "$cache" "$origin"
if [ $have_python = yes ]; then
	run 1 "check --json: superblock CRC" -- "$W" check "$cache" --json
	assert "check --json: damaged" [ "$(json_path result)" = damaged ]
else
	skip "check --json: superblock" "no python3"
fi

# One state slot: the newer is damaged, the older is in force.
fresh
"$W" check "$cache" >"$D/out" 2>&1
slot=$(sed -nE 's/.*state slot ([01]) \(offset [0-9]+\): .*: in force$/\1/p' "$D/out")
flip "$cache" $((4096 + 4096 * slot + 56))
run 0 "check: one state slot damaged is info" \
	"info: ring state slot $slot \(offset $((4096 + 4096 * slot))\): CRC32C mismatch: a torn write; slot $((slot ^ 1)) .* is in force" -- \
	"$W" check "$cache"
flip "$cache" $((4096 + 4096 * (slot ^ 1) + 56))
run 1 "check: both state slots damaged" \
	"both ring state slots \(offsets 4096 and 8192\) are damaged \(slot 0: CRC32C mismatch; slot 1: CRC32C mismatch\)" -- \
	"$W" check "$cache"
assert "check: result names the state" grep -q "DAMAGED (ring state; segments not checked)" "$D/out"
run 1 "dump: both state slots damaged" "both ring state slots" -- "$W" dump "$cache"
run 1 "status: both state slots damaged (the library refuses)" "both ring state slots" -- "$W" status "$cache" "$origin"

# A record's data under an intact summary: recovery would serve it.
fresh
flip "$cache" $((rec_off + 512 + 100))
run 1 "check: a record's data damaged under its summary" \
	"damage: segment [0-9]+: summary entries 0\.\.15 \(origin block 0 first, seq 1\) name data from offset $((rec_off + 512)), but no intact record" -- \
	"$W" check "$cache"
assert "check: DAMAGED" grep -q "result: .*: DAMAGED" "$D/out"
run 0 "dump shows the record as bad" "bad-data" -- "$W" dump "$cache"
if [ $have_python = yes ]; then
	run 1 "check --json: a damaged record" -- "$W" check "$cache" --json
	assert "check --json: the problem's offset" [ "$(json_path problems 0 offset)" = $((rec_off + 512)) ]
	assert "check --json: kind damage" [ "$(json_path problems 0 kind)" = damage ]
else
	skip "check --json: record" "no python3"
fi

# A summary's CRC: a torn summary, recovery reads the segment whole.
fresh
flip "$cache" $((sum_off + 28))
run 0 "check: a torn summary is info" \
	"info: segment [0-9]+ summary \(offset $sum_off\): CRC32C mismatch: a torn write .* recovery reads the segment whole" -- \
	"$W" check "$cache"
assert "check: nothing lost" grep -q "blocks: 20 cached, 20 of them dirty" "$D/out"
run 0 "status: recovery reads the segment whole (20 dirty)" "20 dirty blocks" -- "$W" status "$cache" "$origin"

# A summary that lies under a good CRC: entry 0 says block 7 where the
# record holds block 0.  Recovery would trust it: damage.
fresh
poke "$cache" $((sum_off + 32)) 7
nent=$(bytes "$cache" $((sum_off + 24)) 1 | tr -d ' ')
crc=$(crc32c $(bytes "$cache" "$sum_off" 28) 0 0 0 0 $(bytes "$cache" $((sum_off + 32)) $((24 * nent))))
poke "$cache" $((sum_off + 28)) $(le32 "$crc")
run 1 "check: a summary that disagrees with its records" \
	"damage: segment [0-9]+: summary entry 0 \(origin block 7, seq 1\)" -- "$W" check "$cache"
assert "check: and the record it left out" grep -Eq "damage: .*intact record \(origin block 0, seq 1\) at offset $((rec_off + 512)) is not in the segment's summary" "$D/out"

# Both identity slots.
fresh
flip "$cache" 12288
flip "$cache" 16384
run 1 "check: both identity slots damaged" \
	"damage: origin identity \(offsets 12288 and 16384\): neither slot is intact" -- "$W" check "$cache"

# A segment lost in the middle of the ring: three segments written (5000
# blocks, about 2000 a segment), the first then zeroed.  Recovery finds
# nothing there and goes on; check names it.
wrap=$D/wrap
truncate -s 64M "$wrap"
ops=""
for i in $(seq 0 99); do ops="$ops w:$((i * 50)):50"; done
run 0 "create a second cache" -- "$W" create "$wrap" "$origin"
run 0 "write 5000 blocks into it" -- "$BW" "$wrap" "$origin" $ops
run 0 "check: three segments, clean" "blocks: 5000 cached, 5000 of them dirty" -- "$W" check "$wrap"
"$W" dump "$wrap" >"$D/out" 2>&1
first=$(grep -v '^#' "$D/out" | head -1 | awk '{ print $1, $2 }')
seg=${first% *}
off=${first#* }
send=$(sed -nE "s/^# segment $seg at offset $off: .*summary intact \(offset ([0-9]+),.*/\1/p" "$D/out")
# its records and its summary's head
dd if=/dev/zero of="$wrap" bs=4096 seek=$((off / 4096)) count=$(((send - off) / 4096 + 1)) \
	conv=notrunc status=none
run 1 "check: a segment emptied before a summarized one is damage" \
	"damage: segment $seg \(offset $off\) holds no record of this cache, though segment [0-9]+ after it does" -- \
	"$W" check "$wrap"
assert "check: result DAMAGED" grep -q "result: .*: DAMAGED" "$D/out"

# ---- usage ------------------------------------------------------------------
run 1 "check of a missing file" "No such file" -- "$W" check "$D/none"
run 2 "dump with an unknown option" "unrecognized option" -- "$W" dump "$cache" --bogus
fresh
run 0 "the good image checks clean again" "clean$" -- "$W" check "$cache"

echo "1..$n"
[ "$failed" -eq 0 ]
