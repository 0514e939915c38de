// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The launch join (user/shim_channel/shim_join.h) on exact cases: the outermost call at any
 * depth, records that come early or late, reasons, and a process's exit.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cuda.h"
#include "cuda_records.h"
#include "shim_join.h"
#include "unit.h"
#include "ucall_fn.h"

#define NS 1000000000ull

/* What the join emitted, in order. */
static struct out {
	__u16 type;
	__u32 tid, corr;
	__u64 call_ts;
	__u16 flags;
} outs[64];
static int nout;

static void emit(void *arg, struct bs_hdr *rec)
{
	struct out *o = &outs[nout < 63 ? nout++ : 63];

	(void)arg;
	o->type = rec->type;
	o->tid = rec->tid;
	if (rec->type == BS_REC_GPU_API) {
		struct bs_gpu_api *a = (void *)rec;

		o->corr = a->correlation;
		o->call_ts = a->call_ts;
		o->flags = a->flags;
	} else {
		struct bs_gpu_kernel *k = (void *)rec;

		o->corr = k->correlation;
		o->call_ts = k->call_ts;
		o->flags = k->flags;
	}
}

static __u32 fn(const char *name)
{
	return ucall_fn(&cuda_table, name);
}

static void call(struct shim_join *j, __u32 pid, __u32 tid, __u64 ts, __u64 dur, const char *name,
		 __u16 depth)
{
	struct bs_ucall c = { .h = { .type = BS_REC_CUDA_CALL,
				     .size = sizeof(c),
				     .pid = pid,
				     .tid = tid,
				     .ts = ts },
			      .dur = dur,
			      .fn = fn(name),
			      .depth = depth };

	shim_join__cuda_call(j, &c.h);
}

static void api(struct shim_join *j, __u32 pid, __u32 tid, __u64 ts, __u32 corr, __u64 now)
{
	struct bs_gpu_api a = { .h = { .type = BS_REC_GPU_API,
				       .size = sizeof(a),
				       .pid = pid,
				       .tid = tid,
				       .ts = ts },
				.dur = 100,
				.correlation = corr };

	shim_join__api(j, &a, now);
}

static void kernel(struct shim_join *j, __u32 pid, __u32 corr, __u64 now)
{
	struct bs_gpu_kernel k = {
		.h = { .type = BS_REC_GPU_KERNEL, .size = sizeof(k), .pid = pid, .ts = now },
		.dur = 10,
		.correlation = corr
	};

	shim_join__gpu(j, &k.h, now);
}

static struct out *kernel_out(__u32 corr)
{
	for (int i = 0; i < nout; i++)
		if (outs[i].type == BS_REC_GPU_KERNEL && outs[i].corr == corr)
			return &outs[i];
	return NULL;
}

/* A runtime launch around a driver launch, records as they return: the outer one is chosen. */
static void test_outermost_any_depth(void)
{
	struct shim_join *j = shim_join__new(emit, NULL);
	struct shim_join_stats st;
	struct out *k;

	nout = 0;
	call(j, 1, 10, NS + 1000, 500, "cuLaunchKernel", 1);
	call(j, 1, 10, NS, 2000, "cudaLaunchKernel", 0);
	api(j, 1, 10, NS + 1100, 7, 2 * NS);
	kernel(j, 1, 7, 2 * NS);
	k = kernel_out(7);
	if (ASSERT_TRUE(k, "kernel emitted at once"))
		ASSERT_EQ(k->call_ts, NS, "linked to the outer runtime call");
	ASSERT_EQ(outs[0].flags, BS_GPU_CALL_CUDA, "the API record linked too");
	shim_join__stats(j, &st);
	ASSERT_EQ(st.linked_cuda, 1, "linked");
	shim_join__free(j);
}

/* An API record before its call returned waits and links; a kernel before its API record too. */
static void test_early_records_wait(void)
{
	struct shim_join *j = shim_join__new(emit, NULL);
	struct out *k;

	nout = 0;
	call(j, 1, 10, NS, 100, "cudaLaunchKernel", 0); /* an earlier call: settles nothing */
	kernel(j, 1, 8, NS + 10);			/* before its API record */
	api(j, 1, 10, NS + 5000, 8, NS + 20);		/* before its call returned */
	ASSERT_EQ(nout, 0, "both wait");
	call(j, 1, 10, NS + 4000, 3000, "cudaLaunchKernel", 0);
	k = kernel_out(8);
	if (ASSERT_TRUE(k, "decided when the call came"))
		ASSERT_EQ(k->call_ts, NS + 4000, "linked to it");
	ASSERT_EQ(nout, 2, "API record and kernel");
	shim_join__free(j);
}

/*
 * Two ids one JOIN_CORR_SLOTS apart, both kernels waiting in the same slot: deciding the
 * later id leaves the earlier one's kernel on the slot's chain, linked when its id is.
 */
static void test_slot_shared_by_two_ids(void)
{
	struct shim_join *j = shim_join__new(emit, NULL);
	__u32 a = 9, b = 9 + JOIN_CORR_SLOTS;
	struct out *k;

	nout = 0;
	call(j, 1, 10, NS, 3000, "cudaLaunchKernel", 0);
	call(j, 1, 10, NS + 5000, 3000, "cudaLaunchKernel", 0);
	kernel(j, 1, a, 2 * NS);
	kernel(j, 1, b, 2 * NS);
	api(j, 1, 10, NS + 5100, b, 2 * NS);
	ASSERT_TRUE(kernel_out(b) && !kernel_out(a), "the later id's kernel alone");
	api(j, 1, 10, NS + 100, a, 2 * NS);
	k = kernel_out(a);
	if (ASSERT_TRUE(k, "the earlier id's kernel, still on the chain"))
		ASSERT_EQ(k->call_ts, NS, "linked to its call");
	shim_join__free(j);
}

/* Each reason, with the figures info shows. */
static void test_reasons(void)
{
	struct shim_join *j = shim_join__new(emit, NULL);
	struct shim_join_stats st;
	char why[256];

	nout = 0;
	call(j, 1, 10, NS, 100, "cudaLaunchKernel", 0);
	call(j, 1, 10, NS + 1000, 100, "cudaLaunchKernel", 0);
	api(j, 1, 10, NS + 500, 1, 2 * NS); /* between two calls: outside */
	kernel(j, 1, 1, 2 * NS);
	api(j, 1, 11, NS + 500, 2, 2 * NS); /* a thread without calls: waits, then decided */
	kernel(j, 1, 2, 2 * NS);
	api(j, 2, 20, NS, 3, 2 * NS); /* a process without calls */
	kernel(j, 2, 3, 2 * NS);
	kernel(j, 1, 4, 2 * NS);	     /* no API record ever */
	api(j, 1, 10, NS + 2000, 5, 2 * NS); /* after the thread's last call: not seen */
	kernel(j, 1, 5, 2 * NS);
	shim_join__expire(j, 2 * NS + JOIN_WAIT_NS, 0);
	shim_join__stats(j, &st);
	ASSERT_EQ(st.linked_api, 4, "four linked to their API record");
	ASSERT_EQ(st.unlinked, 1, "one unlinked");
	ASSERT_EQ(st.why[JOIN_WHY_OUTSIDE], 1, "outside_calls");
	ASSERT_EQ(st.why[JOIN_WHY_THREAD], 1, "thread_not_traced");
	ASSERT_EQ(st.why[JOIN_WHY_NO_CUDA], 1, "cuda_not_traced");
	ASSERT_EQ(st.why[JOIN_WHY_NO_API], 1, "no_api_record");
	ASSERT_EQ(st.why[JOIN_WHY_NOT_SEEN], 1, "call_not_seen");
	shim_join_stats__why(&st, why, sizeof(why));
	ASSERT_STREQ(why,
		     "no_api_record: 1, cuda_not_traced: 1, thread_not_traced: 1, "
		     "outside_calls: 1, call_not_seen: 1",
		     "the line");
	shim_join__free(j);
}

/* Calls past JOIN_KEEP_NS are forgotten, and an API record that needed them says so. */
static void test_expired(void)
{
	struct shim_join *j = shim_join__new(emit, NULL);
	struct shim_join_stats st;

	nout = 0;
	call(j, 1, 10, NS, 100, "cudaLaunchKernel", 0);
	call(j, 1, 10, NS + JOIN_KEEP_NS + 1000, 100, "cudaLaunchKernel", 0);
	api(j, 1, 10, NS + 10, 1, NS + JOIN_KEEP_NS + 2000);
	kernel(j, 1, 1, NS + JOIN_KEEP_NS + 2000);
	shim_join__stats(j, &st);
	ASSERT_EQ(st.why[JOIN_WHY_EXPIRED], 1, "calls_expired");
	shim_join__free(j);
}

/* A process's exit: its waiting records are written, its state forgotten. */
static void test_proc_exit(void)
{
	struct shim_join *j = shim_join__new(emit, NULL);
	struct shim_join_stats st;

	nout = 0;
	call(j, 1, 10, NS, 100, "cudaLaunchKernel", 0);
	kernel(j, 1, 9, NS + 50);	      /* waits for its API record */
	api(j, 1, 10, NS + 500, 10, NS + 60); /* waits for a call */
	kernel(j, 1, 10, NS + 70);
	ASSERT_EQ(nout, 0, "all wait");
	shim_join__proc_exit(j, 1);
	ASSERT_EQ(nout, 3, "written at the exit");
	shim_join__stats(j, &st);
	ASSERT_EQ(st.unlinked, 1, "the one without an API record");
	ASSERT_EQ(st.linked_api, 1, "the other through its API record");
	/* The pid reused: nothing of the dead process links the new one's records. */
	api(j, 1, 10, NS + 50, 11, NS + 80);
	kernel(j, 1, 11, NS + 80);
	shim_join__stats(j, &st);
	ASSERT_EQ(st.linked_cuda, 0, "no call of the dead process");
	shim_join__expire(j, 0, 1);
	shim_join__free(j);
}

int main(void)
{
	RUN_TEST(test_outermost_any_depth);
	RUN_TEST(test_early_records_wait);
	RUN_TEST(test_slot_shared_by_two_ids);
	RUN_TEST(test_reasons);
	RUN_TEST(test_expired);
	RUN_TEST(test_proc_exit);
	return UNIT_EXIT();
}
