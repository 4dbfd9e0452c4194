/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * iov.c -- wc_writev and wc_readv: the iovecs walked block by block.
 *
 * Whole blocks that lie in one buffer go to the data path as they are (one
 * call per run of them, so a request of 4 KiB buffers costs one call per
 * buffer, and a single buffer is exactly wc_write/wc_read).  A block split
 * between buffers is gathered into, or scattered from, one block of bounce
 * memory.  On the block medium a write is gathered whole (in chunks of
 * WC_IOV_GATHER) instead: each data-path call there is a record and, with
 * FUA, a synced device write, so a request split into runs would pay one
 * per buffer instead of one.  A vectored FUA write on persistent memory
 * commits once, after its last block.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/io.h"
#include "core/cache.h"
#include "util/error.h"

#define WC_IOV_GATHER (1u << 20)

ssize_t wc_iov_total(struct wc_cache *c, const char *op, const struct iovec *iov, int iovcnt)
{
	size_t total = 0;

	if (!iov)
		return wc_err(-EINVAL, "%s %s: NULL iovec array", c->cache_path, op);
	if (iovcnt < 1 || iovcnt > IOV_MAX)
		return wc_err(-EINVAL, "%s %s: iovcnt %d is not in 1..%d", c->cache_path, op, iovcnt, IOV_MAX);
	for (int i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return wc_err(-EINVAL, "%s %s: iov[%d] has a NULL buffer", c->cache_path, op, i);
		if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
			return wc_err(-EINVAL, "%s %s: the buffers' lengths overflow at iov[%d]", c->cache_path,
			              op, i);
		total += iov[i].iov_len;
	}
	return (ssize_t)total;
}

struct cursor {
	const struct iovec *iov;
	int i;
	size_t off;
};

/* Bytes contiguous at the cursor (0 only at the end). */
static size_t contiguous(struct cursor *k, int iovcnt)
{
	while (k->i < iovcnt && k->off == k->iov[k->i].iov_len) {
		k->i++;
		k->off = 0;
	}
	return k->i < iovcnt ? k->iov[k->i].iov_len - k->off : 0;
}

static char *at(const struct cursor *k)
{
	return (char *)k->iov[k->i].iov_base + k->off;
}

/* Copy n bytes between the iovecs at the cursor and flat memory. */
static void move(struct cursor *k, int iovcnt, char *flat, size_t n, bool to_flat)
{
	while (n) {
		size_t m = contiguous(k, iovcnt);

		if (m > n)
			m = n;
		if (to_flat)
			memcpy(flat, at(k), m);
		else
			memcpy(at(k), flat, m);
		flat += m;
		k->off += m;
		n -= m;
	}
}

static ssize_t gather_write(struct wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset,
                            size_t len, unsigned flags)
{
	size_t chunk = len < WC_IOV_GATHER ? len : WC_IOV_GATHER;
	struct cursor k = { iov, 0, 0 };
	char *buf = malloc(chunk);
	ssize_t ret = 0;

	if (!buf)
		return wc_err(-ENOMEM, "%s writev: %zu-byte gather buffer", c->cache_path, chunk);
	for (size_t done = 0; done < len; done += chunk) {
		if (chunk > len - done)
			chunk = len - done; /* a multiple of the block size, as len */
		move(&k, iovcnt, buf, chunk, true);
		ret = wc_io_write(c, buf, chunk, offset + done, flags, false);
		if (ret < 0)
			break;
	}
	free(buf);
	return ret < 0 ? ret : (ssize_t)len;
}

ssize_t wc_io_writev(struct wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset,
                     size_t len, unsigned flags, bool nowait)
{
	uint32_t bs = c->layout.block_size;
	struct cursor k = { iov, 0, 0 };
	char *bounce = NULL;
	ssize_t ret = 0;

	if (iovcnt == 1)
		return wc_io_write(c, iov[0].iov_base, len, offset, flags, nowait);
	if (c->blk)
		return nowait ? -EAGAIN : gather_write(c, iov, iovcnt, offset, len, flags);
	for (size_t done = 0; done < len;) {
		size_t m = contiguous(&k, iovcnt), n;

		if (m >= bs) {
			n = m / bs * bs;
			if (n > len - done)
				n = len - done;
			ret = wc_io_write(c, at(&k), n, offset + done, 0, nowait);
			k.off += n;
		} else {
			if (!bounce && !(bounce = malloc(bs))) {
				ret = wc_err(-ENOMEM, "%s writev: %u-byte bounce block", c->cache_path, bs);
				break;
			}
			n = bs;
			move(&k, iovcnt, bounce, n, true);
			ret = wc_io_write(c, bounce, n, offset + done, 0, nowait);
		}
		if (ret < 0)
			break;
		done += n;
	}
	free(bounce);
	if (ret >= 0 && (flags & WC_FUA) && c->cfg.fua)
		ret = wc_commit(c, false);
	return ret < 0 ? ret : (ssize_t)len;
}

ssize_t wc_io_readv(struct wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset,
                    size_t len, unsigned flags)
{
	uint32_t bs = c->layout.block_size;
	struct cursor k = { iov, 0, 0 };
	char *bounce = NULL;
	ssize_t ret = 0;

	if (iovcnt == 1)
		return wc_io_read(c, iov[0].iov_base, len, offset, flags);
	for (size_t done = 0; done < len;) {
		size_t m = contiguous(&k, iovcnt), n;

		if (m >= bs) {
			n = m / bs * bs;
			if (n > len - done)
				n = len - done;
			ret = wc_io_read(c, at(&k), n, offset + done, flags);
			k.off += n;
		} else {
			if (!bounce && !(bounce = malloc(bs))) {
				ret = wc_err(-ENOMEM, "%s readv: %u-byte bounce block", c->cache_path, bs);
				break;
			}
			n = bs;
			ret = wc_io_read(c, bounce, n, offset + done, flags);
			if (ret >= 0)
				move(&k, iovcnt, bounce, n, false);
		}
		if (ret < 0)
			break;
		done += n;
	}
	free(bounce);
	return ret < 0 ? ret : (ssize_t)len;
}

ssize_t wc_writev(wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset, unsigned flags)
{
	ssize_t len;
	int ret;

	if (!c)
		return wc_err(-EINVAL, "wc_writev: NULL cache");
	len = wc_iov_total(c, "writev", iov, iovcnt);
	if (len < 0)
		return len;
	ret = wc_io_check(c, "writev", iov, (size_t)len, offset);
	if (ret)
		return ret;
	if (flags & ~WC_FUA)
		return wc_err(-EINVAL, "%s writev: unknown flags 0x%x", c->cache_path, flags);
	ret = wc_io_write_checked(c, "writev", offset);
	if (ret)
		return ret;
	return wc_io_writev(c, iov, iovcnt, offset, (size_t)len, flags, false);
}

ssize_t wc_readv(wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset)
{
	ssize_t len;
	int ret;

	if (!c)
		return wc_err(-EINVAL, "wc_readv: NULL cache");
	len = wc_iov_total(c, "readv", iov, iovcnt);
	if (len < 0)
		return len;
	ret = wc_io_check(c, "readv", iov, (size_t)len, offset);
	if (ret)
		return ret;
	return wc_io_readv(c, iov, iovcnt, offset, (size_t)len, 0);
}
