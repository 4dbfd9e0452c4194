/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wcache.h -- libwcache public API: a persistent-memory write-back cache in
 * front of a slow block device, and the flush engine it is built on.
 *
 * Conventions (every function):
 *  - returns 0 (or a byte count) on success and a negative errno value on
 *    failure; errno itself is never relied upon;
 *  - after a failure, wc_errmsg() returns a thread-local message saying what
 *    failed, where (path, offset) and why; it stays valid until the next
 *    failing call in the same thread;
 *  - everything is thread-safe unless said otherwise.
 *
 * Build: pkg-config --cflags --libs wcache
 */
#ifndef WCACHE_H
#define WCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* WCACHE_VERSION_MAJOR, _MINOR, _PATCH: the release this header came with. */
#include "wcache_version.h"

/* 0.7: the release of the library the program runs with, e.g. "0.7.0": the
 * same as WCACHE_VERSION_STRING, or later when the program was built
 * against an older header.  A static string. */
const char *wc_version(void);

/* ======================================================================
 * Flush engine: moving bytes into the persistence domain (usable alone)
 * ====================================================================== */

/*
 * Copy/set/flush start write-back of the destination lines but do NOT fence:
 * the bytes are persistent only after a later wc_pmem_drain() in the same
 * thread (or wc_pmem_persist()).  Any length (0 .. gigabytes) and any
 * alignment; no byte outside [dst, dst + n) is ever written.
 * The destination must not overlap the source.
 */
void wc_pmem_memcpy(void *pmem_dst, const void *src, size_t n);
void wc_pmem_memset(void *pmem_dst, int c, size_t n);
/* Write back lines the caller stored with ordinary (cached) stores. */
void wc_pmem_flush(const void *addr, size_t n);
/* SFENCE: everything copied, set or flushed above by this thread is now
 * in the persistence domain. */
void wc_pmem_drain(void);
/* wc_pmem_flush() + wc_pmem_drain(). */
void wc_pmem_persist(const void *addr, size_t n);

#define WC_PMEM_THRESHOLD_AUTO ((size_t)-2) /* calibrate on this machine */

enum {
	WC_PMEM_AUTO = 0,     /* size-based policy */
	WC_PMEM_FORCE_NT,     /* non-temporal stores at every size */
	WC_PMEM_FORCE_CACHED, /* cached stores + flush at every size */
};

enum {
	WC_PMEM_CLFLUSHOPT = 0, /* default flush instruction of the cached path */
	WC_PMEM_CLWB,
};

/* CPU feature bits (wc_pmem_info.cpu, wc_pmem_config.disable). */
#define WC_CPU_CLFLUSH    (1u << 0)
#define WC_CPU_CLFLUSHOPT (1u << 1)
#define WC_CPU_CLWB       (1u << 2)
#define WC_CPU_SSE2       (1u << 3)
#define WC_CPU_AVX2       (1u << 4)
#define WC_CPU_AVX512F    (1u << 5)
#define WC_CPU_MOVDIR64B  (1u << 6)
#define WC_CPU_SSE42      (1u << 7)

struct wc_pmem_config {
	size_t threshold;   /* bytes; copies >= threshold use the cached path.
	                       0 = library default (768); WC_PMEM_THRESHOLD_AUTO =
	                       calibrate; SIZE_MAX = non-temporal at every size */
	int force;          /* WC_PMEM_AUTO, WC_PMEM_FORCE_NT, WC_PMEM_FORCE_CACHED */
	int flush_insn;     /* WC_PMEM_CLFLUSHOPT (default) or WC_PMEM_CLWB */
	unsigned disable;   /* WC_CPU_* bits to pretend absent (tests) */
	unsigned line_size; /* 0 = from CPUID; a test may pretend another size */
};

/* Set the process-wide policy used by the wc_pmem_* functions.  Call before
 * use; concurrent copies keep the policy they started with.  NULL = reset to
 * the defaults (environment included).  -EINVAL + message on a bad field. */
int wc_pmem_configure(const struct wc_pmem_config *cfg);

struct wc_pmem_info {
	unsigned line_size;  /* bytes, from CPUID leaf 1 (or pretended) */
	unsigned cpu;        /* WC_CPU_* bits detected (before `disable`) */
	size_t threshold;    /* in force */
	const char *small_strategy, *large_strategy; /* e.g. "nt-avx512",
	                                 "cached+clflushopt" */
	const char *reason;  /* why: "default 768", "env WC_PMEM_THRESHOLD",
	                        "cpu quirk nt-good (...)", "calibrated", ... */
	const char *vendor;  /* CPUID vendor string */
	unsigned family, model, stepping;
};
int wc_pmem_info(struct wc_pmem_info *out);

/* Measure the crossover between the non-temporal and the cached path on this
 * machine (<= ~100 ms).  *threshold_out receives the recommended threshold
 * (SIZE_MAX when non-temporal stores win at every size). */
int wc_pmem_calibrate(size_t *threshold_out);

/* ======================================================================
 * Origin: the slow device behind the cache, reached only through ops
 * ====================================================================== */

enum wc_origin_op {
	WC_ORIGIN_READ = 0,
	WC_ORIGIN_WRITE = 1,
	/* 0.5: a flush as a request, sent only to an origin whose ops table
	 * declares WC_ORIGIN_CAP_ASYNC_FLUSH (an older table's submit() might
	 * take any op but a read for a write).  iov, iovcnt and offset are
	 * unused (NULL, 0, 0).  done(io, 0) once every write that completed
	 * before this request was submitted is durable, or done(io, -errno).
	 * Write-back keeps the origin writing while the flush of its last
	 * round runs, where flush() would stop it for the flush's duration. */
	WC_ORIGIN_FLUSH = 2,
};

/* One asynchronous origin request.  The cache fills it and calls submit();
 * the backend calls done(io, res) exactly once, from whatever thread calls
 * poll() (or from its own thread), with res = bytes transferred or -errno.
 * A short transfer is reported as the byte count; the cache treats it as an
 * error or resubmits the rest. */
struct wc_origin_io {
	enum wc_origin_op op;
	const struct iovec *iov;
	int iovcnt;
	uint64_t offset;
	void (*done)(struct wc_origin_io *io, ssize_t res);
	void *priv;            /* the cache's */
	uint64_t backend[4];   /* the backend's scratch space */
};

/*
 * 0.5: what an origin is, as the cache records it (see "Origin identity"
 * below), filled by the ops table's identify().  `id` is the strongest
 * identity the origin has that survives a rename (a disk's WWID, a volume's
 * UUID in the embedder's system); "" = the name is all there is, and an
 * origin under another name is then another origin.  Both strings are
 * NUL-terminated; longer ones are cut.
 */
enum {
	WC_ORIGIN_IDENTITY_CUSTOM = 0, /* an embedder's origin */
	WC_ORIGIN_IDENTITY_FILE = 1,   /* a regular file */
	WC_ORIGIN_IDENTITY_BLOCK = 2,  /* a block device */
	WC_ORIGIN_IDENTITY_NBD = 3,    /* an NBD export */
	WC_ORIGIN_IDENTITY_RBD = 4,    /* a Ceph RBD image */
};
#define WC_ORIGIN_IDENTITY_ID_LEN 192u
#define WC_ORIGIN_IDENTITY_NAME_LEN 256u
struct wc_origin_identity {
	uint32_t kind;                           /* WC_ORIGIN_IDENTITY_* */
	char id[WC_ORIGIN_IDENTITY_ID_LEN];      /* "" = name only */
	char name[WC_ORIGIN_IDENTITY_NAME_LEN];  /* what it is called now; "" = describe()'s */
};

/* identify()'s flags: it may leave a mark on the origin that makes its
 * identity stronger (the libaio backend tags a file in an extended
 * attribute), as wc_create and a re-bind allow; without it, it only reads. */
#define WC_ORIGIN_IDENTIFY_MAY_TAG 1u

/* Capabilities (wc_origin_ops.caps). */
#define WC_ORIGIN_CAP_ASYNC_FLUSH (1ull << 0) /* submit() takes WC_ORIGIN_FLUSH */
#define WC_ORIGIN_CAP_IDENTIFY    (1ull << 1) /* identify() is set */

struct wc_origin_ops {
	/* Bytes addressable. */
	int (*size)(void *ctx, uint64_t *bytes);
	/* Queue one request; 0 or -errno (then done() is not called). */
	int (*submit)(void *ctx, struct wc_origin_io *io);
	/* Reap completions, calling done() for each; wait for at least
	 * min_events unless timeout_ns passes (0 = do not wait).  Returns the
	 * number completed or -errno.  Thread-safe. */
	int (*poll)(void *ctx, unsigned min_events, uint64_t timeout_ns);
	/* Make every completed write durable (fdatasync, FUA, ...). */
	int (*flush)(void *ctx);
	/* Optional (NULL = unsupported, the cache skips it). */
	int (*discard)(void *ctx, uint64_t offset, uint64_t len);
	/* Release everything; no request is in flight when called. */
	void (*close)(void *ctx);
	/* Alignment required of buffers, offsets and lengths (bytes). */
	uint32_t (*alignment)(void *ctx);
	/* A short description for stats/info, e.g. "libaio O_DIRECT /dev/sdb". */
	const char *(*describe)(void *ctx);
	/*
	 * 0.5 (docs/ABI.md).  The table grows here; the ops above stay where
	 * they are.  `ops_size` is the sizeof(struct wc_origin_ops) the table
	 * was built with (WC_ORIGIN_OPS_INIT sets it): the library reads only
	 * that much of it.  0 = a table written for 0.4 or before: the fields
	 * below must then be 0 and are not used.  A size smaller than 0.5's,
	 * not a multiple of 8, or beyond 4096 is refused (-EINVAL), and so is
	 * one whose bytes past what this library knows are not all 0.
	 */
	size_t ops_size;
	/* WC_ORIGIN_CAP_* this origin offers.  A bit this library does not
	 * know, or a capability without its op, is refused (-EINVAL). */
	uint64_t caps;
	/* With WC_ORIGIN_CAP_IDENTIFY: fill *out (zeroed by the cache) with
	 * what this origin is; `flags` is WC_ORIGIN_IDENTIFY_*.  0 or -errno
	 * (the cache fails to create or open).  Without it, the cache knows
	 * the origin by describe()'s string, name only. */
	int (*identify)(void *ctx, struct wc_origin_identity *out, unsigned flags);
	/* NULL: room for ops of later releases, each with its capability bit. */
	void (*reserved[8])(void);
};

/* The first member of a table's initializer:
 *   static const struct wc_origin_ops my_ops = {
 *           WC_ORIGIN_OPS_INIT,
 *           .size = my_size, ..., .caps = WC_ORIGIN_CAP_ASYNC_FLUSH,
 *   };
 */
#define WC_ORIGIN_OPS_INIT .ops_size = sizeof(struct wc_origin_ops)

struct wc_origin {
	const struct wc_origin_ops *ops;
	void *ctx;
};

/* The default backend: libaio on a regular file or block device, O_DIRECT
 * where allowed, else buffered I/O + fdatasync.  `queue_depth` 0 = 256.
 * Exclusive: a block device is opened O_EXCL (-EBUSY while mounted or held),
 * and the file takes an exclusive lock until close, so a second origin on
 * the same file, in this process or another, fails with -EBUSY and a
 * message naming the path and, where it can be known, the holder's pid. */
int wc_origin_open_aio(struct wc_origin *out, const char *path, unsigned queue_depth);

/* An NBD export over libnbd's asynchronous API: `uri` in libnbd's syntax
 * (nbd://host[:port]/export, nbd+unix:///export?socket=PATH, ...).  Opens
 * several connections when the server allows multi-conn.  -ENOTSUP when
 * the library was built without libnbd. */
int wc_origin_open_nbd(struct wc_origin *out, const char *uri);

/* A Ceph RBD image over librbd's aio: `spec` is pool/image[@snap] followed
 * by options as qemu writes them, with or without the "rbd:" prefix
 * (rbd:pool/image:conf=/etc/ceph/ceph.conf:id=admin).  -ENOTSUP when the
 * library was built without librbd. */
int wc_origin_open_rbd(struct wc_origin *out, const char *spec);

/* Any of the above by name: "nbd://..." and the other nbd URI schemes go to
 * wc_origin_open_nbd, "rbd:..." to wc_origin_open_rbd, anything else is a
 * path for wc_origin_open_aio (queue depth 256).  wc_create and wc_open
 * take their origin argument this way. */
int wc_origin_open(struct wc_origin *out, const char *name);

/* ======================================================================
 * Cache
 * ====================================================================== */

typedef struct wc_cache wc_cache;

#define WC_FUA 1u /* wc_write flag: durable when the call returns */

struct wc_config {
	uint32_t block_size;        /* 512..65536, power of two; fixed at format.  0 (what
	                               wc_config_init sets since 0.7): 4096 at create, the
	                               cache's own at open, where another value must match */
	unsigned high_watermark;    /* % of blocks used that starts write-back; default 50 */
	unsigned low_watermark;     /* % used at which write-back stops; default 45 */
	unsigned writeback_jobs;    /* blocks in flight to the origin; default 256 (the window's
	                               floor: see writeback_window_max_kib) */
	unsigned autocommit_blocks; /* commit after this many uncommitted blocks; default 64 */
	unsigned autocommit_ms;     /* commit at most this long after a write; default 1000 */
	unsigned max_age_ms;        /* write back blocks older than this; 0 = off */
	bool cleaner;               /* write back everything; new blocks go around the cache */
	bool fua;                   /* honour WC_FUA (default true) */
	bool no_threads;            /* the host drives write-back with wc_poll(); default false.
	                               A synchronous write that finds no room then waits for
	                               the polling thread's progress, or -- when it is that
	                               thread, or none polled for 100 ms -- takes the steps
	                               itself */
	struct wc_pmem_config pmem; /* flush policy for this cache (all zero = process default) */
	/* additions beyond the contract: */
	unsigned writeback_max_io_kib; /* largest merged write-back I/O; default 1024 */
	uint64_t cache_size;        /* wc_create: create or extend a regular cache file to this
	                               many bytes (0 = use the file as it is) */
	/* ABI (docs/ABI.md).  The library reads only the fields `size` covers,
	 * so a program keeps working with a later library that grew the
	 * struct.  wc_config_init() sets it; 0 reads as the size of release
	 * 0.2, the first to have it. */
	uint32_t size;
	/* 0.3: write-back deepens its queue beyond writeback_jobs, up to this
	 * many KiB in flight, while the origin's latency shows no queueing (a
	 * remote origin); default 16384; 0 = writeback_jobs, fixed. */
	uint32_t writeback_window_max_kib;
	/* 0.4: what wc_open does with an origin that is not the one the cache
	 * was made for (another device, file, export or image; see "Origin
	 * identity" below): WC_ORIGIN_REBIND_NEVER refuses it (-EXDEV);
	 * _CLEAN binds the cache to it when the cache holds no dirty block;
	 * _FORCE binds it even then: the dirty blocks are written back into
	 * the new origin (for an origin moved or copied with its data). */
	uint32_t origin_rebind;
	/* 0.6: where the cache lives (see "Media" below): WC_MEDIUM_AUTO (0)
	 * chooses by itself, WC_MEDIUM_PMEM or WC_MEDIUM_BLOCK insist; wc_open
	 * reads it from the cache and refuses a contradiction. */
	uint32_t medium;
	/* 0.7: wc_create formats a file or device whose first MiB holds
	 * anything but zeros -- data that is not a cache, a damaged cache --
	 * only with this set (-EEXIST otherwise, the message naming the first
	 * byte that is not zero).  A valid cache is refused all the same:
	 * remove it (a device: wipe its first MiB) to make another. */
	uint32_t force;
	/* 0.7: threads that serve wc_submit() requests which cannot complete
	 * at once (misses, the block medium, writes waiting for room);
	 * 0 = 4.  Started at the first such request. */
	uint32_t async_threads;
	uint64_t reserved[4];       /* must be 0: room for later fields, whose 0
	                               will mean "as before" */
};

enum { WC_ORIGIN_REBIND_NEVER = 0, WC_ORIGIN_REBIND_CLEAN = 1, WC_ORIGIN_REBIND_FORCE = 2 };

/*
 * Media.  A cache lives on persistent memory (a DAX device or file, mapped:
 * the flush engine's stores, one drain per commit) or on a block medium (an
 * SSD, a disk, a file on one: O_DIRECT writes, never mapped).  With
 * WC_MEDIUM_AUTO, wc_create takes pmem when libpmem2 maps the path with
 * byte or cache-line granularity or PMEM2_FORCE_GRANULARITY is set, and the
 * block medium when it offers only page granularity (a plain file or
 * device).  On the block medium each write is one record -- its blocks and
 * a header naming them, under one CRC32C -- written with ONE device write,
 * synced (RWF_DSYNC) when FUA; writes without FUA are durable at the next
 * wc_flush, which costs one device flush, or at autocommit (autocommit_ms,
 * or autocommit_blocks: 65,536 when left at its default of 64).  Its
 * durability contract is per block: after a crash every block shows its
 * last durable version or a later one that was written; a record is whole
 * or absent.  docs/DURABILITY.md states both media's contracts.
 */
enum { WC_MEDIUM_AUTO = 0, WC_MEDIUM_PMEM = 1, WC_MEDIUM_BLOCK = 2 };

/* The entry point of programs built against 0.1: fills the 0.1 layout only. */
void wc_config_init(struct wc_config *cfg);
/* Defaults (every field above), with `size` = the caller's sizeof: a macro,
 * so the size is the one the caller was compiled with. */
void wc_config_init_size(struct wc_config *cfg, size_t size);
#define wc_config_init(cfg) wc_config_init_size((cfg), sizeof(struct wc_config))
/* "block_size=4096,high_watermark=60,cleaner=1,pmem_force=nt,..."; unknown
 * key or bad value -> -EINVAL + message naming the key. */
int wc_config_parse(struct wc_config *cfg, const char *options);

/*
 * One owner at a time.  wc_create and wc_open (and the _origin variants)
 * take an exclusive lock on the cache file or DAX device before they read
 * it for recovery or write a byte of it, and hold it until wc_close; the
 * kernel releases it when the process dies, kill -9 included.  A cache
 * already open -- through another handle in this process, or in another
 * process -- is refused with -EBUSY, untouched, and wc_errmsg() says it is
 * in use and by which pid (or that the pid cannot be known here).  Two
 * owners would overwrite each other's commits and lose acknowledged
 * writes.  The lock is advisory: a program that maps the file itself is
 * not stopped (wcctl reads a cache in use without writing it).
 */

/*
 * Origin identity.  A cache records which origin it belongs to: its size and
 * the strongest identity its backend can give (a block device's WWID or
 * serial, a loop device's backing file, a file's inode and a random tag kept
 * in its user.wcache.origin extended attribute, an RBD image's cluster, pool
 * and image ids; an NBD export by name only; an embedder's origin by what
 * its table's identify() gives, else by describe()'s string, name only).
 * wc_open refuses an origin whose identity differs with -EXDEV, before it
 * reads or writes a byte of the cache's data or of either origin, and the
 * message names both and the dirty blocks at stake.  The same origin under
 * another name is accepted (the name is recorded); grown, it is accepted and
 * the cache serves and records its new size; shrunk, it is refused
 * (-EINVAL).  cfg->origin_rebind binds a cache to another origin.
 */

/* Format a new cache; refuses a path that already holds a valid cache
 * (-EEXIST) or a cache in use (-EBUSY, before writing anything).  cfg may
 * be NULL (defaults). */
int wc_create(wc_cache **out, const char *cache_path, const char *origin_path,
              const struct wc_config *cfg);
/* Recover an existing cache; cfg may be NULL (defaults).  cfg->block_size 0
 * takes the superblock's; any other value must match it.  -EBUSY if the
 * cache (or the origin file, locked by wc_origin_open_aio) is in use. */
int wc_open(wc_cache **out, const char *cache_path, const char *origin_path,
            const struct wc_config *cfg);
/* The same with an origin the embedder supplies; on success the cache owns
 * it (closes it in wc_close), on failure the caller still does.  The cache
 * file is locked as above; the origin's exclusivity is the embedder's. */
int wc_create_origin(wc_cache **out, const char *cache_path, struct wc_origin origin,
                     const struct wc_config *cfg);
int wc_open_origin(wc_cache **out, const char *cache_path, struct wc_origin origin,
                   const struct wc_config *cfg);
/* 0.5: the same, reading origin.ops as the table of this header (ops_size,
 * caps, identify), checked before anything is touched: -EINVAL + message
 * naming the field on a bad one.  The names above are macros for these.
 * The functions under those names -- what programs built before 0.5 call,
 * and what dlsym() or another language's bindings find by name -- read
 * only the 0.4 table: no capability, no identify() (docs/ABI.md). */
int wc_create_origin_sized(wc_cache **out, const char *cache_path, struct wc_origin origin,
                           const struct wc_config *cfg);
int wc_open_origin_sized(wc_cache **out, const char *cache_path, struct wc_origin origin,
                         const struct wc_config *cfg);
#define wc_create_origin wc_create_origin_sized
#define wc_open_origin wc_open_origin_sized
/* Commit, stop threads, wait for in-flight origin I/O, unmap, release the
 * owner's lock.  Dirty blocks stay cached.  Returns the sticky error, if
 * any, after releasing everything. */
int wc_close(wc_cache *c);

/* Offsets and lengths are multiples of the block size and inside the origin,
 * else -EINVAL touching nothing.  A write that returned is readable at once by
 * every thread; it is durable after a later wc_flush() returned 0, or at
 * return with WC_FUA.
 * Buffers may sit at any address, on both media, for hits, misses and
 * writes around the cache: what the cache copies needs no alignment, and
 * where O_DIRECT would read or write the buffer itself (a miss read from the
 * origin, a read hit on the block medium, a write around to the origin) an
 * unaligned one goes through an aligned bounce buffer.  A buffer aligned to
 * 4096 bytes (or the origin's and the device's logical block size, 512 or
 * 4096) spares that copy. */
ssize_t wc_write(wc_cache *c, const void *buf, size_t len, uint64_t offset, unsigned flags);
ssize_t wc_read(wc_cache *c, void *buf, size_t len, uint64_t offset);
/* Commit: every write completed before the call is durable when it returns.
 * Concurrent callers share one commit; nothing uncommitted costs no fence. */
int wc_flush(wc_cache *c);
/* Drop cached blocks in range (the data becomes the origin's), commit, and
 * pass the discard to the origin. */
int wc_discard(wc_cache *c, uint64_t offset, uint64_t len);
/* Commit, write back every dirty block, make the origin durable, wait. */
int wc_writeback(wc_cache *c);
/* Turn cleaner mode on or off at run time. */
int wc_set_cleaner(wc_cache *c, bool on);
/* wc_poll_timeout(c, budget, 0): never waits.  Without threads it does up
 * to `budget` units of the cache's own work -- a completion delivered, a
 * commit, a write-back step (submit, reap, flush or free) -- and returns
 * how many it did: 0 = nothing could be done now, which is not "idle"
 * while write-back's requests are out; the cache is idle when
 * wc_next_deadline_ms() says -1.  A cache that runs its own write-back
 * thread has only wc_submit's completions to deliver: with none in flight
 * it returns -EOPNOTSUPP, saying the cache needs no polling. */
int wc_poll(wc_cache *c, unsigned budget);
/* ======================================================================
 * Vectored and asynchronous requests (0.7)
 * ====================================================================== */

/* As wc_write and wc_read, gathering from / scattering into iovcnt buffers
 * (1..IOV_MAX) whose lengths sum to a multiple of the block size; a buffer
 * need not hold whole blocks.  flags: WC_FUA. */
ssize_t wc_writev(wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset, unsigned flags);
ssize_t wc_readv(wc_cache *c, const struct iovec *iov, int iovcnt, uint64_t offset);

enum wc_req_op {
	WC_REQ_READ = 0,       /* iov, iovcnt, offset; flags WC_REQ_NO_READAHEAD */
	WC_REQ_WRITE = 1,      /* iov, iovcnt, offset; flags WC_FUA */
	WC_REQ_FLUSH = 2,      /* as wc_flush: every write completed before the
	                          submit is durable when it completes */
	WC_REQ_DISCARD = 3,    /* offset, len: as wc_discard */
	WC_REQ_INVALIDATE = 4, /* offset, len: write the range's dirty blocks
	                          back, then drop its blocks from the cache only
	                          (the origin keeps the data; nothing is lost) */
	WC_REQ_WRITEBACK = 5,  /* offset, len: write the range's dirty blocks
	                          back and make the origin durable; len 0 = the
	                          whole cache, as wc_writeback */
};
#define WC_REQ_NO_READAHEAD 2u /* a read the cache must not read ahead of */

/*
 * One request.  wc_request_init() zeroes it and sets `size`; the caller
 * fills op, flags, the buffers and done(), and keeps the struct and its
 * buffers alive until done() ran.  done(req, res) runs exactly once with
 * the byte count (READ, WRITE), 0 (the others) or -errno, and wc_errmsg()
 * in that call describes a failure:
 *   - before wc_submit returns, when the request needed nothing that can
 *     wait: a read whose blocks are all cached, a write the cache had room
 *     for, a flush, on persistent memory;
 *   - else later, in the thread that calls wc_poll() or wc_poll_timeout()
 *     (wc_event_fd() turns readable then).
 * Many may be in flight from one thread; requests in flight together are
 * not ordered with respect to each other (as a disk's queue: a read
 * submitted beside a write to the same block sees either version).
 */
struct wc_request {
	uint32_t size;             /* sizeof(struct wc_request); wc_request_init sets it */
	uint32_t op;               /* enum wc_req_op */
	uint32_t flags;            /* WC_FUA (WRITE), WC_REQ_NO_READAHEAD (READ) */
	int32_t iovcnt;            /* READ, WRITE */
	const struct iovec *iov;   /* READ, WRITE */
	uint64_t offset;           /* bytes, a multiple of the block size */
	uint64_t len;              /* DISCARD, INVALIDATE, WRITEBACK (bytes) */
	void (*done)(struct wc_request *req, ssize_t res);
	void *priv;                /* the caller's */
	uint64_t internal[6];      /* the library's while in flight */
	uint64_t reserved[4];      /* must be 0 */
};
void wc_request_init_size(struct wc_request *req, size_t size);
#define wc_request_init(req) wc_request_init_size((req), sizeof(struct wc_request))

/* Queue `req`: 0 = accepted (done() runs exactly once, perhaps already),
 * or -errno and done() never runs: -EINVAL (a bad field, message naming
 * it), -EIO (the cache is in its error state), -EAGAIN (no_threads: a write
 * needs room the write-back has not made yet -- call wc_poll_timeout() and
 * submit it again). */
int wc_submit(wc_cache *c, struct wc_request *req);

/*
 * Event loops.  wc_event_fd() is a file descriptor (an eventfd owned by the
 * cache, closed by wc_close) that turns readable when completions wait to
 * be delivered; add it to epoll/poll/libuv for EPOLLIN and call
 * wc_poll_timeout(c, budget, 0) when it is readable.  Without threads
 * (no_threads) the cache's own work -- autocommit, write-back, the origin's
 * completions, which no descriptor announces -- is also the host's:
 * wc_next_deadline_ms() says how many milliseconds the host may wait at
 * most before calling wc_poll_timeout() again (0 = now, -1 = only when the
 * descriptor turns readable).
 */
int wc_event_fd(wc_cache *c);
int wc_next_deadline_ms(wc_cache *c);
/*
 * Deliver completions (done() runs in this thread) and, without threads,
 * do the cache's due work in steps that never wait for the origin: up to
 * `budget` units (a completion, a commit, a write-back step).  Waits up to
 * timeout_ms (-1 = until something happens, 0 = never) while there is
 * nothing to do.  Returns units done (0 = idle) or -errno.
 */
int wc_poll_timeout(wc_cache *c, unsigned budget, int timeout_ms);

uint64_t wc_size(const wc_cache *c);
uint32_t wc_block_size(const wc_cache *c);

struct wc_stats {
	int error;                  /* sticky error (negative errno) or 0 */
	uint64_t blocks, free_blocks, dirty_blocks, writeback_blocks;
	uint64_t reads, read_hits, writes, write_hits_uncommitted, write_hits_committed,
	         writes_around, writes_allocate, writes_blocked_on_freelist, flushes, discards;
	uint64_t commits, writeback_ios, writeback_bytes;
	/* additions beyond the contract: */
	uint64_t writeback_errors;  /* failed origin writes (retried) */
	uint64_t dram_bytes;        /* DRAM used for metadata */
	const char *granularity;    /* "byte", "cache-line", "page" */
	const char *origin_mode;    /* e.g. "libaio O_DIRECT ..."; both strings belong to the
	                               cache and are valid until wc_close() */
	/* The flush policy this cache copies with, and why (pmem.reason).  The
	 * strings live as long as the process. */
	struct wc_pmem_info pmem;
	/* Where it came from, one of: "calibrated at create" (measured on the
	 * cache's free blocks by wc_create), "recorded" (the superblock's record,
	 * measured on this CPU), "recalibrated" (measured again by wc_open: no
	 * record, a damaged one, or one from another CPU), "config" (the cache's
	 * pmem_* options), "env" (WC_PMEM_THRESHOLD / WC_PMEM_FORCE), "quirk
	 * table" or "engine" (the engine's own choice: the cache was too small
	 * to measure on, or there is nothing to choose), "granularity" (byte or
	 * page: no flush instructions to choose between). */
	const char *pmem_source;
	/* 0.3: write-back's window (blocks it keeps in flight) now, and the
	 * mean latency of an origin write in its last measured round. */
	uint64_t writeback_window, writeback_latency_us;
	/* 0.3: blocks read from the origin ahead of a sequential reader and
	 * served from DRAM. */
	uint64_t readahead_blocks;
	/* 0.3: while write-back's rounds fail, the negative errno of the last
	 * failure (e.g. -ENOTCONN: the origin cannot be reached, retried
	 * without end) and how long they have failed; both 0 once a round
	 * gets through. */
	int64_t writeback_last_error;
	uint64_t writeback_failing_ms;
	/* 0.3: writing threads that hold a slot of their own now (a thread
	 * gives it back when it exits).  At most 63: more writers share one,
	 * and each commit then also waits for every index shard's lock. */
	uint64_t writer_slots;
	/* 0.4: what the cache knows its origin by, e.g. "block device /dev/sdb
	 * (wwid naa.5000c500a1b2c3d4, 4 TiB)" or "NBD export nbd://h/x (name
	 * only, 64 GiB)"; valid until wc_close(). */
	const char *origin_identity;
	uint64_t reserved[1];       /* 0: room for later counters */
	/* 0.6: "pmem" or "block", and why (e.g. "the path maps with page
	 * granularity only: not persistent memory"); valid until wc_close(). */
	const char *medium;
	const char *medium_reason;
	/* 0.6, block medium: records written, of them synced one by one
	 * (FUA), device flushes, segments reclaimed (their clean blocks leave
	 * the cache), and how long the last open's recovery took. */
	uint64_t medium_records, medium_dsync_writes, medium_flushes, medium_segments_reclaimed;
	uint64_t recovery_us;
	/* 0.6, block medium: device writes that carried records (fewer than
	 * medium_records when concurrent writers' records, adjacent on the
	 * device, went as one request), and device reads (read hits,
	 * write-back, recovery). */
	uint64_t medium_record_writes, medium_reads;
	/* 0.7: the origin failing (see "Errors" below): when the streak of
	 * failed write-back attempts began, in wall-clock milliseconds since
	 * the Unix epoch (0 = the origin is not failing; writeback_failing_ms
	 * says for how long), the streaks since the cache was opened, and the
	 * writes refused with -ENOSPC because every block held data the
	 * failing origin had not taken. */
	uint64_t writeback_failing_since_ms;
	uint64_t writeback_outages, writes_refused_full;
};
/* The entry point of programs built against 0.1: fills the 0.1 layout only. */
int wc_get_stats(wc_cache *c, struct wc_stats *st);
/* Fills the first `size` bytes of *st (the caller's sizeof, passed by the
 * macro); bytes past what this library knows are zeroed. */
int wc_get_stats_size(wc_cache *c, struct wc_stats *st, size_t size);
#define wc_get_stats(c, st) wc_get_stats_size((c), (st), sizeof(struct wc_stats))
void wc_clear_stats(wc_cache *c);

/* Thread-local message describing the last failure in this thread. */
const char *wc_errmsg(void);

/* ======================================================================
 * Errors and messages (0.7)
 * ====================================================================== */

/*
 * Errors.  The cache's own medium failing -- a commit, a write or a flush
 * of the cache device, a read of dirty data for write-back, or a state the
 * cache can no longer tell (the origin's queue broken with write-back's
 * requests in flight) -- puts the cache in its sticky error state
 * (wc_stats.error), as dm-writecache does: writes, flushes and discards
 * fail with -EIO until it is closed and reopened, and recovery rebuilds
 * what the medium holds; reads keep working.
 *
 * The origin failing does not.  What it has not taken stays dirty in the
 * cache, write-back retries it with backoff (2, 4, ... ms, at most 250 ms),
 * and writes, flushes and reads of cached blocks go on while the cache has
 * room.  wc_stats says so (writeback_last_error, writeback_failing_ms,
 * writeback_failing_since_ms), until write-back gets through again: by
 * itself, within the backoff's ceiling of the origin's return.  A write
 * that finds every block dirty waits for write-back while the origin has
 * failed for less than half a second, then fails with -ENOSPC, wc_errmsg()
 * saying since when the origin fails (a write of several blocks may have
 * stored some of them, as a failed write to a disk may).  wc_writeback()
 * returns the origin's errno once it has failed for a minute.
 */

/* For an operator who repaired the origin: write-back's backoff restarts
 * from its first step and the origin is tried at once (the write-back
 * thread is woken; without threads, at the next wc_poll).  The failure
 * stays in wc_stats until a retry gets through.  Returns 0, also when the
 * origin was not failing; -ENOTRECOVERABLE, clearing nothing, when the cache
 * is in its sticky error state: only closing and reopening it clears that
 * (the message says what failed). */
int wc_clear_error(wc_cache *c);

/* Message levels: syslog's values. */
#define WC_LOG_ERR 3     /* the cache entered its error state; the library cannot go on */
#define WC_LOG_WARNING 4 /* the origin is failing; a bad environment variable */
#define WC_LOG_NOTICE 5  /* the origin is back (and how long it failed); what an operator did */
#define WC_LOG_INFO 6
#define WC_LOG_DEBUG 7   /* each failed write-back attempt */

/* Where the library's messages go, process-wide: fn(arg, level, msg), msg
 * one line (no newline) naming the cache it is about, valid during the
 * call.  NULL (the default) = stderr, "libwcache: <msg>", every level but
 * WC_LOG_DEBUG.  fn may be called from any thread, several at once, with
 * no lock of the library held.  Once wc_set_log returns, the previous
 * function is no longer running in another thread, nor called again. */
typedef void (*wc_log_fn)(void *arg, int level, const char *msg);
void wc_set_log(wc_log_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* WCACHE_H */
