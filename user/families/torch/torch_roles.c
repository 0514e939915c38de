// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a process is to a PyTorch job, read from the threads' stacks the recording's edges (and
 * a hang trigger) read: a process whose main thread runs torch's DataLoader worker loop is one
 * of its parent's DataLoader workers, named "DataLoader worker N of trainer P" in every table,
 * the verdict and the report (trace_model__join_pool) instead of its comm (python3).
 */
#include <string.h>
#include "snap_records.h"
#include "stack_records.h"
#include "torch.h"
#include "trace_model.h"

#define WORKER_FUNC "_worker_loop"
#define WORKER_FILE "/torch/utils/data/_utils/worker.py"

static int ends_with(const char *s, const char *tail)
{
	size_t n = s ? strlen(s) : 0, k = strlen(tail);

	return n >= k && !strcmp(s + n - k, tail);
}

int torch_roles__in_frame(const struct trace_stack *st, const struct trace_model *m,
			  const char *func, const char *file)
{
	for (__u16 i = 0; st && i < st->nframes; i++) {
		const struct bs_frame *f = &st->frames[i];

		if (f->kind == BS_FRAME_PYTHON &&
		    ends_with(trace_model__string(m, f->func_id), func) &&
		    ends_with(trace_model__string(m, f->file_id), file))
			return 1;
	}
	return 0;
}

void torch_roles__observe(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_thread_snap *t = (const void *)rec;
	__u32 trainer;

	if (rec->type != BS_REC_THREAD_SNAP || rec->size < sizeof(*t) || rec->pid != rec->tid ||
	    !t->stack_id ||
	    !torch_roles__in_frame(trace_model__stack(m, t->stack_id), m, WORKER_FUNC,
				   WORKER_FILE) ||
	    !(trainer = trace_model__ppid(m, rec->pid)))
		return;
	trace_model__join_pool(m, rec->pid, trainer, "DataLoader worker", "trainer");
}
