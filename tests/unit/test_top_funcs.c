// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's function view (user/top/top_funcs.c, top_fview.c): hand-made stacks and CPU samples in,
 * py-spy top's columns out, exactly: a sample counts in %Own for its innermost Python frame
 * (its innermost native one when it has no Python frame), in %Total once for every function on
 * its stack however often it recurses; by line and by function; the interval's shares and the
 * times since the start (r starts them over); the rows as the screen writes them.
 */
#include <stdlib.h>
#include <string.h>
#include "unit.h"
#include "cpu_records.h"
#include "family.h"
#include "record_ctx.h"
#include "stack_format.h"
#include "stack_records.h"
#include "top.h"
#include "top_screen.h"

#define MS 1000000ull
#define T0 (1000 * 1000 * MS)

enum {
	S_INNER_A = 1,
	S_INNER_B,
	S_OUTER,
	S_FILE,
	S_MEMCPY,
	S_LIBC,
	S_BACKWARD,
	S_TORCH,
	S_DUMPS,
	S_JSON
};
static const char *const strs[] = {
	[S_INNER_A] = "inner_a",
	[S_INNER_B] = "inner_b",
	[S_OUTER] = "outer",
	[S_FILE] = "/srv/job/job.py",
	[S_MEMCPY] = "memcpy",
	[S_LIBC] = "/lib/libc.so.6",
	[S_BACKWARD] = "backward",
	[S_TORCH] = "/opt/venv/lib/python3.11/site-packages/torch/autograd/__init__.py",
	[S_DUMPS] = "dumps",
	[S_JSON] = "/usr/lib/python3.11/json/__init__.py",
};

static void hdr(struct bs_hdr *h, __u16 type, __u32 size)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	h->size = size;
	h->pid = h->tid = 100;
	h->ts = T0;
}

static void string_rec(struct top *t, __u32 id, const char *s)
{
	struct {
		struct bs_string s;
		char text[96];
	} r;

	memset(&r, 0, sizeof(r));
	hdr(&r.s.h, BS_REC_STRING, sizeof(r.s) + ((strlen(s) + 7) & ~7u));
	r.s.id = id;
	r.s.len = strlen(s);
	memcpy(r.text, s, strlen(s));
	top__record(t, &r.s.h);
}

static struct bs_frame py_at(__u32 func, __u32 file, __u32 line)
{
	return (struct bs_frame){
		.func_id = func, .file_id = file, .line = line, .kind = BS_FRAME_PYTHON
	};
}

static struct bs_frame py(__u32 func, __u32 line)
{
	return py_at(func, S_FILE, line);
}

static struct bs_frame native(__u32 func, __u64 addr)
{
	return (struct bs_frame){
		.addr = addr, .func_id = func, .file_id = S_LIBC, .kind = BS_FRAME_NATIVE
	};
}

/* STACK record ID: N frames, innermost first. */
static void stack_rec(struct top *t, __u32 id, const struct bs_frame *f, __u16 n)
{
	struct {
		struct bs_stack s;
		struct bs_frame f[8];
	} r;

	memset(&r, 0, sizeof(r));
	hdr(&r.s.h, BS_REC_STACK, sizeof(r.s) + n * sizeof(*f));
	r.s.id = id;
	r.s.nframes = n;
	memcpy(r.f, f, n * sizeof(*f));
	top__record(t, &r.s.h);
}

static void samples(struct top *t, __u32 stack_id, int kernel, int n)
{
	struct bs_cpu_sample s;

	for (int i = 0; i < n; i++) {
		memset(&s, 0, sizeof(s));
		hdr(&s.h, BS_REC_CPU_SAMPLE, sizeof(s));
		s.stack_id = stack_id;
		s.flags = kernel ? BS_CPU_KERNEL : 0;
		top__record(t, &s.h);
	}
}

static const struct top_func *func(const struct top_frame *fr, int by, const char *text)
{
	for (size_t i = 0; i < fr->funcs[by].n; i++)
		if (!strcmp(fr->funcs[by].v[i].text, text))
			return &fr->funcs[by].v[i];
	return NULL;
}

/* Row TEXT's samples (own, total, own since the start, total since the start), or -1s. */
static void expect(const struct top_frame *fr, int by, const char *text, __u64 own, __u64 total,
		   __u64 own_all, __u64 total_all)
{
	const struct top_func *f = func(fr, by, text);
	char what[200];

	snprintf(what, sizeof(what), "%s: own, total, own and total since the start", text);
	if (!ASSERT_TRUE(f, text))
		return;
	ASSERT_TRUE(f->own == own && f->total == total && f->own_all == own_all &&
			    f->total_all == total_all,
		    what);
	if (f->own != own || f->total != total || f->own_all != own_all ||
	    f->total_all != total_all)
		fprintf(stderr, "    got %llu %llu %llu %llu\n", (unsigned long long)f->own,
			(unsigned long long)f->total, (unsigned long long)f->own_all,
			(unsigned long long)f->total_all);
}

static struct top *with_stacks(void)
{
	static struct record_opts o;
	struct top *t;

	for_each_family(it)
		if (family__samples(it.f))
			o.families |= 1ull << it.i;
	t = top__new(&o);
	if (!ASSERT_TRUE(t, "top"))
		return NULL;
	top__replay(t);
	top__set_sample_period(t, 10 * MS);
	top__want_functions(t, 1);
	for (__u32 i = 1; i < sizeof(strs) / sizeof(strs[0]); i++)
		string_rec(t, i, strs[i]);
	/* 1: inner_a <- outer, under native code; 2: inner_b <- outer (another line) */
	stack_rec(t, 1,
		  (struct bs_frame[]){ native(S_MEMCPY, 0x10), py(S_INNER_A, 10), py(S_OUTER, 20) },
		  3);
	stack_rec(t, 2, (struct bs_frame[]){ py(S_INNER_B, 15), py(S_OUTER, 21) }, 2);
	/* 3: inner_a recursing at the same line: one row, counted once in its total */
	stack_rec(t, 3,
		  (struct bs_frame[]){ py(S_INNER_A, 10), py(S_INNER_A, 10), py(S_OUTER, 20) }, 3);
	/* 4: no Python frame: memcpy, called from unnamed libc code (its module's row) */
	stack_rec(t, 4, (struct bs_frame[]){ native(S_MEMCPY, 0x10), native(0, 0x99) }, 2);
	/* 5: inner_a at another line */
	stack_rec(t, 5, (struct bs_frame[]){ py(S_INNER_A, 11), py(S_OUTER, 20) }, 2);
	return t;
}

static void test_own_total_by_line_and_function(void)
{
	struct top_frame fr = { 0 };
	struct top *t = with_stacks();
	const int L = TOP_FUNCS_BY_LINE, F = TOP_FUNCS_BY_FUNC;

	if (!t)
		return;
	samples(t, 1, 0, 3);
	samples(t, 2, 0, 1);
	samples(t, 3, 1, 2); /* taken in kernel code: the same Python frames */
	samples(t, 4, 0, 2);
	samples(t, 5, 0, 1);
	samples(t, 0, 0, 2); /* no stack read: in the shares' denominator only */
	ASSERT_EQ(top__cut(t, T0 + 1000 * MS, &fr), 0, "cut");
	ASSERT_TRUE(fr.sampled && fr.funcs_cut, "sampled, rows cut");
	ASSERT_EQ(fr.funcs[L].samples, 11, "the interval's samples");
	ASSERT_EQ(fr.funcs[L].nostack, 2, "without a stack");
	ASSERT_EQ(fr.funcs[L].period_ns, 10 * MS, "period");
	expect(&fr, L, "inner_a (job.py:10)", 5, 5, 5, 5);
	expect(&fr, L, "inner_a (job.py:11)", 1, 1, 1, 1);
	expect(&fr, L, "inner_b (job.py:15)", 1, 1, 1, 1);
	expect(&fr, L, "outer (job.py:20)", 0, 6, 0, 6);
	expect(&fr, L, "outer (job.py:21)", 0, 1, 0, 1);
	expect(&fr, L, "memcpy (libc.so.6)", 2, 2, 2, 2); /* stack 1's is under Python: not a row */
	expect(&fr, L, "[libc.so.6]", 0, 2, 0, 2);
	ASSERT_EQ(fr.funcs[L].n, 7, "rows by line");
	expect(&fr, F, "inner_a (job.py)", 6, 6, 6, 6);
	expect(&fr, F, "outer (job.py)", 0, 7, 0, 7);
	ASSERT_EQ(fr.funcs[F].n, 5, "rows by function");

	/* The next interval: its own shares, the times go on. */
	samples(t, 2, 0, 4);
	top__cut(t, T0 + 2000 * MS, &fr);
	ASSERT_EQ(fr.funcs[L].samples, 4, "the second interval's samples");
	ASSERT_EQ(fr.funcs[L].samples_all, 15, "since the start");
	expect(&fr, L, "inner_b (job.py:15)", 4, 4, 5, 5);
	expect(&fr, L, "inner_a (job.py:10)", 0, 0, 5, 5);

	/* r: the times start over. */
	top__reset_functions(t);
	samples(t, 5, 0, 1);
	top__cut(t, T0 + 3000 * MS, &fr);
	ASSERT_EQ(fr.funcs[L].samples_all, 1, "since r");
	expect(&fr, L, "inner_a (job.py:11)", 1, 1, 1, 1);
	ASSERT_TRUE(!func(&fr, L, "inner_b (job.py:15)"), "nothing since r: no row");
	top_frame__free(&fr);
	top__free(t);
}

static void test_rows_as_the_screen_writes_them(void)
{
	struct top_view v = { .functions = 1, .target = "pid 100", .interval_ns = 1000 * MS };
	struct top_frame fr = { 0 };
	struct top *t = with_stacks();
	char *text = NULL, *line;
	size_t len;
	FILE *f;

	if (!t)
		return;
	samples(t, 1, 0, 3);
	samples(t, 2, 0, 1);
	top__cut(t, T0 + 1000 * MS, &fr);
	samples(t, 2, 0, 3);
	samples(t, 3, 0, 1);
	top__cut(t, T0 + 2000 * MS, &fr);
	f = open_memstream(&text, &len);
	top_screen__render(f, &fr, &v, 80, 0);
	fclose(f);
	line = strtok(text, "\n");
	ASSERT_STREQ(line, "top - pid 100 - functions by line - sort %Own - every 1.0s - 0:00:00",
		     "title");
	ASSERT_STREQ(strtok(NULL, "\n"), "4 samples (4.0/s), 8 since the start, lost 0", "totals");
	ASSERT_STREQ(strtok(NULL, "\n"), "  %Own %Total  OwnTime TotalTime  Function (file:line)",
		     "headings");
	/* The interval's shares: inner_b 3 of 4, inner_a 1 (3 + 1 = 40 ms since the start). */
	ASSERT_STREQ(strtok(NULL, "\n"), "  75.0   75.0     40ms      40ms  inner_b (job.py:15)",
		     "inner_b");
	ASSERT_STREQ(strtok(NULL, "\n"), "  25.0   25.0     40ms      40ms  inner_a (job.py:10)",
		     "inner_a");
	ASSERT_STREQ(strtok(NULL, "\n"), "     -   75.0        -      40ms  outer (job.py:21)",
		     "outer's line 21: on the stack only");
	ASSERT_STREQ(strtok(NULL, "\n"), "     -   25.0        -      40ms  outer (job.py:20)",
		     "outer's line 20");
	ASSERT_TRUE(!strtok(NULL, "\n"), "no other row: none ran in the interval");
	free(text);
	/* By TotalTime since the start, by function: every row that ran since. */
	v.fsort = TOP_FSORT_TOTAL_TIME;
	v.by_func = 1;
	text = NULL;
	f = open_memstream(&text, &len);
	top_screen__render(f, &fr, &v, 80, 0);
	fclose(f);
	ASSERT_TRUE(strstr(text, "functions by function - sort TotalTime") &&
			    strstr(text, "     -    100        -      80ms  outer (job.py)\n"),
		    "by function, sorted by TotalTime");
	free(text);
	top_frame__free(&fr);
	top__free(t);
}

/*
 * A Python file is named as py-spy names it (issue 83): below its sys.path entry, so that
 * torch.autograd's __init__.py and json's are told apart (not both "__init__.py").
 */
static void test_files_named_below_their_sys_path_entry(void)
{
	struct top_frame fr = { 0 };
	struct top *t = with_stacks();
	static const char *const paths[][2] = {
		{ "/usr/lib/python3/dist-packages/torch/nn/modules/module.py",
		  "torch/nn/modules/module.py" },
		{ "/x/site-packages/pkg/vendor/site-packages/six.py", "six.py" }, /* the last */
		{ "/usr/lib64/python3.12/asyncio/events.py", "asyncio/events.py" },
		{ "/home/u/lib/python/notaversion.py", "notaversion.py" },
		{ "/srv/job/train.py", "train.py" },
		{ "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>" },
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		ASSERT_STREQ(stack_file__module(paths[i][0]), paths[i][1], paths[i][0]);
	if (!t)
		return;
	stack_rec(t, 6, (struct bs_frame[]){ py_at(S_BACKWARD, S_TORCH, 197), py(S_OUTER, 20) }, 2);
	stack_rec(t, 7, (struct bs_frame[]){ py_at(S_DUMPS, S_JSON, 231), py(S_OUTER, 21) }, 2);
	samples(t, 6, 0, 2);
	samples(t, 7, 0, 1);
	top__cut(t, T0 + 1000 * MS, &fr);
	expect(&fr, TOP_FUNCS_BY_LINE, "backward (torch/autograd/__init__.py:197)", 2, 2, 2, 2);
	expect(&fr, TOP_FUNCS_BY_LINE, "dumps (json/__init__.py:231)", 1, 1, 1, 1);
	expect(&fr, TOP_FUNCS_BY_FUNC, "backward (torch/autograd/__init__.py)", 2, 2, 2, 2);
	expect(&fr, TOP_FUNCS_BY_LINE, "outer (job.py:20)", 0, 2, 0, 2);
	top_frame__free(&fr);
	top__free(t);
}

int main(void)
{
	RUN_TEST(test_own_total_by_line_and_function);
	RUN_TEST(test_rows_as_the_screen_writes_them);
	RUN_TEST(test_files_named_below_their_sys_path_entry);
	return UNIT_EXIT();
}
