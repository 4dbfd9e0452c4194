/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine.h -- internals of the flush engine shared by the lib/flush files, the
 * tests and the admin interface (lib/admin, for wcbench): CPU detection, the strategy table, and the store and
 * flush primitives every strategy is built from.
 *
 * Nothing here fences.  The one fence is wc_drain_sfence() (cached.c), and
 * only a policy's drain calls it.
 */
#ifndef WC_FLUSH_ENGINE_H
#define WC_FLUSH_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flush/flush.h"

/* ---- CPU (cpu.c) ------------------------------------------------------ */

struct wc_cpu {
	unsigned features;   /* WC_CPU_* usable (CPUID bit and, for AVX, OS state) */
	unsigned line_size;  /* CLFLUSH line size, CPUID leaf 1 EBX[15:8] * 8 */
	char vendor[13];     /* "AuthenticAMD", "GenuineIntel", "" off x86 */
	unsigned family, model, stepping;
};

/* Detected once (pthread_once), never changes afterwards. */
const struct wc_cpu *wc_cpu_get(void);

#define WC_QUIRK_NO_CACHED 1u /* the cached path is wrong here: NT at every size */

struct wc_cpu_quirk {
	const char *vendor;
	unsigned family, model_min, model_max;
	unsigned flags;      /* WC_QUIRK_* */
	const char *reason;  /* what wc_pmem_info reports */
};

/* The quirk-table entry matching `cpu`, or NULL. */
const struct wc_cpu_quirk *wc_cpu_quirk_find(const struct wc_cpu *cpu);
/* Test-only: search this table instead of the built-in one (NULL vendor
 * ends it; NULL pointer = the built-in table). */
extern const struct wc_cpu_quirk *wc_cpu_quirks_for_test;

/* ---- Strategies (strategy.c) ------------------------------------------ */

enum wc_strategy_id {
	WC_STRAT_NT_MOVNTI = 0,
	WC_STRAT_NT_SSE2,
	WC_STRAT_NT_AVX2,
	WC_STRAT_NT_AVX512,
	WC_STRAT_CACHED_CLFLUSHOPT,
	WC_STRAT_CACHED_CLWB,
	WC_STRAT_PMEM2,          /* libpmem2's own memcpy (generic.c) */
	WC_STRAT_COUNT
};

struct wc_strategy {
	const char *name;        /* "nt-avx512", "cached+clwb", ... */
	wc_copy_fn copy;         /* NULL when not built for this target */
	wc_set_fn set;
	unsigned needs;          /* WC_CPU_* bits the CPU must have */
	int nt;                  /* 1 = non-temporal stores */
};

/* The table entry (copy == NULL when the strategy is not built here). */
const struct wc_strategy *wc_strategy_get(enum wc_strategy_id id);
/* Built and runnable with `features`. */
int wc_strategy_usable(enum wc_strategy_id id, unsigned features);
/* By name; NULL if unknown. */
const struct wc_strategy *wc_strategy_by_name(const char *name);
/*
 * The non-temporal strategy this engine prefers among those usable with
 * `features` (docs/flush-engine.md has the measurements behind the order).
 * Always succeeds on x86-64 (MOVNTI is baseline); WC_STRAT_PMEM2 elsewhere.
 */
enum wc_strategy_id wc_strategy_best_nt(unsigned features);

/* ---- Primitives ------------------------------------------------------- */

/* Every x86-64 CPU shipped has 64-byte lines.  The flush loops step 64 bytes,
 * which writes back every line for any line size that is a multiple of 64;
 * policy.c turns the cached path off for any other CPUID line size. */
#define WC_LINE 64u

enum wc_persist_insn {
	WC_INSN_CLFLUSHOPT = 0,
	WC_INSN_CLWB,
	WC_INSN_CLFLUSH,     /* only on CPUs with neither of the above */
};

/* The instruction that writes back the partial head/tail lines of the
 * non-temporal strategies, chosen once from the CPU (CLWB, else CLFLUSHOPT,
 * else CLFLUSH: a CPU old enough to lack both has nothing else; cpu.c has
 * the measurement). */
extern enum wc_persist_insn wc_partial_flush_insn;

#if defined(__x86_64__)
/* The asm statements take a "memory" clobber so the compiler cannot sink the
 * stores to the line below its flush. */
static inline void wc_clflushopt(const void *p)
{
	__asm__ volatile("clflushopt (%0)" : : "r"(p) : "memory");
}

static inline void wc_clwb(const void *p)
{
	__asm__ volatile("clwb (%0)" : : "r"(p) : "memory");
}

static inline void wc_clflush(const void *p)
{
	__asm__ volatile("clflush (%0)" : : "r"(p) : "memory");
}

static inline __attribute__((always_inline)) void wc_persist_line(const void *p,
                                                                enum wc_persist_insn insn)
{
	if (insn == WC_INSN_CLFLUSHOPT)
		wc_clflushopt(p);
	else if (insn == WC_INSN_CLWB)
		wc_clwb(p);
	else
		wc_clflush(p);
}

/* Write back the one or two lines holding [p, p + n), 0 < n <= 64. */
static inline void wc_persist_partial(const void *p, size_t n)
{
	uintptr_t first = (uintptr_t)p & ~(uintptr_t)(WC_LINE - 1);
	uintptr_t last = ((uintptr_t)p + n - 1) & ~(uintptr_t)(WC_LINE - 1);
	enum wc_persist_insn insn = wc_partial_flush_insn;

	wc_persist_line((const void *)first, insn);
	if (last != first)
		wc_persist_line((const void *)last, insn);
}
#endif

/* ---- Functions by file ------------------------------------------------ */

/* nt_movnti.c, nt_sse2.c, nt_avx2.c, nt_avx512.c */
void wc_nt_movnti_copy(void *dst, const void *src, size_t n);
void wc_nt_movnti_set(void *dst, int c, size_t n);
void wc_nt_sse2_copy(void *dst, const void *src, size_t n);
void wc_nt_sse2_set(void *dst, int c, size_t n);
void wc_nt_avx2_copy(void *dst, const void *src, size_t n);
void wc_nt_avx2_set(void *dst, int c, size_t n);
void wc_nt_avx512_copy(void *dst, const void *src, size_t n);
void wc_nt_avx512_set(void *dst, int c, size_t n);

/* cached.c: cached stores + write-back, the flush loops and the fence */
void wc_cached_clflushopt_copy(void *dst, const void *src, size_t n);
void wc_cached_clflushopt_set(void *dst, int c, size_t n);
void wc_cached_clwb_copy(void *dst, const void *src, size_t n);
void wc_cached_clwb_set(void *dst, int c, size_t n);
void wc_persist_clflushopt(const void *addr, size_t n);
void wc_persist_clwb(const void *addr, size_t n);
void wc_persist_clflush(const void *addr, size_t n);
void wc_drain_sfence(void);

/* granularity.c: BYTE (plain stores) and PAGE (plain stores + libpmem2's
 * msync-based flush) */
void wc_plain_copy(void *dst, const void *src, size_t n);
void wc_plain_set(void *dst, int c, size_t n);
void wc_persist_noop(const void *addr, size_t n);
void wc_page_copy(void *dst, const void *src, size_t n);
void wc_page_set(void *dst, int c, size_t n);
/* Remember libpmem2's PAGE flush function for wc_page_copy/set. */
void wc_page_flush_install(wc_range_fn page_flush);

/* generic.c: libpmem2's functions for CACHE_LINE granularity, through a
 * mapping of one anonymous page (libpmem2's flush and memcpy functions do
 * not depend on the mapping they came from at that granularity).  0 or a
 * negative errno with a message if libpmem2 refused. */
int wc_generic_init(void);
void wc_generic_copy(void *dst, const void *src, size_t n);
void wc_generic_set(void *dst, int c, size_t n);
void wc_generic_flush(const void *addr, size_t n);
void wc_generic_drain(void);

/* ---- Policy (policy.c, env.c, calibrate.c) ---------------------------- */

/* The WC_PMEM_* environment, parsed. */
struct wc_pmem_env {
	struct wc_pmem_config cfg; /* fields the environment sets, else 0 */
	unsigned set;              /* WC_ENV_* bits: which variables were given */
	int error;                 /* 0 or -EINVAL */
	char errmsg[256];          /* the message for `error` */
};

#define WC_ENV_THRESHOLD  (1u << 0)
#define WC_ENV_FORCE      (1u << 1)
#define WC_ENV_FLUSH      (1u << 2)
#define WC_ENV_DISABLE    (1u << 3)
#define WC_ENV_NO_QUIRKS  (1u << 4) /* WC_PMEM_NO_QUIRKS=1: measure, whatever the table says */

/* Parse the current environment now (no caching; tests call it directly).
 * Bad variables are recorded in env->error/errmsg and otherwise ignored. */
void wc_pmem_env_parse(struct wc_pmem_env *env);
/* The environment as read at first use (once per process). */
const struct wc_pmem_env *wc_pmem_env_get(void);
/* Test-only (through wc_persist_default_reset): read it again at next use. */
void wc_pmem_env_reset(void);

/*
 * Resolve a CACHE_LINE policy for `cfg` (already merged with the
 * environment) on `cpu` -- a pure function of its inputs, so the tests can
 * pretend any CPU.  `env_set` holds the WC_ENV_* bits of the fields that
 * came from the environment: the reason then names the variable (e.g.
 * "env WC_PMEM_THRESHOLD 4096"), and WC_ENV_FLUSH makes CLFLUSHOPT an
 * explicit choice.  0, or -EINVAL/-ENOTSUP with a message.
 */
int wc_persist_policy_resolve(struct wc_persist_policy *p, const struct wc_pmem_config *cfg,
                            const struct wc_cpu *cpu, unsigned env_set);

/* The non-temporal widths a calibration measures, at most (MOVNTI, SSE2,
 * AVX2, AVX-512). */
#define WC_CAL_MAX_NT 4

/* One size of a calibration: ns per copy, best of the rounds. */
struct wc_calibration_point {
	size_t size;
	/* The NT width chosen for this size's band (or, when this size is in
	 * the cached band, the one chosen below it) and the cached path. */
	double nt_fenced, cached_fenced;       /* a fence after every copy */
	double nt_batched, cached_batched;     /* one fence per 64 copies */
	/* Every NT width measured, in wc_calibration.nt_ids order. */
	double w_fenced[WC_CAL_MAX_NT], w_batched[WC_CAL_MAX_NT];
};

#define WC_CALIBRATION_MAX_POINTS 16

/*
 * What a measurement chose: `small` below `threshold`, `large` at and
 * above it; threshold SIZE_MAX means `small` at every size (large ==
 * small).  `large` is the cached path where it wins (the crossover), or
 * another non-temporal width when the widths trade places with the size.
 * runner_up is the next-fastest non-temporal width over small's band and
 * runner_up_speed its speed there relative to small's (1.0 = a tie;
 * runner_up == small when the CPU has one width).
 */
struct wc_flush_choice {
	enum wc_strategy_id small, large;
	size_t threshold;
	enum wc_strategy_id runner_up;
	double runner_up_speed;
	double ms;                             /* how long the measurement took */
};

struct wc_calibration {
	const char *nt_name, *cached_name;     /* small's name; the cached path's */
	unsigned n_nt;                         /* NT widths measured */
	enum wc_strategy_id nt_ids[WC_CAL_MAX_NT];
	unsigned npoints, rounds;              /* rounds completed */
	struct wc_calibration_point pt[WC_CALIBRATION_MAX_POINTS];
	size_t threshold;                      /* = choice.threshold */
	struct wc_flush_choice choice;
	double elapsed_ms;
};

/* "nt-avx512 at every size (runner-up nt-avx2 at 0.97x)", "nt-avx2 below
 * 2048 B, cached+clflushopt from there (runner-up ...)". */
const char *wc_flush_choice_str(char *buf, size_t len, const struct wc_flush_choice *ch);

/* A stretch of memory a calibration may overwrite at will. */
struct wc_cal_extent {
	char *addr;
	size_t len;
};

/*
 * Measure every non-temporal width in `features` and cached + flush_insn
 * with copies into `ext[0..n)` (each copy inside one extent, the
 * destination moving forward so every copy writes cold lines), at the sizes
 * up to `max_size` that fit an extent, for `rounds` interleaved rounds of
 * `bytes_per_point` bytes per size and strategy, stopping early once a
 * round from the second on completes more than `budget_ms` (0 = no limit)
 * after the first began (the untimed first touch of every extent comes before), and choose
 * (out->choice).  Every byte of the extents is overwritten; nothing
 * outside them is written.  0 or -errno.
 */
int wc_calibrate_area(struct wc_calibration *out, const struct wc_cal_extent *ext, size_t n,
                      size_t max_size, unsigned features, int flush_insn, unsigned rounds,
                      size_t bytes_per_point, double budget_ms);
/* The same on a private anonymous buffer larger than L2 (16 MiB). */
int wc_calibrate_run(struct wc_calibration *out, unsigned features, int flush_insn,
                     unsigned rounds, size_t bytes_per_point, double budget_ms);
/* The quick calibration (<= ~100 ms) behind wc_pmem_calibrate; the result
 * is remembered for later WC_PMEM_THRESHOLD_AUTO requests. */
int wc_calibrate_choice(unsigned features, int flush_insn, struct wc_flush_choice *out);
/* The remembered result, measuring once if there is none. */
int wc_calibrated_choice(unsigned features, int flush_insn, struct wc_flush_choice *out);

/*
 * The engine's default when nothing is configured: the remembered result,
 * else a short measurement on a private buffer (<= ~15 ms), once per
 * process and feature set; a second caller waits for the first one's
 * answer.  `features` must be ones the running CPU has.
 */
int wc_first_use_choice(unsigned features, int flush_insn, struct wc_flush_choice *out);
/* The measurement wc_first_use_choice runs; tests replace it to pretend
 * an answer (not thread-safe: set it before any copy). */
typedef int (*wc_measure_fn)(unsigned features, int flush_insn, struct wc_flush_choice *out);
extern wc_measure_fn wc_first_use_measure;
/* Test-only: forget the remembered result. */
void wc_calibration_forget(void);

/*
 * Put `small` below `threshold` and `large` at and above it into a
 * resolved CACHE_LINE policy (a cache's recorded choice), with `reason`.
 * -ENOTSUP (nothing changed) if either strategy is not usable here.
 */
int wc_persist_policy_set_choice(struct wc_persist_policy *p, enum wc_strategy_id small,
                                 enum wc_strategy_id large, size_t threshold,
                                 const char *reason);

/* Replace the reason a resolved policy gives (interned), for its CACHE_LINE
 * choice and, if that is in force, in its info. */
void wc_persist_policy_set_reason(struct wc_persist_policy *p, const char *reason);

/* Test-only: forget the parsed environment and the process default so the
 * next use reads the environment again.  Not thread-safe. */
void wc_persist_default_reset(void);

/* A copy of `s` that lives as long as the process (policy reasons). */
const char *wc_intern(const char *s);

#endif /* WC_FLUSH_ENGINE_H */
