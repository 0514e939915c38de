/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One recording as its driver holds it (recorder.h is the driver's face): what the services
 * and the families see of it (ctx), the services it made for them, the families' states, where
 * its records go, the launched CMD. Shared by the driver's files only:
 *   recorder.c           the life: start, go live, drain, finish, teardown; the record path
 *   recorder_services.c  the shared maps and the services, made by what the families need
 *   recorder_output.c    where records go: the file, a file per range, the flight window, a sink
 *   recorder_end.c       the end-of-run lines and --capture-range's account
 *   recorder_hang.c      --trigger hang: the calls in flight, the job's threads at a stall
 *   recorder_edges.c     the job's threads at the recording's start and end
 */
#ifndef BPFSIGHT_RECORDING_H
#define BPFSIGHT_RECORDING_H

#include <linux/types.h>
#include "launch.h"
#include "record_ctx.h"
#include "record_meta.h"
#include "recorder.h"

struct capture_files;
struct family_attach;
struct recording_hang;
struct flight_recorder;
struct ring_pump;
struct shim_link;
struct snap_session;
struct stack_svc;
struct trace_writer;
struct uprobe_mgr;

struct recording {
	struct record_opts opts; /* the caller's, with -p's children taken in */
	char output_name[4096];	 /* opts.output_pattern expanded with CMD's pid */
	struct record_ctx ctx;
	/* The services, made before the families attach (recorder_services.c), or NULL. */
	struct uprobe_mgr *uprobes;
	int uprobes_closed; /* its probes gone at the stop: it sees no more records */
	struct stack_svc *stacks;
	struct shim_link *shim;
	/* What it keeps per family (index = families[] index: for_each_family_slot). */
	struct recording_family {
		void *state;  /* what its attach made */
		int attached; /* attached, and not yet detached */
	} fam[RECORD_MAX_FAMILIES];
	/*
	 * The record path's dispatch (recorder.c), made once every family is attached: per
	 * record type, the families whose consume / observe hook takes it (struct family's
	 * consumes, observes), registry order, -1 after the last; and whether the uprobe manager
	 * acts on it. A record enters only the code that acts on its type.
	 */
	__s8 consumers[BS_REC_TYPE_MAX][RECORD_MAX_FAMILIES + 1];
	__s8 observers[BS_REC_TYPE_MAX][RECORD_MAX_FAMILIES + 1];
	__u8 uprobes_observe[BS_REC_TYPE_MAX];
	__u8 ring_only[BS_REC_TYPE_MAX]; /* family__ring_only, asked once per type */
	/*
	 * Where records go (ctx.out, recorder_output.c): the file, or the flight recorder's
	 * window (writer is then its in-memory writer), with a file per capture range.
	 */
	struct trace_writer *writer;
	struct flight_recorder *flight;
	/*
	 * When the stop began (CLOCK_MONOTONIC; 0 before): its steps' deadlines count from here,
	 * so that together they keep the promise of a stop within 2 s (recorder.c, STOP_*).
	 */
	__u64 stop_ns;
	struct recording_hang *hang; /* --trigger hang: recorder_hang.c */
	/* What reads the job's threads (the edges, the hang trigger): recorder_edges.c */
	struct snap_session *snap;
	__u32 *edge_pids; /* the processes an edge reads */
	size_t nedge_pids, edge_cap;
	__u64 now_last; /* top -p: when its targets were last read (recording__now) */
	struct capture_files *files;
	struct launch launch;
	int launched;
	struct ring_pump *pump; /* reads the ring from the start; ctx.pump once we go live */
	__u64 seen_lost[BS_LOST_KEYS], lost_total;
	__u64 start;
	struct record_meta rm;
	int tty;
	int wrote;		 /* the trace file is closed, whole: its verdict can be read */
	char verdict_path[4096]; /* the file it judges (the last one, with a file per range) */
	const char *ended;	 /* why drain() ended, when no signal ended it */
};

/* recorder_services.c */
/* The maps every family shares, for the whole recording. 0, or a negative errno. */
int recording__create_maps(struct recording *r);
void recording__close_maps(struct recording *r);
/*
 * The services the recorded families use (struct family_attach): the uprobe manager, the
 * stack service, the shim channel, each only when needed. 0, or -1 after saying what failed.
 */
int recording__make_services(struct recording *r);
/* What family I's attach is handed. */
void recording__attach_args(const struct recording *r, int i, struct family_attach *a);
/* The probes go (the stop): the uprobe manager is closed, its links to the reaper. */
void recording__close_services(struct recording *r);
/* Every family detached: the shim channel's last records unpacked, the services freed. */
void recording__free_services(struct recording *r);

/* recorder_output.c */
/* The file records go to now: -o, or with a file per capture range, the current range's. */
const char *recording__out_path(const struct recording *r);
/* The file (or the flight window) records go to, and ctx.out. 0, or -1 after saying why. */
int recording__open_output(struct recording *r);
/* --capture-range: the gate, and a file per range when the capture asks. 0, or -1. */
int recording__capture_start(struct recording *r);
/*
 * SIGUSR1/SIGUSR2 (the ring buffer just drained): losses and the families' in-kernel totals
 * written as on a poll, and the open chunk to disk.
 */
void recording__flush_now(struct recording *r);
/* The file after a failed write: closed as cleanly as it can be, and said. */
void recording__close_after_write_error(struct recording *r);
/* The status line on a terminal (FINAL: its last, with a newline). */
void recording__print_status(struct recording *r, __u64 now, int final);

/* recorder.c */
/* What the records so far miss from the kernel: losses, the families' in-kernel totals. */
void recording__bring_up_to_date(struct recording *r);

/* recorder_edges.c */
/* What reads the job's threads, loaded before the recording is confined: 0, or -errno. */
int recording__snap_start(struct recording *r);
void recording__snap_free(struct recording *r);
/* The job's threads at the recording's edge EDGE (BS_SNAP_AT_START or _AT_END), into it. */
void recording__edge(struct recording *r, __u32 edge);
/*
 * PIDS' threads into the recording now, each THREAD_SNAP flagged EDGE (0: a trigger's). A
 * process past those one snapshot reads, or left when its time ran out (SNAP_MAX_PROCS,
 * SNAP_BUDGET_NS), is a PROC_SNAP that says why, and a warning says how many (top's NOW
 * excepted): their number.
 */
size_t recording__snap_processes(struct recording *r, const __u32 *pids, size_t n, __u32 edge);
/*
 * A flight-recorder dump is cut now: every wait and call its families know open (in flight)
 * into the dump, after its window, as their records so far (flagged open): the dump holds
 * the whole incident, whatever began before its window or ends after its cut.
 */
void recording__dump_open(struct recording *r);
/* top -p: its targets' threads as BS_SNAP_NOW snapshots, every record_opts.now_every_ns. */
void recording__now(struct recording *r, __u64 now);
/* PID into *PIDS (once; all kept); the targets' pids (-p, children, CMD's tree). */
void recording__add_pid(__u32 **pids, size_t *n, size_t *cap, __u32 pid);
void recording__add_targets(struct recording *r, __u32 **pids, size_t *n, size_t *cap);

/* recorder_hang.c */
/* --trigger hang: what reads the job's threads, loaded before the recording is confined. */
int recording__hang_start(struct recording *r);
/* Every turn of the loop: every 100 ms, the calls in flight; a stall snapshots and dumps. */
void recording__hang_look(struct recording *r, __u64 now);
void recording__hang_free(struct recording *r);

/* recorder_end.c */
/* The last lines of a recording whose file (or flight window) is written. */
void recording__say_written(struct recording *r, __u64 nrec, const char *how);
/* --capture-range: what the ranges kept; nothing captured is a failed recording. */
enum record_outcome recording__say_captured(struct recording *r);
/*
 * The file just written, judged as `bpfsight stats` opens: where its threads' time went, if
 * reading it ends by BY_NS (CLOCK_MONOTONIC); else where to read it.
 */
void recording__print_verdict(const struct recording *r, __u64 by_ns);

#endif /* BPFSIGHT_RECORDING_H */
