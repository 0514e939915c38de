// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The steps service (user/report/steps.h) over records built by hand, with the registry's own
 * sources: per process, torch's steps first, else the source --steps names, never a mix; each
 * source's rules (NVTX ranges of one name on one thread, open ones left out, the domain forms;
 * cudaProfilerStart to Stop with the runtime's call around the driver's; ProfilerStep#N
 * numbered as torch numbers them); the queries (a process's steps by start, every step in the
 * trace's order, the step a time falls in); --steps's checks; and a per-step report
 * (pyfunc_step_sum, through stats as `bpfsight stats --steps` runs it) counting over NVTX steps.
 */
#include <errno.h>
#include <stdio.h>
#include "commands.h"
#include "cuda.h"
#include "stats.h"
#include "steps.h"
#include "trace_build.h"
#include "nvtx_records.h"
#include "pyfunc_records.h"
#include "torch_records.h"

#define A   100 /* a process with torch steps and NVTX ranges */
#define B   200 /* NVTX ranges only */
#define C   300 /* nothing */
#define B_2 202 /* a second thread of B */

static char tmp_dir[64];

static void put_range(struct tb *b, __u32 pid, __u32 tid, __u64 ts, __u64 dur, const char *text,
		      const char *domain, __u16 flags)
{
	struct bs_nvtx_range r = {
		.h = { .type = BS_REC_NVTX_RANGE,
		       .size = sizeof(r),
		       .pid = pid,
		       .tid = tid,
		       .ts = ts },
		.dur = dur,
		.name_id = tb_str(b, text),
		.domain_id = tb_str(b, domain),
		.end_tid = tid,
		.flags = flags | BS_NVTX_PUSHPOP,
	};

	tb_put(b, &r);
}

/* Every record the builder's model saw, through a service asked ASK. */
static struct steps *run(struct tb *b, const void *const *recs, int n, const char *ask)
{
	struct steps *s = steps__new(ask);

	if (!ASSERT_TRUE(s, "steps__new"))
		return NULL;
	for (int i = 0; i < n; i++)
		steps__add(s, recs[i], b->m);
	if (!ASSERT_EQ(steps__finish(s), 0, "steps__finish")) {
		steps__free(s);
		return NULL;
	}
	return s;
}

static const struct step_span *expect(const struct steps *s, __u32 pid, size_t n)
{
	size_t got;
	const struct step_span *v = steps__of(s, pid, &got);

	ASSERT_EQ(got, n, "steps of the process");
	return v;
}

/*
 * A's torch steps, and NVTX ranges "step" in A and B: with --steps=nvtx:step, A keeps its
 * torch steps (numbered by torch) and B has the ranges (numbered 1, 2, 3 by start); C has
 * none. Without --steps, only A has steps.
 */
static void test_torch_first_else_named(void)
{
	struct bs_torch_step t1, t2;
	struct bs_nvtx_range ra, r1, r2, r3;
	const void *recs[6] = { &r2, &t1, &ra, &r1, &t2, &r3 };
	const struct step_span *v, *const *all;
	struct steps *s;
	struct tb b;
	size_t n;

	if (!ASSERT_EQ(tb_open(&b, NULL, "torch,nvtx"), 0, "builder"))
		return;
	/* Built in place, then fed in the order of RECS (the trace's). */
	t1 = (struct bs_torch_step){ .h = { BS_REC_TORCH_STEP, sizeof(t1), 0, A, A, 1000 },
				     .dur = 500,
				     .step = 7,
				     .name_id = tb_str(&b, "Optimizer.step#SGD.step") };
	t2 = t1;
	t2.h.ts = 1500;
	t2.step = 8;
	ra = (struct bs_nvtx_range){ .h = { BS_REC_NVTX_RANGE, sizeof(ra), 0, A, A, 1100 },
				     .dur = 100,
				     .name_id = tb_str(&b, "step"),
				     .flags = BS_NVTX_PUSHPOP };
	r1 = ra;
	r1.h.pid = r1.h.tid = B;
	r1.h.ts = 5000;
	r1.dur = 1000;
	r2 = r1;
	r2.h.ts = 6000; /* first in the trace, second by start */
	r3 = r1;
	r3.h.ts = 7500;
	r3.dur = 10;

	s = run(&b, recs, 6, "nvtx:step");
	if (s) {
		v = expect(s, A, 2);
		if (v) {
			ASSERT_EQ(v[0].step, 7, "A's first: torch's number");
			ASSERT_EQ(v[0].ts, 1000, "its start");
			ASSERT_EQ(v[0].end, 1500, "its end");
			ASSERT_STREQ(v[0].src->kind, "torch", "A's steps are torch's");
			ASSERT_EQ(v[1].step, 8, "A's second");
		}
		v = expect(s, B, 3);
		if (v) {
			ASSERT_STREQ(v[0].src->kind, "nvtx", "B's steps are the ranges");
			ASSERT_EQ(v[0].ts, 5000, "by start");
			ASSERT_EQ(v[0].step, 1, "numbered by start");
			ASSERT_EQ(v[1].ts, 6000, "second");
			ASSERT_EQ(v[1].step, 2, "second's number");
			ASSERT_EQ(v[2].end, 7510, "third's end");
			ASSERT_STREQ(trace_model__string(b.m, v[2].name_id), "step", "name");
		}
		expect(s, C, 0);
		all = steps__all(s, &n);
		ASSERT_EQ(n, 5, "every step: A's 2, B's 3 (A's range is not one)");
		if (n == 5) {
			ASSERT_TRUE(all[0]->pid == B && all[0]->ts == 6000,
				    "trace's order: r2 first");
			ASSERT_TRUE(all[1]->pid == A && all[1]->step == 7, "then t1");
			ASSERT_TRUE(all[2]->pid == B && all[2]->ts == 5000, "then r1");
			ASSERT_TRUE(all[3]->pid == A && all[3]->step == 8, "then t2");
			ASSERT_TRUE(all[4]->pid == B && all[4]->ts == 7500, "then r3");
		}
		ASSERT_STREQ(steps__named(s), "nvtx:step", "the source named");
		steps__free(s);
	}
	s = run(&b, recs, 6, NULL);
	if (s) {
		expect(s, A, 2);
		expect(s, B, 0);
		ASSERT_TRUE(!steps__named(s), "none named");
		steps__free(s);
	}
	/* Naming the default source is the default. */
	s = run(&b, recs, 6, "torch");
	if (s) {
		expect(s, B, 0);
		ASSERT_TRUE(!steps__named(s), "torch is no other source");
		steps__free(s);
	}
	tb_close(&b, 0);
}

/*
 * NVTX: a process's steps are the ranges of the thread that began its first one; open ranges
 * are none; NAME is of the default domain, NAME@DOMAIN of that one, NAME@* of any.
 */
static void test_nvtx_rules(void)
{
	struct tb b;
	struct steps *s;
	const void *recs[8];
	struct bs_nvtx_range r[8];
	const struct step_span *v;
	const char *dom[8] = { NULL, NULL, NULL, "io", NULL, "io", NULL, NULL };
	static const struct {
		__u32 tid;
		__u64 ts;
		__u16 flags;
	} in[8] = {
		{ B, 100, 0 },		  /* the first: B's main thread counts */
		{ B_2, 150, 0 },	  /* another thread: not a step */
		{ B, 300, BS_NVTX_OPEN }, /* open: not a step */
		{ B, 400, 0 },		  /* domain io: only with @io or @* */
		{ B, 500, 0 },
		{ B_2, 600, 0 }, /* io, other thread */
		{ B, 700, 0 },
		{ B, 800, 0 },
	};

	if (!ASSERT_EQ(tb_open(&b, NULL, "nvtx"), 0, "builder"))
		return;
	for (int i = 0; i < 8; i++) {
		r[i] = (struct bs_nvtx_range){ .h = { BS_REC_NVTX_RANGE, sizeof(r[i]), 0, B,
						      in[i].tid, in[i].ts },
					       .dur = 50,
					       .name_id = tb_str(&b, "fwd"),
					       .domain_id = tb_str(&b, dom[i]),
					       .end_tid = in[i].tid,
					       .flags = in[i].flags | BS_NVTX_PUSHPOP };
		recs[i] = &r[i];
	}
	s = run(&b, recs, 8, "nvtx:fwd");
	if (s) {
		v = expect(s, B, 4);
		if (v) {
			ASSERT_EQ(v[0].ts, 100, "1st");
			ASSERT_EQ(v[1].ts, 500, "2nd: past the other thread's, the open one, io's");
			ASSERT_EQ(v[3].ts, 800, "4th");
			ASSERT_EQ(v[3].step, 4, "numbered");
			ASSERT_EQ(v[0].tid, B, "the thread");
		}
		steps__free(s);
	}
	s = run(&b, recs, 8, "nvtx:fwd@io");
	if (s) {
		v = expect(s, B, 1); /* the first io range's thread is B: B_2's is left out */
		if (v)
			ASSERT_EQ(v[0].ts, 400, "io's");
		steps__free(s);
	}
	s = run(&b, recs, 8, "nvtx:fwd@*");
	if (s) {
		expect(s, B, 5);
		steps__free(s);
	}
	s = run(&b, recs, 8, "nvtx:bwd");
	if (s) {
		expect(s, B, 0);
		steps__free(s);
	}
	tb_close(&b, 0);
}

/*
 * cudaProfilerApi: the runtime's start comes after the driver's start inside it (it returns
 * later) and opens the range at its own, earlier start; the driver's stop inside the
 * runtime's does not close it, the runtime's does, at its end. A capture's file has only the
 * driver's start. A range never stopped is no step.
 */
static void test_cuda_profiler_ranges(void)
{
	struct tb b;
	const struct step_span *v;
	struct steps *fed;

	if (!ASSERT_EQ(tb_open(&b, NULL, "cuda"), 0, "builder"))
		return;
	fed = steps__new("cudaProfilerApi");
	if (!ASSERT_TRUE(fed, "new"))
		goto out;
	{
		struct bs_ucall u[8];
		const char *name[8] = { "cuProfilerStart",  "cudaProfilerStart", "cuProfilerStop",
					"cudaProfilerStop", "cuProfilerStart",	 "cuProfilerStop",
					"cudaProfilerStop", "cudaProfilerStart" };
		static const __u64 ts[8] = { 1010, 1000, 5010, 5000, 9000, 9900, 9890, 20000 };
		static const __u64 dur[8] = { 5, 30, 5, 40, 5, 5, 20, 5 };
		static const __u16 depth[8] = { 1, 0, 1, 0, 1, 1, 0, 0 };

		for (int i = 0; i < 8; i++) {
			__u32 fn = 0;

			while (fn < cuda_table.napis && strcmp(cuda_table.apis[fn].name, name[i]))
				fn++;
			if (!ASSERT_TRUE(fn < cuda_table.napis, name[i]))
				goto out;
			u[i] = (struct bs_ucall){ .h = { BS_REC_CUDA_CALL, sizeof(u[i]), 0, A, A,
							 ts[i] },
						  .dur = dur[i],
						  .fn = fn,
						  .depth = depth[i] };
			steps__add(fed, &u[i].h, b.m);
		}
	}
	if (!ASSERT_EQ(steps__finish(fed), 0, "finish"))
		goto out;
	v = expect(fed, A, 2);
	if (v) {
		ASSERT_EQ(v[0].ts, 1000, "the runtime's start");
		ASSERT_EQ(v[0].end, 5040, "the runtime's stop's end");
		ASSERT_EQ(v[0].step, 1, "1");
		ASSERT_EQ(v[1].ts, 9000, "a capture's: the driver's start");
		ASSERT_EQ(v[1].end, 9910, "the later of the two stops' ends");
		ASSERT_EQ(v[1].step, 2, "2");
		ASSERT_EQ(v[1].name_id, 0, "no name");
	}
out:
	steps__free(fed);
	tb_close(&b, 0);
}

/* ProfilerStep#N scopes: step N each, as torch.profiler numbers them; other ops are none. */
static void test_profiler_steps(void)
{
	struct tb b;
	struct steps *s;
	const struct step_span *v;
	struct bs_torch_op op[4];
	const void *recs[4] = { &op[0], &op[1], &op[2], &op[3] };
	const char *name[4] = { "ProfilerStep#0", "aten::mm", "ProfilerStep#1", "ProfilerStep#x" };
	static const __u16 flags[4] = { BS_TORCH_PROFILER_STEP, 0, BS_TORCH_PROFILER_STEP,
					BS_TORCH_PROFILER_STEP };

	if (!ASSERT_EQ(tb_open(&b, NULL, "torch"), 0, "builder"))
		return;
	for (int i = 0; i < 4; i++)
		op[i] = (struct bs_torch_op){ .h = { BS_REC_TORCH_OP, sizeof(op[i]), 0, C, C,
						     1000 * (i + 1) },
					      .dur = 1000,
					      .seq = -1,
					      .name_id = tb_str(&b, name[i]),
					      .scope = BS_TORCH_SCOPE_USER_SCOPE,
					      .flags = flags[i] };
	s = run(&b, recs, 4, "ProfilerStep");
	if (s) {
		v = expect(s, C, 2);
		if (v) {
			ASSERT_EQ(v[0].step, 0, "ProfilerStep#0 is step 0");
			ASSERT_EQ(v[1].step, 1, "ProfilerStep#1 is step 1");
			ASSERT_EQ(v[1].ts, 3000, "its start");
			ASSERT_EQ(v[1].end, 4000, "its end");
		}
		steps__free(s);
	}
	s = run(&b, recs, 4, NULL);
	if (s) {
		expect(s, C, 0);
		steps__free(s);
	}
	tb_close(&b, 0);
}

/* The step a time falls in: the last to start by it, until its end (steps may touch). */
static void test_find(void)
{
	static const struct step_span v[3] = { { .ts = 100, .end = 200 },
					       { .ts = 200, .end = 300 },
					       { .ts = 400, .end = 500 } };

	ASSERT_EQ(steps__find(v, 3, 99), -1, "before the first");
	ASSERT_EQ(steps__find(v, 3, 100), 0, "the first's start");
	ASSERT_EQ(steps__find(v, 3, 199), 0, "inside the first");
	ASSERT_EQ(steps__find(v, 3, 200), 1, "where one ends and the next starts: the next");
	ASSERT_EQ(steps__find(v, 3, 300), -1, "in a gap");
	ASSERT_EQ(steps__find(v, 3, 499), 2, "inside the last");
	ASSERT_EQ(steps__find(v, 3, 500), -1, "at the last one's end");
	ASSERT_EQ(steps__find(NULL, 0, 100), -1, "no steps");
}

static void test_check(void)
{
	char list[256];

	ASSERT_EQ(steps__check(NULL, "--steps"), 0, "none");
	ASSERT_EQ(steps__check("torch", "--steps"), 0, "torch");
	ASSERT_EQ(steps__check("nvtx:train step@*", "--steps"), 0, "nvtx:NAME");
	ASSERT_EQ(steps__check("cudaProfilerApi", "--steps"), 0, "cudaProfilerApi");
	ASSERT_EQ(steps__check("ProfilerStep", "--steps"), 0, "ProfilerStep");
	ASSERT_EQ(steps__check("nvtx", "--steps"), -EINVAL, "nvtx needs its NAME");
	ASSERT_EQ(steps__check("nvtx:", "--steps"), -EINVAL, "an empty NAME");
	ASSERT_EQ(steps__check("torch:1", "--steps"), -EINVAL, "torch takes no value");
	ASSERT_EQ(steps__check("nvtxx:a", "--steps"), -EINVAL, "no such source");
	ASSERT_EQ(steps__check("", "--steps"), -EINVAL, "empty");
	steps__list(list, sizeof(list));
	ASSERT_STREQ(list, "torch, cudaProfilerApi, nvtx:NAME, ProfilerStep",
		     "the default source first, then the registry's order");
}

/*
 * pyfunc_step_sum as `bpfsight stats --steps=nvtx:step` runs it: f's calls counted per NVTX
 * step of their process (two steps: 1 call, then 2), one call outside; without --steps, no
 * step: no row, and the note says so.
 */
static void test_report_over_nvtx_steps(void)
{
	struct stats_opts o = { .reports = "pyfunc_step_sum", .steps = "nvtx:step" };
	char path[128];
	const struct table *t;
	struct stats *st;
	struct tb b;
	int status;
	struct bs_pyfunc_call c = { .h = { BS_REC_PYFUNC_CALL, sizeof(c), 0, B, B, 0 },
				    .dur = 100,
				    .line = 3 };
	static const __u64 call_ts[4] = { 1100, 2100, 2500, 9000 };

	snprintf(path, sizeof(path), "%s/nvtx-steps.bst", tmp_dir);
	if (!ASSERT_EQ(tb_open(&b, path, "nvtx,pyfunc"), 0, "builder"))
		return;
	c.func_id = tb_str(&b, "train:f");
	c.file_id = tb_str(&b, "train.py");
	put_range(&b, B, B, 1000, 1000, "step", NULL, 0);
	put_range(&b, B, B, 2000, 1000, "step", NULL, 0);
	for (int i = 0; i < 4; i++) {
		c.h.ts = call_ts[i];
		tb_put(&b, &c);
	}
	if (!ASSERT_EQ(tb_close(&b, 10000), 0, "written"))
		return;
	st = stats__collect_opts(path, &o, &status);
	if (ASSERT_TRUE(st, "collect") && ASSERT_EQ(status, EXIT_READ_OK, "status")) {
		t = stats__table(st, "pyfunc_step_sum");
		if (ASSERT_EQ(table__nrows(t), 1, "one function")) {
			ASSERT_EQ(U64_AT(t, 0, "steps"), 2, "two NVTX steps");
			ASSERT_NEAR(DBL_AT(t, 0, "calls_per_step"), 1.5, 1e-9, "3 calls in 2");
			ASSERT_NEAR(DBL_AT(t, 0, "time_per_step_ns"), 150, 1e-9, "300 ns in 2");
			ASSERT_EQ(U64_AT(t, 0, "min_step_ns"), 100, "step 1");
			ASSERT_EQ(U64_AT(t, 0, "max_step_ns"), 200, "step 2");
			ASSERT_EQ(U64_AT(t, 0, "outside_steps"), 1, "the call at 9000");
		}
	}
	stats__free(st);
	o.steps = NULL;
	st = stats__collect_opts(path, &o, &status);
	if (ASSERT_TRUE(st, "collect")) {
		t = stats__table(st, "pyfunc_step_sum");
		ASSERT_EQ(table__nrows(t), 0, "no torch step: no row");
		ASSERT_TRUE(table__nnotes(t) && strstr(table__get_note(t, 0), "No torch step"),
			    "the note says why");
	}
	stats__free(st);
	unlink(path);
}

int main(void)
{
	if (tb_tmp_dir(tmp_dir, sizeof(tmp_dir)))
		return 1;
	RUN_TEST(test_torch_first_else_named);
	RUN_TEST(test_nvtx_rules);
	RUN_TEST(test_cuda_profiler_ranges);
	RUN_TEST(test_profiler_steps);
	RUN_TEST(test_find);
	RUN_TEST(test_check);
	RUN_TEST(test_report_over_nvtx_steps);
	rmdir(tmp_dir);
	return UNIT_EXIT();
}
