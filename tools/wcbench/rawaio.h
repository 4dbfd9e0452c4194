/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rawaio.h -- the origin's raw write bandwidth, measured with a plain libaio
 * loop (no cache, no origin backend): the baseline that `wcbench writeback`
 * divides the cache's write-back bandwidth by.  For an origin that is not a
 * local path (an NBD URI), the same loop through the origin's backend
 * (raworigin.c).
 */
#ifndef WC_RAWAIO_H
#define WC_RAWAIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Write [0, bytes) of `path` (an existing regular file or block device at
 * least `bytes` long) in `io_size` requests, `qd` in flight, in offset order
 * (sequential) or in a fixed pseudo-random permutation of the io_size slots
 * (each slot written once), then fdatasync.  O_DIRECT when the file system
 * takes it, else buffered.  *mbps_out = bytes / seconds / 1e6, timed from
 * the first submit to the end of fdatasync.
 *
 * bytes must be a multiple of io_size, and io_size of the O_DIRECT alignment.
 * Every request carries its own offset in its first 8 bytes (little-endian),
 * the rest is 0x5a, so a caller can verify what was written.
 * Returns 0 or -errno with a message (wc_errmsg()).
 */
int wc_rawaio_write_bw(const char *path, uint64_t bytes, size_t io_size, unsigned qd,
                       bool sequential, double *mbps_out);

/* The same, also sending an fdatasync request (IOCB_CMD_FDSYNC, one at a
 * time) each time another `flush_every` bytes of writes completed, while the
 * writes go on: the flush cadence of write-back, which flushes each round
 * while the next round writes.  0 = only the final fdatasync. */
int wc_rawaio_write_bw_flushing(const char *path, uint64_t bytes, size_t io_size, unsigned qd,
                                bool sequential, uint64_t flush_every, double *mbps_out);

/* The baselines' pseudo-random generator (xorshift64; *state non-zero),
 * which `wcbench writeback` draws its own samples from too. */
uint64_t wc_rawaio_xorshift64(uint64_t *state);
/* 0 .. n-1 in a fixed pseudo-random order: Fisher-Yates driven by
 * wc_rawaio_xorshift64 from `seed`, so one seed always gives one order.
 * NULL when out of memory; the caller frees it. */
uint64_t *wc_rawaio_permutation(uint64_t n, uint64_t seed);

/* The same for any origin wc_origin_open() takes, through its backend's
 * submit/poll/flush (requests carry the same offsets and fill). */
int wc_raworigin_write_bw(const char *origin, uint64_t bytes, size_t io_size, unsigned qd,
                          bool sequential, double *mbps_out);

#endif
