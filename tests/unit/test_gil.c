// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil family, the parts that need no live interpreter (_Py_DebugOffsets decoding is
 * test_py_debug_offsets.c's): the gil_sum / gil_blocked_by arithmetic on a synthetic trace
 * written with the real trace writer and read back through stats__collect, checked against
 * hand-computed numbers. The live side is tests/e2e/test_gil.py.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include "commands.h"
#include "family.h"
#include "gil.h"
#include "stats.h"
#include "table.h"
#include "trace_writer.h"
#include "unit.h"

/* ---- reports ---- */

static char tmp_dir[64];

static void hdr(struct bs_hdr *h, __u16 type, __u16 size, __u32 pid, __u32 tid, __u64 ts)
{
	memset(h, 0, size);
	h->type = type;
	h->size = size;
	h->pid = pid;
	h->tid = tid;
	h->ts = ts;
}

static void put_thread(struct trace_writer *w, __u32 pid, __u32 tid, const char *name, __u64 ts)
{
	struct bs_thread t;

	hdr(&t.h, BS_REC_THREAD, sizeof(t), pid, tid, ts);
	snprintf(t.name, sizeof(t.name), "%s", name);
	trace_writer__append(w, &t.h);
}

static void put_wait(struct trace_writer *w, __u32 pid, __u32 tid, __u64 ts, __u64 dur,
		     __u32 holder)
{
	struct bs_gil_wait r;

	hdr(&r.h, BS_REC_GIL_WAIT, sizeof(r), pid, tid, ts);
	r.dur = dur;
	r.holder_tid = holder;
	r.rounds = 1;
	trace_writer__append(w, &r.h);
}

static void put_agg(struct trace_writer *w, __u32 pid, __u32 tid, __u64 ts, __u64 count,
		    __u64 total, __u64 max, __u32 bucket, __u64 nshort, __u64 holds, __u64 hold_ns)
{
	struct bs_gil_agg a;

	hdr(&a.h, BS_REC_GIL_AGG, sizeof(a), pid, tid, ts);
	a.threshold_ns = 50000;
	a.v.wait_count = count;
	a.v.wait_total_ns = total;
	a.v.wait_max_ns = max;
	a.v.short_hist[bucket] = nshort;
	a.v.hold_count = holds;
	a.v.hold_total_ns = hold_ns;
	trace_writer__append(w, &a.h);
}

static void put_blame(struct trace_writer *w, __u32 pid, __u32 waiter, __u32 holder, __u64 ts,
		      __u64 count, __u64 total)
{
	struct bs_gil_blame b;

	hdr(&b.h, BS_REC_GIL_BLAME, sizeof(b), pid, waiter, ts);
	b.holder_tid = holder;
	b.count = count;
	b.total_ns = total;
	trace_writer__append(w, &b.h);
}

static int write_gil_trace(const char *path, __u32 method)
{
	struct trace_meta meta = {
		.hostname = "unit",
		.kernel = "6.18",
		.cmdline = "bpfsight record (unit test)",
		.families = "gil",
		.target = "system-wide",
		.tool_version = "test",
		.start = { .mono_ns = 1000, .realtime_ns = 1700000000123456789ull },
	};
	struct trace_clocks end = { .mono_ns = 2000000, .realtime_ns = 1700000001000000000ull };
	struct trace_writer *w;
	struct bs_gil_proc p;
	int err = 0;

	w = trace_writer__open(path, &meta, TRACE_WRITER_FORCE, &err);
	if (!w)
		return err ? err : -EIO;
	/* Process 30, threads 30 (main), 31 and 32; the trace spans ts 1000 .. 1001000. */
	put_thread(w, 30, 30, "main", 1000);
	put_thread(w, 30, 31, "cpu-a", 1000);
	put_thread(w, 30, 32, "cpu-b", 1000);
	hdr(&p.h, BS_REC_GIL_PROC, sizeof(p), 30, 30, 1000);
	p.py_version = 0x30b07f0;
	p.method = method;
	p.flags = BS_GIL_PROC_MUTEX | BS_GIL_PROC_HOLDER | BS_GIL_PROC_VERIFIED;
	p.gil_addr = 0x7f0000001000;
	trace_writer__append(w, &p.h);
	/* cpu-a: three long waits with records (100, 200, 400 us) blamed on cpu-b... */
	put_wait(w, 30, 31, 10000, 100000, 32);
	put_wait(w, 30, 31, 20000, 200000, 32);
	/* ...an early snapshot, superseded by the later one... */
	put_agg(w, 30, 31, 30000, 2, 300000, 200000, 0, 0, 0, 0);
	put_wait(w, 30, 31, 500000, 400000, 32);
	/* ...plus four short waits in bucket 10 ([1024, 2048) ns, middle 1536) of 4000 ns total. */
	put_agg(w, 30, 31, 1001000, 7, 704000, 400000, 10, 4, 0, 0);
	put_blame(w, 30, 31, 32, 1001000, 7, 704000);
	/* cpu-b: only short waits (no records): two of [32768, 50000) ns, 80000 ns in all. */
	put_agg(w, 30, 32, 1001000, 2, 80000, 45000, 15, 2, 0, 0);
	put_blame(w, 30, 32, 31, 1001000, 1, 50000);
	put_blame(w, 30, 32, 0, 1001000, 1, 30000);
	err = trace_writer__close(w, &end);
	return err;
}

static void test_gil_sum(void)
{
	const struct table *t, *b;
	struct stats *s = NULL;
	char path[128];
	int status;

	snprintf(path, sizeof(path), "%s/gil.bst", tmp_dir);
	if (!ASSERT_EQ(write_gil_trace(path, BS_GIL_METHOD_CONDWAIT), 0, "write trace"))
		return;
	s = stats__collect(path, NULL, &status);
	if (!ASSERT_TRUE(s, "collect") || !ASSERT_EQ(status, EXIT_READ_OK, "status"))
		goto cleanup;
	t = stats__table(s, "gil_sum");
	b = stats__table(s, "gil_blocked_by");
	if (!ASSERT_TRUE(t && b, "gil_sum and gil_blocked_by by default") ||
	    !ASSERT_EQ(table__nrows(t), 3, "a row per thread of the python process"))
		goto cleanup;
	ASSERT_EQ(table__col(t, "hold_count"), -ENOENT, "no hold columns in default mode");
	/* Sorted by wait total: cpu-a (704 us), cpu-b (80 us), main (none). */
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "tid")), 31, "row 0");
	ASSERT_STREQ(table__get_str(t, 0, table__col(t, "thread_name")), "cpu-a", "name");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "wait_count")), 7, "count: last snapshot");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "wait_total_ns")), 704000, "total");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "wait_max_ns")), 400000, "max");
	/* Samples 1536 x4, 100000, 200000, 400000: median 1536, p99 = 200000 + .94 * 200000. */
	ASSERT_NEAR(table__get_double(t, 0, table__col(t, "wait_p50_ns")), 1536, 1e-6, "p50");
	ASSERT_NEAR(table__get_double(t, 0, table__col(t, "wait_p99_ns")), 388000, 1e-6, "p99");
	/* Wall: the trace's first to last record (1000 .. 1001000). */
	ASSERT_NEAR(table__get_double(t, 0, table__col(t, "contention_pct")), 70.4, 1e-9, "pct");
	ASSERT_STREQ(table__get_str(t, 0, table__col(t, "method")), "condwait", "method");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "tid")), 32, "row 1");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "wait_count")), 2, "short-only count");
	/* Bucket 15 is [32768, 65536), capped by the 50000 threshold: middle 41384. */
	ASSERT_NEAR(table__get_double(t, 1, table__col(t, "wait_p50_ns")), 41384, 1e-6,
		    "short p50");
	ASSERT_EQ(table__get_u64(t, 2, table__col(t, "tid")), 30, "row 2: main, no waits");
	ASSERT_EQ(table__get_u64(t, 2, table__col(t, "wait_count")), 0, "main waits");
	ASSERT_NEAR(table__get_double(t, 2, table__col(t, "contention_pct")), 0, 1e-12, "main pct");

	/* Blocked by: the in-kernel totals, largest first; holder 0 is "(unknown)". */
	if (!ASSERT_EQ(table__nrows(b), 3, "blame rows"))
		goto cleanup;
	ASSERT_EQ(table__get_u64(b, 0, table__col(b, "waiter_tid")), 31, "b0 waiter");
	ASSERT_STREQ(table__get_str(b, 0, table__col(b, "holder_name")), "cpu-b", "b0 holder");
	ASSERT_EQ(table__get_u64(b, 0, table__col(b, "total_ns")), 704000, "b0 total");
	ASSERT_EQ(table__get_u64(b, 0, table__col(b, "wait_count")), 7, "b0 count");
	ASSERT_STREQ(table__get_str(b, 1, table__col(b, "waiter_name")), "cpu-b", "b1 waiter");
	ASSERT_EQ(table__get_u64(b, 1, table__col(b, "total_ns")), 50000, "b1 total");
	ASSERT_STREQ(table__get_str(b, 2, table__col(b, "holder_name")), "(unknown)", "b2");
cleanup:
	stats__free(s);
	unlink(path);
}

/* Full mode adds the hold columns; a short record is refused, never decoded. */
static void test_gil_full_and_decode(void)
{
	struct trace_model *m = trace_model__new();
	const struct table *t;
	struct stats *s = NULL;
	struct bs_gil_wait wr;
	struct event ev;
	char path[128];
	int status;

	snprintf(path, sizeof(path), "%s/gilfull.bst", tmp_dir);
	if (!ASSERT_EQ(write_gil_trace(path, BS_GIL_METHOD_TAKE_GIL), 0, "write trace"))
		goto cleanup;
	s = stats__collect(path, "gil_sum", &status);
	if (!ASSERT_TRUE(s, "collect"))
		goto cleanup;
	t = stats__table(s, "gil_sum");
	if (!ASSERT_TRUE(t, "gil_sum"))
		goto cleanup;
	ASSERT_TRUE(table__col(t, "hold_count") >= 0, "hold_count column");
	ASSERT_TRUE(table__col(t, "hold_total_ns") >= 0, "hold_total_ns column");
	ASSERT_STREQ(table__get_str(t, 0, table__col(t, "method")), "take_gil", "method");

	hdr(&wr.h, BS_REC_GIL_WAIT, sizeof(wr), 1, 2, 100);
	wr.dur = 5;
	wr.holder_tid = 3;
	ASSERT_EQ(family__decode(&wr.h, m, &ev), 1, "a wait is an event");
	ASSERT_STREQ(ev.kind, "gil_wait", "kind");
	ASSERT_EQ(ev.dur, 5, "dur");
	wr.h.size = 32; /* shorter than struct bs_gil_wait */
	ASSERT_EQ(family__decode(&wr.h, m, &ev), -EINVAL, "short record refused");
cleanup:
	stats__free(s);
	trace_model__free(m);
	unlink(path);
}

int main(void)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/bpfsight-unit-XXXXXX");
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_gil_sum);
	RUN_TEST(test_gil_full_and_decode);
	rmdir(tmp_dir);
	return UNIT_EXIT();
}
