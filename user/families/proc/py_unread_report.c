// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The python_unread report: the CPython processes whose Python frames were not read (a version
 * or build whose layout cannot be read: BS_REC_PY_UNREAD, the stack service's), with their
 * version and what is missing. `bpfsight info` shows it, and the verdict says it under its
 * claims (py_unread__claims): their stacks have native frames only, never in silence.
 */
#include <stdio.h>
#include <stdlib.h>
#include "proc.h"
#include "table.h"
#include "verdict.h"

#define MAX_UNREAD 256 /* processes listed; more are counted */

struct py_unread_st {
	struct bs_py_unread r[MAX_UNREAD];
	__u32 n, more;
};

static void *unread_new(void)
{
	return calloc(1, sizeof(struct py_unread_st));
}

static void unread_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct py_unread_st *s = st;

	if (rec->type != BS_REC_PY_UNREAD)
		return;
	for (__u32 i = 0; i < s->n; i++)
		if (s->r[i].h.pid == rec->pid) {
			s->r[i] = *(const struct bs_py_unread *)rec; /* after an exec: the last */
			return;
		}
	if (s->n < MAX_UNREAD)
		s->r[s->n++] = *(const struct bs_py_unread *)rec;
	else
		s->more++;
}

/* "3.16", "3.14t", "" when unknown. */
static const char *version_of(const struct bs_py_unread *r, char *buf, size_t len)
{
	if (r->py_version >> 24 != 3)
		return "";
	snprintf(buf, len, "3.%u%s", r->py_version >> 16 & 0xff,
		 r->flags & BS_PY_UNREAD_FREE_THREADED ? "t" : "");
	return buf;
}

static int unread_emit(void *st, const struct trace_model *m, struct table *t)
{
	enum { C_PID, C_VERSION, C_WHY, C_FILE, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_VERSION] = { "version", "Python", TABLE_STR },
		[C_WHY] = { "why", "Why Not Read", TABLE_STR },
		[C_FILE] = { "file", "Interpreter", TABLE_STR },
	};
	struct py_unread_st *s = st;
	char v[16];

	table__add_cols(t, cols, NCOLS);
	for (__u32 i = 0; i < s->n; i++) {
		table__row(t);
		table__set_u64(t, C_PID, s->r[i].h.pid);
		table__set_str(t, C_VERSION, version_of(&s->r[i], v, sizeof(v)));
		table__set_str(t, C_WHY, trace_model__string(m, s->r[i].why_id));
		table__set_str(t, C_FILE, trace_model__string(m, s->r[i].object_id));
	}
	return table__err(t);
}

static void unread_free(void *st)
{
	free(st);
}

const struct report py_unread_report = {
	.name = "python_unread",
	.desc = "CPython processes whose Python frames were not read, and why",
	.new = unread_new,
	.add = unread_add,
	.emit = unread_emit,
	.free = unread_free,
	.info = &(const struct report_info){ "Python frames not read", "python_unread" },
};

void py_unread__claims(struct verdict *v)
{
	const struct py_unread_st *s = verdict__state(v, "python_unread");
	const struct trace_model *m = verdict__model(v);
	char v1[16];

	if (!s || !s->n)
		return;
	/* Not a bottleneck: what every stack claim above it lacks (no rule's threshold). */
	verdict__claim(v, VERDICT_CPU, 0, -1, "python_unread",
		       "Python frames could not be read in %u process%s (pid %u: CPython%s%s: %s): "
		       "their stacks, GIL holders' code and thread names are native only",
		       s->n + s->more, s->n + s->more == 1 ? "" : "es", s->r[0].h.pid,
		       s->r[0].py_version >> 24 == 3 ? " " : "",
		       version_of(&s->r[0], v1, sizeof(v1)),
		       trace_model__string(m, s->r[0].why_id) ?: "");
}
