// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight merge's parts, on hand-made inputs whose truth is known: the fit (offsets, drift,
 * stragglers' late returns, sequences of a late-started recording, a wall-clock-only merge),
 * the rebase of each family's records, the nccl family's sync points (a group's end; kernel
 * ends with the gpu family), the ranks a merged file's model knows, and --start-at's instants.
 */
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "merge.h"
#include "nccl.h"
#include "gpu_records.h"
#include "nvtx_records.h"
#include "start_at.h"
#include "trace_meta.h"
#include "trace_model.h"
#include "trace_ranks.h"
#include "ucall_records.h"
#include "unit.h"
#include "nccl_rec.h"

#define MS 1000000ull
#define T0 1000000000000ull /* the reference's start, CLOCK_MONOTONIC */
#define W0 1790000000000000000ull

static __u64 seed = 12345;

static double noise(void) /* uniform in [0, 1) */
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(seed >> 11) / 9007199254740992.0;
}

/*
 * File I of a job: its monotonic clock starts at MONO0 while the true clock (the reference's)
 * is at T0; its wall clock reads WALL_ERR ahead; DRIFT: its monotonic clock's rate - 1. It
 * returns from collective k (true end T0 + 10 ms + k ms) some us late, rank LATE_RANK at every
 * 10th one 500 us late (a descheduled return).
 */
static void make_file(struct merge_input *in, int i, __u64 mono0, __s64 wall_err, double drift,
		      int n, __u64 first_seq, int inferred)
{
	memset(in, 0, sizeof(*in));
	in->path = "synthetic";
	in->meta.start = (struct trace_clocks){ mono0, W0 + (__u64)wall_err, mono0 };
	in->end = (struct trace_clocks){ mono0 + 2000 * MS, W0 + (__u64)wall_err + 2000 * MS,
					 mono0 + 2000 * MS };
	in->has_end = 1;
	in->members = calloc(1, sizeof(*in->members));
	in->members[0] = (struct merge_member){ .group = 0xabc,
						.pid = 100,
						.rank = i,
						.nranks = 4,
						.inferred = (__u32)inferred,
						.first_seq = inferred ? 0 : first_seq,
						.count = (__u64)n };
	in->nmembers = 1;
	in->pts = calloc((size_t)n, sizeof(*in->pts));
	for (int k = 0; k < n; k++) {
		__u64 truth = 10 * MS + (__u64)(k + (int)first_seq) * MS; /* since T0 */
		double late = 2000 + 6000 * noise();

		if (i == 2 && k % 10 == 3)
			late += 500000;
		in->pts[k] = (struct merge_point){
			.group = 0xabc,
			.seq = first_seq + (__u64)k - (inferred ? first_seq : 0),
			.end_ts = mono0 + (__u64)(((double)truth + late) * (1 + drift)),
			.pid = 100,
		};
	}
	in->npts = (__u32)n;
	in->stride = 1;
}

static void free_files(struct merge_input *in, int n)
{
	for (int i = 0; i < n; i++) {
		free(in[i].members);
		free(in[i].pts);
	}
}

/* Where merge puts true instant T (ns since T0) of file I: the truth is T0 + T. */
static __s64 placed(const struct merge_input *in, __u64 mono0, double drift, __u64 t)
{
	return (__s64)(merge_input__clock(in, mono0 + (__u64)((double)t * (1 + drift))) - (T0 + t));
}

static void test_fit_offsets_drift_stragglers(void)
{
	struct merge_input in[4];
	const __s64 err[4] = { 0, 3000000, -7000000, 1234567 };
	const double drift[4] = { 0, 0, 0, 30e-6 };
	const __u64 mono0[4] = { T0, 5 * T0, 7 * T0 + 17, 2 * T0 };

	for (int i = 0; i < 4; i++)
		make_file(&in[i], i, mono0[i], err[i], drift[i], 1500, 0, 0);
	if (!ASSERT_EQ(merge_fit(in, 4, 0, 0), 0, "fits"))
		goto out;
	ASSERT_TRUE(in[0].flags & BS_RANK_REFERENCE, "file 0 is the reference");
	ASSERT_EQ(merge_input__clock(&in[0], T0 + 123), T0 + 123, "its clock is the merged one");
	for (int i = 1; i < 4; i++) {
		ASSERT_TRUE(in[i].flags & BS_RANK_FINE, "aligned on collectives");
		/* Every rank returns 2-8 us late alike: each end lands within 1 us of the truth. */
		for (__u64 t = 10 * MS; t < 1600 * MS; t += 300 * MS)
			ASSERT_TRUE(llabs(placed(&in[i], mono0[i], drift[i], t)) < 1000,
				    "collective ends where it truly was");
		ASSERT_TRUE(in[i].offset_err_ns > 0 && in[i].offset_err_ns < 1000,
			    "its standard error");
		ASSERT_EQ(in[i].used + in[i].outliers, 1500, "every point used or left out");
	}
	/* The wall clocks' errors (where the collectives are): file 3's drifted meanwhile. */
	ASSERT_TRUE(llabs(in[1].offset_ns - 3000000) < 1000, "file 1's offset");
	ASSERT_TRUE(llabs(in[2].offset_ns + 7000000) < 1000, "file 2's offset");
	ASSERT_TRUE(in[3].flags & BS_RANK_DRIFT, "file 3's drift fitted");
	ASSERT_NEAR(in[3].drift_ppb, 30000, 500, "file 3's drift: its clocks ran 30 ppm fast");
	/* The straggler's late returns are outliers, not a clock. */
	ASSERT_TRUE(in[2].outliers >= 150, "a tenth of file 2's returns left out");
out:
	free_files(in, 4);
}

static void test_fit_wall_clock_only(void)
{
	struct merge_input in[2];

	make_file(&in[0], 0, T0, 0, 0, 100, 0, 0);
	make_file(&in[1], 1, 3 * T0, 5000000, 0, 100, 0, 0);
	if (ASSERT_EQ(merge_fit(in, 2, 0, 1), 0, "fits")) {
		ASSERT_TRUE(!(in[1].flags & BS_RANK_FINE), "by wall clocks only");
		/* The wall clock is 5 ms ahead: the file lands 5 ms late. */
		ASSERT_TRUE(llabs(placed(&in[1], 3 * T0, 0, 50 * MS) - 5000000) < 10000,
			    "placed by its wall clock");
		ASSERT_EQ(in[1].offset_ns, 0, "no offset found");
	}
	free_files(in, 2);
}

/* A recording that began 37 collectives in (-p): its sequences matched by time. */
static void test_fit_inferred_sequences(void)
{
	struct merge_input in[3];

	make_file(&in[0], 0, T0, 0, 0, 400, 0, 0);
	make_file(&in[1], 1, 4 * T0, 200000, 0, 300, 37, 1);
	make_file(&in[2], 2, 6 * T0, -300000, 0, 400, 0, 0);
	if (ASSERT_EQ(merge_fit(in, 3, 0, 0), 0, "fits")) {
		ASSERT_EQ(in[1].members[0].shift, 37, "its seq 0 is the group's 37");
		ASSERT_TRUE(in[1].flags & BS_RANK_INFERRED, "said so");
		ASSERT_TRUE(llabs(in[1].offset_ns - 200000) < 1000, "and aligned");
	}
	free_files(in, 3);
}

/* Every field a decoder declares, rewritten; others untouched; never past the record. */
static void test_rebase(void)
{
	struct merge_input in = { .ns = 3,
				  .string_base = 1000,
				  .stack_base = 50,
				  .mono0 = 5000,
				  .merged0 = 9000,
				  .rate = 0 };
	struct {
		struct bs_process p;
	} pr = { { .h = { .type = BS_REC_PROCESS,
			  .size = sizeof(struct bs_process),
			  .pid = 7,
			  .tid = 7,
			  .ts = 6000 },
		   .ppid = 1,
		   .cmdline_id = 4,
		   .exe_id = 0,
		   .start_ns = 5500 } };
	struct {
		struct bs_stack s;
		struct bs_frame f[2];
	} st = {
		{ .h = { .type = BS_REC_STACK, .size = sizeof(st), .pid = 7, .tid = 8, .ts = 7000 },
		  .id = 2,
		  .nframes = 2 },
		{ { .func_id = 5, .file_id = 6 }, { .func_id = 0, .file_id = 9 } }
	};
	struct bs_nvtx_name nn = { .h = { .type = BS_REC_NVTX_NAME,
					  .size = sizeof(nn),
					  .pid = 7,
					  .tid = 8,
					  .ts = 8000 },
				   .key = 8,
				   .kind = BS_NVTX_NAME_THREAD,
				   .name_id = 3 };
	struct bs_gpu_kernel k = { .h = { .type = BS_REC_GPU_KERNEL,
					  .size = sizeof(k),
					  .pid = 7,
					  .tid = 8,
					  .ts = 9000 },
				   .call_ts = 8500,
				   .name_id = 11 };
	struct bs_hdr unknown = {
		.type = 0xee, .size = sizeof(unknown), .pid = 7, .tid = 0, .ts = 5000
	};
	const __u32 ns = 3u << BS_RANK_NS_SHIFT;

	merge_rebase__record(&pr.p.h, &in);
	ASSERT_EQ(pr.p.h.pid, ns | 7, "pid in its namespace");
	ASSERT_EQ(pr.p.h.ts, 10000, "ts on the merged clock");
	ASSERT_EQ(pr.p.ppid, ns | 1, "ppid");
	ASSERT_EQ(pr.p.cmdline_id, 1004, "cmdline string");
	ASSERT_EQ(pr.p.exe_id, 0, "0 stays 0");
	ASSERT_EQ(pr.p.start_ns, 9500, "start time");
	merge_rebase__record(&st.s.h, &in);
	ASSERT_EQ(st.s.id, 52, "stack id");
	ASSERT_EQ(st.f[0].func_id, 1005, "frame function");
	ASSERT_EQ(st.f[1].func_id, 0, "no function stays 0");
	ASSERT_EQ(st.f[1].file_id, 1009, "frame file");
	merge_rebase__record(&nn.h, &in);
	ASSERT_EQ(nn.key, ns | 8, "an NVTX thread name's key is a tid");
	ASSERT_EQ(nn.name_id, 1003, "its name");
	merge_rebase__record(&k.h, &in);
	ASSERT_EQ(k.call_ts, 12500, "a kernel's launching call's time");
	ASSERT_EQ(k.name_id, 1011, "its name");
	merge_rebase__record(&unknown, &in);
	ASSERT_EQ(unknown.pid, ns | 7, "an unknown type: its header still rebased");
	ASSERT_EQ(unknown.tid, 0, "tid 0 stays 0");
	/* A PROCESS record cut short: its fields past the size are not touched. */
	pr.p.h.size = 32;
	pr.p.start_ns = 1;
	pr.p.ppid = 2;
	merge_rebase__record(&pr.p.h, &in);
	ASSERT_EQ(pr.p.start_ns, 1, "past the size: untouched");
	ASSERT_EQ(pr.p.ppid, ns | 2, "within the size: rebased");
}

/* Records fed to the model and the nccl family's sync hook; the points it makes. */
struct points {
	struct sync_point v[16];
	int n;
};

static void collect(void *arg, const struct sync_point *p)
{
	struct points *ps = arg;

	if (ps->n < 16)
		ps->v[ps->n++] = *p;
}

static struct bs_hdr *ncall(struct rec *r, const char *fn, __u64 ts, __u64 dur)
{
	memset(r, 0, sizeof(*r));
	r->u.h = (struct bs_hdr){
		.type = BS_REC_NCCL_CALL, .size = sizeof(r->u), .pid = 9, .tid = 9, .ts = ts
	};
	r->u.dur = dur;
	r->u.fn = fn_of(fn);
	if (!strcmp(fn, "ncclCommInitRank")) {
		r->u.h.size += BS_UCALL_DEREF_STRUCT;
		r->u.deref_len = BS_UCALL_DEREF_STRUCT;
		memset(r->deref, 7, NCCL_ID_BYTES);
		r->u.args[1] = 2; /* nranks */
		r->u.args[2] = 1; /* rank */
		r->u.out = 0xc0;  /* the new communicator */
	} else {
		r->u.args[5] = 0xc0; /* comm of ncclAllReduce */
	}
	return &r->u.h;
}

static void run_sync(const char *families, struct bs_hdr **recs, int n, struct points *ps)
{
	struct trace_meta meta = { .families = (char *)families };
	struct trace_model *m = trace_model__new();
	void *st = nccl_sync.new(&meta);

	ps->n = 0;
	for (int i = 0; i < n; i++) {
		trace_model__observe(m, recs[i]);
		nccl_sync.observe(st, recs[i], m, collect, ps);
	}
	nccl_sync.finish(st, collect, ps);
	nccl_sync.free(st);
	trace_model__free(m);
}

static void test_sync_host_and_gpu_ends(void)
{
	struct rec init, a1, gs, a2, a3, ge, a4;
	struct {
		struct bs_string s;
		char text[40];
	} name = { { .h = { .type = BS_REC_STRING, .size = sizeof(name) }, .id = 1, .len = 36 },
		   "ncclDevKernel_AllReduce_Sum_f32_RING" };
	struct bs_gpu_kernel k1 = { .h = { .type = BS_REC_GPU_KERNEL,
					   .size = sizeof(k1),
					   .pid = 9,
					   .tid = 9,
					   .ts = 1500 },
				    .dur = 400,
				    .call_ts = 1010,
				    .name_id = 1 };
	struct bs_gpu_kernel k3 = { .h = { .type = BS_REC_GPU_KERNEL,
					   .size = sizeof(k3),
					   .pid = 9,
					   .tid = 9,
					   .ts = 5200 },
				    .dur = 300,
				    .call_ts = 4100,
				    .name_id = 1 };
	struct bs_hdr *recs[] = {
		&name.s.h,
		ncall(&init, "ncclCommInitRank", 100, 500),
		ncall(&a1, "ncclAllReduce", 1000, 50), /* seq 0: its kernel is k1 */
		ncall(&gs, "ncclGroupStart", 2000, 5),
		ncall(&a2, "ncclAllReduce", 2010, 5),  /* seq 1, in the group */
		ncall(&a3, "ncclAllReduce", 2020, 5),  /* seq 2, in the group */
		ncall(&ge, "ncclGroupEnd", 4000, 900), /* launches the group: k3 */
		ncall(&a4, "ncclAllReduce", 6000, 70), /* seq 3: no kernel ever */
		&k1.h,
		&k3.h,
	};
	struct points ps;

	run_sync("proc,nccl", recs, 10, &ps);
	if (ASSERT_EQ(ps.n, 4, "host ends: every collective")) {
		ASSERT_EQ(ps.v[0].seq, 0, "seq 0");
		ASSERT_EQ(ps.v[0].end_ts, 1050, "its return");
		ASSERT_EQ(ps.v[0].rank, 1, "rank from the init");
		ASSERT_EQ(ps.v[1].seq, 1, "seq 1");
		ASSERT_EQ(ps.v[1].end_ts, 4900, "the group's end");
		ASSERT_EQ(ps.v[2].end_ts, 4900, "the group's end");
		ASSERT_EQ(ps.v[3].end_ts, 6070, "seq 3's return");
		ASSERT_TRUE(!(ps.v[0].flags & SYNC_INFERRED), "its creation was seen");
	}
	run_sync("proc,nccl,cuda,gpu", recs, 10, &ps);
	if (ASSERT_EQ(ps.n, 3, "kernel ends: the collectives whose kernel came")) {
		ASSERT_EQ(ps.v[0].seq, 0, "seq 0");
		ASSERT_EQ(ps.v[0].end_ts, 1900, "its kernel's end");
		ASSERT_EQ(ps.v[1].end_ts, 5500, "the group's kernel's end");
		ASSERT_EQ(ps.v[2].end_ts, 5500, "the group's kernel's end");
	}
}

/*
 * gloo's collectives (ProcessGroupGloo::nextTag, seen at each rank's entry): points with the
 * rank, the size and the tag, marked SYNC_NO_END, which merge takes the file's rank process
 * from and fits nothing by. Their ends: each collective's AsyncWork, made on its thread after
 * the tag, finished on a worker thread (here out of order, and a work whose tag the recording
 * missed): a point at the finish's entry, its tag's, marked SYNC_AGAIN; none is SYNC_INFERRED
 * (the tag is the same on every rank whenever the recording began).
 */
#define GLOO_PGG "_ZN4c10d16ProcessGroupGloo"
#define GLOO_WORK                                                                                  \
	GLOO_PGG "9AsyncWorkC2ESt6vectorIS2_IN2at6TensorESaIS4_EESaIS6_EEPKcRKN3c108optionalIS6_EE"
#define GLOO_DONE GLOO_PGG "9AsyncWork14finishWorkGlooEv"

static struct bs_hdr *gloo_call(struct rec *r, const char *fn, __u64 ts, __u32 tid, __u64 work)
{
	ncall(r, fn, ts, 10);
	r->u.h.tid = tid;
	r->u.args[0] = work; /* this: the AsyncWork */
	return &r->u.h;
}

static void test_sync_gloo_entries_name_the_rank(void)
{
	struct rec t[3], wk[3], done[3];
	struct bs_hdr *recs[9];
	struct points ps;
	int n = 0;

	for (int i = 0; i < 2; i++) {
		recs[n++] = ncall(&t[i], GLOO_PGG "7nextTagEv", 1000 + 100 * i, 2);
		t[i].u.h.size += BS_UCALL_DEREF_STRUCT;
		t[i].u.deref_len = BS_UCALL_DEREF_STRUCT;
		t[i].u.args[0] = 0x5000;      /* this: the process group */
		t[i].u.ret = i;		      /* the tag */
		((__s32 *)t[i].deref)[6] = 1; /* rank_ @24 */
		((__s32 *)t[i].deref)[7] = 2; /* size_ @28 */
		recs[n++] = gloo_call(&wk[i], GLOO_WORK, 1010 + 100 * i, 9, 0x7000 + 0x100 * i);
	}
	/* the second collective's work finishes first, on another worker */
	recs[n++] = gloo_call(&done[1], GLOO_DONE, 1150, 12, 0x7100);
	recs[n++] = gloo_call(&done[0], GLOO_DONE, 1160, 11, 0x7000);
	recs[n++] = gloo_call(&wk[2], GLOO_WORK, 1200, 9, 0x7200); /* no tag before it */
	recs[n++] = gloo_call(&done[2], GLOO_DONE, 1250, 11, 0x7200);
	run_sync("proc,nccl", recs, n, &ps);
	if (!ASSERT_EQ(ps.n, 4, "a point per gloo collective, one per end"))
		return;
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(ps.v[i].seq, (__u64)i, "seq: the tag");
		ASSERT_EQ(ps.v[i].pid, 9, "the rank's pid");
		ASSERT_TRUE(ps.v[i].rank == 1 && ps.v[i].nranks == 2, "rank_ and size_");
		ASSERT_EQ(ps.v[i].flags, SYNC_NO_END, "no end: nothing to fit by, no guess");
		ASSERT_EQ(ps.v[i].end_ts, 1000 + 100 * i, "its entry");
	}
	for (int i = 2; i < 4; i++) {
		ASSERT_EQ(ps.v[i].seq, (__u64)(3 - i), "the work's tag");
		ASSERT_EQ(ps.v[i].pid, 9, "the rank's pid");
		ASSERT_TRUE(ps.v[i].rank == 1 && ps.v[i].nranks == 2, "the group's rank and size");
		ASSERT_EQ(ps.v[i].flags, SYNC_AGAIN, "an end to fit by, of a collective given");
		ASSERT_EQ(ps.v[i].end_ts, i == 2 ? 1150 : 1160, "the finish's entry");
		ASSERT_EQ(ps.v[i].enter_ts, 1000 + 100 * (3 - i), "its nextTag's entry");
		ASSERT_EQ(ps.v[i].group, ps.v[0].group, "the process group's");
	}
}

static void test_ranks_in_the_model(void)
{
	struct {
		struct bs_string s;
		char text[8];
	} host = { { .h = { .type = BS_REC_STRING, .size = sizeof(host) }, .id = 5, .len = 5 },
		   "node7" };
	struct bs_rank r = {
		.h = { .type = BS_REC_RANK, .size = sizeof(r), .pid = 2u << BS_RANK_NS_SHIFT | 40 },
		.ns = 2,
		.rank = 3,
		.nranks = 8,
		.host_id = 5
	};
	struct trace_model *m = trace_model__new();
	const struct trace_rank *tr;

	trace_model__observe(m, &host.s.h);
	trace_model__observe(m, &r.h);
	ASSERT_STREQ(trace_model__process_name(m, 2u << BS_RANK_NS_SHIFT | 40), "rank 3 @ node7",
		     "the rank's process is named after it");
	tr = trace_model__rank(m, 2u << BS_RANK_NS_SHIFT | 41);
	ASSERT_TRUE(tr && tr->r.rank == 3, "a process beside it: the same rank's file");
	ASSERT_TRUE(!trace_model__rank(m, 41), "another namespace: none");
	ASSERT_EQ(trace_ranks__count(trace_model__ranks(m)), 1, "one rank");
	trace_model__free(m);
}

static void test_start_at(void)
{
	struct start_at a;

	ASSERT_EQ(start_at__parse("/10s", &a), 0, "/10s");
	ASSERT_EQ(start_at__next(&a, 1790000003123456789ull), 1790000010000000000ull,
		  "the next multiple of 10 s");
	ASSERT_EQ(start_at__next(&a, 1790000010000000000ull), 1790000020000000000ull,
		  "strictly after now");
	ASSERT_EQ(start_at__parse("/500ms", &a), 0, "/500ms");
	ASSERT_EQ(start_at__next(&a, 1790000003123456789ull), 1790000003500000000ull, "500 ms");
	ASSERT_EQ(start_at__parse("@14:30:05", &a), 0, "@HH:MM:SS");
	ASSERT_EQ(a.tod_s, 14 * 3600 + 30 * 60 + 5, "seconds of the day");
	ASSERT_TRUE(start_at__next(&a, 1790000003123456789ull) % 1000000000ull == 0,
		    "on a whole second");
	ASSERT_TRUE(start_at__next(&a, 1790000003123456789ull) - 1790000003123456789ull <=
			    24 * 3600 * 1000000000ull,
		    "within a day");
	ASSERT_TRUE(start_at__parse("10s", &a) < 0, "neither / nor @");
	ASSERT_TRUE(start_at__parse("/0", &a) < 0, "a zero period");
	ASSERT_TRUE(start_at__parse("@25:00:00", &a) < 0, "hour 25");
	ASSERT_TRUE(start_at__parse("@12:00", &a) < 0, "no seconds");
	ASSERT_TRUE(start_at__parse("@12:00:00x", &a) < 0, "trailing junk");
}

int main(void)
{
	RUN_TEST(test_fit_offsets_drift_stragglers);
	RUN_TEST(test_fit_wall_clock_only);
	RUN_TEST(test_fit_inferred_sequences);
	RUN_TEST(test_rebase);
	RUN_TEST(test_sync_host_and_gpu_ends);
	RUN_TEST(test_sync_gloo_entries_name_the_rank);
	RUN_TEST(test_ranks_in_the_model);
	RUN_TEST(test_start_at);
	return UNIT_EXIT();
}
