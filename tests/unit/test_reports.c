// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode and report tests: synthetic traces written with the real trace writer, read back
 * through stats__collect / stats__run (what `bpfsight stats` runs), checked against numbers
 * computed by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include "commands.h"
#include "family.h"
#include "json.h"
#include "stats.h"
#include "stats_math.h"
#include "table.h"
#include "trace_model.h"
#include "trace_writer.h"
#include "unit.h"
#include "osrt_records.h"
#include "sched_records.h"

static char tmp_dir[64];
static int tmp_seq;

static void tmp_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/t%d.bst", tmp_dir, tmp_seq++);
}

static void hdr(struct bs_hdr *h, __u16 type, __u16 size, __u32 pid, __u32 tid, __u64 ts)
{
	memset(h, 0, size);
	h->type = type;
	h->size = size;
	h->pid = pid;
	h->tid = tid;
	h->ts = ts;
}

static struct trace_writer *open_trace(const char *path, const char *families)
{
	struct trace_meta meta = {
		.hostname = "unit",
		.kernel = "6.18",
		.cmdline = "bpfsight record (unit test)",
		.families = (char *)families,
		.target = "system-wide",
		.tool_version = "test",
		.start = { .mono_ns = 1000, .realtime_ns = 1700000000123456789ull },
	};
	int err = 0;

	return trace_writer__open(path, &meta, TRACE_WRITER_FORCE, &err);
}

static int close_trace(struct trace_writer *w)
{
	struct trace_clocks end = { .mono_ns = 1000000, .realtime_ns = 1700000001000000000ull };

	return trace_writer__close(w, &end);
}

static void put_syscall(struct trace_writer *w, __u32 pid, __u32 tid, __u32 nr, __u64 dur)
{
	static __u64 ts = 2000;
	struct bs_syscall s;

	hdr(&s.h, BS_REC_SYSCALL, sizeof(s), pid, tid, ts += 10);
	s.nr = nr;
	s.dur = dur;
	s.ret = 0;
	trace_writer__append(w, &s.h);
}

static void put_agg_flags(struct trace_writer *w, __u32 pid, __u32 tid, __u32 nr, __u64 count,
			  __u64 total, __u64 min, __u64 max, __u32 flags)
{
	struct bs_syscall_agg a;

	hdr(&a.h, BS_REC_SYSCALL_AGG, sizeof(a), pid, tid, 5000);
	a.nr = nr;
	a.flags = flags;
	a.count = count;
	a.total_ns = total;
	a.min_ns = min;
	a.max_ns = max;
	trace_writer__append(w, &a.h);
}

static void put_agg(struct trace_writer *w, __u32 pid, __u32 tid, __u32 nr, __u64 count,
		    __u64 total, __u64 min, __u64 max)
{
	put_agg_flags(w, pid, tid, nr, count, total, min, max, 0);
}

static int write_osrt_trace(const char *path)
{
	struct trace_writer *w = open_trace(path, "osrt");

	if (!w)
		return -EIO;
	/* nanosleep (35): four recorded calls... */
	put_syscall(w, 10, 10, 35, 100);
	put_syscall(w, 10, 11, 35, 200);
	put_syscall(w, 10, 10, 35, 300);
	/* ...an aggregate snapshot that a later one supersedes... */
	put_agg(w, 10, 10, 35, 2, 50, 20, 30);
	put_syscall(w, 10, 10, 35, 1000);
	trace_writer__flush(w); /* the last snapshot lands in another chunk */
	put_agg(w, 10, 10, 35, 4, 120, 10, 50);
	/* ...and another thread's aggregate of the same call. */
	put_agg(w, 10, 11, 35, 2, 40, 15, 25);
	put_syscall(w, 10, 10, 0, 500);	   /* read */
	put_agg(w, 10, 10, 1, 1, 7, 7, 7); /* write: superseded */
	put_agg(w, 10, 10, 1, 3, 30, 5, 15);
	put_syscall(w, 10, 10, 999, 10); /* a number the table does not know */
	return close_trace(w);
}

static void test_osrt_sum(void)
{
	const struct table *t;
	struct stats *s = NULL;
	char path[128];
	int status, c;

	tmp_path(path, sizeof(path));
	if (!ASSERT_EQ(write_osrt_trace(path), 0, "write trace"))
		return;
	s = stats__collect(path, NULL, &status);
	if (!ASSERT_TRUE(s, "collect") || !ASSERT_EQ(status, EXIT_READ_OK, "status"))
		goto cleanup;
	/* Default: the recorded families only (osrt), so no sched_sum. */
	ASSERT_TRUE(!stats__table(s, "sched_sum"), "sched_sum not selected");
	t = stats__table(s, "osrt_sum");
	if (!ASSERT_TRUE(t, "osrt_sum") || !ASSERT_EQ(table__nrows(t), 4, "rows"))
		goto cleanup;

	/*
	 * nanosleep: samples 100, 200, 300, 1000 plus the last snapshots only: 4 calls at 30
	 * and 2 at 20. count 10, total 1760, median of 20 20 30 30 30 30 100 200 300 1000 = 30,
	 * population stddev = sqrt(834640 / 10).
	 */
	c = table__col(t, "name");
	ASSERT_STREQ(table__get_str(t, 0, c), "nanosleep", "row 0 name");
	ASSERT_STREQ(table__get_str(t, 1, c), "read", "row 1 name");
	ASSERT_STREQ(table__get_str(t, 2, c), "write", "row 2 name");
	ASSERT_STREQ(table__get_str(t, 3, c), "syscall_999", "row 3 name");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "count")), 10, "count");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "total_ns")), 1760, "total");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "min_ns")), 10, "min");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "max_ns")), 1000, "max");
	ASSERT_NEAR(table__get_double(t, 0, table__col(t, "avg_ns")), 176.0, 1e-9, "avg");
	ASSERT_NEAR(table__get_double(t, 0, table__col(t, "med_ns")), 30.0, 1e-9, "med");
	ASSERT_NEAR(table__get_double(t, 0, table__col(t, "stddev_ns")), 288.9013672518702, 1e-6,
		    "stddev");
	ASSERT_NEAR(table__get_double(t, 0, table__col(t, "time_pct")), 1760 * 100.0 / 2300, 1e-9,
		    "time_pct");
	/* read: one call. */
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "count")), 1, "read count");
	ASSERT_NEAR(table__get_double(t, 1, table__col(t, "med_ns")), 500, 1e-9, "read med");
	ASSERT_NEAR(table__get_double(t, 1, table__col(t, "stddev_ns")), 0, 1e-9, "read stddev");
	/* write: only the last snapshot (3 calls, 30 ns). */
	ASSERT_EQ(table__get_u64(t, 2, table__col(t, "count")), 3, "write count");
	ASSERT_EQ(table__get_u64(t, 2, table__col(t, "total_ns")), 30, "write total");
	ASSERT_EQ(table__get_u64(t, 2, table__col(t, "min_ns")), 5, "write min");
	ASSERT_EQ(table__get_u64(t, 2, table__col(t, "max_ns")), 15, "write max");
	ASSERT_NEAR(table__get_double(t, 2, table__col(t, "avg_ns")), 10, 1e-9, "write avg");
	ASSERT_NEAR(table__get_double(t, 3, table__col(t, "time_pct")), 10 * 100.0 / 2300, 1e-9,
		    "syscall_999 time_pct");
cleanup:
	stats__free(s);
	unlink(path);
}

/*
 * BS_AGG_FINAL closes a key: its totals count, and a later snapshot of the same (pid, tid, nr)
 * -- a recycled tid, or the thread after an eviction -- counts from zero on top.
 */
static void test_osrt_sum_final(void)
{
	struct trace_writer *w;
	const struct table *t;
	struct stats *s = NULL;
	char path[128];
	int status;

	tmp_path(path, sizeof(path));
	w = open_trace(path, "osrt");
	if (!ASSERT_TRUE(w, "open"))
		return;
	put_agg(w, 10, 10, 35, 2, 20, 5, 15);			  /* superseded by the final */
	put_agg_flags(w, 10, 10, 35, 5, 50, 5, 20, BS_AGG_FINAL); /* the thread exited */
	put_agg(w, 10, 10, 35, 1, 2, 2, 2);			  /* tid recycled: superseded */
	put_agg(w, 10, 10, 35, 3, 9, 2, 4);
	put_agg_flags(w, 20, 20, 35, 1, 100, 100, 100, BS_AGG_FINAL); /* only a final */
	if (!ASSERT_EQ(close_trace(w), 0, "close"))
		goto cleanup;
	s = stats__collect(path, NULL, &status);
	if (!ASSERT_TRUE(s, "collect") || !ASSERT_EQ(status, EXIT_READ_OK, "status"))
		goto cleanup;
	t = stats__table(s, "osrt_sum");
	if (!ASSERT_TRUE(t, "osrt_sum") || !ASSERT_EQ(table__nrows(t), 1, "rows"))
		goto cleanup;
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "count")), 5 + 3 + 1, "count");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "total_ns")), 50 + 9 + 100, "total");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "min_ns")), 2, "min");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "max_ns")), 100, "max");
cleanup:
	stats__free(s);
	unlink(path);
}

/* What `stats --format json|csv` prints for the same trace. */
static void test_osrt_sum_formats(void)
{
	static const char json_head[] = "{\n  \"reports\": {\n    \"osrt_sum\": [\n      {\n";
	char path[128], *buf = NULL;
	size_t len = 0;
	FILE *f;
	int status;

	tmp_path(path, sizeof(path));
	if (!ASSERT_EQ(write_osrt_trace(path), 0, "write trace"))
		return;
	f = open_memstream(&buf, &len);
	status = stats__run(path, "osrt_sum", STATS_FORMAT_JSON, f);
	fclose(f);
	ASSERT_EQ(status, EXIT_READ_OK, "json status");
	ASSERT_TRUE(!strncmp(buf, json_head, strlen(json_head)), "json shape");
	ASSERT_TRUE(strstr(buf, "\"count\": 10,"), "json count is an integer");
	ASSERT_TRUE(strstr(buf, "\"med_ns\": 30.0,"), "json med");
	ASSERT_TRUE(strstr(buf, "\"name\": \"syscall_999\""), "json unknown syscall");
	ASSERT_TRUE(!strstr(buf, "sched_sum"), "json has only what -r asked");
	free(buf);

	buf = NULL;
	f = open_memstream(&buf, &len);
	status = stats__run(path, NULL, STATS_FORMAT_CSV, f);
	fclose(f);
	ASSERT_EQ(status, EXIT_READ_OK, "csv status");
	ASSERT_STREQ(buf,
		     "# osrt_sum\n"
		     "time_pct,total_ns,count,avg_ns,med_ns,min_ns,max_ns,stddev_ns,name\n"
		     "76.5,1760,10,176.0,30.0,10,1000,288.9,nanosleep\n"
		     "21.7,500,1,500.0,500.0,500,500,0.0,read\n"
		     "1.3,30,3,10.0,10.0,5,15,0.0,write\n"
		     "0.4,10,1,10.0,10.0,10,10,0.0,syscall_999\n",
		     "csv");
	free(buf);

	ASSERT_TRUE(!stats__collect(path, "osrt_sum,nope", &status), "unknown report fails");
	ASSERT_EQ(status, EXIT_READ_FAIL, "unknown report status");
	unlink(path);
}

static void put_offcpu(struct trace_writer *w, __u32 pid, __u32 tid, __u64 dur, __u64 runnable,
		       __u64 oncpu, __u32 state)
{
	struct bs_offcpu o;

	hdr(&o.h, BS_REC_OFFCPU, sizeof(o), pid, tid, 3000);
	o.dur = dur;
	o.runnable_ns = runnable;
	o.oncpu_ns = oncpu;
	o.state = state;
	trace_writer__append(w, &o.h);
}

static void test_sched_sum(void)
{
	struct trace_writer *w;
	const struct table *t;
	struct stats *s = NULL;
	struct bs_process p;
	struct bs_thread th;
	struct bs_comm cm;
	char path[128];
	int status;

	tmp_path(path, sizeof(path));
	w = open_trace(path, "sched");
	if (!ASSERT_TRUE(w, "open writer"))
		return;
	hdr(&p.h, BS_REC_PROCESS, sizeof(p), 20, 20, 1500);
	memcpy(p.comm, "trainer", 8);
	trace_writer__append(w, &p.h);
	hdr(&th.h, BS_REC_THREAD, sizeof(th), 20, 21, 1500);
	memcpy(th.name, "worker", 7);
	trace_writer__append(w, &th.h);
	put_offcpu(w, 20, 20, 1000, 300, 500, 1);
	put_offcpu(w, 20, 20, 2000, 2000, 100, 0);
	put_offcpu(w, 20, 21, 5000, 0, 50, 1);
	hdr(&cm.h, BS_REC_COMM, sizeof(cm), 20, 21, 4000);
	memcpy(cm.comm, "dataloader", 11);
	trace_writer__append(w, &cm.h);
	if (!ASSERT_EQ(close_trace(w), 0, "close"))
		goto cleanup;

	s = stats__collect(path, "sched_sum", &status);
	if (!ASSERT_TRUE(s, "collect") || !ASSERT_EQ(status, EXIT_READ_OK, "status"))
		goto cleanup;
	t = stats__table(s, "sched_sum");
	if (!ASSERT_TRUE(t, "sched_sum") || !ASSERT_EQ(table__nrows(t), 2, "rows"))
		goto cleanup;
	/* Sorted by off-CPU time: tid 21 (5000) before tid 20 (3000). */
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "tid")), 21, "row 0 tid");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "offcpu_ns")), 5000, "21 offcpu");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "blocked_ns")), 5000, "21 blocked");
	ASSERT_EQ(table__get_u64(t, 0, table__col(t, "preemptions")), 0, "21 preemptions");
	ASSERT_STREQ(table__get_str(t, 0, table__col(t, "thread_name")), "dataloader",
		     "21 renamed");
	ASSERT_STREQ(table__get_str(t, 0, table__col(t, "process")), "trainer", "21 process");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "pid")), 20, "row 1 pid");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "tid")), 20, "row 1 tid");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "oncpu_ns")), 600, "20 oncpu");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "offcpu_ns")), 3000, "20 offcpu");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "blocked_ns")), 700, "20 blocked");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "runnable_ns")), 2300, "20 runnable");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "switches")), 2, "20 switches");
	ASSERT_EQ(table__get_u64(t, 1, table__col(t, "preemptions")), 1, "20 preemptions");
	ASSERT_STREQ(table__get_str(t, 1, table__col(t, "thread_name")), "trainer", "20 name");
cleanup:
	stats__free(s);
	unlink(path);
}

static void test_model_names(void)
{
	struct {
		struct bs_string s;
		char text[24];
	} str;
	struct trace_model *m = trace_model__new();
	const char *before;
	struct bs_process p;
	struct bs_fork f;
	struct bs_exec x;
	struct bs_comm c;
	struct bs_thread th;

	if (!ASSERT_TRUE(m, "new"))
		return;
	hdr(&str.s.h, BS_REC_STRING, sizeof(str), 30, 30, 1);
	str.s.id = 1;
	str.s.len = 15;
	memcpy(str.text, "python train.py", 15);
	trace_model__observe(m, &str.s.h);
	hdr(&p.h, BS_REC_PROCESS, sizeof(p), 30, 30, 2);
	p.cmdline_id = 1;
	memcpy(p.comm, "python", 6);
	trace_model__observe(m, &p.h);
	ASSERT_STREQ(trace_model__process_name(m, 30), "python", "process comm");
	ASSERT_STREQ(trace_model__cmdline(m, 30), "python train.py", "cmdline");
	ASSERT_STREQ(trace_model__thread_name(m, 30), "python", "main thread");

	/* A new thread, then its rename: names given out earlier keep their text. */
	hdr(&f.h, BS_REC_FORK, sizeof(f), 30, 30, 3);
	f.child_pid = 30;
	f.child_tid = 31;
	memcpy(f.comm, "python", 6);
	trace_model__observe(m, &f.h);
	before = trace_model__thread_name(m, 31);
	ASSERT_STREQ(before, "python", "new thread");
	hdr(&c.h, BS_REC_COMM, sizeof(c), 30, 31, 4);
	memcpy(c.comm, "pt_autograd_0", 13);
	trace_model__observe(m, &c.h);
	ASSERT_STREQ(trace_model__thread_name(m, 31), "pt_autograd_0", "renamed thread");
	ASSERT_STREQ(before, "python", "old pointer keeps its text");
	ASSERT_STREQ(trace_model__process_name(m, 30), "python", "thread rename keeps process");

	/* A forked process inherits the image, then execs. */
	hdr(&f.h, BS_REC_FORK, sizeof(f), 30, 30, 5);
	f.child_pid = 40;
	f.child_tid = 40;
	memcpy(f.comm, "python", 6);
	trace_model__observe(m, &f.h);
	ASSERT_STREQ(trace_model__process_name(m, 40), "python", "forked process");
	ASSERT_STREQ(trace_model__cmdline(m, 40), "python train.py", "inherited cmdline");
	hdr(&x.h, BS_REC_EXEC, sizeof(x), 40, 40, 6);
	memcpy(x.comm, "nvidia-smi", 10);
	trace_model__observe(m, &x.h);
	ASSERT_STREQ(trace_model__process_name(m, 40), "nvidia-smi", "exec comm");
	ASSERT_STREQ(trace_model__thread_name(m, 40), "nvidia-smi", "exec thread");

	/* A full 16-byte comm has no NUL. */
	hdr(&th.h, BS_REC_THREAD, sizeof(th), 30, 32, 7);
	memcpy(th.name, "abcdefghijklmnop", 16);
	trace_model__observe(m, &th.h);
	ASSERT_STREQ(trace_model__thread_name(m, 32), "abcdefghijklmnop", "unterminated");

	/* A string longer than its record is ignored, not read past the end. */
	hdr(&str.s.h, BS_REC_STRING, sizeof(str.s) + 8, 30, 30, 8);
	str.s.id = 2;
	str.s.len = 9;
	trace_model__observe(m, &str.s.h);
	ASSERT_TRUE(!trace_model__string(m, 2), "oversized string ignored");
	ASSERT_TRUE(!trace_model__thread_name(m, 12345), "unknown tid");
	trace_model__free(m);
}

static void test_decoders(void)
{
	struct trace_model *m = trace_model__new();
	struct bs_syscall s;
	struct bs_offcpu o;
	struct bs_exit x;
	struct bs_loss l;
	struct event ev;

	hdr(&s.h, BS_REC_SYSCALL, sizeof(s), 1, 2, 100);
	s.nr = 35;
	s.dur = 1234;
	s.ret = -4;
	ASSERT_EQ(family__decode(&s.h, m, &ev), 1, "syscall decodes");
	ASSERT_STREQ(ev.kind, "syscall", "syscall kind");
	ASSERT_STREQ(ev.name, "nanosleep", "syscall name");
	ASSERT_EQ(ev.dur, 1234, "syscall dur");
	ASSERT_EQ(ev.args[1].s, -4, "syscall ret");
	s.nr = 4000;
	family__decode(&s.h, m, &ev);
	ASSERT_STREQ(ev.name, "syscall_4000", "unknown syscall");
	s.h.size = 40;
	ASSERT_EQ(family__decode(&s.h, m, &ev), -EINVAL, "short record refused");

	hdr(&o.h, BS_REC_OFFCPU, sizeof(o), 1, 2, 100);
	o.dur = 1000;
	o.runnable_ns = 250;
	o.state = 2;
	ASSERT_EQ(family__decode(&o.h, m, &ev), 1, "offcpu decodes");
	ASSERT_STREQ(ev.name, "blocked", "offcpu name");
	ASSERT_STREQ(ev.args[1].key, "blocked_ns", "blocked key");
	ASSERT_EQ(ev.args[1].u, 750, "blocked_ns");

	hdr(&x.h, BS_REC_EXIT, sizeof(x), 1, 2, 100);
	x.exit_code = (3 << 8) | 0;
	family__decode(&x.h, m, &ev);
	ASSERT_EQ(ev.args[0].u, 3, "exit code");
	x.exit_code = 9;
	family__decode(&x.h, m, &ev);
	ASSERT_EQ(ev.args[1].u, 9, "signal");

	hdr(&l.h, BS_REC_LOSS, sizeof(l), 0, 0, 100);
	l.cause = BS_LOSS_AGG_MAP;
	l.count = 7;
	ASSERT_EQ(family__decode(&l.h, m, &ev), 1, "loss decodes");
	ASSERT_STREQ(ev.name, "agg_map_full", "loss name");
	ASSERT_EQ(ev.args[0].u, 7, "loss count");

	/* Past EVENT_MAX_ARGS args are dropped; a full strbuf truncates. */
	event__init(&ev, &l.h, "x");
	for (int i = 0; i < EVENT_MAX_ARGS + 3; i++)
		event__arg_strn(&ev, "k", "0123456789abcdefghijklmnopqrstuvwxyz", 36);
	ASSERT_EQ(ev.nargs, EVENT_MAX_ARGS, "args capped");
	ASSERT_TRUE(ev.strbuf_used <= sizeof(ev.strbuf), "strbuf bounded");
	ASSERT_STREQ(ev.args[EVENT_MAX_ARGS - 1].str, "", "overflowing arg is empty");
	trace_model__free(m);
}

static void test_json_escape(void)
{
	static const char in[] = "q\"b\\s\n\x01\x1f\x7f é \xff\xed\xa0\x80 \xf0\x9f\x98\x80";
	char *buf = NULL;
	size_t len = 0;
	struct json j;
	FILE *f;

	f = open_memstream(&buf, &len);
	json__init(&j, f, 0);
	json__begin_object(&j);
	json__key(&j, "s");
	json__strn(&j, in, sizeof(in) - 1);
	json__kv_double(&j, "nan", NAN, 1);
	json__key(&j, "a");
	json__begin_array(&j);
	json__u64(&j, 1);
	json__s64(&j, -2);
	json__end_array(&j);
	json__end_object(&j);
	fclose(f);
	ASSERT_STREQ(buf,
		     "{\"s\":\"q\\\"b\\\\s\\n\\u0001\\u001f\\u007f é \\ufffd\\ufffd\\ufffd\\ufffd "
		     "\xf0\x9f\x98\x80\",\"nan\":null,\"a\":[1,-2]}",
		     "escaped");
	free(buf);
}

static void test_table_csv(void)
{
	enum { C_N, C_S, C_D, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_N] = { "n", "N", TABLE_U64 },
		[C_S] = { "s", "Text", TABLE_STR },
		[C_D] = { "d", "D", TABLE_DOUBLE, .precision = 2 },
	};
	struct table *t = table__new("t");
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	table__add_cols(t, cols, NCOLS);
	table__row(t);
	table__set_u64(t, C_N, 1);
	table__set_str(t, C_S, "plain");
	table__set_double(t, C_D, 1.005);
	table__row(t);
	table__set_u64(t, C_N, 22);
	table__set_str(t, C_S, "a,b");
	table__row(t);
	table__set_u64(t, C_N, 333);
	table__set_str(t, C_S, "say \"hi\"\nbye");
	ASSERT_EQ(table__set_u64(t, C_S, 1), -EINVAL, "wrong type refused");
	ASSERT_EQ(table__err(t), -EINVAL, "error sticks");

	f = open_memstream(&buf, &len);
	table__print_csv(t, f);
	fclose(f);
	ASSERT_STREQ(buf, "n,s,d\n1,plain,1.00\n22,\"a,b\",\n333,\"say \"\"hi\"\"\nbye\",\n",
		     "csv");
	free(buf);

	buf = NULL;
	f = open_memstream(&buf, &len);
	table__print(t, f);
	fclose(f);
	ASSERT_STREQ(buf,
		     "   N  Text             D\n"
		     " ---  ------------  ----\n"
		     "   1  plain         1.00\n"
		     "  22  a,b               \n"
		     " 333  say \"hi\"?bye      \n",
		     "human table");
	free(buf);

	/* The cells as the HTML report reads them: as the human table prints them. */
	char cell[32];

	ASSERT_STREQ(table__cell_text(t, 0, C_D, cell, sizeof(cell)), "1.00", "double's precision");
	ASSERT_STREQ(table__cell_text(t, 2, C_N, cell, sizeof(cell)), "333", "u64");
	ASSERT_STREQ(table__cell_text(t, 1, C_S, cell, sizeof(cell)), "a,b", "string");
	ASSERT_STREQ(table__cell_text(t, 1, C_D, cell, sizeof(cell)), "", "unset");
	ASSERT_STREQ(table__cell_text(t, 3, C_N, cell, sizeof(cell)), "", "past the rows");
	ASSERT_STREQ(table__col_title(t, C_S), "Text", "title");
	ASSERT_TRUE(!table__col_title(t, NCOLS), "past the columns");
	ASSERT_TRUE(table__col_numeric(t, C_N) && table__col_numeric(t, C_D) &&
			    !table__col_numeric(t, C_S),
		    "numeric columns");
	table__free(t);
}

static void test_truncated_and_corrupt(void)
{
	struct trace_writer *w;
	struct stats *s = NULL;
	char path[128], *data = NULL, *p;
	long size;
	int status, i, fd;
	FILE *f;

	/* Killed recorder: no footer; the complete chunks still count, exit status 0. */
	tmp_path(path, sizeof(path));
	w = open_trace(path, "osrt");
	if (!ASSERT_TRUE(w, "open"))
		return;
	for (i = 0; i < 3; i++)
		put_syscall(w, 1, 1, 35, 100);
	trace_writer__flush(w);
	for (i = 0; i < 2; i++)
		put_syscall(w, 1, 1, 35, 100);
	trace_writer__flush(w);
	put_syscall(w, 1, 1, 35, 100); /* never flushed: lost with the recorder */
	trace_writer__free(w);
	s = stats__collect(path, "osrt_sum", &status);
	if (!ASSERT_TRUE(s, "truncated collect"))
		goto cleanup;
	ASSERT_EQ(status, EXIT_READ_OK, "truncated status");
	ASSERT_EQ(table__get_u64(stats__table(s, "osrt_sum"), 0, 2), 5, "5 calls recovered");
	stats__free(s);
	s = NULL;

	/* Damage the first chunk: the second one is still read, but the exit status says 3. */
	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	data = malloc(size);
	if (fread(data, 1, size, f) != (size_t)size)
		size = 0;
	fclose(f);
	p = memmem(data, size, "BSCK", 4);
	if (!ASSERT_TRUE(p && p + 60 < data + size, "chunk magic"))
		goto cleanup;
	p[56] ^= 0xff;
	fd = open(path, O_WRONLY | O_TRUNC);
	if (write(fd, data, size) != size)
		unit_fail("rewrite failed");
	close(fd);
	s = stats__collect(path, "osrt_sum", &status);
	if (!ASSERT_TRUE(s, "corrupt collect"))
		goto cleanup;
	ASSERT_EQ(status, EXIT_READ_CORRUPT, "corrupt status");
	ASSERT_EQ(table__get_u64(stats__table(s, "osrt_sum"), 0, 2), 2, "second chunk read");
cleanup:
	stats__free(s);
	free(data);
	unlink(path);
}

static void test_samples(void)
{
	struct samples s = {};

	samples__add(&s, 1, 1);
	samples__add(&s, 3, 1);
	samples__add(&s, 2, 2);
	/* 1 2 2 3 */
	ASSERT_NEAR(samples__median(&s), 2, 1e-12, "median");
	ASSERT_NEAR(samples__mean(&s), 2, 1e-12, "mean");
	ASSERT_NEAR(samples__stddev(&s), 0.70710678118654752, 1e-12, "stddev");
	ASSERT_NEAR(samples__percentile(&s, 100), 3, 1e-12, "p100");
	ASSERT_NEAR(samples__percentile(&s, 0), 1, 1e-12, "p0");
	samples__add(&s, 10, 1);
	/* 1 2 2 3 10 */
	ASSERT_NEAR(samples__median(&s), 2, 1e-12, "odd median");
	samples__add(&s, 11, 1);
	/* 1 2 2 3 10 11 */
	ASSERT_NEAR(samples__median(&s), 2.5, 1e-12, "even median");
	samples__free(&s);
}

int main(void)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/bpfsight-unit-XXXXXX");
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_osrt_sum);
	RUN_TEST(test_osrt_sum_formats);
	RUN_TEST(test_osrt_sum_final);
	RUN_TEST(test_sched_sum);
	RUN_TEST(test_model_names);
	RUN_TEST(test_decoders);
	RUN_TEST(test_json_escape);
	RUN_TEST(test_table_csv);
	RUN_TEST(test_truncated_and_corrupt);
	RUN_TEST(test_samples);
	rmdir(tmp_dir);
	return UNIT_EXIT();
}
