/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * io.h -- the data path as the other entry points use it: the checks and
 * the work of wc_write and wc_read apart, so that vectored (iov.c) and
 * asynchronous (async.c) requests check once and run the same code.
 */
#ifndef WC_API_IO_H
#define WC_API_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct wc_cache;

/* Block-aligned, inside the origin, buffer not NULL: 0 or -EINVAL. */
int wc_io_check(struct wc_cache *c, const char *op, const void *buf, size_t len, uint64_t offset);
/* -EIO + message while the cache is in its error state. */
int wc_io_write_checked(struct wc_cache *c, const char *op, uint64_t offset);
/* A checked write.  nowait: -EAGAIN (some blocks may be written) instead
 * of anything that waits -- for room, for the origin (cleaner mode), for
 * the block medium's device. */
ssize_t wc_io_write(struct wc_cache *c, const void *buf, size_t len, uint64_t offset, unsigned flags,
                    bool nowait);
/* A checked read; flags: WC_REQ_NO_READAHEAD. */
ssize_t wc_io_read(struct wc_cache *c, void *buf, size_t len, uint64_t offset, unsigned flags);
/* pmem: copy `block` into dst if the cache holds it (never waits). */
bool wc_io_read_hit(struct wc_cache *c, void *dst, uint64_t block);

/* Vectored (iov.c), checked: as above over an iovec array. */
ssize_t wc_io_writev(struct wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset,
                     size_t len, unsigned flags, bool nowait);
ssize_t wc_io_readv(struct wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset,
                    size_t len, unsigned flags);
/* The iovecs' total, checked: 1..IOV_MAX buffers, none NULL with a length,
 * a sum that fits; -EINVAL + message naming `op` otherwise. */
ssize_t wc_iov_total(struct wc_cache *c, const char *op, const struct iovec *iov, int iovcnt);

#endif
