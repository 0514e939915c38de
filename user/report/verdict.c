// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The verdict: the families' claims, ranked and printed; see verdict.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "family_stats.h"
#include "family.h"
#include "human.h"
#include "hmap.h"
#include "stack_call.h"
#include "trace_model.h"
#include "verdict.h"
#include "verdict_ledger.h"
#include "utf8.h"

#define MAX_CLAIMS	      48
#define MAX_LINES	      25 /* the whole verdict, its headline included */
#define MAX_TABLES	      64
#define LEDGER_HEADLINE_SHARE 0.20 /* the ledger's largest entry leads from this share */

struct claim {
	enum verdict_kind kind;
	int holds;
	int parent; /* a detail's claim; its own index for a claim */
	int ledger; /* an entry of the critical unit's ledger (verdict_ledger.c): 1 + its kind */
	double share;
	char report[48];
	char text[640]; /* a hang's names a collective, ranks, a function and its file */
};

struct vthread {
	__u64 born, died; /* FORK / EXIT, 0 = not seen */
	__u64 time[VERDICT_TIMES];
};

struct verdict {
	const struct trace_model *m;
	const char *recorded; /* the families the trace was recorded with ("osrt,sched") */
	__u64 *events;	      /* per family of the registry: its event records seen */
	void **states;	      /* per family of the registry: its rules' state */
	struct hmap *threads; /* {pid, tid} -> struct vthread */
	__u64 first_ts, last_ts;
	/*
	 * The model's end, kept when judging: the report's page asks a thread's life after
	 * stats has closed the walk and freed the model.
	 */
	__u64 end_ns;
	int judged;
	struct {
		const char *name;
		const struct table *t;
		void *st;
	} tables[MAX_TABLES];
	int ntables;
	struct claim claims[MAX_CLAIMS];
	int nclaims;
	int order[MAX_CLAIMS]; /* claims as printed */
	int nshown;	       /* of them: those the ledger's order keeps */
	/* A verdict from a server's answers (verdict__from): where, else NULL (a pass's). */
	const char *from;
	/* A dump's trigger: what fired it, the record (type 0: none) and, once seen, the claim. */
	char trigger[160];
	struct bs_hdr cause;
	char cause_text[512];
	/* The ledger's critical unit's thread, the rules' focus once the ledger is built. */
	int has_unit;
	__u32 unit_pid, unit_tid;
};

static const char *const kind_label[VERDICT_KINDS] = {
	[VERDICT_TRIGGER] = "trigger",	[VERDICT_HANG] = "hang",
	[VERDICT_MEMORY] = "memory",	[VERDICT_STRAGGLER] = "ranks",
	[VERDICT_INPUT] = "input",	[VERDICT_GPU] = "GPU",
	[VERDICT_GIL] = "GIL",		[VERDICT_LAUNCH] = "launches",
	[VERDICT_SYSCALL] = "syscalls", [VERDICT_OFFCPU] = "off-CPU",
	[VERDICT_FAULT] = "faults",	[VERDICT_CPU] = "CPU",
	[VERDICT_MFU] = "MFU",		[VERDICT_LOCK] = "lock",
	[VERDICT_COLLECTIVE] = "comms", [VERDICT_CALLS] = "API",
	[VERDICT_CHILD] = "child",	[VERDICT_SLEEP] = "sleep",
	[VERDICT_IO] = "I/O",		[VERDICT_NOCPU] = "no CPU",
	[VERDICT_IDLE] = "idle",	[VERDICT_BLAS] = "CPU",
};
static const char *const kind_verdict[VERDICT_KINDS] = {
	[VERDICT_TRIGGER] = "dumped on",
	[VERDICT_HANG] = "hang",
	[VERDICT_STRAGGLER] = "straggler",
	[VERDICT_MEMORY] = "memory at risk",
	[VERDICT_GPU] = "GPU-bound",
	[VERDICT_INPUT] = "input-bound",
	[VERDICT_GIL] = "GIL-bound",
	[VERDICT_LAUNCH] = "launch-bound",
	[VERDICT_SYSCALL] = "blocked in system calls",
	[VERDICT_OFFCPU] = "off-CPU",
	[VERDICT_FAULT] = "fault-bound",
	[VERDICT_CPU] = "CPU-bound",
	[VERDICT_MFU] = "low MFU",
	[VERDICT_LOCK] = "lock-bound",
	[VERDICT_COLLECTIVE] = "waiting in collectives",
	[VERDICT_CALLS] = "in API calls",
	[VERDICT_CHILD] = "waiting for child processes",
	[VERDICT_SLEEP] = "sleeping",
	[VERDICT_IO] = "waiting for I/O",
	[VERDICT_NOCPU] = "short of CPU",
	[VERDICT_IDLE] = "idle",
	[VERDICT_BLAS] = "CPU-bound",
};

struct verdict *verdict__new(const struct trace_model *m, const char *recorded)
{
	struct verdict *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->m = m;
	v->recorded = recorded;
	v->threads = hmap__new(sizeof(struct vthread));
	v->states = calloc(family__count() + 1, sizeof(*v->states));
	v->events = calloc(family__count() + 1, sizeof(*v->events));
	if (!v->threads || !v->states || !v->events) {
		verdict__free(v);
		return NULL;
	}
	for_each_family_slot(fit, v->states) {
		const struct family_verdict *fv = family__stats(fit.f)->verdict;

		if (!fv || !fv->new)
			continue;
		*fit.slot = fv->new ();
		if (!*fit.slot) {
			verdict__free(v);
			return NULL;
		}
	}
	return v;
}

void verdict__free(struct verdict *v)
{
	if (!v)
		return;
	if (v->states)
		for_each_family_slot(fit, v->states)
			if (*fit.slot)
				family__stats(fit.f)->verdict->free(*fit.slot);
	free(v->states);
	free(v->events);
	hmap__free(v->threads);
	free(v);
}

static struct vthread *vthread(struct verdict *v, __u32 pid, __u32 tid, int create)
{
	return hmap__get(v->threads, (struct hkey){ pid, tid }, create);
}

void verdict__set_trigger(struct verdict *v, const char *text, const struct bs_hdr *cause)
{
	snprintf(v->trigger, sizeof(v->trigger), "%s", text);
	v->cause = *cause;
}

/* The record the dump's trigger fired on (an interval clipped to the start: its start). */
static int is_cause(const struct verdict *v, const struct bs_hdr *rec)
{
	const struct bs_hdr *c = &v->cause;
	__u64 start = trace_model__start(v->m);

	return c->type && !v->cause_text[0] && rec->type == c->type && rec->pid == c->pid &&
	       rec->tid == c->tid && (rec->ts == c->ts || (c->ts < start && rec->ts == start));
}

/* "a gil_wait of 627 ms by Thread-1 (tid 5, pid 4), at `handler` (attr.py:11)" */
static void say_cause(struct verdict *v, const struct bs_hdr *rec)
{
	char who[128], d[32], where[160] = "", holder[160] = "";
	struct event ev;

	if (family__decode(rec, v->m, &ev) != 1)
		return;
	if (ev.stack)
		stack_call__where(ev.stack, v->m, where, sizeof(where));
	if (ev.holder_stack) /* a GIL wait: what the holder ran */
		stack_call__where(ev.holder_stack, v->m, holder, sizeof(holder));
	snprintf(v->cause_text, sizeof(v->cause_text), "--trigger %s: %s%s%s by %s%s%s%s%s",
		 v->trigger, ev.name ? ev.name : "an event", ev.dur ? " of " : "",
		 ev.dur ? human__ns((double)ev.dur, d, sizeof(d)) : "",
		 verdict__thread(v, rec->pid, rec->tid, who, sizeof(who)), where[0] ? ", at " : "",
		 where, holder[0] ? "; the holder ran " : "", holder);
}

void verdict__observe(struct verdict *v, const struct bs_hdr *rec)
{
	const struct bs_fork *f = (const void *)rec;
	struct vthread *th;
	int i;
	const struct rec_decoder *dec = family__decoder_at(rec->type, &i);

	if (dec && dec->decode != family__decode_meta)
		v->events[i]++;
	/* What the recorder wrote while it set up (a process's Python found...) is before the
	 * window: the threads' lives are inside it. */
	__u64 ts =
		rec->ts && rec->ts < trace_model__start(v->m) ? trace_model__start(v->m) : rec->ts;

	if (ts && (!v->first_ts || ts < v->first_ts))
		v->first_ts = ts;
	if (ts > v->last_ts)
		v->last_ts = ts;
	if (rec->type == BS_REC_FORK && rec->size >= sizeof(*f) &&
	    (th = vthread(v, f->child_pid, f->child_tid, 1)))
		th->born = rec->ts;
	else if (rec->type == BS_REC_EXIT && (th = vthread(v, rec->pid, rec->tid, 1)))
		th->died = rec->ts;
	for_each_family_slot(fit, v->states)
		if (*fit.slot && family__stats(fit.f)->verdict->add)
			family__stats(fit.f)->verdict->add(*fit.slot, rec, v->m);
	if (is_cause(v, rec))
		say_cause(v, rec);
}

int verdict__set_report(struct verdict *v, const char *name, const struct table *t, void *st)
{
	if (v->ntables == MAX_TABLES)
		return -E2BIG;
	v->tables[v->ntables].name = name;
	v->tables[v->ntables].t = t;
	v->tables[v->ntables].st = st;
	v->ntables++;
	return 0;
}

void verdict__from(struct verdict *v, const char *from)
{
	v->from = from;
}

/* 1 when input NAME (LEN bytes) was given: a table, or a rule's state (verdict__load). */
static int given(const struct verdict *v, const char *name, size_t len)
{
	for (int i = 0; i < v->ntables; i++)
		if (v->tables[i].t && strlen(v->tables[i].name) == len &&
		    !strncmp(v->tables[i].name, name, len))
			return 1;
	return 0;
}

/* Each name of FV's READS in turn: *P its start, *LEN its length less a detail's '?'. */
static int next_read(const char **p, size_t *len, int *detail)
{
	size_t n;

	while (**p == ',')
		(*p)++;
	if (!**p)
		return 0;
	n = strcspn(*p, ",");
	*detail = (*p)[n - 1] == '?';
	*len = n - *detail;
	return 1;
}

/* 1 when FV reads input NAME. */
static int reads(const struct family_verdict *fv, const char *name)
{
	size_t len, n = strlen(name);
	int detail;

	for (const char *p = fv->reads ? fv->reads : ""; next_read(&p, &len, &detail);
	     p += len + detail)
		if (len == n && !strncmp(p, name, n))
			return 1;
	return 0;
}

/*
 * Whether FV's rules run: always after a pass; from a server, when every input it reads but
 * a detail's was given. The inputs not given into MISSING, the details' into DETAILS (each
 * may be NULL), comma-separated.
 */
static int judged(const struct verdict *v, const struct family_verdict *fv, char *missing,
		  size_t mlen, char *details, size_t dlen)
{
	size_t len, nm = 0, nd = 0;
	int detail, ok = fv->reads != NULL;

	if (!v->from)
		return 1;
	for (const char *p = fv->reads ? fv->reads : ""; next_read(&p, &len, &detail);
	     p += len + detail) {
		if (given(v, p, len))
			continue;
		ok &= detail;
		if (detail && details && nd < dlen)
			nd += snprintf(details + nd, dlen - nd, "%s%.*s", nd ? ", " : "", (int)len,
				       p);
		else if (!detail && missing && nm < mlen)
			nm += snprintf(missing + nm, mlen - nm, "%s%.*s", nm ? ", " : "", (int)len,
				       p);
	}
	return ok;
}

int verdict__load(struct verdict *v, const char *name, const struct table *t)
{
	for_each_family_slot(fit, v->states) {
		const struct family_verdict *fv = family__stats(fit.f)->verdict;
		int err;

		if (!fv || !fv->load || !*fit.slot || !reads(fv, name))
			continue;
		err = fv->load(*fit.slot, name, t);
		return err ?: verdict__set_report(v, name, t, NULL);
	}
	return -ENOENT;
}

void verdict__set_span(struct verdict *v, __u64 first, __u64 last)
{
	v->first_ts = first;
	v->last_ts = last;
}

int verdict__set_life(struct verdict *v, __u32 pid, __u32 tid, __u64 born, __u64 died)
{
	struct vthread *th = vthread(v, pid, tid, 1);

	if (!th)
		return -ENOMEM;
	th->born = born;
	th->died = died;
	return 0;
}

void verdict__count(struct verdict *v, const char *kind, __u64 n)
{
	for_each_family(it)
		for (const struct rec_decoder *d = it.f->decode->decoders; d && d->type; d++)
			if (d->kind && !strcmp(d->kind, kind) && d->decode != family__decode_meta) {
				v->events[it.i] += n;
				return;
			}
}

const char *verdict__unjudged(const struct verdict *v, char *buf, size_t len)
{
	char skipped[512] = "", left[256] = "", missing[256], details[256];
	size_t nn = 0, nl = 0;

	buf[0] = 0;
	if (!v->from)
		return buf;
	for_each_family_slot(fit, v->events) {
		const struct family_verdict *fv = family__stats(fit.f)->verdict;

		if (!fv || !*fit.slot)
			continue;
		missing[0] = details[0] = 0;
		if (!judged(v, fv, missing, sizeof(missing), details, sizeof(details))) {
			if (nn < sizeof(skipped))
				nn += snprintf(skipped + nn, sizeof(skipped) - nn, "%s%s%s%s%s",
					       nn ? ", " : "", fit.f->name, missing[0] ? " (" : "",
					       missing, missing[0] ? ")" : "");
		} else if (details[0] && nl < sizeof(left)) {
			nl += snprintf(left + nl, sizeof(left) - nl, "%s%s", nl ? ", " : "",
				       details);
		}
	}
	if (nn || nl)
		snprintf(buf, len, "Not judged from %s: %s%s%s%s%s.", v->from,
			 nn ? "the rules of " : "", skipped,
			 nn ? " (what they read is not computed there yet)" : "",
			 nl ? (nn ? "; judged without: " : "judged without: ") : "", left);
	return buf;
}

void *verdict__state(const struct verdict *v, const char *name)
{
	for (int i = 0; i < v->ntables; i++)
		if (!strcmp(v->tables[i].name, name))
			return v->tables[i].st;
	return NULL;
}

const struct table *verdict__table(const struct verdict *v, const char *name)
{
	for (int i = 0; i < v->ntables; i++)
		if (!strcmp(v->tables[i].name, name))
			return v->tables[i].t;
	return NULL;
}

const struct trace_model *verdict__model(const struct verdict *v)
{
	return v->m;
}

__u64 verdict__life(const struct verdict *v, __u32 pid, __u32 tid)
{
	const struct vthread *th = hmap__get(v->threads, (struct hkey){ pid, tid }, 0);
	__u64 born = v->first_ts, died = v->last_ts;
	__u64 end = v->judged ? v->end_ns : trace_model__end(v->m);

	if (th && th->born > born)
		born = th->born;
	if (th && th->died && th->died < died)
		died = th->died;
	if (end && end < died)
		died = end; /* what the stop drained after the end is not its life */
	return died > born ? died - born : 0;
}

void verdict__add_time(struct verdict *v, __u32 pid, __u32 tid, enum verdict_time what, __u64 ns)
{
	struct vthread *th = vthread(v, pid, tid, 1);

	if (th)
		th->time[what] += ns;
}

__u64 verdict__time(const struct verdict *v, __u32 pid, __u32 tid, enum verdict_time what)
{
	const struct vthread *th = hmap__get(v->threads, (struct hkey){ pid, tid }, 0);

	return th ? th->time[what] : 0;
}

int verdict__focus(const struct verdict *v, __u32 *pid, __u32 *tid)
{
	__u64 best = 0, sum;
	struct vthread *th;
	struct hkey key;
	size_t it = 0;

	if (v->has_unit) { /* the thread the job's progress rests on, by the ledger */
		*pid = v->unit_pid;
		*tid = v->unit_tid;
		return 0;
	}

	while ((th = hmap__next(v->threads, &it, &key))) {
		sum = th->time[VERDICT_ONCPU] + th->time[VERDICT_GIL_WAIT] + th->time[VERDICT_API];
		/* Ties go to the lower ids: the same trace gives the same verdict. */
		if (sum > best ||
		    (sum && sum == best && (key.a < *pid || (key.a == *pid && key.b < *tid)))) {
			best = sum;
			*pid = (__u32)key.a;
			*tid = (__u32)key.b;
		}
	}
	return best ? 0 : -ENOENT;
}

const char *verdict__thread(const struct verdict *v, __u32 pid, __u32 tid, char *buf, size_t len)
{
	return verdict__thread_in(v->m, pid, tid, buf, len);
}

const char *verdict__thread_in(const struct trace_model *m, __u32 pid, __u32 tid, char *buf,
			       size_t len)
{
	const char *name = trace_model__thread_name(m, tid);
	const char *role = trace_model__process_role(m, pid); /* a DataLoader worker */

	if (pid == tid)
		snprintf(buf, len, "%s (main thread%s%s, pid %u)", name && *name ? name : "thread",
			 role ? " of " : "", role ? role : "", pid);
	else
		snprintf(buf, len, "%s (tid %u%s%s, pid %u)", name && *name ? name : "thread", tid,
			 role ? " of " : "", role ? role : "", pid);
	return buf;
}

static struct claim *new_claim(struct verdict *v, enum verdict_kind kind, int holds, double share,
			       const char *report)
{
	struct claim *c;

	if (v->nclaims == MAX_CLAIMS || kind >= VERDICT_KINDS)
		return NULL;
	c = &v->claims[v->nclaims];
	c->kind = kind;
	c->holds = !!holds;
	c->share = share;
	c->parent = v->nclaims++;
	snprintf(c->report, sizeof(c->report), "%s", report ? report : "");
	return c;
}

void verdict__claim(struct verdict *v, enum verdict_kind kind, int holds, double share,
		    const char *report, const char *fmt, ...)
{
	struct claim *c = new_claim(v, kind, holds, share, report);
	va_list ap;

	if (!c)
		return;
	va_start(ap, fmt);
	vsnprintf(c->text, sizeof(c->text), fmt, ap);
	va_end(ap);
	utf8__printable(c->text); /* it names threads: their names are the processes' */
}

void verdict__ledger_claim(struct verdict *v, enum verdict_kind kind, int lkind, int holds,
			   double share, const char *report, const char *text)
{
	struct claim *c = new_claim(v, kind, holds, share, report);

	if (!c)
		return;
	c->ledger = 1 + lkind;
	snprintf(c->text, sizeof(c->text), "%s", text);
	utf8__printable(c->text);
}

void verdict__set_unit(struct verdict *v, __u32 pid, __u32 tid)
{
	v->has_unit = 1;
	v->unit_pid = pid;
	v->unit_tid = tid;
}

void verdict__detail(struct verdict *v, double share, const char *report, const char *fmt, ...)
{
	const struct claim *p = v->nclaims ? &v->claims[v->nclaims - 1] : NULL;
	struct claim *c;
	va_list ap;

	if (!p)
		return;
	p = &v->claims[p->parent];
	c = new_claim(v, p->kind, p->holds, share, report);
	if (!c)
		return;
	c->parent = (int)(p - v->claims);
	va_start(ap, fmt);
	vsnprintf(c->text, sizeof(c->text), fmt, ap);
	va_end(ap);
	utf8__printable(c->text);
}

static const struct verdict *sort_ctx;

/*
 * Holding claims first, then by kind, then the larger share, each followed by its details
 * in the order made.
 */
static int claim_cmp(const void *a, const void *b)
{
	int ia = *(const int *)a, ib = *(const int *)b;
	const struct claim *x = &sort_ctx->claims[sort_ctx->claims[ia].parent];
	const struct claim *y = &sort_ctx->claims[sort_ctx->claims[ib].parent];

	if (x != y) {
		if (x->holds != y->holds)
			return y->holds - x->holds;
		if (x->kind != y->kind)
			return (int)x->kind - (int)y->kind;
		if (x->share != y->share)
			return x->share < y->share ? 1 : -1;
		return sort_ctx->claims[ia].parent - sort_ctx->claims[ib].parent;
	}
	return ia - ib; /* the claim (its own parent, made first), then its details */
}

/* Claim I and its details into ORDER at *N, once (PLACED). */
static void place(const struct verdict *v, int i, int *placed, int *order, int *n)
{
	if (placed[i])
		return;
	for (int k = 0; k < v->nclaims; k++) { /* the claim, then its details, as made */
		int c = v->order[k];

		if ((c == i || v->claims[c].parent == i) && !placed[c]) {
			placed[c] = 1;
			order[(*n)++] = c;
		}
	}
}

/*
 * A holding claim of these kinds leads whatever the ledger says: an event (a trigger, a hang,
 * memory at risk), or a straggler, a relation of the job's ranks that no one rank's time says.
 */
static int leads(const struct claim *c)
{
	return c->holds && !c->ledger &&
	       (c->kind == VERDICT_TRIGGER || c->kind == VERDICT_HANG ||
		c->kind == VERDICT_MEMORY ||
		c->kind ==
			VERDICT_STRAGGLER); /* a job's ranks, whichever rank's time is the unit */
}

static int ledger_cmp(const void *a, const void *b)
{
	const struct claim *x = &sort_ctx->claims[*(const int *)a];
	const struct claim *y = &sort_ctx->claims[*(const int *)b];

	/* waiting for work by design is said after what the unit did or waited in */
	if ((x->kind == VERDICT_IDLE) != (y->kind == VERDICT_IDLE))
		return x->kind == VERDICT_IDLE ? 1 : -1;
	if (x->share != y->share)
		return x->share < y->share ? 1 : -1;
	return *(const int *)a - *(const int *)b;
}

/*
 * With a ledger: the events that lead (a dump's trigger, a hang, memory at risk), then the
 * critical unit's entries by their share, each followed by the rules' claims that explain it
 * (verdict_ledger__explains: the straggler under the time in a collective, the GIL's holder
 * under the GIL wait), the first entry's own explanation before it where one holds
 * (verdict_ledger__replaces: "straggler: rank 1" says more than "waited in all_reduce");
 * then the rest, as the rules ranked them.
 */
static void order_by_ledger(struct verdict *v)
{
	int placed[MAX_CLAIMS] = { 0 }, order[MAX_CLAIMS], ents[MAX_CLAIMS];
	int n = 0, ne = 0;

	for (int i = 0; i < v->nclaims; i++)
		if (v->claims[i].ledger && v->claims[i].parent == i)
			ents[ne++] = i;
	if (!ne)
		return;
	sort_ctx = v;
	qsort(ents, ne, sizeof(ents[0]), ledger_cmp);
	sort_ctx = NULL;
	/*
	 * the largest entry is where most of the time went: the headline, if it is not a sliver,
	 * nor waiting for work by design (a poll, an idle pool: said last, no bottleneck)
	 */
	if (v->claims[ents[0]].share >= LEDGER_HEADLINE_SHARE &&
	    v->claims[ents[0]].kind != VERDICT_IDLE)
		v->claims[ents[0]].holds = 1;
	for (int k = 0; k < v->nclaims; k++)
		if (leads(&v->claims[v->order[k]]) && v->claims[v->order[k]].parent == v->order[k])
			place(v, v->order[k], placed, order, &n);
	for (int e = 0; e < ne; e++) {
		int lk = v->claims[ents[e]].ledger - 1;

		for (int k = 0; !e && k < v->nclaims; k++) {
			const struct claim *c = &v->claims[v->order[k]];

			if (!c->ledger && c->holds && c->parent == v->order[k] &&
			    verdict_ledger__replaces(lk, c->kind))
				place(v, v->order[k], placed, order, &n);
		}
		place(v, ents[e], placed, order, &n);
		for (int k = 0; k < v->nclaims; k++) {
			const struct claim *c = &v->claims[v->order[k]];

			if (!c->ledger && c->parent == v->order[k] &&
			    verdict_ledger__explains(lk, c->kind))
				place(v, v->order[k], placed, order, &n);
		}
	}
	for (int k = 0; k < v->nclaims; k++)
		if (v->claims[v->order[k]].parent == v->order[k] &&
		    !verdict_ledger__supersedes(v->claims[v->order[k]].kind))
			place(v, v->order[k], placed, order, &n);
	memcpy(v->order, order, n * sizeof(order[0]));
	v->nshown = n;
}

void verdict__judge(struct verdict *v)
{
	int i;

	v->end_ns = trace_model__end(v->m);
	v->judged = 1;
	/* A dump opens with why it was written: the event its trigger fired on. */
	if (v->cause_text[0])
		verdict__claim(v, VERDICT_TRIGGER, 1, -1, "", "%s", v->cause_text);
	else if (v->cause.type)
		verdict__claim(v, VERDICT_TRIGGER, 1, -1, "",
			       "--trigger %s (its event is not in "
			       "the window)",
			       v->trigger);
	else if (!strncmp(v->trigger, "SIGUSR", 6))
		verdict__claim(v, VERDICT_TRIGGER, 1, -1, "",
			       "written on %s: an operator asked for the window's last %.1f s, "
			       "no trigger fired",
			       v->trigger, (v->end_ns - trace_model__start(v->m)) / 1e9);

	verdict_ledger__focus(v); /* the critical unit: the rules' focus */
	/* From a server, a family whose inputs were not all given is not judged (said). */
	for_each_family_slot(fit, v->states)
		if (family__stats(fit.f)->verdict && family__stats(fit.f)->verdict->account &&
		    judged(v, family__stats(fit.f)->verdict, NULL, 0, NULL, 0))
			family__stats(fit.f)->verdict->account(*fit.slot, v);
	for_each_family_slot(fit, v->states)
		if (family__stats(fit.f)->verdict && family__stats(fit.f)->verdict->claims &&
		    judged(v, family__stats(fit.f)->verdict, NULL, 0, NULL, 0))
			family__stats(fit.f)->verdict->claims(*fit.slot, v);
	verdict_ledger__claims(v);
	for (i = 0; i < v->nclaims; i++)
		v->order[i] = i;
	v->nshown = v->nclaims;
	sort_ctx = v;
	qsort(v->order, v->nclaims, sizeof(v->order[0]), claim_cmp);
	sort_ctx = NULL;
	order_by_ledger(v);
}

/* The claim the headline rests on: the first printed, if it holds. */
static const struct claim *headline_claim(const struct verdict *v)
{
	const struct claim *c = v->nshown ? &v->claims[v->claims[v->order[0]].parent] : NULL;

	return c && c->holds ? c : NULL;
}

const char *verdict__headline(const struct verdict *v, char *buf, size_t len)
{
	const struct claim *c = headline_claim(v);

	if (c)
		snprintf(buf, len, "%s: %s", kind_verdict[c->kind], c->text);
	else if (v->nclaims)
		snprintf(buf, len, "no bottleneck stands out (no rule's threshold was passed)");
	else
		buf[0] = 0;
	return buf;
}

int verdict__cited(const struct verdict *v, const char **reports, int max)
{
	int i, k, n = 0;
	size_t len;

	for (i = 0; i < v->nshown && n < max; i++) {
		const char *r = v->claims[v->order[i]].report;

		len = strcspn(r, " ");
		if (!len)
			continue;
		for (k = 0; k < n; k++)
			if (strlen(reports[k]) == len && !strncmp(reports[k], r, len))
				break;
		if (k == n)
			reports[n++] = r; /* "osrt_sum --tid 1": the caller compares the name */
	}
	return n;
}

/* One claim: its kind, its share and its text with the report that shows it. */
static int print_claim(const struct verdict *v, const struct claim *c, int width, FILE *f)
{
	char text[768], share[16] = "";
	int col;

	int detail = c->parent != (int)(c - v->claims);

	if (c->share >= 0)
		snprintf(share, sizeof(share), "%5.1f%%", c->share * 100);
	if (c->report[0])
		snprintf(text, sizeof(text), "%s (-r %s)", c->text, c->report);
	else
		snprintf(text, sizeof(text), "%s", c->text);
	col = fprintf(f, " %c %-8s %6s  ", c->holds && !detail ? '*' : ' ',
		      detail ? "" : kind_label[c->kind], share);
	return human__wrap(f, text, width, col, 21);
}

/* 1 when NAME is in the comma-separated LIST. */
static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		if (strcspn(p, ",") == n && !strncmp(p, name, n))
			return 1;
	}
	return 0;
}

/*
 * No rule made a claim: say what the rules read and what this trace has of it, family by
 * family, so that a trace whose 126 CUDA calls all failed is not told to record cuda.
 */
const char *verdict__nothing(const struct verdict *v, char *text, size_t len)
{
	char had[512] = "", empty[256] = "", missing[256] = "", head[512];
	size_t nh = 0, ne = 0, nm = 0;

	text[0] = 0;
	if (verdict__headline(v, head, sizeof(head))[0])
		return text;
	for_each_family_slot(fit, v->events) {
		const char *name = fit.f->name;

		if (!family__stats(fit.f)->verdict)
			continue;
		if (*fit.slot)
			nh += snprintf(had + nh, nh < sizeof(had) ? sizeof(had) - nh : 0,
				       "%s%s %llu", nh ? ", " : "", name,
				       (unsigned long long)*fit.slot);
		else if (listed(v->recorded, name))
			ne += snprintf(empty + ne, ne < sizeof(empty) ? sizeof(empty) - ne : 0,
				       "%s%s", ne ? ", " : "", name);
		else
			nm += snprintf(missing + nm,
				       nm < sizeof(missing) ? sizeof(missing) - nm : 0, "%s%s",
				       nm ? "," : "", name);
	}
	snprintf(text, len,
		 "Verdict: nothing to judge: no rule found a claim in this trace. Events of the "
		 "families whose rules judge: %s%s%s%s%s%s.",
		 nh ? had : "none", ne ? "; recorded, without events: " : "", ne ? empty : "",
		 nm ? "; not recorded: " : "", nm ? missing : "", nm ? " (add them to -t)" : "");
	return text;
}

const char *verdict__kind_label(enum verdict_kind k)
{
	return k < VERDICT_KINDS ? kind_label[k] : "";
}

const char verdict__legend[] = "* = the rule holds (its threshold was passed); the percentages "
			       "are of the time of what the line names.";

/* 1 when a claim of N lines, after LINES printed, leaves room for what follows it. */
static int fits(int lines, int n, int i, int nclaims)
{
	/* The footnote's two lines (and a line saying what is left out) fit too. */
	return lines + n + (i + 1 < nclaims ? 3 : 2) <= MAX_LINES;
}

int verdict__lines(const struct verdict *v, struct verdict_line *out, int max, int *more)
{
	char head[512];
	int n = 0;

	*more = 0;
	if (!verdict__headline(v, head, sizeof(head))[0])
		return 0;
	for (int i = 0; i < v->nshown; i++) {
		const struct claim *c = &v->claims[v->order[i]];
		int detail = c->parent != (int)(c - v->claims);

		if (!fits(2 + i, 1, i, v->nshown) || n == max) { /* the headline, a blank line */
			*more = v->nshown - i;
			break;
		}
		out[n++] = (struct verdict_line){
			c->holds && !detail, detail, detail ? "" : kind_label[c->kind], c->share,
			c->report,	     c->text
		};
	}
	return n;
}

void verdict__print(const struct verdict *v, int width, FILE *f)
{
	char head[512], *buf = NULL;
	int lines, i, n;
	size_t len = 0;
	FILE *mem;
	char unjudged[1024];

	verdict__unjudged(v, unjudged, sizeof(unjudged));
	verdict__headline(v, head, sizeof(head));
	if (!head[0]) {
		char text[1200];

		human__wrap(f, verdict__nothing(v, text, sizeof(text)), width, 0, 2);
		if (unjudged[0])
			human__wrap(f, unjudged, width, 0, 2);
		return;
	}
	lines = fprintf(f, "Verdict: ") ? human__wrap(f, head, width, 9, 2) : 0;
	fprintf(f, "\n");
	lines += 1;
	for (i = 0; i < v->nshown; i++) {
		/* Printed aside first: a claim that would pass the line budget is left out. */
		mem = open_memstream(&buf, &len);
		if (!mem)
			return;
		n = print_claim(v, &v->claims[v->order[i]], width, mem);
		fclose(mem);
		if (!fits(lines, n, i, v->nshown)) {
			fprintf(f, "   (%d more: -r NAME shows each report)\n", v->nshown - i);
			free(buf);
			break;
		}
		fputs(buf, f);
		free(buf);
		buf = NULL;
		lines += n;
	}
	/* What a server's answers could not judge: never left out silently. */
	if (unjudged[0])
		human__wrap(f, unjudged, width, 0, 2);
	human__wrap(f, verdict__legend, width, 0, 2);
}
