#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# rbd-model.sh [--long | --kills N] -- origin-model (tests/remote/
# origin_model.c) over an RBD image, as TAP, with the image's bytes read
# back by `rbd export` as well as through the origin.
#
# A 16 MiB image; init writes version 0 of an 8 MiB working set through
# the origin alone and formats a 4 MiB cache, so write-back runs during the
# writes too.  The cache keeps up to 90% dirty and writes back 8 blocks at
# a time (the window pinned there), so that the final write-back lasts long
# enough to be hit.  One run to the end, checked; then runs killed with SIGKILL
# at a random moment of their final write-back (librbd writes in flight,
# the image's exclusive lock held by the dead process), each followed by a
# recovery, a write-back and two checks against the model: the image read
# through the RBD origin, and the file `rbd export` writes (checked by
# origin-model verify with that file as the origin: the cache is clean by
# then, so nothing is written to it).
#
# After a kill the next open waits for the cluster to drop the dead
# client's watch on the image before it can take the lock:
# osd_client_watch_timeout, 5 s on clusters of tests/ceph/up, 30 s by
# default elsewhere.  make check: 2 kills (~1 minute); --long: 20.
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/remote/kill-loop.sh
. "$(dirname "$0")/../remote/kill-loop.sh"
OM=$builddir/tests/remote/origin-model
kills=2
ops=600
CONFIG=high_watermark=90,low_watermark=80,writeback_jobs=8,writeback_window_max_kib=0
case ${1:-} in
--long) kills=20; ops=3000 ;;
--kills) kills=${2:?--kills N} ;;
esac
[ -x "$OM" ] || skip_all "tests/remote/origin-model not built"
require_ceph
scratch
ceph_cluster
SPEC=$(ceph_image "model-$$" 16M)
cache=$D/cache
model=$D/model

# verify_export WHAT: `rbd export` of the image into a file, checked
# against the model with a copy of the (clean) cache in front of it: the
# copy is re-bound to the file (origin_rebind=1), the cache stays the
# image's.
verify_export() {
	rm -f "$D/export.img" "$D/export.cache"
	ceph_rbd export --no-progress "$WC_CEPH_POOL/model-$$" "$D/export.img" &&
		cp "$cache" "$D/export.cache" &&
		"$OM" verify "$D/export.img" "$D/export.cache" --model "$model" \
			--config "$CONFIG,origin_rebind=1"
	local rc=$?
	rm -f "$D/export.cache"
	return "$rc"
}

# readback: after a kill, the recovery, a write-back and the image against
# the model, through librbd and through rbd export.
readback() {
	local t0=$SECONDS
	check "kill $k, ${delay} ms into write-back (seed $seed): recovered, written back, the image matches the model" \
		"$OM" verify "$SPEC" "$cache" --model "$model" --config "$CONFIG"
	note "kill $k: reopening and checking took $((SECONDS - t0)) s (the dead writer's lock goes with its watch)"
	check "kill $k: rbd export matches the model" verify_export
}

"$OM" init "$SPEC" "$cache" --model "$model" --blocks 2048 --cache-size 4M --config "$CONFIG" \
	>"$D/init.out" 2>&1
rc=$?
[ $rc = 3 ] && skip_all "this libwcache was built without librbd"
if [ $rc != 0 ]; then
	not_ok "init"; sed 's/^/#   /' "$D/init.out"; finish
fi
ok "init: version 0 on the image, a fresh 4 MiB cache over 8 MiB"

seed=$RANDOM
out=$D/write.out
if "$OM" write "$SPEC" "$cache" --model "$model" --ops "$ops" --seed "$seed" --config "$CONFIG" \
	>"$out" 2>&1; then
	ok "$ops calls and a write-back, not interrupted (seed $seed): $(head -1 "$out")"
else
	not_ok "$ops calls and a write-back (seed $seed)"; sed 's/^/#   /' "$out"; finish
fi
check "the image read through librbd matches the model" \
	"$OM" verify "$SPEC" "$cache" --model "$model" --config "$CONFIG"
check "rbd export matches the model" verify_export
wb_ms=$(sed -n 's/^writeback done in \([0-9]*\) ms$/\1/p' "$out")
wb_ms=$(( ${wb_ms:-20} > 20 ? ${wb_ms:-20} : 20 ))
note "the final write-back took $wb_ms ms"

# Fewer tries and a slower poll than over NBD: each run after a kill
# first waits seconds for the dead writer's lock.
kill_loop -t 5 -p 0.005 "$SPEC" readback || finish
note "$landed of $kills kills landed during write-back (the rest after a write-back that ended first)"
finish
