/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * block.h -- the block medium: the cache on a device or file that is not
 * persistent memory (format.h has the layout).  Its parts:
 *
 *   device.c     the device: O_DIRECT, its logical block size, whole I/O,
 *                the state and identity slots
 *   log.c        the ring of segments: reserve room for a record, close a
 *                full segment, write its summary
 *   io.c         write (one record, one device write), read, flush, discard
 *   aio.c        records without FUA in flight
 *   aread.c      without threads, a read's cached blocks in flight
 *   recover.c    format, and the DRAM state rebuilt from the summaries
 *   writeback.c  the medium's thread (or the host's steps): autocommit,
 *                summaries, write-back of the oldest dirty segment, reclaim
 *                of the tail
 *   wbjob.c      one segment's write-back, a job across steps
 *   range.c      write-back of a range of the origin, and its cache-only
 *                invalidation
 *
 * It shares the cache's index (core/index.h: entries, shards, chains and
 * the generation that lets a read find out it raced a free) and its free
 * lists of entries (core/alloc.h).  An entry here names a version of an
 * origin block and where its data is on the device (e->where); it is freed
 * when a newer version is published, when a discard drops it, or when its
 * segment is reclaimed.  Nothing on the device is ever invalidated: order
 * does it (format.h).
 *
 * Locks: log.lock (the ring's head and reservations; never held across
 * I/O except the rare state write that raises the open limit) ->
 * a shard lock -> a free-list lock.  wb.lock (the thread's state) is
 * taken alone.  log.discard_lock -> wb.step -> log.lock: a cache-only
 * invalidation holds its discard's turn while it writes the range back.
 */
#ifndef WC_BLOCK_H
#define WC_BLOCK_H

#include <libaio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "block/format.h"
#include "core/index.h"
#include "wcache.h"

struct wc_cache;
struct wc_stats;
struct wc_blk_io_hooks;

/* A version written into a segment (for write-back and reclaim): its entry
 * and the low half of its record's seq (an entry freed and reused names
 * another version: seq differs). */
struct wc_blk_live {
	uint32_t idx;
	uint32_t seq_lo;
};

struct wc_blk_seg {
	uint64_t seg;            /* segment sequence number it holds; 0: none yet */
	uint64_t used;           /* bytes of records reserved */
	struct wc_blk_live *live;
	uint32_t n_live, live_cap;
	struct wc_blk_sum_ent *sum; /* the summary, built while it is written */
	uint32_t n_sum;
	atomic_uint pending;     /* records reserved and not yet on the device */
	bool closed;             /* no more records: summary due once pending is 0 */
	bool summarized;         /* its summary is written (or was found) */
	uint32_t closed_ms;      /* when it closed (max_age_ms) */
};

struct wc_blk_resv {
	uint64_t seg, seq, off;  /* segment, record seq, device offset of the header */
	uint32_t seg_slot;
	unsigned epoch;
};

/* A record of a write without FUA, from its build to its completion
 * (aio.c). */
#define WC_BLK_AIO_SLOTS 128u
/* Records adjacent on the device written by one request (aio.c). */
#define WC_BLK_AIO_MERGE 16u
struct wc_blk_aslot {
	struct iocb iocb;        /* the first record's: the request of its run */
	struct iovec iov[WC_BLK_AIO_MERGE];
	struct wc_blk_aslot *run_next; /* the next record of its request */
	size_t run_len;          /* the request's bytes (the first record's) */
	char *buf;               /* header + data, aligned */
	size_t cap, len;
	struct wc_blk_resv r;
	uint64_t block;          /* first origin block */
	uint64_t data_off;       /* device offset of its data */
	uint64_t data_bytes;
	unsigned n;
	uint32_t idx[WC_BLK_REC_MAX_BLOCKS];
	atomic_uint use;         /* odd while in flight */
	bool failed;
};

struct wc_blk_stats {
	atomic_uint_fast64_t records, record_bytes, record_writes, dsync_writes, device_flushes, device_reads,
	                     summaries, segments_reclaimed, evicted, waits_for_space;
};

struct wc_blk {
	int fd;
	bool direct;             /* O_DIRECT (false: a file system that refuses it) */
	bool is_bdev;
	const struct wc_blk_io_hooks *io; /* tests only (core/testhooks.h) */
	uint32_t lba;            /* alignment of offsets, lengths and memory */
	uint64_t dev_bytes;
	struct wc_blk_geom g;
	struct wc_blk_sb sb;
	uint64_t cache_id;
	struct wc_pmem_origin_id id_slots[2]; /* the identity slots as read (bind.c) */
	char reason[160];        /* why this medium (wc_stats) */
	char mode[160];          /* how it does I/O (wc_stats) */

	struct {
		pthread_mutex_t lock;
		pthread_cond_t space;        /* writers waiting for a free segment */
		uint64_t head;               /* the open segment */
		uint64_t tail;               /* the oldest segment still in the ring */
		uint64_t clean;              /* segments below it are written back */
		uint64_t open_limit;         /* durable: no record above it */
		uint64_t next_seq;           /* the next record's seq */
		uint64_t state_gen;
		unsigned state_slot;         /* the slot in force */
		pthread_mutex_t state_lock;  /* one state write at a time */
		struct wc_blk_seg *segs;     /* n_segments, by seg % n */
		unsigned waiters;
		/* Records reserved and not yet done, by epoch: a discard opens a
		 * new epoch and waits for the old one to end (wc_blk_discard). */
		unsigned epoch;
		unsigned inflight[2];
		pthread_cond_t epoch_done;
		pthread_mutex_t discard_lock; /* one discard at a time */
	} log;

	/* Non-FUA records become durable at the next device flush: a write
	 * counts itself in `written` when done, a flush records what it
	 * covered in `durable` (io.c, wc_blk_flush). */
	atomic_uint_fast64_t written;
	uint64_t durable;                    /* under flush_lock */
	pthread_mutex_t flush_lock;
	atomic_uint_fast64_t unflushed_blocks;
	atomic_uint_fast32_t first_unflushed_ms;

	struct {
		pthread_mutex_t lock;
		pthread_cond_t cond;         /* the thread's sleep, and waiters for a round */
		pthread_t thread;
		bool running, stop;
		bool kick;
		bool active;                 /* between the watermarks, on the way down */
		bool waiting;                /* the last step found the oldest segment not
		                                ready (records in flight, no summary yet) */
		struct wb_job *job;          /* the segment under write-back (writeback.c) */
		bool job_out;                /* its requests are out (the deadline's) */
		pthread_mutex_t step;        /* one step at a time (thread, wc_poll, wc_writeback,
		                                range.c); held with no job begun (see
		                                wc_blk_wb_job_settle): no other write-back nor
		                                reclaim meanwhile */
		unsigned all_requests;       /* wc_writeback callers waiting */
		uint64_t rounds_done;
		uint64_t ios, bytes, errors;
		void *buf;                   /* write-back's read buffer */
		size_t buf_len;
		io_context_t ctx;            /* its reads, several at once (0: one by one) */
	} wb;

	struct {
		struct wc_blk_aslot *slots;
		unsigned free[WC_BLK_AIO_SLOTS], n_free, n_failed;
		pthread_mutex_t lock;
		pthread_cond_t cond;         /* a slot freed, a record completed */
		pthread_cond_t sweep;        /* the completion thread's sleep (stop) */
		atomic_uint in_flight;       /* records submitted, not completed */
		pthread_mutex_t sub_lock;    /* the records waiting for submission */
		struct wc_blk_aslot *queue[WC_BLK_AIO_SLOTS];
		unsigned n_queued;
		bool submitting;             /* a writer is submitting the queue */
		bool handoff;                /* the completion thread is to submit it (aio.lock) */
		io_context_t ctx;
		pthread_t thread;
		bool running, inline_io;
		atomic_bool stop;
	} aio;

	/* The host's eventfd (wc_event_fd; -1 until it has one): write-back's
	 * device reads signal it as they end, so that a loop wakes for the
	 * next step then, not at its next deadline. */
	int host_efd;

	struct {
		io_context_t ctx;            /* aread.c; 0: reads are synchronous */
		atomic_uint in_flight;
	} rd;

	struct wc_blk_stats st;
	uint64_t recover_ns;     /* the last recovery's time (wcbench recover) */
};


/* device.c */
int wc_blk_device_open(struct wc_cache *c, bool create, uint64_t create_size);
void wc_blk_device_close(struct wc_cache *c);
int wc_blk_pread(struct wc_cache *c, void *buf, size_t len, uint64_t off, const char *what);
/* One of several reads at once (struct wc_blk_rd_batch). */
struct wc_blk_rd {
	void *buf;
	size_t len;
	uint64_t off;
};
#define WC_BLK_RD_MAX 64u
/* Reads in flight for a caller that does not wait for them (write-back's
 * job): set rd[] and n, start, then ask whether they are reaped. */
struct wc_blk_rd_batch {
	struct wc_blk_rd rd[WC_BLK_RD_MAX];
	struct iocb cb[WC_BLK_RD_MAX];
	unsigned n, out;   /* reads; submitted and not yet reaped */
	int err;           /* the first failure */
};
/* Submit them all on ctx; without one (or with the test hooks) read them
 * here.  0 or -errno, also kept in err (those submitted before it are out). */
int wc_blk_pread_start(struct wc_cache *c, io_context_t ctx, struct wc_blk_rd_batch *rb, const char *what);
/* True once none is out (`wait`: waits for them); a short read's rest is
 * read here.  A failed context is sticky: reads may still land. */
bool wc_blk_pread_reaped(struct wc_cache *c, io_context_t ctx, struct wc_blk_rd_batch *rb, bool wait,
                         const char *what);
int wc_blk_pwrite(struct wc_cache *c, const void *buf, size_t len, uint64_t off, bool dsync,
                  const char *what);
int wc_blk_fdatasync(struct wc_cache *c, const char *what);
void *wc_blk_alloc_buf(struct wc_cache *c, size_t len);
/* Write the ring's state (tail -- moved up to new_tail if larger --, clean
 * point, open limit raised to at least `open_limit`) into the slot not in
 * force, synced; the new limit and tail count once durable. */
int wc_blk_state_write(struct wc_cache *c, uint64_t open_limit, uint64_t new_tail);
int wc_blk_id_write(struct wc_cache *c, unsigned slot, const struct wc_pmem_origin_id *id);

/* log.c */
int wc_blk_log_init(struct wc_cache *c);
void wc_blk_log_fini(struct wc_cache *c);
/* Room for a record of `count` blocks (or a discard when count is 0) in the
 * open segment, opening the next one when it is full; waits (kicking
 * write-back) while the ring is full.  idx/origin name the versions. */
/* Room for `bytes` of records in the head segment, or a free segment. */
bool wc_blk_log_room(struct wc_cache *c, uint64_t bytes);
int wc_blk_reserve(struct wc_cache *c, const uint32_t *idx, const uint64_t *origin, unsigned count,
                   uint64_t discard_first, uint32_t discard_len, struct wc_blk_resv *r);
/* The record's device write ended (ok or not), and it is published. */
void wc_blk_record_done(struct wc_cache *c, const struct wc_blk_resv *r);
/* For a discard (log.discard_lock held): reserve its record in a new epoch
 * and wait until every record reserved before it is done, so that its
 * drop pass sees every older version recovery would see it hide. */
int wc_blk_reserve_discard(struct wc_cache *c, uint64_t first, uint32_t len, struct wc_blk_resv *r);
/* Close the open segment now (write-back of everything, cleaner mode). */
void wc_blk_close_head(struct wc_cache *c);
void wc_blk_seg_close_locked(struct wc_cache *c, struct wc_blk_seg *sg);
/* Write the summary of every closed segment whose records are all done. */
int wc_blk_write_summaries(struct wc_cache *c);
uint64_t wc_blk_free_segments(struct wc_cache *c);
int wc_blk_seg_alloc(struct wc_cache *c, struct wc_blk_seg *sg, uint64_t seg);

/* io.c */
ssize_t wc_blk_write(struct wc_cache *c, const void *buf, size_t len, uint64_t offset, bool fua);
ssize_t wc_blk_read(struct wc_cache *c, void *buf, size_t len, uint64_t offset);
/* A block's current version as a read found it. */
struct wc_blk_found {
	uint32_t idx;     /* WC_NIL: a miss */
	uint16_t gen;     /* the entry's generation then: it moves when freed */
	bool inflight;    /* its record's write is in flight: aio.c has the data */
	uint64_t where;   /* device offset of its data */
};
/* Look one block up (counted as a read); false for a miss. */
bool wc_blk_find(struct wc_cache *c, uint64_t block, struct wc_blk_found *f);
/* Whether the version found is still there (read its data, then ask). */
bool wc_blk_found_still(struct wc_cache *c, const struct wc_blk_found *f);

/* aread.c: without threads, a read's cached blocks read from the device
 * without waiting.  The request's fields before `iocb` are the caller's. */
struct wc_blk_aread {
	void *buf;                /* one block, aligned for O_DIRECT */
	uint64_t block;
	/* 1: buf holds the block's cached version; 0: it is not cached (any
	 * more): read the origin; -errno (message set) */
	void (*done)(struct wc_blk_aread *r, int res);
	int resfd;                /* an eventfd the device's completion signals, or -1 */
	struct iocb iocb;
	struct wc_blk_found f;
};
int wc_blk_aread_start(struct wc_cache *c);
void wc_blk_aread_stop(struct wc_cache *c);
/* 1 or 0 (as done() would say, done() not called), 2: in flight, done()
 * comes from a later wc_blk_aread_poll; -errno. */
int wc_blk_aread(struct wc_cache *c, struct wc_blk_aread *r);
/* Complete what the device finished (done() runs here): the count, or
 * -errno when the context failed.  `wait_ms` > 0: wait that long for one. */
int wc_blk_aread_poll(struct wc_cache *c, unsigned wait_ms);
bool wc_blk_aread_busy(struct wc_cache *c);

/* Whether a write of `len` bytes finds its entries and its place in the
 * ring now, without waiting for write-back (an event loop's write is
 * refused with -EAGAIN instead).  A write that spans more than the head
 * segment's room and one free segment may still wait; so may one that
 * loses a race with another thread's. */
bool wc_blk_write_has_room(struct wc_cache *c, uint64_t len);
int wc_blk_flush(struct wc_cache *c, bool count);
int wc_blk_discard(struct wc_cache *c, uint64_t offset, uint64_t len);
/* A record without FUA of n blocks and len bytes reached the device. */
void wc_blk_record_written(struct wc_cache *c, unsigned n, size_t len);
/* Remove a version from the index and free it, or leave it to write-back
 * when under it (shard lock held; frees go to out[]). */
void wc_blk_drop(struct wc_cache *c, struct wc_shard *s, uint32_t idx, uint32_t *out, unsigned *n_out);

/* aio.c */
int wc_blk_aio_start(struct wc_cache *c);
void wc_blk_aio_stop(struct wc_cache *c);
bool wc_blk_aio_on(struct wc_cache *c);
/* A free slot with room for len bytes (waits while all are in flight). */
int wc_blk_aio_get(struct wc_cache *c, size_t len, struct wc_blk_aslot **out);
void wc_blk_aio_put(struct wc_cache *c, struct wc_blk_aslot *s);
/* The slot's fields are set: readers may find it (before its publish). */
void wc_blk_aio_mark_busy(struct wc_blk_aslot *s);
void wc_blk_aio_submit(struct wc_cache *c, struct wc_blk_aslot *s);
/* Copy len bytes of an in-flight version at device offset `where`: false
 * when its record completed meanwhile (the device has it). */
bool wc_blk_aio_read(struct wc_cache *c, void *dst, uint64_t where, size_t len);
/* Wait for the records in flight now (wc_flush). */
int wc_blk_aio_drain(struct wc_cache *c);
/* no_threads: complete the records the device finished, without waiting.
 * Their count, or -errno (the cache is then in error state). */
int wc_blk_aio_poll(struct wc_cache *c);
/* no_threads: submit the records writers left queued. */
void wc_blk_aio_unplug(struct wc_cache *c);
/* no_threads: complete at least one record in flight, waiting up to `ms`
 * for the device (a wait for records no thread of ours reaps). */
void wc_blk_aio_wait(struct wc_cache *c, unsigned ms);
/* Whether records complete without anyone's polls: a completion thread
 * reaps them, or they are written inline. */
bool wc_blk_aio_reaper(struct wc_cache *c);
/* Records in flight (the host's next poll is due soon). */
bool wc_blk_aio_busy(struct wc_cache *c);

/* recover.c */
int wc_blk_format(struct wc_cache *c, uint64_t origin_size, const struct wc_pmem_origin_id *id);
int wc_blk_recover(struct wc_cache *c);
uint64_t wc_blk_dirty_in_image(struct wc_cache *c);

/* writeback.c */
int wc_blk_wb_start(struct wc_cache *c);
void wc_blk_wb_stop(struct wc_cache *c);
void wc_blk_wb_kick(struct wc_cache *c);
/* Write back every dirty block and wait (wc_writeback). */
int wc_blk_writeback_all(struct wc_cache *c);
/* One step of the thread's work (wc_poll and the thread): autocommit,
 * summaries, write-back, reclaim.  Returns units done or -errno. */
int wc_blk_wb_step(struct wc_cache *c, bool all);
/* Milliseconds until wc_blk_wb_step has work (0 = now, -1 = none until
 * the host's next request): an event loop's deadline. */
int wc_blk_wb_deadline_ms(struct wc_cache *c);
void wc_blk_wb_stats(struct wc_cache *c, struct wc_stats *st);
/* A version under write-back (WC_E_WB set, shard lock): its entry, origin
 * block and device offset. */
struct wc_blk_wb_item {
	uint32_t idx;
	uint64_t origin, where;
};
/* Read a window of items -- sorted by device offset, strictly increasing:
 * runs closer than a few KiB read as one, all reads submitted together --
 * and write them to the origin, runs contiguous there as one request
 * (wb.step held: it uses write-back's buffer).  Returns the items taken
 * (those that fit the buffer), or -errno; a failed device read is sticky,
 * the origin's is not. */
int wc_blk_wb_write_window(struct wc_cache *c, const struct wc_blk_wb_item *it, unsigned n);
/* Write-back's end for these items: clean (ok) or dirty again; those a
 * newer version superseded meanwhile are freed now. */
void wc_blk_wb_finish(struct wc_cache *c, const struct wc_blk_wb_item *it, unsigned n, bool ok);
/* wbjob.c: the write-back of the oldest dirty segment, or the one begun
 * (wb.step held).  1: done, 0: not ready yet (records in flight, no
 * summary yet), -EINPROGRESS: its reads or requests are out (without
 * `wait`: a later call goes on), -errno. */
int wc_blk_wb_segment(struct wc_cache *c, bool wait);
int wc_blk_wb_job_new(struct wc_cache *c);
/* Versions per write-back window: its buffer holds them and their gaps. */
#define WC_BLK_WB_WINDOW 256u
/* wb.step just taken: end the segment write-back the host's steps left
 * with requests out (without threads), waiting for them, so that the
 * holder has write-back to itself.  Its failure is write-back's (the
 * segment stays dirty, retried with backoff), not the holder's. */
void wc_blk_wb_job_settle(struct wc_cache *c);

/* range.c */
/* Write back the dirty versions of the blocks of [offset, offset + len)
 * (bytes, validated by the caller) and flush the origin; an origin failure
 * is -errno, not sticky, and leaves them dirty. */
int wc_blk_writeback_range(struct wc_cache *c, uint64_t offset, uint64_t len);
/* Write the range back, then drop it from the cache only, durably: a
 * cache-only discard record (format.h) hides its older versions at
 * recovery; a write that lands after the record stays. */
int wc_blk_invalidate(struct wc_cache *c, uint64_t offset, uint64_t len);

/* The medium's hooks for the core (bind.c): struct wc_medium_ops. */
extern const struct wc_medium_ops wc_blk_medium_ops;

/* The device offset of an entry's data, kept in the DRAM entry. */
static inline uint64_t wc_blk_where(const struct wc_entry *e)
{
	return (uint64_t)e->spare[0] | (uint64_t)e->spare[1] << 32;
}
static inline void wc_blk_set_where(struct wc_entry *e, uint64_t off)
{
	e->spare[0] = (uint32_t)off;
	e->spare[1] = (uint32_t)(off >> 32);
}

#endif /* WC_BLOCK_H */
