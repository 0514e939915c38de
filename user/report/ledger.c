// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The ledger: facts per thread, each thread's timeline classified; see ledger.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "family.h"
#include "family_stats.h"
#include "hmap.h"
#include "ledger_int.h"
#include "trace_model.h"

/*
 * Each kind's word, priority (where spans or frame rules overlap, the higher one wins) and key:
 * one per kind, stable across releases (the ledger's rows in ClickHouse, ledger_rows.c).
 */
static const struct {
	const char *name;
	int prio;
	const char *key;
} kinds[LEDGER_KINDS] = {
	[LEDGER_CODE] = { "CPU", 0, "code" },
	[LEDGER_INTERP] = { "CPU", 0, "interp" },
	[LEDGER_FAULT] = { "faults", 0, "faults" },
	[LEDGER_CPU] = { "CPU", 0, "oncpu" },
	[LEDGER_RUNNABLE] = { "no CPU", 0, "runnable" },
	[LEDGER_GIL] = { "GIL", 100, "gil_wait" },
	[LEDGER_COLLECTIVE] = { "collective", 90, "collective" },
	[LEDGER_GPU_SYNC] = { "GPU sync", 85, "gpu_sync" },
	[LEDGER_API] = { "API", 80, "api" },
	[LEDGER_INPUT] = { "input", 70, "input" },
	[LEDGER_IDLE] = { "idle", 65, "idle" },
	[LEDGER_LOCK] = { "lock", 60, "lock" },
	[LEDGER_CHILD] = { "child", 55, "child" },
	[LEDGER_SLEEP] = { "sleep", 50, "sleep" },
	[LEDGER_IO] = { "I/O wait", 45, "io" },
	[LEDGER_SYSCALL] = { "syscall", 40, "syscall" },
	[LEDGER_BLOCKED] = { "blocked", 1, "blocked" },
};

const char *ledger__kind_name(enum ledger_kind k)
{
	return k < LEDGER_KINDS ? kinds[k].name : "?";
}

const char *ledger__kind_key(enum ledger_kind k)
{
	return k < LEDGER_KINDS ? kinds[k].key : "?";
}

int ledger__kind_of(const char *key)
{
	for (int k = 0; key && k < LEDGER_KINDS; k++)
		if (!strcmp(kinds[k].key, key))
			return k;
	return -1;
}

int ledger__kind_prio(enum ledger_kind k)
{
	return k < LEDGER_KINDS ? kinds[k].prio : 0;
}

static __u64 hash_str(__u64 h, const char *s)
{
	while (s && *s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

struct ledger *ledger__new(const struct trace_model *m)
{
	struct ledger *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->m = m;
	l->threads = hmap__new(sizeof(size_t));
	l->cls_of = hmap__new(sizeof(__u32));
	l->stack_cls = hmap__new(sizeof(__u32));
	l->strings = hmap__new(sizeof(size_t));
	l->cpus = hmap__new(sizeof(char));
	l->frames = hmap__new(sizeof(struct lframe));
	l->feed_of = calloc(BS_REC_TYPE_MAX, sizeof(*l->feed_of));
	if (!l->threads || !l->cls_of || !l->stack_cls || !l->strings || !l->cpus || !l->frames ||
	    !l->feed_of) {
		ledger__free(l);
		return NULL;
	}
	for_each_family(it) {
		const struct family_ledger *fl = family__stats(it.f)->ledger;

		if (!fl || !fl->feed)
			continue;
		for (const struct rec_decoder *d = it.f->decode->decoders; d && d->type; d++)
			if (d->type < BS_REC_TYPE_MAX)
				l->feed_of[d->type] = fl;
	}
	return l;
}

static void thread_free(struct lthread *t)
{
	free(t->off);
	free(t->skew);
	free(t->sp);
	free(t->sa);
	free(t->seg);
	free(t->waits);
	free(t->e);
}

void ledger__free(struct ledger *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nthr; i++)
		thread_free(&l->thr[i]);
	free(l->thr);
	for (size_t i = 0; i < l->ncls; i++) {
		free(l->cls[i].what);
		free(l->cls[i].where);
	}
	free(l->cls);
	for (size_t i = 0; i < l->nstr; i++)
		free(l->str[i]);
	free(l->str);
	free(l->unit_e);
	free(l->feed_of);
	hmap__free(l->threads);
	hmap__free(l->tid_pid);
	hmap__free(l->cls_of);
	hmap__free(l->stack_cls);
	hmap__free(l->strings);
	hmap__free(l->cpus);
	hmap__free(l->frames);
	free(l);
}

struct lthread *ledger__thr(struct ledger *l, __u32 pid, __u32 tid, int create)
{
	size_t *ix;

	if (l->last_thr && l->thr[l->last_thr - 1].tid == tid && l->thr[l->last_thr - 1].pid == pid)
		return &l->thr[l->last_thr - 1];
	ix = hmap__get(l->threads, (struct hkey){ pid, tid }, create);

	if (!ix)
		return NULL;
	if (!*ix) {
		if (array__grow_from((void **)&l->thr, l->nthr, &l->cthr, sizeof(*l->thr), 64)) {
			hmap__del(l->threads, (struct hkey){ pid, tid });
			return NULL;
		}
		memset(&l->thr[l->nthr], 0, sizeof(l->thr[0]));
		l->thr[l->nthr].pid = pid;
		l->thr[l->nthr].tid = tid;
		*ix = ++l->nthr;
	}
	l->last_thr = *ix;
	return &l->thr[*ix - 1];
}

static __u32 make_class(struct ledger *l, enum ledger_kind kind, const char *what,
			const char *where, int idle, enum ledger_kind inside, int own)
{
	struct hkey key = { (((__u64)kind << 8 | inside) << 1 | !!idle) << 1 | !!own,
			    hash_str(hash_str(1469598103934665603ull, what) * 31 + 7, where) };
	__u32 *ix = hmap__get(l->cls_of, key, 1);
	struct lclass *c;

	if (!ix)
		return LCLASS_NONE;
	if (*ix)
		return *ix - 1;
	if (array__grow_from((void **)&l->cls, l->ncls, &l->ccls, sizeof(*l->cls), 64))
		goto fail;
	c = &l->cls[l->ncls];
	c->kind = kind;
	c->idle = !!idle;
	c->inside = inside;
	c->own = !!own;
	c->what = strdup(what ? what : "");
	c->where = strdup(where ? where : "");
	if (!c->what || !c->where) {
		free(c->what);
		free(c->where);
		goto fail;
	}
	*ix = (__u32)++l->ncls;
	return *ix - 1;
fail:
	hmap__del(l->cls_of, key);
	return LCLASS_NONE;
}

__u32 ledger__class(struct ledger *l, enum ledger_kind kind, const char *what, const char *where,
		    int idle)
{
	return make_class(l, kind, what, where, idle, LEDGER_CODE, 0);
}

__u32 ledger__class_own(struct ledger *l, enum ledger_kind kind, const char *what,
			const char *where, int idle, int own)
{
	return make_class(l, kind, what, where, idle, LEDGER_CODE, own);
}

__u32 ledger__ready_class(struct ledger *l, __u32 cls)
{
	const struct lclass *c;

	if (cls == LCLASS_NONE)
		return LCLASS_NONE;
	c = &l->cls[cls];
	/* a poll that yields (sched_yield) is ready to run by design: the wait's, idle */
	if (c->kind == LEDGER_RUNNABLE || c->kind == LEDGER_IDLE)
		return cls;
	/* its own code's place: what it ran is the samples' to say, not this */
	return make_class(l, LEDGER_RUNNABLE, c->kind == LEDGER_CODE ? "" : c->what, c->where, 0,
			  c->kind, c->own);
}

const char *ledger__intern(struct ledger *l, const char *s)
{
	size_t *ix;

	if (!s)
		return NULL;
	ix = hmap__get(l->strings, (struct hkey){ hash_str(1469598103934665603ull, s), 0 }, 1);
	if (!ix)
		return NULL;
	if (*ix)
		return l->str[*ix - 1];
	if (array__grow((void **)&l->str, l->nstr, &l->cstr, sizeof(*l->str)) ||
	    !(l->str[l->nstr] = strdup(s))) {
		hmap__del(l->strings, (struct hkey){ hash_str(1469598103934665603ull, s), 0 });
		return NULL;
	}
	*ix = ++l->nstr;
	return l->str[*ix - 1];
}

/* ---- facts ---- */

static void seen(struct ledger *l, __u32 pid, __u32 cpu, __u64 ts)
{
	char *c;

	if (pid != l->seen_pid || cpu != l->seen_cpu) { /* the same as the last, mostly */
		c = hmap__get(l->cpus, (struct hkey){ pid, cpu }, 1);
		if (c)
			*c = 1;
		l->seen_pid = pid;
		l->seen_cpu = cpu;
	}
	if (!l->first_ts || ts < l->first_ts)
		l->first_ts = ts;
	if (ts > l->last_ts)
		l->last_ts = ts;
}

void ledger__offcpu(struct ledger *l, __u32 pid, __u32 tid, __u32 cpu, __u64 out, __u64 dur,
		    __u64 runnable, int blocked, __u32 waker, const struct trace_stack *stack)
{
	struct lthread *t = ledger__thr(l, pid, tid, 1);
	struct loff *o;

	l->timeline = 1;
	if (!t || array__grow((void **)&t->off, t->noff, &t->coff, sizeof(*t->off)))
		return; /* out of memory: the thread's time counts as on a CPU there */
	o = &t->off[t->noff++];
	o->out = out;
	o->in = out + dur;
	o->run = runnable > dur ? dur : runnable;
	o->stack = stack;
	o->waker = waker;
	o->blocked = !!blocked;
	o->open = 0;
	seen(l, pid, cpu, out + dur);
}

void ledger__offcpu_now(struct ledger *l, __u32 pid, __u32 tid, __u32 cpu, __u64 out, __u64 dur,
			int blocked, const struct trace_stack *stack)
{
	struct lthread *t = ledger__thr(l, pid, tid, 1);
	size_t n = t ? t->noff : 0;

	ledger__offcpu(l, pid, tid, cpu, out, dur, 0, blocked, 0, stack);
	if (t && t->noff > n)
		t->off[n].open = 1;
}

void ledger__span(struct ledger *l, const struct ledger_span *s)
{
	struct lthread *t;
	struct lspan *p;

	if (s->dur < LEDGER_SPAN_MIN_NS)
		return;
	t = ledger__thr(l, s->pid, s->tid, 1);

	if (!t || s->kind >= LEDGER_KINDS ||
	    array__grow((void **)&t->sp, t->nsp, &t->csp, sizeof(*t->sp)))
		return;
	p = &t->sp[t->nsp++];
	p->ts = s->ts;
	p->end = s->ts + s->dur;
	p->kind = (__u8)s->kind;
	p->cls = LCLASS_NONE;
	if (s->what != l->last_what || !l->last_interned) { /* the same string, mostly */
		l->last_what = s->what;
		l->last_interned = ledger__intern(l, s->what ? s->what : "");
	}
	p->what = l->last_interned;
	p->nr = (__s16)s->nr;
	p->other = s->other;
	p->stack = s->stack;
}

void ledger__sample(struct ledger *l, __u32 pid, __u32 tid, __u32 cpu, __u64 ts, int kernel,
		    int fault, int nr, const struct trace_stack *stack)
{
	struct lthread *t = ledger__thr(l, pid, tid, 1);
	struct lsample *s;

	if (!t || array__grow((void **)&t->sa, t->nsa, &t->csa, sizeof(*t->sa)))
		return;
	s = &t->sa[t->nsa++];
	s->ts = ts;
	s->stack = stack;
	s->kernel = !!kernel;
	s->fault = !!fault;
	s->nr = (__s16)nr;
	seen(l, pid, cpu, ts);
}

void ledger__clock(struct ledger *l, __u32 pid, __u32 tid, __u64 ts, __u64 cpu_ns,
		   __u64 run_delay_ns, int end, int stale)
{
	struct lthread *t = ledger__thr(l, pid, tid, 1);

	if (!t)
		return;
	/* stale at the end: its next switch-in, which would count the sleep, comes after */
	if (!end)
		t->clk_stale = !!stale;
	t->clk_ts[!!end] = ts;
	t->clk_cpu[!!end] = cpu_ns;
	t->clk_delay[!!end] = run_delay_ns;
}

void ledger__clock_skew(struct ledger *l, __u32 pid, __u32 tid, __u64 ts, __u64 extra)
{
	struct lthread *t = ledger__thr(l, pid, tid, 1);

	if (!t || array__grow((void **)&t->skew, t->nskew, &t->cskew, sizeof(*t->skew)))
		return;
	t->skew[t->nskew++] = (struct lskew){ ts, extra };
}

/*
 * Thread T's time ready to run by its own clocks between the edges, less what its schedstat
 * added for sleeps (its skews between them); *KNOWN 0 where it counts a sleep no skew says
 * (a stale stamp at the start, its wake after the end or not seen).
 */
static __u64 clock_delay(const struct lthread *t, int *known, __u64 *skew)
{
	__u64 d = t->clk_delay[1] - t->clk_delay[0], extra = 0;

	for (size_t i = 0; i < t->nskew; i++)
		if (t->skew[i].ts > t->clk_ts[0] && t->skew[i].ts <= t->clk_ts[1])
			extra += t->skew[i].ns;
	*known = extra || !t->clk_stale;
	if (skew)
		*skew = extra;
	return d > extra ? d - extra : 0;
}

void ledger__life(struct ledger *l, __u32 pid, __u32 tid, __u64 born, __u64 died)
{
	struct lthread *t = ledger__thr(l, pid, tid, 1);

	if (!t)
		return;
	if (born)
		t->born = born;
	if (died)
		t->died = died;
}

void ledger__add(struct ledger *l, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct family_ledger *fl = rec->type < BS_REC_TYPE_MAX ? l->feed_of[rec->type] : NULL;

	if (fl)
		fl->feed(l, rec, m);
}

void ledger__set_window(struct ledger *l, __u64 start, __u64 end)
{
	l->win_start = start;
	l->win_end = end;
}

int ledger__has_timeline(const struct ledger *l)
{
	return l->timeline;
}

/* ---- one thread's timeline ---- */

static int off_cmp(const void *a, const void *b)
{
	const struct loff *x = a, *y = b;

	return x->out < y->out ? -1 : x->out > y->out;
}

static int span_cmp(const void *a, const void *b)
{
	const struct lspan *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end; /* the outer first */
}

static int sample_cmp(const void *a, const void *b)
{
	const struct lsample *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int sorted(const void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	for (size_t i = 1; i < n; i++)
		if (cmp((const char *)v + (i - 1) * size, (const char *)v + i * size) > 0)
			return 0;
	return 1;
}

/* The spans flattened: where they overlap, the highest kind's (an inner one on a tie). */
struct flat {
	__u64 ts, end;
	const struct lspan *sp;
};

static int flatten(const struct lthread *t, struct flat **out, size_t *nout)
{
	const struct lspan **act = malloc(t->nsp * sizeof(*act) + 1);
	size_t nact = 0, next = 0, cap = 0, n = 0;
	struct flat *f = NULL;
	__u64 now;

	if (!act)
		return -ENOMEM;
	/* a sweep over the spans (sorted by start): the edges come in order, no sort of them */
	now = t->nsp ? t->sp[0].ts : 0;
	while (next < t->nsp || nact) {
		const struct lspan *win = NULL;
		__u64 until = ~0ull;
		size_t k = 0;

		while (next < t->nsp && t->sp[next].ts <= now)
			act[nact++] = &t->sp[next++];
		for (size_t j = 0; j < nact; j++) /* drop the spans that ended */
			if (act[j]->end > now)
				act[k++] = act[j];
		nact = k;
		if (!nact) {
			if (next == t->nsp)
				break;
			now = t->sp[next].ts;
			continue;
		}
		for (size_t j = 0; j < nact; j++) {
			if (act[j]->end < until)
				until = act[j]->end;
			if (!win ||
			    ledger__kind_prio(act[j]->kind) > ledger__kind_prio(win->kind) ||
			    (ledger__kind_prio(act[j]->kind) == ledger__kind_prio(win->kind) &&
			     act[j]->ts >= win->ts))
				win = act[j];
		}
		if (next < t->nsp && t->sp[next].ts < until)
			until = t->sp[next].ts;
		if (n && f[n - 1].sp == win && f[n - 1].end == now) {
			f[n - 1].end = until;
		} else {
			if (array__grow((void **)&f, n, &cap, sizeof(*f))) {
				free(act);
				free(f);
				return -ENOMEM;
			}
			f[n++] = (struct flat){ now, until, win };
		}
		now = until;
	}
	free(act);
	*out = f;
	*nout = n;
	return 0;
}

/* Sums per class of one thread, and what waits in system calls without a stack held back. */
struct acc {
	__u64 ns, oncpu, runnable;
};

struct walk {
	struct ledger *l;
	struct lthread *t;
	struct hmap *acc;     /* {class, 0} -> struct acc */
	struct hmap *nr_cls;  /* {nr, class} -> ns: what stacked waits in NR were */
	struct hmap *nr_wait; /* {nr, state} -> ns: waits in NR without a stack */
	const struct flat *f;
	size_t nf, fi;
	size_t si;	       /* the next sample */
	__u64 free_ns;	       /* on a CPU outside any span: the samples say where */
	struct hmap *free_cnt; /* {class, 0} -> samples, of those in that time */
	__u64 nfree;
	__u32 last_region; /* the class of the last sample of the on-CPU slice before, if a wait */
	__u32 last_cls;	   /* account()'s last class, and its sums */
	struct acc *last_acc;
	int err;
};

static void account(struct walk *w, __u32 cls, int state, __u64 ns)
{
	struct acc *a;

	if (cls == LCLASS_NONE || !ns)
		return;
	/* the pieces in a row are mostly of one class: its sums kept at hand (an insert moves
	 * the map's values, so the next class looked up forgets it) */
	if (cls == w->last_cls && w->last_acc) {
		a = w->last_acc;
	} else {
		a = hmap__get(w->acc, (struct hkey){ cls, 0 }, 1);
		w->last_cls = cls;
		w->last_acc = a;
	}
	if (!a) {
		w->err = -ENOMEM;
		return;
	}
	a->ns += ns;
	if (state == LSTATE_ONCPU)
		a->oncpu += ns;
	else if (state == LSTATE_RUNNABLE)
		a->runnable += ns;
}

static void add_seg(struct walk *w, __u64 ts, __u64 end, __u32 cls, int state)
{
	struct lthread *t = w->t;

	if (t->nseg && t->seg[t->nseg - 1].end == ts && t->seg[t->nseg - 1].cls == cls &&
	    t->seg[t->nseg - 1].state == state) {
		t->seg[t->nseg - 1].end = end;
		return;
	}
	if (array__grow((void **)&t->seg, t->nseg, &t->cseg, sizeof(*t->seg))) {
		w->err = -ENOMEM;
		return;
	}
	t->seg[t->nseg++] = (struct lseg){ ts, end, cls, (__u8)state };
}

static __u32 span_class_of(struct walk *w, const struct lspan *s)
{
	char where[256] = "";
	int own = 0;

	if (s->stack) {
		__u32 c = ledger__class_of_wait(w->l, s->stack, -1);

		if (c != LCLASS_NONE) {
			snprintf(where, sizeof(where), "%s", w->l->cls[c].where);
			own = w->l->cls[c].own;
		}
	}
	if (s->nr >= 0) { /* a system call: named by its number */
		char name[32];

		return ledger__class_own(w->l, ledger__kind_of_syscall(s->nr),
					 ledger__nr_name(s->nr, name, sizeof(name)), where, 0, own);
	}
	return ledger__class_own(w->l, (enum ledger_kind)s->kind, s->what, where, 0, own);
}

/* Span S's class, made once. */
static __u32 span_class(struct walk *w, const struct lspan *cs)
{
	struct lspan *s = (struct lspan *)cs; /* the thread's own array: its cache */

	if (s->cls == LCLASS_NONE)
		s->cls = span_class_of(w, s);
	return s->cls;
}

static int is_region(enum ledger_kind k)
{
	return k != LEDGER_CODE && k != LEDGER_INTERP && k != LEDGER_FAULT && k != LEDGER_CPU &&
	       k != LEDGER_RUNNABLE;
}

static void note_wait(struct walk *w, const struct loff *o, __u32 cls, __u64 ns)
{
	struct lthread *t = w->t;

	if (!o->waker || cls == LCLASS_NONE)
		return;
	if (t->nwaits && t->waits[t->nwaits - 1].in == o->in - o->run &&
	    t->waits[t->nwaits - 1].cls == cls) {
		t->waits[t->nwaits - 1].ns += ns;
		return;
	}
	if (array__grow((void **)&t->waits, t->nwaits, &t->cwaits, sizeof(*t->waits))) {
		w->err = -ENOMEM;
		return;
	}
	t->waits[t->nwaits++] = (struct lwait){ o->in - o->run, cls, o->waker, ns };
}

static void hmap_add(struct walk *w, struct hmap *m, struct hkey k, __u64 ns)
{
	__u64 *v = hmap__get(m, k, 1);

	if (v)
		*v += ns;
	else
		w->err = -ENOMEM;
}

#define SAMPLE_NEAR 50000000ull /* a sample this close before a moment says where it was */

/* Ready to run outside any wait from TS: at the job's line of its last sample before, if near. */
static __u32 runnable_class(struct walk *w, __u64 ts)
{
	const struct lthread *t = w->t;
	size_t lo = 0, hi = t->nsa;
	const char *where = "";
	int own = 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->sa[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && t->sa[lo - 1].ts + SAMPLE_NEAR >= ts) {
		__u32 c = ledger__class_of_sample(w->l, &t->sa[lo - 1]);

		if (c != LCLASS_NONE) {
			where = w->l->cls[c].where;
			own = w->l->cls[c].own;
		}
	}
	return ledger__class_own(w->l, LEDGER_RUNNABLE, "", where, 0, own);
}

#define JOIN_NEAR 50000000ull /* a waker that ended this soon after the wakeup was joined */

/*
 * Class CLS of a wait in interval O, or a join's where its waker, a thread of the same
 * process, ended right after waking it (pthread_join's futex, Thread.join's lock released at
 * the thread's end): waiting for threads to finish is theirs to carry, by design, as the
 * stacks' Thread.join is (ledger_classify.c); known without stacks too.
 */
static __u32 join_class(struct walk *w, const struct loff *o, __u32 cls)
{
	const struct lclass *c = &w->l->cls[cls];
	const struct lthread *wt;
	__u64 wake = o->in - o->run;

	if (c->idle || (c->kind != LEDGER_LOCK && c->kind != LEDGER_BLOCKED) || !o->waker ||
	    o->waker == w->t->tid || !(wt = ledger__thr(w->l, w->t->pid, o->waker, 0)) ||
	    !wt->died || wt->died < wake || wt->died - wake > JOIN_NEAR)
		return cls;
	return ledger__class_own(w->l, LEDGER_LOCK, "its threads' end (a join)", c->where, 1,
				 c->own);
}

/* [A, B) of state STATE (off-CPU: inside interval O), under span S (NULL: none). */
static void sub_piece(struct walk *w, __u64 a, __u64 b, int state, const struct loff *o,
		      const struct lspan *s)
{
	__u32 cls = LCLASS_NONE, scls;

	if (b <= a)
		return;
	if (state == LSTATE_ONCPU) {
		if (s) {
			cls = span_class(w, s);
			account(w, cls, state, b - a);
			add_seg(w, a, b, cls, state);
			return;
		}
		w->free_ns += b - a;
		add_seg(w, a, b, LCLASS_NONE, state);
		/* the samples of this time say where it went */
		while (w->si < w->t->nsa && w->t->sa[w->si].ts < a)
			w->si++;
		for (; w->si < w->t->nsa && w->t->sa[w->si].ts < b; w->si++) {
			__u32 c = ledger__class_of_sample(w->l, &w->t->sa[w->si]);

			hmap_add(w, w->free_cnt, (struct hkey){ c, 0 }, 1);
			w->nfree++;
			w->last_region =
				c != LCLASS_NONE && is_region(w->l->cls[c].kind) ? c : LCLASS_NONE;
		}
		return;
	}
	if (!o->blocked) { /* preempted: ready to run, inside what it was doing */
		cls = s ? span_class(w, s) : w->last_region;
		/* who had the CPUs meanwhile: ledger_unit.c accounts it */
		add_seg(w, a, b,
			cls == LCLASS_NONE ? runnable_class(w, a) : ledger__ready_class(w->l, cls),
			LSTATE_RUNNABLE);
		return;
	}
	/* blocked (its tail ready to run: an entry of its own, inside this wait) */
	scls = s ? span_class(w, s) : LCLASS_NONE;
	if (o->stack)
		cls = ledger__class_of_wait(w->l, o->stack, s && s->nr >= 0 ? s->nr : -1);
	if (o->stack && s && s->nr >= 0 && cls != LCLASS_NONE && state == LSTATE_BLOCKED)
		hmap_add(w, w->nr_cls, (struct hkey){ (__u64)s->nr, cls }, b - a);
	if (cls != LCLASS_NONE && scls != LCLASS_NONE &&
	    ledger__kind_prio(w->l->cls[scls].kind) > ledger__kind_prio(w->l->cls[cls].kind)) {
		const struct lclass *sc = &w->l->cls[scls];

		/* the call's kind, at the line the interval's stack gives */
		cls = *sc->where ? scls
				 : ledger__class_own(w->l, sc->kind, sc->what, w->l->cls[cls].where,
						     sc->idle, w->l->cls[cls].own);
	} else if (cls == LCLASS_NONE && scls != LCLASS_NONE) {
		if (s->nr >= 0 && !o->stack && state == LSTATE_BLOCKED &&
		    join_class(w, o, scls) == scls) {
			/* where it was: its stacked waits in that call (spread) */
			hmap_add(w, w->nr_wait, (struct hkey){ (__u64)s->nr, (__u64)state }, b - a);
			add_seg(w, a, b, scls, state);
			return;
		}
		cls = scls;
	}
	if (cls == LCLASS_NONE)
		cls = ledger__class(w->l, LEDGER_BLOCKED, "", "", 0);
	cls = join_class(w, o, cls);
	if (state == LSTATE_RUNNABLE) {
		add_seg(w, a, b, ledger__ready_class(w->l, cls), state);
		return;
	}
	account(w, cls, state, b - a);
	add_seg(w, a, b, cls, state);
	note_wait(w, o, cls, b - a);
}

/* [A, B) of STATE, cut where the spans change. */
static void piece(struct walk *w, __u64 a, __u64 b, int state, const struct loff *o)
{
	while (w->fi < w->nf && w->f[w->fi].end <= a)
		w->fi++;
	for (size_t i = w->fi; a < b; i++) {
		if (i >= w->nf || w->f[i].ts >= b) {
			sub_piece(w, a, b, state, o, NULL);
			return;
		}
		if (w->f[i].ts > a) {
			sub_piece(w, a, w->f[i].ts, state, o, NULL);
			a = w->f[i].ts;
		}
		__u64 e = w->f[i].end < b ? w->f[i].end : b;

		sub_piece(w, a, e, state, o, w->f[i].sp);
		a = e;
	}
}

/* N ns split by the weights of M's values keyed {K, class}: each class its part. */
static void spread(struct walk *w, struct hmap *m, __u64 k, int state, __u64 n)
{
	__u64 sum = 0, given = 0, *v;
	__u32 best = LCLASS_NONE;
	__u64 bestv = 0;
	struct hkey key;
	size_t it = 0;

	while ((v = hmap__next(m, &it, &key)))
		if (key.a == k)
			sum += *v;
	if (!sum) {
		char name[32];

		account(w,
			ledger__class(w->l, ledger__kind_of_syscall((int)k),
				      ledger__nr_name((int)k, name, sizeof(name)), "", 0),
			state, n);
		return;
	}
	it = 0;
	while ((v = hmap__next(m, &it, &key))) {
		__u64 part;

		if (key.a != k)
			continue;
		part = (__u64)((double)n * *v / sum);
		account(w, (__u32)key.b, state, part);
		given += part;
		if (*v > bestv) {
			bestv = *v;
			best = (__u32)key.b;
		}
	}
	account(w, best, state, n - given); /* the rounding, to the largest */
}

static int entry_cmp(const void *a, const void *b)
{
	const struct ledger_entry *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

static int entries(struct walk *w)
{
	struct lthread *t = w->t;
	struct acc *a;
	struct hkey key;
	size_t it = 0, n = 0;

	t->e = calloc(hmap__count(w->acc) + 1, sizeof(*t->e));
	if (!t->e)
		return -ENOMEM;
	while ((a = hmap__next(w->acc, &it, &key))) {
		const struct lclass *c = &w->l->cls[key.a];

		t->e[n++] = (struct ledger_entry){
			.kind = c->kind,
			.what = c->what,
			.where = c->where,
			.ns = a->ns,
			.oncpu_ns = a->oncpu,
			.runnable_ns = a->runnable,
			.idle = c->idle,
			.inside = c->inside,
			.own = c->own,
			.cls = (__u32)key.a,
		};
		if (c->idle)
			t->idle_ns += a->ns;
	}
	t->ne = n;
	qsort(t->e, n, sizeof(*t->e), entry_cmp);
	return 0;
}

static int build_thread(struct ledger *l, struct lthread *t, __u64 start, __u64 end)
{
	struct walk w = { .l = l, .t = t, .last_region = LCLASS_NONE, .last_cls = LCLASS_NONE };
	struct flat *f = NULL;
	__u64 cur, longest = 0, run_len = 0, *v;
	struct hkey key;
	size_t it = 0;
	int err;

	t->w0 = t->born > start ? t->born : start;
	t->w1 = t->died && t->died < end ? t->died : end;
	if (t->w1 <= t->w0) {
		t->w1 = t->w0;
		return 0;
	}
	t->total = t->w1 - t->w0;
	/* the records come in their thread's order, nearly always: sorted only when not */
	if (!sorted(t->off, t->noff, sizeof(*t->off), off_cmp))
		qsort(t->off, t->noff, sizeof(*t->off), off_cmp);
	if (!sorted(t->sp, t->nsp, sizeof(*t->sp), span_cmp))
		qsort(t->sp, t->nsp, sizeof(*t->sp), span_cmp);
	if (!sorted(t->sa, t->nsa, sizeof(*t->sa), sample_cmp))
		qsort(t->sa, t->nsa, sizeof(*t->sa), sample_cmp);
	/* its pieces: about two per off-CPU interval, one more per span's edge */
	if (!t->cseg) {
		t->cseg = 2 * t->noff + 2 * t->nsp + 8;
		t->seg = malloc(t->cseg * sizeof(*t->seg));
		if (!t->seg)
			return -ENOMEM;
	}
	for (size_t i = 0; i < t->nsp; i++) { /* inside the thread's time only */
		t->sp[i].ts = t->sp[i].ts < t->w0 ? t->w0 : t->sp[i].ts;
		t->sp[i].end = t->sp[i].end > t->w1 ? t->w1 : t->sp[i].end;
		if (t->sp[i].end < t->sp[i].ts)
			t->sp[i].end = t->sp[i].ts;
	}
	err = flatten(t, &f, &w.nf);
	if (err)
		return err;
	w.f = f;
	w.acc = hmap__new(sizeof(struct acc));
	w.nr_cls = hmap__new(sizeof(__u64));
	w.nr_wait = hmap__new(sizeof(__u64));
	w.free_cnt = hmap__new(sizeof(__u64));
	if (!w.acc || !w.nr_cls || !w.nr_wait || !w.free_cnt) {
		err = -ENOMEM;
		goto out;
	}
	cur = t->w0;
	for (size_t i = 0; i < t->noff && !w.err; i++) {
		const struct loff *o = &t->off[i];
		__u64 out = o->out < cur ? cur : o->out, in = o->in > t->w1 ? t->w1 : o->in;
		__u64 wake = o->in - o->run;

		if (out >= t->w1)
			break;
		if (in <= out)
			continue;
		if (out > cur) {
			w.last_region = LCLASS_NONE; /* a new slice on the CPU */
			piece(&w, cur, out, LSTATE_ONCPU, o);
		}
		if (wake < out)
			wake = out;
		if (wake > in)
			wake = in;
		if (!o->blocked) {
			piece(&w, out, in, LSTATE_RUNNABLE, o);
		} else {
			piece(&w, out, wake, LSTATE_BLOCKED, o);
			piece(&w, wake, in, LSTATE_RUNNABLE, o);
		}
		/* one sleep, also where it came in pieces with no run between (top's refreshes) */
		run_len = o->blocked ? (out == cur && run_len ? run_len : 0) + (in - out) : 0;
		if (run_len > longest)
			longest = run_len;
		cur = in;
	}
	if (cur < t->w1 && !w.err) {
		w.last_region = LCLASS_NONE;
		piece(&w, cur, t->w1, LSTATE_ONCPU, NULL);
	}
	/* on a CPU outside spans: by the samples there, else not known */
	if (w.free_ns && w.nfree) {
		__u64 given = 0, bestn = 0;
		__u32 best = LCLASS_NONE;

		it = 0;
		while ((v = hmap__next(w.free_cnt, &it, &key))) {
			__u64 part = (__u64)((double)w.free_ns * *v / w.nfree);

			account(&w, (__u32)key.a, LSTATE_ONCPU, part);
			given += part;
			if (*v > bestn) {
				bestn = *v;
				best = (__u32)key.a;
			}
		}
		account(&w, best, LSTATE_ONCPU, w.free_ns - given);
	} else if (w.free_ns) {
		account(&w, ledger__class(l, LEDGER_CPU, "", "", 0), LSTATE_ONCPU, w.free_ns);
	}
	/* waits in a system call too short for a stack: where its stacked ones were */
	it = 0;
	while ((v = hmap__next(w.nr_wait, &it, &key)))
		spread(&w, w.nr_cls, key.a, (int)key.b, *v);
	/* a wait that took (nearly) all its time: asleep by design (a wrapper, a joiner) */
	t->throughout = longest * 10 >= t->total * 9;
	err = w.err ?: entries(&w);
out:
	free(f);
	hmap__free(w.acc);
	hmap__free(w.nr_cls);
	hmap__free(w.nr_wait);
	hmap__free(w.free_cnt);
	return err;
}

int ledger__build_thread(struct ledger *l, struct lthread *t)
{
	int err;

	if (t->built)
		return 0;
	t->built = 1;
	err = build_thread(l, t, l->start, l->end);
	if (!err && l->finished)
		ledger__finish_thread(l, t);
	return err;
}

/* A thread's window and its quick sums on a CPU, ready to run and blocked (of its intervals). */
static void quick(struct ledger *l, struct lthread *t)
{
	__u64 off = 0, ready = 0, longest = 0, run_len = 0, prev = 0;

	t->w0 = t->born > l->start ? t->born : l->start;
	t->w1 = t->died && t->died < l->end ? t->died : l->end;
	if (t->w1 <= t->w0)
		return;
	t->total = t->w1 - t->w0;
	for (size_t i = 0; i < t->noff; i++) {
		const struct loff *o = &t->off[i];
		__u64 a = o->out > t->w0 ? o->out : t->w0, b = o->in < t->w1 ? o->in : t->w1;
		__u64 wake = o->blocked ? o->in - o->run : o->out;

		if (b <= a)
			continue;
		off += b - a;
		/* one sleep, also in pieces with no run between (as build_thread counts it) */
		run_len = o->blocked ? (a == prev && run_len ? run_len : 0) + (b - a) : 0;
		if (run_len > longest)
			longest = run_len;
		prev = b;
		wake = wake > a ? wake : a;
		ready += b > wake ? b - wake : 0;
	}
	off = off < t->total ? off : t->total;
	t->q_on = t->total - off;
	t->q_ready = ready;
	t->q_blocked = off - (ready < off ? ready : off);
	t->throughout_q = longest * 10 >= t->total * 9;
}

/*
 * A live interval (top's, ledger__set_window): a thread asleep at its end has no record of that
 * sleep yet (its switch-in writes it), and its timeline alone would count the sleep as time on
 * a CPU. Its own clocks at the interval's edges (ledger__clock) say how long it ran: the time
 * the timeline has on a CPU beyond that is the sleep under way, from the interval's end back
 * (after its last switch-in), blocked in what is not known; of it, ready to run, what its
 * clock's wait for a CPU has beyond the intervals'. Less than a tick of it is the two
 * clocks' difference, not a sleep.
 */
#define TAIL_MIN_NS 4000000ull /* a tick at HZ=250 */

/*
 * A live read's sleep (open) goes on after the read: to the next interval of the thread that
 * begins after it, else to END, unless one of its records covers the read (the thread's own
 * switch-in wrote that sleep whole). Without it, the time from the read to the cut counted as
 * on a CPU in an interval without the thread's clocks (its first): a main thread asleep in a
 * read throughout ran 203 ms of 994 ms, where top's read of the pool took long under load.
 */
static void open_reads(struct lthread *t, __u64 end)
{
	for (size_t i = 0; i < t->noff; i++) {
		struct loff *o = &t->off[i];
		__u64 next = end;
		int covered = 0;

		if (!o->open || o->in >= end)
			continue;
		for (size_t j = 0; j < t->noff && !covered; j++) {
			const struct loff *p = &t->off[j];

			if (j == i)
				continue;
			if (!p->open && p->out <= o->in && p->in > o->in)
				covered = 1;
			else if (p->out >= o->in && p->out < next)
				next = p->out;
		}
		if (!covered)
			o->in = next;
	}
}

static void tail_asleep(struct lthread *t, __u64 start, __u64 end)
{
	__u64 off = 0, run = 0, last = t->born > start ? t->born : start, cpu, delay, on, e;
	struct loff *o;
	int known;

	if (!t->clk_ts[0] || !t->clk_ts[1] || (t->died && t->died < end))
		return;
	for (size_t i = 0; i < t->noff; i++) {
		__u64 a = t->off[i].out > start ? t->off[i].out : start;
		__u64 b = t->off[i].in < end ? t->off[i].in : end;

		if (b > a) {
			off += b - a;
			run += t->off[i].run < b - a ? t->off[i].run : b - a;
		}
		if (b > last)
			last = b;
	}
	cpu = t->clk_cpu[1] - t->clk_cpu[0];
	delay = clock_delay(t, &known, NULL);
	delay = known ? delay : 0;
	on = end - (t->born > start ? t->born : start) - off;
	if (on <= cpu + TAIL_MIN_NS || end <= last)
		return;
	e = on - cpu < end - last ? on - cpu : end - last;
	if (array__grow((void **)&t->off, t->noff, &t->coff, sizeof(*t->off)))
		return;
	o = &t->off[t->noff++];
	memset(o, 0, sizeof(*o));
	o->out = end - e;
	o->in = end;
	o->run = delay > run ? (delay - run < e ? delay - run : e) : 0;
	o->blocked = o->run < e;
}

/* Build as ALL (every thread: the report's rows) or as the verdict needs (ledger_unit.c). */
static int build(struct ledger *l, const struct trace_model *m, int all)
{
	__u64 start = trace_model__start(m), end = trace_model__end(m);
	int err;

	if (l->built == 2 || (l->built && !all))
		return 0;
	l->m = m;
	if (!l->built) {
		if (!start || (l->first_ts && l->first_ts < start))
			start = start ? start : l->first_ts;
		if (!end || end < start)
			end = l->last_ts;
		if (l->win_end > l->win_start) {
			start = l->win_start;
			end = l->win_end;
		}
		l->start = start;
		l->end = end;
		for (size_t i = 0; l->win_end > l->win_start && i < l->nthr; i++) {
			open_reads(&l->thr[i], end);
			tail_asleep(&l->thr[i], start, end);
		}
		for (size_t i = 0; i < l->nthr; i++)
			quick(l, &l->thr[i]);
	}
	for (size_t i = 0; all && i < l->nthr; i++) {
		err = ledger__build_thread(l, &l->thr[i]);
		if (err)
			return err;
	}
	if (l->built) { /* built for the verdict first: its unit stays */
		l->built = 2;
		return 0;
	}
	l->built = all ? 2 : 1;
	return ledger__units(l);
}

int ledger__build(struct ledger *l, const struct trace_model *m)
{
	return build(l, m, 0);
}

int ledger__build_all(struct ledger *l, const struct trace_model *m)
{
	return build(l, m, 1);
}

/* ---- reading ---- */

const struct ledger_entry *ledger__thread(const struct ledger *l, __u32 pid, __u32 tid, size_t *n,
					  __u64 *total)
{
	const size_t *ix = hmap__get(l->threads, (struct hkey){ pid, tid }, 0);
	const struct lthread *t = ix ? &l->thr[*ix - 1] : NULL;

	*n = t ? t->ne : 0;
	if (total)
		*total = t ? t->total : 0;
	return t ? t->e : NULL;
}

__u64 ledger__time_in(const struct ledger *l, __u32 pid, __u32 tid, enum ledger_kind kind)
{
	const struct ledger_entry *e;
	size_t n;
	__u64 ns = 0;

	e = ledger__thread(l, pid, tid, &n, NULL);
	for (size_t i = 0; i < n; i++)
		if (e[i].kind == kind || (e[i].kind == LEDGER_RUNNABLE && e[i].inside == kind))
			ns += e[i].ns;
	return ns;
}

int ledger__next_thread(const struct ledger *l, size_t *it, __u32 *pid, __u32 *tid)
{
	while (*it < l->nthr) {
		const struct lthread *t = &l->thr[(*it)++];

		if (!t->total)
			continue;
		*pid = t->pid;
		*tid = t->tid;
		return 1;
	}
	return 0;
}

/* How long before its window's start T was queued for a CPU it got inside (0: it was not). */
static __u64 queued_before(const struct lthread *t)
{
	for (size_t i = 0; i < t->noff; i++) {
		const struct loff *o = &t->off[i];
		__u64 q = o->blocked ? o->in - o->run : o->out;

		if (o->in <= t->w0)
			continue;
		return o->out < t->w0 && q < t->w0 ? t->w0 - q : 0;
	}
	return 0;
}

int ledger__check(const struct ledger *l, size_t *it, struct ledger_check *c)
{
	while (*it < l->nthr) {
		const struct lthread *t = &l->thr[(*it)++];
		__u64 a = t->clk_ts[0], b = t->clk_ts[1];
		int known;

		if (!a || b <= a || !t->total || t->clk_cpu[1] < t->clk_cpu[0] ||
		    t->clk_delay[1] < t->clk_delay[0])
			continue;
		memset(c, 0, sizeof(*c));
		c->pid = t->pid;
		c->tid = t->tid;
		c->window_ns = b - a;
		c->clock_oncpu_ns = t->clk_cpu[1] - t->clk_cpu[0];
		c->clock_runnable_ns = clock_delay(t, &known, &c->clock_skew_ns);
		c->clock_stale = !known;
		/*
		 * The timeline between the two reads, as the kernel counts it: time on a CPU as it
		 * passes, a wait for a CPU whole when it ends (schedstat adds a thread's time queued
		 * as it gets a CPU: one still waiting at a read is not in it yet). A wait the window
		 * began in is whole too: from when the thread was queued, before the timeline (a
		 * thread of -p ready at the start; 9 points of its time, a FIFO hog beside it).
		 */
		__u64 before = queued_before(t);

		for (size_t k = 0, q = 0; k < t->nseg; k++) {
			const struct lseg *g = &t->seg[k];
			__u64 x = g->ts > a ? g->ts : a, y = g->end < b ? g->end : b;

			if (g->state == LSTATE_ONCPU && y > x)
				c->oncpu_ns += y - x;
			if (g->state != LSTATE_RUNNABLE)
				continue;
			if (!q || t->seg[k - 1].state != LSTATE_RUNNABLE ||
			    t->seg[k - 1].end != g->ts)
				q = g->ts == t->w0 ? t->w0 - before : g->ts; /* a new wait */
			if (g->end > a && g->end <= b &&
			    (k + 1 == t->nseg || t->seg[k + 1].state != LSTATE_RUNNABLE ||
			     t->seg[k + 1].ts != g->end))
				c->runnable_ns += g->end - q;
		}
		/* before its first piece or after its last (none: it ran throughout) */
		if (!t->nseg)
			c->oncpu_ns = b - a;
		return 1;
	}
	return 0;
}

int ledger__critical(const struct ledger *l, struct ledger_unit *u, const struct ledger_entry **e,
		     size_t *n)
{
	if (!l->has_unit)
		return -ENOENT;
	*u = l->unit;
	*e = l->unit_e;
	*n = l->unit_ne;
	return 0;
}

const char *ledger__entry_text(const struct ledger_entry *e, int plural, char *buf, size_t len)
{
	const char *was = plural ? "were" : "was";
	const char *at = e->where && *e->where ? " at " : "", *where = e->where ? e->where : "";

	switch (e->kind) {
	case LEDGER_CODE:
		if (!strcmp(e->what, where) || !*where)
			snprintf(buf, len, "ran %s", e->what);
		else
			snprintf(buf, len, "ran %s, called%s%s", e->what, at, where);
		break;
	case LEDGER_INTERP:
		snprintf(buf, len, "ran %s%s%s", e->what, at, where);
		break;
	case LEDGER_FAULT:
		snprintf(buf, len, "handled page faults%s%s", at, where);
		break;
	case LEDGER_CPU:
		snprintf(buf, len, "ran on a CPU (in which code is not known: no CPU samples)");
		break;
	case LEDGER_RUNNABLE:
		snprintf(buf, len, "%s ready to run but had no CPU%s%s", was, at, where);
		break;
	case LEDGER_GIL:
		snprintf(buf, len, "waited for the GIL%s%s", at, where);
		break;
	case LEDGER_COLLECTIVE:
		snprintf(buf, len, "waited in the collective %s%s%s", e->what, at, where);
		break;
	case LEDGER_GPU_SYNC:
		snprintf(buf, len, "waited for the GPU in %s%s%s", e->what, at, where);
		break;
	case LEDGER_API:
		snprintf(buf, len, "%s in %s%s%s", was, e->what, at, where);
		break;
	case LEDGER_INPUT:
		snprintf(buf, len, "waited for %s%s%s", e->what, at, where);
		break;
	case LEDGER_LOCK:
		snprintf(buf, len, "waited for %s%s%s", e->what, at, where);
		break;
	case LEDGER_CHILD:
		snprintf(buf, len, "waited for %s%s%s", e->what, at, where);
		break;
	case LEDGER_SLEEP:
		snprintf(buf, len, "slept in %s%s%s", e->what, at, where);
		break;
	case LEDGER_IO:
		snprintf(buf, len, "waited for I/O in %s%s%s", e->what, at, where);
		break;
	case LEDGER_SYSCALL:
		snprintf(buf, len, "%s in the system call %s%s%s", was, e->what, at, where);
		break;
	case LEDGER_IDLE:
		snprintf(buf, len, "waited for work (%s)%s%s", e->what, at, where);
		break;
	default:
		snprintf(buf, len, "%s blocked, in what is not known%s%s", was, at, where);
		break;
	}
	return buf;
}
