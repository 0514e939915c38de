/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Process and thread metadata read from /proc and written as PROCESS/THREAD records. */
#ifndef BPFSIGHT_PROC_META_H
#define BPFSIGHT_PROC_META_H

#include <sys/types.h>
#include "records.h"

struct record_ctx;

/* PROCESS record for PID (and THREAD records of its threads when WITH_THREADS). */
int proc_meta__snapshot(struct record_ctx *ctx, pid_t pid, int with_threads);
/* Snapshot every process on the system (-a). */
int proc_meta__snapshot_all(struct record_ctx *ctx);
/* React to a BPF lifecycle record: new processes and execs get a fresh snapshot. */
void proc_meta__observe(struct record_ctx *ctx, const struct bs_hdr *rec);
/* The tgid of a task id (a tid given to -p is accepted); negative errno if it is gone. */
pid_t proc_meta__tgid(pid_t tid);
/* PID's parent and comm (as /proc/PID/stat says them): 0, or -ESRCH when it is gone. */
int proc_meta__parent(pid_t pid, __u32 *ppid, char comm[BS_COMM_LEN]);
/*
 * A PROCESS record of PID, gone before its snapshot, from what was read of it earlier: its
 * parent and comm (nothing else is known of it now).
 */
void proc_meta__gone(struct record_ctx *ctx, pid_t pid, __u32 ppid, const char *comm);
/* 1 while PID exists and is not a zombie. */
int proc_meta__alive(pid_t pid);
/* 0 and PID's start time (clock ticks since boot) while it is alive; -ESRCH if not. */
int proc_meta__start(pid_t pid, __u64 *start_ticks);
/*
 * 1 while PID is alive and is the process that started at START_TICKS: a pid the kernel
 * recycled for another process (its start time differs) is not it.
 */
int proc_meta__alive_since(pid_t pid, __u64 start_ticks);
/* Parse a /proc/PID/stat line: state, ppid and starttime (field 22); -EINVAL if malformed. */
/* Where PID's vDSO is mapped (its auxiliary vector's AT_SYSINFO_EHDR), 0 when unknown. */
__u64 proc_meta__vdso(pid_t pid);
int proc_meta__parse_stat(const char *buf, __u32 *ppid, __u64 *start_ticks, char *state);
/* PID's rank in its environment as it started (RANK, else LOCAL_RANK: torchrun's), -1: none. */
int proc_meta__env_rank(pid_t pid);
/* Thread TID's CPU time so far (ns, /proc/TID/schedstat): 0, or a negative errno. */
int proc_meta__cpu_ns(pid_t tid, __u64 *ns);

#endif
