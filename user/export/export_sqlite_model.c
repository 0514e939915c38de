// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The export model in SQLite (export_model.h): the tables families declare (EX_TABLES), each
 * created as it is declared ("CREATE TABLE NAME (COL TYPE NOT NULL PRIMARY KEY REFERENCES
 * X(id), ..., PRIMARY KEY (A, B)) WITHOUT ROWID"; a scratch table TEMP), its indexes ("CREATE
 * INDEX TABLE_NAME ON TABLE(COLS)") built after the last row. A row is one prepared insert per
 * table and policy (OR REPLACE, OR IGNORE, ON CONFLICT (KEY) DO UPDATE SET c = coalesce(...));
 * a name (EX_STRING) goes through StringIds, a stack (EX_STACK) is its BPFSIGHT_STACKS id.
 * Timelines (events, counters) are not drawn. Memory: a statement per table and policy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_sqlite.h"
#include "hmap.h"

#define SQ_AMEND 100 /* the policy slot of an ex_amend's statement */

int sq_model__init(struct sq *s)
{
	s->stmts = hmap__new(sizeof(struct sq_stmt_slot));
	return s->stmts ? 0 : -ENOMEM;
}

void sq_model__free(struct sq *s)
{
	struct sq_stmt_slot *st;
	size_t it = 0;

	while (s->stmts && (st = hmap__next(s->stmts, &it, NULL)))
		sqlite3_finalize(st->stmt);
	hmap__free(s->stmts);
	s->stmts = NULL;
	memset(s->recent, 0, sizeof(s->recent));
}

static const char *const col_types[] = { "", " INTEGER", " TEXT", " REAL" };

static int ncols(const struct ex_table *t)
{
	int n = 0;

	while (t->cols[n].name)
		n++;
	return n;
}

/* The text of SQL in a malloc'ed string, or NULL (a failed memstream is out of memory). */
static char *sq_text(FILE *f, char **buf)
{
	if (fclose(f)) {
		free(*buf);
		return NULL;
	}
	return *buf;
}

static int sq_create(struct sq *s, const struct ex_table *t)
{
	const struct ex_column *c;
	size_t len;
	char *buf = NULL, *sql;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	fprintf(f, "CREATE %sTABLE %s (", t->flags & EX_TABLE_SCRATCH ? "TEMP " : "", t->name);
	for (c = t->cols; c->name; c++)
		fprintf(f, "%s%s%s%s%s%s%s", c == t->cols ? "" : ", ", c->name,
			col_types[c->type < 4 ? c->type : 0],
			c->flags & EX_COL_NOT_NULL ? " NOT NULL" : "",
			c->flags & EX_COL_KEY ? " PRIMARY KEY" : "", c->refs ? " REFERENCES " : "",
			c->refs ? c->refs : "");
	if (t->key)
		fprintf(f, ", PRIMARY KEY (%s)", t->key);
	fprintf(f, ")%s", t->flags & EX_TABLE_BY_KEY ? " WITHOUT ROWID" : "");
	sql = sq_text(f, &buf);
	if (!sql)
		return -ENOMEM;
	err = sq_exec(s, sql, "creating a table");
	free(sql);
	return err;
}

int sq_tables__create(struct sq *s, const struct ex_table *const *t)
{
	int err = 0;

	for (; !err && t && *t; t++)
		err = sq_create(s, *t);
	return err;
}

int sq_tables__index(struct sq *s, const struct ex_table *const *t)
{
	char sql[512];
	int err = 0;

	for (; !err && t && *t; t++)
		for (const struct ex_index *x = (*t)->indexes; !err && x && x->name; x++) {
			snprintf(sql, sizeof(sql), "CREATE INDEX %s_%s ON %s(%s)", (*t)->name,
				 x->name, (*t)->name, x->cols);
			err = sq_exec(s, sql, "creating the indexes");
		}
	return err;
}

/* The key a MERGE row conflicts on: the table's, or its one key column's. */
static const char *sq_key(const struct ex_table *t)
{
	for (const struct ex_column *c = t->cols; !t->key && c->name; c++)
		if (c->flags & EX_COL_KEY)
			return c->name;
	return t->key;
}

/* Is column NAME part of T's key? */
static int sq_in_key(const struct ex_table *t, const char *name)
{
	const char *k = sq_key(t);
	size_t n = strlen(name);

	for (const char *p = k; p && *p; p += strcspn(p, ",") + !!p[strcspn(p, ",")]) {
		p += strspn(p, " ");
		if (strcspn(p, ", ") == n && !strncmp(p, name, n))
			return 1;
	}
	return 0;
}

static char *sq_insert_sql(const struct ex_table *t, int policy)
{
	static const char *const verbs[] = { "INSERT", "INSERT OR REPLACE", "INSERT OR IGNORE",
					     "INSERT" };
	size_t len;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	int n = ncols(t), first = 1;

	if (!f)
		return NULL;
	fprintf(f, "%s INTO %s VALUES (", verbs[policy & 3], t->name);
	for (int i = 0; i < n; i++)
		fputs(i ? ", ?" : "?", f);
	fputc(')', f);
	if (policy == EX_ROW_MERGE) {
		fprintf(f, " ON CONFLICT (%s) DO UPDATE SET ", sq_key(t));
		for (int i = 0; i < n; i++) {
			if (sq_in_key(t, t->cols[i].name))
				continue;
			fprintf(f, "%s%s = coalesce(excluded.%s, %s)", first ? "" : ", ",
				t->cols[i].name, t->cols[i].name, t->cols[i].name);
			first = 0;
		}
	}
	return sq_text(f, &buf);
}

/* "UPDATE T SET c = ? WHERE rowid = (SELECT max(rowid) FROM T WHERE a = ? AND b = ?)" */
static char *sq_amend_sql(const struct ex_amend *a)
{
	size_t len, n;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "UPDATE %s SET %s = ? WHERE rowid = (SELECT max(rowid) FROM %s WHERE ",
		a->table->name, a->set, a->table->name);
	for (const char *p = a->match; *p; p += n + strspn(p + n, ", ")) {
		n = strcspn(p, ", ");
		fprintf(f, "%s%.*s = ?", p == a->match ? "" : " AND ", (int)n, p);
	}
	fputc(')', f);
	return sq_text(f, &buf);
}

/*
 * The statement of KEY (a table's or an amend's) for POLICY, prepared the first time, and how
 * many values it takes in *N.
 */
static sqlite3_stmt *sq_stmt(struct sq *s, const void *key, int policy, int *n, int *err)
{
	/* A few tables take every row (a call's and its arguments'): theirs are at hand. */
	struct sq_stmt_slot
		*slot = &s->recent[((size_t)key / 8 ^ (size_t)policy) % SQ_RECENT_STMTS],
		*st;
	const struct ex_amend *a = key;
	char *sql;

	if (slot->key == key && slot->policy == policy)
		goto found;
	st = hmap__get(s->stmts, (struct hkey){ (__u64)(size_t)key, policy }, 1);
	if (!st) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!st->stmt) {
		sql = policy == SQ_AMEND ? sq_amend_sql(key) : sq_insert_sql(key, policy);
		if (!sql) {
			*err = -ENOMEM;
			return NULL;
		}
		if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->stmt,
				       NULL) != SQLITE_OK)
			*err = sq_fail(s, sql);
		free(sql);
		if (!st->stmt)
			return NULL;
		st->key = key;
		st->policy = policy;
		st->n = 1; /* an amend's: the value set, then those matched */
		if (policy != SQ_AMEND)
			st->n = ncols(key);
		else
			for (const char *p = a->match; *p;
			     p += strcspn(p, ",") + !!p[strcspn(p, ",")])
				st->n++;
	}
	*slot = *st;
found:
	*n = slot->n;
	return slot->stmt;
}

/*
 * An event's argument as dump shows it: numbers and handles as integers (a u64 above 2^63 reads
 * back negative: SQLite's are signed), lists NULL (they go into columns of their own).
 */
static void sq_bind_event_arg(sqlite3_stmt *st, int col, const struct event_arg *a)
{
	switch (a->kind) {
	case EVENT_ARG_S64:
		sqlite3_bind_int64(st, col, a->s);
		break;
	case EVENT_ARG_STR:
		sq_bind_text(st, col, a->str);
		break;
	case EVENT_ARG_DOUBLE:
		sqlite3_bind_double(st, col, a->d);
		break;
	case EVENT_ARG_DIM3:
	case EVENT_ARG_FLAGS:
		sqlite3_bind_null(st, col);
		break;
	default: /* U64, HEX, BOOL */
		sqlite3_bind_int64(st, col, (__s64)a->u);
		break;
	}
}

/*
 * V into column COL of ST: 0, or a negative errno (a name StringIds could not take). A NULL is
 * not bound: every parameter is NULL when the statement starts (sq_run clears them after each
 * row), and each bind takes SQLite's lock.
 */
static int sq_bind_value(struct sq *s, sqlite3_stmt *st, int col, const struct ex_value *v)
{
	struct sq_name_slot *slot;
	int err = 0;
	__u32 id;

	switch (v->kind) {
	case EX_INT:
		sqlite3_bind_int64(st, col, v->i);
		break;
	case EX_UINT:
		sqlite3_bind_int64(st, col, (__s64)v->u);
		break;
	case EX_REAL:
	case EX_FIXED:
		sqlite3_bind_double(st, col, v->d);
		break;
	case EX_TEXT:
	case EX_JSON:
		if (v->s)
			sqlite3_bind_text(st, col, v->s, -1, SQLITE_TRANSIENT);
		break;
	case EX_TEXTN:
		sqlite3_bind_text(st, col, v->s, strnlen(v->s, v->n), SQLITE_TRANSIENT);
		break;
	case EX_NAME: /* its id by its address, kept the first time */
		slot = &s->names[(size_t)v->s / 8 % SQ_NAME_SLOTS];
		if (slot->s != v->s) {
			slot->id = sq_intern(s, v->s, &err);
			slot->s = slot->id ? v->s : NULL;
		}
		if (slot->id)
			sqlite3_bind_int64(st, col, slot->id);
		break;
	case EX_STRING:
		id = sq_intern(s, v->s, &err);
		if (id)
			sqlite3_bind_int64(st, col, id);
		break;
	case EX_STACK:
		if (v->stack)
			sq_bind_stack(st, col, v->stack);
		break;
	case EX_ARG:
		sq_bind_event_arg(st, col, v->arg);
		break;
	default: /* EX_NULL */
		break;
	}
	return err;
}

/* Bind N values from column 1 and run ST: 0 or a negative errno. */
static int sq_bind_run(struct sq *s, sqlite3_stmt *st, const struct ex_value *v, int n)
{
	int err = 0;

	for (int i = 0; !err && i < n; i++)
		err = sq_bind_value(s, st, i + 1, &v[i]);
	if (err) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return err;
	}
	return sq_run(s, st);
}

static int sq_ex_row(struct ex_sink *sink, const struct ex_table *t, int policy,
		     const struct ex_value *v, __s64 *id)
{
	struct sq *s = (struct sq *)sink;
	int err = 0, n;
	sqlite3_stmt *st = sq_stmt(s, t, policy, &n, &err);

	if (!st)
		return err;
	err = sq_bind_run(s, st, v, n);
	if (!err && id)
		*id = sqlite3_last_insert_rowid(s->db);
	return err;
}

static int sq_ex_amend(struct ex_sink *sink, const struct ex_amend *a, const struct ex_value *v)
{
	struct sq *s = (struct sq *)sink;
	int err = 0, n;
	sqlite3_stmt *st = sq_stmt(s, a, SQ_AMEND, &n, &err);

	return st ? sq_bind_run(s, st, v, n) : err;
}

static int sq_ex_fill(struct ex_sink *sink, const struct ex_fill *f)
{
	struct sq *s = (struct sq *)sink;
	size_t len, n;
	char *buf = NULL, *sql;
	FILE *m = open_memstream(&buf, &len);
	int err;

	if (!m)
		return -ENOMEM;
	fprintf(m, "UPDATE %s AS r SET %s = l.%s FROM %s AS l WHERE ", f->table->name, f->set,
		f->set, f->from->name);
	for (const char *p = f->on; *p; p += n + strspn(p + n, ", ")) {
		n = strcspn(p, ", ");
		fprintf(m, "%sr.%.*s = l.%.*s", p == f->on ? "" : " AND ", (int)n, p, (int)n, p);
	}
	if (f->skip)
		fprintf(m, " AND r.%s = 0", f->skip);
	fprintf(m, ";CREATE INDEX %s_%s ON %s(%s);DROP TABLE %s;", f->table->name, f->index,
		f->table->name, f->set, f->from->name);
	sql = sq_text(m, &buf);
	if (!sql)
		return -ENOMEM;
	err = sq_exec(s, sql, "linking the rows of two tables");
	free(sql);
	return err;
}

static int sq_ex_next_thread(struct ex_sink *sink, size_t *it, __u32 *pid, __u32 *tid)
{
	return sq_next_thread((struct sq *)sink, it, pid, tid);
}

const struct ex_sink_ops sq_sink_ops = {
	.row = sq_ex_row,
	.amend = sq_ex_amend,
	.fill = sq_ex_fill,
	.next_thread = sq_ex_next_thread,
};
