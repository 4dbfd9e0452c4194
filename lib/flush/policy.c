/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * policy.c -- which strategy copies how many bytes, and why.
 *
 * The decision, in order (the first rule that applies wins):
 *   1. not x86-64                -> libpmem2's functions (generic.c)
 *   2. force = nt                -> non-temporal at every size
 *   3. force = cached            -> cached + flush at every size
 *                                   (-ENOTSUP without the flush instruction)
 *   4. line size != 64           -> non-temporal at every size
 *   5. no CLFLUSHOPT (no CLWB when flush_insn = CLWB)
 *                                -> non-temporal at every size; CLFLUSH,
 *                                   the only alternative, serialises
 *   6. threshold given           -> that threshold (SIZE_MAX = NT everywhere,
 *                                   WC_PMEM_THRESHOLD_AUTO = calibrate now)
 *   7. a quirk-table entry (cpu.c) says the cached path is wrong on this
 *      CPU                       -> NT at every size (WC_PMEM_NO_QUIRKS=1
 *                                   skips the table)
 *   8. otherwise: measure at first use (calibrate.c, ~10-20 ms on a private
 *      buffer, once per process): the non-temporal width and the crossover;
 *      only if that fails, the seed's rule: NT below 768 bytes, cached at
 *      and above
 *
 * A cache measures again on its own memory and keeps the result in its
 * superblock (lib/policy_line.c); this is the engine used alone.
 *
 * Rules 6 (auto) and 8 measure the non-temporal width too; rules 2-7 take
 * the widest the CPU (minus `disable`) offers (strategy.c).  A config
 * field left 0 takes the environment's value; `disable` bits add up.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flush/engine.h"
#include "util/error.h"
#include "util/log.h"

/* The seed's rule, measured on Optane by dm-writecache; now only the
 * fallback when a measurement fails (WC_PMEM_THRESHOLD=768 selects it). */
#define DEFAULT_THRESHOLD 768

struct interned {
	struct interned *next;
	char s[];
};

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct interned *interned;

const char *wc_intern(const char *s)
{
	struct interned *i;
	size_t len = strlen(s);

	pthread_mutex_lock(&intern_lock);
	for (i = interned; i; i = i->next)
		if (strcmp(i->s, s) == 0)
			break;
	if (!i) {
		i = malloc(sizeof(*i) + len + 1);
		if (!i) {
			pthread_mutex_unlock(&intern_lock);
			return "(out of memory)";
		}
		memcpy(i->s, s, len + 1);
		i->next = interned;
		interned = i;
	}
	pthread_mutex_unlock(&intern_lock);
	return i->s;
}

static int validate(const struct wc_pmem_config *cfg)
{
	const unsigned known = WC_CPU_CLFLUSH | WC_CPU_CLFLUSHOPT | WC_CPU_CLWB | WC_CPU_SSE2 |
	                       WC_CPU_AVX2 | WC_CPU_AVX512F | WC_CPU_MOVDIR64B | WC_CPU_SSE42;

	if (cfg->force < WC_PMEM_AUTO || cfg->force > WC_PMEM_FORCE_CACHED)
		return wc_err(-EINVAL, "flush policy: force=%d: expected WC_PMEM_AUTO, "
		                       "WC_PMEM_FORCE_NT or WC_PMEM_FORCE_CACHED", cfg->force);
	if (cfg->flush_insn != WC_PMEM_CLFLUSHOPT && cfg->flush_insn != WC_PMEM_CLWB)
		return wc_err(-EINVAL, "flush policy: flush_insn=%d: expected WC_PMEM_CLFLUSHOPT "
		                       "or WC_PMEM_CLWB", cfg->flush_insn);
	if (cfg->disable & ~known)
		return wc_err(-EINVAL, "flush policy: disable=0x%x: unknown WC_CPU_* bits 0x%x",
		              cfg->disable, cfg->disable & ~known);
	if (cfg->line_size && (cfg->line_size < 16 || cfg->line_size > 4096 ||
	                       (cfg->line_size & (cfg->line_size - 1))))
		return wc_err(-EINVAL, "flush policy: line_size=%u: expected 0 (from CPUID) or a "
		                       "power of two in 16..4096", cfg->line_size);
	return 0;
}

/* "config" or "env WC_PMEM_X": where a setting came from. */
static const char *origin(unsigned env_set, unsigned bit, const char *var)
{
	return (env_set & bit) ? var : "config";
}

static void set_uniform(struct wc_persist_policy *p, const struct wc_strategy *s, size_t threshold)
{
	p->threshold = threshold;
	p->copy_small = p->copy_large = s->copy;
	p->set_small = p->set_large = s->set;
	p->info.small_strategy = p->info.large_strategy = s->name;
}

#if defined(__x86_64__)
static void set_split(struct wc_persist_policy *p, const struct wc_strategy *small,
                      const struct wc_strategy *large, size_t threshold)
{
	p->threshold = threshold;
	p->copy_small = small->copy;
	p->set_small = small->set;
	p->copy_large = large->copy;
	p->set_large = large->set;
	p->info.small_strategy = small->name;
	p->info.large_strategy = large->name;
}
#endif

static void features_text(char *buf, size_t len, unsigned bits)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{ WC_CPU_CLFLUSHOPT, "clflushopt" }, { WC_CPU_CLWB, "clwb" },
		{ WC_CPU_SSE2, "sse2" }, { WC_CPU_AVX2, "avx2" },
		{ WC_CPU_AVX512F, "avx512f" }, { WC_CPU_MOVDIR64B, "movdir64b" },
		{ WC_CPU_SSE42, "sse4.2" }, { WC_CPU_CLFLUSH, "clflush" },
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && used < len; i++)
		if (bits & names[i].bit)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "",
			                         names[i].name);
}

/*
 * The flush for lines the caller stored itself (wc_pmem_flush, the cache's
 * metadata): the instruction asked for (flush_insn = CLWB, or either value
 * of WC_PMEM_FLUSH) if present; otherwise CLWB, the faster one where it was
 * measured (cpu.c: 157 vs 197 ns per flushed and fenced line), and it keeps
 * lines the caller is likely to touch again (commit records) cached; then
 * CLFLUSHOPT; CLFLUSH only on a CPU with neither (see cached.c).  The
 * cached copy path keeps flush_insn's default, CLFLUSHOPT: copied data is
 * not re-read soon, so evicting it is the point (dm-writecache's reason).
 */
static wc_range_fn pick_flush(unsigned features, int flush_insn, int explicit_insn)
{
#if defined(__x86_64__)
	if (explicit_insn && flush_insn == WC_PMEM_CLFLUSHOPT && (features & WC_CPU_CLFLUSHOPT))
		return wc_persist_clflushopt;
	if (features & WC_CPU_CLWB)
		return wc_persist_clwb;
	if (features & WC_CPU_CLFLUSHOPT)
		return wc_persist_clflushopt;
	return wc_persist_clflush;
#else
	return wc_generic_flush;
#endif
}

#if defined(__x86_64__)
/* Apply a measured choice; `how` says where it came from. */
static void set_choice(struct wc_persist_policy *p, const struct wc_flush_choice *ch,
                       const char *how, char *why, size_t len)
{
	const struct wc_strategy *small = wc_strategy_get(ch->small);
	const struct wc_strategy *large = wc_strategy_get(ch->large);
	char what[160];

	if (ch->threshold == SIZE_MAX || ch->small == ch->large)
		set_uniform(p, small, SIZE_MAX);
	else
		set_split(p, small, large, ch->threshold);
	wc_flush_choice_str(what, sizeof(what), ch);
	if (ch->threshold != SIZE_MAX && !large->nt)
		snprintf(why, len, "%s: crossover %zu, %s", how, ch->threshold, what);
	else
		snprintf(why, len, "%s: non-temporal wins at every size, %s", how, what);
}

/*
 * Rule 8.  The measurement runs on the CPU we are on, with the features it
 * has: a pretended CPU (the tests) gets the real CPU's answer, or the one
 * wc_first_use_measure pretends.
 */
static int measure_first_use(struct wc_persist_policy *p, const struct wc_pmem_config *cfg,
                             unsigned features, unsigned env_set,
                             const struct wc_strategy *nt, const struct wc_strategy *cached,
                             char *why, size_t len)
{
	struct wc_flush_choice ch;
	char how[96];
	int ret;

	ret = wc_first_use_choice(features & wc_cpu_get()->features, cfg->flush_insn, &ch);
	if (!ret && (!wc_strategy_usable(ch.small, features) ||
	             !wc_strategy_usable(ch.large, features)))
		ret = wc_err(-ENOTSUP, "the measurement chose a strategy this policy cannot use");
	if (ret) {
		set_split(p, nt, cached, DEFAULT_THRESHOLD);
		snprintf(why, len, "%smeasurement failed (%s): default %d",
		         env_set & WC_ENV_NO_QUIRKS ? "quirk table ignored (env WC_PMEM_NO_QUIRKS), "
		                                    : "", wc_errmsg(), DEFAULT_THRESHOLD);
		return 0;
	}
	snprintf(how, sizeof(how), "%smeasured at first use in %.0f ms",
	         env_set & WC_ENV_NO_QUIRKS ? "quirk table ignored (env WC_PMEM_NO_QUIRKS), " : "",
	         ch.ms);
	set_choice(p, &ch, how, why, len);
	return 0;
}

/* Rules 2-8 of the comment at the top; `why` receives the reason. */
static int decide(struct wc_persist_policy *p, const struct wc_pmem_config *cfg,
                  const struct wc_cpu *cpu, unsigned features, unsigned line,
                  unsigned env_set, char *why, size_t len)
{
	int clwb = cfg->flush_insn == WC_PMEM_CLWB;
	enum wc_strategy_id cached_id = clwb ? WC_STRAT_CACHED_CLWB : WC_STRAT_CACHED_CLFLUSHOPT;
	const struct wc_strategy *nt = wc_strategy_get(wc_strategy_best_nt(features));
	const struct wc_strategy *cached =
	        wc_strategy_usable(cached_id, features) ? wc_strategy_get(cached_id) : NULL;
	const struct wc_cpu_quirk *quirk;
	int ret;

	if (!nt) /* MOVNTI is baseline x86-64: only a broken build gets here */
		return wc_err(-ENOTSUP, "flush policy: no non-temporal strategy built");
	if (cfg->force == WC_PMEM_FORCE_NT) {
		set_uniform(p, nt, SIZE_MAX);
		snprintf(why, len, "forced nt (%s)",
		         origin(env_set, WC_ENV_FORCE, "env WC_PMEM_FORCE"));
	} else if (cfg->force == WC_PMEM_FORCE_CACHED) {
		if (!cached)
			return wc_err(-ENOTSUP, "flush policy: forced cached stores (%s): this CPU "
			              "has no %s (or it is disabled)",
			              origin(env_set, WC_ENV_FORCE, "env WC_PMEM_FORCE"),
			              clwb ? "clwb" : "clflushopt");
		set_uniform(p, cached, 0);
		snprintf(why, len, "forced cached (%s)",
		         origin(env_set, WC_ENV_FORCE, "env WC_PMEM_FORCE"));
	} else if (line != WC_LINE) {
		set_uniform(p, nt, SIZE_MAX);
		snprintf(why, len, "line size %u: non-temporal at every size", line);
	} else if (!cached) {
		set_uniform(p, nt, SIZE_MAX);
		snprintf(why, len, "no %s: non-temporal at every size",
		         clwb ? "clwb" : "clflushopt");
	} else if (cfg->threshold == WC_PMEM_THRESHOLD_AUTO) {
		struct wc_flush_choice ch;
		char how[96];

		ret = wc_calibrated_choice(features & wc_cpu_get()->features, cfg->flush_insn, &ch);
		if (ret)
			return ret;
		snprintf(how, sizeof(how), "calibrated (%s)",
		         origin(env_set, WC_ENV_THRESHOLD, "env WC_PMEM_THRESHOLD=auto"));
		set_choice(p, &ch, how, why, len);
	} else if (cfg->threshold == SIZE_MAX) {
		set_uniform(p, nt, SIZE_MAX);
		snprintf(why, len, "%s: non-temporal at every size",
		         origin(env_set, WC_ENV_THRESHOLD, "env WC_PMEM_THRESHOLD=nt"));
	} else if (cfg->threshold) {
		set_split(p, nt, cached, cfg->threshold);
		snprintf(why, len, "%s %zu",
		         origin(env_set, WC_ENV_THRESHOLD, "env WC_PMEM_THRESHOLD"),
		         cfg->threshold);
	} else if (!(env_set & WC_ENV_NO_QUIRKS) && (quirk = wc_cpu_quirk_find(cpu)) &&
	           (quirk->flags & WC_QUIRK_NO_CACHED)) {
		set_uniform(p, nt, SIZE_MAX);
		snprintf(why, len, "%s", quirk->reason);
	} else {
		return measure_first_use(p, cfg, features, env_set, nt, cached, why, len);
	}
	return 0;
}
#else
/* Rule 1: libpmem2 knows this architecture's write-back instructions. */
static int decide(struct wc_persist_policy *p, const struct wc_pmem_config *cfg,
                  const struct wc_cpu *cpu, unsigned features, unsigned line,
                  unsigned env_set, char *why, size_t len)
{
	const struct wc_strategy *s = wc_strategy_get(WC_STRAT_PMEM2);

	if (!s)
		return wc_err(-ENOTSUP, "flush policy: %s", wc_errmsg());
	set_uniform(p, s, SIZE_MAX);
	snprintf(why, len, "not x86-64: libpmem2's functions");
	return 0;
}
#endif

/* The strategies just chosen become the CACHE_LINE choice in force and the
 * one wc_persist_policy_set_granularity() returns to. */
static void keep_strategies(struct wc_persist_policy *p)
{
	p->info.threshold = p->threshold;
	p->line.threshold = p->threshold;
	p->line.copy_small = p->copy_small;
	p->line.copy_large = p->copy_large;
	p->line.set_small = p->set_small;
	p->line.set_large = p->set_large;
	p->line.small_strategy = p->info.small_strategy;
	p->line.large_strategy = p->info.large_strategy;
}

int wc_persist_policy_resolve(struct wc_persist_policy *p, const struct wc_pmem_config *cfg,
                            const struct wc_cpu *cpu, unsigned env_set)
{
	unsigned features = cpu->features & ~cfg->disable;
	unsigned line = cfg->line_size ? cfg->line_size : cpu->line_size;
	char why[320], text[128];
	int ret;

	ret = validate(cfg);
	if (ret)
		return ret;
	memset(p, 0, sizeof(*p));
	p->gran = WC_GRAN_CACHE_LINE;
	p->info.line_size = line;
	p->info.cpu = cpu->features;
	p->info.vendor = cpu->vendor;
	p->info.family = cpu->family;
	p->info.model = cpu->model;
	p->info.stepping = cpu->stepping;
	p->flush = pick_flush(features, cfg->flush_insn,
	                      cfg->flush_insn == WC_PMEM_CLWB || (env_set & WC_ENV_FLUSH));
#if defined(__x86_64__)
	p->drain = wc_drain_sfence;
#else
	p->drain = wc_generic_drain;
#endif
	ret = decide(p, cfg, cpu, features, line, env_set, why, sizeof(why));
	if (ret)
		return ret;
	if (cfg->disable) {
		size_t used = strlen(why);

		features_text(text, sizeof(text), cfg->disable);
		snprintf(why + used, sizeof(why) - used, "; pretending absent (%s): %s",
		         origin(env_set, WC_ENV_DISABLE, "env WC_PMEM_NO_*"), text);
	}
	p->info.reason = wc_intern(why);
	keep_strategies(p);
	p->line.flush = p->flush;
	p->line.reason = p->info.reason;
	return 0;
}

int wc_persist_policy_set_choice(struct wc_persist_policy *p, enum wc_strategy_id small,
                                 enum wc_strategy_id large, size_t threshold,
                                 const char *reason)
{
#if defined(__x86_64__)
	unsigned features = p->info.cpu;
	const struct wc_strategy *s = wc_strategy_get(small), *l = wc_strategy_get(large);

	if (!wc_strategy_usable(small, features) || !wc_strategy_usable(large, features) ||
	    !s->nt)
		return wc_err(-ENOTSUP, "flush policy: %s below %zu B and %s above: not usable on "
		              "this CPU", s ? s->name : "?", threshold, l ? l->name : "?");
	if (threshold == SIZE_MAX || small == large)
		set_uniform(p, s, SIZE_MAX);
	else
		set_split(p, s, l, threshold);
	keep_strategies(p);
	wc_persist_policy_set_reason(p, reason);
	return 0;
#else
	(void)p, (void)small, (void)large, (void)threshold, (void)reason;
	return wc_err(-ENOTSUP, "flush policy: strategies are chosen by libpmem2 here");
#endif
}

void wc_persist_policy_set_reason(struct wc_persist_policy *p, const char *reason)
{
	const char *r = wc_intern(reason);

	if (p->info.reason == p->line.reason)
		p->info.reason = r;
	p->line.reason = r;
}

/* `cfg` with the environment filling the fields it leaves 0. */
static unsigned merge_env(struct wc_pmem_config *out, const struct wc_pmem_config *cfg,
                          const struct wc_pmem_env *env)
{
	unsigned from_env = 0;

	if (cfg)
		*out = *cfg;
	else
		memset(out, 0, sizeof(*out));
	if (!out->threshold && (env->set & WC_ENV_THRESHOLD)) {
		out->threshold = env->cfg.threshold;
		from_env |= WC_ENV_THRESHOLD;
	}
	if (!out->force && (env->set & WC_ENV_FORCE)) {
		out->force = env->cfg.force;
		from_env |= WC_ENV_FORCE;
	}
	if (!out->flush_insn && (env->set & WC_ENV_FLUSH)) {
		out->flush_insn = env->cfg.flush_insn;
		from_env |= WC_ENV_FLUSH;
	}
	if (env->set & WC_ENV_DISABLE) {
		out->disable |= env->cfg.disable;
		from_env |= WC_ENV_DISABLE;
	}
	from_env |= env->set & WC_ENV_NO_QUIRKS;
	return from_env;
}

static int config_is_zero(const struct wc_pmem_config *cfg)
{
	static const struct wc_pmem_config zero;

	return !cfg || (cfg->threshold == zero.threshold && cfg->force == zero.force &&
	                cfg->flush_insn == zero.flush_insn && cfg->disable == zero.disable &&
	                cfg->line_size == zero.line_size);
}

int wc_persist_policy_init(struct wc_persist_policy *p, const struct wc_pmem_config *cfg)
{
	const struct wc_pmem_env *env = wc_pmem_env_get();
	struct wc_pmem_config merged;
	unsigned from_env;

	/* A bad environment fails here, loudly, although the wc_pmem_*
	 * functions (which cannot fail) run without the bad variable. */
	if (env->error)
		return wc_err(env->error, "%s", env->errmsg);
	if (config_is_zero(cfg)) {
		/* The process default, as wc_pmem_configure() last set it. */
		*p = *wc_persist_default();
		return 0;
	}
	from_env = merge_env(&merged, cfg, env);
	return wc_persist_policy_resolve(p, &merged, wc_cpu_get(), from_env);
}

void wc_persist_policy_set_granularity(struct wc_persist_policy *p, enum wc_granularity g,
                                     wc_range_fn page_flush, wc_drain_fn page_drain)
{
	switch (g) {
	case WC_GRAN_BYTE:
		p->copy_small = p->copy_large = wc_plain_copy;
		p->set_small = p->set_large = wc_plain_set;
		p->flush = wc_persist_noop;
		/* drain stays the fence: stores must still be ordered before a
		 * later commit record, even when the caches are persistent. */
		p->info.small_strategy = p->info.large_strategy = "plain-stores";
		p->info.reason = "granularity byte (eADR): plain stores, no flush, fence on drain";
		break;
	case WC_GRAN_PAGE:
		wc_page_flush_install(page_flush);
		p->copy_small = p->copy_large = wc_page_copy;
		p->set_small = p->set_large = wc_page_set;
		p->flush = page_flush;
		p->drain = page_drain;
		p->info.small_strategy = p->info.large_strategy = "plain-stores+msync";
		p->info.reason = "granularity page (no DAX): plain stores, libpmem2's msync flush";
		break;
	case WC_GRAN_CACHE_LINE:
	default:
		g = WC_GRAN_CACHE_LINE;
		p->threshold = p->line.threshold;
		p->copy_small = p->line.copy_small;
		p->copy_large = p->line.copy_large;
		p->set_small = p->line.set_small;
		p->set_large = p->line.set_large;
		p->flush = p->line.flush;
#if defined(__x86_64__)
		p->drain = wc_drain_sfence;
#else
		p->drain = wc_generic_drain;
#endif
		p->info.small_strategy = p->line.small_strategy;
		p->info.large_strategy = p->line.large_strategy;
		p->info.reason = p->line.reason;
		break;
	}
	p->gran = g;
}

/*
 * The process default.  Policies are published by pointer; one in use by a
 * concurrent copy must stay valid, so none is ever freed (they are a few
 * hundred bytes, and wc_pmem_configure is a set-up call).
 */
struct policy_node {
	struct policy_node *next;
	struct wc_persist_policy policy;
};

static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static struct policy_node *all_policies;
_Atomic(const struct wc_persist_policy *) wc_persist_current __attribute__((visibility("hidden")));
static int warned;

/* Caller holds default_lock. */
static const struct wc_persist_policy *keep(const struct wc_persist_policy *p)
{
	struct policy_node *n;

	for (n = all_policies; n; n = n->next)
		if (memcmp(&n->policy, p, sizeof(*p)) == 0)
			return &n->policy;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->policy = *p;
	n->next = all_policies;
	all_policies = n;
	return &n->policy;
}

/* Caller holds default_lock.  Never fails: the copy functions cannot. */
static const struct wc_persist_policy *resolve_default(void)
{
	const struct wc_pmem_env *env = wc_pmem_env_get();
	struct wc_persist_policy p;
	struct wc_pmem_config merged;
	const struct wc_persist_policy *kept;
	unsigned from_env;

	if (env->error && !warned) {
		warned = 1;
		wc_log(WC_LOG_WARNING, "warning: %s; running without the bad variable", env->errmsg);
	}
	from_env = merge_env(&merged, NULL, env);
	if (wc_persist_policy_resolve(&p, &merged, wc_cpu_get(), from_env) != 0) {
		wc_log(WC_LOG_WARNING, "warning: %s; using the built-in policy", wc_errmsg());
		memset(&merged, 0, sizeof(merged));
		if (wc_persist_policy_resolve(&p, &merged, wc_cpu_get(), 0) != 0) {
			wc_log(WC_LOG_ERR, "fatal: no way to persist data: %s", wc_errmsg());
			abort();
		}
	}
	kept = keep(&p);
	if (!kept) {
		wc_log(WC_LOG_ERR, "fatal: out of memory for the flush policy");
		abort();
	}
	return kept;
}

const struct wc_persist_policy *wc_persist_default_slow(void)
{
	const struct wc_persist_policy *p;

	pthread_mutex_lock(&default_lock);
	p = atomic_load_explicit(&wc_persist_current, memory_order_relaxed);
	if (!p) {
		p = resolve_default();
		atomic_store_explicit(&wc_persist_current, p, memory_order_release);
	}
	pthread_mutex_unlock(&default_lock);
	return p;
}

int wc_pmem_configure(const struct wc_pmem_config *cfg)
{
	const struct wc_pmem_env *env = wc_pmem_env_get();
	struct wc_pmem_config merged;
	struct wc_persist_policy p;
	const struct wc_persist_policy *kept;
	unsigned from_env;
	int ret;

	if (env->error)
		return wc_err(env->error, "%s", env->errmsg);
	/* Unlike wc_persist_policy_init, NULL/all-zero means the built-in
	 * defaults and the environment, not the policy in force. */
	from_env = merge_env(&merged, cfg, env);
	ret = wc_persist_policy_resolve(&p, &merged, wc_cpu_get(), from_env);
	if (ret)
		return ret;
	pthread_mutex_lock(&default_lock);
	kept = keep(&p);
	if (kept)
		atomic_store_explicit(&wc_persist_current, kept, memory_order_release);
	pthread_mutex_unlock(&default_lock);
	if (!kept)
		return wc_err(-ENOMEM, "wc_pmem_configure: out of memory for the policy");
	return 0;
}

int wc_pmem_info(struct wc_pmem_info *out)
{
	const struct wc_pmem_env *env = wc_pmem_env_get();

	*out = wc_persist_default()->info;
	if (env->error)
		return wc_err(env->error, "%s", env->errmsg);
	return 0;
}

void wc_persist_default_reset(void)
{
	pthread_mutex_lock(&default_lock);
	atomic_store_explicit(&wc_persist_current, NULL, memory_order_release);
	warned = 0;
	wc_pmem_env_reset();
	pthread_mutex_unlock(&default_lock);
}
