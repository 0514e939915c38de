/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * top's function view, its counting side (top_funcs.c): the interval's samples counted per
 * stack as they come, summed per function at each cut (func_sum.h, as stats -r cpu_sum sums
 * them), into the interval's sums and the sums since the start; a frame gets the busiest rows
 * with their names. The text is top_fview.c's.
 */
#ifndef BPFSIGHT_TOP_FUNCS_H
#define BPFSIGHT_TOP_FUNCS_H

#include <linux/types.h>
#include "top.h"

struct trace_model;
struct top_funcs;

struct top_funcs *top_funcs__new(void);
void top_funcs__free(struct top_funcs *f);
/* One sample of stack STACK_ID (0: none), worth PERIOD_NS. 0, or -ENOMEM. */
int top_funcs__sample(struct top_funcs *f, __u32 stack_id, int kernel, __u64 period_ns);
/*
 * The interval's samples summed (stacks named by M), then counted from zero again; with WANT,
 * OUT[TOP_FUNCS_BY_*] get the rows. 0, or -ENOMEM.
 */
int top_funcs__cut(struct top_funcs *f, const struct trace_model *m, int want,
		   struct top_funcs_frame out[2]);
/* Since-the-start sums from zero (r). */
int top_funcs__reset(struct top_funcs *f);
/* The period every sample stands for from now on, whatever the family said (a replay's). */
void top_funcs__set_period(struct top_funcs *f, __u64 period_ns);
/* Samples came since the start. */
int top_funcs__sampled(const struct top_funcs *f);
void top_funcs_frame__free(struct top_funcs_frame *fr);

#endif /* BPFSIGHT_TOP_FUNCS_H */
