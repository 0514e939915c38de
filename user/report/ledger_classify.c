// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a stack says a thread waits in or runs, for the ledger (ledger.h): the frame rules of
 * the interpreter, libc and pthreads here, the families' beside them, and a system call's
 * kind by its number.
 */
#include <stdio.h>
#include <string.h>
#include "family.h"
#include "family_stats.h"
#include "hmap.h"
#include "human.h"
#include "ledger_int.h"
#include "stack_call.h"
#include "stack_format.h"
#include "syscall_names.h"
#include "trace_model.h"

/*
 * CPython's own waits and regions (3.8-3.15). Functions are matched by their qualified name
 * (3.11+: "Condition.wait") or their name alone (before: "wait"); the file by its end.
 */
static const struct ledger_frame_rule python_rules[] = {
	{ LEDGER_LOCK, "/threading.py", "Condition.wait", "a threading.Condition" },
	{ LEDGER_LOCK, "/threading.py", "Condition.wait_for", "a threading.Condition" },
	{ LEDGER_LOCK, "/threading.py", "wait", "a threading.Condition or Event" },
	{ LEDGER_LOCK, "/threading.py", "Event.wait", "a threading.Event" },
	{ LEDGER_LOCK, "/threading.py", "Semaphore.acquire", "a threading.Semaphore" },
	{ LEDGER_LOCK, "/threading.py", "Barrier.wait", "a threading.Barrier" },
	{ LEDGER_LOCK, "/threading.py", "Thread.join", "its threads (Thread.join)", .idle = 1 },
	{ LEDGER_LOCK, "/threading.py", "join", "its threads (Thread.join)", .idle = 1 },
	{ LEDGER_LOCK, "/queue.py", "Queue.get", "a queue.Queue (get)" },
	{ LEDGER_LOCK, "/queue.py", "get", "a queue.Queue (get)" },
	{ LEDGER_LOCK, "/queue.py", "Queue.put", "a full queue.Queue (put)" },
	{ LEDGER_LOCK, "/queue.py", "put", "a full queue.Queue (put)" },
	{ LEDGER_LOCK, "/queue.py", "Queue.join", "a queue.Queue's tasks (join)" },
	{ LEDGER_LOCK, "/multiprocessing/queues.py", "Queue.get", "a multiprocessing.Queue (get)" },
	{ LEDGER_LOCK, "/multiprocessing/queues.py", "get", "a multiprocessing.Queue (get)" },
	{ LEDGER_LOCK, "/multiprocessing/pool.py", NULL, "a multiprocessing.Pool's results" },
	{ LEDGER_LOCK, "/concurrent/futures/_base.py", NULL, "a concurrent.futures.Future" },
	{ LEDGER_IDLE, "/concurrent/futures/thread.py", "_worker", "a thread pool's worker",
	  .idle = 1 },
	{ LEDGER_IDLE, "/multiprocessing/pool.py", "worker", "a process pool's worker", .idle = 1 },
	{ LEDGER_IDLE, "/socketserver.py", "BaseServer.serve_forever", "a server's loop",
	  .idle = 1 },
	{ LEDGER_IDLE, "/socketserver.py", "serve_forever", "a server's loop", .idle = 1 },
	{ LEDGER_IDLE, "/asyncio/base_events.py", "BaseEventLoop._run_once", "an asyncio loop",
	  .idle = 1 },
	{ LEDGER_IDLE, "/asyncio/base_events.py", "_run_once", "an asyncio loop", .idle = 1 },
	{ LEDGER_CHILD, "/subprocess.py", NULL, "a child process (subprocess)" },
	{ LEDGER_CHILD, "/multiprocessing/popen_fork.py", NULL, "a child process" },
	{ LEDGER_INTERP, "<frozen importlib._bootstrap>", NULL, "the interpreter's imports" },
	{ LEDGER_INTERP, "<frozen importlib._bootstrap_external>", NULL,
	  "the interpreter's imports" },
	{ LEDGER_INTERP, "/importlib/__init__.py", NULL, "the interpreter's imports" },
	{ 0 },
};

/* Native functions: the interpreter's locks and sleep, the GIL, glibc's, libgomp's. */
static const struct ledger_frame_rule native_rules[] = {
	{ LEDGER_LOCK, NULL, "lock_PyThread_acquire_lock", "a threading.Lock", .native = 1 },
	{ LEDGER_LOCK, NULL, "rlock_acquire", "a threading.RLock", .native = 1 },
	{ LEDGER_LOCK, NULL, "_thread_RLock_acquire", "a threading.RLock", .native = 1 },
	{ LEDGER_LOCK, NULL, "_thread_lock_acquire", "a threading.Lock", .native = 1 },
	{ LEDGER_LOCK, NULL, "lock_acquire_parse_args", "a threading.Lock", .native = 1 },
	{ LEDGER_LOCK, NULL, "PyThread_acquire_lock_timed", "a threading.Lock", .native = 1 },
	{ LEDGER_LOCK, NULL, "_PyMutex_LockTimed", "a lock of the interpreter", .native = 1 },
	{ LEDGER_GIL, NULL, "take_gil", "the GIL", .native = 1 },
	{ LEDGER_SLEEP, NULL, "pysleep", "time.sleep", .native = 1 },
	{ LEDGER_SLEEP, NULL, "time_sleep", "time.sleep", .native = 1 },
	{ LEDGER_LOCK, NULL, "pthread_mutex_lock", "a pthread mutex", .native = 1 },
	{ LEDGER_LOCK, NULL, "___pthread_mutex_lock", "a pthread mutex", .native = 1 },
	{ LEDGER_LOCK, NULL, "__pthread_mutex_lock", "a pthread mutex", .native = 1 },
	{ LEDGER_LOCK, NULL, "__pthread_mutex_lock_full", "a pthread mutex", .native = 1 },
	{ LEDGER_LOCK, NULL, "pthread_mutex_timedlock", "a pthread mutex", .native = 1 },
	{ LEDGER_LOCK, NULL, "__lll_lock_wait", "a pthread mutex", .native = 1 },
	{ LEDGER_LOCK, NULL, "pthread_rwlock_rdlock", "a pthread rwlock", .native = 1 },
	{ LEDGER_LOCK, NULL, "pthread_rwlock_wrlock", "a pthread rwlock", .native = 1 },
	{ LEDGER_LOCK, NULL, "pthread_cond_wait", "a pthread condition variable", .native = 1 },
	{ LEDGER_LOCK, NULL, "___pthread_cond_wait", "a pthread condition variable", .native = 1 },
	{ LEDGER_LOCK, NULL, "__pthread_cond_wait", "a pthread condition variable", .native = 1 },
	{ LEDGER_LOCK, NULL, "pthread_cond_timedwait", "a pthread condition variable",
	  .native = 1 },
	{ LEDGER_LOCK, NULL, "___pthread_cond_timedwait64", "a pthread condition variable",
	  .native = 1 },
	{ LEDGER_LOCK, NULL, "__pthread_cond_timedwait", "a pthread condition variable",
	  .native = 1 },
	{ LEDGER_LOCK, NULL, "pthread_cond_clockwait", "a pthread condition variable",
	  .native = 1 },
	{ LEDGER_LOCK, NULL, "pthread_barrier_wait", "a pthread barrier", .native = 1 },
	{ LEDGER_LOCK, NULL, "sem_wait", "a semaphore", .native = 1 },
	{ LEDGER_LOCK, NULL, "sem_timedwait", "a semaphore", .native = 1 },
	{ LEDGER_LOCK, NULL, "sem_clockwait", "a semaphore", .native = 1 },
	{ LEDGER_LOCK, NULL, "gomp_barrier_wait_end", "an OpenMP barrier (libgomp)", .native = 1 },
	{ LEDGER_LOCK, NULL, "gomp_team_barrier_wait_end", "an OpenMP barrier (libgomp)",
	  .native = 1 },
	{ LEDGER_LOCK, NULL, "gomp_team_barrier_wait_final", "an OpenMP barrier (libgomp)",
	  .native = 1 },
	{ LEDGER_IDLE, NULL, "blas_thread_server", "OpenBLAS's idle threads", .native = 1,
	  .idle = 1 },
	{ 0 },
};

/* The interpreter's own garbage collection (3.8-3.15; the collector's functions by name). */
static const char *const gc_funcs[] = {
	"collect",
	"collect_with_callback",
	"collect_generations",
	"gc_collect_main",
	"gc_collect_region",
	"gc_collect_full",
	"gc_collect_young",
	"gc_collect_increment",
	"_PyGC_Collect",
	"PyGC_Collect",
	"_Py_RunGC",
	"gc_collect_impl",
	"_PyObject_GC_Link",
	NULL,
};

enum ledger_kind ledger__kind_of_syscall(int nr)
{
	switch (nr) {
	case 35:  /* nanosleep */
	case 230: /* clock_nanosleep */
		return LEDGER_SLEEP;
	case 7:	  /* poll */
	case 23:  /* select */
	case 232: /* epoll_wait */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 281: /* epoll_pwait */
	case 441: /* epoll_pwait2 */
	case 43:  /* accept */
	case 288: /* accept4 */
		return LEDGER_IO;
	case 61:  /* wait4 */
	case 247: /* waitid */
		return LEDGER_CHILD;
	case 202: /* futex */
		return LEDGER_LOCK;
	case 24: /* sched_yield: a thread that polls gives its CPU away, waiting for work */
		return LEDGER_IDLE;
	default:
		return LEDGER_SYSCALL;
	}
}

const char *ledger__nr_name(int nr, char *buf, size_t len)
{
	const char *n = nr >= 0 ? syscall_name((__u32)nr) : NULL;

	if (nr == 61 || nr == 247)
		snprintf(buf, len, "a child process (%s)", n ? n : "wait");
	else if (nr == 202)
		snprintf(buf, len, "a futex (a lock or condition)");
	else if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "syscall_%d", nr);
	return buf;
}

/* "python3.11", "libpython3.12.so.1.0": the interpreter's own code. */
static int interpreter(const char *file)
{
	const char *b = human__base(file);

	return !strncmp(b, "python", 6) || !strncmp(b, "libpython", 9);
}

static int ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), e = strlen(end);

	return n >= e && !strcmp(s + n - e, end);
}

/* Whether FUNC (a frame's name: qualified from 3.11, "Queue.get") is the rule's, exactly. */
static int func_is(const char *func, const char *want)
{
	return !strcmp(func, want);
}

static const struct ledger_frame_rule *match(const struct ledger_frame_rule *r,
					     const struct bs_frame *f, const char *func,
					     const char *file)
{
	for (; r && r->what; r++) {
		if (r->native != (f->kind == BS_FRAME_NATIVE))
			continue;
		if (r->file && !(file && (ends_with(file, r->file) || !strcmp(file, r->file))))
			continue;
		if (r->func && !(func && func_is(func, r->func)))
			continue;
		return r;
	}
	return NULL;
}

/* The frame rule of the highest kind matching F; of equal ones, the first found. */
static const struct ledger_frame_rule *find_rule(const struct bs_frame *f,
						 const struct trace_model *m)
{
	const char *func = f->func_id ? trace_model__string(m, f->func_id) : NULL;
	const char *file = f->file_id ? trace_model__string(m, f->file_id) : NULL;
	const struct ledger_frame_rule *best = NULL, *r;

	if (f->kind != BS_FRAME_PYTHON && f->kind != BS_FRAME_NATIVE)
		return NULL;
	r = match(f->kind == BS_FRAME_PYTHON ? python_rules : native_rules, f, func, file);
	best = r;
	for_each_family(it) {
		const struct family_ledger *fl = family__stats(it.f)->ledger;

		if (!fl || !fl->frames)
			continue;
		r = match(fl->frames, f, func, file);
		if (r && (!best || ledger__kind_prio(r->kind) > ledger__kind_prio(best->kind)))
			best = r;
	}
	return best;
}

/* The traced API's entry a native frame is (its kind for the ledger, a family's api_kind). */
static void find_api(const struct bs_frame *f, const struct trace_model *m, struct lframe *x)
{
	const char *func;

	x->api_kind = -1;
	if (f->kind != BS_FRAME_NATIVE || !f->func_id ||
	    !(func = trace_model__string(m, f->func_id)))
		return;
	for_each_family(it) {
		const struct family_ledger *fl = family__stats(it.f)->ledger;
		const struct ucall_table *t = it.f->api;

		if (!fl || !fl->api_kind || !t)
			continue;
		for (__u32 j = 0; j < t->napis; j++)
			if (!strcmp(t->apis[j].name, func)) {
				x->api = t->apis[j].name;
				x->api_kind = (int)fl->api_kind(&t->apis[j]);
				return;
			}
	}
}

/* The C runtime's libraries: a native stack's job's code is the first frame outside them. */
static int runtime_lib(const char *file)
{
	static const char *const libs[] = { "libc.so",	   "libpthread.so", "ld-linux",
					    "libgcc_s.so", "libstdc++.so",  "libm.so",
					    "libdl.so",	   "librt.so",	    NULL };
	const char *b = human__base(file);

	for (const char *const *l = libs; *l; l++)
		if (!strncmp(b, *l, strlen(*l)))
			return 1;
	return 0;
}

/* A region's rule for F (struct ledger_frame_rule.region), NULL when none. */
static const struct ledger_frame_rule *find_region(const struct bs_frame *f,
						   const struct trace_model *m)
{
	const char *func = f->func_id ? trace_model__string(m, f->func_id) : NULL;
	const char *file = f->file_id ? trace_model__string(m, f->file_id) : NULL;

	for_each_family(it) {
		const struct family_ledger *fl = family__stats(it.f)->ledger;

		for (const struct ledger_frame_rule *r = fl ? fl->frames : NULL; r && r->what; r++)
			if (r->region && match(r, f, func, file) == r)
				return r;
	}
	return NULL;
}

/*
 * What frame F says, worked out once per function and file (stacks share their frames): its
 * rules, the API entry it is, whether it is the job's own code, torch.distributed's function.
 */
static const struct lframe *frame_of(struct ledger *l, const struct bs_frame *f)
{
	static const struct lframe none = { .api_kind = -1 };
	struct lframe *x = hmap__get(
		l->frames, (struct hkey){ (__u64)f->func_id << 32 | f->file_id, f->kind }, 1);
	const char *file, *name;

	if (!x)
		return &none; /* out of memory: said as no rule */
	if (x->seen)
		return x;
	x->seen = 1;
	x->rule = find_rule(f, l->m);
	find_api(f, l->m, x);
	file = stack_frame__file(f, l->m);
	name = f->func_id ? trace_model__string(l->m, f->func_id) : NULL;
	x->python = f->kind == BS_FRAME_PYTHON;
	if (x->python) {
		x->own = !stack_call__library_file(file) && strncmp(file, "<frozen ", 8);
		x->region = find_region(f, l->m);
		/* torch.distributed's (not its c10d_logger's wrapper, nor a module imported) */
		if (strstr(file, "/torch/distributed/") && !strstr(file, "/c10d_logger.py") &&
		    name && name[0] != '<')
			x->dist = name;
	} else if (f->kind == BS_FRAME_NATIVE) {
		x->runtime = runtime_lib(file);
		x->program = f->func_id && !x->runtime && !strstr(human__base(file), ".so");
	}
	return x;
}

/*
 * Where ST is in the job's own code: its innermost Python frame of the job's own code, else its
 * innermost Python frame (stack_call__where's), else in a native program its innermost named
 * frame outside the C runtime (`lock_step` (mutex_job), not `__lll_lock_wait` (libc.so.6)).
 * *OWN: that place is the job's own code (not a library's: libtorch, libgloo).
 */
static const char *job_where(struct ledger *l, const struct trace_stack *st, char *buf, size_t len,
			     int *own)
{
	const struct bs_frame *py = NULL;

	*own = 0;
	for (__u16 i = 0; i < st->nframes; i++) {
		const struct bs_frame *f = &st->frames[i];
		const struct lframe *x;

		if (f->kind != BS_FRAME_PYTHON)
			continue;
		x = frame_of(l, f);
		if (x->own) {
			*own = 1;
			return stack_call__frame(f, l->m, buf, len);
		}
		if (!py)
			py = f;
	}
	if (py)
		return stack_call__frame(py, l->m, buf, len);
	for (__u16 i = 0; i < st->nframes; i++) {
		const struct bs_frame *f = &st->frames[i];
		const struct lframe *x;

		if (f->kind != BS_FRAME_NATIVE || !f->func_id || (x = frame_of(l, f))->runtime)
			continue;
		*own = x->program;
		return stack_call__frame(f, l->m, buf, len);
	}
	return stack_call__where(st, l->m, buf, len);
}

/* A frame for people: "`work` (lock.py:6)", "`sgemm_` (libblas.so.3)", "[libfoo.so]". */
static const char *frame_text(const struct bs_frame *f, const struct trace_model *m, char *buf,
			      size_t len)
{
	if (f->kind == BS_FRAME_NATIVE && !f->func_id) {
		snprintf(buf, len, "[%s]", human__base(stack_frame__file(f, m)));
		return buf;
	}
	return stack_call__frame(f, m, buf, len);
}

/*
 * What stack ST (of a wait, or with SAMPLE of a sample) is in, by the rules: of the frames from
 * the innermost to the job's own code, the rule of the highest kind (the outermost of equal
 * ones); *WHERE the job's line. A sample takes only the rules of regions whose time on a CPU
 * is the region's (the DataLoader's next, a collective, a child, the interpreter's imports).
 */
struct verdict_of {
	enum ledger_kind kind;
	const char *what;
	int idle;
	int found;
};

/* A sample's time on a CPU inside these is theirs; inside a traced API's call (a BLAS GEMM, a
 * CUDA launch) it is the code that ran there, which the family's span takes when recorded. */
static int sample_rule(enum ledger_kind k)
{
	return k == LEDGER_INPUT || k == LEDGER_COLLECTIVE || k == LEDGER_CHILD ||
	       k == LEDGER_INTERP || k == LEDGER_GPU_SYNC;
}

/*
 * The rules over ST's frames from the innermost to the job's own code, then a region's
 * anywhere on it (the outermost): into V and WHAT; a region's job's line into WHERE (else
 * untouched).
 */
static void scan(struct ledger *l, const struct trace_stack *st, const struct trace_model *m,
		 int sample, struct verdict_of *v, char *what, size_t wlen, char *where,
		 size_t rlen)
{
	const struct ledger_frame_rule *r;

	v->found = 0;
	for (__u16 i = 0; i < st->nframes; i++) {
		const struct bs_frame *f = &st->frames[i];
		const struct lframe *x;
		const char *api;
		int k;

		x = frame_of(l, f);
		if (x->python && x->own)
			break; /* the job's own code: what is outside it is the job's doing */
		k = x->api_kind;
		api = x->api;
		if (k >= 0 && (!sample || sample_rule((enum ledger_kind)k)) &&
		    (!v->found || ledger__kind_prio(k) >= ledger__kind_prio(v->kind))) {
			v->kind = (enum ledger_kind)k;
			snprintf(what, wlen, "%s", api);
			v->idle = 0;
			v->found = 1;
			continue;
		}
		r = x->rule;
		if (!r || (sample && !sample_rule(r->kind)))
			continue;
		if (!sample && r->kind == LEDGER_INTERP)
			continue;
		if (v->found && ledger__kind_prio(r->kind) < ledger__kind_prio(v->kind))
			continue;
		v->kind = r->kind;
		snprintf(what, wlen, "%s", r->what);
		v->idle = r->idle;
		v->found = 1;
	}
	/* torch.distributed's collectives (gloo's) by their Python frame, as stacks names them */
	for (int i = st->nframes - 1; i >= 0; i--) {
		const struct lframe *x;

		if (st->frames[i].kind != BS_FRAME_PYTHON ||
		    !(x = frame_of(l, &st->frames[i]))->dist)
			continue;
		if (!v->found ||
		    ledger__kind_prio(LEDGER_COLLECTIVE) >= ledger__kind_prio(v->kind)) {
			v->kind = LEDGER_COLLECTIVE;
			snprintf(what, wlen, "torch.distributed's %s", x->dist);
			v->idle = 0;
			v->found = 1;
		}
		break;
	}
	for (int i = st->nframes - 1; i >= 0; i--) { /* the outermost region */
		if (st->frames[i].kind != BS_FRAME_PYTHON ||
		    !(r = frame_of(l, &st->frames[i])->region))
			continue;
		if (v->found && ledger__kind_prio(r->kind) < ledger__kind_prio(v->kind))
			break;
		v->kind = r->kind;
		snprintf(what, wlen, "%s", r->what);
		v->idle = r->idle;
		v->found = 1;
		frame_text(&st->frames[i], m, where, rlen);
		for (__u16 j = (__u16)i + 1; j < st->nframes; j++)
			if (frame_of(l, &st->frames[j])->own) {
				frame_text(&st->frames[j], m, where, rlen);
				break;
			}
		break;
	}
}

static __u32 cached(struct ledger *l, const struct trace_stack *st, __u64 how)
{
	__u32 *c = hmap__get(l->stack_cls, (struct hkey){ st->id, how }, 0);

	return c ? *c - 1 : LCLASS_NONE;
}

static __u32 cache(struct ledger *l, const struct trace_stack *st, __u64 how, __u32 cls)
{
	__u32 *c = cls == LCLASS_NONE ? NULL
				      : hmap__get(l->stack_cls, (struct hkey){ st->id, how }, 1);

	if (c)
		*c = cls + 1;
	return cls;
}

/* A stack a server's answer says only what it is: its call, its line. */
static __u32 said(struct ledger *l, const struct trace_stack *st, int nr)
{
	char name[48];

	if (st->call)
		return ledger__class(l, LEDGER_API, st->call, st->where, 0);
	if (nr >= 0)
		return ledger__class(l, ledger__kind_of_syscall(nr),
				     ledger__nr_name(nr, name, sizeof(name)), st->where, 0);
	return ledger__class(l, LEDGER_BLOCKED, "", st->where, 0);
}

__u32 ledger__class_of_wait(struct ledger *l, const struct trace_stack *st, int nr)
{
	__u64 how = (__u64)(nr + 1) << 2 | 1;
	struct verdict_of v;
	char what[160], where[256], name[48];
	int own;
	__u32 c;

	if (!st)
		return LCLASS_NONE;
	if ((c = cached(l, st, how)) != LCLASS_NONE)
		return c;
	if (st->where)
		return cache(l, st, how, said(l, st, nr));
	job_where(l, st, where, sizeof(where), &own);
	scan(l, st, l->m, 0, &v, what, sizeof(what), where, sizeof(where));
	if (v.found)
		c = ledger__class_own(l, v.kind, what, where, v.idle, own);
	else if (nr >= 0)
		c = ledger__class_own(l, ledger__kind_of_syscall(nr),
				      ledger__nr_name(nr, name, sizeof(name)), where, 0, own);
	else
		c = ledger__class_own(l, LEDGER_BLOCKED, "", where, 0, own);
	return cache(l, st, how, c);
}

static int gc_frame(const struct bs_frame *f, const struct trace_model *m)
{
	const char *func = f->func_id ? trace_model__string(m, f->func_id) : NULL;

	if (f->kind != BS_FRAME_NATIVE || !func || !interpreter(stack_frame__file(f, m)))
		return 0;
	for (const char *const *g = gc_funcs; *g; g++)
		if (!strcmp(func, *g))
			return 1;
	return 0;
}

__u32 ledger__class_of_sample(struct ledger *l, const struct lsample *s)
{
	const struct trace_stack *st = s->stack;
	__u64 how = (__u64)(s->nr + 1) << 2 | (__u64)s->kernel << 1 | (__u64)s->fault << 12;
	const struct bs_frame *py = NULL, *nat = NULL;
	char what[256], where[256];
	struct verdict_of v;
	int own;
	__u32 c;

	how = how << 1; /* apart from the waits' keys */
	if (!st)
		return ledger__class(l, LEDGER_CODE, "code whose stack was not read", "", 0);
	if ((c = cached(l, st, how)) != LCLASS_NONE)
		return c;
	if (st->where) {
		c = ledger__class(l, s->fault ? LEDGER_FAULT : LEDGER_CODE, st->where, st->where,
				  0);
		return cache(l, st, how, c);
	}
	job_where(l, st, where, sizeof(where), &own);
	if (!strcmp(where, "code whose stack was not read"))
		where[0] = 0;
	if (s->fault)
		return cache(l, st, how,
			     ledger__class_own(l, LEDGER_FAULT, "page faults", where, 0, own));
	if (s->kernel && s->nr >= 0) /* a system call's own work: the call's entry, as its wait */
		return cache(l, st, how, ledger__class_of_wait(l, st, s->nr));
	scan(l, st, l->m, 1, &v, what, sizeof(what), where, sizeof(where));
	if (v.found)
		return cache(l, st, how, ledger__class_own(l, v.kind, what, where, 0, own));
	for (__u16 i = 0; i < st->nframes; i++) {
		const struct bs_frame *f = &st->frames[i];

		if (gc_frame(f, l->m))
			return cache(l, st, how,
				     ledger__class_own(l, LEDGER_INTERP,
						       "the interpreter's garbage collection",
						       where, 0, own));
		if (f->kind == BS_FRAME_PYTHON && !py)
			py = f;
		if (f->kind == BS_FRAME_NATIVE && !nat && !py)
			nat = f;
	}
	/* the innermost code that ran: a library's native function, else the Python line */
	if (nat && !interpreter(stack_frame__file(nat, l->m)))
		frame_text(nat, l->m, what, sizeof(what));
	else if (py)
		frame_text(py, l->m, what, sizeof(what));
	else if (nat)
		frame_text(nat, l->m, what, sizeof(what));
	else
		snprintf(what, sizeof(what), "code whose stack was not read");
	return cache(l, st, how, ledger__class_own(l, LEDGER_CODE, what, where, 0, own));
}
