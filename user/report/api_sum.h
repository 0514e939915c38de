/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nsys's API summary (cuda_api_sum, cublas_sum, cudnn_sum) over the calls of a uprobe family's
 * table (user/ucall/): one row per function, nsys's timing columns (time_sum.h) and its name,
 * over the calls the application made (depth 0: a call a traced call made is part of its
 * caller's time). A family's report gives its table to api_sum__new (and its own columns to
 * api_sum__new_extra: nccl_sum); the other hooks are the report's own.
 */
#ifndef BPFSIGHT_API_SUM_H
#define BPFSIGHT_API_SUM_H

#include "report.h"
#include "ucall_api.h"

/*
 * A family's columns beside the timing ones (nccl_sum's bytes and errors): its own state per
 * function, SIZE bytes (zeroed), kept by ADD from each call counted; NCOLS columns put before
 * the name, filled by SET; and NOTE, after the rows, given every function's number.
 */
struct api_sum_extra {
	size_t size;
	void (*add)(void *state, const struct bs_hdr *rec);
	const struct table_col *cols;
	int ncols;
	void (*set)(struct table *t, int first_col, const void *state);
	void (*note)(struct table *t, const __u32 *fns, size_t n);
};

void *api_sum__new(const struct ucall_table *t);
/* The same with EXTRA (kept by address: a static). */
void *api_sum__new_extra(const struct ucall_table *t, const struct api_sum_extra *extra);
void api_sum__add(void *st, const struct bs_hdr *rec, const struct trace_model *m);
int api_sum__emit(void *st, const struct trace_model *m, struct table *t);
void api_sum__free(void *st);

#endif /* BPFSIGHT_API_SUM_H */
