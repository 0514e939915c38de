// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda family's source of steps for the per-step reports (steps.h), named by
 * --steps=cudaProfilerApi: each range from a cudaProfilerStart (or cuProfilerStart) to the next
 * cudaProfilerStop of its process, both calls included, as --capture-range=cudaProfilerApi
 * keeps them; numbered 1, 2, ... by start. The runtime's call makes the driver's, whose record
 * comes first (it returns first): a range opens at the earlier of the two starts (a capture's
 * file has only the driver's: the runtime's began before the range opened) and closes with the
 * call made outside any other. A range not stopped when the recording ended is no step.
 */
#include <errno.h>
#include <stdlib.h>
#include "cuda.h"
#include "hmap.h"
#include "steps.h"

struct open_range {
	__u64 ts, stop_end; /* stop_end: a nested stop's end, until the call around it comes */
	__u32 tid, open;
};

static void *cuda_steps_new(const char *arg)
{
	return hmap__new(sizeof(struct open_range)); /* {pid} -> its open range */
}

static void cuda_steps_free(void *st)
{
	hmap__free(st);
}

static int cuda_steps_add(void *st, const struct bs_hdr *rec, const struct trace_model *m,
			  steps_emit_fn emit, void *arg)
{
	const struct bs_ucall *r = (const void *)rec;
	const struct ucall_api *api;
	struct open_range *o;
	__u64 end;

	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(*r))
		return 0;
	api = ucall_table__api(&cuda_table, r->fn);
	if (!api || !(api->flags & (CUDA_F_PROFILER_START | CUDA_F_PROFILER_STOP)))
		return 0;
	o = hmap__get(st, (struct hkey){ rec->pid }, 1);
	if (!o)
		return -ENOMEM;
	if (api->flags & CUDA_F_PROFILER_START) {
		if (!o->open)
			*o = (struct open_range){ .ts = rec->ts, .tid = rec->tid, .open = 1 };
		else if (rec->ts < o->ts && !o->stop_end)
			o->ts = rec->ts; /* the runtime's call around the driver's */
		return 0;
	}
	if (!o->open)
		return 0;
	end = rec->ts + r->dur;
	if (r->depth) {
		o->stop_end = end > o->stop_end ? end : o->stop_end;
		return 0;
	}
	o->open = 0;
	return emit(arg, &(struct step_span){ .pid = rec->pid,
					      .tid = o->tid,
					      .ts = o->ts,
					      .end = end > o->stop_end ? end : o->stop_end });
}

const struct family_steps cuda_step_sources[] = {
	{
		.kind = "cudaProfilerApi",
		.desc = "cudaProfilerStart to cudaProfilerStop (-t cuda), as "
			"--capture-range=cudaProfilerApi",
		.new = cuda_steps_new,
		.add = cuda_steps_add,
		.free = cuda_steps_free,
	},
	{},
};
