# SPDX-License-Identifier: BSD-3-Clause
# lib.sh -- sourced by the tests in tests/nbd/: the path
#   nbdkit (wcache plugin, unix socket) -> nbdfuse -> losetup -> file system
# set up and torn down, and SKIP when something is missing (TAP output
# from tests/tap.sh).
#
# Every resource (nbdkit, nbdfuse, loop device, mounts, the scratch folder
# under /dev/shm) is recorded when made and released by the EXIT trap, on
# success, failure or interruption.

set -u
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
builddir=${WC_TEST_BUILDDIR:-.}
# The NBD and RBD backends are modules: the build tree's (lib/local.am).
export WCACHE_MODULE_DIR=${WCACHE_MODULE_DIR:-$(cd "$builddir" && pwd)/lib/modules/.libs}
PLUGIN=$builddir/nbdkit/.libs/nbdkit-wcache-plugin.so
WCCTL=$builddir/tools/wcctl/wcctl
export PMEM2_FORCE_GRANULARITY=${PMEM2_FORCE_GRANULARITY:-CACHE_LINE}
# The uninstalled plugin links the uninstalled library.
export LD_LIBRARY_PATH=$builddir/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# require CMD...: skip the whole test unless all of this can run here.
require() {
	local c
	[ "$(id -u)" = 0 ] || skip_all "needs root (loop devices, mount)"
	[ -f "$PLUGIN" ] || skip_all "plugin not built (configure did not find nbdkit-plugin-dev)"
	for c in nbdkit nbdfuse losetup fusermount3 mount umount "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip_all "$c not installed"
	done
	[ -c /dev/fuse ] || skip_all "no /dev/fuse"
	[ -e /dev/loop-control ] || skip_all "no /dev/loop-control"
	# nbdkit itself is not built with ASan, so it cannot dlopen a plugin
	# that needs libasan unless libasan is preloaded into it.
	if ldd "$PLUGIN" "$builddir/lib/.libs/libwcache.so" 2>/dev/null | grep -Eq 'lib(a|ub|t)san'; then
		skip_all "sanitized build: nbdkit would need LD_PRELOAD of the sanitizer runtime"
	fi
	D=$(mktemp -d /dev/shm/wc-nbd-XXXXXX) || bail "no scratch folder in /dev/shm"
	if [ "${WC_NBD_MEDIUM:-pmem}" = block ]; then
		# The cache on a disk file (the block medium; tmpfs is not a
		# disk): $D/cache points at it, so every step names it as usual.
		DISK_D=$(mktemp -d "${WC_TEST_DISK_DIR:-/var/tmp}/wc-nbd-XXXXXX") ||
			bail "no scratch folder in ${WC_TEST_DISK_DIR:-/var/tmp}"
		ln -s "$DISK_D/cache" "$D/cache"
		NBDKIT_CONFIG="medium=block${NBDKIT_CONFIG:+,$NBDKIT_CONFIG}"
	fi
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	# A probe of the whole chain: FUSE and loop may exist and still be refused
	# (containers), which is a SKIP, not a failure.
	truncate -s 1M "$D/probe"
	mkdir "$D/probe.fuse"
	nbdkit -U "$D/probe.sock" -P "$D/probe.pid" memory 1M >/dev/null 2>&1 ||
		skip_all "nbdkit does not start"
	NBDKIT_PID=$(cat "$D/probe.pid")
	nbdfuse "$D/probe.fuse" --unix "$D/probe.sock" >/dev/null 2>&1 &
	FUSE_PID=$!; FUSE_DIR=$D/probe.fuse
	disown "$FUSE_PID"
	wait_for_file "$D/probe.fuse/nbd" || skip_all "nbdfuse cannot mount (FUSE refused?)"
	LOOP=$(losetup -f --show "$D/probe.fuse/nbd" 2>/dev/null) || skip_all "losetup refused"
	detach
	stop_nbdkit
}

# Poll, with an upper bound that only turns a hang into a failure.
wait_for_file() {
	local i
	for i in $(seq 600); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

NBDKIT_PID=
FUSE_PID=
FUSE_DIR=
LOOP=
MNT=
CACHE_SIZE=${CACHE_SIZE:-16M}
NBDKIT_CONFIG=${NBDKIT_CONFIG:-}
fuse_seq=0

# start_nbdkit: serve $D/cache in front of $D/origin on $D/sock.
start_nbdkit() {
	local cfg="cache_size=$CACHE_SIZE${NBDKIT_CONFIG:+,$NBDKIT_CONFIG}"
	rm -f "$D/sock" "$D/pid"
	nbdkit -U "$D/sock" -P "$D/pid" "$PLUGIN" cache="$D/cache" origin="$D/origin" \
		create=true config="$cfg" stats="$D/stats.json" >>"$D/nbdkit.log" 2>&1 ||
		{ sed 's/^/#   /' "$D/nbdkit.log" | tail; return 1; }
	wait_for_file "$D/pid" || return 1
	NBDKIT_PID=$(cat "$D/pid")
}

# stop_pid PID: TERM, then KILL if it is still there after a while.
stop_pid() {
	local i
	kill "$1" 2>/dev/null
	for i in $(seq 100); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# stop_nbdkit [SIGNAL]: TERM (a clean close: commit, close the cache) by
# default; KILL for a crash.  Waits until the process is gone.
stop_nbdkit() {
	local sig=${1:-TERM} i
	[ -n "$NBDKIT_PID" ] || return 0
	kill -"$sig" "$NBDKIT_PID" 2>/dev/null
	for i in $(seq 600); do
		kill -0 "$NBDKIT_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$NBDKIT_PID" 2>/dev/null && { kill -KILL "$NBDKIT_PID"; sleep 0.5; }
	NBDKIT_PID=
}

# attach: nbdfuse exposes the export as a file, a loop device over it.
attach() {
	fuse_seq=$((fuse_seq + 1))
	FUSE_DIR=$D/fuse.$fuse_seq
	mkdir -p "$FUSE_DIR"
	nbdfuse "$FUSE_DIR" --unix "$D/sock" >>"$D/nbdfuse.log" 2>&1 &
	FUSE_PID=$!
	# Not waited for: nbdfuse aborts when its server is killed, and bash would
	# report that on the test's output.
	disown "$FUSE_PID"
	wait_for_file "$FUSE_DIR/nbd" || return 1
	LOOP=$(losetup -f --show "$FUSE_DIR/nbd") || return 1
}

# detach: undo attach and mount, lazily, so that a dead server cannot
# wedge the teardown.
detach() {
	if [ -n "$MNT" ]; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
		MNT=
	fi
	if [ -n "$LOOP" ]; then
		losetup -d "$LOOP" 2>/dev/null
		LOOP=
	fi
	if [ -n "$FUSE_DIR" ]; then
		fusermount3 -u "$FUSE_DIR" 2>/dev/null || fusermount3 -uz "$FUSE_DIR" 2>/dev/null
		FUSE_DIR=
	fi
	if [ -n "$FUSE_PID" ]; then
		stop_pid "$FUSE_PID"
		FUSE_PID=
	fi
}

cleanup() {
	local rc=$?
	[ -n "${WRITER_PID:-}" ] && { kill -KILL "$WRITER_PID" 2>/dev/null; wait "$WRITER_PID" 2>/dev/null; }
	detach
	stop_nbdkit KILL
	[ -n "${ORIGIN_LOOP:-}" ] && losetup -d "$ORIGIN_LOOP" 2>/dev/null
	[ -n "${ORIGIN_MNT:-}" ] && umount -l "$ORIGIN_MNT" 2>/dev/null
	if [ -n "${KEEP:-}" ]; then echo "# kept $D ${DISK_D:-}"; else rm -rf "$D" ${DISK_D:+"$DISK_D"}; fi
	exit $rc
}

# File-system specifics.
mkfs_fs() { # mkfs_fs FS DEVICE
	case $1 in
	ext4) mkfs.ext4 -q -F "$2" ;;
	xfs) mkfs.xfs -q -f "$2" ;;
	esac
}
fsck_fs() { # fsck_fs FS DEVICE: read only, non-zero on any inconsistency
	case $1 in
	ext4) e2fsck -fn "$2" ;;
	xfs) xfs_repair -n "$2" ;;
	esac
}
fs_tools() {
	case $1 in
	ext4) echo mkfs.ext4 e2fsck ;;
	xfs) echo mkfs.xfs xfs_repair ;;
	*) bail "unknown file system $1" ;;
	esac
}

# mount_fs FS: mount $LOOP on $D/mnt.
mount_fs() {
	mkdir -p "$D/mnt"
	mount -t "$1" "$LOOP" "$D/mnt" || return 1
	MNT=$D/mnt
}
umount_fs() {
	[ -n "$MNT" ] || return 0
	umount "$MNT" || return 1
	MNT=
}

# stat_of NAME: a counter from the plugin's stats file.
stat_of() { sed -n "s/^  \"$1\": \([0-9]*\),\$/\1/p" "$D/stats.json" 2>/dev/null; }

# verify_log LOG ROOT: every "sha256  path" line of LOG (paths relative to
# ROOT) must hold exactly that content; prints the number that do not.
verify_log() {
	local bad
	bad=$( (cd "$2" && sha256sum --quiet -c "$1" 2>/dev/null) | grep -c ': FAILED' )
	echo "$bad"
}

# origin_fsck FS: the origin file alone, through a loop device of its own.
origin_fsck() {
	local rc
	ORIGIN_LOOP=$(losetup -f --show -r "$D/origin") || return 1
	fsck_fs "$1" "$ORIGIN_LOOP"
	rc=$?
	losetup -d "$ORIGIN_LOOP"
	ORIGIN_LOOP=
	return $rc
}
