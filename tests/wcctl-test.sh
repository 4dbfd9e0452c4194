#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# wcctl-test.sh -- every wcctl subcommand, failures included, as TAP.
#
# Images are crafted by hand (printf + dd) from the byte layout of format
# version 2 (lib/format.h, docs/FORMAT.md): superblock at 0 (CRC over bytes
# 8..87), the floor seq_count at 256, two commit records of 64 bytes at 320
# and 384 ({seq, count, digest, crc32c of bytes 0..23}, the digest a sum of
# wc_entry_digest, both computed here in bash), entries of 16 bytes
# {origin_block, seq} from 4096, data at the offset `wcctl create` prints.
# An entry is committed when its seq is below the commit point: the floor,
# or the newest intact record above it if its epoch's entries match.  So
# the test also checks that the tools and the library read that layout the
# way it is documented.
#
# Needs: $WC_TEST_BUILDDIR (set by `make check`, else the current directory),
# /dev/shm; python3 for the JSON checks (skipped without it).

set -u
builddir=${WC_TEST_BUILDDIR:-.}
W=$builddir/tools/wcctl/wcctl
export PMEM2_FORCE_GRANULARITY=${PMEM2_FORCE_GRANULARITY:-CACHE_LINE}

if [ ! -x "$W" ]; then
	echo "Bail out! $W not built"
	exit 1
fi
D=$(mktemp -d /dev/shm/wcctl-test-XXXXXX) || { echo "Bail out! no scratch dir in /dev/shm"; exit 1; }
trap 'rm -rf "$D"' EXIT

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

# assert DESCRIPTION CMD...: passes if CMD succeeds (output of the last run
# stays in $D/out for the message).
assert() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}

# 8 little-endian bytes of a 64-bit value (-1 = WC_NONE) on stdout.
le64() {
	local hex b="" i
	hex=$(printf '%016x' "$1")
	for i in 14 12 10 8 6 4 2 0; do b="$b\\x${hex:$i:2}"; done
	printf "$b"
}
# poke FILE OFFSET VALUE: store one 64-bit field.
poke() { le64 "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
# entry FILE INDEX ORIGIN_BLOCK SEQ
entry() { { le64 "$3"; le64 "$4"; } | dd of="$1" bs=1 seek=$((4096 + 16 * $2)) conv=notrunc status=none; }
# CRC32C (Castagnoli, reflected, init and xorout ~0) of the bytes given as
# numbers, e.g. crc32c 49 50 51.
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
# The little-endian bytes of 64-bit values, as numbers (for crc32c).
bytes64() {
	local v k
	for v in "$@"; do
		for k in 0 8 16 24 32 40 48 56; do echo -n "$(((v >> k) & 0xff)) "; done
	done
}
# wc_entry_digest IDX ORIGIN SEQ (format.h): bash arithmetic wraps at 64
# bits like uint64_t; >> is arithmetic, so the logical shift masks.
digest() {
	local h=$(($2 ^ ($1 * 0x9E3779B97F4A7C15) ^ ($3 * 0xC2B2AE3D27D4EB4F)))
	h=$((h ^ ((h >> 33) & 0x7FFFFFFF)))
	h=$((h * 0xff51afd7ed558ccd))
	h=$((h ^ ((h >> 33) & 0x7FFFFFFF)))
	h=$((h * 0xc4ceb9fe1a85ec53))
	h=$((h ^ ((h >> 33) & 0x7FFFFFFF)))
	echo $h
}
# record FILE SLOT SEQ COUNT DIGEST [CRC]: store one commit record (64 bytes
# at 320 + 64 * SLOT); the CRC is computed unless given.
record() {
	local crc=${6:-$(crc32c $(bytes64 "$3" "$4" "$5"))}
	{ le64 "$3"; le64 "$4"; le64 "$5"; le64 "$crc"; head -c 32 /dev/zero; } |
		dd of="$1" bs=1 seek=$((320 + 64 * $2)) conv=notrunc status=none
}
# no_records FILE: both slots empty, as format leaves them.
no_records() { head -c 128 /dev/zero | dd of="$1" bs=1 seek=320 conv=notrunc status=none; }
# block FILE OFFSET COUNT (4 KiB blocks) -> stdout
block() { dd if="$1" bs=4096 skip="$2" count="${3:-1}" status=none; }
rows() { grep -vc '^#' "$D/out"; }
field() { awk -v k="$1" '$0 ~ "^  *"k" " { print $NF; exit }' "$D/out"; }

have_python=no
command -v python3 >/dev/null 2>&1 && have_python=yes
json_ok() { python3 -m json.tool "$D/out" >/dev/null 2>&1; }
json_get() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$D/out" "$1"; }
# json_path KEY...: a nested value (numbers index lists), e.g. commit records 0 state
json_path() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    d = d[int(k)] if k.isdigit() else d[k]
print(d)' "$D/out" "$@"
}
# json_keys: the top-level keys, sorted, and those of the "commit" object
json_keys() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d.get("commit") or {}; print(" ".join(sorted(d)), "|", " ".join(sorted(c)))' "$D/out"; }

cache=$D/cache
origin=$D/origin
truncate -s 64M "$origin"        # 16384 origin blocks of 4 KiB

# ---- usage -----------------------------------------------------------------
run 2 "no command is a usage error" -- "$W"
run 0 "--help lists the commands" "calibrate" -- "$W" --help
run 0 "--help gives calibrate's CACHE, as the man page does" "calibrate +\[CACHE\] \[--json\]" -- \
	"$W" --help
run 2 "unknown command is a usage error" "unknown command" -- "$W" frobnicate
run 0 "--version names the library's version" "^wcctl \(libwcache\) [0-9]+\.[0-9]+" -- "$W" --version
if [ -x "$builddir/tools/wcbench/wcbench" ]; then
	run 0 "wcbench --version names the library's version" "^wcbench \(libwcache\) [0-9]+\.[0-9]+" -- \
		"$builddir/tools/wcbench/wcbench" --version
else
	skip "wcbench --version names the library's version" "wcbench not built"
fi
for sub in create status writeback set-origin check dump calibrate; do
	run 0 "$sub --help" "usage: wcctl $sub" -- "$W" "$sub" --help
done
run 2 "create without ORIGIN" "missing argument" -- "$W" create "$cache"
run 2 "create with an unknown option" "unrecognized option" -- "$W" create "$cache" "$origin" --bogus
run 2 "create with a bad --options string" "block_size" -- "$W" create "$cache" "$origin" --size 8M --options block_size=3000
run 2 "create with a bad --size" "size" -- "$W" create "$cache" "$origin" --size 12Q
run 2 "check with two images" "unexpected argument" -- "$W" check "$cache" "$cache"
run 2 "check --max with a non-number" "--max" -- "$W" check --max x "$cache"
run 2 "dump with no image" "missing argument" -- "$W" dump
run 2 "writeback without ORIGIN" "missing argument" -- "$W" writeback "$cache"
run 2 "set-origin without ORIGIN" "missing argument" -- "$W" set-origin "$cache"
run 2 "set-origin with an unknown option" "unrecognized option" -- "$W" set-origin "$cache" "$origin" --bogus
run 1 "set-origin of a missing cache" "no-such-cache" -- "$W" set-origin "$D/no-such-cache" "$origin"
run 2 "status with a bad --options string" "unknown option" -- "$W" status "$cache" "$origin" --options nonsense=1
run 2 "calibrate takes at most one cache" "unexpected argument" -- "$W" calibrate a b
run 1 "calibrate with a missing cache" "no-such-cache" -- "$W" calibrate "$D/no-such-cache"

# ---- create ----------------------------------------------------------------
run 1 "create refuses a missing cache file without --size" "no such file" -- "$W" create "$cache" "$origin"
run 0 "create --size 8M" "blocks +[0-9]+" -- "$W" create "$cache" "$origin" --size 8M --options high_watermark=60
blocks=$(field blocks)
data_off=$(field "data offset")
assert "create prints blocks and a block-aligned data offset" \
	test -n "$blocks" -a "$blocks" -gt 1000 -a -n "$data_off" -a $((data_off % 4096)) -eq 0
run 1 "create refuses an existing cache" "already holds a valid cache" -- "$W" create "$cache" "$origin"
run 1 "create --force refuses an existing cache too" "already holds a valid cache" -- \
	"$W" create "$cache" "$origin" --force
truncate -s 8M "$D/data"
printf 'not a cache' | dd of="$D/data" bs=1 seek=4096 conv=notrunc status=none
run 1 "create refuses a file holding data" "byte 4096 is 0x6e.*--force" -- "$W" create "$D/data" "$origin"
assert "the refused file is untouched" test "$(block "$D/data" 1 | head -c 11)" = "not a cache"
run 0 "create --force formats it" "blocks +[0-9]+" -- "$W" create "$D/data" "$origin" --force
rm -f "$D/data"
run 0 "create with block_size=512" "block size +512" -- "$W" create "$D/small" "$origin" --size 1M --options block_size=512

# ---- the fresh cache, offline and online -----------------------------------
run 0 "check: a fresh cache is clean" "result: .*clean" -- "$W" check "$cache"
run 0 "dump: a fresh cache has no entries" -- "$W" dump "$cache"
assert "dump lists nothing but comments" test "$(rows)" -eq 0
run 0 "dump --all lists every entry" -- "$W" dump --all "$cache"
assert "dump --all has one row per block" test "$(rows)" -eq "$blocks"
run 0 "status of a fresh cache" "clean" -- "$W" status "$cache" "$origin"
line=$(head -1 "$D/out")
assert "status line has dm-writecache's 14 fields" test "$(echo "$line" | wc -w)" -eq 14
assert "status line: no error, all blocks free, none under write-back" \
	test "$(echo "$line" | cut -d' ' -f1-4)" = "0 $blocks $blocks 0"
if [ $have_python = yes ]; then
	run 0 "status --json" -- "$W" status --json "$cache" "$origin"
	assert "status --json is valid JSON" json_ok
	assert "status --json: blocks and free" \
		test "$(json_get blocks) $(json_get free) $(json_get error)" = "$blocks $blocks 0"
else
	skip "status --json" "no python3"; skip "status --json is valid JSON" "no python3"
	skip "status --json: blocks and free" "no python3"
fi
run 1 "status with a missing origin" "origin" -- "$W" status "$cache" "$D/no-origin"
run 1 "status refuses a block size other than the format's" "block size" -- \
	"$W" status --options block_size=512 "$cache" "$origin"

# ---- a hand-made image with dirty data -------------------------------------
# entry 0: origin block 3, seq 1 (superseded by entry 1)
# entry 1: origin block 3, seq 2 (committed)
# entry 2: origin block 7, seq 9 (uncommitted: seq_count is 5)
# entries 3..42: origin blocks 100..139, seq 3 (committed)
head -c $((43 * 4096)) /dev/urandom >"$D/data"
dd if="$D/data" of="$cache" bs=4096 seek=$((data_off / 4096)) conv=notrunc status=none
entry "$cache" 0 3 1
entry "$cache" 1 3 2
entry "$cache" 2 7 9
for i in $(seq 3 42); do
	{ le64 $((97 + i)); le64 3; }
done | dd of="$cache" bs=1 seek=$((4096 + 16 * 3)) conv=notrunc status=none
poke "$cache" 256 5

sum_before=$(md5sum <"$cache")
run 0 "check: uncommitted and superseded entries are not damage" "result: .*clean" -- "$W" check "$cache"
assert "check counts 41 committed, 1 superseded, 1 uncommitted" \
	grep -q "41 committed (dirty), 1 superseded, 1 uncommitted" "$D/out"
assert "check reports the uncommitted entry as info with its offset" \
	grep -q "^info: entry 2 (offset 4128): origin block 7 uncommitted" "$D/out"
assert "check did not modify the image" test "$(md5sum <"$cache")" = "$sum_before"
run 0 "dump of the crafted image" -- "$W" dump "$cache"
assert "dump lists the 43 used entries" test "$(rows)" -eq 43
assert "dump: entry 0 is superseded by entry 1" \
	grep -Eq "^ +0 +4096 +3 +1 +superseded +$data_off +superseded-by 1$" "$D/out"
assert "dump: entry 2 is uncommitted" grep -Eq "^ +2 +4128 +7 +9 +uncommitted " "$D/out"
assert "dump did not modify the image" test "$(md5sum <"$cache")" = "$sum_before"

run 0 "status of the crafted image (recovery)" "41 dirty blocks" -- "$W" status "$cache" "$origin"
assert "status line: 41 blocks in use" \
	test "$(head -1 "$D/out" | cut -d' ' -f1-4)" = "0 $blocks $((blocks - 41)) 0"
run 0 "check after recovery: the dropped entries are free" "result: .*clean" -- "$W" check "$cache"
assert "recovery invalidated the superseded and the uncommitted entry" \
	grep -q "41 committed (dirty), 0 superseded, 0 uncommitted" "$D/out"

run 0 "writeback" "wrote back 41 blocks" -- "$W" writeback "$cache" "$origin"
assert "writeback drew its progress bar to 100%" grep -q "100% 41/41 blocks" "$D/err"
assert "origin block 3 holds entry 1's data (the newer version)" \
	cmp -s <(block "$origin" 3) <(block "$D/data" 1)
ok_blocks=yes
for i in $(seq 3 42); do
	cmp -s <(block "$origin" $((97 + i))) <(block "$D/data" "$i") || ok_blocks=no
done
assert "origin blocks 100..139 hold entries 3..42's data" test $ok_blocks = yes
assert "the uncommitted block 7 never reached the origin" \
	cmp -s <(block "$origin" 7) <(head -c 4096 /dev/zero)
run 0 "status after writeback: clean" "clean" -- "$W" status "$cache" "$origin"
assert "status line after writeback: every block free" \
	test "$(head -1 "$D/out" | cut -d' ' -f1-4)" = "0 $blocks $blocks 0"
run 0 "writeback of a clean cache" "wrote back 0 blocks" -- "$W" writeback --quiet "$cache" "$origin"
run 0 "check after writeback" "0 committed" -- "$W" check "$cache"

# ---- damaged images --------------------------------------------------------
cp "$cache" "$D/clean"    # clean and empty after the writeback
# Each case sets the floor itself; no record may move the point above it.
damaged() { cp "$D/clean" "$D/bad"; no_records "$D/bad"; }

damaged
entry "$D/bad" 5 9 1
entry "$D/bad" 6 9 1
poke "$D/bad" 256 2
run 1 "check: two committed entries with one origin block and seq" \
	"entry 5 \(offset 4176\): origin block 9 seq 1 is also held by entry 6" -- "$W" check "$D/bad"
assert "check calls the duplicate image damaged" grep -q "result: .*DAMAGED" "$D/out"
run 0 "dump shows the duplicate" "duplicate +[0-9]+ +same-seq-as 6" -- "$W" dump "$D/bad"
run 1 "status refuses the duplicate image (recovery refuses)" "both hold origin block 9" -- \
	"$W" status "$D/bad" "$origin"

damaged
entry "$D/bad" 5 9 3
entry "$D/bad" 6 9 1
entry "$D/bad" 7 9 1
poke "$D/bad" 256 4
run 1 "check: a duplicate among superseded versions is damage too" \
	"entry 7 \(offset 4208\): origin block 9 seq 1 is also held by entry 6" -- "$W" check "$D/bad"
assert "check: the newest version still counts as committed" \
	grep -q "1 committed (dirty), 0 superseded, 0 uncommitted, $((blocks - 3)) free, 0 outside the origin, 2 duplicate" "$D/out"
run 1 "check --max 1 stops after one problem" "more problems not printed" -- "$W" check --max 1 "$D/bad"
assert "check --max 1 printed exactly one problem" test "$(grep -c '^damage:' "$D/out")" -eq 1

damaged
entry "$D/bad" 4 20000 0
poke "$D/bad" 256 1
run 1 "check: committed entry beyond the origin" \
	"entry 4 \(offset 4160\): origin block 20000 .* beyond the origin's 16384 blocks" -- "$W" check "$D/bad"
run 1 "writeback refuses the image too" "beyond the origin" -- "$W" writeback "$D/bad" "$origin"

damaged
entry "$D/bad" 4 20000 7          # seq 7 >= seq_count 1: uncommitted, not damage
poke "$D/bad" 256 1
run 0 "check: an uncommitted entry beyond the origin is not damage" "result: .*clean" -- "$W" check "$D/bad"

damaged
printf '\x01' | dd of="$D/bad" bs=1 seek=40 conv=notrunc status=none   # inside the uuid
run 1 "check: superblock CRC mismatch" "CRC32C mismatch" -- "$W" check "$D/bad"
run 1 "dump refuses a bad superblock" "CRC32C" -- "$W" dump "$D/bad"
if [ $have_python = yes ]; then
	run 1 "check --json: superblock CRC mismatch" -- "$W" check --json "$D/bad"
	assert "check --json names the superblock error" \
		test "$(json_path superblock ok) $(json_path result)" = "False damaged"
else
	skip "check --json: superblock CRC mismatch" "no python3"
	skip "check --json names the superblock error" "no python3"
fi
run 1 "status refuses a bad superblock" "CRC32C" -- "$W" status "$D/bad" "$origin"

damaged
printf 'NOTACACHE' | dd of="$D/bad" bs=1 seek=0 conv=notrunc status=none
run 1 "check: foreign file (bad magic)" "bad magic" -- "$W" check "$D/bad"

damaged
poke "$D/bad" 256 -2      # seq_count WC_NONE - 1: outside the range
run 1 "check: commit counter out of range" "seq_count" -- "$W" check "$D/bad"

damaged
truncate -s 16K "$D/bad"
run 1 "check: truncated image" "truncated" -- "$W" check "$D/bad"

truncate -s 1M "$D/zero"
run 1 "check: never formatted" "no cache here" -- "$W" check "$D/zero"
run 1 "check: missing file" "No such file" -- "$W" check "$D/nonexistent"
run 1 "check: a directory" "directory" -- "$W" check "$D"

# ---- commit records -----------------------------------------------------------
# Floor 2; entries 5 and 6 hold epoch 2 (origin blocks 9 and 10), entry 7
# epoch 1 (origin block 11, committed by the floor).  The commit of epoch 2
# writes slot 0 = {seq 3, count 2, digest of entries 5 and 6}.
rec_image() {
	cp "$D/clean" "$D/rec"
	no_records "$D/rec"
	poke "$D/rec" 256 2
	entry "$D/rec" 5 9 2
	entry "$D/rec" 6 10 2
	entry "$D/rec" 7 11 1
}
dig2=$(($(digest 5 9 2) + $(digest 6 10 2)))

rec_image
record "$D/rec" 0 3 2 "$dig2"
sum_before=$(md5sum <"$D/rec")
run 0 "check: a valid record above the floor commits its epoch" \
	"commit point 3 \(from record 0\)" -- "$W" check "$D/rec"
assert "check: the record's entries count as committed" \
	grep -q "3 committed (dirty), 0 superseded, 0 uncommitted" "$D/out"
assert "check: record 0 is valid, its 2 entries found" \
	grep -q "record 0 (offset 320): seq 3, count 2, intact, valid (2 entries of epoch 2 match)" "$D/out"
assert "check: the floor is printed" grep -q "floor seq_count 2 (offset 256)" "$D/out"
assert "check did not modify the image" test "$(md5sum <"$D/rec")" = "$sum_before"
run 0 "dump: the record's entries are committed" -- "$W" dump "$D/rec"
assert "dump: entry 5 (epoch 2) is committed" grep -Eq "^ +5 +4176 +9 +2 +committed " "$D/out"
assert "dump: the commit point in the header" grep -q "^# commit point 3 (from record 0)" "$D/out"
run 0 "status of the record image (recovery takes the record)" "3 dirty blocks" -- \
	"$W" status "$D/rec" "$origin"
assert "status: the commit point at open came from record 0, floor 2" \
	grep -q "^at open        commit point 3 (from record 0), floor seq_count 2" "$D/out"
assert "status: recovery raised the floor to the record" \
	grep -q "^commit point   3 (from the floor), floor seq_count 3" "$D/out"
if [ $have_python = yes ]; then
	rec_image
	record "$D/rec" 0 3 2 "$dig2"
	run 0 "status --json of the record image" -- "$W" status --json "$D/rec" "$origin"
	assert "status --json is valid JSON" json_ok
	assert "status --json: commit_at_open from record 0, valid" \
		test "$(json_path commit_at_open point) $(json_path commit_at_open source) $(json_path commit_at_open records 0 valid)" = "3 record 0 True"
	assert "status --json: after close the floor is 3 and covers record 0" \
		test "$(json_path commit floor) $(json_path commit records 0 state) $(json_path commit records 1 state)" = "3 covered empty"
else
	skip "status --json of the record image" "no python3"; skip "status --json is valid JSON" "no python3"
	skip "status --json: commit_at_open from record 0, valid" "no python3"
	skip "status --json: after close the floor is 3 and covers record 0" "no python3"
fi
if [ $have_python = yes ]; then
	rec_image
	record "$D/rec" 0 3 2 "$dig2"
	run 0 "check --json of the record image" -- "$W" check --json "$D/rec"
	assert "check --json is valid JSON" json_ok
	assert "check --json: commit point 3 from record 0, clean" \
		test "$(json_path commit point) $(json_path commit source) $(json_path commit records 0 state) $(json_path result)" = "3 record 0 valid clean"
	assert "check --json: 3 committed entries" test "$(json_path entries committed)" = 3
	run 0 "dump --json of the record image" -- "$W" dump --json "$D/rec"
	assert "dump --json is valid JSON" json_ok
	assert "dump --json: entry 6 (epoch 2) committed, the floor 2" \
		test "$(json_path entries 1 index) $(json_path entries 1 state) $(json_path commit floor)" = "6 committed 2"
	record "$D/rec" 0 3 3 "$dig2"
	run 0 "check --json of a mismatching record" -- "$W" check --json "$D/rec"
	assert "check --json: the record is a mismatch, reported as info" \
		test "$(json_path commit records 0 state) $(json_path commit records 0 found) $(json_path problems 0 kind)" = "mismatch 2 info"
else
	for t in "check --json of the record image" "check --json is valid JSON" \
		"check --json: commit point 3 from record 0, clean" "check --json: 3 committed entries" \
		"dump --json of the record image" "dump --json is valid JSON" \
		"dump --json: entry 6 (epoch 2) committed, the floor 2" \
		"check --json of a mismatching record" "check --json: the record is a mismatch, reported as info"; do
		skip "$t" "no python3"
	done
fi
rec_image
record "$D/rec" 0 3 2 "$dig2"
run 0 "status of the record image, again" "3 dirty blocks" -- "$W" status "$D/rec" "$origin"
run 0 "check after recovery: floor 3, record 0 below it" \
	"record 0 \(offset 320\): seq 3, count 2, intact, covered by the floor" -- "$W" check "$D/rec"
assert "check after recovery: the 3 blocks are still committed" \
	grep -q "3 committed (dirty), 0 superseded, 0 uncommitted" "$D/out"

rec_image
record "$D/rec" 0 3 3 "$dig2"          # claims 3 entries, 2 hold epoch 2
sum_before=$(md5sum <"$D/rec")
run 0 "check: a record whose count does not match leaves its epoch uncommitted" \
	"commit point 2 \(from the floor\)" -- "$W" check "$D/rec"
assert "check: only the floor's entry is committed" \
	grep -q "1 committed (dirty), 0 superseded, 2 uncommitted" "$D/out"
assert "check reports the mismatching record as info" \
	grep -q "^info: record 0 (offset 320): seq 3 claims 3 entries of epoch 2, the entries hold 2: that commit did not happen" "$D/out"
assert "check did not modify the image" test "$(md5sum <"$D/rec")" = "$sum_before"
run 0 "dump: the mismatching record's entries are uncommitted" -- "$W" dump "$D/rec"
assert "dump: entry 6 (epoch 2) is uncommitted" grep -Eq "^ +6 +4192 +10 +2 +uncommitted " "$D/out"
assert "dump: record 0 NOT valid" grep -q "^# record 0 (offset 320): seq 3, count 3, intact, NOT valid" "$D/out"
run 0 "status of the mismatching image (recovery drops the epoch)" "1 dirty blocks" -- \
	"$W" status "$D/rec" "$origin"
run 0 "check after recovery: the record is erased, the epoch's entries freed" \
	"record 0 \(offset 320\): empty" -- "$W" check "$D/rec"
assert "check after recovery: 1 committed, nothing uncommitted" \
	grep -q "1 committed (dirty), 0 superseded, 0 uncommitted" "$D/out"

rec_image
entry "$D/rec" 6 12 2                  # the right count, but another block: the digest differs
record "$D/rec" 0 3 2 "$dig2"
run 0 "check: a record whose digest does not match leaves its epoch uncommitted" \
	"commit point 2 \(from the floor\)" -- "$W" check "$D/rec"
assert "check names the digest" grep -q "the entries hold 2 with another digest" "$D/out"

rec_image
record "$D/rec" 0 3 2 "$dig2" 12345    # a torn line: the CRC does not hold
run 0 "check: a torn record is ignored" "commit point 2 \(from the floor\)" -- "$W" check "$D/rec"
assert "check reports the torn record" grep -q "^info: record 0 (offset 320): torn" "$D/out"
assert "check: the torn record's epoch is uncommitted" \
	grep -q "1 committed (dirty), 0 superseded, 2 uncommitted" "$D/out"

rec_image
poke "$D/rec" 256 1
record "$D/rec" 1 2 1 "$(digest 7 11 1)"   # the commit of epoch 1, valid
record "$D/rec" 0 3 3 "$dig2"              # the commit of epoch 2, not complete
run 0 "check: the other slot stands in when the newest record does not match" \
	"commit point 2 \(from record 1\)" -- "$W" check "$D/rec"
assert "check: record 1 is the commit point" \
	grep -q "record 1 (offset 384): seq 2, count 1, intact: the commit point" "$D/out"
assert "check: epoch 1 committed, epoch 2 not" \
	grep -q "1 committed (dirty), 0 superseded, 2 uncommitted" "$D/out"
run 0 "status recovers from the other slot" "1 dirty blocks" -- "$W" status "$D/rec" "$origin"
assert "status: the commit point at open came from record 1" \
	grep -q "^at open        commit point 2 (from record 1), floor seq_count 1" "$D/out"

rec_image
poke "$D/rec" 256 5
record "$D/rec" 0 3 7 12345 "$(crc32c $(bytes64 3 7 12345))"  # intact, below the floor
run 0 "check: a record below the floor is covered by it" \
	"record 0 \(offset 320\): seq 3, count 7, intact, covered by the floor" -- "$W" check "$D/rec"
assert "check: the floor commits everything below it" \
	grep -q "3 committed (dirty), 0 superseded, 0 uncommitted" "$D/out"

# ---- calibrate ---------------------------------------------------------------
run 0 "calibrate" "measured .*" -- "$W" calibrate
assert "calibrate shows the policy in force" grep -q "^in force " "$D/out"
if [ $have_python = yes ]; then
	run 0 "calibrate --json" -- "$W" calibrate --json
	assert "calibrate --json is valid JSON" json_ok
else
	skip "calibrate --json" "no python3"; skip "calibrate --json is valid JSON" "no python3"
fi
run 1 "calibrate with a bad WC_PMEM_THRESHOLD fails" "WC_PMEM_THRESHOLD" -- \
	env WC_PMEM_THRESHOLD=lots "$W" calibrate

# A cache measures its policy on its free blocks at create and keeps it
# (on a CPU without CLFLUSHOPT there is nothing to measure: "engine").
run 0 "create a cache to calibrate" -- "$W" create "$D/cal" "$origin" --size 8M
run 0 "status: the policy recorded at create" "flush policy +(recorded|engine):" -- \
	"$W" status "$D/cal" "$origin"
run 0 "calibrate CACHE shows its record" "^recorded +(non-temporal|crossover|none)" -- \
	"$W" calibrate "$D/cal"
poke "$D/cal" 528 12345   # the record's threshold, its CRC left as it was
run 0 "calibrate CACHE: a damaged record" "^recorded +(damaged|none)" -- "$W" calibrate "$D/cal"
run 0 "status: a damaged record is measured again" "flush policy +(recalibrated|engine):" -- \
	"$W" status "$D/cal" "$origin"
run 0 "status: then recorded again" "flush policy +(recorded|engine):" -- \
	"$W" status "$D/cal" "$origin"

# ---- a cache in use ----------------------------------------------------------
# A helper holds a cache open, as a server would.  The read-only commands
# read it without opening it (no recovery, not a byte written: the file's
# hash before and after) and say it is live; the commands that write
# refuse it with the owner's pid.
H=$builddir/tests/hold_cache
WB=$builddir/tools/wcbench/wcbench
if [ -x "$H" ]; then
	run 0 "create a cache to hold open" -- "$W" create "$D/live" "$origin" --size 8M
	keys_closed=""
	if [ $have_python = yes ]; then
		run 0 "status --json of the cache not in use" -- "$W" status --json "$D/live" "$origin"
		keys_closed=$(json_keys)
	else
		skip "status --json of the cache not in use" "no python3"
	fi
	mkfifo "$D/hold-in" "$D/hold-out"
	"$H" "$D/live" "$origin" 5 <"$D/hold-in" >"$D/hold-out" 2>"$D/hold-err" &
	hold_job=$!
	exec 3>"$D/hold-in"
	ready="" hold_pid=""
	read -r ready hold_pid <"$D/hold-out"
	cp "$D/hold-err" "$D/err"; : >"$D/out"
	assert "a helper holds the cache open (block 5 written with FUA)" test "$ready" = ready
	live_size=$(stat -c %s "$D/live")
	sum_live=$(sha256sum <"$D/live")
	run 0 "status of a live cache: read, not opened" \
		"^state +live, in use by pid $hold_pid \(hold_cache\)" -- "$W" status "$D/live" "$origin"
	assert "status of a live cache: the held FUA block is committed" \
		grep -q "^entries  *1 committed (dirty)" "$D/out"
	if [ $have_python = yes ]; then
		run 0 "status --json of a live cache" -- "$W" status --json "$D/live" "$origin"
		assert "status --json of a live cache: live, with the owner's pid" \
			test "$(json_get live) $(json_get in_use_by)" = "True $hold_pid"
		assert "status --json: the same keys live or not" test "$(json_keys)" = "$keys_closed"
		assert "status --json of a live cache: the owner's counters are null" \
			test "$(json_get writes) $(json_get status_line) $(json_get dirty_blocks)" = "None None 1"
	else
		skip "status --json of a live cache" "no python3"
		skip "status --json of a live cache: live, with the owner's pid" "no python3"
		skip "status --json: the same keys live or not" "no python3"
		skip "status --json of a live cache: the owner's counters are null" "no python3"
	fi
	run 0 "check of a live cache" "^state: live, in use by pid $hold_pid" -- "$W" check "$D/live"
	assert "check of a live cache: clean" grep -q "^result: .*clean (live" "$D/out"
	run 0 "dump of a live cache" "^# state: live, in use by pid $hold_pid" -- "$W" dump "$D/live"
	run 0 "calibrate CACHE of a live cache" "live, in use by pid $hold_pid" -- \
		"$W" calibrate "$D/live"
	assert "status, check, dump, calibrate left the live cache byte for byte" \
		test "$(sha256sum <"$D/live")" = "$sum_live"
	run 1 "writeback of a live cache is refused" \
		"cache .*live is in use by pid $hold_pid \(hold_cache\)" -- \
		"$W" writeback "$D/live" "$origin"
	run 1 "create over a live cache is refused" "in use by pid $hold_pid" -- \
		"$W" create "$D/live" "$D/origin2"
	run 1 "create --size over a live cache is refused" "in use by pid $hold_pid" -- \
		"$W" create "$D/live" "$D/origin2" --size 16M
	run 1 "a second cache on the live cache's origin is refused" \
		"origin .*origin is in use by pid $hold_pid" -- \
		"$W" create "$D/live2" "$origin" --size 8M
	if [ -x "$WB" ]; then
		run 1 "wcbench calibrate --cache refuses a live cache" "in use by pid $hold_pid" -- \
			"$WB" calibrate --cache "$D/live"
	else
		skip "wcbench calibrate --cache refuses a live cache" "wcbench not built"
	fi
	assert "the refusals left the live cache byte for byte, and its size" \
		test "$(sha256sum <"$D/live")" = "$sum_live" -a "$(stat -c %s "$D/live")" = "$live_size"
	exec 3>&-
	wait "$hold_job"
	rc=$?
	cp "$D/hold-err" "$D/err"; : >"$D/out"
	assert "the helper closed the cache cleanly" test "$rc" -eq 0
	run 0 "status once the owner closed: opened, the FUA block there" "1 dirty blocks" -- \
		"$W" status "$D/live" "$origin"
	assert "status once the owner closed: not live" sh -c "! grep -q '^state  *live' '$D/out'"
else
	skip "a cache in use" "$H not built"
fi

echo "1..$n"
exit 0
