#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# nbd-model.sh [--long | --kills N] -- origin-model (origin_model.c) over
# NBD, as TAP.
#
# Two servers, each behind nbdkit's delay filter (1 ms per read and per
# write: a remote disk's latency, not a local one's):
#   file    the file plugin on a file under /var/tmp (a disk file system),
#           multi-conn: the cache opens 4 connections;
#   memory  the memory plugin with multi-conn disabled: one connection.
# For each: init (version 0 through the origin alone, a fresh 4 MiB cache
# over an 8 MiB working set, so write-back runs during the writes too);
# one run to the end, checked; then runs killed with SIGKILL at a random
# moment of their final write-back, each followed by a recovery, a
# write-back and a check of the origin's bytes against the model.  The
# cache keeps up to 90% dirty and writes back 8 blocks at a time (the window
# pinned there), so that the final write-back lasts long enough (~100 ms) to
# be hit.
# make check: 3 kills per server (well under a minute); --long: 20.
. "$(dirname "$0")/nbdkit.sh"
# shellcheck source=tests/remote/kill-loop.sh
. "$(dirname "$0")/kill-loop.sh"
OM=$builddir/tests/remote/origin-model
kills=3
ops=600
# Much dirty at the end, a narrow write-back window: a target for the kills.
CONFIG=high_watermark=90,low_watermark=80,writeback_jobs=8,writeback_window_max_kib=0
case ${1:-} in
--long) kills=20; ops=3000 ;;
--kills) kills=${2:?--kills N} ;;
esac
[ -x "$OM" ] || skip_all "tests/remote/origin-model not built"
require_nbdkit file memory
scratch

# readback NAME: after a kill, the recovery, a write-back and the export
# against the model.
readback() {
	check "$1: kill $k, ${delay} ms into write-back (seed $seed): recovered, written back, the export matches the model" \
		"$OM" verify "$URI" "$cache" --model "$model" --config "$CONFIG"
}

# run_model NAME: the init, the uninterrupted run and the kills against
# the server at $URI.
run_model() {
	local name=$1 cache=$D/$1.cache model=$D/$1.model wb_ms out rc seed landed
	"$OM" init "$URI" "$cache" --model "$model" --blocks 2048 --cache-size 4M \
		--config "$CONFIG" >"$D/init.out" 2>&1
	rc=$?
	[ $rc = 3 ] && skip_all "this libwcache was built without libnbd"
	if [ $rc != 0 ]; then
		not_ok "$name: init"; sed 's/^/#   /' "$D/init.out"; return
	fi
	ok "$name: init: version 0 on the export, a fresh cache"

	seed=$RANDOM
	out=$D/$name.write.out
	if "$OM" write "$URI" "$cache" --model "$model" --ops "$ops" --seed "$seed" \
		--config "$CONFIG" >"$out" 2>&1; then
		ok "$name: $ops calls and a write-back, not interrupted (seed $seed): $(head -1 "$out")"
	else
		not_ok "$name: $ops calls and a write-back (seed $seed)"; sed 's/^/#   /' "$out"; return
	fi
	check "$name: the export matches the model" \
		"$OM" verify "$URI" "$cache" --model "$model" --config "$CONFIG"
	# How long the final write-back took, to aim the kills inside it.
	wb_ms=$(sed -n 's/^writeback done in \([0-9]*\) ms$/\1/p' "$out")
	wb_ms=$(( ${wb_ms:-20} > 20 ? ${wb_ms:-20} : 20 ))
	note "$name: the final write-back took $wb_ms ms"

	kill_loop -l "$name: " "$URI" readback "$name" || return
	if [ "$landed" = "$kills" ]; then ok "$name: all $kills kills landed during write-back"
	else not_ok "$name: $landed of $kills kills landed during write-back (the final write-back took $wb_ms ms)"; fi
}

truncate -s 8M "$V/origin"
serve file --filter=delay file "$V/origin" delay-read=1ms delay-write=1ms || bail "nbdkit file did not start"
run_model file
unserve file

serve memory --filter=multi-conn --filter=delay memory 8M multi-conn-mode=disable \
	delay-read=1ms delay-write=1ms || bail "nbdkit memory did not start"
run_model memory
unserve memory
finish
