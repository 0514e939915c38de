// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every statement bpfsight sends to ClickHouse keeps to what means the same on 18.16 and on
 * current releases (docs/CLICKHOUSE.md, "How the SQL stays portable"), with no setting: read
 * from the SQL's text, so that a report added with a construct one release reads otherwise
 * fails here, not only on the release that reads it otherwise (the e2e tests run both).
 *
 * - a JOIN says ANY or ALL (18.16 has no default strictness), and ANY only with LEFT: ANY
 *   INNER and ANY RIGHT changed meaning in 20.x (they de-duplicate the left side too: a
 *   gil_stacks table went from 119 rows to 1);
 * - a subquery joined, left or right, has an alias (current releases refuse it without:
 *   ALIAS_REQUIRED, the claim read failed there before a row was sent);
 * - no `SELECT *` over a RIGHT JOIN (18.16 adds the right side's keys again, qualified by its
 *   alias, to the joined rows but not to the others: "Block structure mismatch");
 * - a scalar subquery's number is ifNull((...), 0) (CH_SCALAR): current releases type it
 *   Nullable, and a LEFT JOIN's row without a match then has NULL, not 0 (nccl_rank_sum's
 *   made_wait_ns), unless it answers an array (which cannot be Nullable);
 * - none of the functions 18.16 lacks.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "unit.h"
#include "ch_reports.h"
#include "ship_claim.h"

/* TEXT with the contents of its '...' literals blanked (a keyword in a string is none). */
static char *blanked(const char *text)
{
	char *s = strdup(text), *p = s;
	int in = 0;

	for (; p && *p; p++) {
		if (in && *p == '\\' && p[1]) {
			*p = p[1] = '_';
			p++;
		} else if (*p == '\'') {
			in = !in;
		} else if (in) {
			*p = '_';
		}
	}
	return s;
}

static int is_word(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Is W the whole word at P in S? */
static int word_at(const char *s, const char *p, const char *w)
{
	size_t n = strlen(w);

	return !strncmp(p, w, n) && !is_word(p[n]) && (p == s || !is_word(p[-1]));
}

/* The word ending before P (spaces skipped) into W: its start, or NULL (no word there). */
static const char *word_before(const char *s, const char *p, char *w, size_t len)
{
	const char *e = p, *b;

	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	for (b = e; b > s && is_word(b[-1]); b--)
		;
	if (b == e || (size_t)(e - b) >= len)
		return NULL;
	memcpy(w, b, (size_t)(e - b));
	w[e - b] = 0;
	return b;
}

/* The ')' closing the '(' at P, or NULL. */
static const char *closing(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		depth += *p == '(';
		depth -= *p == ')';
		if (!depth)
			return p;
	}
	return NULL;
}

/* The end of the clause at P: the ')' closing the parenthesis it is in, or the text's end. */
static const char *scope_end(const char *p)
{
	for (; *p && *p != ')'; p++) {
		const char *e = *p == '(' ? closing(p) : p;

		if (!e)
			return p + strlen(p);
		p = e;
	}
	return p;
}

static const char *skip_space(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* What the lint found in one statement: how many, the first, said as found (SAY). */
struct found {
	const char *name;
	int n, say;
	char first[160];
};

/* A finding in F's SQL S at P: said with the SQL around it. */
static void fail_at(struct found *f, const char *s, const char *p, const char *why)
{
	const char *from = p - s > 80 ? p - 80 : s;

	if (!f->n++)
		snprintf(f->first, sizeof(f->first), "%s", why);
	if (f->say)
		printf("# %s: %s: ...%.*s<HERE>%.60s...\n", f->name, why, (int)(p - from), from, p);
}

static const char *const strictness[] = { "ANY",   "ALL",  "CROSS", "INNER", "LEFT",
					  "RIGHT", "FULL", "SEMI",  "ANTI",  NULL };

static int join_word(const char *w)
{
	for (const char *const *k = strictness; *k; k++)
		if (!strcmp(w, *k))
			return 1;
	return 0;
}

static void check_joins(struct found *f, const char *s)
{
	for (const char *p = s; (p = strstr(p, "JOIN")); p += 4) {
		char w[16], kinds[64] = "";
		const char *b = p, *prev, *q;

		if (!word_at(s, p, "JOIN"))
			continue;
		if (word_before(s, p, w, sizeof(w)) && !strcmp(w, "ARRAY"))
			continue;
		/* the words before JOIN that say which join: "ANY LEFT" */
		while ((prev = word_before(s, b, w, sizeof(w))) && join_word(w)) {
			char was[64];

			snprintf(was, sizeof(was), "%s %s", w, kinds);
			snprintf(kinds, sizeof(kinds), "%s", was);
			b = prev;
		}
		if (!strstr(kinds, "ANY") && !strstr(kinds, "ALL") && !strstr(kinds, "CROSS"))
			fail_at(f, s, p, "a JOIN neither ANY nor ALL (18.16 has no default)");
		if (strstr(kinds, "ANY") && !strstr(kinds, "LEFT"))
			fail_at(f, s, p, "ANY but LEFT: its meaning changed in 20.x");
		q = b;
		while (q > s && isspace((unsigned char)q[-1]))
			q--;
		if (q > s && q[-1] == ')')
			fail_at(f, s, q, "a subquery joined without an alias (left)");
		q = skip_space(p + 4);
		if (*q == '(') {
			const char *e = closing(q);

			if (!e || strncmp(skip_space(e + 1), "AS ", 3))
				fail_at(f, s, e ? e + 1 : q,
					"a subquery joined without an alias (right)");
		}
	}
}

static void check_stars(struct found *f, const char *s)
{
	for (const char *p = s; (p = strstr(p, "SELECT")); p += 6) {
		const char *q = skip_space(p + 6), *end;
		size_t n;
		char *scope;

		if (!word_at(s, p, "SELECT") || *q != '*')
			continue;
		end = scope_end(q);
		n = (size_t)(end - q);
		scope = strndup(q, n);
		/* its own level only: nested parentheses blanked */
		for (char *c = scope; *c; c++)
			if (*c == '(') {
				const char *e = closing(c);
				size_t len = e ? (size_t)(e - c) : strlen(c);

				memset(c, ' ', len);
				c += len;
				if (!*c)
					break;
			}
		if (strstr(scope, "RIGHT JOIN"))
			fail_at(f, s, p, "SELECT * over a RIGHT JOIN (18.16 adds its keys again)");
		free(scope);
	}
}

static void check_scalars(struct found *f, const char *s)
{
	for (const char *p = s; (p = strchr(p, '(')); p++) {
		const char *q = skip_space(p + 1), *b;
		char w[16];

		if (!word_at(s, q, "SELECT"))
			continue;
		b = word_before(s, p, w, sizeof(w));
		if (b && (!strcmp(w, "FROM") || !strcmp(w, "JOIN") || !strcmp(w, "IN")))
			continue;
		/* CH_SCALAR's ifNull((SELECT ...), 0) */
		if (p > s && p[-1] == '(' && word_before(s, p - 1, w, sizeof(w)) &&
		    !strcmp(w, "ifNull"))
			continue;
		/* an array (the files' order) is never Nullable */
		if (!strncmp(skip_space(q + 6), "groupArray(", 11))
			continue;
		fail_at(f, s, p,
			"a scalar subquery outside CH_SCALAR (Nullable on 20.x and later)");
	}
}

/* Functions and clauses 18.16 lacks (docs/CLICKHOUSE.md, "What 18.16 lacks"). */
static const char *const newer[] = {
	"JSONExtract",	       " OVER (",	 "arrayFold", "TTL ", "quantileExactInclusive",
	"fromUnixTimestamp64", "LowCardinality", "CODEC(",    NULL
};

/* What TEXT (NAME's) breaks, into F (SAY: each said on stdout): how many. */
static int lint(struct found *f, const char *name, const char *text, int say)
{
	char *s = blanked(text);

	*f = (struct found){ .name = name, .say = say };
	if (!s)
		return -1;
	check_joins(f, s);
	check_stars(f, s);
	check_scalars(f, s);
	for (const char *const *w = newer; *w; w++)
		if (strstr(s, *w))
			fail_at(f, s, strstr(s, *w), "not on 18.16");
	free(s);
	return f->n;
}

static void lint_ok(const char *name, const char *text)
{
	struct found f;

	if (lint(&f, name, text, 1))
		unit_fail("%s: %s (and %d more)", name, f.first, f.n - 1);
}

static void lint_report(const struct ch_report *r)
{
	char *sql = ch_report__sql(r, "job = 'j' AND host = 'h'", "job = 'j'", NULL);

	if (ASSERT_TRUE(sql != NULL, r->name))
		lint_ok(r->name, sql);
	free(sql);
}

static void test_every_report_and_input(void)
{
	const struct ch_report *r;
	size_t it = 0;
	int n = 0;

	/* the families' reports and rules' inputs (struct family.sql), the files' own */
	while ((r = ch_report__every(&it)) && ++n)
		lint_report(r);
	lint_ok("claims", ship_claim__order_sql);
	ASSERT_TRUE(n >= 36, "the statements read");
}

/* The lint fails what it is for: each finding of docs/CLICKHOUSE.md's, as it was written. */
static void test_the_findings_fail(void)
{
	static const struct {
		const char *sql, *why;
	} bad[] = {
		{ "SELECT a FROM (SELECT 1 a) ANY INNER JOIN (SELECT 1 a) AS r USING a", "ANY" },
		{ "SELECT a FROM (SELECT 1 a) AS l ANY INNER JOIN (SELECT 1 a) AS r USING a",
		  "ANY" },
		{ "SELECT a FROM t ANY LEFT JOIN (SELECT 1 a) USING a", "right" },
		{ "SELECT a FROM (SELECT 1 a) ANY LEFT JOIN t USING a", "left" },
		{ "SELECT a FROM (SELECT 1 a) AS l LEFT JOIN (SELECT 1 a) AS r USING a",
		  "neither" },
		{ "SELECT * FROM (SELECT 1 a) AS l ALL RIGHT JOIN (SELECT 1 a) AS r USING a", "*" },
		{ "SELECT x - (SELECT min(ts) FROM t) AS at FROM t", "scalar" },
		{ "SELECT JSONExtractInt(args, 'x') FROM t", "18.16" },
	};

	struct found f;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		lint(&f, "bad", bad[i].sql, 0);
		if (!ASSERT_TRUE(f.n > 0 && strstr(f.first, bad[i].why), bad[i].sql))
			printf("# %s: found %d, first: %s\n", bad[i].sql, f.n, f.first);
	}
	/* and passes what is fine: a literal's parenthesis, IN, CH_SCALAR */
	lint_ok("good",
		"SELECT a FROM (SELECT 1 a) AS l ANY LEFT JOIN (SELECT 1 a, 'x(' b) AS r "
		"USING a WHERE a IN (SELECT 1) AND x - ifNull((SELECT min(ts) FROM t), 0) > 0");
}

int main(void)
{
	RUN_TEST(test_every_report_and_input);
	RUN_TEST(test_the_findings_fail);
	return UNIT_EXIT();
}
