// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A hung job read from hand-built records through the trace model (nccl_hang.h): ranks behind
 * on different communicators (each communicator's missing rank waits in the other's
 * collective: said as such), a collective whose waiters' host calls returned and that wait in
 * a CUDA synchronization (on the GPU), the missing rank's Python function, line and state from
 * the snapshot, and nothing at all without a snapshot.
 */
#include <string.h>
#include "cuda.h"
#include "nccl_hang.h"
#include "trace_model.h"
#include "unit.h"
#include "nccl_rec.h"
#include "ucall_fn.h"

#define S 1000000000ull

static struct trace_model *m;
static struct nccl_hang *h;

static void feed(const struct bs_hdr *rec)
{
	trace_model__observe(m, rec);
	nccl_hang__add(h, rec, m);
}

static void string(__u32 id, const char *text)
{
	struct {
		struct bs_string s;
		char text[32];
	} r = { .s = { .h = { .type = BS_REC_STRING, .size = sizeof(r) },
		       .id = id,
		       .len = (__u32)strlen(text) } };

	strcpy(r.text, text);
	feed(&r.s.h);
}

/* ncclCommInitRank of PID making COMM, rank RANK of N, its unique id filled with SEED. */
static void init(__u32 pid, __u64 comm, int rank, int n, int seed)
{
	struct rec r = { .u = { .h = { .type = BS_REC_NCCL_CALL,
				       .size = sizeof(r),
				       .pid = pid,
				       .tid = pid,
				       .ts = 1 },
				.dur = 1,
				.fn = fn_of("ncclCommInitRank"),
				.deref_len = BS_UCALL_DEREF_STRUCT,
				.out = comm } };

	r.u.args[1] = (__u32)n;
	r.u.args[2] = (__u32)rank;
	memset(r.deref, seed, NCCL_ID_BYTES);
	feed(&r.u.h);
}

/* An ncclAllReduce of 1024 float32 by PID on COMM entered at TS: returned, or OPEN. */
static void coll(__u32 pid, __u64 comm, __u64 ts, int open)
{
	struct bs_ucall r = { .h = { .type = BS_REC_NCCL_CALL,
				     .size = sizeof(r),
				     .pid = pid,
				     .tid = pid,
				     .ts = ts },
			      .dur = open ? 5 * S : 100,
			      .fn = fn_of("ncclAllReduce"),
			      .depth = open ? BS_UCALL_OPEN : 0 };

	r.args[2] = 1024;
	r.args[3] = 7; /* ncclFloat32 */
	r.args[5] = comm;
	feed(&r.h);
}

static void proc_snap(__u32 pid, __u64 ts, int rank)
{
	struct bs_proc_snap r = { .h = { .type = BS_REC_PROC_SNAP,
					 .size = sizeof(r),
					 .pid = pid,
					 .tid = pid,
					 .ts = ts },
				  .env_rank = rank,
				  .env_local_rank = rank,
				  .env_world = 4,
				  .nthreads = 1 };

	feed(&r.h);
}

static void thread_snap(__u32 pid, __u64 ts, __s32 syscall, __u64 off_cpu, __u32 stack)
{
	struct bs_thread_snap r = { .h = { .type = BS_REC_THREAD_SNAP,
					   .size = sizeof(r),
					   .pid = pid,
					   .tid = pid,
					   .ts = ts },
				    .stack_id = stack,
				    .state = 1,
				    .syscall = syscall,
				    .off_cpu_ns = off_cpu };

	feed(&r.h);
}

/* Stack ID: a Python frame FUNC (string 1) of FILE (string 2) at LINE under a native one. */
static void stack(__u32 id, __u32 line)
{
	struct {
		struct bs_stack s;
		struct bs_frame f[2];
	} r = { .s = { .h = { .type = BS_REC_STACK, .size = sizeof(r) }, .id = id, .nframes = 2 },
		.f = { { .addr = 0x1234, .func_id = 3, .file_id = 4, .kind = BS_FRAME_NATIVE },
		       { .func_id = 1, .file_id = 2, .line = line, .kind = BS_FRAME_PYTHON } } };

	feed(&r.s.h);
}

static void start(void)
{
	m = trace_model__new();
	h = nccl_hang__new();
	string(1, "idle");
	string(2, "/srv/job/x.py");
	string(3, "clock_nanosleep");
	string(4, "/usr/lib/libc.so.6");
}

static void stop(void)
{
	nccl_hang__free(h);
	trace_model__free(m);
}

static const struct hang_coll *coll_of(const struct hang_coll *c, size_t n, __u64 group)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].group == group)
			return &c[i];
	return NULL;
}

static void test_behind_on_another_communicator(void)
{
	const __u64 A = 0xa000, B = 0xb000;
	const struct hang_coll *c, *ca, *cb;
	char want[128], got[128];
	__u64 ha, hb;
	size_t n;

	start();
	for (__u32 r = 0; r < 4; r++)
		init(10 + r, A, (int)r, 4, 1);
	init(12, B, 0, 2, 2); /* ranks 2 and 3 share B too */
	init(13, B, 1, 2, 2);
	for (__u32 r = 0; r < 4; r++) {
		coll(10 + r, A, 10 * S, 0);
		coll(10 + r, A, 11 * S, 0);
	}
	coll(12, B, 12 * S, 0);
	coll(13, B, 12 * S, 0);
	coll(10, A, 13 * S, 1); /* A #2: ranks 0, 1, 3 in it */
	coll(11, A, 13 * S, 1);
	coll(13, A, 13 * S + 5, 1);
	coll(12, B, 14 * S, 1); /* B #1: its rank 0 (A's 2) in it, its rank 1 in A #2 */
	for (__u32 r = 0; r < 4; r++)
		proc_snap(10 + r, 20 * S, (int)r);
	c = nccl_hang__colls(h, m, &n);
	ASSERT_EQ(n, 2, "both communicators hang");
	ha = nccl__id_hash((__u8[NCCL_ID_BYTES]){ [0 ... NCCL_ID_BYTES - 1] = 1 });
	hb = nccl__id_hash((__u8[NCCL_ID_BYTES]){ [0 ... NCCL_ID_BYTES - 1] = 2 });
	ca = coll_of(c, n, ha);
	cb = coll_of(c, n, hb);
	if (!ASSERT_TRUE(ca && cb, "by their unique ids"))
		goto out;
	ASSERT_EQ(ca, &c[0], "the longest wait first: A, since 13 s");
	ASSERT_EQ(ca->seq, 2, "A's collective #2");
	ASSERT_EQ(ca->nwait, 3, "three waiters");
	ASSERT_EQ(ca->wait[0]->rank * 100 + ca->wait[1]->rank * 10 + ca->wait[2]->rank, 13,
		  "ranks 0, 1, 3");
	ASSERT_EQ(ca->waited_ns, 7 * S, "the first waited 7 s to the snapshot");
	ASSERT_TRUE(ca->nmiss == 1 && ca->miss[0] == 2 && !ca->on_gpu, "rank 2 never came");
	ASSERT_EQ(ca->bytes, 4096, "1024 float32");
	snprintf(want, sizeof(want),
		 "it waits in ncclAllReduce #1 of communicator %016llx for 6.0 s",
		 (unsigned long long)hb);
	ASSERT_STREQ(nccl_hang__doing(h, m, nccl_hang__rank_pid(h, m, ha, 2), got, sizeof(got)),
		     want, "rank 2 is behind on B");
	ASSERT_TRUE(cb->seq == 1 && cb->nwait == 1 && cb->wait[0]->pid == 12, "B #1: pid 12");
	ASSERT_TRUE(cb->nmiss == 1 && cb->miss[0] == 1, "B's rank 1 never came");
	ASSERT_EQ(nccl_hang__rank_pid(h, m, hb, 1), 13, "B's rank 1 is pid 13");
	snprintf(want, sizeof(want),
		 "it waits in ncclAllReduce #2 of communicator %016llx for 7.0 s",
		 (unsigned long long)ha);
	ASSERT_STREQ(nccl_hang__doing(h, m, 13, got, sizeof(got)), want, "pid 13 is in A's");
out:
	stop();
}

static __u32 cuda_fn(const char *name)
{
	return ucall_fn(&cuda_table, name);
}

static void test_on_the_gpu_and_the_missing_ranks_code(void)
{
	const __u64 C = 0xc000;
	struct bs_ucall sync = { .h = { .type = BS_REC_CUDA_CALL,
					.size = sizeof(sync),
					.pid = 20,
					.tid = 20,
					.ts = 6 * S },
				 .dur = 4 * S,
				 .fn = cuda_fn("cudaDeviceSynchronize"),
				 .depth = BS_UCALL_OPEN };
	const struct hang_coll *c;
	char buf[128];
	size_t n;

	start();
	init(20, C, 0, 2, 3);
	init(21, C, 1, 2, 3);
	coll(20, C, 2 * S, 0);
	coll(21, C, 2 * S, 0);
	coll(20, C, 5 * S, 0); /* returned: launched on the GPU */
	feed(&sync.h);	       /* and waits for it there */
	stack(9, 5);
	proc_snap(20, 10 * S, 0);
	thread_snap(20, 10 * S, 202, 4 * S, 0);
	proc_snap(21, 10 * S, 1);
	thread_snap(21, 10 * S, 230, 5 * S, 9);
	c = nccl_hang__colls(h, m, &n);
	if (!ASSERT_EQ(n, 1, "one hang"))
		goto out;
	ASSERT_TRUE(c->seq == 1 && c->nwait == 1 && c->wait[0]->rank == 0, "rank 0 in #1");
	ASSERT_TRUE(c->on_gpu && c->nmiss == 1 && c->miss[0] == 1, "on the GPU; rank 1 missing");
	ASSERT_EQ(c->waited_ns, 5 * S, "since it entered #1");
	ASSERT_STREQ(nccl_hang__open_call(h, 20), "cudaDeviceSynchronize", "what it waits in");
	ASSERT_STREQ(nccl_hang__doing(h, m, 21, buf, sizeof(buf)),
		     "it is in `idle` (x.py:5), sleeping in clock_nanosleep for 5.0 s",
		     "rank 1's function, line and state");
	ASSERT_STREQ(nccl_hang__where(m, 21, buf, sizeof(buf)), "`idle` (x.py:5)", "where");
out:
	stop();
}

/* Calls in flight that are no collective: no communicator hangs, the calls by entry time. */
static void test_calls_in_flight_without_a_collective(void)
{
	struct bs_ucall sync = { .h = { .type = BS_REC_CUDA_CALL,
					.size = sizeof(sync),
					.pid = 40,
					.tid = 41,
					.ts = 6 * S },
				 .dur = 4 * S,
				 .fn = cuda_fn("cudaStreamSynchronize"),
				 .depth = BS_UCALL_OPEN };
	struct rec init = { .u = { .h = { .type = BS_REC_NCCL_CALL,
					  .size = sizeof(init.u),
					  .pid = 42,
					  .tid = 42,
					  .ts = 3 * S },
				   .dur = 7 * S,
				   .fn = fn_of("ncclCommInitRank"),
				   .depth = BS_UCALL_OPEN } };
	const char *name;
	__u32 pid, tid;
	size_t i = 0, n = 1;
	__u64 ts;

	start();
	feed(&sync.h);
	feed(&init.u.h);
	proc_snap(40, 10 * S, 0);
	proc_snap(42, 10 * S, 1);
	nccl_hang__colls(h, m, &n);
	ASSERT_EQ(n, 0, "no collective");
	ASSERT_TRUE(nccl_hang__next_open(h, &i, &pid, &tid, &name, &ts) && pid == 42 && tid == 42 &&
			    ts == 3 * S && !strcmp(name, "ncclCommInitRank"),
		    "the init first: the longest");
	ASSERT_TRUE(nccl_hang__next_open(h, &i, &pid, &tid, &name, &ts) && pid == 40 && tid == 41 &&
			    !strcmp(name, "cudaStreamSynchronize"),
		    "then the synchronization");
	ASSERT_EQ(nccl_hang__next_open(h, &i, &pid, &tid, &name, &ts), 0, "two");
	stop();
}

static void test_no_snapshot_no_hang(void)
{
	size_t n = 1;

	start();
	init(30, 0xd000, 0, 2, 4);
	init(31, 0xd000, 1, 2, 4);
	coll(30, 0xd000, 2 * S, 1);
	ASSERT_TRUE(!nccl_hang__has_snapshot(h, m), "no snapshot");
	nccl_hang__colls(h, m, &n);
	ASSERT_EQ(n, 0, "a recording's end is no hang");
	stop();
}

int main(void)
{
	RUN_TEST(test_behind_on_another_communicator);
	RUN_TEST(test_on_the_gpu_and_the_missing_ranks_code);
	RUN_TEST(test_calls_in_flight_without_a_collective);
	RUN_TEST(test_no_snapshot_no_hang);
	return UNIT_EXIT();
}
