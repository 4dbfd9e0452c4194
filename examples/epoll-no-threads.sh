#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The epoll example without the cache's threads: the loop drives write-back.
exec "${WC_TEST_BUILDDIR:-.}/examples/epoll_cache" --no-threads --cache /dev/shm/wc-epoll-example-nt.img "$@"
