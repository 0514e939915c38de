/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpfsight monitor`'s metrics: fed the recording's record stream (the recorder's sink, on its
 * thread), rendered in Prometheus's text exposition format (on the HTTP server's thread).
 * Every metric and its unit: docs/PRODUCTION.md#metrics.
 *
 * monitor (user/cli/cmd_monitor.c) runs recorder__run exactly as record does, with no file:
 * record_opts.sink is given every record record_ctx__write would write (the file's whole
 * stream, user-space records included), on the recording's thread. The metrics keep the
 * owners of series: per process, the top N by activity own series, the rest add up under
 * pid="other"; an exited process's series go after the grace, its slot at once. Each process
 * has a job and a role label (metrics_ident.h): a process that starts with the job and role of
 * one that exited continues its series (a restarted job). What is counted is each
 * family's (struct family.metrics, metrics_family.h): its record hook folds the records it
 * knows into counters per owner (metrics__series) or for the node (cumulative in-kernel
 * snapshots, osrt's SYSCALL_AGG and gil's GIL_AGG, into increments per thread), its render
 * hook writes them. All under a mutex that the HTTP server's thread (http_server.c) takes to
 * render (metrics_render.c: the families', then the losses, records and processes;
 * metrics_self.c: the daemon's own CPU, memory, fds and BPF run time).
 */
#ifndef BPFSIGHT_METRICS_H
#define BPFSIGHT_METRICS_H

#include <stdio.h>
#include <linux/types.h>
#include "records.h"

struct metrics_ident;

struct metrics_opts {
	__u32 top_n;	    /* processes with series of their own; the rest are pid="other" */
	__u64 grace_ns;	    /* an exited process's series stay this long, then go */
	__u64 rebalance_ns; /* how often the busiest processes may take over series */
	/*
	 * A process's job and role labels (metrics_ident__read in monitor; 0 when read), asked
	 * as it is first seen and after each exec. NULL: no job and role labels.
	 */
	int (*ident)(__u32 pid, struct metrics_ident *id, const void *arg);
	const void *ident_arg;
};

struct metrics;
struct metrics_proc;   /* metrics_state.h */
struct metrics_series; /* metrics_state.h */
struct record_opts;

/* The metrics of a monitor recording with options O (the families read theirs there). */
struct metrics *metrics__new(const struct metrics_opts *mo, const struct record_opts *o);
void metrics__free(struct metrics *m);
/* The recorder's sink (struct record_opts): one record, as written to a trace file. */
void metrics__record(void *m, const struct bs_hdr *rec);
/* Write every metric, in the text exposition format (version 0.0.4), to F. */
void metrics__render(struct metrics *m, FILE *f);
/* The daemon's own process: CPU, memory, fds, and its BPF programs' run time (metrics_self.c). */
void metrics_self__render(FILE *f);

#endif /* BPFSIGHT_METRICS_H */
