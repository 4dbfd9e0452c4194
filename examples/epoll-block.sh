#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The epoll example without the cache's threads, the cache on the block
# medium: its file on a disk (O_DIRECT; /var/tmp, not tmpfs), one per run so
# parallel runs do not share it.
exec "${WC_TEST_BUILDDIR:-.}/examples/epoll_cache" --no-threads --medium block \
	--cache /var/tmp/wc-epoll-example-block.$$.img "$@"
