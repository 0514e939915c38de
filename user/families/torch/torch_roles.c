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

/* Whether stack ID has torch's DataLoader worker loop among its Python frames. */
static int in_worker_loop(const struct trace_model *m, __u32 id)
{
	const struct trace_stack *st = id ? trace_model__stack(m, id) : NULL;
	size_t flen = strlen(WORKER_FILE);

	for (__u16 i = 0; st && i < st->nframes; i++) {
		const struct bs_frame *f = &st->frames[i];
		const char *func, *file;
		size_t n;

		if (f->kind != BS_FRAME_PYTHON)
			continue;
		func = trace_model__string(m, f->func_id);
		file = trace_model__string(m, f->file_id);
		n = file ? strlen(file) : 0;
		if (func && !strcmp(func, WORKER_FUNC) && n >= flen &&
		    !strcmp(file + n - flen, WORKER_FILE))
			return 1;
	}
	return 0;
}

void torch_roles__observe(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_thread_snap *t = (const void *)rec;
	__u32 trainer;

	if (rec->type != BS_REC_THREAD_SNAP || rec->size < sizeof(*t) || rec->pid != rec->tid ||
	    !in_worker_loop(m, t->stack_id) || !(trainer = trace_model__ppid(m, rec->pid)))
		return;
	trace_model__join_pool(m, rec->pid, trainer, "DataLoader worker", "trainer");
}
