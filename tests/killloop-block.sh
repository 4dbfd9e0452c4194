#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# killloop-block.sh -- the kill -9 loop (tests/killloop.c) on the block
# medium: the cache on a file of WC_TEST_DISK_DIR (default /var/tmp, a disk
# file system), 20 kills as TAP, as make check runs the pmem loop.
exec "${WC_TEST_BUILDDIR:-.}/tests/killloop" --medium block "$@"
