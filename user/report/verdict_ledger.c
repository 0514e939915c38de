// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The verdict's first lines from the ledger; see verdict_ledger.h. The rules are data: one
 * row per kind of entry says how it is named in the verdict, from which share of the critical
 * unit's time it holds (a bottleneck, '*'), and which of the families' claims explain it.
 */
#include <stdio.h>
#include <string.h>
#include "human.h"
#include "ledger.h"
#include "trace_model.h"
#include "verdict_ledger.h"

#define SHOWN_SHARE 0.05 /* an entry under this share of the unit's time is not a line */
#define MAX_ENTRIES 6	 /* lines of the ledger at most */
#define MAX_PLACES  4	 /* places named in the CPU line */

static const struct ledger_rule {
	enum verdict_kind verdict; /* its word in the headline, its label */
	double holds;		   /* a bottleneck from this share of the unit's time */
	enum verdict_kind explains[4], replaces[3]; /* VERDICT_KINDS ends each list */
} rules[LEDGER_KINDS] = {
#define NONE VERDICT_KINDS
	/* on a CPU: one line, the CODE row's (verdict_ledger.c sums the four) */
	[LEDGER_CODE] = { VERDICT_CPU,
			  0.50,
			  { VERDICT_LAUNCH, VERDICT_MFU, VERDICT_BLAS, NONE },
			  { VERDICT_LAUNCH, VERDICT_BLAS, NONE } },
	[LEDGER_INTERP] = { VERDICT_CPU, 0.50, { NONE }, { NONE } },
	[LEDGER_CPU] = { VERDICT_CPU, 0.50, { NONE }, { NONE } },
	[LEDGER_FAULT] = { VERDICT_FAULT, 0.10, { VERDICT_FAULT, NONE }, { NONE } },
	[LEDGER_RUNNABLE] = { VERDICT_NOCPU, 0.10, { NONE }, { NONE } },
	[LEDGER_GIL] = { VERDICT_GIL, 0.10, { VERDICT_GIL, NONE }, { NONE } },
	[LEDGER_COLLECTIVE] = { VERDICT_COLLECTIVE,
				0.20,
				{ VERDICT_STRAGGLER, VERDICT_HANG, NONE },
				{ VERDICT_HANG, VERDICT_STRAGGLER, NONE } },
	[LEDGER_GPU_SYNC] = { VERDICT_GPU,
			      0.30,
			      { VERDICT_GPU, VERDICT_MFU, NONE },
			      { VERDICT_GPU, NONE } },
	[LEDGER_API] = { VERDICT_CALLS,
			 0.30,
			 { VERDICT_LAUNCH, VERDICT_BLAS, NONE },
			 { VERDICT_LAUNCH, VERDICT_BLAS, NONE } },
	[LEDGER_INPUT] = { VERDICT_INPUT, 0.20, { VERDICT_INPUT, NONE }, { VERDICT_INPUT, NONE } },
	[LEDGER_LOCK] = { VERDICT_LOCK, 0.20, { NONE }, { NONE } },
	[LEDGER_CHILD] = { VERDICT_CHILD, 0.20, { VERDICT_SYSCALL, NONE }, { NONE } },
	[LEDGER_SLEEP] = { VERDICT_SLEEP, 0.50, { NONE }, { NONE } },
	[LEDGER_IO] = { VERDICT_IO, 0.30, { VERDICT_SYSCALL, NONE }, { NONE } },
	[LEDGER_SYSCALL] = { VERDICT_SYSCALL, 0.20, { VERDICT_SYSCALL, NONE }, { NONE } },
	[LEDGER_IDLE] = { VERDICT_IDLE, 2, { NONE }, { NONE } }, /* never a bottleneck */
	[LEDGER_BLOCKED] = { VERDICT_OFFCPU, 0.50, { NONE }, { NONE } },
#undef NONE
};

/* Where the lines go: the verdict's claims, or top's ledger view (text). */
struct lsink {
	void (*line)(void *arg, enum verdict_kind k, int lk, int holds, double share,
		     const char *text);
	void *arg;
	const struct trace_model *m;
};

static int listed(const enum verdict_kind *l, enum verdict_kind k)
{
	for (; *l != VERDICT_KINDS; l++)
		if (*l == k)
			return 1;
	return 0;
}

int verdict_ledger__explains(int lk, enum verdict_kind k)
{
	return lk >= 0 && lk < LEDGER_KINDS && listed(rules[lk].explains, k);
}

int verdict_ledger__supersedes(enum verdict_kind k)
{
	/* a thread's time on a CPU, off it, in system calls: the ledger accounts all of it */
	return k == VERDICT_CPU || k == VERDICT_OFFCPU || k == VERDICT_SYSCALL;
}

int verdict_ledger__replaces(int lk, enum verdict_kind k)
{
	return lk >= 0 && lk < LEDGER_KINDS && listed(rules[lk].replaces, k);
}

static struct ledger *ledger_of(struct verdict *v)
{
	struct ledger *l = verdict__state(v, "ledger");

	if (!l || ledger__build(l, verdict__model(v)) || !ledger__has_timeline(l))
		return NULL;
	return l;
}

void verdict_ledger__focus(struct verdict *v)
{
	const struct ledger_entry *e;
	struct ledger *l = ledger_of(v);
	struct ledger_unit u;
	size_t n;

	if (l && !ledger__critical(l, &u, &e, &n))
		verdict__set_unit(v, u.pid, u.tid);
}

static int on_cpu(enum ledger_kind k)
{
	return k == LEDGER_CODE || k == LEDGER_INTERP || k == LEDGER_CPU;
}

/* "`hot` (job.py" of "`hot` (job.py:5)": a place's function, lines apart. */
static size_t func_part(const char *where)
{
	const char *colon = strrchr(where, ':');

	return colon && colon[1] >= '0' && colon[1] <= '9' ? (size_t)(colon - where)
							   : strlen(where);
}

struct place {
	const char *where;
	size_t len;
	__u64 ns;
	const char *native; /* its largest native code, and that code's time */
	__u64 native_ns;
	char lines[48];
};

/* WHERE's line number added to P's list, once ("5, 6"). */
static void add_line(struct place *p, const char *where)
{
	const char *line = where + func_part(where);
	size_t n = strlen(p->lines), len;
	char num[16];

	if (*line != ':')
		return;
	len = strcspn(line + 1, ")");
	snprintf(num, sizeof(num), "%.*s", (int)len, line + 1);
	for (const char *s = p->lines; (s = strstr(s, num)); s += len)
		if ((s == p->lines || s[-1] == ' ') && (!s[len] || s[len] == ','))
			return;
	if (n + len + 3 > sizeof(p->lines))
		return;
	snprintf(p->lines + n, sizeof(p->lines) - n, "%s%s", n ? ", " : "", num);
}

static int ready(enum ledger_kind k)
{
	return k == LEDGER_RUNNABLE;
}

/* The groups of a line: on a CPU, ready to run, or the same kind of wait for the same what. */
static int group_of(enum ledger_kind k)
{
	return on_cpu(k) ? LEDGER_CODE : k;
}

static int same_group(const struct ledger_entry *e, const struct ledger_entry *of)
{
	return group_of(e->kind) == group_of(of->kind) &&
	       (on_cpu(e->kind) || ready(e->kind) || !strcmp(e->what, of->what));
}

/*
 * One line for the entries of a group (on a CPU: CODE, INTERP, CPU; ready to run without a
 * CPU), their time summed and their places listed (a place is the job's function, its lines
 * together; the interpreter's own work a place of its own), the largest first. Into TEXT after
 * its first USED bytes; *ON the group's time, *OWN its time the job's own threads had the CPUs.
 */
static size_t places(const struct ledger_unit *u, const struct ledger_entry *e, size_t n,
		     int (*member)(const struct ledger_entry *, const struct ledger_entry *),
		     const struct ledger_entry *of, char *text, size_t len, size_t used, __u64 *on,
		     __u64 *own)
{
	struct place p[64];
	size_t np = 0, said = 0;

	*on = *own = 0;
	for (size_t i = 0; i < n; i++) {
		const char *where =
			*e[i].where && e[i].kind != LEDGER_INTERP ? e[i].where : e[i].what;
		size_t k, flen = func_part(where);

		if (!member(&e[i], of))
			continue;
		*on += e[i].ns;
		*own += e[i].own_ns;
		for (k = 0; k < np; k++)
			if (p[k].len == flen && !strncmp(p[k].where, where, flen))
				break;
		if (k == np) {
			if (np == sizeof(p) / sizeof(p[0]))
				continue;
			memset(&p[np], 0, sizeof(p[0]));
			p[np].where = where;
			p[np++].len = flen;
		}
		p[k].ns += e[i].ns;
		add_line(&p[k], where);
		if (e[i].kind == LEDGER_CODE && strcmp(e[i].what, where) &&
		    (e[i].what[0] == '`' || e[i].what[0] == '[') && e[i].ns > p[k].native_ns) {
			p[k].native = e[i].what;
			p[k].native_ns = e[i].ns;
		}
	}
	for (size_t i = 1; i < np; i++) /* the largest first */
		for (size_t k = i; k > 0 && p[k].ns > p[k - 1].ns; k--) {
			struct place t = p[k];

			p[k] = p[k - 1];
			p[k - 1] = t;
		}
	for (size_t i = 0; i < np && said < MAX_PLACES && used < len; i++) {
		if (!p[i].len || p[i].where[0] == '[' ||
		    (double)p[i].ns < SHOWN_SHARE / 2 * (double)u->total_ns)
			continue;
		used += (size_t)snprintf(text + used, len - used, "%s %.*s%s%s%s %.1f%%",
					 said++ ? "," : ":", (int)p[i].len, p[i].where,
					 p[i].lines[0] ? ":" : "", p[i].lines,
					 p[i].where[p[i].len] ? ")" : "",
					 100.0 * (double)p[i].ns / (double)u->total_ns);
		if (p[i].native && p[i].native_ns * 10 >= p[i].ns * 3 && used < len)
			used += (size_t)snprintf(
				text + used, len - used, " (in %s %.1f%%)", p[i].native,
				100.0 * (double)p[i].native_ns / (double)u->total_ns);
	}
	return used < len ? used : len - 1;
}

/* The CPU line: the unit's time on a CPU, by its code's places (the job's functions). */
static void cpu_claim(const struct lsink *v, const char *who, const char *whose,
		      const struct ledger_unit *u, const struct ledger_entry *e, size_t n)
{
	char text[640], d1[32], d2[32];
	__u64 on, own, sum = 0;
	size_t used;
	double share;

	for (size_t i = 0; i < n; i++)
		sum += on_cpu(e[i].kind) ? e[i].ns : 0;
	used = (size_t)snprintf(text, sizeof(text), "%s ran on a CPU %s of %s %s", who,
				human__ns((double)sum, d1, sizeof(d1)), whose,
				human__ns((double)u->total_ns, d2, sizeof(d2)));
	places(u, e, n, same_group, &(struct ledger_entry){ .kind = LEDGER_CODE }, text,
	       sizeof(text), used, &on, &own);
	share = (double)on / (double)u->total_ns;
	v->line(v->arg, rules[LEDGER_CODE].verdict, LEDGER_CODE, share >= rules[LEDGER_CODE].holds,
		share, text);
}

/* The ready-to-run line: where the unit waited for a CPU, and who had the CPUs then. */
static void ready_claim(const struct lsink *v, const char *who, const struct ledger_unit *u,
			const struct ledger_entry *e, size_t n)
{
	char text[640], d1[32], d2[32];
	__u64 ns = 0, own;
	size_t used;
	double share;

	for (size_t i = 0; i < n; i++)
		ns += ready(e[i].kind) ? e[i].ns : 0;
	used = (size_t)snprintf(
		text, sizeof(text), "%s %s ready to run but had no CPU %s of %s %s", who,
		u->nthreads > 1 ? "were" : "was", human__ns((double)ns, d1, sizeof(d1)),
		u->nthreads > 1 ? "their" : "its", human__ns((double)u->total_ns, d2, sizeof(d2)));
	used = places(u, e, n, same_group, &(struct ledger_entry){ .kind = LEDGER_RUNNABLE }, text,
		      sizeof(text), used, &ns, &own);
	if (own * 2 >= ns && u->job_threads > 1)
		snprintf(text + used, sizeof(text) - used,
			 "; the job's own threads had the CPUs (%u of its threads wanted its %u "
			 "CPU%s)",
			 u->job_threads, u->cpus, u->cpus == 1 ? "" : "s");
	else
		snprintf(text + used, sizeof(text) - used,
			 "; other processes had the CPUs %.0f%% of it (the job's %u CPU%s)",
			 100.0 * (double)(ns - own) / (double)ns, u->cpus, u->cpus == 1 ? "" : "s");
	share = (double)ns / (double)u->total_ns;
	v->line(v->arg, rules[LEDGER_RUNNABLE].verdict, LEDGER_RUNNABLE,
		share >= rules[LEDGER_RUNNABLE].holds, share, text);
}

/* "w2 (tid 4791)": a thread in few words. */
static const char *short_thread(const struct trace_model *m, __u32 tid, char *buf, size_t len)
{
	const char *name = trace_model__thread_name(m, tid);

	snprintf(buf, len, "%s (tid %u)", name && *name ? name : "thread", tid);
	return buf;
}

/*
 * A wait's line: the entries of E's kind and what (at one place, or several listed), its waker
 * (a lock's releaser and where it was), its time on a CPU when it had some.
 */
static void entry_claim(const struct lsink *v, const char *who, const char *whose,
			const struct ledger_unit *u, const struct ledger_entry *all, size_t n,
			const struct ledger_entry *e)
{
	char text[768], what[400], d1[32], d2[32], d3[32], w[96];
	__u64 ns = 0, oncpu = 0, own;
	size_t used, places_n = 0;
	struct ledger_entry one = *e;
	enum ledger_kind lk;
	double share;

	for (size_t i = 0; i < n; i++)
		if (same_group(&all[i], e)) {
			ns += all[i].ns;
			oncpu += all[i].oncpu_ns;
			places_n++;
		}
	if (places_n > 1)
		one.where = ""; /* the places listed after its time */
	share = (double)ns / (double)u->total_ns;
	used = (size_t)snprintf(text, sizeof(text), "%s %s %s of %s %s", who,
				ledger__entry_text(&one, u->nthreads > 1, what, sizeof(what)),
				human__ns((double)ns, d1, sizeof(d1)), whose,
				human__ns((double)u->total_ns, d2, sizeof(d2)));
	if (places_n > 1)
		used = places(u, all, n, same_group, e, text, sizeof(text), used, &ns, &own);
	if ((e->kind == LEDGER_LOCK || e->kind == LEDGER_BLOCKED) && e->waker) {
		snprintf(text + used, sizeof(text) - used, "; it was released most by %s%s%s",
			 short_thread(v->m, e->waker, w, sizeof(w)),
			 e->waker_where && *e->waker_where ? ", at " : "",
			 e->waker_where ? e->waker_where : "");
	} else if (oncpu * 10 >= ns && e->kind != LEDGER_GIL) {
		snprintf(text + used, sizeof(text) - used, " (%s of it on a CPU)",
			 human__ns((double)oncpu, d3, sizeof(d3)));
	}
	/* waiting by design (a join, a pool's idle worker): said as such, never a bottleneck */
	lk = e->idle ? LEDGER_IDLE : e->kind;
	v->line(v->arg, rules[lk].verdict, (int)lk, share >= rules[lk].holds, share, text);
}

/* The critical unit's lines of ledger L (named by M) into S: the verdict's, or top's. */
static void lines(const struct ledger *l, const struct lsink *v)
{
	const struct ledger_entry *e;
	struct ledger_unit u;
	char who[200], tname[160];
	const char *whose;
	size_t n, ng = 0;
	struct group {
		const struct ledger_entry *first; /* the group's largest entry */
		__u64 ns;
	} g[64];

	if (ledger__critical(l, &u, &e, &n) || !u.total_ns)
		return;
	if (u.nthreads > 1) {
		snprintf(who, sizeof(who), "%s (%u threads of pid %u)", u.name, u.nthreads, u.pid);
		whose = "their";
	} else {
		snprintf(who, sizeof(who), "%s",
			 verdict__thread_in(v->m, u.pid, u.tid, tname, sizeof(tname)));
		whose = "its";
	}
	for (size_t i = 0; i < n; i++) { /* the groups, each its time summed */
		size_t k;

		for (k = 0; k < ng && !same_group(&e[i], g[k].first); k++)
			;
		if (k == ng) {
			if (ng == sizeof(g) / sizeof(g[0]))
				continue;
			g[ng++] = (struct group){ &e[i], 0 };
		}
		g[k].ns += e[i].ns;
	}
	for (size_t i = 1; i < ng; i++) /* the largest first */
		for (size_t k = i; k > 0 && g[k].ns > g[k - 1].ns; k--) {
			struct group t = g[k];

			g[k] = g[k - 1];
			g[k - 1] = t;
		}
	for (size_t i = 0; i < ng && i < MAX_ENTRIES; i++) {
		if ((double)g[i].ns < SHOWN_SHARE * (double)u.total_ns)
			break;
		if (on_cpu(g[i].first->kind))
			cpu_claim(v, who, whose, &u, e, n);
		else if (ready(g[i].first->kind))
			ready_claim(v, who, &u, e, n);
		else
			entry_claim(v, who, whose, &u, e, n, g[i].first);
	}
}

static void to_verdict(void *arg, enum verdict_kind k, int lk, int holds, double share,
		       const char *text)
{
	verdict__ledger_claim(arg, k, lk, holds, share, "ledger", text);
}

void verdict_ledger__claims(struct verdict *v)
{
	struct ledger *l = ledger_of(v);

	if (l)
		lines(l, &(struct lsink){ to_verdict, v, verdict__model(v) });
}

struct text_sink {
	FILE *f;
	int n;
};

static void to_text(void *arg, enum verdict_kind k, int lk, int holds, double share,
		    const char *text)
{
	struct text_sink *t = arg;

	fprintf(t->f, " %c %-8s %5.1f%%  %s\n", holds ? '*' : ' ', verdict__kind_label(k),
		100 * share, text);
	t->n++;
}

int verdict_ledger__text(const struct ledger *l, const struct trace_model *m, FILE *f)
{
	struct text_sink t = { f, 0 };

	if (!ledger__has_timeline(l))
		return 0;
	lines(l, &(struct lsink){ to_text, &t, m });
	return t.n;
}
