// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `bpfsight stacks` over a job's processes: threads grouped, the odd ones out (stacks_job.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hmap.h"
#include "human.h"
#include "stack_call.h"
#include "stack_format.h"
#include "stacks_job.h"
#include "thread_name.h"
#include "thread_state.h"
#include "trace_model.h"

__u16 stacks_job__frames(const struct trace_stack *s, enum native_mode mode, struct bs_frame *out)
{
	__u16 k = 0, first_py = s->nframes;

	for (__u16 i = 0; i < s->nframes; i++)
		if (s->frames[i].kind == BS_FRAME_PYTHON && first_py == s->nframes)
			first_py = i;
	for (__u16 i = 0; i < s->nframes; i++) {
		int py = s->frames[i].kind == BS_FRAME_PYTHON;

		if (first_py == s->nframes || mode == NATIVE_ALL || py ||
		    (mode == NATIVE_LEAF && i < first_py))
			out[k++] = s->frames[i];
	}
	return k;
}

void stacks_job__print_frame(FILE *f, const struct bs_frame *fr, const struct trace_model *m)
{
	char buf[512];
	const char *func = stack_frame__func(fr, m, buf, sizeof(buf));
	const char *file = stack_frame__file(fr, m), *base = strrchr(file, '/');

	if (fr->kind == BS_FRAME_PYTHON)
		fprintf(f, "    %s (%s:%u)\n", func, file, fr->line);
	else if (fr->kind == BS_FRAME_NATIVE && fr->func_id)
		fprintf(f, "    %s (%s)\n", func, base ? base + 1 : file);
	else
		fprintf(f, "    %s\n", func);
}

const char *stacks_job__for(const struct snap_thread *th, char *buf, size_t len)
{
	__u64 ns = th->sampled ? 0 : th->task.off_cpu_ns;

	buf[0] = 0;
	if (ns >= 1000000000ull)
		snprintf(buf, len, " for %.1f s", ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, " for %.0f ms", ns / 1e6);
	return buf;
}

int stacks_job__rank(const struct snap *s)
{
	return s->env_rank >= 0 ? s->env_rank : s->env_local_rank;
}

/*
 * What tells threads doing the same thing apart: their Python frames and the call they are in,
 * or (none) their native functions.
 */
static struct hkey group_key(const struct trace_stack *st, const struct trace_model *m)
{
	char cbuf[96];
	const char *call = stack_call__in(st, m, cbuf, sizeof(cbuf));
	__u64 h = 0xcbf29ce484222325ull, n = 0;
	int py = 0;

	for (__u16 i = 0; i < st->nframes; i++)
		py |= st->frames[i].kind == BS_FRAME_PYTHON;
	for (__u16 i = 0; i < st->nframes; i++) {
		const struct bs_frame *f = &st->frames[i];
		__u64 w[3] = { f->func_id, f->file_id, f->line };

		if (py ? f->kind != BS_FRAME_PYTHON : f->kind == BS_FRAME_CUT)
			continue;
		for (int k = 0; k < 3; k++) {
			h ^= w[k];
			h *= 0x100000001b3ull;
		}
		n++;
	}
	for (const char *c = call; c && *c; c++) {
		h ^= (unsigned char)*c;
		h *= 0x100000001b3ull;
	}
	return (struct hkey){ h, n << 1 | py };
}

/* A thread of a process, as the grouping holds it. */
struct member {
	int proc, thread;
};

struct group {
	struct member *v;
	int n, cap;
	int nprocs; /* processes with a thread in it */
	int py;	    /* its threads have Python frames */
};

/* One job: the processes of S that share its launcher or rendezvous (indices into S). */
struct job {
	int *procs;
	int n;
};

static const struct snap_thread *th_of(const struct snap *s, const struct member *x)
{
	return &s[x->proc].threads[x->thread];
}

/* "rank 2 (pid 123)", or "pid 123" without a rank. */
static const char *proc_label(const struct snap *s, char *buf, size_t len)
{
	int r = stacks_job__rank(s);

	if (r >= 0)
		snprintf(buf, len, "rank %d (pid %d)", r, s->pid);
	else
		snprintf(buf, len, "pid %d", s->pid);
	return buf;
}

/*
 * A stack's frames: by default a thread with Python frames shows them alone (what it waits in
 * is said on its heading line), one without shows its native ones; --native shows all.
 */
static void print_stack(const struct trace_stack *st, const struct trace_model *m,
			enum native_mode mode, FILE *f)
{
	static struct bs_frame frames[BS_STACK_MAX_FRAMES + 2];
	__u16 n = stacks_job__frames(st, mode == NATIVE_LEAF ? NATIVE_NONE : mode, frames);

	for (__u16 k = 0; k < n; k++)
		stacks_job__print_frame(f, &frames[k], m);
	if (st->flags & BS_STACK_TRUNCATED)
		fprintf(f, "    [truncated]\n");
}

/* ", in ncclAllReduce" of a stack, "" when it is in no call a family knows. */
static const char *in_call(const struct trace_stack *st, const struct trace_model *m, char *buf,
			   size_t len)
{
	char cbuf[96];
	const char *c = stack_call__in(st, m, cbuf, sizeof(cbuf));

	snprintf(buf, len, "%s%s", c ? ", in " : "", c ? c : "");
	return buf;
}

/* "3 threads of ranks 0, 1, 3 (pids 10, 11, 13): sleeping in futex, in ncclAllReduce" */
/* Thread T's name: its Python one, else the kernel's (/proc), else "". */
static const char *thread_name(const struct snap *s, const struct snap_thread *t, char *buf,
			       size_t len)
{
	char path[64];
	FILE *c;

	if (t->name[0])
		return t->name;
	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", s->pid, t->task.tid);
	c = fopen(path, "re");
	if (c && fgets(buf, (int)len, c))
		buf[strcspn(buf, "\n")] = 0;
	if (c)
		fclose(c);
	return buf;
}

#define NAMES_SHOWN 6 /* threads named on a group's line; the rest counted */

/* The group's threads by name and id, as py-spy dump names each: "MainThread 29046, ...". */
static void print_names(const struct snap *s, const struct group *g, FILE *f)
{
	char name[64];

	fprintf(f, "    [");
	for (int k = 0; k < g->n && k < NAMES_SHOWN; k++) {
		const struct snap_thread *t = th_of(s, &g->v[k]);
		const char *nm = thread_name(&s[g->v[k].proc], t, name, sizeof(name));

		fprintf(f, "%s%s%stid %u", k ? ", " : "", nm, nm[0] ? " " : "", t->task.tid);
	}
	if (g->n > NAMES_SHOWN)
		fprintf(f, " and %d more", g->n - NAMES_SHOWN);
	fprintf(f, "]\n");
}

static void print_group(const struct snap *s, const struct group *g, const struct trace_model *m,
			const struct job *j, enum native_mode mode, FILE *f)
{
	const struct snap_thread *th = th_of(s, &g->v[0]);
	const struct trace_stack *st = trace_model__stack(m, th->stack_id);
	int ranked = 1, first = 1, last = -1;
	char buf[128], cbuf[128];

	for (int k = 0; k < g->n; k++)
		ranked &= stacks_job__rank(&s[g->v[k].proc]) >= 0;
	fprintf(f, "\n%d thread%s of %s", g->n, g->n == 1 ? "" : "s", ranked ? "ranks " : "pids ");
	for (int k = 0; ranked && k < g->n; k++)
		if (g->v[k].proc != last) {
			fprintf(f, "%s%d", first ? "" : ", ", stacks_job__rank(&s[g->v[k].proc]));
			first = 0;
			last = g->v[k].proc;
		}
	fprintf(f, "%s", ranked ? " (pids " : "");
	first = 1;
	last = -1;
	for (int k = 0; k < g->n; k++)
		if (g->v[k].proc != last) {
			fprintf(f, "%s%d", first ? "" : ", ", s[g->v[k].proc].pid);
			first = 0;
			last = g->v[k].proc;
		}
	fprintf(f, "%s: %s%s\n", ranked ? ")" : "",
		snap__state(&s[g->v[0].proc], th, buf, sizeof(buf)),
		in_call(st, m, cbuf, sizeof(cbuf)));
	print_names(s, g, f);
	print_stack(st, m, mode, f);
	/* Who is not doing it: the job's processes without a thread here. */
	for (int i = 0, said = 0; g->nprocs < j->n && i < j->n; i++) {
		int p = j->procs[i], in = 0;

		for (int k = 0; k < g->n && !in; k++)
			in = g->v[k].proc == p;
		if (!in)
			fprintf(f, "%s%s", said++ ? ", " : "    (not in it: ",
				proc_label(&s[p], buf, sizeof(buf)));
		if (said && i + 1 == j->n)
			fprintf(f, ")\n");
	}
}

static void print_odd(const struct snap *s, const struct member *x, const struct trace_model *m,
		      enum native_mode mode, FILE *f)
{
	const struct snap_thread *th = th_of(s, x);
	const struct snap *p = &s[x->proc];
	const struct trace_stack *st = trace_model__stack(m, th->stack_id);
	char label[64], state[128], since[32], cbuf[128];

	fprintf(f, "\n%s, thread %u \"%s\": %s%s%s%s\n", proc_label(p, label, sizeof(label)),
		th->task.tid, thread_name__pick(th->name, th->task.comm, p->cmdline, p->exe),
		snap__state(p, th, state, sizeof(state)), stacks_job__for(th, since, sizeof(since)),
		th->gil ? ", holds the GIL" : "", in_call(st, m, cbuf, sizeof(cbuf)));
	print_stack(st, m, mode, f);
}

/* A line of the folded thread pools: what they run and their state, and whose they are. */
struct fold {
	char what[384];
	int n;
	int procs[64]; /* indices into S, in the order seen */
	int nprocs;
};

/*
 * What a pool's threads run: their innermost named frame outside the C and C++ runtimes
 * (c10d::ProcessGroupGloo::runLoop, blas_thread_server), and their state.
 */
static void fold_key(const struct snap *s, const struct group *g, const struct trace_model *m,
		     char *buf, size_t len)
{
	const struct snap_thread *th = th_of(s, &g->v[0]);
	const struct trace_stack *st = trace_model__stack(m, th->stack_id);
	const struct bs_frame *pick = NULL;
	char fbuf[256], state[128];

	for (__u16 i = 0; st && i < st->nframes && !pick; i++) {
		const struct bs_frame *fr = &st->frames[i];
		const char *file = stack_frame__file(fr, m);

		if (fr->kind == BS_FRAME_NATIVE && fr->func_id && !strstr(file, "/libc.so") &&
		    !strstr(file, "/libpthread") && !strstr(file, "/libstdc++") &&
		    !strstr(file, "/ld-linux"))
			pick = fr;
	}
	for (__u16 i = 0; st && i < st->nframes && !pick; i++)
		if (st->frames[i].kind == BS_FRAME_NATIVE && st->frames[i].func_id)
			pick = &st->frames[i];
	snprintf(buf, len, "%s (%s): %s",
		 pick ? stack_frame__func(pick, m, fbuf, sizeof(fbuf)) : "[no name]",
		 pick ? human__base(stack_frame__file(pick, m)) : "?",
		 snap__state(&s[g->v[0].proc], th, state, sizeof(state)));
}

/* The pools of groups G (those without Python frames) as a line each, the largest first. */
static void print_folded(const struct snap *s, const struct group *g, int ng,
			 const struct trace_model *m, FILE *f)
{
	struct fold *v = calloc(ng ? ng : 1, sizeof(*v));
	char key[384];
	int nv = 0;

	for (int k = 0; v && k < ng; k++) {
		int i;

		if (g[k].py)
			continue;
		fold_key(s, &g[k], m, key, sizeof(key));
		for (i = 0; i < nv && strcmp(v[i].what, key); i++)
			;
		if (i == nv)
			snprintf(v[nv++].what, sizeof(v[0].what), "%s", key);
		v[i].n += g[k].n;
		for (int t = 0; t < g[k].n; t++) {
			int p = g[k].v[t].proc, seen = 0;

			for (int q = 0; q < v[i].nprocs && !seen; q++)
				seen = v[i].procs[q] == p;
			if (!seen && v[i].nprocs < 64)
				v[i].procs[v[i].nprocs++] = p;
		}
	}
	for (int done = 0; done < nv; done++) {
		int best = -1, ranked = 1;

		for (int i = 0; i < nv; i++)
			if (v[i].n && (best < 0 || v[i].n > v[best].n))
				best = i;
		if (best < 0)
			break;
		for (int q = 0; q < v[best].nprocs; q++)
			ranked &= stacks_job__rank(&s[v[best].procs[q]]) >= 0;
		/* In rank (else pid) order. */
		for (int q = 1; q < v[best].nprocs; q++)
			for (int r = q; r > 0; r--) {
				const struct snap *x = &s[v[best].procs[r - 1]],
						  *y = &s[v[best].procs[r]];
				int tmp;

				if ((ranked ? stacks_job__rank(x) - stacks_job__rank(y)
					    : x->pid - y->pid) <= 0)
					break;
				tmp = v[best].procs[r];
				v[best].procs[r] = v[best].procs[r - 1];
				v[best].procs[r - 1] = tmp;
			}
		fprintf(f, "    %3d  %s; %s ", v[best].n, v[best].what, ranked ? "ranks" : "pids");
		for (int q = 0; q < v[best].nprocs; q++)
			fprintf(f, "%s%d", q ? ", " : "",
				ranked ? stacks_job__rank(&s[v[best].procs[q]])
				       : s[v[best].procs[q]].pid);
		fprintf(f, "\n");
		v[best].n = 0;
	}
	free(v);
}

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->py != y->py)
		return y->py - x->py; /* the story first: what the job's Python code does */
	return x->n != y->n ? y->n - x->n : x->v[0].proc - y->v[0].proc;
}

/* The threads of job J's processes grouped: 0, or -ENOMEM. */
static int group_job(const struct snap *s, const struct job *j, const struct trace_model *m,
		     int active_only, struct group **out, int *nout, int *nthreads)
{
	struct hmap *idx = hmap__new(sizeof(int));
	struct group *g = NULL;
	int ng = 0, cap = 0;

	*nthreads = 0;
	for (int i = 0; idx && i < j->n; i++) {
		int p = j->procs[i];

		for (__u32 t = 0; t < s[p].n; t++) {
			const struct snap_thread *th = &s[p].threads[t];
			const struct trace_stack *st = trace_model__stack(m, th->stack_id);
			struct hkey key;
			struct group *gr;
			int *gi;

			if (!st || (active_only && !th->gil &&
				    thread_state__idle(th->task.state, snap__flags(&s[p], th))))
				continue;
			(*nthreads)++;
			key = group_key(st, m);
			gi = hmap__get(idx, key, 1);
			if (!gi)
				continue;
			if (!*gi) {
				if (ng == cap) {
					struct group *ng_ =
						realloc(g, (cap = cap ? cap * 2 : 16) * sizeof(*g));

					if (!ng_)
						goto fail;
					g = ng_;
				}
				memset(&g[ng], 0, sizeof(g[ng]));
				g[ng].py = key.b & 1;
				*gi = ++ng;
			}
			gr = &g[*gi - 1];
			if (gr->n == gr->cap) {
				struct member *v =
					realloc(gr->v, (gr->cap = gr->cap ? gr->cap * 2 : 4) *
							       sizeof(*gr->v));

				if (!v)
					goto fail;
				gr->v = v;
			}
			gr->nprocs += !gr->n || gr->v[gr->n - 1].proc != p;
			gr->v[gr->n++] = (struct member){ p, (int)t };
		}
	}
	hmap__free(idx);
	if (ng)
		qsort(g, ng, sizeof(*g), group_cmp);
	*out = g;
	*nout = ng;
	return idx ? 0 : -ENOMEM;
fail:
	for (int k = 0; k < ng; k++)
		free(g[k].v);
	free(g);
	hmap__free(idx);
	return -ENOMEM;
}

/*
 * One job's story: what most of its processes run (Python frames first), the odd ones out
 * right after, the thread pools without Python frames folded to a line each (unless
 * --native).
 */
/*
 * The job's pythons whose frames could not be read, each reason once with its pids: their
 * threads fall among those without Python frames, never in silence.
 */
static void print_unread(const struct snap *s, const struct job *j, FILE *f)
{
	for (int a = 0; a < j->n; a++) {
		const char *why = s[j->procs[a]].python_unread;
		int seen = 0, k = 0;

		for (int b = 0; b < a && why[0] && !seen; b++)
			seen = !strcmp(s[j->procs[b]].python_unread, why);
		if (!why[0] || seen)
			continue;
		for (int b = a; b < j->n; b++)
			if (!strcmp(s[j->procs[b]].python_unread, why))
				fprintf(f, "%s%d", k++ ? ", " : "pid ", s[j->procs[b]].pid);
		fprintf(f, ": %s\n", why);
	}
}

static const char *cmd_of(const struct snap *p)
{
	return p->cmdline[0] ? p->cmdline : p->exe;
}

/*
 * The job's processes, a line per command line: their pids, each with its rank or whose child
 * it is ("Processes 20993, 21118 (a child of 20993): python3 train.py"): a screen's first
 * lines say what runs, as py-spy dump's "Process N: CMD" does.
 */
static void print_procs(const struct snap *s, const struct job *j, FILE *f)
{
	for (int a = 0; a < j->n; a++) {
		const struct snap *p = &s[j->procs[a]];
		int seen = 0, k = 0, many = 0;

		for (int b = 0; b < a && !seen; b++)
			seen = !strcmp(cmd_of(&s[j->procs[b]]), cmd_of(p));
		if (seen)
			continue;
		for (int b = a; b < j->n; b++)
			many += !strcmp(cmd_of(&s[j->procs[b]]), cmd_of(p));
		fprintf(f, "Process%s ", many > 1 ? "es" : "");
		for (int b = a; b < j->n; b++) {
			const struct snap *q = &s[j->procs[b]];
			int r = stacks_job__rank(q), parent = 0;

			if (strcmp(cmd_of(q), cmd_of(p)))
				continue;
			for (int c = 0; c < j->n && !parent; c++)
				parent = s[j->procs[c]].pid == q->ppid;
			fprintf(f, "%s%d", k++ ? ", " : "", q->pid);
			if (r >= 0)
				fprintf(f, " (rank %d)", r);
			else if (parent)
				fprintf(f, " (a child of %d)", q->ppid);
		}
		fprintf(f, ": ");
		/* One line: a `python -c` program's newlines and tabs as spaces. */
		for (const char *c = cmd_of(p); *c && c - cmd_of(p) < 200; c++)
			fputc((unsigned char)*c < ' ' ? ' ' : *c, f);
		fprintf(f, "\n");
	}
}

static void print_job(const struct snap *s, const struct job *j, const struct trace_model *m,
		      enum native_mode mode, int active_only, int njobs, int first, FILE *f)
{
	struct group *g = NULL;
	int ng = 0, nthreads = 0, odd = 0, folded = 0;
	const struct snap *p0 = &s[j->procs[0]];

	if (group_job(s, j, m, active_only, &g, &ng, &nthreads))
		return;
	if (!first)
		fprintf(f, "\n");
	if (njobs > 1 || p0->job[0])
		fprintf(f, "Job %s:\n", p0->job[0] ? p0->job : "started by the same process");
	print_procs(s, j, f);
	fprintf(f,
		"%d process%s, %d threads, grouped by what they run (their Python frames, the "
		"call they are in)\n",
		j->n, j->n == 1 ? "" : "es", nthreads);
	print_unread(s, j, f);
	/* A group most processes have is what the job does; the others are the odd ones out. */
	for (int k = 0; k < ng; k++)
		if (g[k].py || mode == NATIVE_ALL) {
			if (g[k].nprocs * 2 > j->n)
				print_group(s, &g[k], m, j, mode, f);
			else
				odd += g[k].n;
		} else {
			folded += g[k].n;
		}
	if (odd)
		fprintf(f, "\nThe odd one%s out (what no more than half the processes run):\n",
			odd == 1 ? "" : "s");
	for (int k = 0; k < ng; k++)
		for (int i = 0;
		     (g[k].py || mode == NATIVE_ALL) && g[k].nprocs * 2 <= j->n && i < g[k].n; i++)
			print_odd(s, &g[k].v[i], m, mode, f);
	if (folded)
		fprintf(f,
			"\nThreads without Python frames (%d), by what they run (--native shows "
			"their stacks):\n",
			folded);
	if (folded)
		print_folded(s, g, ng, m, f);
	for (int k = 0; k < ng; k++)
		free(g[k].v);
	free(g);
}

/*
 * The snapshot's process that P descends from (itself when its parent is not in it): a
 * trainer's DataLoader workers are its job.
 */
static int root_of(const struct snap *s, int n, int p)
{
	for (int hops = 0; hops < n; hops++) {
		int q;

		for (q = 0; q < n && s[q].pid != s[p].ppid; q++)
			;
		if (q == n || q == p)
			break;
		p = q;
	}
	return p;
}

/*
 * Processes of the same job: the same rendezvous (MASTER_ADDR:PORT, a run id), else those
 * descending from processes started by the same parent (a launcher's ranks and their workers).
 */
static int same_job(const struct snap *s, int n, int a, int b)
{
	if (s[a].job[0] || s[b].job[0])
		return !strcmp(s[a].job, s[b].job);
	return s[root_of(s, n, a)].ppid == s[root_of(s, n, b)].ppid;
}

void stacks_job__print(const struct snap *s, int n, const struct trace_model *m,
		       enum native_mode mode, int active_only, FILE *f)
{
	struct job *jobs = calloc(n, sizeof(*jobs));
	int *procs = calloc(n, sizeof(*procs)), *jid = calloc(n, sizeof(*jid)), njobs = 0, at = 0;

	if (!jobs || !procs || !jid)
		goto out;
	/* Each process's job: that of the first one read before it of the same job. */
	for (int p = 0; p < n; p++) {
		int q;

		for (q = 0; q < p && !same_job(s, n, q, p); q++)
			;
		jid[p] = q < p ? jid[q] : njobs++;
	}
	for (int k = 0; k < njobs; k++) {
		jobs[k].procs = &procs[at];
		for (int p = 0; p < n; p++)
			if (jid[p] == k)
				procs[at + jobs[k].n++] = p;
		at += jobs[k].n;
		print_job(s, &jobs[k], m, mode, active_only, njobs, !k, f);
	}
out:
	free(jobs);
	free(procs);
	free(jid);
}

/* 1 when /proc/PID's environment names a rank, or it maps libnccl. */
static int is_rank(pid_t pid)
{
	char path[64], *buf = malloc(1 << 16);
	ssize_t n = 0, got;
	int fd, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = buf ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	while (fd >= 0 && n < (1 << 16) && (got = read(fd, buf + n, (1 << 16) - n)) > 0)
		n += got;
	if (fd >= 0)
		close(fd);
	for (ssize_t i = 0; i < n && !found; i += strnlen(buf + i, n - i) + 1)
		found = (n - i > 5 && !strncmp(buf + i, "RANK=", 5)) ||
			(n - i > 11 && !strncmp(buf + i, "LOCAL_RANK=", 11));
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = !found && buf ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	/* Chunk after chunk, the last bytes of one kept before the next: a name cut in two. */
	for (n = 0; fd >= 0 && !found && (got = read(fd, buf + n, (1 << 16) - 1 - n)) > 0;) {
		buf[n + got] = 0;
		found = strstr(buf, "/libnccl") != NULL;
		n += got;
		if (n > 16) {
			memmove(buf, buf + n - 16, 16);
			n = 16;
		}
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return found;
}

static int pid_cmp(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

int stacks_job__find(pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid() || !is_rank((pid_t)pid))
			continue;
		if (n < max)
			out[n] = (pid_t)pid;
		n++;
	}
	if (d)
		closedir(d);
	if (n)
		qsort(out, n < max ? n : max, sizeof(*out), pid_cmp);
	return n;
}
