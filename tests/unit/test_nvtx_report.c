// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nvtx family, reading side: the decoders against the dump contract (docs/NVTX.md: styles,
 * domains, colors, every payload type, open and registered ranges, marks, names), thread names
 * given with nvtxNameOsThread, and nvtx_sum / nvtx_gpu_proj_sum against numbers computed by
 * hand over nested push/pop ranges, start/end ranges in a domain and across threads, and an
 * open range that neither counts.
 */
#include <errno.h>
#include <stdio.h>
#include "commands.h"
#include "stats.h"
#include "trace_build.h"
#include "gpu_records.h"
#include "nvtx_records.h"

#define PID 300
#define T1  301
#define T2  302
#define T3  303

static char tmp_dir[64];

static void put_range(struct tb *b, __u32 tid, __u64 ts, __u64 dur, const char *text,
		      const char *domain, __u16 flags, __u16 depth, __u32 end_tid, __u64 range_id)
{
	struct bs_nvtx_range r = {
		.h = { .type = BS_REC_NVTX_RANGE,
		       .size = sizeof(r),
		       .pid = PID,
		       .tid = tid,
		       .ts = ts },
		.dur = dur,
		.range_id = range_id,
		.name_id = tb_str(b, text),
		.domain_id = tb_str(b, domain),
		.end_tid = end_tid,
		.depth = depth,
		.flags = flags,
	};

	tb_put(b, &r);
}

static void put_kernel(struct tb *b, __u32 tid, __u64 ts, __u64 dur, __u64 call_ts, __u16 flags)
{
	struct bs_gpu_kernel k = {
		.h = { .type = BS_REC_GPU_KERNEL,
		       .size = sizeof(k),
		       .pid = PID,
		       .tid = tid,
		       .ts = ts },
		.dur = dur,
		.call_ts = call_ts,
		.name_id = tb_str(b, "k"),
		.flags = flags,
	};

	tb_put(b, &k);
}

/* ---- Decoders ---- */

static void test_decode_range(void)
{
	struct bs_nvtx_range r = {
		.h = { .type = BS_REC_NVTX_RANGE,
		       .size = sizeof(r),
		       .pid = PID,
		       .tid = T1,
		       .ts = 1000 },
		.dur = 500,
		.payload = 42,
		.end_tid = T1,
		.category = 3,
		.color = 0xff00ff80,
		.depth = 2,
		.flags = BS_NVTX_PUSHPOP | BS_NVTX_COLOR | BS_NVTX_PAYLOAD_U64,
	};
	struct event ev;
	struct tb b;

	if (!ASSERT_EQ(tb_open(&b, NULL, "nvtx"), 0, "builder"))
		return;
	r.name_id = tb_str(&b, "forward");
	ASSERT_EQ(tb_decode(&b, &r, &ev), 1, "a range is an event");
	ASSERT_STREQ(ev.kind, "nvtx_range", "kind");
	ASSERT_STREQ(ev.name, "forward", "name: the message");
	ASSERT_EQ(ev.ts, 1000, "ts: start");
	ASSERT_EQ(ev.dur, 500, "dur");
	ASSERT_EQ(ev.tid, T1, "tid: the pushing thread");
	ASSERT_ARG_STR(&ev, "domain", "");
	ASSERT_ARG_STR(&ev, "style", "PushPop");
	ASSERT_ARG_U64(&ev, "depth", 2);
	ASSERT_ARG_U64(&ev, "end_tid", T1);
	ASSERT_NO_ARG(&ev, "range_id");
	ASSERT_ARG_U64(&ev, "category", 3);
	ASSERT_ARG_STR(&ev, "color", "#FF00FF80");
	ASSERT_ARG_U64(&ev, "payload", 42);
	ASSERT_NO_ARG(&ev, "open");
	ASSERT_NO_ARG(&ev, "registered");
	ASSERT_EQ(ev.nargs, 7, "7 args");

	/* A start/end range in a domain, ended on another thread, registered, still open. */
	r.domain_id = tb_str(&b, "io");
	r.flags = BS_NVTX_OPEN | BS_NVTX_REGISTERED;
	r.range_id = 77;
	r.end_tid = T2;
	r.name_id = 0;
	ASSERT_EQ(tb_decode(&b, &r, &ev), 1, "a range is an event");
	ASSERT_STREQ(ev.name, "", "no message: empty name");
	ASSERT_ARG_STR(&ev, "domain", "io");
	ASSERT_ARG_STR(&ev, "style", "StartEnd");
	ASSERT_NO_ARG(&ev, "depth");
	ASSERT_ARG_U64(&ev, "end_tid", T2);
	ASSERT_ARG_U64(&ev, "range_id", 77);
	ASSERT_NO_ARG(&ev, "color");
	ASSERT_NO_ARG(&ev, "payload");
	ASSERT_ARG_BOOL(&ev, "open", 1);
	ASSERT_ARG_BOOL(&ev, "registered", 1);
	tb_close(&b, 0);
}

static void test_decode_payloads(void)
{
	struct bs_nvtx_mark k = {
		.h = { .type = BS_REC_NVTX_MARK,
		       .size = sizeof(k),
		       .pid = PID,
		       .tid = T1,
		       .ts = 7 },
		.category = 9,
	};
	double d = -2.5;
	float f = 0.75f;
	__u32 fbits;
	const struct event_arg *a;
	struct event ev;
	struct tb b;

	if (!ASSERT_EQ(tb_open(&b, NULL, "nvtx"), 0, "builder"))
		return;
	k.name_id = tb_str(&b, "checkpoint");
	ASSERT_EQ(tb_decode(&b, &k, &ev), 1, "a mark is an event");
	ASSERT_STREQ(ev.kind, "nvtx_mark", "kind");
	ASSERT_STREQ(ev.name, "checkpoint", "name");
	ASSERT_EQ(ev.dur, 0, "an instant");
	ASSERT_ARG_STR(&ev, "domain", "");
	ASSERT_ARG_U64(&ev, "category", 9);
	ASSERT_NO_ARG(&ev, "payload");
	ASSERT_NO_ARG(&ev, "color");

	k.flags = BS_NVTX_PAYLOAD_I64;
	k.payload = (__u64)-5;
	tb_decode(&b, &k, &ev);
	ASSERT_ARG_S64(&ev, "payload", -5);
	k.flags = BS_NVTX_PAYLOAD_U32;
	k.payload = 0xdeadbeef00000007ull; /* only the low 32 bits are the payload */
	tb_decode(&b, &k, &ev);
	ASSERT_ARG_U64(&ev, "payload", 7);
	k.flags = BS_NVTX_PAYLOAD_I32;
	k.payload = 0xfffffffd;
	tb_decode(&b, &k, &ev);
	ASSERT_ARG_S64(&ev, "payload", -3);
	k.flags = BS_NVTX_PAYLOAD_F64;
	memcpy(&k.payload, &d, sizeof(d));
	tb_decode(&b, &k, &ev);
	a = tb_arg(&ev, "payload");
	ASSERT_TRUE(a && a->kind == EVENT_ARG_DOUBLE && a->d == -2.5, "f64 payload");
	k.flags = BS_NVTX_PAYLOAD_F32 | BS_NVTX_COLOR;
	memcpy(&fbits, &f, sizeof(f));
	k.payload = fbits;
	k.color = 0x12345678;
	tb_decode(&b, &k, &ev);
	a = tb_arg(&ev, "payload");
	ASSERT_TRUE(a && a->kind == EVENT_ARG_DOUBLE && a->d == 0.75, "f32 payload");
	ASSERT_ARG_STR(&ev, "color", "#12345678");
	tb_close(&b, 0);
}

static void test_decode_names(void)
{
	struct bs_nvtx_name n = {
		.h = { .type = BS_REC_NVTX_NAME,
		       .size = sizeof(n),
		       .pid = PID,
		       .tid = T1,
		       .ts = 3 },
		.key = T2,
		.kind = BS_NVTX_NAME_THREAD,
	};
	struct bs_nvtx_begin g = {
		.h = { .type = BS_REC_NVTX_BEGIN,
		       .size = sizeof(g),
		       .pid = PID,
		       .tid = T1,
		       .ts = 4 },
	};
	struct bs_comm c = {
		.h = { .type = BS_REC_COMM, .size = sizeof(c), .pid = PID, .tid = T2 },
		.comm = "python3",
	};
	struct event ev;
	struct tb b;

	if (!ASSERT_EQ(tb_open(&b, NULL, "nvtx"), 0, "builder"))
		return;
	tb_put(&b, &c);
	ASSERT_STREQ(trace_model__thread_name(b.m, T2), "python3", "the comm first");
	n.name_id = tb_str(&b, "data loader");
	tb_put(&b, &n);
	ASSERT_EQ(tb_decode(&b, &n, &ev), 1, "a name is an event");
	ASSERT_STREQ(ev.kind, "nvtx_name", "kind");
	ASSERT_STREQ(ev.name, "data loader", "name: the given name");
	ASSERT_ARG_STR(&ev, "what", "thread");
	ASSERT_ARG_U64(&ev, "key", T2);
	ASSERT_ARG_STR(&ev, "domain", "");
	ASSERT_STREQ(trace_model__thread_name(b.m, T2), "data loader",
		     "nvtxNameOsThread names the thread");
	/* A later comm change does not undo the application's name... */
	tb_put(&b, &c);
	ASSERT_STREQ(trace_model__thread_name(b.m, T2), "data loader", "kept over the comm");
	/* ...a new thread with the same tid does. */
	{
		struct bs_fork f = {
			.h = { .type = BS_REC_FORK, .size = sizeof(f), .pid = PID, .tid = PID },
			.child_pid = PID,
			.child_tid = T2,
			.comm = "worker",
		};

		tb_put(&b, &f);
		ASSERT_STREQ(trace_model__thread_name(b.m, T2), "worker", "a new thread");
	}
	n.kind = BS_NVTX_NAME_CATEGORY;
	n.key = 4;
	n.domain_id = tb_str(&b, "io");
	n.name_id = tb_str(&b, "disk");
	tb_decode(&b, &n, &ev);
	ASSERT_ARG_STR(&ev, "what", "category");
	ASSERT_ARG_U64(&ev, "key", 4);
	ASSERT_ARG_STR(&ev, "domain", "io");
	tb_put(&b, &n);
	ASSERT_TRUE(!trace_model__thread_name(b.m, 4), "a category names no thread");
	ASSERT_EQ(tb_decode(&b, &g, &ev), 0, "BEGIN is metadata, not an event");
	tb_close(&b, 0);
}

/* ---- Reports ---- */

static int write_nvtx_trace(const char *path)
{
	struct tb b;

	if (tb_open(&b, path, "cuda,gpu,nvtx"))
		return -EIO;
	/* T1: three steps with nested fwd/bwd (records come when ranges end: inner first). */
	put_range(&b, T1, 100, 300, "fwd", NULL, BS_NVTX_PUSHPOP, 1, T1, 0);
	put_range(&b, T1, 500, 400, "bwd", NULL, BS_NVTX_PUSHPOP, 1, T1, 0);
	put_range(&b, T1, 0, 1000, "step", NULL, BS_NVTX_PUSHPOP, 0, T1, 0);
	put_range(&b, T1, 2100, 500, "fwd", NULL, BS_NVTX_PUSHPOP, 1, T1, 0);
	put_range(&b, T1, 2000, 1000, "step", NULL, BS_NVTX_PUSHPOP, 0, T1, 0);
	put_range(&b, T1, 5000, 4000, "step", NULL, BS_NVTX_PUSHPOP, 0, T1, 0);
	/* The same text as a start/end range: another row. Then a domain's, across threads. */
	put_range(&b, T1, 10000, 700, "step", NULL, 0, 0, T2, 1);
	put_range(&b, T2, 100, 5000, "load", "io", 0, 0, T3, 2);
	/* Still open when the recording stopped: counted in neither report. */
	put_range(&b, T1, 9500, 99999, "hang", NULL, BS_NVTX_PUSHPOP | BS_NVTX_OPEN, 0, T1, 0);
	put_range(&b, T1, 9500, 99999, "step", NULL, BS_NVTX_PUSHPOP | BS_NVTX_OPEN, 0, T1, 0);
	/* GPU work launched inside them. */
	put_kernel(&b, T1, 1200, 300, 150, BS_GPU_CALL_CUDA);  /* step 1, fwd 1 */
	put_kernel(&b, T1, 1600, 400, 600, BS_GPU_CALL_API);   /* step 1, bwd */
	put_kernel(&b, T1, 3100, 100, 2500, BS_GPU_CALL_CUDA); /* step 2, fwd 2 */
	put_kernel(&b, T1, 1700, 100, 650, 0);		       /* not linked: not placed */
	put_kernel(&b, T2, 1300, 100, 150, BS_GPU_CALL_CUDA);  /* io:load on T2 */
	put_kernel(&b, T3, 1300, 100, 150, BS_GPU_CALL_CUDA);  /* no range on T3 */
	return tb_close(&b, 200000);
}

static void check_nvtx_sum(const struct table *t)
{
	const double grand = 6000 + 5000 + 800 + 700 + 400;
	int sp = tb_row(t, "name", "step", "style", "PushPop");
	int se = tb_row(t, "name", "step", "style", "StartEnd");
	int ld = tb_row(t, "name", "io:load", "style", "StartEnd");
	int fw = tb_row(t, "name", "fwd", NULL, NULL), bw = tb_row(t, "name", "bwd", NULL, NULL);

	if (!ASSERT_EQ(table__nrows(t), 5, "five rows: open ranges left out") ||
	    !ASSERT_TRUE(sp >= 0 && se >= 0 && ld >= 0 && fw >= 0 && bw >= 0, "rows"))
		return;
	ASSERT_EQ(tb_row(t, "name", "hang", NULL, NULL), -1, "an open range has no row");
	ASSERT_TRUE(sp == 0 && ld == 1 && fw == 2 && se == 3 && bw == 4, "by total time");
	ASSERT_EQ(U64_AT(t, sp, "count"), 3, "step instances (the open one left out)");
	ASSERT_EQ(U64_AT(t, sp, "total_ns"), 6000, "step total");
	ASSERT_NEAR(DBL_AT(t, sp, "avg_ns"), 2000, 1e-9, "step avg");
	ASSERT_NEAR(DBL_AT(t, sp, "med_ns"), 1000, 1e-9, "step median of 1000, 1000, 4000");
	ASSERT_EQ(U64_AT(t, sp, "min_ns"), 1000, "step min");
	ASSERT_EQ(U64_AT(t, sp, "max_ns"), 4000, "step max");
	ASSERT_NEAR(DBL_AT(t, sp, "stddev_ns"), sqrt(2e6), 1e-6, "step stddev");
	ASSERT_NEAR(DBL_AT(t, sp, "time_pct"), 6000 * 100.0 / grand, 1e-9, "step time_pct");
	ASSERT_EQ(U64_AT(t, ld, "total_ns"), 5000, "a domain's range is DOMAIN:text");
	ASSERT_NEAR(DBL_AT(t, fw, "med_ns"), 400, 1e-9, "fwd median of two");
	ASSERT_NEAR(DBL_AT(t, fw, "stddev_ns"), 100, 1e-9, "fwd stddev");
	ASSERT_EQ(U64_AT(t, se, "count"), 1, "step as start/end");
	ASSERT_NEAR(DBL_AT(t, bw, "time_pct"), 400 * 100.0 / grand, 1e-9, "bwd time_pct");
}

static void check_proj_sum(const struct table *t)
{
	int sp = tb_row(t, "name", "step", "style", "PushPop");
	int fw = tb_row(t, "name", "fwd", NULL, NULL), bw = tb_row(t, "name", "bwd", NULL, NULL);
	int ld = tb_row(t, "name", "io:load", NULL, NULL);

	if (!ASSERT_EQ(table__nrows(t), 4, "ranges with GPU work") ||
	    !ASSERT_TRUE(sp >= 0 && fw >= 0 && bw >= 0 && ld >= 0, "rows"))
		return;
	ASSERT_TRUE(sp == 0 && bw == 1 && fw == 2 && ld == 3, "by projected time, then name");
	/* step 1: [1200, 2000) from two operations; step 2: [3100, 3200); step 3: none. */
	ASSERT_EQ(U64_AT(t, sp, "count"), 2, "step instances with GPU work");
	ASSERT_EQ(U64_AT(t, sp, "total_proj_ns"), 900, "step projected");
	ASSERT_EQ(U64_AT(t, sp, "total_range_ns"), 2000, "step CPU time of those instances");
	ASSERT_NEAR(DBL_AT(t, sp, "proj_avg_ns"), 450, 1e-9, "avg");
	ASSERT_NEAR(DBL_AT(t, sp, "proj_med_ns"), 450, 1e-9, "median of two");
	ASSERT_EQ(U64_AT(t, sp, "proj_min_ns"), 100, "min");
	ASSERT_EQ(U64_AT(t, sp, "proj_max_ns"), 800, "max");
	ASSERT_NEAR(DBL_AT(t, sp, "proj_stddev_ns"), 350, 1e-9, "stddev");
	ASSERT_EQ(U64_AT(t, sp, "total_gpu_ops"), 3, "operations (the unlinked one left out)");
	ASSERT_NEAR(DBL_AT(t, sp, "avg_gpu_ops"), 1.5, 1e-9, "per instance");
	ASSERT_EQ(U64_AT(t, sp, "gpu_time_ns"), 800, "GPU time");
	ASSERT_EQ(U64_AT(t, bw, "total_proj_ns"), 400, "bwd: the copy launched through CUPTI");
	ASSERT_EQ(U64_AT(t, fw, "count"), 2, "fwd instances");
	ASSERT_EQ(U64_AT(t, fw, "total_proj_ns"), 400, "fwd projected");
	ASSERT_EQ(U64_AT(t, fw, "total_range_ns"), 800, "fwd CPU time");
	ASSERT_EQ(U64_AT(t, ld, "total_proj_ns"), 100, "load: its starting thread's launch");
	ASSERT_EQ(U64_AT(t, ld, "gpu_time_ns"), 100, "load GPU time");
}

static void test_reports(void)
{
	struct stats *s;
	char path[128];
	int status;

	snprintf(path, sizeof(path), "%s/nvtx.bst", tmp_dir);
	if (!ASSERT_EQ(write_nvtx_trace(path), 0, "write trace"))
		return;
	s = stats__collect(path, "nvtx_sum,nvtx_gpu_proj_sum", &status);
	if (ASSERT_TRUE(s, "collect") && ASSERT_EQ(status, EXIT_READ_OK, "status")) {
		check_nvtx_sum(stats__table(s, "nvtx_sum"));
		check_proj_sum(stats__table(s, "nvtx_gpu_proj_sum"));
	}
	stats__free(s);
	unlink(path);
}

int main(void)
{
	if (tb_tmp_dir(tmp_dir, sizeof(tmp_dir)))
		return 1;
	RUN_TEST(test_decode_range);
	RUN_TEST(test_decode_payloads);
	RUN_TEST(test_decode_names);
	RUN_TEST(test_reports);
	rmdir(tmp_dir);
	return UNIT_EXIT();
}
