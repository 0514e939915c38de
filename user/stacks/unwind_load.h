/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF side of unwind tables (bpf/unwind_maps.h): files' rows loaded into unw_rows once
 * per file (built by unwind_build.h), and each process's mappings of them in unw_procs, so
 * the native walk (bpf/stack_native.bpf.h) unwinds code without frame pointers. Used by the
 * stack service (stack_svc.c), which decides when a file's table is wanted, and by
 * `bpfsight stacks` (snap.c), which also walks sleeping threads by the same rows
 * (unwind_load__row). docs/STACKS.md, "Unwind tables".
 */
#ifndef BPFSIGHT_UNWIND_LOAD_H
#define BPFSIGHT_UNWIND_LOAD_H

#include <linux/types.h>
#include <sys/types.h>
#include "unwind_maps.h"

struct unwind_load;
struct unwind_table;

/* One executable mapping of a file, as the process's maps show it. */
struct unwind_mapping {
	__u64 start, end; /* runtime addresses */
	__u64 pgoff;	  /* the file offset it maps from (its load bias: the table's segments) */
	__u64 dev, ino;	  /* the file */
	const char *open_path; /* where to read it (/proc/PID/map_files/..., or a path) */
	const char *root;      /* the process's root, for its debug files ("/proc/PID/root") */
	const char *shown;     /* its path as the process shows it (for messages) */
	const struct unwind_table *table; /* its table built already (the vDSO's), or NULL */
};

/* What the tables take (`info`, the end-of-run line). */
struct unwind_load_usage {
	__u32 files;	 /* files with a table loaded */
	__u32 failed;	 /* files without one (no .eh_frame, not x86-64, too big) */
	__u32 built;	 /* tables built (the store had none, or one it refused) */
	__u32 cached;	 /* tables read from the store of earlier recordings (unwind_store.h) */
	__u32 refused;	 /* store entries refused (corrupt, not ours): built again */
	__u32 fp;	 /* files built with frame pointers: walked by them, no rows */
	__u32 procs;	 /* processes with mappings registered */
	__u32 full;	 /* files refused because the rows' map was full */
	__u64 rows, cap; /* rows loaded, and the map's capacity */
	__u64 bytes;	 /* BPF memory they take: rows and the processes' mappings */
	__u64 cap_bytes; /* the rows' map's size (allocated when the recording starts) */
	__u64 build_ns;	 /* time spent building tables */
	__u64 cache_ns;	 /* time spent reading them from the store */
};

/*
 * The shared maps of a recording (the recorder makes them before any object loads):
 * unw_rows of ROWS rows (--unwind=tables:SIZE; 0: BPFSIGHT_MAP_ENTRIES=unw_rows=N pairs, else
 * BS_UNW_ROWS; one row unless TABLES: a recording without stacks, --unwind=fp, or a kernel
 * without KF_UNWIND_TABLES), unw_procs, unw_cache (one entry unless TABLES). 0 or -errno.
 */
int unwind_load__create(int tables, __u64 rows, int *rows_fd, int *procs_fd, int *cache_fd);
/* Whether ROWS_FD was made to hold tables (mappable), not unwind_load__create's one row. */
int unwind_load__has_tables(int rows_fd);
/*
 * The tables of maps ROWS_FD and PROCS_FD (not closed by unwind_load__free); NULL on error.
 * ASYNC: tables are built by a thread of their own (unwind_builder.h) and loaded when
 * unwind_load__poll finds them done (a recording: its loop goes on meanwhile); else in
 * unwind_load__add itself (`bpfsight stacks`, which walks by them at once).
 */
struct unwind_load *unwind_load__new(int rows_fd, int procs_fd, int async, int *err);
void unwind_load__free(struct unwind_load *u);
/*
 * PID maps M: its file's table is built (or read from the store) and loaded on first use, and
 * the mapping joins PID's list (a mapping already there is left as it is), into unw_procs at
 * the next unwind_load__flush; with ASYNC, once the build is done (0 until then), at the poll
 * that finds it done. 0, or -errno: the file has no table (-ENOENT, -ENOEXEC...), the rows' map
 * is full (-ENOSPC, said once), PID has BS_UNW_MAPS_USED mappings already (-E2BIG).
 */
int unwind_load__add(struct unwind_load *u, pid_t pid, const struct unwind_mapping *m);
/* The lists unwind_load__add changed, into unw_procs (one update per process). */
void unwind_load__flush(struct unwind_load *u);
/*
 * ASYNC: until PID's mappings (PID 0: every process's) no longer wait for their tables, or
 * DEADLINE (mono_clock.h); how many still wait then. A process held until its tables are
 * ready (launch mode's stops at new code, -p before the recording goes live).
 */
size_t unwind_load__wait(struct unwind_load *u, pid_t pid, __u64 deadline);
/*
 * ASYNC: the builds done since are loaded and their waiting mappings registered; a build
 * that has read for 30 s (BPFSIGHT_UNWIND_WAIT_S) is left behind (said: its file gets no
 * table), the builds queued behind it go on in a new thread. Called by the loop.
 */
void unwind_load__poll(struct unwind_load *u);
/* ASYNC: builds queued or under way. */
__u32 unwind_load__pending(struct unwind_load *u);
/* Whether M's file was tried already (loaded or not): a stack through it says nothing new. */
int unwind_load__tried(struct unwind_load *u, const struct unwind_mapping *m);
/*
 * A fork: CHILD has PARENT's mappings (the same address space, copied), here as BPF copied
 * them in unw_procs at the fork (bpf/proc.bpf.c).
 */
void unwind_load__copy(struct unwind_load *u, pid_t parent, pid_t child);
/*
 * PID's list is made again (an exec, new code): emptied here, its waiting mappings dropped;
 * unw_procs keeps the old one until the flush after the new one is made.
 */
void unwind_load__reset(struct unwind_load *u, pid_t pid);
/* PID exited: its mappings go (from unw_procs too). */
void unwind_load__forget(struct unwind_load *u, pid_t pid);
/*
 * PID's mapping of ADDR and the row of its table covering ADDR - !EXACT (ADDR is the
 * instruction itself, or a return address whose call precedes it); NULL when no table covers
 * it. For a walk in user space (snap.c) by the rows BPF reads.
 */
const struct bs_unwind_row *unwind_load__row(struct unwind_load *u, pid_t pid, __u64 addr,
					     int exact, const struct bs_unw_map **map);
void unwind_load__usage(const struct unwind_load *u, struct unwind_load_usage *out);

#endif /* BPFSIGHT_UNWIND_LOAD_H */
