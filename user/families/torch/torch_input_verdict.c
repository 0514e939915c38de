// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * torch's rule for stats' verdict (verdict.h): a trainer bound by its input pipeline. Its
 * thread's off-CPU intervals that carry a stack (sched's, on by default for a job's threads)
 * inside the DataLoader's iterator (torch/utils/data/dataloader.py) are the time it waited
 * for its next batch, at the line of the job's own code that asked for it (its `for ... in
 * loader`). Its workers (the processes torch_roles.c found running the worker loop) are said
 * beside it: how much of their time they ran, and where they blocked.
 *
 * From a server (stats --from) the same sums come as one table (torch_input_from.c), by stack
 * and thread; the claims read rows either way (torch_input.h).
 *
 * With the ledger (ledger.h: a pass over a file with sched's timeline) the wait is its account
 * of the trainer's time inside the iterator: blocked, on a CPU there (unpickling a batch) and
 * ready to run there. Without it (a server's answers) what it counts is a lower bound: the
 * blocks of at least the stack threshold (1 ms) and the wake-up after each.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frame_sum.h"
#include "hmap.h"
#include "human.h"
#include "cpu_records.h"
#include "sched_records.h"
#include "stack_call.h"
#include "table.h"
#include "torch.h"
#include "torch_input.h"
#include "trace_model.h"
#include "ledger.h"
#include "verdict.h"

#define INPUT_SHARE  0.30	  /* of the trainer thread's time, waiting for batches */
#define INPUT_MIN_NS 100000000ull /* and at least this long */
#define LOADER_FILE  "/torch/utils/data/dataloader.py"

/* Off-CPU time by (pid << 32 | tid, frame): the frame is the model's, stable while it lives. */
struct wait_at {
	__u64 ns, count;
};

struct input_rule {
	struct hmap *input;	  /* {thread, own frame} -> wait_at: inside the DataLoader */
	struct hmap *blocked;	  /* {thread, worker site} -> wait_at: a worker's off-CPU stacks */
	struct hmap *samples;	  /* {thread, worker site} -> wait_at: a worker's CPU samples */
	const struct table *from; /* the server's sums (torch_input_waits), or NULL */
};

static void *input_rule__new(void)
{
	struct input_rule *st = calloc(1, sizeof(*st));

	if (st && (!(st->input = hmap__new(sizeof(struct wait_at))) ||
		   !(st->blocked = hmap__new(sizeof(struct wait_at))) ||
		   !(st->samples = hmap__new(sizeof(struct wait_at))))) {
		hmap__free(st->input);
		hmap__free(st->blocked);
		free(st);
		st = NULL;
	}
	return st;
}

static void input_rule__free(void *vst)
{
	struct input_rule *st = vst;

	if (st) {
		hmap__free(st->input);
		hmap__free(st->blocked);
		hmap__free(st->samples);
	}
	free(st);
}

/*
 * In the DataLoader iterator's __next__ (3.11+ names it _BaseDataLoaderIter.__next__): not
 * any frame of dataloader.py, since a worker's stack keeps the frames its trainer forked it
 * from (`__iter__`, the iterator's `__init__`).
 */
int torch_input__in_loader(const struct trace_stack *s, const struct trace_model *m)
{
	return torch_roles__in_frame(s, m, "__next__", LOADER_FILE);
}

/*
 * The frames outside the worker loop are its trainer's, kept from the fork: the site is the
 * innermost frame of the job's own code inside the loop (`__getitem__`, a decode it calls).
 */
const struct bs_frame torch_input__loop;

const struct bs_frame *torch_input__worker_site(const struct trace_stack *s,
						const struct trace_model *m)
{
	for (__u16 i = 0; s && i < s->nframes; i++) {
		const struct bs_frame *f = &s->frames[i];
		const char *func;

		if (f->kind != BS_FRAME_PYTHON)
			continue;
		func = trace_model__string(m, f->func_id);
		if (func && !strcmp(func, "_worker_loop"))
			return &torch_input__loop;
		if (f->file_id && !frame_sum__library_file(trace_model__string(m, f->file_id)))
			return f;
	}
	return NULL;
}

void torch_input__site(const struct bs_frame *f, const struct trace_model *m, char *buf, char *func)
{
	const char *fn, *file;

	if (f == &torch_input__loop) {
		snprintf(buf, INPUT_SITE_LEN,
			 "torch's worker loop (waiting for indices, or to hand a batch over)");
		func[0] = 0;
		return;
	}
	stack_call__frame(f, m, buf, INPUT_SITE_LEN);
	fn = trace_model__string(m, f->func_id);
	file = trace_model__string(m, f->file_id);
	snprintf(func, INPUT_FUNC_LEN, "%s@%s", fn ? fn : "?", file ? file : "?");
}

static void add_at(struct hmap *h, __u64 thread, const struct bs_frame *f, __u64 ns)
{
	struct wait_at *w = hmap__get(h, (struct hkey){ thread, (__u64)(uintptr_t)f }, 1);

	if (w) { /* out of memory: the claim undercounts, it never invents */
		w->ns += ns;
		w->count++;
	}
}

int torch_input__is_worker(const struct trace_model *m, __u32 pid, __u32 tid)
{
	return pid == tid && trace_model__process_role(m, pid);
}

static void input_rule__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_offcpu *o = (const void *)rec;
	struct input_rule *st = vst;
	const struct trace_stack *s;
	const struct bs_frame *own, *via;
	__u64 thread;

	if (rec->type == BS_REC_CPU_SAMPLE && rec->size >= sizeof(struct bs_cpu_sample))
		s = trace_model__stack(m, ((const struct bs_cpu_sample *)rec)->stack_id);
	else if (rec->type == BS_REC_OFFCPU)
		s = trace_model__event_stack(m, rec);
	else
		return;
	if (!s)
		return;
	thread = (__u64)rec->pid << 32 | rec->tid;
	if (torch_input__is_worker(m, rec->pid, rec->tid)) {
		if ((own = torch_input__worker_site(s, m)) && rec->type == BS_REC_CPU_SAMPLE)
			add_at(st->samples, thread, own, 1);
		else if (own && rec->size >= sizeof(*o))
			add_at(st->blocked, thread, own, o->dur);
		return;
	}
	if (rec->type == BS_REC_OFFCPU && rec->size >= sizeof(*o) && torch_input__in_loader(s, m) &&
	    (own = frame_sum__own_site(s, m, &via)))
		add_at(st->input, thread, own, o->dur);
}

/* The pass's sums as rows: each entry of the three maps, its frame's text. */
static struct input_row *rows_of_pass(const struct input_rule *st, const struct trace_model *m,
				      size_t *n)
{
	const struct hmap *maps[] = { [INPUT_WAIT] = st->input,
				      [INPUT_BLOCKED] = st->blocked,
				      [INPUT_SAMPLES] = st->samples };
	size_t cap = hmap__count(st->input) + hmap__count(st->blocked) + hmap__count(st->samples);
	struct input_row *rows = calloc(cap + 1, sizeof(*rows));
	const struct wait_at *w;
	struct hkey k;

	*n = 0;
	for (int what = 0; rows && what < 3; what++)
		for (size_t it = 0; (w = hmap__next(maps[what], &it, &k));) {
			struct input_row *r = &rows[(*n)++];

			r->thread = k.a;
			r->what = (enum input_what)what;
			torch_input__site((const void *)(uintptr_t)k.b, m, r->site, r->func);
			r->ns = w->ns;
			r->count = w->count;
		}
	return rows;
}

/* One thread's waits: their sum, and the site with the most of it. */
struct thread_waits {
	__u64 thread, ns, count, top_ns;
	const char *top;
};

/* The threads of ROWS' waits, summed: malloc'ed array of *N (NULL when out of memory). */
static struct thread_waits *by_thread(const struct input_row *rows, size_t nrows, size_t *n)
{
	struct thread_waits *t = calloc(nrows + 1, sizeof(*t));
	size_t i;

	*n = 0;
	for (size_t r = 0; t && r < nrows; r++) {
		const struct input_row *w = &rows[r];

		if (w->what != INPUT_WAIT)
			continue;
		for (i = 0; i < *n && t[i].thread != w->thread; i++)
			;
		if (i == *n)
			t[(*n)++].thread = w->thread;
		t[i].ns += w->ns;
		t[i].count += w->count;
		if (!t[i].top || w->ns > t[i].top_ns ||
		    (w->ns == t[i].top_ns && strcmp(w->site, t[i].top) < 0)) {
			t[i].top_ns = w->ns;
			t[i].top = w->site;
		}
	}
	return t;
}

/* A worker of TRAINER: a process of its DataLoader pool (torch_roles.c). */
static int worker_of(const struct trace_model *m, __u32 pid, __u32 trainer)
{
	__u32 owner = 0, n = 0;

	return trace_model__process_role(m, pid) && trace_model__pool(m, pid, &owner, &n) &&
	       owner == trainer;
}

/*
 * Of ROWS' WHAT for TRAINER's workers: the function with the most (its lines summed), as its
 * busiest line's text, *TOP of *ALL; NULL if none. Ties go to the first text in strcmp's
 * order, so that a pass and a server (their rows in any order) say the same.
 */
static const char *top_site(const struct input_row *rows, size_t nrows, enum input_what what,
			    const struct trace_model *m, __u32 trainer, __u64 *top, __u64 *all)
{
	struct site_sum {
		const char *func; /* the loop's own: "" */
		const char *site; /* its line with the most */
		__u64 n, fn;
	} *sums = calloc(nrows + 1, sizeof(*sums));
	const char *best = NULL, *func = NULL;
	size_t n = 0, i;

	*top = *all = 0;
	for (size_t r = 0; sums && r < nrows; r++) {
		const struct input_row *w = &rows[r];

		if (w->what != what || !worker_of(m, (__u32)(w->thread >> 32), trainer))
			continue;
		for (i = 0; i < n && strcmp(sums[i].func, w->func); i++)
			;
		if (i == n)
			sums[n++].func = w->func;
		sums[i].n += w->ns;
		if (!sums[i].site || w->ns > sums[i].fn ||
		    (w->ns == sums[i].fn && strcmp(w->site, sums[i].site) < 0)) {
			sums[i].fn = w->ns;
			sums[i].site = w->site;
		}
		*all += w->ns;
	}
	for (i = 0; i < n; i++)
		if (sums[i].n && (!best || sums[i].n > *top ||
				  (sums[i].n == *top && strcmp(sums[i].func, func) < 0))) {
			*top = sums[i].n;
			best = sums[i].site;
			func = sums[i].func;
		}
	free(sums);
	return best;
}

/* The trainer's workers: their main threads' time on and off a CPU (sched_sum; their feeder
 * threads idle by design), their top line on a CPU (with -t cpu) and where they blocked. */
static void say_workers(const struct input_row *rows, size_t nrows, struct verdict *v,
			__u32 trainer)
{
	const struct trace_model *m = verdict__model(v);
	const struct table *t = verdict__table(v, "sched_sum");
	const char *ran, *blocked_at;
	__u64 on = 0, off = 0, top, all, btop, ball;
	int pid_c, tid_c, on_c, off_c, workers = 0;
	char cpu[256] = "", where[256] = "", d1[32], d2[32];

	if (!t)
		return;
	pid_c = table__col(t, "pid");
	tid_c = table__col(t, "tid");
	on_c = table__col(t, "oncpu_ns");
	off_c = table__col(t, "offcpu_ns");
	for (int r = 0; r < table__nrows(t); r++) {
		__u32 pid = (__u32)table__get_u64(t, r, pid_c);

		if (pid != (__u32)table__get_u64(t, r, tid_c) || !worker_of(m, pid, trainer))
			continue;
		on += table__get_u64(t, r, on_c);
		off += table__get_u64(t, r, off_c);
		workers++;
	}
	if (!workers || !(on + off))
		return;
	if ((ran = top_site(rows, nrows, INPUT_SAMPLES, m, trainer, &top, &all)))
		snprintf(cpu, sizeof(cpu), "; on a CPU, %.0f%% of their samples at %.159s",
			 100.0 * top / all, ran);
	else
		snprintf(cpu, sizeof(cpu), " (their lines on a CPU: record -t cpu too)");
	if ((blocked_at = top_site(rows, nrows, INPUT_BLOCKED, m, trainer, &btop, &ball)))
		snprintf(where, sizeof(where), "; blocked most at %.159s, %s", blocked_at,
			 human__ns((double)btop, d1, sizeof(d1)));
	verdict__detail(v, (double)on / (on + off), "sched_sum",
			"its %d DataLoader workers ran on a CPU %s of their %s%s%s%s", workers,
			human__ns((double)on, d1, sizeof(d1)),
			human__ns((double)(on + off), d2, sizeof(d2)), cpu, where,
			(double)on / (on + off) >= 0.5
				? ": busy, more workers (num_workers) or less work "
				  "per sample would feed it faster"
				: "");
}

static void input_rule__claims(void *vst, struct verdict *v)
{
	struct input_rule *st = vst;
	const struct trace_model *m = verdict__model(v);
	size_t nrows = 0, n = 0;
	struct input_row *rows =
		st->from ? torch_input__rows_of(st->from, m, &nrows) : rows_of_pass(st, m, &nrows);
	struct thread_waits *t = rows ? by_thread(rows, nrows, &n) : NULL;

	const struct ledger *l = verdict__state(v, "ledger");

	for (size_t i = 0; t && i < n; i++) {
		__u32 pid = (__u32)(t[i].thread >> 32), tid = (__u32)t[i].thread;
		__u64 life = verdict__life(v, pid, tid);
		double share;
		char who[128], d1[32], d2[32];

		/*
		 * The ledger's account when it has one: also its time on a CPU inside the iterator
		 * (unpickling a batch), its waits too short for a stack, and its waits for a CPU
		 * there, which the trainer's own clock counts in the time its next() took.
		 */
		if (l && ledger__has_timeline(l) && ledger__time_in(l, pid, tid, LEDGER_INPUT))
			t[i].ns = ledger__time_in(l, pid, tid, LEDGER_INPUT);
		share = life ? (double)t[i].ns / life : 0;

		if (!life || share < 0.05)
			continue;
		verdict__thread_in(m, pid, tid, who, sizeof(who));
		verdict__claim(
			v, VERDICT_INPUT, share >= INPUT_SHARE && t[i].ns >= INPUT_MIN_NS, share,
			"offcpu_stacks",
			"the trainer, %s, waited for its next batch %s of its %s, at %s, in %llu "
			"waits in the DataLoader",
			who, human__ns((double)t[i].ns, d1, sizeof(d1)),
			human__ns((double)life, d2, sizeof(d2)), t[i].top ? t[i].top : "its loop",
			(unsigned long long)t[i].count);
		say_workers(rows, nrows, v, pid);
	}
	free(t);
	free(rows);
}

/* The server's sums (torch_input_from.c), kept until the claims (they need the model). */
static int input_rule__load(void *vst, const char *name, const struct table *t)
{
	struct input_rule *st = vst;

	(void)name;
	st->from = t;
	return 0;
}

const struct family_verdict torch_verdict = {
	.new = input_rule__new,
	.add = input_rule__add,
	.claims = input_rule__claims,
	.free = input_rule__free,
	.reads = "torch_input_waits,sched_sum",
	.load = input_rule__load,
};
