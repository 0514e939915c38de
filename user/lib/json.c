// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Streaming JSON writer; see json.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "utf8.h"

void json__init(struct json *j, FILE *f, int pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
}

static void json__indent(struct json *j)
{
	int i;

	if (!j->pretty || j->depth > JSON_MAX_DEPTH)
		return;
	fputc('\n', j->f);
	for (i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

/* Before any value or key: the comma and indent its position needs. */
static void json__sep(struct json *j)
{
	__u64 bit;

	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth == 0)
		return;
	bit = 1ull << (j->depth < 64 ? j->depth : 63);
	if (j->nonempty & bit)
		fputc(',', j->f);
	j->nonempty |= bit;
	json__indent(j);
}

static void json__open(struct json *j, char c)
{
	json__sep(j);
	fputc(c, j->f);
	j->depth++;
	if (j->depth < 64)
		j->nonempty &= ~(1ull << j->depth);
}

static void json__close(struct json *j, char c)
{
	int had = j->depth < 64 && (j->nonempty & (1ull << j->depth));

	if (j->depth > 0)
		j->depth--;
	if (had)
		json__indent(j);
	fputc(c, j->f);
	if (j->depth == 0 && j->pretty)
		fputc('\n', j->f);
}

void json__begin_object(struct json *j)
{
	json__open(j, '{');
}

void json__end_object(struct json *j)
{
	json__close(j, '}');
}

void json__begin_array(struct json *j)
{
	json__open(j, '[');
}

void json__end_array(struct json *j)
{
	json__close(j, ']');
}

/* Bytes that go out as they are: printable ASCII but the quote and the backslash. */
static int json_plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

void json_write_string(FILE *f, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run, len;

	fputc('"', f);
	while (i < n) {
		unsigned char c = s[i];

		/* dump writes millions of names and keys: copy plain runs in one call. */
		for (run = i; run < n && json_plain(s[run]); run++)
			;
		if (run > i) {
			fwrite(s + i, 1, run - i, f);
			i = run;
			continue;
		}
		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				fprintf(f, "\\u%04x", c);
				break;
			}
			len = utf8__seq_len(s + i, n - i);
			if (!len) {
				/* Comms and cmdlines are any bytes: never emit invalid JSON. */
				fputs("\\ufffd", f);
				len = 1;
			} else {
				fwrite(s + i, 1, len, f);
			}
			i += len;
			continue;
		}
		i++;
	}
	fputc('"', f);
}

void json__key(struct json *j, const char *key)
{
	json__sep(j);
	json_write_string(j->f, key, strlen(key));
	fputs(j->pretty ? ": " : ":", j->f);
	j->after_key = 1;
}

void json__strn(struct json *j, const char *s, size_t n)
{
	json__sep(j);
	json_write_string(j->f, s, n);
}

void json__str(struct json *j, const char *s)
{
	if (!s) {
		json__null(j);
		return;
	}
	json__strn(j, s, strlen(s));
}

/* Decimal digits of V, written backwards from END; returns the first one. */
static char *u64_digits(__u64 v, char *end)
{
	do {
		*--end = '0' + v % 10;
		v /= 10;
	} while (v);
	return end;
}

void json__u64(struct json *j, __u64 v)
{
	char buf[24], *p = u64_digits(v, buf + sizeof(buf));

	json__sep(j);
	fwrite(p, 1, buf + sizeof(buf) - p, j->f);
}

void json__s64(struct json *j, __s64 v)
{
	char buf[24], *p;

	/* The magnitude as unsigned: -INT64_MIN does not fit in an __s64. */
	p = u64_digits(v < 0 ? 0 - (__u64)v : (__u64)v, buf + sizeof(buf));
	if (v < 0)
		*--p = '-';
	json__sep(j);
	fwrite(p, 1, buf + sizeof(buf) - p, j->f);
}

void json__double(struct json *j, double v, int precision)
{
	if (!isfinite(v)) {
		json__null(j); /* JSON has no NaN or Infinity */
		return;
	}
	if (precision < 0)
		precision = 0;
	if (precision > 17)
		precision = 17;
	json__sep(j);
	/* -0.0 would print as "-0.0": valid JSON, but noise in a diff. */
	fprintf(j->f, "%.*f", precision, v == 0 ? 0.0 : v);
}

void json__double_g(struct json *j, double v)
{
	char buf[32];

	if (!isfinite(v)) {
		json__null(j);
		return;
	}
	/* Fewest digits first: 0.1 as 0.1, not 0.10000000000000001. */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v == 0 ? 0.0 : v);
		if (strtod(buf, NULL) == v)
			break;
	}
	json__sep(j);
	fputs(buf, j->f);
}

void json__bool(struct json *j, int v)
{
	json__sep(j);
	fputs(v ? "true" : "false", j->f);
}

void json__null(struct json *j)
{
	json__sep(j);
	fputs("null", j->f);
}

void json__kv_str(struct json *j, const char *key, const char *s)
{
	json__key(j, key);
	json__str(j, s);
}

void json__kv_u64(struct json *j, const char *key, __u64 v)
{
	json__key(j, key);
	json__u64(j, v);
}

void json__kv_s64(struct json *j, const char *key, __s64 v)
{
	json__key(j, key);
	json__s64(j, v);
}

void json__kv_double(struct json *j, const char *key, double v, int precision)
{
	json__key(j, key);
	json__double(j, v, precision);
}

void json__kv_bool(struct json *j, const char *key, int v)
{
	json__key(j, key);
	json__bool(j, v);
}
