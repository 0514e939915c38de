// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem_growth: what each line left behind in a process's resident memory, memory_profiler's
 * increments and Scalene's view. Each sample of resident memory (MEM_GROW: the bytes the
 * process grew by since its last sample, charged to the thread whose page fault took it past
 * the step; MEM_SHRINK: the bytes it gave back, charged to the thread whose unmap did) goes to
 * its stack's site (mem_site.h: the job's own line, the library's beside it), netted: a line
 * that makes and frees a temporary grows nothing, one that keeps memory grows by it. A row per
 * (process, site): its samples, its net growth, its gross growth (the growth samples alone,
 * memory touched again after it was given back counted again) and its share of the process's
 * net growth; largest net first.
 */
#include <errno.h>
#include <stdlib.h>
#include "array.h"
#include "hmap.h"
#include "mem.h"
#include "mem_report.h"
#include "mem_site.h"
#include "table.h"

struct grow_site {
	__u64 samples, grew, shrank;
};

struct growth_state {
	struct hmap *by_stack; /* (pid, stack id) -> struct grow_site */
};

static void *growth__new(void)
{
	struct growth_state *st = calloc(1, sizeof(*st));

	if (st && !(st->by_stack = hmap__new(sizeof(struct grow_site)))) {
		free(st);
		return NULL;
	}
	return st;
}

static void growth__free(void *vst)
{
	struct growth_state *st = vst;

	if (!st)
		return;
	hmap__free(st->by_stack);
	free(st);
}

static void growth__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct growth_state *st = vst;
	struct grow_site *s;
	__u64 bytes;

	if (rec->type != BS_REC_MEM_GROW && rec->type != BS_REC_MEM_SHRINK)
		return;
	bytes = ((const struct bs_mem_grow *)rec)->bytes;
	s = hmap__get(st->by_stack, (struct hkey){ rec->pid, mem_sites__stack_of(m, rec) }, 1);
	if (!s)
		return;
	s->samples++;
	if (rec->type == BS_REC_MEM_GROW)
		s->grew += bytes;
	else
		s->shrank += bytes;
}

struct grow_row {
	__u32 pid, site;
	struct grow_site s;
};

static int by_net(const void *a, const void *b)
{
	const struct grow_row *x = a, *y = b;
	__s64 nx = (__s64)(x->s.grew - x->s.shrank), ny = (__s64)(y->s.grew - y->s.shrank);

	if (nx != ny)
		return nx > ny ? -1 : 1;
	if (x->s.grew != y->s.grew)
		return x->s.grew > y->s.grew ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

/* The rows by (pid, site) into *ROWS (*N): the stacks' sums gathered by their sites. */
static int gather(struct growth_state *st, struct mem_sites *sites, const struct trace_model *m,
		  struct grow_row **rows, size_t *n)
{
	struct hmap *idx = hmap__new(sizeof(__u32));
	const struct grow_site *s;
	size_t it = 0, cap = 0;
	struct hkey k;
	int err = idx ? 0 : -ENOMEM;

	*rows = NULL;
	*n = 0;
	while (!err && (s = hmap__next(st->by_stack, &it, &k))) {
		__u32 site = mem_sites__of(sites, m, (__u32)k.b), *at;
		struct grow_row *r;

		at = hmap__get(idx, (struct hkey){ k.a, site }, 1);
		if (!at || (!*at && array__grow((void **)rows, *n, &cap, sizeof(**rows)))) {
			err = -ENOMEM;
			break;
		}
		if (!*at) {
			(*rows)[*n] = (struct grow_row){ .pid = (__u32)k.a, .site = site };
			*at = (__u32)++ * n;
		}
		r = &(*rows)[*at - 1];
		r->s.samples += s->samples;
		r->s.grew += s->grew;
		r->s.shrank += s->shrank;
	}
	hmap__free(idx);
	return err;
}

/*
 * PID's growth, gross, over its rows (V sorted or not, N of them): what a row's net is a share of. Not its net, which a job that gives
 * back what it took (a function's temporary freed at its return) brings near 0 or below:
 * 200 MiB of a 0.09 MiB net read 232,727%.
 */
static __u64 process_gross(const struct grow_row *v, size_t n, __u32 pid)
{
	__u64 grew = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid)
			grew += v[i].s.grew;
	return grew;
}

static int growth__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			    struct table *t)
{
	enum {
		C_PID,
		C_PROCESS,
		C_SITE,
		C_SAMPLES = C_SITE + MEM_SITE_NCOLS,
		C_GROWTH,
		C_GROWTH_PCT,
		C_GROSS,
		C_STACK,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_PROCESS] = { "process", "Process", TABLE_STR, TABLE_COL_MINOR },
		MEM_SITE_COLS(C_SITE),
		[C_SAMPLES] = { "samples", "Samples", TABLE_U64 },
		[C_GROWTH] = { "growth_bytes", "Net Growth (B)", TABLE_S64 },
		[C_GROWTH_PCT] = { "growth_pct", "Of Growth (%)", TABLE_DOUBLE },
		[C_GROSS] = { "gross_growth_bytes", "Gross Growth (B)", TABLE_U64,
			      TABLE_COL_MINOR },
		[C_STACK] = MEM_SITE_STACK_COL,
	};
	unsigned stack_n = mem_sites__stack_n(ask);
	struct mem_sites *sites = mem_sites__new(stack_n);
	struct grow_row *rows = NULL;
	size_t n = 0;
	int err = sites ? gather(vst, sites, m, &rows, &n) : -ENOMEM, unstacked = 0;

	if (!err && n)
		qsort(rows, n, sizeof(*rows), by_net);
	if (!err)
		table__add_cols(t, cols, stack_n ? NCOLS : NCOLS - 1);
	for (size_t i = 0; !err && i < n; i++) {
		__s64 net = (__s64)(rows[i].s.grew - rows[i].s.shrank);
		__u64 all = process_gross(rows, n, rows[i].pid);

		table__row(t);
		table__set_u64(t, C_PID, rows[i].pid);
		table__set_str(t, C_PROCESS, trace_model__process_name(m, rows[i].pid));
		unstacked |= mem_site__set(t, C_SITE, sites, rows[i].site, m, MEM_NO_STACK);
		if (stack_n)
			mem_site__set_stack(t, C_STACK, sites, rows[i].site);
		table__set_u64(t, C_SAMPLES, rows[i].s.samples);
		table__set_s64(t, C_GROWTH, net);
		if (all > 0)
			table__set_double(t, C_GROWTH_PCT, 100.0 * (double)net / (double)all);
		table__set_u64(t, C_GROSS, rows[i].s.grew);
	}
	free(rows);
	mem_sites__free(sites);
	if (!err && n)
		table__add_note(t,
				"Net Growth: what the line left behind, as memory_profiler's "
				"increment: the resident memory its page faults took and its "
				"unmaps gave back, netted (a temporary freed at its line nets 0); "
				"Gross Growth: the growth alone.");
	mem_site_notes(t, unstacked, MEM_NO_STACK_GROW);
	return err ? err : table__err(t);
}

static int growth__emit(void *vst, const struct trace_model *m, struct table *t)
{
	return growth__emit_for(vst, m, &(struct report_ask){ 0 }, t);
}

const struct report mem_growth = {
	.name = "mem_growth",
	.desc = "Resident Growth by Line, Net (memory_profiler's increments)",
	.new = growth__new,
	.add = growth__add,
	.emit = growth__emit,
	.emit_for = growth__emit_for,
	.free = growth__free,
	.group_by = mem_site_groups,
};
