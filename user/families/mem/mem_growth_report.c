// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem_growth: a process's resident growth by the line that grew it, memory_profiler's and
 * Scalene's view. Each growth sample (MEM_GROW: the bytes the process grew by since its last
 * sample, charged to the thread whose page fault took it past the step) goes to its stack's
 * innermost Python frame, else its innermost native frame (mem_site.h). A row per (process,
 * site): the samples, their bytes and their share of all the growth the trace holds, largest
 * first.
 */
#include <errno.h>
#include <stdlib.h>
#include "hmap.h"
#include "mem.h"
#include "mem_report.h"
#include "mem_site.h"
#include "table.h"

struct grow_site {
	__u64 samples, bytes;
};

struct growth_state {
	struct mem_sites *sites;
	struct hmap *rows; /* (pid, site) -> struct grow_site */
	__u64 all;
};

static void *growth__new(void)
{
	struct growth_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->sites = mem_sites__new();
	st->rows = hmap__new(sizeof(struct grow_site));
	if (!st->sites || !st->rows) {
		mem_sites__free(st->sites);
		hmap__free(st->rows);
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
	mem_sites__free(st->sites);
	hmap__free(st->rows);
	free(st);
}

static void growth__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct growth_state *st = vst;
	struct grow_site *s;
	__u64 bytes;

	if (rec->type != BS_REC_MEM_GROW)
		return;
	bytes = ((const struct bs_mem_grow *)rec)->bytes;
	s = hmap__get(st->rows, (struct hkey){ rec->pid, mem_sites__of(st->sites, m, rec) }, 1);
	if (!s)
		return;
	s->samples++;
	s->bytes += bytes;
	st->all += bytes;
}

struct grow_row {
	struct hkey key;
	const struct grow_site *s;
};

static int by_bytes(const void *a, const void *b)
{
	const struct grow_row *x = a, *y = b;

	if (x->s->bytes != y->s->bytes)
		return x->s->bytes > y->s->bytes ? -1 : 1;
	if (x->key.a != y->key.a)
		return x->key.a < y->key.a ? -1 : 1;
	return x->key.b < y->key.b ? -1 : x->key.b > y->key.b;
}

static int growth__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum {
		C_PID,
		C_PROCESS,
		C_SITE,
		C_SAMPLES = C_SITE + MEM_SITE_NCOLS,
		C_GROWTH,
		C_GROWTH_PCT,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_PROCESS] = { "process", "Process", TABLE_STR, TABLE_COL_MINOR },
		MEM_SITE_COLS(C_SITE),
		[C_SAMPLES] = { "samples", "Samples", TABLE_U64 },
		[C_GROWTH] = { "growth_bytes", "Growth (B)", TABLE_U64 },
		[C_GROWTH_PCT] = { "growth_pct", "Growth (%)", TABLE_DOUBLE },
	};
	struct growth_state *st = vst;
	size_t n = hmap__count(st->rows), it = 0, i = 0;
	struct grow_row *rows = calloc(n + 1, sizeof(*rows));
	const struct grow_site *s;
	struct hkey k;
	int unstacked = 0;

	if (!rows)
		return -ENOMEM;
	while (i < n && (s = hmap__next(st->rows, &it, &k)))
		rows[i++] = (struct grow_row){ k, s };
	qsort(rows, n, sizeof(*rows), by_bytes);
	table__add_cols(t, cols, NCOLS);
	for (i = 0; i < n; i++) {
		table__row(t);
		table__set_u64(t, C_PID, rows[i].key.a);
		table__set_str(t, C_PROCESS, trace_model__process_name(m, (__u32)rows[i].key.a));
		unstacked |=
			mem_site__set(t, C_SITE, st->sites, (__u32)rows[i].key.b, m, MEM_NO_STACK);
		table__set_u64(t, C_SAMPLES, rows[i].s->samples);
		table__set_u64(t, C_GROWTH, rows[i].s->bytes);
		table__set_double(t, C_GROWTH_PCT,
				  st->all ? 100.0 * rows[i].s->bytes / st->all : 0);
	}
	free(rows);
	if (unstacked)
		table__add_note(t, MEM_NO_STACK_GROW);
	return table__err(t);
}

const struct report mem_growth = {
	.name = "mem_growth",
	.desc = "Resident Growth by Line (memory_profiler's increments)",
	.new = growth__new,
	.add = growth__add,
	.emit = growth__emit,
	.free = growth__free,
};
