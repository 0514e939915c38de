// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What mem_leaks in the server (mem_leaks_sql.c) needs of a file that SQL cannot derive from its
 * events' rows, computed once as export --format clickhouse renders it (mem's struct ex_rows,
 * the export model's EX_ROWS), by mem_leaks' own code (mem_log.h, mem_leak_bounds.h):
 * - which allocation each free ended: `ends`, the allocation's row (its seq), on the row of
 *   the free, or of the allocation at an address still live that ended the block there (its
 *   free lost), as mem_log pairs them (a CPU Delete's echo, a free of a block never seen
 *   allocated end none);
 * - on an allocation's row, what it counts for at its site when not 1 (`w`: a sampled block's
 *   weight, mem_alloc__weight's float, exact as a double; its `early`, made before stacks were
 *   taken, is dump's own argument);
 * - a `mem_leak_steps` row per process and device at the file's end: the boundaries its
 *   sites' live bytes are compared at (its steps, its loop's passes found by mem_period, or
 *   windows of its allocations: what SQL would find hardest), on the wall clock as the rows'
 *   `ts`, what they are the ends of, whether the process exited, and its place among the
 *   devices as mem_log met them (mem_leaks' order of ties).
 * Memory: mem_log's 48 bytes an allocation and 8 more for its row, kept until the file's end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "array.h"
#include "export_model.h"
#include "mem.h"
#include "mem_leak_bounds.h"
#include "mem_live.h"
#include "mem_log.h"
#include "mem_report.h"
#include "steps.h"

#define NO_ROW (~0ull)

struct mem_ch {
	struct mem_log *log;
	struct steps *steps; /* the default sources' (torch's): --steps is refused with --from */
	__u64 *row_of;	     /* [entry]: its row's seq, NO_ROW when it made none */
	size_t cap;
};

static void mem_ch__free(void *vst)
{
	struct mem_ch *c = vst;

	if (!c)
		return;
	mem_log__free(c->log);
	steps__free(c->steps);
	free(c->row_of);
	free(c);
}

static void *mem_ch__new(void)
{
	struct mem_ch *c = calloc(1, sizeof(*c));

	if (c && (!(c->log = mem_log__new()) || !(c->steps = steps__new(NULL)))) {
		mem_ch__free(c);
		return NULL;
	}
	return c;
}

/* The entry of the block live at REC's address before it, when mem_log has it live: else -1. */
static long live_entry(const struct mem_log *l, const struct bs_mem_alloc *r)
{
	const struct mem_block *b = mem_live__get(l->live, r->h.pid, r->device, r->addr);

	if (!b || !b->site || b->site > l->n || l->v[b->site - 1].free_seq != MEM_LOG_LIVE)
		return -1;
	return (long)b->site - 1;
}

static int mem_ch__record(struct ex_sink *s, void *vst, const struct bs_hdr *rec)
{
	const struct trace_model *m = s->model;
	struct mem_ch *c = vst;
	struct mem_log *l = c->log;
	const struct bs_mem_alloc *r = (const void *)rec;
	size_t before = l->n;
	__u64 row;
	int has_row;
	long ended;

	steps__add(c->steps, rec, m);
	if (rec->type == BS_REC_EXIT) {
		mem_log__add(l, rec, m);
		return 0;
	}
	if (rec->type != BS_REC_MEM_ALLOC || rec->size < sizeof(*r))
		return 0;
	has_row = ex_row_id(s, &row);
	ended = live_entry(l, r);
	mem_log__add(l, rec, m);
	if (l->err)
		return l->err;
	if (ended >= 0 && l->v[ended].free_seq != MEM_LOG_LIVE && has_row &&
	    c->row_of[ended] != NO_ROW)
		ex_key(s, "ends", EX_V_UINT(c->row_of[ended]));
	if (l->n == before)
		return 0;
	if (array__grow((void **)&c->row_of, before, &c->cap, sizeof(*c->row_of)))
		return -ENOMEM;
	c->row_of[before] = has_row ? row : NO_ROW;
	if (has_row && l->v[before].weight != 1.0f)
		ex_key(s, "w", EX_V_REAL((double)l->v[before].weight));
	return 0;
}

/*
 * Device D's row: its boundaries B, as the wall clock (SHIFT: the wall clock less the file's
 * CLOCK_MONOTONIC, modulo 2^64, as the rows' ts), and what they end.
 */
static int dev_row(struct ex_sink *s, const struct mem_log *l, size_t d,
		   const struct mem_dev_bounds *b, __u64 shift)
{
	const struct mem_log_dev *ld = &l->devs[d];
	char *buf = NULL, dev[16];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	for (__u32 j = 0; b->k && j <= b->k; j++)
		fprintf(f, "%s%lld", j ? "," : "", (long long)(__s64)(b->bounds[j] + shift));
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	struct ex_value v[] = {
		{ .key = "device",
		  .kind = EX_TEXT,
		  .s = mem_device_name(ld->device, dev, sizeof(dev)) },
		{ .key = "index", .kind = EX_UINT, .u = d },
		{ .key = "k", .kind = EX_UINT, .u = b->k },
		{ .key = "group", .kind = EX_UINT, .u = b->group },
		{ .key = "exited", .kind = EX_UINT, .u = !!ld->exited },
		{ .key = "step_ns",
		  .kind = EX_UINT,
		  .u = b->k ? (b->bounds[b->k] - b->bounds[0]) / b->k : 0 },
		{ .key = "bounds", .kind = EX_TEXT, .s = buf ? buf : "" },
	};
	err = ex_own_row(s, ld->pid, ld->pid, "mem_leak_steps", mem_per_names[b->per], v,
			 sizeof(v) / sizeof(v[0]));
	free(buf);
	return err;
}

static int mem_ch__end(struct ex_sink *s, void *vst)
{
	struct mem_ch *c = vst;
	const struct mem_log *l = c->log;
	/* the wall clock less the monotonic one: what the rows' times add */
	__u64 shift = s->meta ? s->meta->start.realtime_ns - s->meta->start.mono_ns : 0;
	struct mem_dev_bounds *b;
	int err = 0;

	if (l->err)
		return l->err;
	if (!l->ndevs)
		return 0;
	if (steps__finish(c->steps) || !(b = mem_leak_bounds__of(l, c->steps)))
		return -ENOMEM;
	for (size_t d = 0; d < l->ndevs && !err; d++)
		err = dev_row(s, l, d, &b[d], shift);
	mem_leak_bounds__free(b, l->ndevs);
	return err;
}

const struct ex_rows mem_rows = {
	.new = mem_ch__new,
	.record = mem_ch__record,
	.end = mem_ch__end,
	.free = mem_ch__free,
};
