/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * internal.h -- what the files of write-back share: its state, picking
 * blocks (pick.c), the window (window.c), rounds (writeback.c) and their
 * end (settle.c).  Nothing outside writeback/ includes it.
 */
#ifndef WC_WRITEBACK_INTERNAL_H
#define WC_WRITEBACK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "core/cache.h"
#include "writeback/writeback.h"

enum wc_wb_pick_mode {
	WC_PICK_ALL,       /* every committed block (wc_writeback, cleaner) */
	WC_PICK_WATERMARK, /* down to the low watermark */
	WC_PICK_AGE,       /* blocks older than max_age_ms */
};

/*
 * Pick up to `want` committed blocks, marking each WC_E_WB under its shard
 * lock, into out[], looking at each cache block at most once, starting at
 * *scan (the cache block after the last one looked at, updated).  Each seed
 * is grown into a run of its dirty origin neighbours, so out[] may hold
 * several runs.  A block whose older version is still under write-back is
 * skipped: two versions of a block never overlap on the way to the origin.
 */
unsigned wc_wb_pick(struct wc_cache *c, uint64_t *scan, enum wc_wb_pick_mode mode, unsigned want,
                    uint32_t *out);

/* Sort picked blocks by origin block, so neighbours become one request. */
void wc_wb_sort_by_origin(struct wc_cache *c, uint32_t *v, unsigned n);

/* The most blocks one origin request carries (writeback_max_io_kib, IOV_MAX). */
unsigned wc_wb_max_run_blocks(struct wc_cache *c);

/* The write-back window: blocks in flight at most (window.c). */
struct wc_wb_window {
	unsigned blocks;         /* now */
	unsigned min, max;       /* writeback_jobs; writeback_window_max_kib, in blocks */
	unsigned probe_from;     /* probing: the window before it, else 0 */
	uint64_t probe_rate;     /* blocks/s at probe_from: the mean of its rounds */
	uint64_t rate_sum;       /* blocks/s summed over the rounds at this window */
	unsigned rate_n;         /*   (of a probe: its rounds so far) */
	uint64_t probe_min;      /* the slowest round of the probe so far */
	unsigned hold;           /* rounds until the next probe */
	bool last_probe_up;
};

void wc_wb_window_init(struct wc_wb_window *win, unsigned min, unsigned max);
/* A round moved `blocks` in `elapsed_ns`: maybe probe or settle. */
void wc_wb_window_step(struct wc_wb_window *win, unsigned blocks, uint64_t elapsed_ns);

/* ---- rounds (writeback.c) and their end (settle.c) ---- */

/* Longest wait in one origin poll. */
#define WB_POLL_SLICE_NS 1000000ull /* 1 ms */

struct wb_round;

struct wb_run {
	struct wc_origin_io io;
	struct wb_round *round;
	uint32_t first, n;       /* positions in the round's candidate array */
	ssize_t res;
	uint64_t start_ns;       /* submitted at; latency_ns once done */
};

struct wb_round {
	struct wc_cache *c;
	uint32_t *cand;          /* the round's blocks, sorted per window */
	struct iovec *iov;       /* iov[i] is cand[i]'s data */
	struct wb_run *runs;
	unsigned n, nruns;
	atomic_uint pending;     /* runs submitted, not completed */
	/* 0, or the errno of a flush that failed while this round's writes
	 * were completing: a failed flush may have lost any write completed
	 * before it did (a server that crashed with its cache; what an fsync
	 * error may mean), so none of this round is freed -- it is written
	 * again, whatever its own flush says. */
	int taint;
};

/* The origin flush that makes the written round durable. */
struct wb_flush {
	struct wc_origin_io io;  /* WC_ORIGIN_FLUSH */
	bool begun;              /* submitted (or run synchronously) */
	bool sent;               /* a flush went to the origin (not a taint) */
	atomic_bool done;        /* res is valid */
	int res;                 /* 0 or -errno */
};

struct wb_state {
	struct wb_round round[2];
	unsigned next;           /* the round[] the next round fills */
	struct wb_round *written; /* written, not yet durable: the next settles it */
	struct wb_flush flush;   /* written's */
	struct wb_round *filling; /* the round being written, until it is written */
	bool sync_flush;         /* the origin takes no flush requests */
	unsigned cap;            /* blocks per round */
	bool active;             /* between high and low watermark */
	uint64_t scan;           /* the cache block the next pick looks at first */
	struct wc_wb_window win; /* under wb_lock; read racily by stats */
	uint64_t last_mean_ns;   /* mean request latency, the last round's */
	unsigned settle_failed;  /* blocks the last settle requeued */
	/* no_threads: the round the host's steps fill (wc_writeback_step),
	 * one at a time, from its first pick to its free. */
	struct {
		struct wb_round *round;  /* NULL: none under way */
		enum wc_wb_pick_mode mode;
		unsigned want, n;
		bool more;
		uint64_t start_ns;
	} step;
	/* A range write-back: WC_PICK_ALL takes only origin blocks in
	 * [range_lo, range_hi) while range_hi is set (range_lock held). */
	uint64_t range_lo, range_hi;
	pthread_mutex_t range_lock;
};

/* The rest of a failure streak's state (outage.c). */
struct wc_wb_outage {
	pthread_mutex_t lock;
	pthread_cond_t retry;         /* backoff sleepers (CLOCK_MONOTONIC) */
	uint64_t since_wall_ms;       /* the streak's start, CLOCK_REALTIME */
	uint64_t retry_at_ns;         /* the next attempt, not before */
	unsigned step;                /* the backoff's: wc_clear_error restarts it */
	unsigned kicks;               /* wc_clear_error's: a sleeper wakes */
	atomic_uint_fast64_t outages, refused;
};

struct wc_writeback {
	pthread_mutex_t lock;                /* one round at a time */
	pthread_mutex_t bg_lock;
	pthread_cond_t bg_cond;
	pthread_t bg_thread;
	bool bg_running, bg_stop, bg_kick;
	atomic_bool cleaner;
	atomic_uint_fast64_t inflight;       /* blocks in flight */
	/* Written under lock, read by wc_get_stats without it (a round may
	 * hold the lock for 16 MiB of I/O). */
	atomic_uint_fast64_t ios, bytes, errors;
	/* The origin failing, both media's (outage.c), under outage.lock: the
	 * attempts that failed in a row, since when and the last errno (the
	 * three also read without the lock: atomics). */
	atomic_uint failed_rounds;
	_Atomic uint64_t failing_since_ns;
	atomic_int last_errno;
	struct wc_wb_outage outage;
	struct wb_state *state;              /* the rounds' buffers, once started */
};


/* Start making the written round durable (wb_lock held). */
void wc_wb_settle_begin(struct wc_cache *c, struct wb_state *w);
/* Its flush is done: free or requeue its blocks (wb_lock held). */
void wc_wb_settle_end(struct wc_cache *c, struct wb_state *w);
/* Both, waiting for the flush (wb_lock held). */
void wc_wb_settle(struct wc_cache *c, struct wb_state *w);
/* The error a round returns after its settle requeued `failed` blocks. */
int wc_wb_failed_round_err(struct wc_cache *c, unsigned failed);
/* The wait after the n-th failed attempt of a backoff (outage.c paces
 * every attempt with it). */
uint64_t wc_wb_backoff_ms(unsigned n);
/* The outage state's locks (outage.c), with write-back's. */
void wc_wb_outage_init(struct wc_writeback *wb);
void wc_wb_outage_fini(struct wc_writeback *wb);

#endif /* WC_WRITEBACK_INTERNAL_H */
