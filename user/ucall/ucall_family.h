/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The record side every uprobe-API family (cuda, nccl, cublas, cudnn, blas) shares, written
 * once: its copy of the one generic program (bpf/ucall.bpf.c), told by rodata which records
 * it writes, loaded on the shared maps and handed to the uprobe manager for every function of
 * the family's API table (struct family.api). A family that needs nothing more at record time
 * is its table, its decoders and reports, and these members (docs/ARCHITECTURE.md, "A
 * uprobe-API family"):
 *
 *	.flags = FAMILY_UPROBES,
 *	.needs = UCALL_FAMILY_NEEDS,
 *	.api = &NAME_table,
 *	.losses = NAME_losses,	  (UCALL_LOSS_TOO_DEEP: its one loss cause)
 *	.attach = ucall_family__attach,
 *	.detach = ucall_family__detach,
 */
#ifndef BPFSIGHT_UCALL_FAMILY_H
#define BPFSIGHT_UCALL_FAMILY_H

#include "family.h"
#include "family_record.h"
#include "kernel_features.h"
#include "ucall_api.h"

struct family_attach;
struct record_ctx;
struct ucall_family;

/*
 * The generic programs tell the functions apart by their cookies, and keep the call stacks of
 * threads without a slot in task storage.
 */
#define UCALL_FAMILY_NEEDS (1u << KF_ATTACH_COOKIE | 1u << KF_TASK_STORAGE)

/* Its loss cause for calls nested too deep (the table's loss_depth), as struct loss_cause. */
#define UCALL_LOSS_TOO_DEEP(cause, name)                                                           \
	{                                                                                          \
		cause, name,                                                                       \
			"calls nested deeper than the per-thread call stack keeps (8): not timed"  \
	}

/*
 * A->self's copy of the generic program, for its API table: loaded on the shared maps, its
 * thread-exit program attached, its functions handed to the uprobe manager (A->uprobes), which
 * attaches them wherever they are found; the copy goes into *STATE. 0, or a negative errno.
 */
int ucall_family__attach(const struct family_attach *a, void **state);
/* Destroy what ucall_family__attach made (STATE may be NULL). */
void ucall_family__detach(struct record_ctx *ctx, void *state);

/*
 * struct family.in_flight of a family whose calls may hang a job (nccl's collectives, cuda's
 * synchronizations): with --trigger hang, attach maps the program's per-thread call stacks
 * (ucall_slots) and this reads them: every thread of its targets that made a call, and a
 * record per call it is in (BS_UCALL_OPEN), from the frame BPF keeps for it. A thread whose
 * stack went to task storage (more threads than slots) is not seen; a frame that a thread
 * asleep in a system call has left (its return was missed) is not told.
 */
void ucall_family__in_flight(struct record_ctx *ctx, void *state, family_in_flight_fn fn,
			     void *arg);

#endif /* BPFSIGHT_UCALL_FAMILY_H */
