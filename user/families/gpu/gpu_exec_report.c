// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda_kern_exec_sum, nsys's "CUDA kernel launch & exec time summary": per (launching API,
 * kernel name), the API call's time, the queue time (from the end of the call to the kernel's
 * start, 0 when the kernel started before the call returned) and the kernel's time. This is
 * where GPU time is attributed to the CPU calls that caused it.
 *
 * A kernel's launching call is the cuda-family event that starts at its call_ts on its thread
 * (BS_GPU_CALL_CUDA), else CUPTI's API record that does (BS_GPU_CALL_API). GPU records reach
 * the file after their calls, but not always (the shim's buffers are flushed independently),
 * so the join is made at the end: calls and kernels are kept until then, O(launch calls +
 * kernels) memory, like every report with medians. Kernels whose call is not in the trace
 * (not linked, or the call was lost) form rows with api_name "(none)" and no API columns.
 */
#include <errno.h>
#include <stdlib.h>
#include "array.h"
#include "gpu.h"
#include "gpu_decode.h"
#include "report.h"
#include "table.h"
#include "tgroups.h"
#include "cuda_records.h"
#include "hmap.h"

#define EXEC_NONE "(none)"

struct exec_call {
	const char *name; /* static (API table) or model string */
	__u64 dur;
};

struct exec_kernel {
	__u32 pid, tid;
	__u16 flags;
	__u64 call_ts, ts, dur;
	const char *name;
};

struct exec_sum {
	struct hmap *cuda; /* {pid << 32 | tid, ts} -> exec_call, launching cuda calls */
	struct hmap *api;  /* the same for GPU_API records */
	struct exec_kernel *kernels;
	size_t n, cap;
	int err;
};

static void *exec_sum__new(void)
{
	struct exec_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->cuda = hmap__new(sizeof(struct exec_call));
	st->api = hmap__new(sizeof(struct exec_call));
	if (!st->cuda || !st->api) {
		hmap__free(st->cuda);
		hmap__free(st->api);
		free(st);
		return NULL;
	}
	return st;
}

static void exec_sum__free(void *vst)
{
	struct exec_sum *st = vst;

	if (!st)
		return;
	hmap__free(st->cuda);
	hmap__free(st->api);
	free(st->kernels);
	free(st);
}

static void exec_call_put(struct exec_sum *st, struct hmap *map, const struct bs_hdr *rec,
			  const char *name, __u64 dur)
{
	struct exec_call *c =
		hmap__get(map, (struct hkey){ (__u64)rec->pid << 32 | rec->tid, rec->ts }, 1);

	if (!c) {
		st->err = -ENOMEM;
		return;
	}
	c->name = name;
	c->dur = dur;
}

static void exec_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_gpu_api *a = (const void *)rec;
	struct exec_sum *st = vst;
	struct exec_kernel *k;
	const char *name;
	struct gpu_op op;

	if (gpu_is_launching_call(rec, &name)) {
		exec_call_put(st, st->cuda, rec, name, ((const struct bs_ucall *)rec)->dur);
		return;
	}
	if (rec->type == BS_REC_GPU_API && rec->size >= sizeof(*a)) {
		name = a->name_id ? trace_model__string(m, a->name_id) : NULL;
		exec_call_put(st, st->api, rec, name ? name : "[unknown API]", a->dur);
		return;
	}
	if (!gpu_op__read(rec, &op) || op.type != BS_REC_GPU_KERNEL)
		return;
	if (array__grow((void **)&st->kernels, st->n, &st->cap, sizeof(*st->kernels))) {
		st->err = -ENOMEM;
		return;
	}
	k = &st->kernels[st->n++];
	*k = (struct exec_kernel){
		op.pid, op.tid, op.flags, op.call_ts, op.ts, op.dur, gpu_op__name(&op, m)
	};
}

/* The launching call of K, NULL when the trace does not have it. */
static const struct exec_call *exec_call_of(const struct exec_sum *st, const struct exec_kernel *k,
					    __u64 *call_ts)
{
	struct hkey key = { (__u64)k->pid << 32 | k->tid, k->call_ts };
	struct hmap *map = k->flags & BS_GPU_CALL_CUDA	? st->cuda
			   : k->flags & BS_GPU_CALL_API ? st->api
							: NULL;

	*call_ts = k->call_ts;
	return map && k->call_ts ? hmap__get(map, key, 0) : NULL;
}

enum { ST_KERNEL, ST_API, ST_QUEUE };

static int exec_sum__join(struct exec_sum *st, struct tgroups *g)
{
	for (size_t i = 0; i < st->n; i++) {
		const struct exec_kernel *k = &st->kernels[i];
		const struct exec_call *c;
		struct tgroup *t;
		__u64 call_ts, call_end;

		c = exec_call_of(st, k, &call_ts);
		t = tgroups__get(g, k->name, c ? c->name : EXEC_NONE, 0);
		if (!t || tgroup__add(t, ST_KERNEL, k->dur))
			return -ENOMEM;
		if (!c)
			continue;
		call_end = call_ts + c->dur;
		if (tgroup__add(t, ST_API, c->dur) ||
		    tgroup__add(t, ST_QUEUE, k->ts > call_end ? k->ts - call_end : 0))
			return -ENOMEM;
	}
	return 0;
}

static void set_avg_med(struct table *t, int avg, int med, struct tstat *s)
{
	if (!s->count)
		return; /* no launching call: unset (null) rather than a made-up 0 */
	table__set_double(t, avg, (double)s->total / s->count);
	table__set_double(t, med, samples__median(&s->samples));
}

static int exec_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_COUNT,
		C_API_AVG,
		C_API_MED,
		C_QUEUE_AVG,
		C_QUEUE_MED,
		C_KERNEL_AVG,
		C_KERNEL_MED,
		C_KERNEL_TOTAL,
		C_API_NAME,
		C_NAME,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_COUNT] = { "count", "Count", TABLE_U64 },
		[C_API_AVG] = { "api_avg_ns", "API Avg (ns)", TABLE_DOUBLE },
		[C_API_MED] = { "api_med_ns", "API Med (ns)", TABLE_DOUBLE, TABLE_COL_MINOR },
		[C_QUEUE_AVG] = { "queue_avg_ns", "Queue Avg (ns)", TABLE_DOUBLE },
		[C_QUEUE_MED] = { "queue_med_ns", "Queue Med (ns)", TABLE_DOUBLE, TABLE_COL_MINOR },
		[C_KERNEL_AVG] = { "kernel_avg_ns", "Kernel Avg (ns)", TABLE_DOUBLE },
		[C_KERNEL_MED] = { "kernel_med_ns", "Kernel Med (ns)", TABLE_DOUBLE,
				   TABLE_COL_MINOR },
		[C_KERNEL_TOTAL] = { "kernel_total_ns", "Kernel Total (ns)", TABLE_U64 },
		[C_API_NAME] = { "api_name", "API Name", TABLE_STR },
		[C_NAME] = { "name", "Kernel Name", TABLE_STR },
	};
	struct exec_sum *st = vst;
	struct tgroups *g;
	struct tgroup **rows = NULL;
	size_t n = 0;
	int err;

	if (st->err)
		return st->err;
	g = tgroups__new();
	if (!g)
		return -ENOMEM;
	err = exec_sum__join(st, g);
	if (!err) {
		rows = tgroups__sorted(g, ST_KERNEL, &n);
		err = rows ? 0 : -ENOMEM;
	}
	if (err)
		goto out;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n; i++) {
		struct tgroup *r = rows[i];

		table__row(t);
		table__set_u64(t, C_COUNT, r->st[ST_KERNEL].count);
		set_avg_med(t, C_API_AVG, C_API_MED, &r->st[ST_API]);
		set_avg_med(t, C_QUEUE_AVG, C_QUEUE_MED, &r->st[ST_QUEUE]);
		set_avg_med(t, C_KERNEL_AVG, C_KERNEL_MED, &r->st[ST_KERNEL]);
		table__set_u64(t, C_KERNEL_TOTAL, r->st[ST_KERNEL].total);
		table__set_str(t, C_API_NAME, r->name2);
		table__set_str(t, C_NAME, r->name);
	}
	err = table__err(t);
out:
	free(rows);
	tgroups__free(g);
	return err;
}

const struct report cuda_kern_exec_sum = {
	.name = "cuda_kern_exec_sum",
	.desc = "CUDA Kernel Launch & Exec Time Summary",
	.new = exec_sum__new,
	.add = exec_sum__add,
	.emit = exec_sum__emit,
	.free = exec_sum__free,
};
