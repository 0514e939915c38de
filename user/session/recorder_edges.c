// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A recording's edges: what the job's threads were doing when the recording began and when
 * it ended, read as `bpfsight stacks` reads them (user/stacks/snap.h) without stopping
 * anything. A thread blocked in a read for the whole recording, or waiting in a collective it
 * entered before the probes existed, writes no record of its own: its state, the system call
 * it sleeps in and since when, and its stack (Python and native) are all there is to say where
 * it is (docs/USAGE.md, "What was open at the edges").
 *   - start: with -p, every process of the targets (and their children) once every probe is
 *     live, just after the start clocks;
 *   - end: the targets (launch mode's too; with -a, the processes the families saw make
 *     calls), just before the stop, with the calls still in flight then (BS_UCALL_OPEN, as
 *     the hang trigger writes them) before the threads.
 * Each THREAD_SNAP carries BS_SNAP_AT_START or BS_SNAP_AT_END (snap_records.h). The hang
 * trigger's snapshot (recorder_hang.c) shares the writer. A flight recorder's windows have no
 * edges (the hang trigger's snapshot is its window's), but a dump's cut writes what is open
 * then (recording__dump_open); monitor and top have none. top -p reads
 * its targets each refresh instead (BS_SNAP_NOW, recording__now): what each thread is in now.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "array.h"
#include "family.h"
#include "family_record.h"
#include "flight_recorder.h"
#include "mono_clock.h"
#include "msg.h"
#include "recording.h"
#include "snap.h"

#define SNAP_WAIT_NS 300000000ull /* per process: how long running threads' samples take */
/* top's reads: the recording's loop waits meanwhile, so a running thread gets a short try */
#define SNAP_NOW_WAIT_NS 30000000ull
#define SNAP_MAX_PROCS	 256
#define SNAP_BUDGET_NS	 2000000000ull /* a whole snapshot: the recording waits meanwhile */

void recording__add_pid(__u32 **pids, size_t *n, size_t *cap, __u32 pid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*pids)[i] == pid)
			return;
	/* All kept: recording__snap_processes says which it does not read, and why. */
	if (!array__grow((void **)pids, *n, cap, sizeof(**pids)))
		(*pids)[(*n)++] = pid;
}

void recording__add_targets(struct recording *r, __u32 **pids, size_t *n, size_t *cap)
{
	__u32 key, next, *prev = NULL;

	while (!bpf_map_get_next_key(r->ctx.targets_fd, prev, &next)) {
		recording__add_pid(pids, n, cap, next);
		key = next;
		prev = &key;
	}
}

/* One process's threads as they are now, as PROC_SNAP and THREAD_SNAP (with EDGE) records. */
static void snap_process(struct recording *r, __u32 pid, __u32 edge)
{
	struct record_ctx *ctx = &r->ctx;
	struct bs_proc_snap ps = {};
	struct snap s;
	int err = snap_session__take(r->snap, (pid_t)pid,
				     edge == BS_SNAP_NOW ? SNAP_NOW_WAIT_NS : SNAP_WAIT_NS, &s);

	if (err == -ESRCH)
		goto out; /* gone: nothing to say of it */
	record_ctx__hdr(&ps.h, BS_REC_PROC_SNAP, sizeof(ps), pid, pid,
			s.read_at ? s.read_at : mono_now_ns());
	ps.env_rank = s.env_rank;
	ps.env_local_rank = s.env_local_rank;
	ps.env_world = s.env_world;
	ps.nthreads = s.n;
	ps.python_minor = (__u16)s.python_minor;
	ps.edge = (__u16)edge;
	ps.error_id = err ? record_ctx__intern(ctx, s.failure) : 0;
	ps.took_ns = s.read_ns;
	record_ctx__write(ctx, &ps);
	for (__u32 i = 0; i < s.n; i++) {
		const struct snap_thread *th = &s.threads[i];
		const struct snap_task *t = &th->task;
		struct bs_thread_snap_clock tc = {};
		struct bs_thread_snap *ts = &tc.s;
		int runs = t->on_cpu || th->sampled;

		record_ctx__hdr(&ts->h, BS_REC_THREAD_SNAP, sizeof(tc), pid, t->tid, ps.h.ts);
		ts->stack_id = th->stack_id;
		ts->state = t->state;
		ts->syscall = runs ? -1 : (__s32)t->syscall;
		ts->flags = snap__flags(&s, th) | edge;
		ts->off_cpu_ns = runs || !t->state ? 0 : t->off_cpu_ns;
		ts->arg0 = t->arg0;
		ts->cpu_ns = th->cpu_ns;
		ts->error_id = th->error && !th->stack_id ? record_ctx__intern(ctx, th->error) : 0;
		tc.run_delay_ns = th->run_delay_ns; /* both at the snapshot's moment */
		record_ctx__write(ctx, &tc);
		/* A trigger's: its Python name as read now (a thread started since the names' last
		 * read). The edges' threads are named by the recording's own reads. */
		if (th->name[0] && !edge) {
			struct bs_thread_name tn = { .source = BS_THREAD_NAME_PYTHON };

			record_ctx__hdr(&tn.h, BS_REC_THREAD_NAME, sizeof(tn), pid, t->tid,
					ps.h.ts);
			tn.name_id = record_ctx__intern(ctx, th->name);
			if (tn.name_id)
				record_ctx__write(ctx, &tn);
		}
	}
out:
	snap__free(&s);
}

/* What a snapshot is: the words of its warning (top's NOW says nothing: its screen is up). */
static const char *snap_what(__u32 edge)
{
	switch (edge) {
	case BS_SNAP_AT_START:
		return "the job at the recording's start";
	case BS_SNAP_AT_END:
		return "the job at the recording's end";
	case BS_SNAP_NOW:
		return NULL;
	default:
		return "the hang trigger's snapshot of the job";
	}
}

size_t recording__snap_processes(struct recording *r, const __u32 *pids, size_t n, __u32 edge)
{
	__u64 t0 = mono_now_ns();
	size_t capped = 0, late = 0;
	const char *what;
	char why[96];

	for (size_t i = 0; i < n; i++) {
		if (i < SNAP_MAX_PROCS && mono_now_ns() - t0 < SNAP_BUDGET_NS) {
			snap_process(r, pids[i], edge);
			continue;
		}
		/*
		 * Said, not read: a job of hundreds of processes each with a thread hard to catch,
		 * or more processes than one snapshot reads.
		 */
		struct bs_proc_snap ps = { .env_rank = -1, .env_local_rank = -1, .env_world = -1 };

		if (i >= SNAP_MAX_PROCS) {
			capped++;
			snprintf(why, sizeof(why), "not read: a snapshot reads %u processes",
				 SNAP_MAX_PROCS);
		} else {
			late++;
			snprintf(why, sizeof(why),
				 "not read: the snapshot's %.0f s were spent on the processes "
				 "before it",
				 SNAP_BUDGET_NS / 1e9);
		}
		/* of this snapshot, as the ones read are: a start's said apart from an end's */
		record_ctx__hdr(&ps.h, BS_REC_PROC_SNAP, sizeof(ps), pids[i], pids[i],
				mono_now_ns());
		ps.edge = (__u16)edge;
		ps.error_id = record_ctx__intern(&r->ctx, why);
		record_ctx__write(&r->ctx, &ps);
	}
	/* The records say it to whoever dumps the file; the one who runs the recording is told. */
	what = snap_what(edge);
	if ((capped || late) && what)
		pr_warn("%s: %zu of %zu processes not read (%zu past the %u a snapshot reads, %zu "
			"after its %.0f s were spent): each is a process_state event with the "
			"reason\n",
			what, capped + late, n, capped, SNAP_MAX_PROCS, late, SNAP_BUDGET_NS / 1e9);
	return capped + late;
}

static int wants_edges(const struct recording *r)
{
	return record_opts__edges(r->ctx.opts);
}

int recording__snap_start(struct recording *r)
{
	const char *why;
	int err;

	if (!wants_edges(r) && !(r->flight && r->ctx.opts->flight.hang_ns) &&
	    !r->ctx.opts->now_every_ns)
		return 0;
	/* Loaded now: no program is loaded once the recording is confined (privileges.h). */
	r->snap = snap_session__new(&r->ctx, r->stacks, NULL, 0, &err, &why);
	if (!r->snap && wants_edges(r)) {
		/* Said once; the recording goes on without its edges. */
		pr_warn("the job's threads at the recording's edges will not be read: %s: %s\n",
			why, strerror(-err));
		return 0;
	}
	return r->snap ? 0 : err;
}

void recording__snap_free(struct recording *r)
{
	snap_session__free(r->snap);
	r->snap = NULL;
}

/* A call still in flight at the end: written as the record its return would have written. */
static void on_open_call(void *arg, __u32 pid, __u32 tid, const struct bs_hdr *rec)
{
	struct recording *r = arg;

	(void)tid;
	recording__add_pid(&r->edge_pids, &r->nedge_pids, &r->edge_cap, pid);
	if (rec)
		record_ctx__write(&r->ctx, rec);
}

void recording__edge(struct recording *r, __u32 edge)
{
	const struct record_opts *o = r->ctx.opts;
	__u64 t0 = mono_now_ns();
	size_t left;

	if (!r->snap || !wants_edges(r))
		return;
	r->nedge_pids = 0;
	if (edge == BS_SNAP_AT_START) {
		if (!o->npids)
			return; /* launch mode: CMD has not started; -a: every process is too many */
	} else {
		for_each_family_slot(it, r->fam)
			if (it.slot->attached && it.f->record->in_flight)
				it.f->record->in_flight(&r->ctx, it.slot->state, on_open_call, r);
		if (o->system_wide && !r->nedge_pids)
			return;
	}
	if (!o->system_wide) {
		r->nedge_pids = 0; /* the targets, in the map's order */
		recording__add_targets(r, &r->edge_pids, &r->nedge_pids, &r->edge_cap);
	}
	left = recording__snap_processes(r, r->edge_pids, r->nedge_pids, edge);
	if (o->verbose)
		pr_info("the job at the recording's %s: %zu of %zu processes read in %.0f ms\n",
			edge == BS_SNAP_AT_START ? "start" : "end", r->nedge_pids - left,
			r->nedge_pids, (mono_now_ns() - t0) / 1e6);
}

void recording__now(struct recording *r, __u64 now)
{
	const struct record_opts *o = r->ctx.opts;

	if (!r->snap || !o->now_every_ns || !o->npids || now - r->now_last < o->now_every_ns)
		return;
	r->now_last = now;
	r->nedge_pids = 0;
	recording__add_targets(r, &r->edge_pids, &r->nedge_pids, &r->edge_cap);
	recording__snap_processes(r, r->edge_pids, r->nedge_pids, BS_SNAP_NOW);
}

/* One look at what is open: copies of the records, one after another (each its own size). */
struct dump_open {
	char *buf;
	size_t n, cap, count;
	int err;
};

static void on_dump_open(void *arg, __u32 pid, __u32 tid, const struct bs_hdr *rec)
{
	struct dump_open *d = arg;

	(void)pid;
	(void)tid;
	if (!rec || d->err)
		return; /* a thread in no call */
	if (array__grow((void **)&d->buf, d->n + rec->size, &d->cap, 1)) {
		d->err = -ENOMEM;
		return;
	}
	memcpy(d->buf + d->n, rec, rec->size);
	d->n += rec->size;
	d->count++;
}

static void look_open(struct recording *r, struct dump_open *d)
{
	__u64 cut = mono_now_ns();

	for_each_family_slot(it, r->fam) {
		if (!it.slot->attached)
			continue;
		if (it.f->record->in_flight)
			it.f->record->in_flight(&r->ctx, it.slot->state, on_dump_open, d);
		if (it.f->record->open_at)
			it.f->record->open_at(&r->ctx, it.slot->state, cut, on_dump_open, d);
	}
}

/* REC (of the second look) was open at the first too: the same wait or call, not a new one. */
static int seen_before(const struct dump_open *first, const struct bs_hdr *rec)
{
	for (size_t off = 0; off < first->n;) {
		const struct bs_hdr *h = (const void *)(first->buf + off);

		if (h->type == rec->type && h->tid == rec->tid && h->ts == rec->ts)
			return 1;
		off += h->size;
	}
	return 0;
}

void recording__dump_open(struct recording *r)
{
	struct dump_open first = {}, second = {};
	size_t kept = 0, lost = 0;

	/*
	 * Two looks, then the ring drained: a wait or call open at both is open at the cut; one
	 * that ended in between is not written open, and its record, in the ring by the second
	 * look, goes into the window with the drain, as does the record of one open at both that
	 * ends before the drain is done, which then takes its open copy's place
	 * (flight__observe). So each is in the dump once, ended or open (a GIL wait that ended as
	 * the trigger fired was in neither: test_flight.py).
	 */
	look_open(r, &first);
	look_open(r, &second);
	for (size_t off = 0; off < second.n;) {
		const struct bs_hdr *h = (const void *)(second.buf + off);

		if (seen_before(&first, h)) {
			if (flight__add_to_dump(r->flight, h))
				lost++;
			else
				kept++;
		}
		off += h->size;
	}
	for (int i = 0; i < 64 && record_ctx__read(&r->ctx, 0, RECORD_CTX_BATCH) > 0; i++)
		;
	if (first.err || second.err)
		pr_warn("flight recorder: the waits and calls open at the dump's cut: %s\n",
			strerror(-(first.err ? first.err : second.err)));
	if (lost)
		record_ctx__lost(&r->ctx, NULL, BS_LOSS_FLIGHT, lost);
	if (r->ctx.opts->verbose)
		pr_info("flight recorder: %zu waits and calls open at the dump's cut\n", kept);
	free(first.buf);
	free(second.buf);
}
