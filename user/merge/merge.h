/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bpfsight merge: many rank files on one clock, in one file (docs/NCCL.md, "Many ranks";
 * the merged file's layout in docs/FORMAT.md, "Merged files"). Three steps, each a file:
 *   merge_scan.c   read each file once: its header and end clocks, its id ranges, its ranks
 *                  and its sync points (struct family_sync: NCCL's and gloo's collectives;
 *                  a gloo collective's entry names the rank, its work's end is the instant),
 *                  thinned to a bounded sample;
 *   merge_fit.c    a coarse alignment from the files' wall-clock/monotonic pairs, then a fine
 *                  one: per file an offset and a drift, by least squares on the sync points'
 *                  ends against their median over the files, outliers (stragglers' late
 *                  returns) left out;
 *   merge_write.c  read each file again and append its records, rebased (merge_rebase.c:
 *                  times on the merged clock, pids and tids in the file's namespace, string
 *                  and stack ids renumbered), after its RANK and SYNC_BASE records.
 * Memory: one file's reader at a time, and at most MERGE_POINTS_MAX sync points per file.
 */
#ifndef BPFSIGHT_MERGE_H
#define BPFSIGHT_MERGE_H

#include <stddef.h>
#include <linux/types.h>
#include "trace_meta.h"

#define MERGE_POINTS_MAX 2048 /* sync points kept per file for the fit */
#define MERGE_HEAD	 64   /* a member's first points, always kept (sequence matching) */

/* One sync point of a file, as the fit needs it. */
struct merge_point {
	__u64 group, seq;
	__u64 end_ts; /* the file's CLOCK_MONOTONIC */
	__u32 pid;
	__u32 member; /* index into merge_input.members */
};

/* A process of the file in a sync group (a rank of a communicator). */
struct merge_member {
	__u64 group;
	__u32 pid;
	__s32 rank, nranks;
	__u32 inferred; /* SYNC_INFERRED: its seqs count from its first point seen */
	__u64 first_seq;
	__u64 count; /* its points, all of them */
	__s64 shift; /* the fit's: its seq s is the group's s + shift */
};

struct merge_input {
	const char *path;
	/* Scan: what the file says. */
	struct trace_meta meta; /* copies: host, boot id, kernel, families, start clocks */
	struct trace_clocks end;
	int has_end;
	__u32 max_string, max_stack, max_pid;
	__u64 first_ts, last_ts, records, unknown_records;
	__u32 corrupt_chunks;
	int truncated, merged; /* merged: it is a merged file itself */
	struct merge_member *members;
	__u32 nmembers;
	size_t members_cap;
	struct merge_point *pts;
	__u32 npts;
	size_t pts_cap;
	__u64 stride; /* points past a member's head kept when seq % stride == 0 */
	/* Fit: how its times go onto the merged clock: merged = merged0 + d + d * rate, d = t - mono0. */
	__u64 mono0, merged0;
	double rate;
	__s64 offset_ns;      /* its wall clock's error against the reference's (at its points) */
	double offset_err_ns; /* the standard error of that, from the residuals */
	double drift_ppb;
	double drift_err_ppb;  /* the standard error of that (0: no drift fitted) */
	double rms_ns, max_ns; /* residuals of its points' ends after the fit */
	__u32 used, outliers;  /* points the fit used, and left out */
	__u32 flags;	       /* BS_RANK_* */
	/* Write: its place in the merged file. */
	__u32 ns;
	__u32 string_base, stack_base;
};

struct merge_opts {
	const char *const *files;
	__u32 nfiles;
	const char *out;
	int force;
	const char
		*reference; /* a file of FILES whose clock the merged file takes; NULL: rank 0's */
	int wall_only;	    /* no fine alignment */
	const char *cmdline;
};

/* Scan PATH into IN (zeroed by the caller). 0, or a negative errno with ERR said. */
int merge_scan__file(struct merge_input *in, const char *path, char *err, size_t errlen);
void merge_input__free(struct merge_input *in);

/*
 * Align: each input's map, offset, drift, residuals and flags, and its members' shifts. REF:
 * the reference's index. WALL_ONLY: the coarse alignment alone. 0 or -ENOMEM.
 */
int merge_fit(struct merge_input *in, __u32 n, __u32 ref, int wall_only);
/* The merged time of T, a time of IN's file (0 stays 0). */
__u64 merge_input__clock(const struct merge_input *in, __u64 t);

/* REC, a copy of one of IN's records, rewritten for the merged file (merge_rebase.c). */
struct bs_hdr;
void merge_rebase__record(struct bs_hdr *rec, const struct merge_input *in);

/*
 * Write the merged file: the inputs in the order of ORDER (the reference first), each in its
 * namespace. 0, or a negative errno said on stderr (the output is then removed).
 */
int merge_write(const struct merge_opts *o, struct merge_input *in, const __u32 *order, __u32 n);

/* The whole command: scan, fit, write, then IN and ORDER for the caller's report. */
int merge__run(const struct merge_opts *o, struct merge_input **in, __u32 **order);

#endif /* BPFSIGHT_MERGE_H */
