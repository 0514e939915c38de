/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A table as `bpfsight stats` shows it to people (docs/USAGE.md, "stats"): durations and sizes
 * in human units, paths as file names, rows with nothing in them left out, the first N rows,
 * and the whole made to fit a width: long names cut in the middle, long titles on two lines,
 * then the minor columns left out (said below the table). JSON and CSV are never viewed so.
 */
#ifndef BPFSIGHT_TABLE_VIEW_H
#define BPFSIGHT_TABLE_VIEW_H

#include <stdio.h>

struct table;

struct table_view {
	int raw;   /* --units ns: numbers exactly as JSON and CSV have them */
	int width; /* fit this many columns; 0 = no limit */
	int wide;  /* --wide: whole names and paths, every column, whatever the width */
	int top;   /* at most this many rows; 0 = all */
};

/* Print T as V says. */
void table__print_view(const struct table *t, const struct table_view *v, FILE *f);
/*
 * Cell (ROW, COL) of T as table mode shows it (human units unless V->raw; a path's file name
 * unless V->wide), into BUF.
 */
const char *table__view_cell(const struct table *t, int row, int col, const struct table_view *v,
			     char *buf, size_t len);

/*
 * Column COL's title as table mode shows it: without " (ns)" or " (B)" when its cells say
 * their unit (V->raw unset), into BUF.
 */
const char *table__view_title(const struct table *t, int col, const struct table_view *v, char *buf,
			      size_t len);
/* The unit column COL's cells are in: "ns", "B", or NULL (a count, a name). */
const char *table__view_unit(const struct table *t, int col);
/* 1: V leaves column COL out, a TABLE_COL_IF_ANY column 0 or empty on every row (not --wide). */
int table__view_hides(const struct table *t, int col, const struct table_view *v);

#endif /* BPFSIGHT_TABLE_VIEW_H */
