// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One file's unwind table (unwind_build.h): its FDEs from every section that has them,
 * sorted by pc, an overlap resolved in favour of .eh_frame (what the code was linked with),
 * then each FDE's rows in that order, so the table comes out sorted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cfi_rows.h"
#include "mono_clock.h"
#include "unwind_build.h"
#include "unwind_rows.h"

static int fde_cmp(const void *a, const void *b)
{
	const struct eh_fde *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->insns < y->insns ? -1 : x->insns > y->insns; /* the walk's order */
}

/*
 * Keep FDEs that do not overlap: of two that do, the one from the section walked first
 * (.eh_frame), else the lower one. Returns how many are kept (moved to the front).
 */
static size_t drop_overlaps(struct eh_fde *f, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (k && f[i].pc < f[k - 1].end) {
			if (f[i].src < f[k - 1].src)
				f[k - 1] = f[i];
			continue;
		}
		f[k++] = f[i];
	}
	return k;
}

/* Rows of EF's FDEs into T. */
static int rows_of(struct eh_frame *ef, const struct eh_section *secs, struct unwind_table *t)
{
	struct row_buf b = { 0 };
	size_t i, n;
	__u64 prev_end = 0;
	int r;

	if (ef->nfdes) /* qsort(NULL, 0) is undefined */
		qsort(ef->fdes, ef->nfdes, sizeof(*ef->fdes), fde_cmp);
	n = drop_overlaps(ef->fdes, ef->nfdes);
	t->stats.fdes_refused += (__u32)(ef->nfdes - n);
	for (i = 0; i < n; i++) {
		const struct eh_fde *f = &ef->fdes[i];

		r = 0;
		if (i && prev_end < f->pc)
			r = row_buf__push(&b, (__u32)prev_end, BS_UNW_STOP_NONE, 0, 0);
		if (!r)
			r = cfi_rows__fde(&secs[f->src], &ef->cies[f->cie], f, &b);
		if (r < 0)
			goto fail;
		t->stats.fdes++;
		t->stats.fdes_bad += !!(r & CFI_ROWS_BAD);
		t->stats.fdes_expr += !!(r & CFI_ROWS_EXPR);
		t->stats.fdes_fp += !!(r & CFI_ROWS_FP);
		t->stats.fdes_framed += (r & CFI_ROWS_FRAME) && !(r & CFI_ROWS_SPECIAL);
		t->stats.rows_signal += ef->cies[f->cie].signal;
		prev_end = f->end;
	}
	r = n ? row_buf__push(&b, (__u32)prev_end, BS_UNW_STOP_NONE, 0, 0) : 0;
	if (r)
		goto fail;
	/* the buffer doubled as it grew: give back what the rows do not use */
	t->rows = b.n ? realloc(b.rows, b.n * sizeof(*b.rows)) : NULL;
	if (b.n && !t->rows)
		t->rows = b.rows;
	else if (!b.n)
		free(b.rows);
	t->n = (__u32)b.n;
	return 0;
fail:
	free(b.rows);
	return r;
}

int unwind_table__rows(const struct eh_section *secs, size_t nsecs,
		       int (*keep)(__u64 pc, __u64 end, void *arg), void *arg,
		       struct unwind_table *t)
{
	struct eh_frame ef = { 0 };
	size_t i;
	int err = 0;

	for (i = 0; i < nsecs && !err; i++) {
		err = eh_frame__walk(&secs[i], (__u8)i, keep, arg, &ef);
		t->stats.section_bytes += secs[i].len;
	}
	if (!err) {
		t->stats.cies += (__u32)ef.ncies;
		t->stats.fdes_refused += ef.refused;
		t->stats.sections_cut += ef.cut;
		err = rows_of(&ef, secs, t);
	}
	eh_frame__free(&ef);
	return err;
}

int unwind_table__entry_end(struct unwind_table *t, __u64 entry, __u64 seg_end)
{
	const struct bs_unwind_row *r = unwind_table__find(t, entry);
	struct bs_unwind_row *rows;
	size_t at = r ? (size_t)(r - t->rows) + 1 : 0;
	int replace = r && r->pc == entry, tail = at == t->n;
	size_t add = !replace + tail;

	if (entry >> 32 || seg_end > 1ull << 32 || entry >= seg_end ||
	    (r && r->kind != BS_UNW_STOP_NONE))
		return 0; /* an FDE covers it, or it is no code of this table's */
	rows = realloc(t->rows, (t->n + add) * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	t->rows = rows;
	if (replace)
		at--;
	else
		memmove(&rows[at + 1], &rows[at], (t->n - at) * sizeof(*rows));
	rows[at] = (struct bs_unwind_row){ .pc = (__u32)entry, .kind = BS_UNW_END };
	if (tail)
		rows[at + 1] =
			(struct bs_unwind_row){ .pc = (__u32)seg_end, .kind = BS_UNW_STOP_NONE };
	t->n += add;
	return 0;
}

int unwind_table__from_section(const void *sec, size_t len, __u64 vaddr, int debug_frame,
			       struct unwind_table *out)
{
	struct eh_section s = {
		.data = sec, .len = len, .vaddr = vaddr, .debug_frame = debug_frame
	};
	__u64 t0 = mono_now_ns();
	int err;

	memset(out, 0, sizeof(*out));
	out->sources = debug_frame ? UNWIND_SRC_DEBUG_FRAME : UNWIND_SRC_EH_FRAME;
	err = unwind_table__rows(&s, 1, NULL, NULL, out);
	out->stats.build_ns = mono_now_ns() - t0;
	return err;
}

void unwind_table__free(struct unwind_table *t)
{
	free(t->rows);
	t->rows = NULL;
	t->n = 0;
}

const struct bs_unwind_row *unwind_table__find(const struct unwind_table *t, __u64 vaddr)
{
	size_t lo = 0, hi = t->n;

	if (!t->n || vaddr < t->rows[0].pc || vaddr >= 1ull << 32)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}

int unwind_seg__bias(const struct unwind_seg *segs, __u32 n, __u64 start, __u64 end, __u64 pgoff,
		     __u64 *bias)
{
	for (__u32 i = 0; i < n && i < UNWIND_MAX_SEGS; i++) {
		const struct unwind_seg *s = &segs[i];

		/* The mapping's pages overlap the segment's bytes in the file. */
		if (pgoff < s->off + s->filesz && pgoff + (end - start) > s->off) {
			*bias = start - pgoff + s->off - s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}
