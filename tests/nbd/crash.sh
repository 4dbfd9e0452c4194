#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# crash.sh ext4|xfs [--long | --kills N] -- kill -9 loop of nbdkit under a
# file system, as TAP.
#
# Each round: a writer creates files on the mounted file system; each file
# it fsyncs (and whose directory it fsyncs) is logged with its checksum, in a
# log outside the file system, only after both fsyncs returned.  At a random
# moment nbdkit is killed with SIGKILL, the writer too, and the mount, loop
# device and FUSE mount are torn down.  nbdkit restarts on the same cache and
# origin; a mount and unmount replay the journal; fsck must find nothing;
# every logged file must hold exactly its content.  At the end the cache is
# written back and the origin alone must hold the same clean file system.
# make check runs 3 kills per file system; --long runs 20.
. "$(dirname "$0")/lib.sh"
FS=${1:?usage: crash.sh ext4|xfs [--long | --kills N]}
kills=3
case ${2:-} in
--long) kills=20 ;;
--kills) kills=${3:?--kills N} ;;
esac
# shellcheck disable=SC2046
require $(fs_tools "$FS") sha256sum head dd sync
truncate -s 320M "$D/origin"
: >"$D/log"
# Smaller than what the rounds write, so write-back runs between the kills.
CACHE_SIZE=8M

# writer DIR TAG: create files until killed.  Sizes are odd (sub-block
# tails); every third file is left unsynced, which may or may not survive.
writer() {
	local i=0 f sz sum p=$D/payload.$2
	mkdir "$1/k$2" && sync "$1" || exit 1
	while :; do
		i=$((i + 1))
		f=k$2/f$i
		sz=$(( (RANDOM % 256 + 1) * 512 + RANDOM % 512 ))
		head -c "$sz" /dev/urandom >"$p" || exit 1
		if [ $((i % 3)) = 0 ]; then
			cp "$p" "$1/$f" || exit 1
			continue
		fi
		sum=$(sha256sum <"$p") || exit 1
		dd if="$p" of="$1/$f" conv=fsync status=none 2>/dev/null || exit 1
		sync "$1/k$2" || exit 1
		echo "${sum%% *}  $f" >>"$D/log"
	done
}

start_nbdkit || bail "nbdkit did not start"
attach || bail "nbdfuse/losetup failed"
check "mkfs.$FS on the plugin" mkfs_fs "$FS" "$LOOP"
fsck_failures=0 lost=0 wb_total=0 rmw_total=0
for k in $(seq "$kills"); do
	if ! mount_fs "$FS"; then
		not_ok "kill $k: mount"; break
	fi
	writer "$MNT" "$k" &
	WRITER_PID=$!
	# A random moment 0.5 .. 3 s in; nothing depends on how much got done.
	sleep "$((RANDOM % 3)).$((RANDOM % 10))"; sleep 0.5
	wb=$(stat_of writeback_bytes); rmw=$(stat_of plugin_rmw_blocks)
	stop_nbdkit KILL
	wb_total=$((wb_total + ${wb:-0})); rmw_total=$((rmw_total + ${rmw:-0}))
	kill -KILL "$WRITER_PID" 2>/dev/null
	wait "$WRITER_PID" 2>/dev/null
	WRITER_PID=
	detach

	start_nbdkit || bail "kill $k: nbdkit did not restart"
	attach || bail "kill $k: nbdfuse/losetup failed"
	# The mount replays the journal; fsck -n would only see it unreplayed.
	if ! mount_fs "$FS" || ! umount_fs; then
		not_ok "kill $k: mount to replay the journal"; break
	fi
	if ! fsck_fs "$FS" "$LOOP" >"$D/fsck.out" 2>&1; then
		fsck_failures=$((fsck_failures + 1))
		not_ok "kill $k: fsck clean"
		tail -20 "$D/fsck.out" | sed 's/^/#   /'
		continue
	fi
	mount_fs "$FS" || { not_ok "kill $k: remount"; break; }
	bad=$(verify_log "$D/log" "$MNT")
	lost=$((lost + bad))
	if [ "$bad" = 0 ]; then
		ok "kill $k: fsck clean, all $(wc -l <"$D/log") fsynced files intact"
	else
		not_ok "kill $k: $bad of $(wc -l <"$D/log") fsynced files lost or wrong"
		(cd "$MNT" && sha256sum -c "$D/log" 2>&1 | grep -v ': OK$' | head -5 | sed 's/^/#   /')
	fi
	umount_fs
done
note "$FS: kills=$kills fsck_failures=$fsck_failures fsynced_files=$(wc -l <"$D/log") lost=$lost"
note "before the kills (stats file, up to 1 s old): writeback_bytes=$wb_total plugin_rmw_blocks=$rmw_total"
detach
check "nbdkit stops on SIGTERM" stop_nbdkit TERM
check "wcctl writeback empties the cache into the origin" "$WCCTL" writeback "$D/cache" "$D/origin" --quiet
check "the origin alone holds a clean $FS" origin_fsck "$FS"
finish
