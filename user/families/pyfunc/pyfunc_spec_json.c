// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nsys's --python-functions-trace file, so a user's spec runs unchanged: a JSON array of
 * objects, each
 *   {"_comment": "...", "domain": "NAME", "color": "76B900", "module": "pkg.mod",
 *    "functions": ["f", "Class.method", ...]}
 * "module" and "functions" are required; "domain" names the entry's ranges (none: ""); a
 * function may also be an object whose "function" names it (its other keys, like "color"
 * and every key nsys adds that bpfsight has no use for, are read and left). Errors say the
 * line and column, and the entry.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "pyfunc_spec.h"

#define FILE_MAX (4u << 20) /* a spec file is small: more is not one */

struct jp {
	const char *s, *p, *end, *path;
	char *err;
	size_t errlen;
	int ret;
};

static int jp_fail(struct jp *j, const char *what)
{
	int line = 1, col = 1;

	for (const char *c = j->s; c < j->p && c < j->end; c++, col++)
		if (*c == '\n') {
			line++;
			col = 0;
		}
	if (!j->ret) {
		snprintf(j->err, j->errlen, "%s:%d:%d: %s", j->path, line, col, what);
		j->ret = -EINVAL;
	}
	return j->ret;
}

static void ws(struct jp *j)
{
	while (j->p < j->end && strchr(" \t\r\n", *j->p))
		j->p++;
}

/* The next byte after blanks is C: take it. */
static int take(struct jp *j, char c)
{
	ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return 1;
	}
	return 0;
}

static int hex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			*v |= (c | 0x20) - 'a' + 10;
		else
			return 0;
	}
	return 1;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80)
		return o[0] = cp, 1;
	if (cp < 0x800)
		return o[0] = 0xc0 | cp >> 6, o[1] = 0x80 | (cp & 0x3f), 2;
	if (cp < 0x10000)
		return o[0] = 0xe0 | cp >> 12, o[1] = 0x80 | (cp >> 6 & 0x3f),
		       o[2] = 0x80 | (cp & 0x3f), 3;
	return o[0] = 0xf0 | cp >> 18, o[1] = 0x80 | (cp >> 12 & 0x3f),
	       o[2] = 0x80 | (cp >> 6 & 0x3f), o[3] = 0x80 | (cp & 0x3f), 4;
}

/* A string into a malloc'ed *OUT (NULL: read and dropped). 0 or the error. */
static int string(struct jp *j, char **out)
{
	const char *q;
	char *o, *buf;
	unsigned cp, lo;

	if (!take(j, '"'))
		return jp_fail(j, "a string expected");
	/*
	 * Escapes only shrink, so the raw text up to the closing quote is room enough; sized to
	 * that, not to the rest of the file, which every name kept would hold.
	 */
	for (q = j->p; q < j->end && *q != '"'; q++)
		if (*q == '\\' && q + 1 < j->end)
			q++;
	buf = o = malloc(q - j->p + 1);
	if (!buf)
		return j->ret = -ENOMEM;
	while (j->p < j->end && *j->p != '"') {
		if ((unsigned char)*j->p < 0x20)
			break;
		if (*j->p != '\\') {
			*o++ = *j->p++;
			continue;
		}
		if (++j->p >= j->end)
			break;
		switch (*j->p++) {
		case '"':
			*o++ = '"';
			break;
		case '\\':
			*o++ = '\\';
			break;
		case '/':
			*o++ = '/';
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u':
			if (j->end - j->p < 4 || !hex4(j->p, &cp))
				goto bad;
			j->p += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && j->end - j->p >= 6 && j->p[0] == '\\' &&
			    j->p[1] == 'u' && hex4(j->p + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				j->p += 6;
			}
			if (!cp)
				goto bad; /* a NUL would cut the name */
			o += put_utf8(o, cp);
			break;
		default:
			goto bad;
		}
	}
	if (j->p >= j->end || *j->p != '"')
		goto bad;
	j->p++;
	*o = 0;
	if (out)
		*out = buf;
	else
		free(buf);
	return 0;
bad:
	free(buf);
	return jp_fail(j, "a malformed string");
}

/* An object's members, its '{' taken: MEMBER reads each one's value. */
static int members(struct jp *j, int (*member)(struct jp *j, const char *key, void *arg), void *arg)
{
	char *key = NULL;

	if (take(j, '}'))
		return 0;
	do {
		if (string(j, &key))
			return j->ret;
		if (!take(j, ':'))
			jp_fail(j, "':' expected");
		else
			member(j, key, arg);
		free(key);
		if (j->ret)
			return j->ret;
	} while (take(j, ','));
	return take(j, '}') ? 0 : jp_fail(j, "',' or '}' expected");
}

/* A list's elements, its '[' taken: ELEMENT reads each one. */
static int elements(struct jp *j, int (*element)(struct jp *j, void *arg), void *arg)
{
	if (take(j, ']'))
		return 0;
	do
		if (element(j, arg))
			return j->ret;
	while (take(j, ','));
	return take(j, ']') ? 0 : jp_fail(j, "',' or ']' expected");
}

static int skip_value(struct jp *j, int depth);

static int skip_element(struct jp *j, void *depth)
{
	return skip_value(j, *(int *)depth + 1);
}

static int skip_member(struct jp *j, const char *key, void *depth)
{
	return skip_element(j, depth);
}

/* Any value, read and dropped (what nsys's file may hold that bpfsight has no use for). */
static int skip_value(struct jp *j, int depth)
{
	ws(j);
	if (depth > 64)
		return jp_fail(j, "nested too deep");
	if (j->p >= j->end)
		return jp_fail(j, "a value expected");
	if (*j->p == '"')
		return string(j, NULL);
	if (take(j, '['))
		return elements(j, skip_element, &depth);
	if (take(j, '{'))
		return members(j, skip_member, &depth);
	/* a number, true, false or null */
	if (!strchr("-0123456789tfn", *j->p))
		return jp_fail(j, "a value expected");
	while (j->p < j->end && strchr("+-.0123456789eEtruefalsn", *j->p))
		j->p++;
	return 0;
}

static int function_member(struct jp *j, const char *key, void *name)
{
	if (!strcmp(key, "function") && !*(char **)name)
		return string(j, name);
	return skip_value(j, 0);
}

/* One of "functions": a name, or an object whose "function" is one. */
static int function(struct jp *j, char **name)
{
	*name = NULL;
	ws(j);
	if (j->p < j->end && *j->p == '"')
		return string(j, name);
	if (!take(j, '{'))
		return jp_fail(j, "a function's name (a string) expected");
	if (!members(j, function_member, name) && !*name)
		jp_fail(j, "a function object without \"function\"");
	return j->ret;
}

struct group {
	char *module, *domain;
	char **functions;
	size_t nfunctions, cap;
	const char *functions_at; /* where "functions" began, for errors */
};

static void group_free(struct group *g)
{
	for (size_t i = 0; i < g->nfunctions; i++)
		free(g->functions[i]);
	free(g->functions);
	free(g->module);
	free(g->domain);
}

static int function_element(struct jp *j, void *arg)
{
	struct group *g = arg;

	if (array__grow((void **)&g->functions, g->nfunctions, &g->cap, sizeof(*g->functions)))
		return j->ret = -ENOMEM;
	if (function(j, &g->functions[g->nfunctions])) {
		free(g->functions[g->nfunctions]);
		return j->ret;
	}
	g->nfunctions++;
	return 0;
}

static int group_member(struct jp *j, const char *key, void *arg)
{
	struct group *g = arg;

	if (!strcmp(key, "module") && !g->module)
		return string(j, &g->module);
	if (!strcmp(key, "domain") && !g->domain)
		return string(j, &g->domain);
	if (strcmp(key, "functions") || g->functions_at)
		return skip_value(j, 0);
	ws(j);
	g->functions_at = j->p;
	if (!take(j, '['))
		return jp_fail(j, "\"functions\" is a list of names");
	return elements(j, function_element, g);
}

static int group(struct jp *j, struct group *g)
{
	const char *at;

	ws(j);
	at = j->p;
	if (!take(j, '{'))
		return jp_fail(j, "an object {\"module\": ..., \"functions\": [...]} expected");
	if (members(j, group_member, g))
		return j->ret;
	if (!g->module || !g->functions_at) {
		j->p = at;
		return jp_fail(j, g->module ? "an entry without \"functions\""
					    : "an entry without \"module\"");
	}
	return 0;
}

static int group_element(struct jp *j, void *b)
{
	struct group g = { 0 };
	char what[256];

	if (!group(j, &g))
		for (size_t i = 0; i < g.nfunctions && !j->ret; i++) {
			snprintf(what, sizeof(what), "%s: module \"%s\"", j->path, g.module);
			j->ret =
				pyfunc_spec__add(b, g.module, g.functions[i], "",
						 g.domain ? g.domain : "", what, j->err, j->errlen);
		}
	group_free(&g);
	return j->ret;
}

static int groups(struct jp *j, struct pyfunc_spec_build *b)
{
	if (!take(j, '['))
		return jp_fail(j, "nsys's format is a list of {\"module\", \"functions\"} objects");
	if (elements(j, group_element, b))
		return j->ret;
	ws(j);
	return j->p < j->end ? jp_fail(j, "text after the list") : 0;
}

int pyfunc_spec__json_file(struct pyfunc_spec_build *b, const char *path, char *err, size_t errlen)
{
	struct jp j = { .path = path, .err = err, .errlen = errlen };
	FILE *f = fopen(path, "r");
	char *text;
	size_t n;
	int ret;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	text = malloc(FILE_MAX + 1);
	n = text ? fread(text, 1, FILE_MAX + 1, f) : 0;
	ret = !text ? -ENOMEM : ferror(f) ? -EIO : 0;
	fclose(f);
	if (!ret && n > FILE_MAX) {
		snprintf(err, errlen, "%s: more than %u bytes: not a spec file", path, FILE_MAX);
		ret = -EINVAL;
	} else if (ret == -EIO) {
		snprintf(err, errlen, "%s: %s", path, strerror(EIO));
	}
	if (!ret) {
		j.s = j.p = text;
		j.end = text + n;
		if (n >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) /* a UTF-8 byte order mark */
			j.p += 3;
		ret = groups(&j, b);
	}
	free(text);
	return ret;
}
