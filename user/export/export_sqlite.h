/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the SQLite exporter: its state and the helpers export_sqlite.c (the database, the
 * tables every trace has) shares with export_sqlite_model.c (the tables the families declare
 * in the export model, and their rows) and export_sqlite_stack.c (stacks).
 */
#ifndef BPFSIGHT_EXPORT_SQLITE_H
#define BPFSIGHT_EXPORT_SQLITE_H

#include <sqlite3.h>
#include "export.h"
#include "export_model.h"
#include "family.h"

#define SQ_CACHE_KIB	32768 /* SQLite page cache; dirty pages past it spill to the file */
#define SQ_RECENT_STMTS 16
#define SQ_NAME_SLOTS	256

struct sq;

enum sq_stmt {
	SQ_META,
	SQ_STRING,
	SQ_THREAD_NAME,
	SQ_THREAD,
	SQ_STACK,
	SQ_FRAME,
	SQ_NSTMT,
};

struct sq {
	struct ex_sink sink; /* first: the model's calls come with it (EX_TABLES) */
	sqlite3 *db;
	const char *path;
	sqlite3_stmt *stmt[SQ_NSTMT];
	struct string_pool *strings; /* text -> StringIds.id */
	struct hmap *threads;	     /* {pid, tid} -> u8: every thread a record named */
	int nfam;
	/* {table or amend, policy} -> its statement and how many values it takes */
	struct hmap *stmts;
	struct sq_stmt_slot {
		const void *key;
		int policy, n;
		sqlite3_stmt *stmt;
	} recent[SQ_RECENT_STMTS]; /* stmts' last used, by key and policy */
	struct sq_name_slot {
		const char *s;
		__u32 id;
	} names[SQ_NAME_SLOTS]; /* StringIds ids of EX_NAME texts, by their address */
};

/*
 * The model's tables (export_sqlite_model.c): the sink's calls; T's tables created (in their
 * order) and indexed; the statements made and finalized.
 */
extern const struct ex_sink_ops sq_sink_ops;
int sq_tables__create(struct sq *s, const struct ex_table *const *t);
int sq_tables__index(struct sq *s, const struct ex_table *const *t);
int sq_model__init(struct sq *s);
void sq_model__free(struct sq *s);

/* Say what SQLite says, once, where the failure is understood; map to an errno. */
int sq_fail(struct sq *s, const char *what);
int sq_exec(struct sq *s, const char *sql, const char *what);
void sq_bind_text(sqlite3_stmt *st, int col, const char *text); /* NULL binds NULL */
/* The StringIds id of TEXT, inserting it the first time; 0 on failure (*ERR set). */
__u32 sq_intern(struct sq *s, const char *text, int *err);

/* Prepare N statements of SQL into ST (all NULL first); finalize them. */
int sq_prepare(struct sq *s, const char *const *sql, sqlite3_stmt **st, int n);
void sq_finalize(sqlite3_stmt **st, int n);
/* Run ST with what was bound, then reset it and clear its bindings for the next row. */
int sq_run(struct sq *s, sqlite3_stmt *st);
/* Every thread a record named so far ({pid, tid}): 1 and *PID, *TID, 0 at the end. */
int sq_next_thread(struct sq *s, size_t *it, __u32 *pid, __u32 *tid);
/* Stacks (export_sqlite_stack.c): their tables, created with the export's own. */
extern const char sq_stack_schema[];
struct trace_stack;
/* A STACK record's rows (BPFSIGHT_STACKS, BPFSIGHT_CALLCHAINS). */
int sq_stack(struct sq *s, const struct bs_hdr *rec, const struct trace_model *m);
/* Bind S's id (a row's callchainId) to column COL, NULL when there is no stack. */
void sq_bind_stack(sqlite3_stmt *st, int col, const struct trace_stack *s);

#endif /* BPFSIGHT_EXPORT_SQLITE_H */
