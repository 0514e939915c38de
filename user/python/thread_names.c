// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Python thread names written while recording (thread_names.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "mono_clock.h"
#include "py_threads.h"
#include "record_ctx.h"
#include "hmap.h"
#include "thread_names.h"

#define NAMES_PERIOD_NS 1000000000ull /* a process's names are read again after this */
#define NAMES_SOON_NS	50000000ull   /* ... or this, while a new thread has no name yet */
#define NAMES_SOON	5	      /* reads a new thread gets soon */
#define NAMES_PER_POLL	8	      /* processes read per call */
#define NAMES_MAX	1024	      /* threads of a process named */
#define NAMES_SHARE	20	      /* a process's reads take at most 1/20 of the time */

struct names_proc {
	__u64 next_ns; /* when to read again (0: at the next poll) */
	__u64 last_ns; /* when it was read last */
	__u64 gap_ns; /* the least time between two reads: NAMES_SOON_NS, or more for a long read */
	__u32 soon;   /* reads left at gap_ns */
};

struct names_thread {
	__u32 name_id; /* the name last written, 0 = none */
};

struct thread_names {
	struct py_threads *py;
	struct hmap *procs;   /* pid -> struct names_proc */
	struct hmap *threads; /* (pid, tid) -> struct names_thread: threads seen */
	__u32 last_pid, last_tid;
	struct py_thread_name buf[NAMES_MAX];
};

struct thread_names *thread_names__new(void)
{
	struct thread_names *tn = calloc(1, sizeof(*tn));

	if (!tn)
		return NULL;
	tn->py = py_threads__new();
	tn->procs = hmap__new(sizeof(struct names_proc));
	tn->threads = hmap__new(sizeof(struct names_thread));
	if (!tn->py || !tn->procs || !tn->threads) {
		thread_names__free(tn);
		return NULL;
	}
	return tn;
}

void thread_names__free(struct thread_names *tn)
{
	if (!tn)
		return;
	py_threads__free(tn->py);
	hmap__free(tn->procs);
	hmap__free(tn->threads);
	free(tn);
}

void thread_names__add(struct thread_names *tn, pid_t pid, const struct gil_py *py)
{
	struct names_proc *p;

	if (!tn || py_threads__add(tn->py, pid, py))
		return;
	p = hmap__get(tn->procs, (struct hkey){ (__u64)pid, 0 }, 1);
	if (p)
		*p = (struct names_proc){ .soon = NAMES_SOON };
}

static void forget(struct thread_names *tn, __u32 pid)
{
	if (!hmap__get(tn->procs, (struct hkey){ pid, 0 }, 0))
		return;
	hmap__del(tn->procs, (struct hkey){ pid, 0 });
	py_threads__forget(tn->py, pid);
	hmap__del_all(tn->threads, 0, pid);
	tn->last_pid = tn->last_tid = 0;
}

void thread_names__observe(struct thread_names *tn, const struct bs_hdr *rec)
{
	struct names_thread *t;
	struct names_proc *p;

	if (!tn)
		return;
	if (rec->type == BS_REC_EXEC ||
	    (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit) &&
	     ((const struct bs_exit *)rec)->group_dead)) {
		forget(tn, rec->pid);
		return;
	}
	if (rec->type == BS_REC_EXIT) {
		hmap__del(tn->threads, (struct hkey){ rec->pid, rec->tid });
		tn->last_pid = tn->last_tid = 0;
		return;
	}
	/* Most records are the same thread's as the last: one comparison for them. */
	if (!rec->tid || (rec->pid == tn->last_pid && rec->tid == tn->last_tid))
		return;
	tn->last_pid = rec->pid;
	tn->last_tid = rec->tid;
	p = hmap__get(tn->procs, (struct hkey){ rec->pid, 0 }, 0);
	if (!p || hmap__get(tn->threads, (struct hkey){ rec->pid, rec->tid }, 0))
		return;
	t = hmap__get(tn->threads, (struct hkey){ rec->pid, rec->tid }, 1);
	if (!t)
		return;
	/* A new thread: read soon, as soon as the cost bound allows. */
	p->next_ns = p->last_ns + p->gap_ns;
	p->soon = NAMES_SOON;
}

/* PID's names now: each one new or changed is written. */
static void read_names(struct record_ctx *ctx, struct thread_names *tn, __u32 pid,
		       struct names_proc *p, __u64 now)
{
	int n = py_threads__read(tn->py, pid, tn->buf, NAMES_MAX);
	__u64 cost = mono_now_ns() - now, period;
	struct bs_thread_name r;
	struct names_thread *t;
	__u32 id;

	if (n == -ESRCH || n == -ENOENT) {
		p->next_ns = ~0ull; /* gone: its exit record forgets it */
		return;
	}
	for (int i = 0; i < n; i++) {
		t = hmap__get(tn->threads, (struct hkey){ pid, tn->buf[i].tid }, 1);
		id = t ? record_ctx__intern(ctx, tn->buf[i].name) : 0;
		if (!id || t->name_id == id)
			continue;
		t->name_id = id;
		record_ctx__hdr(&r.h, BS_REC_THREAD_NAME, sizeof(r), pid, tn->buf[i].tid, now);
		r.name_id = id;
		r.source = BS_THREAD_NAME_PYTHON;
		record_ctx__write(ctx, &r);
	}
	/* A process whose names take long to read is read less often: at most 1/NAMES_SHARE. */
	p->last_ns = now;
	p->gap_ns = NAMES_SHARE * cost > NAMES_SOON_NS ? NAMES_SHARE * cost : NAMES_SOON_NS;
	period = NAMES_SHARE * cost > NAMES_PERIOD_NS ? NAMES_SHARE * cost : NAMES_PERIOD_NS;
	p->next_ns = now + (p->soon ? p->gap_ns : period);
	if (p->soon)
		p->soon--;
}

void thread_names__poll(struct record_ctx *ctx, struct thread_names *tn)
{
	__u64 now = mono_now_ns();
	struct names_proc *p;
	struct hkey key;
	size_t it = 0;
	int n = 0;

	while (tn && n < NAMES_PER_POLL && (p = hmap__next(tn->procs, &it, &key))) {
		if (p->next_ns > now)
			continue;
		read_names(ctx, tn, (__u32)key.a, p, now);
		n++;
	}
}

int thread_names__read(struct thread_names *tn, pid_t pid, struct py_thread_name *out, int max)
{
	return py_threads__read(tn->py, pid, out, max);
}
