/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Record types of files of format 3 and before, in this format's numbers. Format 4 widened
 * types to 12 bits and gave the two families that had no block of their own one each
 * (gpumetrics 0xa8-0xaf -> 0x100, pyfunc 0xf2-0xf7 -> 0x110: docs/FORMAT.md, "Versioning");
 * a LOSS record named its family's block as 0x100 | block, now BS_LOSS_BLOCK_SET | block. The
 * reader maps every record of an older file as it hands it out, so that nothing above it
 * knows the old numbers, and `convert` writes them anew.
 */
#ifndef BPFSIGHT_TRACE_RENUMBER_H
#define BPFSIGHT_TRACE_RENUMBER_H

#include <linux/types.h>

/* The first format whose numbers are this one's. */
#define TRACE_RENUMBER_VERSION 4
/* Types of the formats before it were below this. */
#define TRACE_RENUMBER_BYTE_TYPES 0x100

/* TYPE of a file of format VERSION, in this format's numbers. */
__u32 trace_renumber__type(__u32 version, __u32 type);
/*
 * The record at WORDS (NWORDS little-endian u64 words, as decoded) of a file of format
 * VERSION, in this format's numbers, in place: its type and the fields that name a type (a
 * STACK_REF's event type, a library SYMBOL's address) or a block (a LOSS's).
 */
void trace_renumber__record(__u32 version, __u64 *words, __u32 nwords);

#endif /* BPFSIGHT_TRACE_RENUMBER_H */
