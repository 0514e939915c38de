/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Samples of stacks summed per function (a native function, a Python line, or with
 * FUNC_SUM_BY_FUNC a Python function): the samples it was running in (self, the stack's
 * innermost frame of those counted) and the samples it was on the stack of (total, once per
 * sample however deep it recurses). py-spy top's %Own and %Total, cProfile's tottime and
 * cumtime: what `stats -r cpu_sum` ranks and `top`'s function view shows (docs/STACKS.md).
 */
#ifndef BPFSIGHT_FUNC_SUM_H
#define BPFSIGHT_FUNC_SUM_H

#include <stddef.h>
#include <linux/types.h>
#include "records.h"

struct trace_model;
struct trace_stack;

/* Python frames only; a stack without one counts in a "[no Python frame]" row. */
#define FUNC_SUM_PYTHON 0x1
/*
 * A stack's Python frames when it has some, else its native frames (py-spy top's view of a
 * process whose native threads run too); a sample in kernel code is its user stack's.
 */
#define FUNC_SUM_PYTHON_FIRST 0x2
/*
 * For people: an unnamed native frame is its module's row, a Python frame gone before it was
 * read one row; a marker where the native unwind stopped is no row but counted (func_sum__cut).
 */
#define FUNC_SUM_GROUP 0x4
/* A Python function is one row whatever line it is at (py-spy top's L). */
#define FUNC_SUM_BY_FUNC 0x8

struct func_sum_row {
	const struct bs_frame *frame; /* the first frame seen of it (the model's) */
	__u64 self, total;
	__u64 last; /* the add that counted it in total last: once per stack */
};

struct func_sum;

/* Empty sums that tell functions apart and count stacks as FLAGS (FUNC_SUM_*) say. */
struct func_sum *func_sum__new(unsigned flags);
void func_sum__free(struct func_sum *fs);
/* N samples of stack S (NULL: none was read), taken in kernel code when KERNEL. 0, -ENOMEM. */
int func_sum__add(struct func_sum *fs, const struct trace_stack *s, int kernel, __u64 n);
/* Iterate (start with *it = 0): the next row, NULL at the end. Valid until the next add. */
struct func_sum_row *func_sum__next(const struct func_sum *fs, size_t *it);
size_t func_sum__count(const struct func_sum *fs);
/* The row of frame F's function (as FS tells functions apart), NULL when it has none. */
const struct func_sum_row *func_sum__find(const struct func_sum *fs, const struct bs_frame *f);
/*
 * FUNC_SUM_GROUP: the samples whose native unwind stopped early, and in *MODULE_ID (a string
 * id) the module most of them stopped in.
 */
__u64 func_sum__cut(const struct func_sum *fs, __u32 *module_id);
/*
 * Row frame F's function for people: "[no Python frame]", an unnamed module's code as
 * "[MODULE]" and "[python code gone before it was read]" with FUNC_SUM_GROUP, else its name
 * (stack_frame__func). Uses BUF.
 */
const char *func_sum__func(const struct bs_frame *f, const struct trace_model *m, unsigned flags,
			   char *buf, size_t len);

#endif /* BPFSIGHT_FUNC_SUM_H */
