/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unit-test helpers for the readers: a trace written with the real trace writer from records
 * built in the test, strings interned as the recorder does (STRING before first use), a model
 * fed the same records for decoding them directly, and lookups in stats' tables.
 */
#ifndef BPFSIGHT_TRACE_BUILD_H
#define BPFSIGHT_TRACE_BUILD_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "event.h"
#include "family.h"
#include "table.h"
#include "trace_model.h"
#include "trace_writer.h"
#include "unit.h"

#define TB_MAX_STRINGS 64

struct tb {
	struct trace_writer *w; /* NULL: records only go to the model */
	struct trace_model *m;
	const char *strings[TB_MAX_STRINGS];
	__u32 nstrings;
};

/* A fresh directory for a test program's traces, "/tmp/bpfsight-unit-XXXXXX": 0 or -1. */
static inline int tb_tmp_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/bpfsight-unit-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

/* A builder writing to PATH (NULL: the model only). */
static inline int tb_open(struct tb *b, const char *path, const char *families)
{
	struct trace_meta meta = {
		.hostname = "unit",
		.kernel = "6.18",
		.cmdline = "bpfsight record (unit test)",
		.families = (char *)families,
		.target = "system-wide",
		.tool_version = "test",
		/* Before every record the tests write: no interval is clipped to the start. */
		.start = { .mono_ns = 1, .realtime_ns = 1700000000123456789ull },
	};
	int err = 0;

	memset(b, 0, sizeof(*b));
	b->m = trace_model__new();
	if (!b->m)
		return -1;
	if (path) {
		b->w = trace_writer__open(path, &meta, TRACE_WRITER_FORCE, &err);
		if (!b->w)
			return -1;
	}
	return 0;
}

static inline void tb_put(struct tb *b, const void *rec)
{
	if (b->w)
		trace_writer__append(b->w, rec);
	trace_model__observe(b->m, rec);
}

/* The id of TEXT (0 for NULL), its STRING record written the first time. */
static inline __u32 tb_str(struct tb *b, const char *text)
{
	struct {
		struct bs_string s;
		char text[256];
	} r = {};
	size_t len;

	if (!text)
		return 0;
	for (__u32 i = 0; i < b->nstrings; i++)
		if (!strcmp(b->strings[i], text))
			return i + 1;
	if (b->nstrings == TB_MAX_STRINGS)
		return 0;
	len = strlen(text);
	b->strings[b->nstrings++] = text;
	r.s.h = (struct bs_hdr){ .type = BS_REC_STRING, .size = sizeof(r.s) + (len + 7) / 8 * 8 };
	r.s.id = b->nstrings;
	r.s.len = len;
	memcpy(r.text, text, len);
	tb_put(b, &r);
	return b->nstrings;
}

static inline int tb_close(struct tb *b, __u64 end_ns)
{
	int err = 0;

	if (b->w)
		err = trace_writer__close(b->w, &(struct trace_clocks){ .mono_ns = end_ns });
	trace_model__free(b->m);
	return err;
}

/* Decode REC with its family's decoder into EV: the decoder's return value. */
static inline int tb_decode(struct tb *b, const void *rec, struct event *ev)
{
	return family__decode(rec, b->m, ev);
}

static inline const struct event_arg *tb_arg(const struct event *ev, const char *key)
{
	return event__arg(ev, key);
}

#define ASSERT_ARG_U64(ev, key, val)                                                               \
	({                                                                                         \
		const struct event_arg *___arg = tb_arg(ev, key);                                  \
		ASSERT_TRUE(___arg && ___arg->kind == EVENT_ARG_U64, "arg " key " is a u64") &&    \
			ASSERT_EQ(___arg->u, val, "arg " key);                                     \
	})
#define ASSERT_ARG_S64(ev, key, val)                                                               \
	({                                                                                         \
		const struct event_arg *___arg = tb_arg(ev, key);                                  \
		ASSERT_TRUE(___arg && ___arg->kind == EVENT_ARG_S64, "arg " key " is an s64") &&   \
			ASSERT_EQ(___arg->s, val, "arg " key);                                     \
	})
#define ASSERT_ARG_STR(ev, key, val)                                                               \
	({                                                                                         \
		const struct event_arg *___arg = tb_arg(ev, key);                                  \
		ASSERT_TRUE(___arg && ___arg->kind == EVENT_ARG_STR, "arg " key " is a string") && \
			ASSERT_STREQ(___arg->str, val, "arg " key);                                \
	})
#define ASSERT_ARG_BOOL(ev, key, val)                                                              \
	({                                                                                         \
		const struct event_arg *___arg = tb_arg(ev, key);                                  \
		ASSERT_TRUE(___arg && ___arg->kind == EVENT_ARG_BOOL, "arg " key " is a bool") &&  \
			ASSERT_EQ(___arg->u, val, "arg " key);                                     \
	})
#define ASSERT_NO_ARG(ev, key) ASSERT_TRUE(!tb_arg(ev, key), "no arg " key)

/* The row of T whose column COL reads NAME (and COL2 reads NAME2, when given); -1 if none. */
static inline int tb_row(const struct table *t, const char *col, const char *name, const char *col2,
			 const char *name2)
{
	int c = table__col(t, col), c2 = col2 ? table__col(t, col2) : -1;

	for (int i = 0; t && i < table__nrows(t); i++) {
		const char *v = table__get_str(t, i, c);
		const char *v2 = c2 >= 0 ? table__get_str(t, i, c2) : NULL;

		if (v && !strcmp(v, name) && (!col2 || (v2 && !strcmp(v2, name2))))
			return i;
	}
	return -1;
}

#define U64_AT(t, row, col) table__get_u64(t, row, table__col(t, col))
#define DBL_AT(t, row, col) table__get_double(t, row, table__col(t, col))
#define STR_AT(t, row, col) table__get_str(t, row, table__col(t, col))
#define SET_AT(t, row, col) table__is_set(t, row, table__col(t, col))

#endif /* BPFSIGHT_TRACE_BUILD_H */
