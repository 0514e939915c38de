/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A report's output: typed columns and rows, printed as an aligned human table (nsys-like),
 * CSV (RFC 4180 quoting) or JSON rows. Columns have a snake_case key (JSON keys, CSV
 * header) and a title (the human table's header). A cell never set prints as null / empty.
 */
#ifndef BPFSIGHT_TABLE_H
#define BPFSIGHT_TABLE_H

#include <stdio.h>
#include <linux/types.h>

struct json;

enum table_type {
	TABLE_U64,
	TABLE_S64,
	TABLE_DOUBLE,
	TABLE_STR,
};

#define TABLE_DEFAULT_PRECISION 1 /* digits after the point of double columns (nsys's) */

/*
 * How table mode shows a column (table_view.h); JSON and CSV ignore it. A column whose key ends
 * in "_ns" is a duration and one named "bytes" or "*_bytes" a size, by the key alone.
 */
#define TABLE_COL_PATH	 0x1 /* a file's path: its file name is shown */
#define TABLE_COL_MINOR	 0x2 /* left out first when the table does not fit the width */
#define TABLE_COL_WEIGHT 0x4 /* a row whose weight columns are all 0 has nothing to show */
/* A CLOCK_MONOTONIC instant (ns), kept so in JSON and CSV (dump's `ts`): people read it from the
 * table's origin (table__set_origin: the recording's start), as "+8.75 s". */
#define TABLE_COL_TIMESTAMP 0x8
/* Table mode leaves the column out, saying so once, when it is 0 or empty on every row (a CPU
 * job's GPU columns, a family's counts that did not record); --wide, JSON and CSV keep it. */
#define TABLE_COL_IF_ANY 0x10

/*
 * A column, as a report declares it. The report names its columns by an enum whose values are
 * their indexes in the table, declares them in an array indexed by that enum, and adds them all
 * at once; rows are then filled by the enum's names:
 *
 *	enum { C_TOTAL, C_COUNT, C_NAME, NCOLS };
 *	static const struct table_col cols[NCOLS] = {
 *		[C_TOTAL] = { "total_ns", "Total Time (ns)", TABLE_U64 },
 *		[C_COUNT] = { "count", "Num Calls", TABLE_U64, TABLE_COL_MINOR },
 *		[C_NAME] = { "name", "Name", TABLE_STR },
 *	};
 *
 *	table__add_cols(t, cols, NCOLS);
 *	table__row(t);
 *	table__set_u64(t, C_TOTAL, total);
 *
 * A new column is one enum entry and one line of the array; nothing is renumbered. Declared
 * [NCOLS], the array cannot hold an entry past the enum (it does not compile), nor one twice
 * (-Woverride-init), and an entry left out is a hole that table__add_cols refuses.
 *
 * A key or title known only at run time (a caller's label, a title chosen by the data) is
 * declared in an automatic array, whose initializers may be any expression: the table copies
 * every string, so the declaration may live in the caller's frame or buffers. Columns shared by
 * several reports are a macro of designated initializers at the index the report gives
 * (TIME_SUM_COLS, MEM_SITE_COLS), filled by a setter given the same index.
 */
struct table_col {
	const char *key;   /* snake_case: JSON key, CSV header; unique in the table */
	const char *title; /* the human table's header; NULL: the key */
	enum table_type type;
	unsigned flags; /* TABLE_COL_* */
	int precision;	/* digits after the point of a TABLE_DOUBLE, 1 to 17; 0: the default */
	unsigned when;	/* table__add_cols_when's options, one of which it needs; 0: always */
};

struct table;

struct table *table__new(const char *name);
/* The instant TABLE_COL_TIMESTAMP columns are shown from (the recording's start); 0: none. */
void table__set_origin(struct table *t, __u64 mono_ns);
__u64 table__origin(const struct table *t);
void table__free(struct table *t);
/*
 * Add the columns COLS[0..N) to T, which has none yet: column i is COLS[i], so the enum that
 * indexes COLS indexes T. N short of the enum's count leaves its last entries out (columns
 * only some tables have, put last: gil_sum's). 0, -ENOMEM, or -EINVAL, adding nothing: T has
 * columns or rows already, an entry has no key (a hole), a bad type, precision or flags, a
 * `when` (that is table__add_cols_when's), or a key another column has. Errors stick.
 */
int table__add_cols(struct table *t, const struct table_col *cols, int n);
/*
 * The same for a report whose columns depend on its options: COLS[i] is added, in the array's
 * order, where its `when` is 0 or shares a bit with ON. IDX[i] (N entries) gets its index in
 * T, or -1 where it was left out: such a report fills its rows through IDX, and a column left
 * out is not set (setting it is -EINVAL, as any bad column).
 */
int table__add_cols_when(struct table *t, const struct table_col *cols, int n, unsigned on,
			 int *idx);
/*
 * Append one column (its `when` ignored); its index or a negative errno. For columns only the
 * data names, after the declared ones (shim_sum's per-family counts).
 */
int table__add_col(struct table *t, const struct table_col *col);
/* Start a new row: the set_* calls that follow fill it. 0 or -ENOMEM. */
int table__row(struct table *t);
/* 0, or -EINVAL for a bad column / type / no row, -ENOMEM. Errors also stick (table__err). */
int table__set_u64(struct table *t, int col, __u64 v);
int table__set_s64(struct table *t, int col, __s64 v);
int table__set_double(struct table *t, int col, double v);
int table__set_str(struct table *t, int col, const char *s); /* copied; NULL = unset */
/*
 * A sentence under the human table (what its rows leave out and why, or a summary of them),
 * printed as its own paragraph; CSV and JSON have the rows only. 0 or -ENOMEM.
 */
int table__add_note(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int table__nnotes(const struct table *t);
const char *table__get_note(const struct table *t, int i); /* NULL past the last */
/*
 * Order the rows by column KEY (stats --sort): numbers descending, text ascending, cells never
 * set last, rows that tie as they were. KEY is a column's key or its title, in any case, its
 * unit left out or not (cpu_total_ns, "CPU Total (ns)", cpu_total: table__col_named).
 * -ENOENT when T has no such column.
 */
int table__sort(struct table *t, const char *key);
/* The first error any call above returned, 0 if none. */
int table__err(const struct table *t);

const char *table__name(const struct table *t);
int table__ncols(const struct table *t);
int table__nrows(const struct table *t);
int table__col(const struct table *t, const char *key); /* index, or -ENOENT */
/* The column NAME means: its key, else its title or key as a key, the unit optional. */
int table__col_named(const struct table *t, const char *name);
/* Cell readers (tests, exports): a cell never set, or of another type, reads 0 / NULL. */
__u64 table__get_u64(const struct table *t, int row, int col);
__s64 table__get_s64(const struct table *t, int row, int col);
double table__get_double(const struct table *t, int row, int col);
const char *table__get_str(const struct table *t, int row, int col);
int table__is_set(const struct table *t, int row, int col);
/* A numeric cell of any type as a double (0 unset or text). */
double table__get_number(const struct table *t, int row, int col);
/* A cell as the human table prints it ("" unset); BUF holds numbers, strings are the cell's. */
const char *table__cell_text(const struct table *t, int row, int col, char *buf, size_t len);
const char *table__col_title(const struct table *t, int col); /* NULL past the columns */
const char *table__col_key(const struct table *t, int col);   /* NULL past the columns */
unsigned table__col_flags(const struct table *t, int col);
int table__col_numeric(const struct table *t, int col); /* 1: right-aligned */

/* Every row and column, exact numbers, whatever the width (`bpfsight info`). */
void table__print(const struct table *t, FILE *f);
void table__print_csv(const struct table *t, FILE *f);
/* An array of row objects, written as the next value of J. */
void table__print_json(const struct table *t, struct json *j);
/* The same, the first MAX rows only (0 = all: --top). */
void table__print_csv_rows(const struct table *t, FILE *f, int max);
void table__print_json_rows(const struct table *t, struct json *j, int max);

#endif /* BPFSIGHT_TABLE_H */
