// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rank_files: synthetic rank files of one job, for bench_ranks.py (merge at scale). Rank i of
 * N is a process on host node(i / 8), with its own boot (CLOCK_MONOTONIC far from the
 * others'), a wall clock off by up to 1 ms and drifting up to 20 ppm; it makes C all-reduces on
 * one communicator, a step (1 ms) apart, each ending at the same true instant on every rank
 * (a few us of jitter), rank 7 entering every 50th one 2 ms late; F system calls between two
 * collectives pad the file to a realistic size. Written with the real trace writer.
 *
 *   rank_files DIR N [C] [F]        -> DIR/rank0.bst ... DIR/rank{N-1}.bst
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl.h"
#include "osrt_records.h"
#include "trace_writer.h"
#include "ucall_records.h"

#define STEP_NS 1000000ull
#define LATE_NS 2000000ull
#define T0_REAL 1790000000000000000ull

struct rec {
	struct bs_ucall u;
	__u8 deref[BS_UCALL_DEREF_STRUCT];
};

static __u64 seed = 88172645463325252ull;

static __u64 rnd(void) /* xorshift64: the same files every run */
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static __u32 fn_of(const char *name)
{
	for (__u32 i = 0; i < nccl_table.napis; i++)
		if (!strcmp(nccl_table.apis[i].name, name))
			return i;
	return 0;
}

static void call(struct rec *r, const char *fn, __u32 pid, __u64 ts, __u64 dur, int deref)
{
	memset(r, 0, sizeof(*r));
	r->u.h.type = BS_REC_NCCL_CALL;
	r->u.h.size = sizeof(r->u) + (deref ? BS_UCALL_DEREF_STRUCT : 0);
	r->u.h.pid = r->u.h.tid = pid;
	r->u.h.ts = ts;
	r->u.dur = dur;
	r->u.fn = fn_of(fn);
	r->u.deref_len = deref ? BS_UCALL_DEREF_STRUCT : 0;
}

static int write_rank(const char *dir, int i, int n, int colls, int filler)
{
	char path[4096], host[32], boot[40];
	__u64 mono0 = 1000000000000ull * (__u64)(1 + i % 97) + rnd() % 1000000000ull;
	__s64 wall_err = (__s64)(rnd() % 2000000) - 1000000;
	double drift = ((double)(rnd() % 40000) - 20000) * 1e-9; /* +-20 ppm */
	__u32 pid = 1000 + (__u32)(rnd() % 50000), comm_ptr = 0xc000;
	struct trace_meta meta = { .version = 1 };
	struct trace_clocks end;
	struct trace_writer *w;
	struct bs_syscall sc;
	struct rec r;
	__u64 t, t0 = 2 * STEP_NS; /* ns since the job's start, before any rank's mono0 */
	int err = 0;

	snprintf(path, sizeof(path), "%s/rank%d.bst", dir, i);
	snprintf(host, sizeof(host), "node%03d", i / 8);
	snprintf(boot, sizeof(boot), "boot-%03d", i / 8);
	meta.hostname = host;
	meta.boot_id = boot;
	meta.families = "proc,osrt,nccl";
	meta.target = "synthetic rank";
	meta.tool_version = "bench";
	meta.start = (struct trace_clocks){ mono0, T0_REAL + (__u64)wall_err, mono0 };
	w = trace_writer__open(path, &meta, TRACE_WRITER_FORCE, &err);
	if (!w)
		return err;
	/* The init: rank i of n, the job's id. */
	call(&r, "ncclCommInitRank", pid, mono0 + t0 / 2, t0 / 4, 1);
	r.u.args[1] = (__u32)n;
	r.u.args[2] = (__u32)i;
	memset(r.deref, 0x5a, NCCL_ID_BYTES);
	r.u.out = comm_ptr;
	err = trace_writer__append(w, &r.u.h);
	for (int k = 0; !err && k < colls; k++) {
		__u64 true_end = t0 + (__u64)k * STEP_NS;
		__u64 enter = true_end - 100000 - rnd() % 50000;
		__u64 local;

		if (k % 50 == 49)
			enter = i == 7 % n ? true_end - 20000 : true_end - LATE_NS;
		local = mono0 + (__u64)((double)enter * (1 + drift));
		call(&r, "ncclAllReduce", pid, local,
		     (__u64)((double)(true_end - enter) * (1 + drift)) + rnd() % 4000, 0);
		r.u.args[2] = 1 << 20;
		r.u.args[3] = 7; /* ncclFloat32 */
		r.u.args[5] = comm_ptr;
		err = trace_writer__append(w, &r.u.h);
		for (int f = 0; !err && f < filler; f++) {
			t = local + (__u64)(f + 1) * (STEP_NS / (__u64)(filler + 2));
			memset(&sc, 0, sizeof(sc));
			sc.h = (struct bs_hdr){ .type = BS_REC_SYSCALL,
						.size = sizeof(sc),
						.pid = pid,
						.tid = pid + 1,
						.ts = t };
			sc.dur = 2000 + rnd() % 3000;
			sc.nr = 7;
			err = trace_writer__append(w, &sc.h);
		}
	}
	t = mono0 + t0 + (__u64)colls * STEP_NS;
	end = (struct trace_clocks){ t, T0_REAL + (__u64)wall_err + (t - mono0), t };
	if (err) {
		trace_writer__free(w);
		return err;
	}
	return trace_writer__close(w, &end);
}

int main(int argc, char **argv)
{
	int n, colls, filler, err;

	if (argc < 3) {
		fprintf(stderr, "usage: rank_files DIR N [COLLECTIVES] [FILLER]\n");
		return 2;
	}
	n = atoi(argv[2]);
	colls = argc > 3 ? atoi(argv[3]) : 1000;
	filler = argc > 4 ? atoi(argv[4]) : 9;
	for (int i = 0; i < n; i++) {
		err = write_rank(argv[1], i, n, colls, filler);
		if (err) {
			fprintf(stderr, "rank_files: rank %d: %s\n", i, strerror(-err));
			return 1;
		}
	}
	return 0;
}
