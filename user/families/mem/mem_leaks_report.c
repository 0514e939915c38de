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
#include <stdlib.h>
#include "array.h"
#include "hmap.h"
#include "mem.h"
#include "mem_log.h"
#include "mem_report.h"
#include "mem_site.h"
#include "steps.h"
#include "table.h"

/* At most this many boundaries a device: more steps are taken a group at a time. */
#define MAX_BOUNDS 500

struct leaks_state {
	struct mem_log *log;
};

/* A device's boundaries: bounds[0..k], each interval GROUP steps long (1 for windows). */
struct dev_bounds {
	__u64 *bounds;
	__u32 k, group;
	int steps; /* steps, not windows */
};

struct leak_row {
	__u32 dev, site;
	__u64 live_bytes, live_blocks;
	__s64 *diff; /* [k + 1]: live bytes' change at each boundary, made at the first */
	__u32 grew;
	int grows;
	__u64 growth; /* a step's, the median change */
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

	if (rec->type == BS_REC_MEM_ALLOC)
		mem_log__add(st->log, rec, m);
}

/* PID's steps as boundaries into B, when it has enough. */
static void step_bounds(const struct steps *steps, __u32 pid, struct dev_bounds *b)
{
	size_t n;
	const struct step_span *v = steps__of(steps, pid, &n);

	if (n < MEM_GROW_MIN_STEPS)
		return;
	b->group = (__u32)((n + MAX_BOUNDS - 1) / MAX_BOUNDS);
	b->k = (__u32)(n / b->group);
	b->bounds[0] = v[0].ts;
	for (__u32 i = 1; i <= b->k; i++)
		b->bounds[i] = v[(size_t)i * b->group - 1].end;
	b->steps = 1;
}

/*
 * Without steps, the device's allocations in MEM_GROW_WINDOWS windows of as many each (a
 * step of a loop makes the same allocations, however long it waits between them): each
 * window ends at its last allocation, the last one at the device's last record, and bounds[0]
 * is before its first. Filled for every device in one pass over the log.
 */
static void window_bounds(const struct mem_log *l, struct dev_bounds *b)
{
	__u64 *seen = calloc(2 * l->ndevs + 1, sizeof(*seen)), *next = seen + l->ndevs;

	for (size_t d = 0; d < l->ndevs; d++) {
		if (b[d].steps)
			continue;
		b[d].group = 1;
		b[d].k = seen && l->devs[d].allocs >= MEM_GROW_WINDOWS ? MEM_GROW_WINDOWS : 0;
		b[d].bounds[0] = l->devs[d].first_ts ? l->devs[d].first_ts - 1 : 0;
		b[d].bounds[b[d].k] = l->devs[d].last_ts;
		if (seen)
			next[d] = 1;
	}
	for (size_t i = 0; seen && i < l->n; i++) {
		struct dev_bounds *db = &b[l->v[i].dev];
		__u64 n = ++seen[l->v[i].dev], all = l->devs[l->v[i].dev].allocs;
		__u64 *j = &next[l->v[i].dev];

		/* Window j (1-based) ends at the device's allocation ceil(j * all / k). */
		if (!db->steps && *j < db->k && n == (*j * all + db->k - 1) / db->k)
			db->bounds[(*j)++] = l->v[i].ts;
	}
	free(seen);
}

/* The first boundary at or after TS (k + 1: none). */
static __u32 bound_at(const struct dev_bounds *b, __u64 ts)
{
	__u32 lo = 0, hi = b->k + 1;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (b->bounds[mid] < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct leaks_run {
	struct dev_bounds *b; /* per device of the log */
	struct leak_row *rows;
	size_t nrows, cap;
};

static struct leak_row *row_of(struct leaks_run *r, struct hmap *idx, const struct mem_entry *e)
{
	__u32 *at = hmap__get(idx, (struct hkey){ e->dev, e->site }, 1);

	if (!at)
		return NULL;
	if (!*at) {
		if (array__grow((void **)&r->rows, r->nrows, &r->cap, sizeof(*r->rows)))
			return NULL;
		r->rows[r->nrows] = (struct leak_row){ .dev = e->dev, .site = e->site };
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
		const struct dev_bounds *b = &r->b[e->dev];
		struct leak_row *row = row_of(r, idx, e);
		int live = e->free_seq == MEM_LOG_LIVE;
		__u32 from, to;

		if (!row) {
			err = -ENOMEM;
			break;
		}
		if (live) {
			row->live_bytes += e->bytes;
			row->live_blocks++;
		}
		if (!b->k)
			continue;
		from = bound_at(b, e->ts);
		to = live ? b->k + 1 : bound_at(b, e->free_ts);
		if (from >= to)
			continue;
		if (!row->diff && !(row->diff = calloc(b->k + 2, sizeof(*row->diff)))) {
			err = -ENOMEM;
			break;
		}
		row->diff[from] += (__s64)e->bytes;
		row->diff[to] -= (__s64)e->bytes;
	}
	hmap__free(idx);
	return err;
}

static int s64_cmp(const void *a, const void *b)
{
	__s64 x = *(const __s64 *)a, y = *(const __s64 *)b;

	return x < y ? -1 : x > y;
}

/* From the row's changes: how many boundaries it grew at, and whether it grows. */
static void judge_row(struct leak_row *row, const struct dev_bounds *b, __s64 *tmp)
{
	__s64 live = 0, prev = 0;

	if (!row->diff || b->k < MEM_GROW_MIN_STEPS)
		return;
	for (__u32 j = 0; j <= b->k; j++) {
		live += row->diff[j];
		if (j) {
			tmp[j - 1] = live - prev;
			row->grew += live > prev;
		}
		prev = live;
	}
	row->grows = row->grew >= MEM_GROW_SHARE * b->k - 1e-9;
	if (!row->grows)
		return;
	qsort(tmp, b->k, sizeof(*tmp), s64_cmp);
	row->growth = tmp[b->k / 2] > 0 ? (__u64)tmp[b->k / 2] / b->group : 0;
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

static int bounds_of(const struct mem_log *l, const struct steps *steps, struct leaks_run *r)
{
	r->b = calloc(l->ndevs + 1, sizeof(*r->b));
	if (!r->b)
		return -ENOMEM;
	for (size_t d = 0; d < l->ndevs; d++) {
		r->b[d].bounds = calloc(MAX_BOUNDS + MEM_GROW_WINDOWS + 1, sizeof(__u64));
		if (!r->b[d].bounds)
			return -ENOMEM;
		step_bounds(steps, l->devs[d].pid, &r->b[d]);
	}
	window_bounds(l, r->b);
	return 0;
}

static void run_free(struct leaks_run *r, size_t ndevs)
{
	for (size_t i = 0; i < r->nrows; i++)
		free(r->rows[i].diff);
	for (size_t d = 0; r->b && d < ndevs; d++)
		free(r->b[d].bounds);
	free(r->rows);
	free(r->b);
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
	};
	int unstacked = 0;

	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < r->nrows; i++) {
		const struct leak_row *row = &r->rows[i];
		const struct dev_bounds *b = &r->b[row->dev];
		const struct mem_log_dev *d = &l->devs[row->dev];

		if (!row->grows && !row->live_bytes)
			continue;
		table__row(t);
		mem_who__set(t, C_WHO, m, d->pid, d->device);
		unstacked |= mem_site__set(t, C_SITE, l->sites, row->site, m, MEM_NO_STACK);
		table__set_u64(t, C_LIVE, row->live_bytes);
		table__set_u64(t, C_LIVE_BLOCKS, row->live_blocks);
		if (row->grows)
			table__set_u64(t, C_GROWTH_PER_STEP, row->growth);
		if (!b->k)
			continue;
		table__set_u64(t, C_GREW, row->grew);
		table__set_u64(t, C_STEPS, b->k);
		table__set_str(t, C_PER, b->steps ? "step" : "window");
		table__set_u64(t, C_STEP, (b->bounds[b->k] - b->bounds[0]) / b->k);
	}
	if (table__nrows(t) && named)
		table__add_note(
			t,
			"Step: a torch training step where the process has them (-t "
			"torch), else a step of --steps=%s where it has those, else a tenth "
			"of the device's allocations; a site grows when its live bytes went "
			"up at %.0f%% of the steps or more.",
			named, MEM_GROW_SHARE * 100);
	else if (table__nrows(t))
		table__add_note(t,
				"Step: a torch training step where the process has them (-t "
				"torch), else a tenth of the device's allocations; a site grows "
				"when its live bytes went up at %.0f%% of the steps or more.",
				MEM_GROW_SHARE * 100);
	if (unstacked)
		table__add_note(t, MEM_NO_STACK_ALLOC);
}

static int leaks__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			   struct table *t)
{
	struct leaks_state *st = vst;
	const struct mem_log *l = st->log;
	struct leaks_run r = { 0 };
	__s64 *tmp = NULL;
	int err;

	if (l->err)
		return l->err;
	err = bounds_of(l, ask->steps, &r);
	if (!err)
		err = fill_rows(l, &r);
	if (!err && !(tmp = calloc(MAX_BOUNDS + MEM_GROW_WINDOWS + 1, sizeof(*tmp))))
		err = -ENOMEM;
	if (!err) {
		for (size_t i = 0; i < r.nrows; i++)
			judge_row(&r.rows[i], &r.b[r.rows[i].dev], tmp);
		if (r.nrows)
			qsort(r.rows, r.nrows, sizeof(*r.rows), leak_cmp);
		emit_rows(&r, l, m, steps__named(ask->steps), t);
		err = table__err(t);
	}
	free(tmp);
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
};
