// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Launch order links (user/shim_channel/order_link.h) on exact cases: streams fed out of
 * order, an op queued before the recording, an op whose launch was not probed, a lost op, a
 * GPU behind by a repetition of shapes until a synchronization, waiting for more ops, the
 * per-thread default stream, forgotten calls and a process's exit. Calls are
 * cudaMemsetAsync(dst, value, bytes, stream) records; bytes give each op its shape.
 */
#include <string.h>
#include "cuda.h"
#include "cuda_records.h"
#include "order_link.h"
#include "gpu_records.h"
#include "unit.h"
#include "ucall_fn.h"

#define PID 7
#define US  1000ull
#define S   1000000000ull

static struct link {
	__u32 pid, corr, tid;
	__u64 call_ts;
} links[4096];
static int nlinks;

static void got(void *arg, __u32 pid, __u32 corr, __u32 tid, __u64 call_ts)
{
	(void)arg;
	if (nlinks < 4096)
		links[nlinks++] = (struct link){ pid, corr, tid, call_ts };
}

static const struct link *link_of(__u32 corr)
{
	for (int i = 0; i < nlinks; i++)
		if (links[i].corr == corr)
			return &links[i];
	return NULL;
}

static __u32 fn(const char *name)
{
	return ucall_fn(&cuda_table, name);
}

static __s64 call_ret; /* what the next calls return */

static void call_fn(struct order_link *ol, const char *name, __u32 tid, __u64 ts, __u64 bytes,
		    __u64 stream)
{
	struct bs_ucall c = { .h = { .type = BS_REC_CUDA_CALL,
				     .size = sizeof(c),
				     .pid = PID,
				     .tid = tid,
				     .ts = ts },
			      .dur = 2 * US,
			      .ret = call_ret,
			      .fn = fn(name),
			      .args = { 0x7000, 0, bytes, stream } };

	order_link__call(ol, &c.h);
}

static void call(struct order_link *ol, __u32 tid, __u64 ts, __u64 bytes, __u64 stream)
{
	call_fn(ol, "cudaMemsetAsync", tid, ts, bytes, stream);
}

static void op(struct order_link *ol, __u32 stream, __u32 corr, __u64 start, __u64 bytes, __u64 now)
{
	struct bs_gpu_memset m = {
		.h = { .type = BS_REC_GPU_MEMSET, .size = sizeof(m), .pid = PID, .ts = start },
		.dur = 1,
		.bytes = bytes,
		.correlation = corr,
		.context = 1,
		.stream = stream
	};

	order_link__op(ol, &m.h, now);
}

static struct order_link *fresh(void)
{
	struct order_link *ol = order_link__new(got, NULL);

	ASSERT_TRUE(ol, "new");
	nlinks = 0;
	return ol;
}

static void expect(__u32 corr, __u32 tid, __u64 call_ts)
{
	const struct link *l = link_of(corr);

	ASSERT_TRUE(l, "every op is decided");
	ASSERT_EQ(l->tid, tid, "the call's thread");
	ASSERT_EQ(l->call_ts, call_ts, "the call");
}

/* Two handles, two threads; stream 13's ops come first and 7's in reverse: all exact. */
static void test_fifo_out_of_order(void)
{
	struct order_link *ol = fresh();
	__u64 t = 10 * S;
	int k;

	for (k = 0; k < 40; k++) {
		call(ol, 11, t + k * 10 * US, 100 * (k % 3 + 1), 0x1000);
		call(ol, 12, t + k * 10 * US + 5 * US, 1000 * (k % 4 + 1), 0x2000);
	}
	for (k = 0; k < 40; k++)
		op(ol, 13, 2000 + k, t + k * 10 * US + 8 * US, 1000 * (k % 4 + 1), t + S);
	for (k = 39; k >= 0; k--)
		op(ol, 7, 1000 + k, t + k * 10 * US + 3 * US, 100 * (k % 3 + 1), t + S);
	order_link__run(ol, t + S, 0);
	ASSERT_EQ(nlinks, 0, "nothing before ORDER_SETTLE_NS");
	order_link__run(ol, t + S + ORDER_SETTLE_NS, 0);
	ASSERT_EQ(nlinks, 80, "every op decided");
	for (k = 0; k < 40; k++) {
		expect(1000 + k, 11, t + k * 10 * US);
		expect(2000 + k, 12, t + k * 10 * US + 5 * US);
	}
	order_link__free(ol);
}

/* Queued before the recording, not probed, lost: none, none, and the rest exact. */
static void test_pre_unprobed_lost(void)
{
	struct order_link *ol = fresh();
	__u64 t = 10 * S;
	int k;

	for (k = 0; k < 60; k++)
		call(ol, 11, t + k * 10 * US, 100 * (k % 5 + 1), 0x1000);
	op(ol, 7, 1, t - US, 100, t + S); /* queued before any call */
	for (k = 0; k < 60; k++) {
		if (k == 45)
			continue; /* lost */
		op(ol, 7, 100 + k, t + k * 10 * US + 3 * US, 100 * (k % 5 + 1), t + S);
		if (k == 20) /* its launch was not probed */
			op(ol, 7, 2, t + k * 10 * US + 4 * US, 100 * (k % 5 + 1), t + S);
	}
	order_link__run(ol, t + S, 1);
	ASSERT_EQ(nlinks, 61, "every op decided");
	expect(1, 0, 0);
	expect(2, 0, 0);
	for (k = 0; k < 60; k++)
		if (k != 45)
			expect(100 + k, 11, t + k * 10 * US);
	order_link__free(ol);
}

/*
 * The loop of the next three tests: two shapes in turn on handle 0x1000 from T. Calls FROM to
 * TO (numbered from T, 10 us apart); their ops, arriving at NOW, LAG launches behind: each
 * starts after call k + LAG began (and before k + LAG + 1).
 */
#define SYNC_AT 40 /* the launches after the synchronization: numbered from here */

static void loop_calls(struct order_link *ol, __u64 t, int from, int to)
{
	for (int k = from; k < to; k++)
		call(ol, 11, t + k * 10 * US, 100 * (k % 2 + 1), 0x1000);
}

static void loop_ops(struct order_link *ol, __u64 t, int from, int to, int lag, __u64 now)
{
	for (int k = from; k < to; k++)
		op(ol, 7, 100 + k, t + (k + lag) * 10 * US + US, 100 * (k % 2 + 1), now);
}

static void expect_loop(__u64 t, int from, int to)
{
	for (int k = from; k < to; k++)
		expect(100 + k, 11, t + k * 10 * US);
}

/*
 * The GPU two launches behind for 30 launches (a run shifted by two fits as well), then a
 * synchronization drains the queue and 20 more run as launched: every op its own call, not
 * the one two later.
 */
static void test_shift_breaks_at_sync(void)
{
	struct order_link *ol = fresh();
	__u64 t = 10 * S;

	loop_calls(ol, t, 0, 30);
	loop_calls(ol, t, SYNC_AT, SYNC_AT + 20);
	loop_ops(ol, t, 0, 30, 2, t + S);
	loop_ops(ol, t, SYNC_AT, SYNC_AT + 20, 0, t + S);
	order_link__run(ol, t + S, 1);
	expect_loop(t, 0, 30);
	expect_loop(t, SYNC_AT, SYNC_AT + 20);
	order_link__free(ol);
}

/* The same, what follows the synchronization a second later: the stream waits for it. */
static void test_waits_for_more_ops(void)
{
	struct order_link *ol = fresh();
	__u64 t = 10 * S;

	loop_calls(ol, t, 0, 30);
	loop_ops(ol, t, 0, 28, 2, t + S);
	order_link__run(ol, t + S + ORDER_SETTLE_NS, 0);
	ASSERT_EQ(nlinks, 0, "two runs reach the last op: it waits");
	loop_ops(ol, t, 28, 30, 2, t + 2 * S);
	loop_calls(ol, t, SYNC_AT, SYNC_AT + 20);
	loop_ops(ol, t, SYNC_AT, SYNC_AT + 20, 0, t + 2 * S);
	order_link__run(ol, t + 2 * S + ORDER_SETTLE_NS, 0);
	ASSERT_EQ(nlinks, 50, "decided once the later ops came");
	expect_loop(t, 0, 30);
	expect_loop(t, SYNC_AT, SYNC_AT + 20);
	order_link__free(ol);
}

/*
 * Without them, it decides after ORDER_HOLD_NS: the latest call (the GPU least behind), so
 * here each op is linked two launches late, the limit docs/GPU.md states.
 */
static void test_hold_is_bounded(void)
{
	struct order_link *ol = fresh();
	__u64 t = 10 * S;

	loop_calls(ol, t, 0, 30);
	loop_ops(ol, t, 0, 28, 2, t + S);
	order_link__run(ol, t + S + ORDER_SETTLE_NS, 0);
	ASSERT_EQ(nlinks, 0, "waits");
	order_link__run(ol, t + S + ORDER_HOLD_NS, 0);
	ASSERT_EQ(nlinks, 28, "decided after ORDER_HOLD_NS");
	expect(100, 11, t + 2 * 10 * US);
	order_link__free(ol);
}

/*
 * A failed call queues nothing: on a handle whose calls succeed it is not one to take (here
 * its shape is the next op's). Where every call fails (no GPU), they all stand.
 */
static void test_failed_call_queues_nothing(void)
{
	struct order_link *ol = fresh();
	__u64 t = 10 * S;
	int k;

	for (k = 0; k < 30; k++) {
		call_ret = k == 12; /* cudaErrorInvalidValue, with the next call's shape */
		call(ol, 11, t + k * 10 * US, 100 * ((k + (k == 12)) % 3 + 1), 0x1000);
	}
	call_ret = 1;
	for (k = 0; k < 20; k++)
		call(ol, 12, t + k * 10 * US + 5 * US, 100, 0x2000);
	call_ret = 0;
	for (k = 0; k < 30; k++)
		if (k != 12)
			op(ol, 7, 100 + k, t + (k + 1) * 10 * US + US, 100 * (k % 3 + 1), t + S);
	for (k = 0; k < 20; k++)
		op(ol, 13, 200 + k, t + k * 10 * US + 6 * US, 100, t + S);
	order_link__run(ol, t + S, 1);
	for (k = 0; k < 30; k++)
		if (k != 12)
			expect(100 + k, 11, t + k * 10 * US);
	for (k = 0; k < 20; k++)
		expect(200 + k, 12, t + k * 10 * US + 5 * US);
	order_link__free(ol);
}

/* cudaMemsetAsync_ptsz with stream 0: each thread's own default stream. */
static void test_per_thread_default_stream(void)
{
	struct order_link *ol = fresh();
	__u64 t = 10 * S;
	int k;

	for (k = 0; k < 20; k++) {
		call_fn(ol, "cudaMemsetAsync_ptsz", 11, t + k * 10 * US, 100, 0);
		call_fn(ol, "cudaMemsetAsync_ptsz", 12, t + k * 10 * US + 5 * US, 100, 0);
	}
	for (k = 0; k < 20; k++) {
		op(ol, 21, 100 + k, t + k * 10 * US + 3 * US, 100, t + S);
		op(ol, 22, 200 + k, t + k * 10 * US + 8 * US, 100, t + S);
	}
	order_link__run(ol, t + S, 1);
	for (k = 0; k < 20; k++) {
		expect(100 + k, 11, t + k * 10 * US);
		expect(200 + k, 12, t + k * 10 * US + 5 * US);
	}
	order_link__free(ol);
}

/* Calls begun ORDER_KEEP_NS ago are forgotten; a process's exit decides its ops. */
static void test_forget_and_exit(void)
{
	struct order_link *ol = fresh();
	struct order_link_stats st;
	__u64 t = 10 * S;
	int k;

	for (k = 0; k < 20; k++)
		call(ol, 11, t + k * 10 * US, 100 + k, 0x1000);
	order_link__run(ol, t + ORDER_KEEP_NS + S, 0); /* nothing waits: the calls go */
	for (k = 0; k < 20; k++)
		op(ol, 7, 100 + k, t + k * 10 * US + 3 * US, 100 + k, t + ORDER_KEEP_NS + S);
	order_link__proc_exit(ol, PID);
	ASSERT_EQ(nlinks, 20, "decided at the exit");
	for (k = 0; k < 20; k++)
		expect(100 + k, 0, 0);
	order_link__stats(ol, &st);
	ASSERT_EQ(st.unlinked, 20, "counted");
	order_link__free(ol);
}

int main(void)
{
	RUN_TEST(test_fifo_out_of_order);
	RUN_TEST(test_pre_unprobed_lost);
	RUN_TEST(test_shift_breaks_at_sync);
	RUN_TEST(test_waits_for_more_ops);
	RUN_TEST(test_hold_is_bounded);
	RUN_TEST(test_failed_call_queues_nothing);
	RUN_TEST(test_per_thread_default_stream);
	RUN_TEST(test_forget_and_exit);
	return UNIT_EXIT();
}
