// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cudnn family's descriptor walk (user/families/cudnn/cudnn_decode.c) fed call records
 * built by hand: a legacy convolution's shapes read from the descriptors its process set, and
 * a process's descriptors gone when it exits or execs (once kept until the end of the file),
 * another's kept, at the same addresses.
 */
#include <string.h>
#include "cudnn.h"
#include "unit.h"

#define X 0x1000 /* the descriptors' addresses: the same in both processes */
#define W 0x2000
#define Y 0x3000
#define C 0x4000

static __u64 ts = 1000;

static int fn_of(const char *name)
{
	for (__u32 i = 0; i < cudnn_table.napis; i++)
		if (!strcmp(cudnn_table.apis[i].name, name))
			return i;
	unit_fail("%s is not in cudnn_table", name);
	return 0;
}

/* NAME called by PID with ARGS (NARGS words), succeeding: observed, its record into *R. */
static void call(struct cudnn_walk *w, struct bs_ucall *r, const char *name, __u32 pid,
		 const __u64 *args, int nargs)
{
	memset(r, 0, sizeof(*r));
	r->h.type = BS_REC_CUDNN_CALL;
	r->h.size = sizeof(*r);
	r->h.pid = r->h.tid = pid;
	r->h.ts = ts++;
	r->fn = fn_of(name);
	r->ret = CUDNN_STATUS_SUCCESS;
	memcpy(r->args, args, nargs * sizeof(*args));
	cudnn_walk__observe(w, &r->h);
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

int main(void)
{
	RUN_TEST(test_descriptors_go_with_their_process);
	return UNIT_EXIT();
}
