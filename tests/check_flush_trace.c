/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_flush_trace.c -- what the CPU really executes when the engine
 * persists bytes: the fence is there (the class of pmem/pmdk#5292, an NT
 * memcpy that shipped without SFENCE) and every touched line is written
 * back (invisible to byte comparisons on DRAM).
 *
 * A child process runs one operation between two SIGSTOPs while this
 * process single-steps it with ptrace and decodes the instruction at every
 * step, including the address of every flush and non-temporal store.
 * Whatever path the code takes (indirect calls, sanitizer builds, -O0),
 * the trace shows what ran:
 *   - drain and persist execute SFENCE, after the last flush;
 *   - a copy/set followed by drain executes SFENCE after its last
 *     non-temporal store or flush, for every strategy and policy;
 *   - every byte of the destination is covered by a non-temporal store or
 *     lies in a line that was flushed, and nothing outside it is;
 *   - copy, set and flush alone execute no fence (the caller batches them);
 *   - nothing ever executes CLFLUSH.
 * Removing the fence from wc_drain_sfence(), dropping the drain from
 * wc_pmem_persist(), or skipping a head/tail flush makes these tests fail.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flush/engine.h"
#include "testcpu.h"
#include "testmain.h"

#if defined(__x86_64__)

enum insn_kind { I_OTHER, I_SFENCE, I_CLFLUSHOPT, I_CLWB, I_CLFLUSH, I_NTSTORE, I_MFENCE };

struct insn {
	enum insn_kind kind;
	int mem;           /* has a memory operand; then: */
	uint64_t ea;       /* its effective address */
	unsigned width;    /* bytes stored (NT stores) */
};

/* A write-back event: a flushed line or the bytes of one NT store. */
struct event {
	enum insn_kind kind;
	uint64_t addr;
	unsigned len;
};

#define MAX_EVENTS 200000

struct trace {
	unsigned long steps;
	unsigned sfence, clflushopt, clwb, clflush, ntstore, other_fence;
	long last_sfence, last_flush, last_ntstore; /* step index, -1 = never */
	struct event *ev;
	unsigned nev;
};

static uint64_t gpr(const struct user_regs_struct *r, unsigned n)
{
	switch (n) {
	case 0: return r->rax;
	case 1: return r->rcx;
	case 2: return r->rdx;
	case 3: return r->rbx;
	case 4: return r->rsp;
	case 5: return r->rbp;
	case 6: return r->rsi;
	case 7: return r->rdi;
	case 8: return r->r8;
	case 9: return r->r9;
	case 10: return r->r10;
	case 11: return r->r11;
	case 12: return r->r12;
	case 13: return r->r13;
	case 14: return r->r14;
	default: return r->r15;
	}
}

/*
 * Decode just enough of x86-64 to spot fences, flushes and NT stores and
 * compute their memory operand.  `r` may be NULL (no address).  `disp_n`
 * is EVEX's compressed-displacement scale.
 */
static void decode_mem(const unsigned char *b, unsigned m, unsigned rex_b, unsigned rex_x,
                       unsigned disp_n, const struct user_regs_struct *r, struct insn *out)
{
	unsigned mod = b[m] >> 6, rm = b[m] & 7, p = m + 1;
	uint64_t ea = 0;

	if (mod == 3)
		return;
	out->mem = 1;
	if (rm == 4) {
		unsigned sib = b[p++];
		unsigned index = ((sib >> 3) & 7) | (rex_x << 3), base = (sib & 7) | (rex_b << 3);

		if (index != 4 && r)
			ea += gpr(r, index) << (sib >> 6);
		if ((sib & 7) == 5 && mod == 0) {
			int32_t d;

			memcpy(&d, b + p, 4);
			ea += (uint64_t)(int64_t)d;
			p += 4;
		} else if (r) {
			ea += gpr(r, base);
		}
	} else if (rm == 5 && mod == 0) {
		int32_t d;

		memcpy(&d, b + p, 4);
		p += 4;
		if (r)
			ea = r->rip + p + (uint64_t)(int64_t)d;
	} else if (r) {
		ea = gpr(r, rm | (rex_b << 3));
	}
	if (mod == 1) {
		ea += (uint64_t)(int64_t)((int8_t)b[p] * (int)disp_n);
	} else if (mod == 2) {
		int32_t d;

		memcpy(&d, b + p, 4);
		ea += (uint64_t)(int64_t)d;
	}
	out->ea = ea;
}

static struct insn decode(const unsigned char *b, const struct user_regs_struct *r)
{
	struct insn in = { I_OTHER, 0, 0, 0 };
	unsigned i = 0, opsize = 0, rex = 0;

	for (; i < 4; i++) { /* legacy prefixes */
		if (b[i] == 0x66)
			opsize = 1;
		else if (!(b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e || b[i] == 0x3e ||
		           b[i] == 0x26 || b[i] == 0x64 || b[i] == 0x65 || b[i] == 0x36 ||
		           b[i] == 0x67))
			break;
	}
	if ((b[i] & 0xf0) == 0x40)
		rex = b[i++];
	if (b[i] == 0x0f) {
		unsigned char op = b[i + 1], modrm = b[i + 2];
		unsigned mod = modrm >> 6, reg = (modrm >> 3) & 7;

		if (op == 0xae && modrm == 0xf8)
			in.kind = I_SFENCE;
		else if (op == 0xae && (modrm == 0xf0 || modrm == 0xe8))
			in.kind = I_MFENCE; /* MFENCE, LFENCE: not what drain promises */
		else if (op == 0xae && mod != 3 && reg == 7)
			in.kind = opsize ? I_CLFLUSHOPT : I_CLFLUSH;
		else if (op == 0xae && mod != 3 && reg == 6 && opsize)
			in.kind = I_CLWB;
		else if (op == 0xc3 && mod != 3) { /* MOVNTI */
			in.kind = I_NTSTORE;
			in.width = (rex & 8) ? 8 : 4;
		} else if ((op == 0xe7 || op == 0x2b) && mod != 3) { /* MOVNTDQ, MOVNTPS/PD */
			in.kind = I_NTSTORE;
			in.width = 16;
		}
		if (in.kind != I_OTHER && in.kind != I_SFENCE && in.kind != I_MFENCE)
			decode_mem(b, i + 2, rex & 1, (rex >> 1) & 1, 1, r, &in);
		return in;
	}
	if (b[i] == 0xc5 && (b[i + 2] == 0xe7 || b[i + 2] == 0x2b)) { /* VEX2, map 0F */
		in.kind = I_NTSTORE;
		in.width = (b[i + 1] & 4) ? 32 : 16;
		decode_mem(b, i + 3, 0, 0, 1, r, &in);
	} else if (b[i] == 0xc4 && (b[i + 1] & 0x1f) == 1 &&
	           (b[i + 3] == 0xe7 || b[i + 3] == 0x2b)) { /* VEX3 */
		in.kind = I_NTSTORE;
		in.width = (b[i + 2] & 4) ? 32 : 16;
		decode_mem(b, i + 4, !(b[i + 1] & 0x20), !(b[i + 1] & 0x40), 1, r, &in);
	} else if (b[i] == 0x62 && (b[i + 1] & 0x07) == 1 &&
	           (b[i + 4] == 0xe7 || b[i + 4] == 0x2b)) { /* EVEX */
		in.kind = I_NTSTORE;
		in.width = 16u << ((b[i + 3] >> 5) & 3);
		decode_mem(b, i + 5, !(b[i + 1] & 0x20), !(b[i + 1] & 0x40), in.width, r, &in);
	}
	return in;
}

static enum insn_kind classify(const unsigned char *b)
{
	return decode(b, NULL).kind;
}

static void add_event(struct trace *t, enum insn_kind kind, uint64_t addr, unsigned len)
{
	ck_assert_msg(t->nev < MAX_EVENTS, "too many write-back events");
	t->ev[t->nev++] = (struct event){ kind, addr, len };
}

typedef void (*op_fn)(void *ctx);

/*
 * Run `op(ctx)` in a traced child and classify every instruction it
 * executes.  The child runs `op` once untraced first, so lazy binding and
 * first-use initialisation stay out of the trace.
 */
static struct trace run_traced(op_fn op, void *ctx)
{
	static struct event events[MAX_EVENTS];
	struct trace t;
	int status;
	pid_t pid;

	memset(&t, 0, sizeof(t));
	t.ev = events;
	t.last_sfence = t.last_flush = t.last_ntstore = -1;
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(90);
		op(ctx);
		raise(SIGSTOP);
		op(ctx);
		raise(SIGSTOP);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP,
	              "child did not stop (status 0x%x): ptrace refused?", status);
	for (;;) {
		struct user_regs_struct regs;
		unsigned char code[24];
		struct insn in;
		long w;

		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0)
			ck_abort_msg("PTRACE_SINGLESTEP: %s", strerror(errno));
		if (waitpid(pid, &status, 0) != pid)
			ck_abort_msg("waitpid: %s", strerror(errno));
		if (!WIFSTOPPED(status) || WSTOPSIG(status) == SIGSTOP) /* closing marker */
			break;
		if (WSTOPSIG(status) != SIGTRAP)
			ck_abort_msg("child got signal %d", WSTOPSIG(status));
		if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0)
			ck_abort_msg("PTRACE_GETREGS: %s", strerror(errno));
		for (unsigned k = 0; k < sizeof(code); k += sizeof(w)) {
			errno = 0;
			w = ptrace(PTRACE_PEEKTEXT, pid, (void *)(regs.rip + k), NULL);
			if (errno)
				ck_abort_msg("peek at 0x%llx failed", regs.rip + k);
			memcpy(code + k, &w, sizeof(w));
		}
		in = decode(code, &regs);
		switch (in.kind) {
		case I_SFENCE:
			t.sfence++;
			t.last_sfence = (long)t.steps;
			break;
		case I_MFENCE:
			t.other_fence++;
			break;
		case I_CLFLUSHOPT:
		case I_CLWB:
		case I_CLFLUSH:
			*(in.kind == I_CLFLUSHOPT ? &t.clflushopt : in.kind == I_CLWB ? &t.clwb :
			                                                                &t.clflush) += 1;
			t.last_flush = (long)t.steps;
			add_event(&t, in.kind, in.ea & ~(uint64_t)63, 64);
			break;
		case I_NTSTORE:
			t.ntstore++;
			t.last_ntstore = (long)t.steps;
			add_event(&t, in.kind, in.ea, in.width);
			break;
		default:
			break;
		}
		t.steps++;
		if (t.steps > 5000000)
			ck_abort_msg("trace runs away");
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return t;
}

/*
 * Every byte of [addr, addr + n) is either inside a flushed line or
 * written by an NT store; no NT store writes outside it and no flushed line
 * misses it entirely.
 */
static void assert_covered(const struct trace *t, const void *addr, size_t n, const char *what)
{
	uint64_t lo = (uint64_t)(uintptr_t)addr, hi = lo + n;
	unsigned char *hit = calloc(n ? n : 1, 1);

	ck_assert_ptr_nonnull(hit);
	for (unsigned e = 0; e < t->nev; e++) {
		const struct event *ev = &t->ev[e];
		uint64_t a = ev->addr, b = ev->addr + ev->len;

		if (ev->kind == I_NTSTORE && (a < lo || b > hi))
			ck_abort_msg("%s: NT store [0x%llx,+%u) outside [0x%llx,+%zu)", what,
			             (unsigned long long)a, ev->len, (unsigned long long)lo, n);
		if (ev->kind != I_NTSTORE && (b <= lo || a >= hi))
			ck_abort_msg("%s: flushed line 0x%llx is outside [0x%llx,+%zu)", what,
			             (unsigned long long)a, (unsigned long long)lo, n);
		for (uint64_t x = a > lo ? a : lo; x < b && x < hi; x++)
			hit[x - lo] = 1;
	}
	for (size_t i = 0; i < n; i++)
		if (!hit[i])
			ck_abort_msg("%s: byte %zu (line %zu) is neither flushed nor NT-stored", what, i,
			             (size_t)(((lo + i) & ~(uint64_t)63) - (lo & ~(uint64_t)63)) / 64);
	free(hit);
}

/* ---- operations ---- */

static unsigned char *dst, *src;

static void setup(void)
{
	dst = aligned_alloc(4096, 1 << 16);
	src = aligned_alloc(4096, 1 << 16);
	ck_assert(dst && src);
	memset(src, 0x5a, 1 << 16);
	memset(dst, 0, 1 << 16);
}

static void teardown(void)
{
	free(dst);
	free(src);
}

static void op_drain(void *ctx)
{
	wc_pmem_drain();
}

static void op_persist(void *ctx)
{
	dst[10] = 1; /* a plain store, persisted by the call */
	wc_pmem_persist(dst + 5, 200);
}

static void op_flush(void *ctx)
{
	wc_pmem_flush(dst, 300);
}

struct copy_case {
	const struct wc_persist_policy *policy;
	wc_copy_fn copy;   /* a strategy alone, drained with wc_drain_sfence */
	wc_set_fn set;
	size_t n, off;
	int drain;         /* 1 = copy then drain; 0 = copy alone */
	int use_set;
};

static void op_copy(void *ctx)
{
	const struct copy_case *c = ctx;

	if (c->policy) {
		if (c->use_set)
			wc_persist_set(c->policy, dst + c->off, 0x33, c->n);
		else
			wc_persist_copy(c->policy, dst + c->off, src, c->n);
		if (c->drain)
			wc_persist_drain(c->policy);
	} else {
		if (c->use_set)
			c->set(dst + c->off, 0x33, c->n);
		else
			c->copy(dst + c->off, src, c->n);
		if (c->drain)
			wc_drain_sfence();
	}
}

static void op_api_copy(void *ctx)
{
	const struct copy_case *c = ctx;

	if (c->use_set)
		wc_pmem_memset(dst + c->off, 0x44, c->n);
	else
		wc_pmem_memcpy(dst + c->off, src, c->n);
	if (c->drain)
		wc_pmem_drain();
}

/* ---- checks ---- */

static void assert_fenced_after_writes(const struct trace *t, const char *what)
{
	long last_write = t->last_flush > t->last_ntstore ? t->last_flush : t->last_ntstore;

	ck_assert_msg(t->sfence >= 1, "%s: no SFENCE executed (%lu steps)", what, t->steps);
	ck_assert_msg(last_write >= 0, "%s: no flush or NT store executed", what);
	ck_assert_msg(t->last_sfence > last_write,
	              "%s: last SFENCE at step %ld comes before the last write-back at %ld", what,
	              t->last_sfence, last_write);
	ck_assert_msg(t->clflush == 0, "%s: executed CLFLUSH %u times", what, t->clflush);
}

static void assert_unfenced(const struct trace *t, const char *what)
{
	ck_assert_msg(t->sfence == 0 && t->other_fence == 0, "%s: fenced (%u SFENCE, %u other)",
	              what, t->sfence, t->other_fence);
	ck_assert_msg(t->clflush == 0, "%s: executed CLFLUSH", what);
}

START_TEST(test_drain_fences)
{
	struct trace t = run_traced(op_drain, NULL);

	ck_assert_msg(t.sfence == 1, "wc_pmem_drain executed %u SFENCEs", t.sfence);
	ck_assert_uint_eq(t.clflushopt + t.clwb + t.clflush, 0);
}
END_TEST

START_TEST(test_persist_flushes_then_fences)
{
	struct trace t = run_traced(op_persist, NULL);

	/* 200 bytes from offset 5 touch lines 0..3 */
	ck_assert_msg(t.clflushopt + t.clwb == 4, "persist flushed %u lines, expected 4",
	              t.clflushopt + t.clwb);
	assert_covered(&t, dst + 5, 200, "wc_pmem_persist");
	assert_fenced_after_writes(&t, "wc_pmem_persist");
}
END_TEST

START_TEST(test_flush_does_not_fence)
{
	struct trace t = run_traced(op_flush, NULL);

	ck_assert_msg(t.clflushopt + t.clwb == 5, "flush of 300 bytes: %u lines",
	              t.clflushopt + t.clwb);
	assert_covered(&t, dst, 300, "wc_pmem_flush");
	assert_unfenced(&t, "wc_pmem_flush");
}
END_TEST

static const size_t lens[] = { 1, 64, 100, 777, 4096 };
static const size_t offs[] = { 0, 0, 3, 17, 0 };
#define NLENS (sizeof(lens) / sizeof(lens[0]))

static void check_copy_case(struct copy_case *c, const char *name)
{
	char what[128];

	for (size_t k = 0; k < NLENS; k++) {
		struct trace t;

		c->n = lens[k];
		c->off = offs[k];
		for (c->use_set = 0; c->use_set <= 1; c->use_set++) {
			snprintf(what, sizeof(what), "%s %s n=%zu off=%zu", name,
			         c->use_set ? "set" : "copy", c->n, c->off);
			c->drain = 0;
			t = run_traced(op_copy, c);
			assert_unfenced(&t, what);
			ck_assert_msg(t.ntstore + t.clflushopt + t.clwb > 0, "%s: wrote back nothing",
			              what);
			c->drain = 1;
			t = run_traced(op_copy, c);
			assert_fenced_after_writes(&t, what);
			assert_covered(&t, dst + c->off, c->n, what);
		}
	}
}

/* One loop test per strategy (_i: its id); libpmem2's own
 * (WC_STRAT_PMEM2) is libpmem2's to fence, and not traced. */
START_TEST(test_each_strategy)
{
	const struct wc_strategy *s = wc_strategy_get((enum wc_strategy_id)_i);
	struct copy_case c = { 0 };
	const char *unfit;

	if (!s || !s->copy)
		WC_TEST_SKIP("strategy %d: not built for this target", _i);
	unfit = wc_test_cpu_unfit(s->needs, 0);
	if (unfit)
		WC_TEST_SKIP("%s %s", s->name, unfit);
	c.copy = s->copy;
	c.set = s->set;
	check_copy_case(&c, s->name);
}
END_TEST

/* One loop test per policy (_i: its index).  A split needs its cached side
 * and 64-byte lines: without them the engine goes NT at every size, which
 * the default and the NT policy already trace, so that one is skipped. */
static const struct {
	struct wc_pmem_config cfg;
	unsigned needs, line_size;
} policies[] = {
	{ { 0 }, 0, 0 },                                                   /* the default */
	{ { .threshold = 768 }, WC_CPU_CLFLUSHOPT, 64 },                    /* split */
	{ { .threshold = 64, .flush_insn = WC_PMEM_CLWB }, WC_CPU_CLWB, 64 }, /* split, CLWB */
	{ { .force = WC_PMEM_FORCE_CACHED }, WC_CPU_CLFLUSHOPT, 0 },
	{ { .force = WC_PMEM_FORCE_NT, .disable = WC_CPU_AVX512F | WC_CPU_AVX2 }, 0, 0 },
};
#define NPOLICIES ((int)(sizeof(policies) / sizeof(policies[0])))

START_TEST(test_each_policy)
{
	const char *unfit = wc_test_cpu_unfit(policies[_i].needs, policies[_i].line_size);
	struct wc_persist_policy p;
	struct copy_case c = { .policy = &p };
	char name[96];
	int ret;

	if (unfit)
		WC_TEST_SKIP("policy %d %s", _i, unfit);
	ret = wc_persist_policy_init(&p, &policies[_i].cfg);
	ck_assert_msg(ret == 0, "policy %d: %d %s", _i, ret, wc_errmsg());
	snprintf(name, sizeof(name), "policy %d (%s/%s)", _i, p.info.small_strategy,
	         p.info.large_strategy);
	check_copy_case(&c, name);

	wc_persist_policy_set_granularity(&p, WC_GRAN_BYTE, NULL, NULL);
	c.n = 100;
	c.drain = 1;
	c.use_set = 0;
	{
		struct trace t = run_traced(op_copy, &c);

		/* eADR: no write-back, but the fence stays. */
		ck_assert_msg(t.sfence == 1, "%s BYTE: %u SFENCEs", name, t.sfence);
		ck_assert_uint_eq(t.clflushopt + t.clwb + t.clflush, 0);
	}
}
END_TEST

START_TEST(test_public_api)
{
	struct copy_case c = { .n = 5000, .off = 9, .drain = 1 };
	struct trace t;

	t = run_traced(op_api_copy, &c);
	assert_fenced_after_writes(&t, "wc_pmem_memcpy + wc_pmem_drain");
	assert_covered(&t, dst + c.off, c.n, "wc_pmem_memcpy");
	c.use_set = 1;
	t = run_traced(op_api_copy, &c);
	assert_fenced_after_writes(&t, "wc_pmem_memset + wc_pmem_drain");
	assert_covered(&t, dst + c.off, c.n, "wc_pmem_memset");
	c.drain = 0;
	t = run_traced(op_api_copy, &c);
	assert_unfenced(&t, "wc_pmem_memset");
	c.use_set = 0;
	t = run_traced(op_api_copy, &c);
	assert_unfenced(&t, "wc_pmem_memcpy");
}
END_TEST

/* The decoder itself, on known encodings: a trace test cannot pass because
 * decode() sees nothing or misplaces an address. */
START_TEST(test_decoder)
{
	static const struct {
		unsigned char b[8];
		enum insn_kind kind;
		int64_t ea;        /* relative to the register values below */
		unsigned width;
	} cases[] = {
		{ { 0x0f, 0xae, 0xf8 }, I_SFENCE, 0, 0 },
		{ { 0x0f, 0xae, 0xf0 }, I_MFENCE, 0, 0 },
		{ { 0x66, 0x0f, 0xae, 0x3a }, I_CLFLUSHOPT, 0x2000, 0 },       /* (%rdx) */
		{ { 0x66, 0x0f, 0xae, 0x7a, 0x40 }, I_CLFLUSHOPT, 0x2040, 0 }, /* 0x40(%rdx) */
		{ { 0x66, 0x41, 0x0f, 0xae, 0x38 }, I_CLFLUSHOPT, 0x8000, 0 }, /* (%r8) */
		{ { 0x66, 0x0f, 0xae, 0x30 }, I_CLWB, 0x1000, 0 },             /* (%rax) */
		{ { 0x66, 0x0f, 0xae, 0x34, 0xc8 }, I_CLWB, 0x1000 + 8 * 3, 0 }, /* (%rax,%rcx,8) */
		{ { 0x0f, 0xae, 0x38 }, I_CLFLUSH, 0x1000, 0 },                /* clflush (%rax) */
		{ { 0x48, 0x0f, 0xc3, 0x07 }, I_NTSTORE, 0x7000, 8 },          /* movnti %rax,(%rdi) */
		{ { 0x0f, 0xc3, 0x47, 0x08 }, I_NTSTORE, 0x7008, 4 },          /* movnti %eax,8(%rdi) */
		{ { 0x66, 0x0f, 0xe7, 0x07 }, I_NTSTORE, 0x7000, 16 },         /* movntdq %xmm0,(%rdi) */
		{ { 0x66, 0x41, 0x0f, 0xe7, 0x00 }, I_NTSTORE, 0x8000, 16 },   /* movntdq %xmm0,(%r8) */
		{ { 0xc5, 0xfd, 0xe7, 0x47, 0x20 }, I_NTSTORE, 0x7020, 32 },   /* vmovntdq %ymm0,0x20(%rdi) */
		{ { 0x62, 0xf1, 0x7d, 0x48, 0xe7, 0x5a, 0xfc }, I_NTSTORE, 0x2000 - 256, 64 },
		                                      /* vmovntdq %zmm3,-0x100(%rdx) */
		{ { 0x0f, 0xae, 0x10 }, I_OTHER, 0, 0 },                       /* ldmxcsr (%rax) */
		{ { 0x48, 0x89, 0x07 }, I_OTHER, 0, 0 },                       /* mov %rax,(%rdi) */
	};
	struct user_regs_struct regs;
	unsigned char buf[24];

	memset(&regs, 0, sizeof(regs));
	regs.rax = 0x1000;
	regs.rdx = 0x2000;
	regs.rcx = 3;
	regs.rdi = 0x7000;
	regs.r8 = 0x8000;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct insn in;

		memset(buf, 0, sizeof(buf));
		memcpy(buf, cases[i].b, sizeof(cases[i].b));
		in = decode(buf, &regs);
		ck_assert_msg(in.kind == cases[i].kind && classify(buf) == cases[i].kind,
		              "case %zu: kind %d, want %d", i, in.kind, cases[i].kind);
		if (in.kind == I_NTSTORE || in.kind == I_CLFLUSHOPT || in.kind == I_CLWB ||
		    in.kind == I_CLFLUSH)
			ck_assert_msg(in.mem && in.ea == (uint64_t)cases[i].ea &&
			              in.width == cases[i].width,
			              "case %zu: ea 0x%llx width %u, want 0x%llx width %u", i,
			              (unsigned long long)in.ea, in.width,
			              (unsigned long long)cases[i].ea, cases[i].width);
	}
}
END_TEST

static Suite *flush_trace_suite(void)
{
	Suite *s = suite_create("flush-trace");
	TCase *tc = tcase_create("trace");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_decoder);
	tcase_add_test(tc, test_drain_fences);
	tcase_add_test(tc, test_persist_flushes_then_fences);
	tcase_add_test(tc, test_flush_does_not_fence);
	/* PMEM2 is the last strategy: the loop stops before it. */
	_Static_assert(WC_STRAT_PMEM2 == WC_STRAT_COUNT - 1, "PMEM2 is not the last strategy");
	tcase_add_loop_test(tc, test_each_strategy, 0, WC_STRAT_PMEM2);
	tcase_add_loop_test(tc, test_each_policy, 0, NPOLICIES);
	tcase_add_test(tc, test_public_api);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* Resolve the default policy before Check forks the tests. */
	wc_persist_default();
	return wc_test_main(flush_trace_suite());
}

#else /* !__x86_64__ */

int main(void)
{
	/* The decoder is x86-64; elsewhere libpmem2 owns the fence. */
	return wc_test_skip_all("ptrace fence trace decodes x86-64 only");
}

#endif
