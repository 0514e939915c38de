/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Time and counts summed per (label, code location) for the reports that say where in the
 * code something happened (cuda_callsites, gil_stacks, offcpu_stacks): the location is the
 * stack's line in the job's own code, with the library's line that did the work beside it
 * (frame_sum__own_site); its innermost Python frame, or its first frame, when it has no
 * line of the job's.
 */
#ifndef BPFSIGHT_FRAME_SUM_H
#define BPFSIGHT_FRAME_SUM_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

struct table;
struct trace_model;
struct trace_stack;

struct frame_sum_row {
	char *label;
	const struct bs_frame *frame, *via; /* the model's; via NULL when none */
	__u64 count, total_ns;
};

struct frame_sum {
	struct frame_sum_row *v;
	__u64 n;
	size_t cap;
	int err;
};

/* A report's new and free hooks (struct report) for a frame_sum as its state. */
void *frame_sum__new(void);
void frame_sum__delete(void *fs);
/* The frame a stack is summed under: its innermost Python frame, else its first. */
const struct bs_frame *frame_sum__site(const struct trace_stack *s);
/*
 * The frame of S in the job's own code: its innermost Python frame whose file is neither the
 * interpreter's standard library nor an installed package (frame_sum__library_file), the
 * line a user wrote. *VIA gets the frame the stack is summed under otherwise (frame_sum__site:
 * the library's line that did the work, conv.py:459) when it is another, else NULL. A stack
 * without a frame of the job's own gives frame_sum__site's frame, *VIA NULL.
 */
const struct bs_frame *frame_sum__own_site(const struct trace_stack *s, const struct trace_model *m,
					   const struct bs_frame **via);
/*
 * 1 when PATH, a Python frame's file, is library code rather than the job's: the standard
 * library (.../lib/python3.X/, a frozen module "<frozen ...>"), an installed package
 * (site-packages, dist-packages) or PyTorch's own tree (.../torch/, installed or built from
 * source); 1 for an empty or NULL path.
 */
int frame_sum__library_file(const char *path);
/*
 * The first N Python frames of S, innermost first, as torch.profiler's group_by_stack_n
 * writes them: "FILE(LINE): FUNC" joined by "; ", leaving out frames SKIP says (may be NULL).
 * malloc'ed; NULL when out of memory.
 */
char *frame_sum__stack_text(const struct trace_stack *s, const struct trace_model *m, unsigned n,
			    int (*skip)(const char *entry));
/* Add one occurrence of DUR ns under (LABEL, stack S's site): nothing for a NULL stack. */
void frame_sum__add(struct frame_sum *fs, const char *label, const struct trace_stack *s,
		    const struct trace_model *m, __u64 dur);
/*
 * Rows by total, largest first: columns LABEL_KEY (LABEL_TITLE), func, file, line, via_func,
 * via_file, via_line, count, total_ns.
 */
int frame_sum__emit(struct frame_sum *fs, const struct trace_model *m, struct table *t,
		    const char *label_key, const char *label_title);
void frame_sum__free(struct frame_sum *fs);

#endif /* BPFSIGHT_FRAME_SUM_H */
