// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `bpfsight top`'s counters (user/top/): records in, frames out, as the live view cuts them.
 * Hand-made records check the arithmetic case by case (polled GIL totals divided by the time
 * between polls, held, then stale; a call cut at the interval's start; the slowest syscall;
 * an exited thread shown once more; the bytes a process holds, kept from frame to frame). The
 * real H100 traces of ../shared/traces check it whole:
 * one frame over a recording equals what the test computes from the same records by itself
 * (calls, time in calls, GPU busy union per device, GIL waits per thread).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "unit.h"
#include "busy_union.h"
#include "cuda_records.h"
#include "family.h"
#include "gil_records.h"
#include "osrt_records.h"
#include "record_ctx.h"
#include "gpu_records.h"
#include "hmap.h"
#include "mem_records.h"
#include "top.h"
#include "top_family.h"
#include "top_screen.h"
#include "trace_reader.h"

#define MS 1000000ull
#define T0 (1000 * 1000 * MS) /* records' times start here */

static char traces[512]; /* ../shared/traces */

static __u64 families_with_top(void)
{
	__u64 m = 0;

	for_each_family(it)
		if (it.f->top)
			m |= 1ull << it.i;
	return m;
}

static void hdr(struct bs_hdr *h, __u16 type, __u32 size, __u32 pid, __u32 tid, __u64 ts)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	h->size = size;
	h->pid = pid;
	h->tid = tid;
	h->ts = ts;
}

/* PROCESS when TID is PID, else THREAD: a process or thread there at the start, named NAME. */
static void thread_rec(struct top *t, __u32 pid, __u32 tid, const char *name)
{
	struct bs_process p;
	struct bs_thread r;

	if (tid == pid) {
		hdr(&p.h, BS_REC_PROCESS, sizeof(p), pid, tid, T0);
		memset(p.comm, 0, sizeof(p.comm));
		strcpy(p.comm, name);
		top__record(t, &p.h);
		return;
	}
	hdr(&r.h, BS_REC_THREAD, sizeof(r), pid, tid, T0);
	memset(r.name, 0, sizeof(r.name));
	strcpy(r.name, name);
	top__record(t, &r.h);
}

static void gil_agg(struct top *t, __u32 tid, __u64 total_ns, __u64 ts)
{
	struct bs_gil_agg a;

	memset(&a, 0, sizeof(a));
	hdr(&a.h, BS_REC_GIL_AGG, sizeof(a), 100, tid, ts);
	a.v.wait_count = total_ns / MS;
	a.v.wait_total_ns = total_ns;
	top__record(t, &a.h);
}

static void cuda_call(struct top *t, __u32 tid, __u64 ts, __u64 dur, __u16 depth)
{
	struct bs_ucall c;

	memset(&c, 0, sizeof(c));
	hdr(&c.h, BS_REC_CUDA_CALL, sizeof(c), 100, tid, ts);
	c.dur = dur;
	c.depth = depth;
	top__record(t, &c.h);
}

static void syscall_rec(struct top *t, __u32 tid, __u32 nr, __u64 ts, __u64 dur)
{
	struct bs_syscall s;

	memset(&s, 0, sizeof(s));
	hdr(&s.h, BS_REC_SYSCALL, sizeof(s), 100, tid, ts);
	s.nr = nr;
	s.dur = dur;
	top__record(t, &s.h);
}

static const struct top_row *row_of(const struct top_frame *fr, __u32 pid, __u32 tid)
{
	for (size_t i = 0; i < fr->nrows; i++)
		if (fr->rows[i].pid == pid && fr->rows[i].tid == tid)
			return &fr->rows[i];
	return NULL;
}

static int col(struct top *t, const char *key)
{
	__u32 n;
	const struct top_col *c = top__columns(t, &n);

	for (__u32 i = 0; i < n; i++)
		if (!strcmp(c[i].c->key, key))
			return i;
	return -1;
}

/* The value of column KEY in the row of (PID, TID), -1 when there is no such row. */
static double val(struct top *t, const struct top_frame *fr, __u32 pid, __u32 tid, const char *key)
{
	const struct top_row *r = row_of(fr, pid, tid);

	return r && col(t, key) >= 0 ? r->val[col(t, key)] : -1;
}

static void test_gil_polled_held_then_stale(void)
{
	struct record_opts o = { .families = families_with_top() };
	struct top_frame fr = { 0 };
	struct top *t = top__new(&o);

	if (!ASSERT_TRUE(t, "top"))
		return;
	top__replay(t);
	thread_rec(t, 100, 100, "python3");
	thread_rec(t, 100, 101, "cpu-0");
	thread_rec(t, 100, 102, "cpu-1");
	/* The first poll: every wait since the start, over the second since then. */
	gil_agg(t, 101, 400 * MS, T0 + 1000 * MS);
	gil_agg(t, 102, 200 * MS, T0 + 1000 * MS);
	top__cut(t, T0 + 1500 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 101, "gil"), 40, 1e-9, "cpu-0, first poll");
	ASSERT_NEAR(val(t, &fr, 100, 102, "gil"), 20, 1e-9, "cpu-1, first poll");
	ASSERT_NEAR(val(t, &fr, 100, 0, "gil"), 60, 1e-9, "the process: its threads' sum");
	ASSERT_STREQ(row_of(&fr, 100, 101)->name, "cpu-0", "a thread's name");
	ASSERT_STREQ(row_of(&fr, 100, 0)->name, "python3", "the process's name");
	ASSERT_TRUE(fr.shown & (1u << col(t, "gil")), "GIL% shown");
	ASSERT_TRUE(!(fr.shown & (1u << col(t, "gpu"))), "GPU% hidden: nothing came");
	/* cpu-1 did not wait again: no snapshot, 0 from this poll on. */
	gil_agg(t, 101, 900 * MS, T0 + 2000 * MS);
	top__cut(t, T0 + 2500 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 101, "gil"), 50, 1e-9, "cpu-0, second poll");
	ASSERT_NEAR(val(t, &fr, 100, 102, "gil"), 0, 1e-9, "cpu-1, no snapshot");
	ASSERT_TRUE(row_of(&fr, 100, 102)->flags & TOP_ROW_IDLE, "cpu-1 idle");
	/* No poll since the last cut: the last value holds (a refresh faster than the polls). */
	top__cut(t, T0 + 2700 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 101, "gil"), 50, 1e-9, "cpu-0, held");
	/* None for 2.5 s: nothing changed, nobody waits. */
	top__cut(t, T0 + 5000 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 101, "gil"), 0, 1e-9, "cpu-0, stale");
	/* The next snapshot covers the time since the last poll that counted: 1 s in 4 s. */
	gil_agg(t, 101, 1900 * MS, T0 + 6000 * MS);
	top__cut(t, T0 + 6500 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 101, "gil"), 25, 1e-9, "cpu-0, after a quiet spell");
	/* A thread waits at most all the time (a wait begun before the poll is counted at its end). */
	gil_agg(t, 101, 3400 * MS, T0 + 7000 * MS);
	top__cut(t, T0 + 7100 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 101, "gil"), 100, 1e-9, "cpu-0, at most 100%");
	top_frame__free(&fr);
	top__free(t);
}

/* A replay's top with every family's columns, and process 100 "python3" with thread 101. */
static struct top *python_and_worker(void)
{
	static struct record_opts o;
	struct top *t;

	o.families = families_with_top();
	t = top__new(&o);
	if (!ASSERT_TRUE(t, "top"))
		return NULL;
	top__replay(t);
	thread_rec(t, 100, 100, "python3");
	thread_rec(t, 100, 101, "worker");
	return t;
}

static void test_calls_syscalls_exits(void)
{
	struct top_frame fr = { 0 };
	struct top *t = python_and_worker();
	struct bs_exit e;

	if (!t)
		return;
	cuda_call(t, 101, T0 + 100 * MS, 100 * MS, 0);
	cuda_call(t, 101, T0 + 120 * MS, 10 * MS, 1);  /* made by the library: not counted */
	syscall_rec(t, 101, 202, T0, 5 * MS);	       /* futex */
	syscall_rec(t, 101, 0, T0 + 10 * MS, 12 * MS); /* read */
	syscall_rec(t, 100, 202, T0, 7 * MS);
	top__cut(t, T0 + 1000 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 101, "cuda"), 1, 1e-9, "calls/s, depth 0 only");
	ASSERT_NEAR(val(t, &fr, 100, 101, "cuda-time"), 10, 1e-9, "time in calls");
	ASSERT_NEAR(val(t, &fr, 100, 101, "syscall"), 12 * MS, 0, "the slowest call");
	ASSERT_STREQ(row_of(&fr, 100, 101)->label[col(t, "syscall")], "read", "its name");
	ASSERT_NEAR(val(t, &fr, 100, 0, "syscall"), 12 * MS, 0, "the process: its slowest");
	/* A call seen once it returned, after the cut: its part after the cut counts. */
	cuda_call(t, 101, T0 + 900 * MS, 300 * MS, 0);
	cuda_call(t, 101, T0 + 1800 * MS, 100 * MS, 0);
	hdr(&e.h, BS_REC_EXIT, sizeof(e), 100, 101, T0 + 1900 * MS);
	e.exit_code = 0;
	e.group_dead = 0;
	top__record(t, &e.h);
	top__cut(t, T0 + 2000 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 101, "cuda-time"), 30, 1e-9, "a call's part in the interval");
	ASSERT_NEAR(val(t, &fr, 100, 101, "cuda"), 2, 1e-9, "calls/s");
	ASSERT_TRUE(row_of(&fr, 100, 101)->flags & TOP_ROW_EXITED, "exited: shown once more");
	top__cut(t, T0 + 3000 * MS, &fr);
	ASSERT_TRUE(!row_of(&fr, 100, 101), "then gone");
	ASSERT_TRUE(row_of(&fr, 100, 100) && row_of(&fr, 100, 0), "the rest stays");
	top_frame__free(&fr);
	top__free(t);
}

static void mem_alloc(struct top *t, __u32 tid, __s16 device, __u64 addr, __u64 bytes, int free,
		      __u64 allocated, __u64 reserved)
{
	struct bs_mem_alloc r;

	memset(&r, 0, sizeof(r));
	hdr(&r.h, BS_REC_MEM_ALLOC, sizeof(r), 100, tid, T0 + 10 * MS);
	r.addr = addr;
	r.bytes = bytes;
	r.allocated = allocated;
	r.reserved = reserved;
	r.device = device;
	r.flags = (free ? BS_MEM_FREE : 0) | (device == BS_MEM_DEV_CPU ? 0 : BS_MEM_TOTALS);
	top__record(t, &r.h);
}

static void test_mem_levels(void)
{
	struct top_frame fr = { 0 };
	struct top *t = python_and_worker();
	struct bs_mem_rss rss;
	struct bs_exec ex;
	struct bs_exit e;

	if (!t)
		return;
	mem_alloc(t, 101, BS_MEM_DEV_CPU, 0x1000, 3000, 0, 0, 0);
	mem_alloc(t, 101, BS_MEM_DEV_CPU, 0x2000, 5000, 0, 0, 0);
	mem_alloc(t, 100, BS_MEM_DEV_CPU, 0x1000, 0, 1, 0, 0); /* Delete: its size from its block */
	top__cut(t, T0 + 1000 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 0, "tensors"), 5000, 0, "the process's live CPU tensors");
	ASSERT_NEAR(val(t, &fr, 100, 101, "tensors"), 0, 0,
		    "a level is the process's, not a "
		    "thread's");
	ASSERT_TRUE(!(fr.shown & (1u << col(t, "gpu-mem"))), "no GPU record: GPU-MEM hidden");
	ASSERT_TRUE(!(fr.shown & (1u << col(t, "rss"))), "no RSS record: RES hidden");
	/* Two GPUs: the allocator's totals of each, summed. */
	mem_alloc(t, 101, 0, 0xa000, 1000, 0, 1000, 2048);
	mem_alloc(t, 101, 1, 0xb000, 300, 0, 300, 4096);
	mem_alloc(t, 101, 0, 0xc000, 24, 0, 1024, 2048);
	memset(&rss, 0, sizeof(rss));
	hdr(&rss.h, BS_REC_MEM_RSS, sizeof(rss), 100, 101, T0 + 1100 * MS);
	rss.rss = 7 << 20;
	top__record(t, &rss.h);
	top__cut(t, T0 + 2000 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 0, "gpu-mem"), 1324, 0, "GPU tensors: 1024 + 300");
	ASSERT_NEAR(val(t, &fr, 100, 0, "gpu-rsv"), 6144, 0, "reserved: 2048 + 4096");
	ASSERT_NEAR(val(t, &fr, 100, 0, "rss"), 7 << 20, 0, "RES");
	/* Nothing new: what it holds stays. */
	top__cut(t, T0 + 3000 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 0, "tensors"), 5000, 0, "held across frames");
	ASSERT_TRUE(!(row_of(&fr, 100, 0)->flags & TOP_ROW_IDLE), "a process holding memory");
	/* A new program in the process: what the old one held is not its. */
	memset(&ex, 0, sizeof(ex));
	hdr(&ex.h, BS_REC_EXEC, sizeof(ex), 100, 100, T0 + 3100 * MS);
	top__record(t, &ex.h);
	mem_alloc(t, 100, BS_MEM_DEV_CPU, 0x2000, 0, 1, 0, 0); /* the old program's block */
	top__cut(t, T0 + 4000 * MS, &fr);
	ASSERT_NEAR(val(t, &fr, 100, 0, "tensors"), 0, 0, "after exec");
	ASSERT_NEAR(val(t, &fr, 100, 0, "gpu-rsv"), 0, 0, "after exec: GPU");
	hdr(&e.h, BS_REC_EXIT, sizeof(e), 100, 100, T0 + 4100 * MS);
	e.exit_code = 0;
	e.group_dead = 1;
	top__record(t, &e.h);
	top__cut(t, T0 + 5000 * MS, &fr);
	top__cut(t, T0 + 6000 * MS, &fr);
	ASSERT_TRUE(!row_of(&fr, 100, 0), "the process gone after its exit");
	top_frame__free(&fr);
	top__free(t);
}

/* ---- the real traces: one frame over the whole recording ---- */

struct expect {
	__u64 first, clock;
	struct hmap *calls; /* {pid, tid} -> {count, time in calls} */
	struct hmap *gpu;   /* {pid, device} -> span list index */
	struct hmap *gil;   /* {pid, tid} -> {last total, last time} */
	__u64 gil_poll;	    /* the latest GIL_AGG's time */
	struct busy_span *spans;
	size_t nspans, cap;
	__u32 *span_pid, *span_dev;
};

struct pair {
	__u64 a, b;
};

static void expect_record(struct expect *x, const struct bs_hdr *h)
{
	struct pair *p;

	if (!x->first && h->ts)
		x->first = h->ts;
	if (h->ts > x->clock)
		x->clock = h->ts;
	if (h->type == BS_REC_CUDA_CALL && !((const struct bs_ucall *)h)->depth &&
	    (p = hmap__get(x->calls, (struct hkey){ h->pid, h->tid }, 1))) {
		__u64 end = h->ts + ((const struct bs_ucall *)h)->dur;

		p->a++;
		p->b += end > x->first ? end - (h->ts > x->first ? h->ts : x->first) : 0;
	} else if (h->type == BS_REC_GPU_KERNEL && x->nspans < x->cap) {
		const struct bs_gpu_kernel *k = (const void *)h;

		x->spans[x->nspans] = (struct busy_span){ h->ts, h->ts + k->dur };
		x->span_pid[x->nspans] = h->pid;
		x->span_dev[x->nspans++] = k->device;
	} else if (h->type == BS_REC_GIL_AGG &&
		   (p = hmap__get(x->gil, (struct hkey){ h->pid, h->tid }, 1))) {
		p->a = ((const struct bs_gil_agg *)h)->v.wait_total_ns;
		x->gil_poll = h->ts;
	}
}

static int by_start(const void *a, const void *b)
{
	const struct busy_span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The union of PID's kernels on every device, by sorting and merging (not busy_union.c). */
static __u64 gpu_union(struct expect *x, __u32 pid)
{
	struct busy_span *s = malloc((x->nspans + 1) * sizeof(*s));
	__u64 total = 0;

	for (__u32 dev = 0; dev < 16; dev++) {
		size_t n = 0;
		__u64 end = 0;

		for (size_t i = 0; i < x->nspans; i++)
			if (x->span_pid[i] == pid && x->span_dev[i] == dev)
				s[n++] = x->spans[i];
		qsort(s, n, sizeof(*s), by_start);
		for (size_t i = 0; i < n; i++) {
			__u64 from = s[i].start > end ? s[i].start : end;

			total += s[i].end > from ? s[i].end - from : 0;
			end = s[i].end > end ? s[i].end : end;
		}
	}
	free(s);
	return total;
}

/* Feed every record of NAME to top and to the test's own sums; cut one frame at the end. */
static int one_frame(const char *name, struct top **t, struct top_frame *fr, struct expect *x)
{
	static struct record_opts o;
	struct trace_reader *r;
	const struct bs_hdr *h;
	char path[1024], err[256];
	int e;

	snprintf(path, sizeof(path), "%s/%s", traces, name);
	if (access(path, R_OK)) {
		UNIT_SKIP("no %s in %.300s (BPFSIGHT_SHARED_TRACES)", name, traces);
		return -1;
	}
	r = trace_reader__open(path, err, sizeof(err), &e);
	o.families = families_with_top();
	*t = top__new(&o);
	x->calls = hmap__new(sizeof(struct pair));
	x->gil = hmap__new(sizeof(struct pair));
	x->cap = 1 << 20;
	x->spans = malloc(x->cap * sizeof(*x->spans));
	x->span_pid = malloc(x->cap * sizeof(__u32));
	x->span_dev = malloc(x->cap * sizeof(__u32));
	if (!ASSERT_TRUE(r && *t && x->calls && x->gil && x->spans && x->span_pid && x->span_dev,
			 err))
		return -1;
	top__replay(*t);
	while (trace_reader__next(r, &h) == 1) {
		top__record(*t, h);
		expect_record(x, h);
	}
	trace_reader__free(r);
	return top__cut(*t, x->clock, fr);
}

static void expect_free(struct expect *x)
{
	hmap__free(x->calls);
	hmap__free(x->gil);
	free(x->spans);
	free(x->span_pid);
	free(x->span_dev);
}

static void test_h100_calls_and_gpu_busy(void)
{
	struct top_frame fr = { 0 };
	struct expect x = { 0 };
	struct top *t = NULL;
	double span, want_gpu = 0;
	__u32 procs = 0, threads = 0;

	if (one_frame("job-attach-p.bst", &t, &fr, &x))
		goto out;
	span = x.clock - x.first;
	for (size_t i = 0; i < fr.nrows; i++) {
		const struct top_row *r = &fr.rows[i];
		struct pair *p = hmap__get(x.calls, (struct hkey){ r->pid, r->tid }, 0);
		double calls = p ? p->a : 0, in = p ? p->b : 0;

		if (!r->tid) {
			double u = gpu_union(&x, r->pid) * 100.0 / span;

			procs += u > 0;
			want_gpu += u;
			ASSERT_NEAR(r->val[col(t, "gpu")], u, 1e-6,
				    "GPU%: the union of its kernels");
			continue;
		}
		threads += calls > 0;
		ASSERT_NEAR(r->val[col(t, "cuda")], calls * 1e9 / span, 1e-6, "CUDA/s");
		ASSERT_NEAR(r->val[col(t, "cuda-time")], in * 100 / span, 1e-6, "CUDA%");
		ASSERT_TRUE(r->val[col(t, "gpu")] < 100, "no thread's GPU% was cut at 100");
	}
	ASSERT_TRUE(procs >= 1 && threads >= 2 && want_gpu > 1, "a process with kernels, callers");
out:
	top_frame__free(&fr);
	top__free(t);
	expect_free(&x);
}

static void test_h100_gil_waits_per_thread(void)
{
	struct top_frame fr = { 0 };
	struct expect x = { 0 };
	struct top *t = NULL;
	__u32 waited = 0;

	if (one_frame("gpt2-gil-bound.bst", &t, &fr, &x))
		goto out;
	for (size_t i = 0; i < fr.nrows; i++) {
		const struct top_row *r = &fr.rows[i];
		struct pair *p = hmap__get(x.gil, (struct hkey){ r->pid, r->tid }, 0);
		double want = p ? p->a * 100.0 / (x.gil_poll - x.first) : 0;

		if (!r->tid)
			continue;
		waited += want > 0;
		ASSERT_NEAR(r->val[col(t, "gil")], want > 100 ? 100 : want, 1e-6,
			    "GIL%: the thread's waits over the time to the last poll");
	}
	ASSERT_TRUE(waited >= 2, "threads that waited");
out:
	top_frame__free(&fr);
	top__free(t);
	expect_free(&x);
}

/* Frame FR as text WIDTH wide (threads shown): the line of thread TID into LINE. */
static void line_of(const struct top_frame *fr, int width, __u32 tid, char *line, size_t len)
{
	struct top_view v = { .threads = 1, .target = "pid 100", .interval_ns = 1000 * MS };
	char *text = NULL, id[16];
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	line[0] = 0;
	if (!f)
		return;
	top_screen__render(f, fr, &v, width, 0);
	fclose(f);
	snprintf(id, sizeof(id), "%7u  ", tid);
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		ASSERT_TRUE((int)strlen(l) <= width, "no line wider than the width");
		if (!strncmp(l, id, strlen(id)))
			snprintf(line, len, "%s", l);
	}
	free(text);
}

/*
 * NAME is as wide as the longest name where the width allows (issue 83: it was cut to 15 at
 * any width), and cut only where the line would not fit.
 */
static void test_names_widen_with_the_width(void)
{
	static const char name[] = "Thread-7 (_pin_memory_loop)";
	struct top_frame fr = { 0 };
	struct top *t = python_and_worker();
	char line[600];
	size_t i;

	if (!t)
		return;
	syscall_rec(t, 101, 0, T0 + 100 * MS, 5 * MS); /* the text column: SLOWEST SYSCALL */
	top__cut(t, T0 + 1000 * MS, &fr);
	for (i = 0; i < fr.nrows && !(fr.rows[i].tid == 101); i++)
		;
	if (!ASSERT_TRUE(i < fr.nrows, "the worker's row"))
		return;
	snprintf(fr.rows[i].name, sizeof(fr.rows[i].name), "%s", name); /* Python's name */
	line_of(&fr, 200, 101, line, sizeof(line));
	ASSERT_TRUE(strstr(line, "    101  Thread-7 (_pin_memory_loop) ") == line,
		    "wide: the whole name");
	line_of(&fr, 120, 101, line, sizeof(line));
	ASSERT_TRUE(strstr(line, name) != NULL, "120 columns: the whole name");
	line_of(&fr, 40, 101, line, sizeof(line));
	ASSERT_TRUE(!strstr(line, name) && strstr(line, "Thread-") != NULL,
		    "40 columns: the name cut to fit");
	top_frame__free(&fr);
	top__free(t);
}

int main(void)
{
	char self[400];
	const char *env = getenv("BPFSIGHT_SHARED_TRACES");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = 0;
	if (strrchr(self, '/'))
		*strrchr(self, '/') = 0;
	/* build/tests/test_top -> the checkout's ../shared/traces */
	snprintf(traces, sizeof(traces), "%s", env ? env : self);
	if (!env)
		strncat(traces, "/../../../shared/traces", sizeof(traces) - strlen(traces) - 1);
	RUN_TEST(test_gil_polled_held_then_stale);
	RUN_TEST(test_calls_syscalls_exits);
	RUN_TEST(test_mem_levels);
	RUN_TEST(test_names_widen_with_the_width);
	RUN_TEST(test_h100_calls_and_gpu_busy);
	RUN_TEST(test_h100_gil_waits_per_thread);
	return UNIT_EXIT();
}
