// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cudnn family's descriptor walk (user/families/cudnn/cudnn_decode.c) fed call records
 * built by hand: a legacy convolution's shapes read from the descriptors its process set, and
 * a process's descriptors gone when it exits or execs (once kept until the end of the file),
 * another's kept, at the same addresses; an execution plan whose engine config came from
 * heuristics' results (cuDNN frontend's way, torch 2.x's convolutions on an H200) traced to
 * the heuristics' operation graph.
 */
#include <string.h>
#include "cudnn.h"
#include "unit.h"
#include "ucall_fn.h"

#define X 0x1000 /* the descriptors' addresses: the same in both processes */
#define W 0x2000
#define Y 0x3000
#define C 0x4000

static __u64 ts = 1000;

static int fn_of(const char *name)
{
	return ucall_fn(&cudnn_table, name);
}

/* NAME called by PID's thread TID with ARGS (NARGS words), succeeding: observed, its record
 * into *R. */
static void call_as(struct cudnn_walk *w, struct bs_ucall *r, const char *name, __u32 pid,
		    __u32 tid, const __u64 *args, int nargs)
{
	memset(r, 0, sizeof(*r));
	r->h.type = BS_REC_CUDNN_CALL;
	r->h.size = sizeof(*r);
	r->h.pid = pid;
	r->h.tid = tid;
	r->h.ts = ts++;
	r->fn = fn_of(name);
	r->ret = CUDNN_STATUS_SUCCESS;
	memcpy(r->args, args, nargs * sizeof(*args));
	cudnn_walk__observe(w, &r->h);
}

static void call(struct cudnn_walk *w, struct bs_ucall *r, const char *name, __u32 pid,
		 const __u64 *args, int nargs)
{
	call_as(w, r, name, pid, pid, args, nargs);
}

/* PID's x, filter, y (N C H W, K C R S, N K H W) and a convolution of GROUPS. */
static void shapes(struct cudnn_walk *w, __u32 pid, __u64 n, __u64 k, __u64 groups)
{
	struct bs_ucall r;

	call(w, &r, "cudnnSetTensor4dDescriptor", pid, (__u64[]){ X, 0, 0, n, 3, 32, 32 }, 7);
	call(w, &r, "cudnnSetFilter4dDescriptor", pid, (__u64[]){ W, 0, 0, k, 3, 5, 5 }, 7);
	call(w, &r, "cudnnSetTensor4dDescriptor", pid, (__u64[]){ Y, 0, 0, n, k, 28, 28 }, 7);
	call(w, &r, "cudnnSetConvolutionGroupCount", pid, (__u64[]){ C, groups }, 2);
}

/* PID's cudnnConvolutionForward(x, w, conv, y): its FLOPs as the walk read them, 0: unknown. */
static __u64 conv_flops(struct cudnn_walk *w, __u32 pid)
{
	struct cudnn_conv cv;
	struct bs_ucall r;

	call(w, &r, "cudnnConvolutionForward", pid, (__u64[]){ 0, 0, X, 0, W, 0, C, 0, 0, 0, 0, Y },
	     12);
	return cudnn__conv(w, &r.h, &cv) ? cv.flops : 0;
}

static void proc_exit(struct cudnn_walk *w, __u32 pid, __u32 group_dead)
{
	struct bs_exit e = {
		.h = { .type = BS_REC_EXIT, .size = sizeof(e), .pid = pid, .tid = pid },
		.group_dead = group_dead
	};

	e.h.ts = ts++;
	cudnn_walk__observe(w, &e.h);
}

static void proc_exec(struct cudnn_walk *w, __u32 pid)
{
	struct bs_exec x = {
		.h = { .type = BS_REC_EXEC, .size = sizeof(x), .pid = pid, .tid = pid },
		.old_tid = pid
	};

	x.h.ts = ts++;
	cudnn_walk__observe(w, &x.h);
}

static void test_descriptors_go_with_their_process(void)
{
	/* 2 numel(y) numel(w) / k: numel(w) / k is c r s */
	const __u64 flops100 = 2ull * (8 * 16 * 28 * 28) * (3 * 5 * 5);
	const __u64 flops200 = 2ull * (4 * 32 * 28 * 28) * (3 * 5 * 5);
	struct cudnn_walk *w = cudnn_walk__new();

	if (!ASSERT_TRUE(w, "cudnn_walk__new"))
		return;
	shapes(w, 100, 8, 16, 1);
	shapes(w, 200, 4, 32, 1);
	ASSERT_EQ(cudnn_walk__count(w), 8, "x, filter, y and convolution of each process");
	ASSERT_EQ(conv_flops(w, 100), flops100, "100's convolution, from its own descriptors");
	ASSERT_EQ(conv_flops(w, 200), flops200, "200's, at the same addresses");
	proc_exit(w, 100, 0); /* a thread of 100: the process lives on */
	ASSERT_EQ(cudnn_walk__count(w), 8, "a thread's exit forgets nothing");
	proc_exit(w, 100, 1);
	ASSERT_EQ(cudnn_walk__count(w), 4, "100's exit: its four descriptors gone");
	ASSERT_EQ(conv_flops(w, 100), 0, "a new 100's convolution: shapes unknown, none invented");
	ASSERT_EQ(conv_flops(w, 200), flops200, "200's still read right");
	shapes(w, 100, 8, 16, 1);
	ASSERT_EQ(conv_flops(w, 100), flops100, "the new 100's own descriptors");
	proc_exec(w, 200);
	ASSERT_EQ(cudnn_walk__count(w), 4, "200's exec: its descriptors gone");
	ASSERT_EQ(conv_flops(w, 200), 0, "200's new program: shapes unknown");
	proc_exit(w, 100, 1);
	ASSERT_EQ(cudnn_walk__count(w), 0, "every process gone: nothing kept");
	cudnn_walk__free(w);
}

/* cudnnBackendSetAttribute(DESC, ATTR, ATYPE, N, ELEMS) by PID's thread TID (N <= 8). */
static void set_attr(struct cudnn_walk *w, __u32 pid, __u32 tid, __u64 desc, __u64 attr,
		     __u64 atype, const __u64 *elems, __u32 n)
{
	struct {
		struct bs_ucall r;
		__u64 elems[8];
	} b;

	memset(&b, 0, sizeof(b));
	b.r.h.type = BS_REC_CUDNN_CALL;
	b.r.h.size = sizeof(b.r) + n * 8;
	b.r.h.pid = pid;
	b.r.h.tid = tid;
	b.r.h.ts = ts++;
	b.r.fn = fn_of("cudnnBackendSetAttribute");
	b.r.ret = CUDNN_STATUS_SUCCESS;
	b.r.deref_len = n * 8;
	b.r.args[0] = desc, b.r.args[1] = attr, b.r.args[2] = atype, b.r.args[3] = n;
	b.r.args[4] = 0x7000;
	memcpy(b.elems, elems, n * 8);
	cudnn_walk__observe(w, &b.r.h);
}

/* ... of descriptors (BACKEND_DESCRIPTOR). */
static void set_descs(struct cudnn_walk *w, __u32 pid, __u32 tid, __u64 desc, __u64 attr,
		      const __u64 *elems, __u32 n)
{
	set_attr(w, pid, tid, desc, attr, 15, elems, n);
}

/* cudnnBackendCreateDescriptor(TYPE, &d) by PID's thread TID, giving DESC (read at return). */
static void create(struct cudnn_walk *w, __u32 pid, __u32 tid, __u64 type, __u64 desc)
{
	struct bs_ucall r;

	memset(&r, 0, sizeof(r));
	r.h.type = BS_REC_CUDNN_CALL;
	r.h.size = sizeof(r);
	r.h.pid = pid;
	r.h.tid = tid;
	r.h.ts = ts++;
	r.fn = fn_of("cudnnBackendCreateDescriptor");
	r.ret = CUDNN_STATUS_SUCCESS;
	r.args[0] = type;
	r.args[1] = 0x7100; /* &d */
	r.out = desc;
	cudnn_walk__observe(w, &r.h);
}

static void heur_results(struct cudnn_walk *w, __u32 pid, __u32 tid, __u64 heur)
{
	struct bs_ucall r;

	call_as(w, &r, "cudnnBackendGetAttribute", pid, tid, (__u64[]){ heur, 202, 15 }, 3);
}

/* cudnnBackendSetAttribute(DESC, TENSOR_DIMENSIONS, INT64, 4, DIMS) by PID's main thread. */
static void set_dims(struct cudnn_walk *w, __u32 pid, __u64 desc, const __u64 *dims)
{
	set_attr(w, pid, pid, desc, 902, 3 /* INT64 */, dims, 4);
}

static void one_desc(struct cudnn_walk *w, __u32 pid, const char *name, __u64 desc)
{
	struct bs_ucall r;

	call(w, &r, name, pid, (__u64[]){ desc }, 1);
}

/* An execution of PLAN: what the walk says it ran, its first operation's type (-2: unknown). */
static int exec_op0(struct cudnn_walk *w, __u32 pid, __u64 plan, struct cudnn_exec *e)
{
	struct bs_ucall r;

	memset(e, 0, sizeof(*e));
	call(w, &r, "cudnnBackendExecute", pid, (__u64[]){ 0, plan, 0 }, 3);
	if (!cudnn__exec(w, &r.h, e))
		return -2;
	return e->nops ? e->op_types[0] : -2;
}

/*
 * torch 2.11's convolution through cuDNN 9.19's frontend, in the order an H200 recorded it: the
 * tensors, the convolution operation and the graph made and finalized, the tensors and the
 * operation destroyed; heuristics on the graph, which give engine configs the frontend made
 * just before asking for the results into them; the graph and the heuristics destroyed; then
 * the plan set to one of the configs and executed. It ran the convolution, of its FLOPs.
 */
static void test_plan_from_heuristics_results(void)
{
	enum {
		TX = 0x10,
		TW = 0x20,
		TY = 0x30,
		OP = 0x110,
		OPG = 0x100,
		HEUR = 0x200,
		CFG1 = 0x300,
		CFG2 = 0x310,
		CFG3 = 0x320,
		PLAN = 0x400,
		OTHER_CFG = 0x500
	};
	const __u64 flops = 2ull * (8 * 128 * 56 * 56) * (64 * 3 * 3);
	struct cudnn_walk *w = cudnn_walk__new();
	struct cudnn_exec e;

	if (!ASSERT_TRUE(w, "cudnn_walk__new"))
		return;
	create(w, 7, 7, 17 /* TENSOR */, TX);
	set_dims(w, 7, TX, (__u64[]){ 8, 64, 56, 56 });
	create(w, 7, 7, 17, TW);
	set_dims(w, 7, TW, (__u64[]){ 128, 64, 3, 3 });
	create(w, 7, 7, 17, TY);
	set_dims(w, 7, TY, (__u64[]){ 8, 128, 56, 56 });
	create(w, 7, 7, 10 /* OPERATION_CONVOLUTION_FORWARD */, OP);
	set_descs(w, 7, 7, OP, 703 /* W */, (__u64[]){ TW }, 1);
	set_descs(w, 7, 7, OP, 705 /* Y */, (__u64[]){ TY }, 1);
	create(w, 7, 7, 15 /* OPERATIONGRAPH */, OPG);
	set_descs(w, 7, 7, OPG, 801 /* OPERATIONGRAPH_OPS */, (__u64[]){ OP }, 1);
	one_desc(w, 7, "cudnnBackendFinalize", OPG);
	for (__u64 d = TX; d <= TY; d += 0x10)
		one_desc(w, 7, "cudnnBackendDestroyDescriptor", d);
	one_desc(w, 7, "cudnnBackendDestroyDescriptor", OP);
	create(w, 7, 7, 4 /* ENGINEHEUR */, HEUR);
	set_descs(w, 7, 7, HEUR, 201 /* ENGINEHEUR_OPERATION_GRAPH */, (__u64[]){ OPG }, 1);
	heur_results(w, 7, 7, HEUR);		       /* the count first: no config made yet */
	create(w, 7, 8, 3 /* ENGINECFG */, OTHER_CFG); /* another thread's: not these results */
	create(w, 7, 7, 3, CFG1);
	create(w, 7, 7, 3, CFG2);
	heur_results(w, 7, 7, HEUR); /* filled */
	create(w, 7, 7, 3, CFG3);    /* made after: not filled by them */
	one_desc(w, 7, "cudnnBackendDestroyDescriptor", OPG);
	one_desc(w, 7, "cudnnBackendDestroyDescriptor", HEUR);
	create(w, 7, 7, 5 /* EXECUTION_PLAN */, PLAN);
	set_descs(w, 7, 7, PLAN, 401 /* EXECUTION_PLAN_ENGINE_CONFIG */, (__u64[]){ CFG2 }, 1);
	one_desc(w, 7, "cudnnBackendFinalize", PLAN);
	ASSERT_EQ(exec_op0(w, 7, PLAN, &e), 10, "the plan's config -> its heuristics' graph");
	ASSERT_EQ(e.nops, 1, "one operation");
	ASSERT_EQ(e.flops, flops, "the convolution's FLOPs, from tensors destroyed before");
	set_descs(w, 7, 7, PLAN, 401, (__u64[]){ CFG3 }, 1);
	ASSERT_EQ(exec_op0(w, 7, PLAN, &e), -2, "a config no results filled: no graph invented");
	set_descs(w, 7, 7, PLAN, 401, (__u64[]){ OTHER_CFG }, 1);
	ASSERT_EQ(exec_op0(w, 7, PLAN, &e), -2, "another thread's config: none either");
	cudnn_walk__free(w);
}

int main(void)
{
	RUN_TEST(test_descriptors_go_with_their_process);
	RUN_TEST(test_plan_from_heuristics_results);
	return UNIT_EXIT();
}
