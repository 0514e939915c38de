// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda reports: cuda_api_sum, cuda_launch_sum, cuda_memcpy_sum and cuda_err_sum, over
 * calls read by cuda_decode.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "cuda_decode.h"
#include "cuda_errors.h"
#include "hmap.h"
#include "table.h"
#include "api_sum.h"

/* The calls the reports count: records too short to be one are skipped, never read. */
static const struct bs_ucall *as_call(const struct bs_hdr *rec)
{
	if (rec->type != BS_REC_CUDA_CALL || rec->size < sizeof(struct bs_ucall))
		return NULL;
	return (const void *)rec;
}

/* ---- cuda_api_sum: nsys's, over the calls the application made (api_sum.h). ---- */
static void *cuda_api_sum__new(void)
{
	return api_sum__new(&cuda_table);
}

static const struct report cuda_api_sum = {
	.name = "cuda_api_sum",
	.desc = "CUDA API Summary",
	.new = cuda_api_sum__new,
	.add = api_sum__add,
	.emit = api_sum__emit,
	.free = api_sum__free,
};

/* ---- cuda_launch_sum: kernel launches per kernel name and launch shape. ---- */
struct launch_row {
	char *name;
	__u32 grid[3], block[3];
	__u64 shared;
	__u64 count, total;
};

struct launch_sum {
	struct hmap *idx; /* hash of the row's key -> row index + 1 */
	struct launch_row *rows;
	size_t n, cap;
	int err;
};

static void *launch_sum__new(void)
{
	struct launch_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->idx = hmap__new(sizeof(size_t));
	if (!st->idx) {
		free(st);
		return NULL;
	}
	return st;
}

static __u64 fnv64(__u64 h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int launch_row_is(const struct launch_row *r, const char *name, const __u32 *grid,
			 const __u32 *block, __u64 shared)
{
	return !strcmp(r->name, name) && !memcmp(r->grid, grid, sizeof(r->grid)) &&
	       !memcmp(r->block, block, sizeof(r->block)) && r->shared == shared;
}

static struct launch_row *launch_row_get(struct launch_sum *st, const char *name, const __u32 *grid,
					 const __u32 *block, __u64 shared)
{
	__u64 shape = fnv64(fnv64(fnv64(0xcbf29ce484222325ull, grid, 12), block, 12), &shared, 8);
	struct hkey key = { fnv64(0xcbf29ce484222325ull, name, strlen(name)), shape };
	struct launch_row *r;
	size_t *slot;

	/* Keys are hashes: a collision moves on to the next key until the row matches. */
	for (;;) {
		slot = hmap__get(st->idx, key, 1);
		if (!slot)
			return NULL;
		if (!*slot)
			break;
		if (launch_row_is(&st->rows[*slot - 1], name, grid, block, shared))
			return &st->rows[*slot - 1];
		key.b += 0x9e3779b97f4a7c15ull;
	}
	if (array__grow((void **)&st->rows, st->n, &st->cap, sizeof(*st->rows)))
		return NULL;
	r = &st->rows[st->n];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	if (!r->name)
		return NULL;
	memcpy(r->grid, grid, sizeof(r->grid));
	memcpy(r->block, block, sizeof(r->block));
	r->shared = shared;
	*slot = ++st->n;
	return r;
}

static void launch_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = as_call(rec);
	struct launch_sum *st = vst;
	__u32 grid[3], block[3];
	struct launch_row *r;
	struct cuda_call c;
	const char *name;
	char buf[32];

	if (!u || u->depth)
		return;
	cuda_call__read(rec, &c);
	if (!c.api || c.api->group != CUDA_GRP_LAUNCH || !(c.have & (1ull << K_KERNEL)))
		return;
	for (int d = 0; d < 3; d++) {
		grid[d] = (__u32)c.v[K_GRID_X + d];
		block[d] = (__u32)c.v[K_BLOCK_X + d];
	}
	name = cuda_func_name(m, rec->pid, c.v[K_KERNEL], buf, sizeof(buf));
	r = launch_row_get(st, name, grid, block,
			   c.have & (1ull << K_SHARED_BYTES) ? c.v[K_SHARED_BYTES] : 0);
	if (!r) {
		st->err = -ENOMEM;
		return;
	}
	r->count++;
	r->total += u->dur;
}

static int launch_row_cmp(const void *x, const void *y)
{
	const struct launch_row *a = x, *b = y;
	int d;

	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	d = strcmp(a->name, b->name);
	if (d)
		return d;
	d = memcmp(a->grid, b->grid, sizeof(a->grid));
	if (d)
		return d;
	d = memcmp(a->block, b->block, sizeof(a->block));
	if (d)
		return d;
	return (a->shared > b->shared) - (a->shared < b->shared);
}

static int launch_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum { C_COUNT, C_TOTAL, C_GRID, C_BLOCK, C_SHARED_BYTES, C_NAME, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_COUNT] = { "count", "Num Launches", TABLE_U64 },
		[C_TOTAL] = { "total_ns", "Total API Time (ns)", TABLE_U64 },
		[C_GRID] = { "grid", "Grid", TABLE_STR },
		[C_BLOCK] = { "block", "Block", TABLE_STR },
		[C_SHARED_BYTES] = { "shared_bytes", "Shared (B)", TABLE_U64 },
		[C_NAME] = { "name", "Kernel", TABLE_STR },
	};
	struct launch_sum *st = vst;
	char dims[40];

	if (st->err)
		return st->err;
	/* The index points at rows by position: it is not used after this sort. */
	if (st->n) /* rows is NULL until the first launch */
		qsort(st->rows, st->n, sizeof(*st->rows), launch_row_cmp);
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < st->n; i++) {
		const struct launch_row *r = &st->rows[i];

		table__row(t);
		table__set_u64(t, C_COUNT, r->count);
		table__set_u64(t, C_TOTAL, r->total);
		snprintf(dims, sizeof(dims), "%ux%ux%u", r->grid[0], r->grid[1], r->grid[2]);
		table__set_str(t, C_GRID, dims);
		snprintf(dims, sizeof(dims), "%ux%ux%u", r->block[0], r->block[1], r->block[2]);
		table__set_str(t, C_BLOCK, dims);
		table__set_u64(t, C_SHARED_BYTES, r->shared);
		table__set_str(t, C_NAME, r->name);
	}
	return table__err(t);
}

static void launch_sum__free(void *vst)
{
	struct launch_sum *st = vst;

	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		free(st->rows[i].name);
	free(st->rows);
	hmap__free(st->idx);
	free(st);
}

static const struct report cuda_launch_sum = {
	.name = "cuda_launch_sum",
	.desc = "CUDA Kernel Launches by Kernel and Shape",
	.new = launch_sum__new,
	.add = launch_sum__add,
	.emit = launch_sum__emit,
	.free = launch_sum__free,
};

/* ---- cuda_memcpy_sum: copy and memset calls per direction (CPU time of the calls). ---- */
#define MEMSET_ROW KIND_NR

struct memcpy_stat {
	__u64 count, total, min, max, bytes, nbytes; /* nbytes: calls whose size is known */
};

struct memcpy_sum {
	struct memcpy_stat rows[KIND_NR + 1];
};

static void *memcpy_sum__new(void)
{
	return calloc(1, sizeof(struct memcpy_sum));
}

static void memcpy_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = as_call(rec);
	struct memcpy_sum *st = vst;
	struct memcpy_stat *r;
	struct cuda_call c;

	if (!u || u->depth)
		return;
	cuda_call__read(rec, &c);
	if (!c.api)
		return;
	if (c.api->group == CUDA_GRP_MEMSET)
		r = &st->rows[MEMSET_ROW];
	else if (c.api->group == CUDA_GRP_MEMCPY && c.kind >= 0 && c.kind < KIND_NR)
		r = &st->rows[c.kind];
	else
		return;
	if (!r->count || u->dur < r->min)
		r->min = u->dur;
	if (!r->count || u->dur > r->max)
		r->max = u->dur;
	r->count++;
	r->total += u->dur;
	if (c.have & (1ull << K_BYTES)) {
		r->bytes += c.v[K_BYTES];
		r->nbytes++;
	}
}

struct memcpy_row {
	const char *name;
	const struct memcpy_stat *s;
};

static int memcpy_row_cmp(const void *x, const void *y)
{
	const struct memcpy_row *a = x, *b = y;

	if (a->s->total != b->s->total)
		return a->s->total < b->s->total ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int memcpy_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum { C_TOTAL, C_COUNT, C_BYTES, C_AVG, C_MIN, C_MAX, C_NAME, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_TOTAL] = { "total_ns", "Total Time (ns)", TABLE_U64 },
		[C_COUNT] = { "count", "Count", TABLE_U64 },
		[C_BYTES] = { "bytes", "Total (B)", TABLE_U64 },
		[C_AVG] = { "avg_ns", "Avg (ns)", TABLE_DOUBLE },
		[C_MIN] = { "min_ns", "Min (ns)", TABLE_U64 },
		[C_MAX] = { "max_ns", "Max (ns)", TABLE_U64 },
		[C_NAME] = { "name", "Operation", TABLE_STR },
	};
	struct memcpy_row rows[KIND_NR + 1];
	struct memcpy_sum *st = vst;
	int n = 0;

	for (int i = 0; i <= KIND_NR; i++) {
		if (!st->rows[i].count)
			continue;
		rows[n].name = i == MEMSET_ROW ? "memset" : cuda_kind_names[i];
		rows[n++].s = &st->rows[i];
	}
	qsort(rows, n, sizeof(rows[0]), memcpy_row_cmp);
	table__add_cols(t, cols, NCOLS);
	for (int i = 0; i < n; i++) {
		const struct memcpy_stat *s = rows[i].s;

		table__row(t);
		table__set_u64(t, C_TOTAL, s->total);
		table__set_u64(t, C_COUNT, s->count);
		if (s->nbytes) /* batch copies: the sizes are not in the record */
			table__set_u64(t, C_BYTES, s->bytes);
		table__set_double(t, C_AVG, (double)s->total / s->count);
		table__set_u64(t, C_MIN, s->min);
		table__set_u64(t, C_MAX, s->max);
		table__set_str(t, C_NAME, rows[i].name);
	}
	return table__err(t);
}

static void memcpy_sum__free(void *vst)
{
	free(vst);
}

static const struct report cuda_memcpy_sum = {
	.name = "cuda_memcpy_sum",
	.desc = "CUDA Memory Copy and Memset Calls by Direction",
	.new = memcpy_sum__new,
	.add = memcpy_sum__add,
	.emit = memcpy_sum__emit,
	.free = memcpy_sum__free,
};

/* ---- cuda_err_sum: failed calls per function and code, nested driver calls included. ---- */
struct err_sum {
	struct hmap *counts; /* {fn, (u32)code} -> __u64 */
	int err;
};

static void *err_sum__new(void)
{
	struct err_sum *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->counts = hmap__new(sizeof(__u64));
	if (!st->counts) {
		free(st);
		return NULL;
	}
	return st;
}

static void err_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = as_call(rec);
	struct err_sum *st = vst;
	__u64 *n;

	/* Nested calls count too: the driver's code is often the cause of the runtime's. */
	if (!u || !(__s32)u->ret)
		return;
	n = hmap__get(st->counts, (struct hkey){ u->fn, (__u32)u->ret }, 1);
	if (!n) {
		st->err = -ENOMEM;
		return;
	}
	(*n)++;
}

struct err_row {
	char name[64];
	__u32 fn;
	__s32 code;
	__u64 count;
};

static int err_row_cmp(const void *x, const void *y)
{
	const struct err_row *a = x, *b = y;
	int d;

	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	d = strcmp(a->name, b->name);
	if (d)
		return d;
	return (a->code > b->code) - (a->code < b->code);
}

static int err_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	enum { C_COUNT, C_CODE, C_ERROR, C_NAME, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_COUNT] = { "count", "Count", TABLE_U64 },
		[C_CODE] = { "code", "Code", TABLE_S64 },
		[C_ERROR] = { "error", "Error", TABLE_STR },
		[C_NAME] = { "name", "Name", TABLE_STR },
	};
	struct err_sum *st = vst;
	struct err_row *rows;
	size_t it = 0, n = 0;
	struct hkey key;
	int err;
	__u64 *cnt;

	if (st->err)
		return st->err;
	rows = calloc(hmap__count(st->counts) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	while ((cnt = hmap__next(st->counts, &it, &key))) {
		const struct ucall_api *api = ucall_table__api(&cuda_table, (__u32)key.a);

		rows[n].fn = (__u32)key.a;
		rows[n].code = (__s32)key.b;
		rows[n].count = *cnt;
		if (api)
			snprintf(rows[n].name, sizeof(rows[n].name), "%s", api->name);
		else
			snprintf(rows[n].name, sizeof(rows[n].name), "cuda_fn_%u", rows[n].fn);
		n++;
	}
	qsort(rows, n, sizeof(*rows), err_row_cmp);
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n; i++) {
		const struct ucall_api *api = ucall_table__api(&cuda_table, rows[i].fn);

		table__row(t);
		table__set_u64(t, C_COUNT, rows[i].count);
		table__set_s64(t, C_CODE, rows[i].code);
		if (api)
			table__set_str(t, C_ERROR,
				       api->flags & CUDA_F_DRIVER ? cuda_result_name(rows[i].code)
								  : cuda_error_name(rows[i].code));
		table__set_str(t, C_NAME, rows[i].name);
	}
	err = table__err(t);
	free(rows);
	return err;
}

static void err_sum__free(void *vst)
{
	struct err_sum *st = vst;

	if (!st)
		return;
	hmap__free(st->counts);
	free(st);
}

static const struct report cuda_err_sum = {
	.name = "cuda_err_sum",
	.desc = "CUDA API Errors",
	.new = err_sum__new,
	.add = err_sum__add,
	.emit = err_sum__emit,
	.free = err_sum__free,
};

const struct report *const cuda_reports[] = {
	&cuda_api_sum, &cuda_launch_sum, &cuda_memcpy_sum, &cuda_err_sum, &cuda_callsites, NULL,
};
