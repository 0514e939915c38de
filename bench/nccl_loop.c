// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NCCL target of the families benchmark (bench/run_bench.py): the real libnccl, called in a
 * loop. Without a communicator every call fails fast in NCCL's argument check (a NULL comm:
 * ncclInvalidArgument), but it still enters the library's exported function, where the
 * nccl family's uprobes sit.
 *
 *   nccl_loop [-m MS] [-r ROUNDS] [-o FILE] [allreduce|commcount]...   (bench_loop.h)
 *
 *   allreduce  ncclAllReduce(.., comm NULL, stream): the collective a training step makes,
 *              7 argument words (the probe copies the stack ones too)
 *   commcount  ncclCommCount(NULL, &n): 2 argument words and an out value read at return
 */
#include <nccl.h>
#include "bench_loop.h"

static long allreduce(long x)
{
	return ncclAllReduce((const void *)0x5e000000, (void *)0x7ec00000, 1024 + (x & 1),
			     ncclFloat32, ncclSum, NULL, (cudaStream_t)0x57a0001);
}

static long commcount(long x)
{
	int n = 0;

	return ncclCommCount(NULL, &n) + n;
}

int main(int argc, char **argv)
{
	static const struct bench_fn fns[] = {
		/* The library's own functions, through the GOT (bench_loop.h's int3 check). */
		{ "allreduce", allreduce, (const void *)ncclAllReduce },
		{ "commcount", commcount, (const void *)ncclCommCount },
	};

	return bench_loop_main(argc, argv, fns, 2);
}
