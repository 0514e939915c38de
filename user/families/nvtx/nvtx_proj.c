// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* NVTX ranges projected onto the GPU operations their thread launched (see nvtx_proj.h). */
#include <errno.h>
#include <stdlib.h>
#include "gpu_decode.h"
#include "gpu_records.h"
#include "nvtx.h"
#include "nvtx_decode.h"
#include "nvtx_proj.h"
#include "array.h"

struct nvtx_proj {
	struct nvtx_proj_range *ranges;
	size_t nranges, cap_ranges;
	struct nvtx_proj_op *ops;
	size_t nops, cap_ops;
};

struct nvtx_proj *nvtx_proj__new(void)
{
	return calloc(1, sizeof(struct nvtx_proj));
}

void nvtx_proj__free(struct nvtx_proj *p)
{
	if (!p)
		return;
	free(p->ranges);
	free(p->ops);
	free(p);
}

int nvtx_proj__add(struct nvtx_proj *p, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_nvtx_range *r = (const void *)rec;
	struct gpu_op op;

	if (rec->type == BS_REC_NVTX_RANGE) {
		if (rec->size < sizeof(*r) || r->flags & BS_NVTX_OPEN)
			return 0;
		if (array__grow((void **)&p->ranges, p->nranges, &p->cap_ranges,
				sizeof(*p->ranges)))
			return -ENOMEM;
		p->ranges[p->nranges++] = (struct nvtx_proj_range){
			rec->pid,
			rec->tid,
			rec->ts,
			r->dur,
			nvtx_domain_name(m, r->domain_id),
			nvtx_message(m, r->name_id),
			r->flags,
		};
		return 0;
	}
	/* Only operations whose launching call is known can be placed inside a range. */
	if (!gpu_op__read(rec, &op) || !op.call_ts ||
	    !(op.flags & (BS_GPU_CALL_CUDA | BS_GPU_CALL_API)))
		return 0;
	if (array__grow((void **)&p->ops, p->nops, &p->cap_ops, sizeof(*p->ops)))
		return -ENOMEM;
	p->ops[p->nops++] = (struct nvtx_proj_op){ op.pid, op.tid,    op.call_ts, op.ts,
						   op.dur, op.device, op.stream };
	return 0;
}

static int op_cmp(const void *x, const void *y)
{
	const struct nvtx_proj_op *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return (a->call_ts > b->call_ts) - (a->call_ts < b->call_ts);
}

/* The first op of (PID, TID) launched at or after TS. */
static size_t op_lower_bound(const struct nvtx_proj *p, __u32 pid, __u32 tid, __u64 ts)
{
	struct nvtx_proj_op key = { .pid = pid, .tid = tid, .call_ts = ts };
	size_t lo = 0, hi = p->nops;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (op_cmp(&p->ops[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int nvtx_proj__join(struct nvtx_proj *p,
		    int (*fn)(void *arg, const struct nvtx_proj_range *r,
			      const struct nvtx_proj_op *ops, size_t n),
		    void *arg)
{
	int err;

	if (p->nops)
		qsort(p->ops, p->nops, sizeof(*p->ops), op_cmp);
	for (size_t i = 0; i < p->nranges; i++) {
		const struct nvtx_proj_range *r = &p->ranges[i];
		size_t lo = op_lower_bound(p, r->pid, r->tid, r->ts), hi = lo;

		while (hi < p->nops && p->ops[hi].pid == r->pid && p->ops[hi].tid == r->tid &&
		       p->ops[hi].call_ts <= r->ts + r->dur)
			hi++;
		if (hi == lo)
			continue;
		err = fn(arg, r, p->ops + lo, hi - lo);
		if (err)
			return err;
	}
	return 0;
}
