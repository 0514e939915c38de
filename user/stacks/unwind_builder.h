/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unwind tables built off the recorder's main loop. A library's table takes a while to build
 * (libtorch_cpu's the longest: bench/RESULTS.md, "Unwind tables: building them"), and its
 * file may sit on a file system that never answers (a FUSE server, a hung NFS mount): built
 * in the loop, the ring went undrained all that time, and a read that never returned held
 * the recording for good (Ctrl-C and -d included). A builder is one thread that builds the
 * queued files' tables in turn (or reads them from the store of earlier recordings:
 * unwind_store.h); the loop takes the finished ones when it polls, or waits for them where a
 * process is held until its tables are ready (unwind_builder__wait). A build that
 * does not end is left behind in its thread (unwind_builder__replace, unwind_builder__free),
 * which frees what it holds if it ever returns.
 */
#ifndef BPFSIGHT_UNWIND_BUILDER_H
#define BPFSIGHT_UNWIND_BUILDER_H

#include <linux/types.h>
#include "unwind_build.h"

struct unwind_builder;

/* A file to build, and once done, its table (T, when ERR is 0) or why not (ERR < 0). */
struct unwind_build_job {
	struct unwind_build_job *next;
	__u64 dev, ino;
	char *open_path, *root, *shown; /* as in struct unwind_mapping */
	char *store;			/* the store's folder (unwind_store.h), NULL: none */
	struct unwind_table t;
	int err;
	int how;      /* enum unwind_store_how */
	char why[96]; /* UNWIND_STORE_REFUSED: why its entry was */
};

/* A builder and its thread (every signal blocked in it); NULL when no thread can be had. */
struct unwind_builder *unwind_builder__new(void);
/*
 * Queue the table of file (DEV, INO), read at OPEN_PATH (ROOT, SHOWN: unwind_mapping's),
 * through the store in folder STORE (NULL: built, never kept).
 */
int unwind_builder__queue(struct unwind_builder *b, __u64 dev, __u64 ino, const char *open_path,
			  const char *root, const char *shown, const char *store);
/* A finished job (free it with unwind_build_job__free), or NULL when none is. */
struct unwind_build_job *unwind_builder__done(struct unwind_builder *b);
/*
 * URGENT: a process waits for the builds (a hold): the thread runs at the recorder's priority,
 * not at nice 10 (the least urgent work of a recording otherwise).
 */
void unwind_builder__urgent(struct unwind_builder *b, int urgent);
/* Until a job is done (not yet taken) or DEADLINE (mono_clock.h): 1 when one is. */
int unwind_builder__wait(struct unwind_builder *b, __u64 deadline);
/* Queued or under way, not yet taken by unwind_builder__done. */
__u32 unwind_builder__pending(struct unwind_builder *b);
/*
 * How long the build under way has run by NOW (mono_clock.h), with its file's DEV and INO and
 * SHOWN (valid while the builder lives); 0 when none is under way.
 */
__u64 unwind_builder__busy(struct unwind_builder *b, __u64 now, __u64 *dev, __u64 *ino,
			   const char **shown);
/*
 * A new builder with B's queued jobs and finished ones; B's build under way is left behind
 * (B is freed). NULL (B untouched) when no thread can be had.
 */
struct unwind_builder *unwind_builder__replace(struct unwind_builder *b);
/* Jobs not begun are dropped; a build under way is left to end in its thread. */
void unwind_builder__free(struct unwind_builder *b);
void unwind_build_job__free(struct unwind_build_job *j);

#endif /* BPFSIGHT_UNWIND_BUILDER_H */
