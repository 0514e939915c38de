// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem_leaks: what stayed live, by allocation site (mem_site.h), per (process, device): the
 * bytes and blocks still live at the end of the recording (of those it saw allocated: a
 * process that exited without freeing them counts them too), and whether the site's live
 * bytes grew step after step. The steps are the process's (the steps service's, steps.h: its
 * torch steps, else the source --steps names) where it has MEM_GROW_MIN_STEPS of them, else
 * the device's allocations split into
 * MEM_GROW_WINDOWS windows of as many each; the site's live bytes are taken at each boundary,
 * and it grows when they went up at MEM_GROW_SHARE of the boundaries or more: its growth per
 * step is the median of the changes. Growing sites come first, the steepest first (a leak is
 * the first row), then the rest by the bytes still live.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "hmap.h"
#include "mem.h"
#include "mem_leak_bounds.h"
#include "mem_log.h"
#include "mem_report.h"
#include "mem_site.h"
#include "steps.h"
#include "table.h"

struct leaks_state {
	struct mem_log *log;
};

struct leak_row {
	__u32 dev, site;
	double live_bytes, live_blocks; /* estimates where sampled blocks stand for others */
	__u64 sampled;			/* sampled allocations behind its figures */
	__s64 *diff;	  /* [k + 1]: live bytes' change at each boundary, made at the first */
	__u32 grew, fell; /* boundaries its live bytes went up, down at */
	int grows;
	__u64 growth; /* a step's: the slope of its live bytes over the boundaries */
	__s64 net;    /* its live bytes at the last boundary less at the first */
	__s64 up;     /* what they went up by, over the boundaries they went up at */
};

static void *leaks__new(void)
{
	struct leaks_state *st = calloc(1, sizeof(*st));

	if (st && !(st->log = mem_log__new())) {
		free(st);
		return NULL;
	}
	return st;
}

static void leaks__free(void *vst)
{
	struct leaks_state *st = vst;

	if (!st)
		return;
	mem_log__free(st->log);
	free(st);
}

static void leaks__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct leaks_state *st = vst;

	if (rec->type == BS_REC_MEM_ALLOC || rec->type == BS_REC_EXIT)
		mem_log__add(st->log, rec, m);
}

struct leaks_run {
	struct mem_sites *sites;
	const struct trace_model *m;
	unsigned stack_n;	  /* --group-by stack:N */
	struct mem_dev_bounds *b; /* per device of the log */
	struct leak_row *rows;
	size_t nrows, cap;
};

static struct leak_row *row_of(struct leaks_run *r, struct hmap *idx, const struct mem_entry *e)
{
	__u32 site = mem_sites__of(r->sites, r->m, e->stack);
	__u32 *at = hmap__get(idx, (struct hkey){ e->dev, site }, 1);

	if (!at)
		return NULL;
	if (!*at) {
		if (array__grow((void **)&r->rows, r->nrows, &r->cap, sizeof(*r->rows)))
			return NULL;
		r->rows[r->nrows] = (struct leak_row){ .dev = e->dev, .site = site };
		*at = (__u32)++r->nrows;
	}
	return &r->rows[*at - 1];
}

/* Each entry into its row: what is live at the end, and its part of the live bytes at each
 * boundary (from the first at or after its allocation to the first at or after its free). */
static int fill_rows(const struct mem_log *l, struct leaks_run *r)
{
	struct hmap *idx = hmap__new(sizeof(__u32));
	int err = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < l->n && !err; i++) {
		const struct mem_entry *e = &l->v[i];
		const struct mem_dev_bounds *b = &r->b[e->dev];
		struct leak_row *row;
		int live = e->free_seq == MEM_LOG_LIVE;
		__s64 bytes = llround(mem_entry__bytes(e));
		__u32 from, to;

		if (!e->weight) /* a block the sampled ones stand for */
			continue;
		row = row_of(r, idx, e);
		if (!row) {
			err = -ENOMEM;
			break;
		}
		row->sampled += e->weight > 1;
		if (live) {
			row->live_bytes += mem_entry__bytes(e);
			row->live_blocks += e->weight;
		}
		if (!b->k)
			continue;
		from = mem_leak_bounds__at(b, e->ts);
		to = live ? b->k + 1 : mem_leak_bounds__at(b, e->free_ts);
		if (from >= to)
			continue;
		if (!row->diff && !(row->diff = calloc(b->k + 2, sizeof(*row->diff)))) {
			err = -ENOMEM;
			break;
		}
		row->diff[from] += bytes;
		row->diff[to] -= bytes;
	}
	hmap__free(idx);
	return err;
}

/*
 * From the row's changes: at how many boundaries it grew and fell, and whether it grows: it
 * fell at no more than 1 - MEM_GROW_SHARE of them, grew at MEM_GROW_MIN_STEPS and a third of
 * them or more (a sampled leak grows at the boundaries its samples fall in, and never
 * falls), and kept half of what it grew by to the last (a site whose blocks come and go with
 * the steps' phase grows at many boundaries and keeps nothing), and still holds half of it
 * at the end (what a DataLoader worker had in flight at the last boundary, then sent, is no
 * leak; a process that exited freed what it kept as it ended). Its growth a step is the
 * slope of its live bytes at the boundaries (least squares).
 */
static void judge_row(struct leak_row *row, const struct mem_dev_bounds *b, int exited)
{
	__s64 live = 0, prev = 0, first = 0;
	double mid = b->k / 2.0, sxy = 0, sxx = 0;

	if (!row->diff || b->k < MEM_GROW_MIN_STEPS)
		return;
	for (__u32 j = 0; j <= b->k; j++) {
		live += row->diff[j];
		if (!j)
			first = live;
		else if (live > prev)
			row->grew++, row->up += live - prev;
		else if (live < prev)
			row->fell++;
		prev = live;
		sxy += (j - mid) * (double)live;
		sxx += (j - mid) * (j - mid);
	}
	row->net = live - first;
	row->grows = row->net > 0 && row->fell <= (1 - MEM_GROW_SHARE) * b->k + 1e-9 &&
		     row->grew >= MEM_GROW_MIN_STEPS && 3 * row->grew >= b->k &&
		     2 * row->net >= row->up && (exited || 2 * row->live_bytes >= (double)row->net);
	/* the least-squares slope: a boundary that falls beside one of the leak's allocations,
	 * early or late by the loop's jitter, moves it less than the ends' difference */
	if (row->grows && sxy > 0)
		row->growth = (__u64)llround(sxy / sxx / b->group);
}

/* Why ROW, with live bytes at the end, is not a leak: into BUF. */
static const char *why_not(const struct leak_row *row, const struct mem_dev_bounds *b, char *buf,
			   size_t len)
{
	const char *per = mem_per_plural[b->per];

	if (b->k < MEM_GROW_MIN_STEPS)
		snprintf(buf, len, "too few %s to tell (%u)", per, b->k);
	else if (row->fell > (1 - MEM_GROW_SHARE) * b->k + 1e-9)
		snprintf(buf, len, "fell at %u of %u %s", row->fell, b->k, per);
	else if (row->grew < MEM_GROW_MIN_STEPS || 3 * row->grew < b->k)
		snprintf(buf, len, "grew at %u of %u %s", row->grew, b->k, per);
	else if (row->net <= 0 || 2 * row->net < row->up)
		snprintf(buf, len, "kept little of it: %+lld B from the first to the last",
			 (long long)row->net);
	else
		snprintf(buf, len, "freed most of it by the end: %.0f B live", row->live_bytes);
	return buf;
}

static int leak_cmp(const void *a, const void *b)
{
	const struct leak_row *x = a, *y = b;

	if (x->grows != y->grows)
		return y->grows - x->grows;
	if (x->grows && x->growth != y->growth)
		return x->growth > y->growth ? -1 : 1;
	if (x->live_bytes != y->live_bytes)
		return x->live_bytes > y->live_bytes ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

static void run_free(struct leaks_run *r, size_t ndevs)
{
	for (size_t i = 0; i < r->nrows; i++)
		free(r->rows[i].diff);
	free(r->rows);
	mem_leak_bounds__free(r->b, ndevs);
	mem_sites__free(r->sites);
}

static void emit_rows(const struct leaks_run *r, const struct mem_log *l,
		      const struct trace_model *m, const char *named, struct table *t)
{
	enum {
		C_WHO,
		C_SITE = C_WHO + MEM_WHO_NCOLS,
		C_LIVE = C_SITE + MEM_SITE_NCOLS,
		C_LIVE_BLOCKS,
		C_GROWTH_PER_STEP,
		C_GREW,
		C_STEPS,
		C_PER,
		C_STEP,
		C_WHY_NOT,
		C_SAMPLED,
		C_STACK,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		MEM_WHO_COLS(C_WHO),
		MEM_SITE_COLS(C_SITE),
		[C_LIVE] = { "live_bytes", "Live at End (B)", TABLE_U64 },
		[C_LIVE_BLOCKS] = { "live_blocks", "Blocks", TABLE_U64, TABLE_COL_MINOR },
		[C_GROWTH_PER_STEP] = { "growth_per_step_bytes", "Growth/Step (B)", TABLE_U64 },
		[C_GREW] = { "grew", "Grew", TABLE_U64 },
		[C_STEPS] = { "steps", "Steps", TABLE_U64 },
		[C_PER] = { "per", "Step", TABLE_STR },
		[C_STEP] = { "step_ns", "Step Length (ns)", TABLE_U64, TABLE_COL_MINOR },
		[C_WHY_NOT] = { "not_a_leak", "Not a Leak Because", TABLE_STR, TABLE_COL_MINOR },
		[C_SAMPLED] = { "sampled", "Sampled", TABLE_U64, TABLE_COL_MINOR },
		[C_STACK] = MEM_SITE_STACK_COL,
	};
	int unstacked = 0, sampled = 0;
	char why[128];

	/* the stack column is the last: only with --group-by stack:N */
	table__add_cols(t, cols, r->stack_n ? NCOLS : NCOLS - 1);
	for (size_t i = 0; i < r->nrows; i++) {
		const struct leak_row *row = &r->rows[i];
		const struct mem_dev_bounds *b = &r->b[row->dev];
		const struct mem_log_dev *d = &l->devs[row->dev];

		if (!row->grows && llround(row->live_bytes) <= 0)
			continue;
		table__row(t);
		mem_who__set(t, C_WHO, m, d->pid, d->device);
		unstacked |= mem_site__set(t, C_SITE, r->sites, row->site, m, MEM_NO_STACK);
		if (r->stack_n)
			mem_site__set_stack(t, C_STACK, r->sites, row->site);
		table__set_u64(t, C_LIVE, (__u64)llround(row->live_bytes));
		table__set_u64(t, C_LIVE_BLOCKS, (__u64)llround(row->live_blocks));
		if (row->sampled)
			table__set_u64(t, C_SAMPLED, row->sampled);
		sampled |= row->sampled != 0;
		if (row->grows)
			table__set_u64(t, C_GROWTH_PER_STEP, row->growth);
		else
			table__set_str(t, C_WHY_NOT, why_not(row, b, why, sizeof(why)));
		if (!b->k)
			continue;
		table__set_u64(t, C_GREW, row->grew);
		table__set_u64(t, C_STEPS, b->k);
		table__set_str(t, C_PER, mem_per_names[b->per]);
		table__set_u64(t, C_STEP, (b->bounds[b->k] - b->bounds[0]) / b->k);
	}
	if (table__nrows(t))
		table__add_note(
			t,
			"Step: a torch training step where the process has them (-t torch)"
			"%s%s%s, else a pass of its loop (loop: its allocations repeat every "
			"pass), else a tenth of the device's allocations (window); a site "
			"grows when its live bytes fell at no more than %.0f%% of the steps, "
			"went up at a third of them or more and kept half of that to the "
			"last; its growth a step is the slope of its live bytes over the steps.",
			named ? ", else a step of --steps=" : "", named ? named : "",
			named ? " where it has those" : "", (1 - MEM_GROW_SHARE) * 100);
	mem_site_notes(t, unstacked, MEM_NO_STACK_ALLOC);
	if (sampled)
		table__add_note(t, MEM_SAMPLED_NOTE);
}

static int leaks__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			   struct table *t)
{
	struct leaks_state *st = vst;
	const struct mem_log *l = st->log;
	struct leaks_run r = { .m = m, .stack_n = mem_sites__stack_n(ask) };
	int err;

	if (l->err)
		return l->err;
	if (!(r.sites = mem_sites__new(r.stack_n)))
		return -ENOMEM;
	r.b = mem_leak_bounds__of(l, ask->steps);
	err = r.b ? 0 : -ENOMEM;
	if (!err)
		err = fill_rows(l, &r);
	if (!err) {
		for (size_t i = 0; i < r.nrows; i++)
			judge_row(&r.rows[i], &r.b[r.rows[i].dev], l->devs[r.rows[i].dev].exited);
		if (r.nrows)
			qsort(r.rows, r.nrows, sizeof(*r.rows), leak_cmp);
		emit_rows(&r, l, m, steps__named(ask->steps), t);
		err = table__err(t);
	}
	run_free(&r, l->ndevs);
	return err;
}

static int leaks__emit(void *vst, const struct trace_model *m, struct table *t)
{
	return leaks__emit_for(vst, m, &(struct report_ask){ 0 }, t);
}

const struct report mem_leaks = {
	.name = "mem_leaks",
	.desc = "Memory Still Live or Growing, by Line (leaks)",
	.new = leaks__new,
	.add = leaks__add,
	.emit = leaks__emit,
	.emit_for = leaks__emit_for,
	.free = leaks__free,
	.group_by = mem_site_groups,
};
