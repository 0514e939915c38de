// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The hang trigger's part of the driver (--trigger hang:DUR, user/flight/flight_hang.h): every
 * 100 ms the families say which threads of the job are in which calls (struct
 * family.in_flight), and the flight recorder's watch decides whether a process stalled. When
 * one did, and a dump will be written, the job is taken as it is at that moment, into the
 * window, before the dump:
 *   - each call still in flight, as the record its return would have written (BS_UCALL_OPEN),
 *     so that a reader sees who waits in which collective: into the dump itself at its cut,
 *     after the window (recording__dump_open, as any dump), for a call may have begun before
 *     the window did;
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
#include "family_record.h"
#include "flight_hang.h"
#include "flight_recorder.h"
#include "hmap.h"
#include "proc_meta.h"
#include "mono_clock.h"
#include "recording.h"
#include "snap.h"
#include "msg.h"

#define LOOK_NS 100000000ull /* how often the calls in flight are looked at */

struct recording_hang {
	__u64 last_look;
	struct hmap *ranks; /* {pid, 0} -> __s32: its rank + 2; 0 while not read, 1: none */
	/* This look's calls in flight (the snapshot says how many) and the processes seen. */
	size_t ncalls;
	__u32 *pids;
	size_t npids, pcap;
};

int recording__hang_start(struct recording *r)
{
	if (!r->flight || !flight__hang(r->flight))
		return 0;
	if (!r->snap) {
		pr_err("--trigger %s: the job's threads cannot be read\n",
		       r->ctx.opts->flight.hang_text);
		return -EINVAL;
	}
	r->hang = calloc(1, sizeof(*r->hang));
	if (r->hang && !(r->hang->ranks = hmap__new(sizeof(__s32)))) {
		free(r->hang);
		r->hang = NULL;
	}
	return r->hang ? 0 : -ENOMEM;
}

void recording__hang_free(struct recording *r)
{
	if (!r->hang)
		return;
	hmap__free(r->hang->ranks);
	free(r->hang->pids);
	free(r->hang);
	r->hang = NULL;
}

static void add_pid(struct recording_hang *h, __u32 pid)
{
	recording__add_pid(&h->pids, &h->npids, &h->pcap, pid);
}

/* A family's thread, and the call it is in: to the watch, and kept for the snapshot. */
static void on_thread(void *arg, __u32 pid, __u32 tid, const struct bs_hdr *rec)
{
	struct recording *r = arg;
	struct recording_hang *h = r->hang;

	flight_hang__thread(flight__hang(r->flight), pid, tid, rec);
	if (r->ctx.opts->system_wide)
		add_pid(h, pid);
	if (rec)
		h->ncalls++;
}

/* The targets, from the shared map every program reads (-p, their children, CMD's tree). */
static void add_targets(struct recording *r)
{
	recording__add_targets(r, &r->hang->pids, &r->hang->npids, &r->hang->pcap);
}

/* The stall: the calls in flight and every thread of the job into the window, then the dump. */
static void snapshot(struct recording *r, __u32 stalled_pid, const char *why)
{
	struct recording_hang *h = r->hang;
	__u64 t0 = mono_now_ns();
	size_t left;

	/* The calls in flight go into the dump at its cut (recording__dump_open), as they are then. */
	if (!r->ctx.opts->system_wide)
		add_targets(r);
	add_pid(h, stalled_pid);
	/* Triggered first: the window ends at the stall's detection, not after the reads. */
	flight__trigger(r->flight, why, 0);
	left = recording__snap_processes(r, h->pids, h->npids, 0);
	pr_info("flight recorder: %s: %zu calls in flight, %zu of %zu processes read in %.0f ms\n",
		why, h->ncalls, h->npids - left, h->npids, (mono_now_ns() - t0) / 1e6);
}

/*
 * The targets that are ranks of the job (RANK in their environment, read once each): their
 * main threads' CPU time, for a job that stopped where no family sees a call (gloo).
 */
static void watch_ranks(struct recording *r, struct flight_hang *fh)
{
	struct recording_hang *h = r->hang;
	__s32 *rank;
	__u64 ns;

	if (!r->ctx.opts->system_wide)
		add_targets(r);
	for (size_t i = 0; i < h->npids; i++) {
		rank = hmap__get(h->ranks, (struct hkey){ h->pids[i], 0 }, 1);
		if (!rank)
			continue;
		if (!*rank) /* 0: not read yet; 1: no RANK; else the rank + 2 */
			*rank = proc_meta__env_rank((pid_t)h->pids[i]) + 2;
		if (*rank >= 2 && !proc_meta__cpu_ns((pid_t)h->pids[i], &ns))
			flight_hang__rank(fh, h->pids[i], *rank - 2, ns);
	}
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
	for_each_family_slot(it, r->fam)
		if (it.slot->attached && it.f->record->in_flight)
			it.f->record->in_flight(&r->ctx, it.slot->state, on_thread, r);
	watch_ranks(r, fh);
	if (!flight_hang__stalled(fh, why, sizeof(why), &pid))
		return;
	if (flight__would_dump(r->flight))
		snapshot(r, pid, why);
	else
		flight__trigger(r->flight, why, 0); /* counted: cooling down, or over --max-dumps */
}
