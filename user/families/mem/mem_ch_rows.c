// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What mem_leaks in the server (user/ship/ch_mem_leaks.c) needs of a file that SQL cannot
 * derive from its events' rows, computed once as export --format clickhouse renders it
 * (struct verdict_ch_rows), by mem_leaks' own code (mem_log.h, mem_leak_bounds.h):
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
#include "mem.h"
#include "mem_leak_bounds.h"
#include "mem_live.h"
#include "mem_log.h"
#include "mem_report.h"
#include "steps.h"
#include "verdict.h"

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

static int mem_ch__record(void *vst, const struct bs_hdr *rec, const struct trace_model *m,
			  __u64 row, FILE *args)
{
	struct mem_ch *c = vst;
	struct mem_log *l = c->log;
	const struct bs_mem_alloc *r = (const void *)rec;
	size_t before = l->n;
	long ended;

	steps__add(c->steps, rec, m);
	if (rec->type == BS_REC_EXIT) {
		mem_log__add(l, rec, m);
		return 0;
	}
	if (rec->type != BS_REC_MEM_ALLOC || rec->size < sizeof(*r))
		return 0;
	ended = live_entry(l, r);
	mem_log__add(l, rec, m);
	if (l->err)
		return l->err;
	if (ended >= 0 && l->v[ended].free_seq != MEM_LOG_LIVE && args &&
	    c->row_of[ended] != NO_ROW)
		fprintf(args, ",\"ends\":%llu", (unsigned long long)c->row_of[ended]);
	if (l->n == before)
		return 0;
	if (array__grow((void **)&c->row_of, before, &c->cap, sizeof(*c->row_of)))
		return -ENOMEM;
	c->row_of[before] = args ? row : NO_ROW;
	if (args && l->v[before].weight != 1.0f)
		fprintf(args, ",\"w\":%.17g", (double)l->v[before].weight);
	return 0;
}

/* Device D's row: its boundaries B, as the wall clock (SHIFT added), and what they end. */
static int dev_row(const struct mem_log *l, size_t d, const struct mem_dev_bounds *b, __u64 shift,
		   verdict_ch_row_fn row, void *arg)
{
	const struct mem_log_dev *ld = &l->devs[d];
	char *buf = NULL, dev[16];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	fprintf(f,
		"{\"device\":\"%s\",\"index\":%zu,\"k\":%u,\"group\":%u,\"exited\":%d,"
		"\"step_ns\":%llu,\"bounds\":\"",
		mem_device_name(ld->device, dev, sizeof(dev)), d, b->k, b->group, !!ld->exited,
		b->k ? (unsigned long long)((b->bounds[b->k] - b->bounds[0]) / b->k) : 0ull);
	for (__u32 j = 0; b->k && j <= b->k; j++)
		fprintf(f, "%s%lld", j ? "," : "", (long long)(__s64)(b->bounds[j] + shift));
	fputs("\"}", f);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	err = row(arg, ld->pid, "mem_leak_steps", mem_per_names[b->per], buf);
	free(buf);
	return err;
}

static int mem_ch__end(void *vst, const struct trace_model *m, __u64 shift, verdict_ch_row_fn row,
		       void *arg)
{
	struct mem_ch *c = vst;
	const struct mem_log *l = c->log;
	struct mem_dev_bounds *b;
	int err = 0;

	(void)m;
	if (l->err)
		return l->err;
	if (!l->ndevs)
		return 0;
	if (steps__finish(c->steps) || !(b = mem_leak_bounds__of(l, c->steps)))
		return -ENOMEM;
	for (size_t d = 0; d < l->ndevs && !err; d++)
		err = dev_row(l, d, &b[d], shift, row, arg);
	mem_leak_bounds__free(b, l->ndevs);
	return err;
}

const struct verdict_ch_rows mem_ch_rows = {
	.new = mem_ch__new,
	.record = mem_ch__record,
	.end = mem_ch__end,
	.free = mem_ch__free,
};
