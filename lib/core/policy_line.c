/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * policy_line.c -- a cache measures its flush policy on its own memory and
 * keeps it in its superblock.
 *
 * Why on its own memory: the crossover between non-temporal stores and
 * cached stores + CLFLUSHOPT/CLWB depends on the memory behind the mapping
 * (real pmem is not DRAM), and a measurement on an anonymous buffer only
 * knows DRAM.  Why kept: measuring costs tens of milliseconds; a reopen on
 * the same CPU trusts the record.  Why a CPU signature: a cache file moved
 * to another machine must not keep a policy measured elsewhere.
 *
 * Only free blocks are written: at create every block is free; at open,
 * after recovery, a block is free iff its entry's durable seq says so
 * (recovery has invalidated and drained every dropped entry by then).  A
 * block holding any version of any data -- committed or not -- is never
 * touched.  The measurement's stores go straight to the strategies, not
 * through the cache's flush policy: free blocks hold nothing anyone reads,
 * so whether those bytes persist does not matter.  The record itself is
 * persisted through the policy (store, flush, drain), so the power-failure
 * simulator sees it and may tear it; a torn record fails its CRC and means
 * "measure again", never "trust".
 *
 * Precedence: a cache's own pmem_threshold/pmem_force options, then the
 * WC_PMEM_THRESHOLD/WC_PMEM_FORCE environment, then the record, then a new
 * measurement; when the cache is too small to measure on, the engine's
 * policy (quirk table or its first-use measurement).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cache.h"
#include "util/error.h"
#include "core/policy_line.h"

void wc_policy_inputs(const struct wc_pmem_config *cfg, unsigned *features, int *flush_insn)
{
	const struct wc_pmem_env *env = wc_pmem_env_get();

	*features = wc_cpu_get()->features & ~(cfg->disable | env->cfg.disable);
	*flush_insn = cfg->flush_insn ? cfg->flush_insn
	                              : (env->set & WC_ENV_FLUSH) ? env->cfg.flush_insn
	                                                          : WC_PMEM_CLFLUSHOPT;
}

/* Runs of consecutive free blocks, up to WC_POLICY_AREA bytes in all. */
static int free_extents(void *base, const struct wc_layout *l, struct wc_cal_extent **out,
                        size_t *n_out, uint64_t *bytes)
{
	struct wc_cal_extent *ext = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;

	for (uint64_t i = 0; i < l->n_blocks && total < WC_POLICY_AREA; i++) {
		char *d;

		if (wc_pmem_entry(base, l, i)->seq != WC_NONE)
			continue;
		d = wc_pmem_data(base, l, i);
		total += l->block_size;
		if (n && ext[n - 1].addr + ext[n - 1].len == d) {
			ext[n - 1].len += l->block_size;
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct wc_cal_extent *g = realloc(ext, ncap * sizeof(*ext));

			if (!g) {
				free(ext);
				return wc_err(-ENOMEM, "flush policy: %zu free extents", ncap);
			}
			ext = g;
			cap = ncap;
		}
		ext[n].addr = d;
		ext[n].len = l->block_size;
		n++;
	}
	*out = ext;
	*n_out = n;
	*bytes = total;
	return 0;
}

int wc_policy_measure(void *base, const struct wc_layout *l, unsigned features, int flush_insn,
                      unsigned rounds, double budget_ms, struct wc_calibration *cal,
                      uint64_t *area)
{
	struct wc_cal_extent *ext = NULL;
	size_t n = 0;
	int ret;

	ret = free_extents(base, l, &ext, &n, area);
	if (ret)
		return ret;
	if (*area < WC_POLICY_MIN_AREA) {
		free(ext);
		return wc_err(-ENOSPC, "%llu KiB of free blocks, fewer than the %u MiB a "
		              "measurement needs", (unsigned long long)(*area >> 10),
		              WC_POLICY_MIN_AREA >> 20);
	}
	/* 128 KiB per size and strategy and round, sizes up to the block size
	 * (the only copy size a cache makes). */
	ret = wc_calibrate_area(cal, ext, n, l->block_size, features, flush_insn, rounds,
	                        128u << 10, budget_ms);
	free(ext);
	return ret;
}

void wc_policy_fill(struct wc_pmem_policy *pl, const struct wc_calibration *cal,
                    unsigned features, int flush_insn, int source)
{
	const struct wc_cpu *cpu = wc_cpu_get();
	struct timespec now;

	memset(pl, 0, sizeof(*pl));
	pl->magic = WC_POLICY_MAGIC;
	pl->version = WC_POLICY_VERSION;
	pl->source = (uint8_t)source;
	pl->flush_insn = (uint8_t)flush_insn;
	pl->features = features;
	pl->threshold = cal->threshold == SIZE_MAX ? UINT64_MAX : cal->threshold;
	pl->small_strategy = wc_policy_strat_code(cal->choice.small);
	pl->large_strategy = wc_policy_strat_code(cal->choice.large);
	memcpy(pl->vendor, cpu->vendor, sizeof(pl->vendor));
	pl->family = (uint16_t)cpu->family;
	pl->model = (uint8_t)cpu->model;
	pl->stepping = (uint8_t)cpu->stepping;
	pl->line_size = (uint16_t)cpu->line_size;
	if (cal->npoints) {
		const struct wc_calibration_point *pt = &cal->pt[cal->npoints - 1];
		double nt = pt->nt_fenced + pt->nt_batched;
		double r = nt > 0 ? (pt->cached_fenced + pt->cached_batched) / nt * 1000 + 0.5 : 0;

		pl->max_size_kib = (uint16_t)(pt->size >> 10);
		pl->cached_vs_nt = (uint16_t)(r > UINT16_MAX ? UINT16_MAX : r);
	}
	pl->elapsed_us = (uint32_t)(cal->elapsed_ms * 1000);
	clock_gettime(CLOCK_REALTIME, &now);
	pl->time = (uint64_t)now.tv_sec;
	pl->crc = wc_policy_crc(pl);
}

void wc_policy_write(const struct wc_persist_policy *fp, void *base,
                     const struct wc_pmem_policy *pl)
{
	/* One aligned line: a crash leaves the old line, the new one, or a
	 * mix that fails the CRC. */
	wc_persist_copy(fp, wc_policy_line(base), pl, sizeof(*pl));
	wc_persist_drain(fp);
}

int wc_policy_matches(const struct wc_pmem_policy *pl, unsigned features, int flush_insn)
{
	const struct wc_cpu *cpu = wc_cpu_get();

	return memcmp(pl->vendor, cpu->vendor, sizeof(pl->vendor)) == 0 &&
	       pl->family == cpu->family && pl->model == cpu->model &&
	       pl->stepping == cpu->stepping && pl->line_size == cpu->line_size &&
	       pl->features == features && pl->flush_insn == flush_insn;
}

static const enum wc_strategy_id code_ids[] = {
	[WC_POLICY_STRAT_NT_MOVNTI] = WC_STRAT_NT_MOVNTI,
	[WC_POLICY_STRAT_NT_SSE2] = WC_STRAT_NT_SSE2,
	[WC_POLICY_STRAT_NT_AVX2] = WC_STRAT_NT_AVX2,
	[WC_POLICY_STRAT_NT_AVX512] = WC_STRAT_NT_AVX512,
	[WC_POLICY_STRAT_CACHED_CLFLUSHOPT] = WC_STRAT_CACHED_CLFLUSHOPT,
	[WC_POLICY_STRAT_CACHED_CLWB] = WC_STRAT_CACHED_CLWB,
};

uint8_t wc_policy_strat_code(enum wc_strategy_id id)
{
	for (unsigned c = WC_POLICY_STRAT_NT_MOVNTI; c < sizeof(code_ids) / sizeof(code_ids[0]); c++)
		if (code_ids[c] == id)
			return (uint8_t)c;
	return WC_POLICY_STRAT_NONE;
}

int wc_policy_choice(const struct wc_pmem_policy *pl, struct wc_flush_choice *out)
{
	const unsigned ncodes = sizeof(code_ids) / sizeof(code_ids[0]);

	memset(out, 0, sizeof(*out));
	out->threshold = pl->threshold == UINT64_MAX ? SIZE_MAX : (size_t)pl->threshold;
	if (pl->version == 1) {
		/* Recorded before widths were measured (bytes 58-59 were the
		 * high half of a ratio): what was chosen then. */
		out->small = wc_strategy_best_nt(pl->features);
		out->large = out->threshold == SIZE_MAX ? out->small
		             : pl->flush_insn == WC_PMEM_CLWB ? WC_STRAT_CACHED_CLWB
		                                              : WC_STRAT_CACHED_CLFLUSHOPT;
	} else {
		if (pl->small_strategy == WC_POLICY_STRAT_NONE || pl->small_strategy >= ncodes ||
		    pl->large_strategy == WC_POLICY_STRAT_NONE || pl->large_strategy >= ncodes ||
		    !wc_strategy_get(code_ids[pl->small_strategy])->nt)
			return wc_err(-EBADMSG, "flush policy line at offset %u: strategies %u and %u "
			              "(expected a non-temporal one below the threshold, 1..%u)",
			              WC_POLICY_OFFSET, pl->small_strategy, pl->large_strategy,
			              ncodes - 1);
		out->small = code_ids[pl->small_strategy];
		out->large = code_ids[pl->large_strategy];
	}
	out->runner_up = out->small;
	out->runner_up_speed = 1.0;
	out->ms = pl->elapsed_us / 1e3;
	return 0;
}

const char *wc_policy_result_str(char *buf, size_t len, const struct wc_pmem_policy *pl)
{
	struct wc_flush_choice ch;
	char what[128];

	if (wc_policy_choice(pl, &ch) != 0) {
		snprintf(buf, len, "unreadable strategies");
		return buf;
	}
	wc_flush_choice_str(what, sizeof(what), &ch);
	if (pl->threshold != UINT64_MAX && !wc_strategy_get(ch.large)->nt)
		snprintf(buf, len, "crossover %llu B: %s", (unsigned long long)pl->threshold, what);
	else
		snprintf(buf, len, "non-temporal wins at every size: %s", what);
	return buf;
}

const char *wc_policy_cpu_str(char *buf, size_t len, const struct wc_pmem_policy *pl)
{
	char vendor[13];

	memcpy(vendor, pl->vendor, 12);
	vendor[12] = '\0';
	snprintf(buf, len, "%s family 0x%x model 0x%x stepping %u, features 0x%x, %s", vendor,
	         pl->family, pl->model, pl->stepping, pl->features,
	         pl->flush_insn == WC_PMEM_CLWB ? "clwb" : "clflushopt");
	return buf;
}

/* Give the cache the measured strategies, keeping its granularity and the
 * test observer.  A failure leaves the policy as it was. */
static int apply(struct wc_cache *c, const struct wc_flush_choice *ch, const char *reason)
{
	struct wc_pmem_config pc = c->cfg.pmem;
	struct wc_persist_policy np;
	int ret;

	/* The explicit threshold resolves without a measurement of its own;
	 * the strategies then replace the widest-width default it gives. */
	pc.threshold = ch->threshold;
	ret = wc_persist_policy_init(&np, &pc);
	if (ret)
		return ret;
	ret = wc_persist_policy_set_choice(&np, ch->small, ch->large, ch->threshold, reason);
	if (ret)
		return ret;
	np.observer = c->fp.observer;
	wc_persist_policy_set_granularity(&np, WC_GRAN_CACHE_LINE, NULL, NULL);
	c->fp = np;
	return 0;
}

void wc_policy_settle(struct wc_cache *c, bool created)
{
	const struct wc_pmem_env *env = wc_pmem_env_get();
	const struct wc_pmem_config *pc = &c->cfg.pmem;
	struct wc_pmem_policy rec = *wc_policy_line(c->base), now;
	struct wc_calibration cal;
	struct wc_flush_choice ch;
	unsigned features;
	int flush_insn, valid, ret;
	uint64_t area;
	char why[160], result[160], what[160], cpu[160], reason[512];

	if (c->fp.gran != WC_GRAN_CACHE_LINE) {
		c->policy_source = "granularity";
		return;
	}
	if (pc->threshold || pc->force) {
		c->policy_source = "config";
		return;
	}
	if (env->set & (WC_ENV_THRESHOLD | WC_ENV_FORCE)) {
		c->policy_source = "env";
		return;
	}
	wc_policy_inputs(pc, &features, &flush_insn);
	if ((pc->line_size ? pc->line_size : wc_cpu_get()->line_size) != WC_LINE ||
	    !wc_strategy_usable(flush_insn == WC_PMEM_CLWB ? WC_STRAT_CACHED_CLWB
	                                                   : WC_STRAT_CACHED_CLFLUSHOPT,
	                        features)) {
		/* Nothing to choose between: the engine already said why. */
		c->policy_source = "engine";
		return;
	}

	valid = wc_policy_check(&rec);
	if (valid == 0)
		valid = wc_policy_choice(&rec, &ch);
	if (valid == 0 && wc_policy_matches(&rec, features, flush_insn)) {
		time_t t = (time_t)rec.time;
		struct tm tm;
		char when[32];

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
		snprintf(reason, sizeof(reason), "recorded in the superblock (measured on this "
		         "cache's free blocks %s, %s): %s",
		         rec.source == WC_POLICY_SRC_CREATE ? "at create" :
		         rec.source == WC_POLICY_SRC_OPEN ? "at an open" : "by wcbench calibrate",
		         when, wc_policy_result_str(result, sizeof(result), &rec));
		if (apply(c, &ch, reason) == 0) {
			c->policy_source = "recorded";
			return;
		}
	}
	if (created)
		snprintf(why, sizeof(why), "at create");
	else if (valid == -ENODATA)
		snprintf(why, sizeof(why), "none recorded");
	else if (valid)
		snprintf(why, sizeof(why), "record damaged: %s", wc_errmsg());
	else
		snprintf(why, sizeof(why), "recorded on another CPU or setup: %s",
		         wc_policy_cpu_str(cpu, sizeof(cpu), &rec));

	ret = wc_policy_measure(c->base, &c->layout, features, flush_insn, WC_POLICY_ROUNDS,
	                        WC_POLICY_BUDGET_MS, &cal, &area);
	if (ret) {
		const char *engine = c->fp.info.reason;

		/* Keep the engine's choice; a damaged record stays untrusted. */
		snprintf(reason, sizeof(reason), "not measured on this cache (%s; %s): %s", why,
		         wc_errmsg(), engine);
		wc_persist_policy_set_reason(&c->fp, reason);
		c->policy_source = strncmp(engine, "cpu quirk", 9) == 0 ? "quirk table" : "engine";
		return;
	}
	wc_policy_fill(&now, &cal, features, flush_insn,
	               created ? WC_POLICY_SRC_CREATE : WC_POLICY_SRC_OPEN);
	snprintf(reason, sizeof(reason), "%s on this cache's free blocks (%s; %zu B..%zu B over "
	         "%llu MiB, %.0f ms): %s", created ? "measured" : "re-measured", why, cal.pt[0].size,
	         cal.pt[cal.npoints - 1].size, (unsigned long long)(area >> 20), cal.elapsed_ms,
	         wc_policy_result_str(result, sizeof(result), &now));
	/* The runner-up is not recorded: say it while it is known. */
	wc_flush_choice_str(what, sizeof(what), &cal.choice);
	if (strstr(what, " (runner-up")) {
		size_t used = strlen(reason);

		snprintf(reason + used, sizeof(reason) - used, "%s", strstr(what, " (runner-up"));
	}
	if (apply(c, &cal.choice, reason) != 0) {
		c->policy_source = "engine";
		return;
	}
	wc_policy_write(&c->fp, c->base, &now);
	c->policy_source = created ? "calibrated at create" : "recalibrated";
}
