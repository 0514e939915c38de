// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One rank of a data-parallel job over the CPU NCCL test library (libnccl_cpu.c, linked as
 * libnccl.so.2): a communicator of NRANKS made from JOB (every rank builds the same unique id
 * from the name, as if rank 0 had broadcast it), then STEPS steps of collectives in
 * lock-step, each result checked:
 *   every step       ncclAllReduce (64 float32, sum)
 *   every 3rd step   ncclAllGather (4 int32) after it
 *   the last step    ncclGroupStart, ncclAllReduce, ncclBroadcast (root 0), ncclGroupEnd
 * then ncclCommDestroy. With LATE_RANK, that rank sleeps DELAY_US before the first collective
 * of each step listed in STEPS_LATE (0-based), so the others wait for it there. With
 * NCCL_RANKS_STEP_US in the environment, every rank first computes (sleeps) that long in
 * each step, as a training step would: the job lasts as long on an idle machine as on a busy
 * one.
 *
 * Usage: nccl_ranks JOB RANK NRANKS STEPS [LATE_RANK DELAY_US STEP[,STEP...]]
 * Prints "pid P", "unique_id_hash H" (bpfsight's FNV-1a of the 128-byte id), then, after
 * the communicator is destroyed (nothing printed meanwhile), one line per collective:
 * "enter SEQ NAME NS" (SEQ: 0, 1, ... on the communicator; NS: CLOCK_MONOTONIC right before
 * the call), and "done". Exit status 0, or 1 when a call failed or a result was wrong.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nccl_cpu.h"

#define MAX_STEPS 4096
#define MAX_COLL  (3 * MAX_STEPS)

static struct {
	const char *name;
	uint64_t ns;
} entered[MAX_COLL];
static int ncoll;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void enter(const char *name)
{
	if (ncoll < MAX_COLL)
		entered[ncoll++] = (typeof(entered[0])){ name, mono_ns() };
}

static int fail(const char *what, ncclResult_t r)
{
	fprintf(stderr, "nccl_ranks: %s: %s\n", what, ncclGetErrorString(r));
	return 1;
}

static int late_at(const char *list, int step)
{
	for (const char *p = list; p && *p; p += strcspn(p, ","), p += *p == ',') {
		if (atoi(p) == step)
			return 1;
	}
	return 0;
}

static int step_allreduce(ncclComm_t comm, int rank, int nranks, int step)
{
	float send[64], recv[64], want = 0;
	ncclResult_t r;

	for (int i = 0; i < 64; i++)
		send[i] = (float)(rank + 1 + step);
	for (int k = 0; k < nranks; k++)
		want += (float)(k + 1 + step);
	enter("ncclAllReduce");
	r = ncclAllReduce(send, recv, 64, ncclFloat32, ncclSum, comm, NULL);
	if (r)
		return fail("ncclAllReduce", r);
	for (int i = 0; i < 64; i++)
		if (recv[i] != want)
			return fprintf(stderr, "nccl_ranks: allreduce %g, not %g\n", recv[i], want),
			       1;
	return 0;
}

static int step_allgather(ncclComm_t comm, int rank, int nranks)
{
	int32_t send[4], recv[4 * 64];
	ncclResult_t r;

	for (int i = 0; i < 4; i++)
		send[i] = rank * 10 + i;
	enter("ncclAllGather");
	r = ncclAllGather(send, recv, 4, ncclInt32, comm, NULL);
	if (r)
		return fail("ncclAllGather", r);
	for (int k = 0; k < nranks; k++)
		for (int i = 0; i < 4; i++)
			if (recv[k * 4 + i] != k * 10 + i)
				return fprintf(stderr, "nccl_ranks: allgather is wrong\n"), 1;
	return 0;
}

static int step_group(ncclComm_t comm, int rank, int nranks)
{
	double send = rank, sum = 0, bsend = 42.0 + rank, brecv = 0;
	ncclResult_t r;

	ncclGroupStart();
	enter("ncclAllReduce");
	r = ncclAllReduce(&send, &sum, 1, ncclFloat64, ncclSum, comm, NULL);
	enter("ncclBroadcast");
	if (!r)
		r = ncclBroadcast(&bsend, &brecv, 1, ncclFloat64, 0, comm, NULL);
	if (r)
		return fail("a grouped collective", r);
	r = ncclGroupEnd();
	if (r)
		return fail("ncclGroupEnd", r);
	if (sum != nranks * (nranks - 1) / 2.0 || brecv != 42.0)
		return fprintf(stderr, "nccl_ranks: the group's results are wrong\n"), 1;
	return 0;
}

int main(int argc, char **argv)
{
	int rank, nranks, steps, late_rank = -1, got_rank = -1, got_n = -1, err = 0;
	const char *late_steps = NULL;
	struct timespec delay = { 0 }, compute = { 0 };
	const char *step_us = getenv("NCCL_RANKS_STEP_US");
	ncclUniqueId id;
	ncclComm_t comm;
	ncclResult_t r;
	uint64_t h = 0xcbf29ce484222325ull;

	if (argc != 5 && argc != 8) {
		fprintf(stderr, "usage: nccl_ranks JOB RANK NRANKS STEPS "
				"[LATE_RANK DELAY_US STEP[,STEP...]]\n");
		return 2;
	}
	rank = atoi(argv[2]);
	nranks = atoi(argv[3]);
	steps = atoi(argv[4]);
	if (steps < 1 || steps > MAX_STEPS || nranks < 1 || nranks > 64)
		return fprintf(stderr, "nccl_ranks: 1 <= STEPS <= %d, 1 <= NRANKS <= 64\n",
			       MAX_STEPS),
		       2;
	if (argc == 8) {
		long us = atol(argv[6]);

		late_rank = atoi(argv[5]);
		delay.tv_sec = us / 1000000;
		delay.tv_nsec = us % 1000000 * 1000;
		late_steps = argv[7];
	}
	if (step_us) {
		long us = atol(step_us);

		compute.tv_sec = us / 1000000;
		compute.tv_nsec = us % 1000000 * 1000;
	}
	memset(&id, 0, sizeof(id));
	snprintf(id.internal, sizeof(id.internal), "bpfsight-test-job:%s", argv[1]);
	for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
		h ^= (unsigned char)id.internal[i];
		h *= 0x100000001b3ull;
	}
	printf("pid %d\nunique_id_hash %016llx\n", getpid(), (unsigned long long)h);
	fflush(stdout);

	r = ncclCommInitRank(&comm, nranks, id, rank);
	if (r)
		return fail("ncclCommInitRank", r);
	if (ncclCommUserRank(comm, &got_rank) || ncclCommCount(comm, &got_n) || got_rank != rank ||
	    got_n != nranks)
		return fprintf(stderr, "nccl_ranks: the communicator is not rank %d of %d\n", rank,
			       nranks),
		       1;
	for (int step = 0; step < steps && !err; step++) {
		if (step_us)
			nanosleep(&compute, NULL);
		if (rank == late_rank && late_at(late_steps, step))
			nanosleep(&delay, NULL);
		err = step_allreduce(comm, rank, nranks, step);
		if (!err && step % 3 == 2)
			err = step_allgather(comm, rank, nranks);
		if (!err && step == steps - 1)
			err = step_group(comm, rank, nranks);
	}
	r = ncclCommDestroy(comm);
	if (r && !err)
		err = fail("ncclCommDestroy", r);
	for (int i = 0; i < ncoll; i++)
		printf("enter %d %s %llu\n", i, entered[i].name, (unsigned long long)entered[i].ns);
	printf("done\n");
	return err;
}
