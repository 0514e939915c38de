// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats --from's verdict (verdict_from.h): the same engine and the same rules as stats FILE's,
 * fed what the server computes in place of a pass over the records. What a pass finds of every
 * record (the rows' span, the threads' names and lives, the events per kind) comes from
 * ch_verdict.h's answers; each input a family's rules read (struct family_verdict.reads) from
 * the report the server computes by that name (ch_reports.h: a table) or the rule's state
 * (its family's input, ch_reports.h: a table its LOAD reads). A family whose inputs are not all there is not
 * judged, and the verdict says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ch_http.h"
#include "ch_reports.h"
#include "ch_verdict.h"
#include "family.h"
#include "family_stats.h"
#include "ledger.h"
#include "snap_records.h"
#include "stats_from.h"
#include "syscall_names.h"
#include "table.h"
#include "trace_model.h"
#include "verdict.h"
#include "verdict_from.h"

#define MAX_INPUTS 32

struct vfrom {
	struct ch_server *s;
	const char *where, *job, *files;
	struct table *t[MAX_INPUTS];
	int n;
	const struct table *kinds; /* the events per kind (ch_verdict_kinds' answer) */
};

/* The verdict, the model that names its threads, the answers it keeps pointers into. */
struct verdict_from {
	struct vfrom q;
	struct trace_model *m;
	struct verdict *v;
	struct ledger *l; /* the ledger the files' rows gave (NULL: none) */
};

/* Report R's answer, kept until the verdict is printed: NULL with *ERR set. */
static struct table *ask(struct vfrom *q, const struct ch_report *r, int *err)
{
	struct table *t;

	if (q->n == MAX_INPUTS) {
		*err = -E2BIG;
		return NULL;
	}
	t = table__new(r->name);
	*err = t ? stats_from__table(q->s, r, q->where, q->job, q->files, t) : -ENOMEM;
	if (*err) {
		table__free(t);
		return NULL;
	}
	return q->t[q->n++] = t;
}

/* The files' window and span (T, ch_verdict_span's): the model's start and end, the
 * verdict's first and last. */
static void span(const struct table *t, struct trace_model *m, struct verdict *v)
{
	if (table__nrows(t) && table__get_u64(t, 0, table__col(t, "files"))) {
		trace_model__set_start(m, (__u64)table__get_s64(t, 0, table__col(t, "start")));
		trace_model__set_end(m, (__u64)table__get_s64(t, 0, table__col(t, "end")));
		verdict__set_span(v, (__u64)table__get_s64(t, 0, table__col(t, "first")),
				  (__u64)table__get_s64(t, 0, table__col(t, "last")));
	}
}

/* The threads' and processes' names as the files' reports have them, and the processes'
 * pools (a trainer's DataLoader workers: the table's strings outlive the model). */
static int names(struct vfrom *q, struct trace_model *m)
{
	int err, cp, ct, cproc, cthr, cpool, cown, cwhat;
	struct table *t = ask(q, &ch_verdict_names, &err);

	if (!t)
		return err;
	cp = table__col(t, "pid");
	ct = table__col(t, "tid");
	cproc = table__col(t, "process");
	cthr = table__col(t, "thread");
	cpool = table__col(t, "pool");
	cown = table__col(t, "owner");
	cwhat = table__col(t, "owner_what");
	for (int r = 0; r < table__nrows(t); r++) {
		if (cpool >= 0 && table__get_str(t, r, cpool) && cwhat >= 0 &&
		    table__get_str(t, r, cwhat))
			trace_model__join_pool(m, (__u32)table__get_u64(t, r, cp),
					       (__u32)table__get_u64(t, r, cown),
					       table__get_str(t, r, cpool),
					       table__get_str(t, r, cwhat));
		if (cproc >= 0 && table__get_str(t, r, cproc))
			trace_model__name_process(m, (__u32)table__get_u64(t, r, cp),
						  table__get_str(t, r, cproc));
		if (cthr >= 0 && table__get_str(t, r, cthr))
			trace_model__name_thread(m, (__u32)table__get_u64(t, r, ct),
						 table__get_str(t, r, cthr));
	}
	return 0;
}

int verdict_from__kinds_have(const struct table *kinds, const char *needs)
{
	for (const char *k = needs; *k; k += strcspn(k, ",") + (k[strcspn(k, ",")] == ',')) {
		size_t len = strcspn(k, ",");

		for (int r = 0; kinds && r < table__nrows(kinds); r++) {
			const char *have = table__get_str(kinds, r, 0) ?: "";

			if (strlen(have) == len && !strncmp(have, k, len) &&
			    table__get_u64(kinds, r, 1) > 0)
				return 1;
		}
	}
	return 0;
}

/* 1 when the rows have events of any kind of KINDS (the events per kind, asked first). */
static int has_kind(const struct vfrom *q, const char *kinds)
{
	return verdict_from__kinds_have(q->kinds, kinds);
}

/* System call NAME's number (x86-64), -1 when the table does not know it. */
static __s32 syscall_nr(const char *name)
{
	for (__u32 nr = 0; nr < 1024; nr++) {
		const char *n = syscall_name(nr);

		if (n && !strcmp(n, name))
			return (__s32)nr;
	}
	return -1;
}

/*
 * The snapshots of the job's threads (a hang trigger's, the edges'), into the model as the
 * records they came from: what the hang's and the edges' rules read of them. Each thread's
 * stack by what it says (its call and line), numbered here: two files' stack ids differ.
 */
static int snaps(struct vfrom *q, struct trace_model *m)
{
	int err, c[17];
	static const char *const keys[17] = { "of_process", "pid",     "tid",	     "ts",
					      "edge",	    "rank",    "local_rank", "world",
					      "state",	    "syscall", "syscall_nr", "flags",
					      "off_cpu_ns", "cpu_ns",  "stack",	     "call",
					      "where" };
	/* the threads' snapshots: proc's input (its struct family.sql) */
	const struct ch_report *snaps = ch_report__named("verdict_snaps");
	struct table *t;

	if (!snaps || (snaps->needs && !has_kind(q, snaps->needs)))
		return 0; /* no snapshot in the rows: nothing to observe, no query's cost */
	if (!(t = ask(q, snaps, &err)))
		return err;
	for (int k = 0; k < 17; k++)
		c[k] = table__col(t, keys[k]);
	for (int r = 0; r < table__nrows(t) && !err; r++) {
		struct bs_hdr h = { .pid = (__u32)table__get_u64(t, r, c[1]),
				    .tid = (__u32)table__get_u64(t, r, c[2]),
				    .ts = (__u64)table__get_s64(t, r, c[3]) };
		const char *sc = c[9] >= 0 ? table__get_str(t, r, c[9]) : NULL;

		if (table__get_u64(t, r, c[0])) {
			struct bs_proc_snap p = { .h = h,
						  .env_rank = (__s32)table__get_s64(t, r, c[5]),
						  .env_local_rank =
							  (__s32)table__get_s64(t, r, c[6]),
						  .env_world = (__s32)table__get_s64(t, r, c[7]),
						  .edge = (__u16)table__get_u64(t, r, c[4]) };

			p.h.type = BS_REC_PROC_SNAP;
			p.h.size = sizeof(p);
			trace_model__observe(m, &p.h);
			continue;
		}
		struct bs_thread_snap ts = { .h = h,
					     .state = (__u32)table__get_u64(t, r, c[8]),
					     .syscall = sc ? syscall_nr(sc)
							   : (__s32)table__get_s64(t, r, c[10]),
					     .flags = (__u32)table__get_u64(t, r, c[11]),
					     .off_cpu_ns = table__get_u64(t, r, c[12]),
					     .cpu_ns = table__get_u64(t, r, c[13]) };

		ts.h.type = BS_REC_THREAD_SNAP;
		ts.h.size = sizeof(ts);
		if (table__get_u64(t, r, c[14])) {
			ts.stack_id = (__u32)r + 1;
			err = trace_model__add_said_stack(
				m, ts.stack_id, c[15] >= 0 ? table__get_str(t, r, c[15]) : NULL,
				c[16] >= 0 && table__get_str(t, r, c[16])
					? table__get_str(t, r, c[16])
					: "code whose stack was not read");
		}
		trace_model__observe(m, &ts.h);
	}
	return err;
}

/* The events per kind, asked before what reads them (has_kind). */
static int kinds(struct vfrom *q)
{
	int err;

	q->kinds = ask(q, &ch_verdict_kinds, &err);
	return q->kinds ? 0 : err;
}

/* The forks' and exits' times, and the events per kind. */
static int lives(struct vfrom *q, struct verdict *v)
{
	int err, cp, ct, cb, cd;
	struct table *t = ask(q, &ch_verdict_lives, &err);

	if (!t)
		return err;
	cp = table__col(t, "pid");
	ct = table__col(t, "tid");
	cb = table__col(t, "born");
	cd = table__col(t, "died");
	for (int r = 0; r < table__nrows(t) && !err; r++)
		err = verdict__set_life(
			v, (__u32)table__get_u64(t, r, cp), (__u32)table__get_u64(t, r, ct),
			(__u64)table__get_s64(t, r, cb), (__u64)table__get_s64(t, r, cd));
	for (int r = 0; !err && r < table__nrows(q->kinds); r++)
		verdict__count(v, table__get_str(q->kinds, r, 0), table__get_u64(q->kinds, r, 1));
	return err;
}

/* Column NAME of ledger row R of T: a number, a string ("" when none). */
static __u64 lu(const struct table *t, int r, const char *name)
{
	int c = table__col(t, name);

	return c >= 0 ? table__get_u64(t, r, c) : 0;
}

static const char *ls(const struct table *t, int r, const char *name)
{
	int c = table__col(t, name);
	const char *s = c >= 0 ? table__get_str(t, r, c) : NULL;

	return s ? s : "";
}

/* Whether unit row A outweighs unit row B: the larger score, then the lower pid and tid. */
static int outweighs(const struct table *t, int a, int b)
{
	if (lu(t, a, "score") != lu(t, b, "score"))
		return lu(t, a, "score") > lu(t, b, "score");
	if (lu(t, a, "pid") != lu(t, b, "pid"))
		return lu(t, a, "pid") < lu(t, b, "pid");
	return lu(t, a, "tid") < lu(t, b, "tid");
}

/* The entries of the file FILE of T (its `entry` rows, in order) as the unit U's. */
static int give_unit(struct ledger *l, const struct table *t, const char *file,
		     struct ledger_unit *u)
{
	struct ledger_entry *e = calloc((size_t)table__nrows(t) + 1, sizeof(*e));
	size_t n = 0;
	int err;

	if (!e)
		return -ENOMEM;
	for (int r = 0; r < table__nrows(t); r++) {
		int kind = ledger__kind_of(ls(t, r, "entry"));
		int inside = ledger__kind_of(ls(t, r, "inside"));

		if (strcmp(ls(t, r, "row"), "entry") || strcmp(ls(t, r, "file_id"), file) ||
		    kind < 0)
			continue;
		e[n++] = (struct ledger_entry){
			.kind = (enum ledger_kind)kind,
			.what = ls(t, r, "name"),
			.where = ls(t, r, "where"),
			.ns = lu(t, r, "ns"),
			.oncpu_ns = lu(t, r, "oncpu_ns"),
			.runnable_ns = lu(t, r, "runnable_ns"),
			.own_ns = lu(t, r, "own_ns"),
			.waker = (__u32)lu(t, r, "waker"),
			.waker_ns = lu(t, r, "waker_ns"),
			.waker_where = ls(t, r, "waker_where"),
			.idle = !!lu(t, r, "idle"),
			.own = !!lu(t, r, "own"),
			.inside = inside < 0 ? LEDGER_CODE : (enum ledger_kind)inside,
		};
	}
	err = ledger__give_unit(l, u, e, n);
	free(e);
	return err;
}

/*
 * The ledger the rows gave (proc's ledger_rows.c: each file's critical unit, its entries, its
 * threads' time waiting for a batch): the unit of the largest weight among the files', as the
 * verdict's rules read it (ledger.h, "a ledger given"). None in the rows: the verdict words
 * no ledger line, as stats FILE's without sched's timeline.
 */
static int ledger_given(struct verdict_from *vf)
{
	const struct ch_report *r = ch_report__named("verdict_ledger");
	struct ledger_unit u = { 0 };
	struct table *t;
	int err, best = -1;

	if (!r || (r->needs && !has_kind(&vf->q, r->needs)))
		return 0;
	if (!(t = ask(&vf->q, r, &err)))
		return err;
	for (int i = 0; i < table__nrows(t); i++)
		if (!strcmp(ls(t, i, "row"), "unit") && (best < 0 || outweighs(t, i, best)))
			best = i;
	if (best < 0)
		return 0;
	if (!(vf->l = ledger__new(NULL)))
		return -ENOMEM;
	u.pid = (__u32)lu(t, best, "pid");
	u.tid = (__u32)lu(t, best, "tid");
	u.nthreads = (__u32)lu(t, best, "threads");
	snprintf(u.name, sizeof(u.name), "%s", ls(t, best, "name"));
	u.total_ns = lu(t, best, "total_ns");
	u.job_threads = (__u32)lu(t, best, "job_threads");
	u.cpus = (__u32)lu(t, best, "cpus");
	u.score = lu(t, best, "score");
	err = give_unit(vf->l, t, ls(t, best, "file_id"), &u);
	for (int i = 0; !err && i < table__nrows(t); i++)
		if (!strcmp(ls(t, i, "row"), "input"))
			err = ledger__give_time_in(vf->l, (__u32)lu(t, i, "pid"),
						   (__u32)lu(t, i, "tid"), LEDGER_INPUT,
						   lu(t, i, "ns"));
	return err ?: verdict__set_report(vf->v, "ledger", NULL, vf->l);
}

/* Input NAME of a family's rules, if the server computes it: a report's table or a state. */
static int input(struct vfrom *q, struct verdict *v, const char *name)
{
	const struct ch_report *r = ch_report__find(name);
	int state = !r, err;
	struct table *t;

	if (verdict__table(v, name))
		return 0; /* another family reads it too */
	r = r ?: ch_report__named(name);
	if (!r)
		return 0; /* not computed there: the family is not judged (said) */
	if (r->needs && !has_kind(q, r->needs)) {
		/* no row to answer with: its empty table, not its query's cost (ch_reports.h) */
		t = q->n < MAX_INPUTS ? table__new(r->name) : NULL;
		err = t ? stats_from__no_rows(r, t) : q->n < MAX_INPUTS ? -ENOMEM : -E2BIG;
		if (err) {
			table__free(t);
			return err;
		}
		q->t[q->n++] = t;
	} else if (!(t = ask(q, r, &err))) {
		return err;
	}
	return state ? verdict__load(v, r->name, t) : verdict__set_report(v, r->name, t, NULL);
}

/* 1 when the server computes input NAME (LEN bytes): a report, or a rule's state. */
static int computed(const char *name, size_t len)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*s", (int)len, name);
	return ch_report__named(buf) != NULL;
}

/*
 * Every input of the rules of each family the server can judge (READS: "gil_sum,gil_stacks?":
 * each name but a detail's computed there); a family it cannot is not asked for anything (the
 * verdict says it was not judged).
 */
static int inputs(struct vfrom *q, struct verdict *v)
{
	char name[64];
	int err = 0;

	for_each_family_while(it, !err) {
		const struct family_verdict *fv = family__stats(it.f)->verdict;
		const char *reads = fv && fv->reads ? fv->reads : "", *p;
		size_t len;

		for (p = reads; *p; p += len + (p[len] == ',')) {
			len = strcspn(p, ",");
			if (len && p[len - 1] != '?' && !computed(p, len))
				break;
		}
		for (p = *p ? "" : reads; *p && !err; p += len + (p[len] == ',')) {
			len = strcspn(p, ",");
			snprintf(name, sizeof(name), "%.*s", (int)len, p);
			name[strcspn(name, "?")] = 0;
			err = input(q, v, name);
		}
	}
	return err;
}

struct verdict_from *verdict_from__judge(struct ch_server *s, const char *url, const char *where,
					 const char *job, const char *files, int *err)
{
	struct verdict_from *vf = calloc(1, sizeof(*vf));
	const char *recorded = NULL;
	struct table *t;

	*err = -ENOMEM;
	if (!vf)
		return NULL;
	vf->q = (struct vfrom){ .s = s, .where = where, .job = job, .files = files };
	vf->m = trace_model__new();
	/* the files' window first: the families they recorded are the verdict's to know */
	t = vf->m ? ask(&vf->q, &ch_verdict_span, err) : NULL;
	if (t && table__nrows(t))
		recorded = table__get_str(t, 0, table__col(t, "families"));
	vf->v = t ? verdict__new(vf->m, recorded) : NULL;
	if (!vf->v) {
		*err = *err ?: -ENOMEM;
		verdict_from__free(vf);
		return NULL;
	}
	verdict__from(vf->v, url);
	span(t, vf->m, vf->v);
	*err = names(&vf->q, vf->m);
	*err = *err ?: kinds(&vf->q);
	*err = *err ?: snaps(&vf->q, vf->m);
	*err = *err ?: lives(&vf->q, vf->v);
	*err = *err ?: inputs(&vf->q, vf->v);
	*err = *err ?: ledger_given(vf);
	if (*err) {
		verdict_from__free(vf);
		return NULL;
	}
	verdict__judge(vf->v);
	return vf;
}

const struct verdict *verdict_from__verdict(const struct verdict_from *vf)
{
	return vf->v;
}

const struct table *verdict_from__kinds(const struct verdict_from *vf)
{
	return vf->q.kinds;
}

void verdict_from__free(struct verdict_from *vf)
{
	if (!vf)
		return;
	verdict__free(vf->v);
	ledger__free(vf->l);
	trace_model__free(vf->m);
	for (int i = 0; i < vf->q.n; i++)
		table__free(vf->q.t[i]);
	free(vf);
}
