/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Loss causes by number (BS_REC_LOSS.cause, records.h): the recording's own, which any
 * family's events can suffer, and the ones each family declares in its struct family
 * (`losses`). Readers name causes through these lookups, so a family's cause needs no table
 * outside its folder.
 */
#ifndef BPFSIGHT_LOSS_H
#define BPFSIGHT_LOSS_H

#include <linux/types.h>
#include "records.h"

struct family;

/* One loss cause: its number (part of the file format), its name, what was lost. */
struct loss_cause {
	__u32 cause;
	const char *name;
	const char *desc;
};

/* The cause's name ("ringbuf_full"), or NULL for a cause no one here declares. */
const char *loss_cause__find(__u32 cause, const struct family **owner);
/* The same, "unknown" for a cause no one here declares. */
const char *loss_cause_name(__u32 cause);
/* The family that declares CAUSE, NULL for the recording's own (or an unknown one). */
const struct family *loss_cause__owner(__u32 cause);
/* Where a count of CAUSE goes in an array of BS_LOSS_MAX + 1: the last slot for unknown ones. */
__u32 loss_cause__slot(__u32 cause);
/*
 * Which family's events a loss counts. A loss record says it (bs_loss.block, the family's
 * record-type block); a family's own cause is its family's anyway. NULL: the whole file's
 * (write_failed, flight_size), or not said (a file written before records said it).
 */
const struct family *loss__family(const struct bs_loss *l);
/*
 * The family of the record-type block BLOCK (the one decoding a type in it: any type of the
 * block will do, a ring-only one too), or NULL.
 */
const struct family *loss__block_family(__u32 block);
/* The first type of F's record-type block (0x30 for cuda), or -1 for one that decodes none. */
int loss__family_block(const struct family *f);
/*
 * Where the recorder counts CAUSE of F's events (BS_LOST_KEY, by F's index in families[]):
 * NULL, the recording's own, is the family of block 0's (proc).
 */
__u32 loss__key(const struct family *f, __u32 cause);
/*
 * The name of the family whose events loss L counts, for labels and reports: "all" for a
 * loss of the whole file (write_failed, flight_size), "unknown" where a file of before did
 * not say.
 */
const char *loss__family_name(const struct bs_loss *l);
/* The recording's own causes, ending with a zeroed entry (for docs and metrics). */
extern const struct loss_cause recording_losses[];

#endif /* BPFSIGHT_LOSS_H */
