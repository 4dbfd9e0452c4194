#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# fs.sh ext4|xfs -- a real file system on the wcache plugin, as TAP:
# mkfs, a tree of files (more than the cache holds, so write-back runs),
# some of them fsynced; unmount, fsck clean, remount, every checksum; the
# same after a clean nbdkit restart; then `wcctl writeback` and the origin
# file alone must hold the same clean file system.
. "$(dirname "$0")/lib.sh"
FS=${1:?usage: fs.sh ext4|xfs}
# shellcheck disable=SC2046
require $(fs_tools "$FS") sha256sum head
truncate -s 320M "$D/origin"  # xfs wants >= 300 MB

# write_tree DIR: about 40 MB in 120 files of odd sizes (sub-block tails),
# every third one fsynced as it is written, plus a copy of the source tree.
write_tree() {
	local i sz f
	mkdir -p "$1/tree" || return 1
	for i in $(seq 120); do
		sz=$(( (i * 7919 % 640 + 1) * 512 + i * 37 % 512 ))
		f=$1/tree/d$((i % 6))/f$i
		mkdir -p "${f%/*}" || return 1
		if [ $((i % 3)) = 0 ]; then
			head -c "$sz" /dev/urandom | dd of="$f" conv=fsync status=none || return 1
		else
			head -c "$sz" /dev/urandom >"$f" || return 1
		fi
	done
	cp -a "${WC_TEST_SRCDIR:-$(dirname "$0")/../..}/lib" "$1/src" || return 1
	(cd "$1" && find . -type f ! -path './lost+found/*' -exec sha256sum {} +) >"$D/sums"
}

content_ok() { [ "$(verify_log "$D/sums" "$MNT")" = 0 ] && [ -s "$D/sums" ]; }
stat_of() { sed -n "s/^  \"$1\": \\([0-9]*\\),\$/\\1/p" "$D/stats.json"; }

start_nbdkit || bail "nbdkit did not start"
attach || bail "nbdfuse/losetup failed"
check "mkfs.$FS on the plugin" mkfs_fs "$FS" "$LOOP"
check "mount" mount_fs "$FS"
check "write a tree of files (some fsynced)" write_tree "$MNT"
note "$(wc -l <"$D/sums") files, $(du -sm "$D/mnt" | cut -f1) MB on a ${CACHE_SIZE} cache"
check "unmount" umount_fs
check "fsck clean after unmount" fsck_fs "$FS" "$LOOP"
check "remount" mount_fs "$FS"
check "every file has its checksum" content_ok
check "unmount again" umount_fs
detach
check "nbdkit stops on SIGTERM (commit, close)" stop_nbdkit TERM
note "stats: writes=$(stat_of writes) writeback_bytes=$(stat_of writeback_bytes) plugin_rmw_blocks=$(stat_of plugin_rmw_blocks) plugin_zero_bytes=$(stat_of plugin_zero_bytes)"
check "the stats file shows writes" test "$(stat_of writes)" -gt 0
check "the stats file shows write-back (the tree is larger than the cache)" \
	test "$(stat_of writeback_bytes)" -gt 0

start_nbdkit || bail "nbdkit did not restart"
attach || bail "nbdfuse/losetup failed"
check "fsck clean after a clean restart" fsck_fs "$FS" "$LOOP"
check "mount after restart" mount_fs "$FS"
check "every file has its checksum after restart" content_ok
check "unmount" umount_fs
detach
check "nbdkit stops" stop_nbdkit TERM

check "wcctl writeback empties the cache into the origin" "$WCCTL" writeback "$D/cache" "$D/origin" --quiet
check "the origin alone holds a clean $FS" origin_fsck "$FS"
ORIGIN_LOOP=$(losetup -f --show -r "$D/origin") && mkdir -p "$D/omnt" &&
	mount -o ro -t "$FS" "$ORIGIN_LOOP" "$D/omnt" && ORIGIN_MNT=$D/omnt
check "the origin alone holds every file" test "$(verify_log "$D/sums" "$D/omnt")" = 0
umount "$D/omnt" && ORIGIN_MNT=
losetup -d "$ORIGIN_LOOP" && ORIGIN_LOOP=
finish
