// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A streaming writer of Python pickles, protocol 2 (pickle.h; Python's Lib/pickle.py names
 * the opcodes). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pickle.h"
#include "string_pool.h"
#include "utf8.h"

#define OP_PROTO       0x80
#define OP_BININT1     'K'
#define OP_BININT2     'M'
#define OP_BININT      'J'
#define OP_LONG1       0x8a
#define OP_BINUNICODE  'X'
#define OP_BINPUT      'q'
#define OP_LONG_BINPUT 'r'
#define OP_BINGET      'h'
#define OP_LONG_BINGET 'j'

void pickle__init(struct pickle *p, FILE *f, __u32 *memo)
{
	memset(p, 0, sizeof(*p));
	p->f = f;
	p->next_memo = memo ? memo : &p->own_memo;
}

void pickle__free(struct pickle *p)
{
	string_pool__free(p->strs);
	free(p->str_memo);
	p->strs = NULL;
	p->str_memo = NULL;
	p->nstr_memo = 0;
}

int pickle__error(const struct pickle *p)
{
	if (p->err)
		return p->err;
	return ferror(p->f) ? (errno ? -errno : -EIO) : 0;
}

static void op(struct pickle *p, int c)
{
	fputc(c, p->f);
}

static void le(struct pickle *p, __u64 v, int n)
{
	for (int i = 0; i < n; i++)
		fputc((int)(v >> (8 * i)) & 0xff, p->f);
}

void pickle__proto(struct pickle *p)
{
	op(p, OP_PROTO);
	op(p, 2);
}

void pickle__op(struct pickle *p, enum pickle_op o)
{
	op(p, (int)o);
}

/* LONG1: N little-endian bytes of two's complement, the fewest that keep the sign. */
static void long1(struct pickle *p, __u64 v, int negative)
{
	int n = 1;

	if (negative) {
		while (n < 8 && (__s64)v < -(1ll << (8 * n - 1)))
			n++;
	} else {
		while (n < 9 && (n == 8 ? v >> 63 : v >> (8 * n - 1)))
			n++;
	}
	op(p, OP_LONG1);
	op(p, n);
	le(p, v, n > 8 ? 8 : n);
	if (n > 8)
		fputc(0, p->f); /* a u64 past INT64_MAX: its sign byte */
}

void pickle__int(struct pickle *p, __s64 v)
{
	if (v >= 0 && v < 0x100) {
		op(p, OP_BININT1);
		le(p, v, 1);
	} else if (v >= 0 && v < 0x10000) {
		op(p, OP_BININT2);
		le(p, v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		op(p, OP_BININT);
		le(p, (__u64)v, 4);
	} else {
		long1(p, (__u64)v, v < 0);
	}
}

void pickle__uint(struct pickle *p, __u64 v)
{
	if (v <= INT64_MAX)
		pickle__int(p, (__s64)v);
	else
		long1(p, v, 0);
}

/* S's bytes with every byte that starts no valid UTF-8 sequence as U+FFFD: its length, and
 * when OUT is given, written there. */
static size_t utf8_clean(const unsigned char *s, size_t n, FILE *out)
{
	size_t i = 0, len, total = 0;

	while (i < n) {
		len = utf8__seq_len(s + i, n - i);
		if (!len) {
			if (out)
				fwrite(UTF8_REPLACEMENT, 1, UTF8_REPLACEMENT_LEN, out);
			total += UTF8_REPLACEMENT_LEN;
			i++;
			continue;
		}
		if (out)
			fwrite(s + i, 1, len, out);
		total += len;
		i += len;
	}
	return total;
}

void pickle__str(struct pickle *p, const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u);

	op(p, OP_BINUNICODE);
	le(p, utf8_clean(u, n, NULL), 4);
	utf8_clean(u, n, p->f);
}

__u32 pickle__put(struct pickle *p)
{
	__u32 id = (*p->next_memo)++;

	if (id < 0x100) {
		op(p, OP_BINPUT);
		le(p, id, 1);
	} else {
		op(p, OP_LONG_BINPUT);
		le(p, id, 4);
	}
	return id;
}

void pickle__get(struct pickle *p, __u32 id)
{
	if (id < 0x100) {
		op(p, OP_BINGET);
		le(p, id, 1);
	} else {
		op(p, OP_LONG_BINGET);
		le(p, id, 4);
	}
}

void pickle__str_memo(struct pickle *p, const char *s)
{
	int is_new = 0;
	__u32 sid, *v;

	if (!p->strs && !(p->strs = string_pool__new()))
		goto plain;
	sid = string_pool__intern(p->strs, s ? s : "", &is_new);
	if (!sid)
		goto plain;
	if (sid >= p->nstr_memo) {
		__u32 n = p->nstr_memo ? 2 * p->nstr_memo : 64;

		while (n <= sid)
			n *= 2;
		v = realloc(p->str_memo, n * sizeof(*v));
		if (!v)
			goto plain;
		memset(v + p->nstr_memo, 0, (n - p->nstr_memo) * sizeof(*v));
		p->str_memo = v;
		p->nstr_memo = n;
	}
	if (p->str_memo[sid]) {
		pickle__get(p, p->str_memo[sid] - 1);
		return;
	}
	pickle__str(p, s);
	p->str_memo[sid] = pickle__put(p) + 1;
	return;
plain:
	p->err = -ENOMEM;
	pickle__str(p, s);
}
