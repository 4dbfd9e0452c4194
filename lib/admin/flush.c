/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flush.c -- the flush engine for the tools (wcadmin.h): resolved persist
 * policies copied out, the inputs of the process default, and the
 * individual strategies `wcbench flush` times one by one.
 */
#include <string.h>

#include "admin/internal.h"
#include "flush/engine.h"

void wcadm_persist_from(struct wcadm_persist *out, const struct wc_persist_policy *p)
{
	out->threshold = p->threshold;
	out->copy_small = p->copy_small;
	out->copy_large = p->copy_large;
	out->set_small = p->set_small;
	out->set_large = p->set_large;
	out->flush = p->flush;
	out->drain = p->drain;
	out->info = p->info;
}

void wcadm_persist_default(struct wcadm_persist *out)
{
	wcadm_persist_from(out, wc_persist_default());
}

void wcadm_flush_inputs(unsigned *features, int *flush_insn)
{
	const struct wc_pmem_env *env = wc_pmem_env_get();

	*features = wc_cpu_get()->features & ~env->cfg.disable;
	if (!flush_insn)
		return;
	/* The cached path of the default policy: CLWB when it chose it (or
	 * the environment asks for it), else CLFLUSHOPT. */
	*flush_insn = strcmp(wc_persist_default()->line.large_strategy, "cached+clwb") == 0 ||
	                              env->cfg.flush_insn == WC_PMEM_CLWB
	                      ? WC_PMEM_CLWB
	                      : WC_PMEM_CLFLUSHOPT;
}

static void strategy_from(struct wcadm_strategy *out, const struct wc_strategy *s)
{
	out->name = s->name;
	out->copy = s->copy;
	out->nt = s->nt;
}

unsigned wcadm_strategies(unsigned features, struct wcadm_strategy *out, unsigned max)
{
	/* Not WC_STRAT_PMEM2: asking for it sets libpmem2's functions up. */
	static const enum wc_strategy_id ids[] = {
		WC_STRAT_NT_MOVNTI, WC_STRAT_NT_SSE2, WC_STRAT_NT_AVX2, WC_STRAT_NT_AVX512,
		WC_STRAT_CACHED_CLFLUSHOPT, WC_STRAT_CACHED_CLWB,
	};
	unsigned n = 0;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && n < max; i++)
		if (wc_strategy_usable(ids[i], features))
			strategy_from(&out[n++], wc_strategy_get(ids[i]));
	return n;
}

bool wcadm_strategy_best_nt(unsigned features, struct wcadm_strategy *out)
{
	const struct wc_strategy *s = wc_strategy_get(wc_strategy_best_nt(features));

	if (!s)
		return false;
	strategy_from(out, s);
	return true;
}
