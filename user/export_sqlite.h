/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the SQLite exporter: its state and the helpers export_sqlite.c (the database, the
 * host-side tables), export_sqlite_gpu.c (nsys's GPU and NVTX tables) and export_sqlite_gil.c
 * (the GIL tables) share.
 */
#ifndef BPFSIGHT_EXPORT_SQLITE_H
#define BPFSIGHT_EXPORT_SQLITE_H

#include <sqlite3.h>
#include "export.h"

#define SQ_CACHE_KIB 32768 /* SQLite page cache; dirty pages past it spill to the file */
#define SQ_NR_CACHE  1024  /* syscall numbers whose name id is cached in an array */
/* nsys's ENUM_NSYS_EVENT_CLASS values (the table is written with the rows we use). */
#define SQ_CUDA_RUNTIME_CLASS 0	 /* TRACE_PROCESS_EVENT_CUDA_RUNTIME */
#define SQ_CUDA_DRIVER_CLASS  1	 /* TRACE_PROCESS_EVENT_CUDA_DRIVER */
#define SQ_OSRT_CLASS	      27 /* TRACE_PROCESS_EVENT_OS_RUNTIME */

enum sq_stmt {
	SQ_META,
	SQ_STRING,
	SQ_THREAD_NAME,
	SQ_OSRT,
	SQ_SCHED,
	SQ_OFFCPU,
	SQ_AGG,
	SQ_LOSS,
	SQ_PROCESS,
	SQ_PROCESS_NAME,
	SQ_THREAD,
	SQ_PROC_EVENT,
	SQ_CUDA,
	SQ_CUDA_ARGS,
	SQ_NCCL,
	SQ_NSTMT,
};

struct sq_gpu;
struct sq_gil;

struct sq {
	sqlite3 *db;
	const char *path;
	sqlite3_stmt *stmt[SQ_NSTMT];
	struct string_pool *strings; /* text -> StringIds.id */
	struct hmap *threads;	     /* {pid, tid} -> u8: every thread a record named */
	struct hmap *agg_closed;     /* {pid << 32 | tid, nr} -> bs_syscall_agg_val: finals */
	__u32 nr_name[SQ_NR_CACHE];  /* syscall nr -> StringIds.id, 0 = not yet */
	__s64 cuda_calls;	     /* CUPTI_ACTIVITY_KIND_RUNTIME.id of the last row */
	struct sq_gpu *gpu;	     /* export_sqlite_gpu.c's statements and state */
	struct sq_gil *gil;	     /* export_sqlite_gil.c's */
};

/* nsys's thread id: pid << 24 | tid. */
__s64 global_tid(__u32 pid, __u32 tid);
/* Say what SQLite says, once, where the failure is understood; map to an errno. */
int sq_fail(struct sq *s, const char *what);
int sq_exec(struct sq *s, const char *sql, const char *what);
void sq_bind_text(sqlite3_stmt *st, int col, const char *text); /* NULL binds NULL */
/* The StringIds id of TEXT, inserting it the first time; 0 on failure (*ERR set). */
__u32 sq_intern(struct sq *s, const char *text, int *err);

/* export_sqlite_gpu.c */
int sq_gpu__open(struct sq *s); /* its tables and statements, inside the transaction */
/* A gpu or nvtx family record: its rows (0), or -errno. */
int sq_gpu__record(struct sq *s, const struct bs_hdr *rec, const struct event *ev,
		   const struct trace_model *m);
int sq_gpu__finish(struct sq *s); /* indexes, CUPTI's correlation ids on the launching calls */
void sq_gpu__free(struct sq *s);

/* export_sqlite_gil.c */
int sq_gil__open(struct sq *s); /* its tables and statements, inside the transaction */
/* Any record: the gil family's rows, the threads it may list (0), or -errno. */
int sq_gil__record(struct sq *s, const struct bs_hdr *rec, const struct trace_model *m);
int sq_gil__finish(struct sq *s, const struct trace_model *m); /* thread rows, indexes */
void sq_gil__free(struct sq *s);

#endif /* BPFSIGHT_EXPORT_SQLITE_H */
