// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The hang trigger's part of the driver (--trigger hang:DUR, user/flight/flight_hang.h): every
 * 100 ms the families say which threads of the job are in which calls (struct
 * family.in_flight), and the flight recorder's watch decides whether a process stalled. When
 * one did, and a dump will be written, the job is taken as it is at that moment, into the
 * window, before the dump:
 *   - each call still in flight, as the record its return would have written (BS_UCALL_OPEN),
 *     so that a reader sees who waits in which collective: into the dump itself, after the
 *     window (flight__add_to_dump), for a call may have begun before the window did;
 *   - every thread of every process of the job (snap_records.h): its state, the system call it
 *     sleeps in and since when, its stack (Python and native), the GIL's holder, read as
 *     `bpfsight stacks` reads them (user/stacks/snap.h) without stopping anything.
 * The job's processes: the targets (-p and their children, CMD's tree); with -a, every
 * process one of the families saw making calls (the ranks).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "array.h"
#include "family.h"
#include "flight_hang.h"
#include "flight_recorder.h"
#include "mono_clock.h"
#include "recording.h"
#include "snap.h"
#include "msg.h"

#define LOOK_NS	       100000000ull /* how often the calls in flight are looked at */
#define SNAP_WAIT_NS   300000000ull /* per process: how long running threads' samples take */
#define SNAP_MAX_PROCS 256
#define SNAP_BUDGET_NS 2000000000ull /* the whole snapshot: the recording waits meanwhile */

struct recording_hang {
	struct snap_session *snap;
	__u64 last_look;
	/* This look's calls in flight (copies of their records) and the processes seen. */
	struct bs_ucall *calls;
	size_t ncalls, cap;
	__u32 *pids;
	size_t npids, pcap;
};

int recording__hang_start(struct recording *r)
{
	const char *why;
	int err;

	if (!r->flight || !flight__hang(r->flight))
		return 0;
	r->hang = calloc(1, sizeof(*r->hang));
	if (!r->hang)
		return -ENOMEM;
	/* Loaded now: no program is loaded once the recording is confined (privileges.h). */
	r->hang->snap = snap_session__new(&r->ctx, r->stacks, NULL, 0, &err, &why);
	if (!r->hang->snap) {
		pr_err("--trigger %s: %s: %s\n", r->ctx.opts->flight.hang_text, why,
		       strerror(-err));
		return err;
	}
	return 0;
}

void recording__hang_free(struct recording *r)
{
	if (!r->hang)
		return;
	snap_session__free(r->hang->snap);
	free(r->hang->calls);
	free(r->hang->pids);
	free(r->hang);
	r->hang = NULL;
}

static void add_pid(struct recording_hang *h, __u32 pid)
{
	for (size_t i = 0; i < h->npids; i++)
		if (h->pids[i] == pid)
			return;
	if (h->npids < SNAP_MAX_PROCS &&
	    !array__grow((void **)&h->pids, h->npids, &h->pcap, sizeof(*h->pids)))
		h->pids[h->npids++] = pid;
}

/* A family's thread, and the call it is in: to the watch, and kept for the snapshot. */
static void on_thread(void *arg, __u32 pid, __u32 tid, const struct bs_hdr *rec)
{
	struct recording *r = arg;
	struct recording_hang *h = r->hang;

	flight_hang__thread(flight__hang(r->flight), pid, tid, rec);
	if (r->ctx.opts->system_wide)
		add_pid(h, pid);
	if (rec && rec->size == sizeof(struct bs_ucall) &&
	    !array__grow((void **)&h->calls, h->ncalls, &h->cap, sizeof(*h->calls)))
		memcpy(&h->calls[h->ncalls++], rec, sizeof(struct bs_ucall));
}

/* The targets, from the shared map every program reads (-p, their children, CMD's tree). */
static void add_targets(struct recording *r)
{
	__u32 key, next, *prev = NULL;

	while (!bpf_map_get_next_key(r->ctx.targets_fd, prev, &next)) {
		add_pid(r->hang, next);
		key = next;
		prev = &key;
	}
}

/* One process's threads as they are now, as PROC_SNAP and THREAD_SNAP records. */
static void snap_process(struct recording *r, __u32 pid)
{
	struct record_ctx *ctx = &r->ctx;
	struct bs_proc_snap ps = {};
	struct snap s;
	int err = snap_session__take(r->hang->snap, (pid_t)pid, SNAP_WAIT_NS, &s);

	if (err == -ESRCH)
		goto out; /* gone: nothing to say of it */
	record_ctx__hdr(&ps.h, BS_REC_PROC_SNAP, sizeof(ps), pid, pid,
			s.read_at ? s.read_at : mono_now_ns());
	ps.env_rank = s.env_rank;
	ps.env_local_rank = s.env_local_rank;
	ps.env_world = s.env_world;
	ps.nthreads = s.n;
	ps.python_minor = s.python_minor;
	ps.error_id = err ? record_ctx__intern(ctx, s.failure) : 0;
	ps.took_ns = s.read_ns;
	record_ctx__write(ctx, &ps);
	for (__u32 i = 0; i < s.n; i++) {
		const struct snap_thread *th = &s.threads[i];
		const struct snap_task *t = &th->task;
		struct bs_thread_snap ts = {};
		int runs = t->on_cpu || th->sampled;

		record_ctx__hdr(&ts.h, BS_REC_THREAD_SNAP, sizeof(ts), pid, t->tid, ps.h.ts);
		ts.stack_id = th->stack_id;
		ts.state = t->state;
		ts.syscall = runs ? -1 : (__s32)t->syscall;
		ts.flags = snap__flags(&s, th);
		ts.off_cpu_ns = runs || !t->state ? 0 : t->off_cpu_ns;
		ts.arg0 = t->arg0;
		ts.cpu_ns = t->cpu_ns;
		ts.error_id = th->error && !th->stack_id ? record_ctx__intern(ctx, th->error) : 0;
		record_ctx__write(ctx, &ts);
		/* Its Python name as read now: a thread started since the names' last read. */
		if (th->name[0]) {
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

/* The stall: the calls in flight and every thread of the job into the window, then the dump. */
static void snapshot(struct recording *r, __u32 stalled_pid, const char *why)
{
	struct recording_hang *h = r->hang;
	__u64 t0 = mono_now_ns();

	/* Into the dump itself: a call may have begun before the window. */
	for (size_t i = 0; i < h->ncalls; i++)
		if (flight__add_to_dump(r->flight, &h->calls[i].h))
			record_ctx__lost(&r->ctx, NULL, BS_LOSS_FLIGHT, 1);
	if (!r->ctx.opts->system_wide)
		add_targets(r);
	add_pid(h, stalled_pid);
	for (size_t i = 0; i < h->npids; i++) {
		if (mono_now_ns() - t0 < SNAP_BUDGET_NS) {
			snap_process(r, h->pids[i]);
			continue;
		}
		/* Said, not read: a job of hundreds of processes each with a thread hard to catch. */
		struct bs_proc_snap ps = { .env_rank = -1, .env_local_rank = -1, .env_world = -1 };

		record_ctx__hdr(&ps.h, BS_REC_PROC_SNAP, sizeof(ps), h->pids[i], h->pids[i], 0);
		ps.error_id =
			record_ctx__intern(&r->ctx, "not read: the snapshot's 2 s were spent on "
						    "the processes before it");
		record_ctx__write(&r->ctx, &ps);
	}
	pr_info("flight recorder: %s: %zu calls in flight, %zu processes read in %.0f ms\n", why,
		h->ncalls, h->npids, (mono_now_ns() - t0) / 1e6);
	flight__trigger(r->flight, why, 0);
}

void recording__hang_look(struct recording *r, __u64 now)
{
	struct flight_hang *fh = flight__hang(r->flight);
	struct recording_hang *h = r->hang;
	char why[256];
	__u32 pid;

	if (!h || now - h->last_look < LOOK_NS)
		return;
	h->last_look = now;
	h->ncalls = h->npids = 0;
	flight_hang__begin(fh, now);
	for (int i = 0; families[i]; i++)
		if (r->attached[i] && families[i]->in_flight)
			families[i]->in_flight(&r->ctx, r->states[i], on_thread, r);
	if (!flight_hang__stalled(fh, why, sizeof(why), &pid))
		return;
	if (flight__would_dump(r->flight))
		snapshot(r, pid, why);
	else
		flight__trigger(r->flight, why, 0); /* counted: cooling down, or over --max-dumps */
}
