#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# multiconn.sh -- two connections write the same blocks (sub-block pieces
# concurrently, whole blocks one after the other), only one of them
# flushes, nbdkit is killed with SIGKILL while both are still connected;
# after a restart everything written before the flush must read back.  Then
# the same content must be in the origin alone after `wcctl writeback`.
# With autocommit pushed out of reach, the flush is the only commit.
. "$(dirname "$0")/lib.sh"
MC=$builddir/tests/nbd/multiconn
[ -x "$MC" ] || skip_all "tests/nbd/multiconn not built (libnbd-dev missing at configure)"
require
truncate -s 64M "$D/origin"
CACHE_SIZE=32M
NBDKIT_CONFIG=autocommit_blocks=100000000,autocommit_ms=3600000
seed=$RANDOM

start_nbdkit || bail "nbdkit did not start"
"$MC" write "$D/sock" "$seed" >"$D/mc.out" 2>&1 &
WRITER_PID=$!
for i in $(seq 1200); do
	grep -q '^wrote' "$D/mc.out" && break
	kill -0 "$WRITER_PID" 2>/dev/null || break
	sleep 0.1
done
if grep -q '^wrote' "$D/mc.out"; then ok "two connections wrote the same blocks, one flushed"
else not_ok "two connections wrote the same blocks, one flushed"; sed 's/^/#   /' "$D/mc.out"; fi
note "rmw blocks (stats file, up to 1 s old): $(stat_of plugin_rmw_blocks)"
stop_nbdkit KILL
kill -KILL "$WRITER_PID" 2>/dev/null
wait "$WRITER_PID" 2>/dev/null
WRITER_PID=

start_nbdkit || bail "nbdkit did not restart"
check "after kill -9: both connections' writes are there (seed $seed)" "$MC" verify "$D/sock" "$seed"
check "nbdkit stops on SIGTERM" stop_nbdkit TERM
check "wcctl writeback" "$WCCTL" writeback "$D/cache" "$D/origin" --quiet
# The origin alone, served by nbdkit's own file plugin.
rm -f "$D/sock"
nbdkit -U "$D/sock" -P "$D/pid" file "$D/origin" && NBDKIT_PID=$(cat "$D/pid")
check "after write-back: the origin alone holds them" "$MC" verify "$D/sock" "$seed"
check "nbdkit (file) stops" stop_nbdkit TERM
finish
