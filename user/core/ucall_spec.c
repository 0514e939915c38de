// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The compiler of argument specs (ucall_spec.h documents the grammar). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ucall_spec.h"

static const char *const type_names[UCALL_T_NR] = {
	"u64", "u32", "s32", "u16", "u8", "dim3", "fn", "str", "mem",
};
const __u8 ucall_type_size[UCALL_T_NR] = { 8, 4, 4, 2, 1, 12, 8, 0, 0 };

#define NREGS 6 /* rdi rsi rdx rcx r8 r9 */

/* Compilation state beyond the spec itself. */
struct compiler {
	const struct ucall_key *keys;
	__u32 nkeys;
	struct ucall_spec *s;
	int regs, stack; /* argument registers and stack words taken */
	int byval;	 /* '!' fields seen */
	int min_at;	 /* lowest @ offset, -1: none */
	char *err;
	size_t len;
};

static int fail(struct compiler *c, const char *tok, const char *fmt, ...)
{
	char why[128];
	va_list ap;

	if (c->err && c->len) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
		if (tok)
			snprintf(c->err, c->len, "'%s': %s", tok, why);
		else
			snprintf(c->err, c->len, "%s", why);
	}
	return -EINVAL;
}

/* The next argument word(s) of an argument of N words (1, or 2 for a dim3), or -1. */
static int take_words(struct compiler *c, int n)
{
	int word;

	if (c->regs + n <= NREGS) {
		word = c->regs;
		c->regs += n;
	} else {
		word = NREGS + c->stack;
		c->stack += n;
	}
	return word + n <= BS_UCALL_NARGS ? word : -1;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	*v = strtoul(s, &end, 10);
	return *end || *v > max ? -1 : 0;
}

/* One field token being compiled: what its prefixes, key and type said. */
struct tok {
	const char *text; /* the whole token, for messages */
	const char *p;	  /* what is left to read of it */
	int copy;	  /* '&': the pointee is copied */
	int byref;	  /* '^': the word points to the value, read at entry */
	int key;	  /* index in the keys, -1 for '-' (argument words that are no field) */
	int has_type;	  /* ':TYPE' given */
	struct ucall_field f;
};

#define NO_FIELD 1 /* a token that takes argument words or a copy but adds no field */

/* Its prefixes ('&', '*') and its key, or '-'. */
static int field_key(struct compiler *c, struct tok *t)
{
	const char *name;
	size_t n;

	if (*t->p == '^') {
		t->byref = 1;
		t->p++;
	}
	if (*t->p == '&') {
		t->copy = 1;
		t->p++;
	}
	if (*t->p == '*') {
		t->f.written = 1;
		t->p++;
	}
	name = t->p;
	n = strcspn(t->p, ":@!=");
	if (!(n == 1 && *t->p == '-')) {
		for (__u32 k = 0; k < c->nkeys; k++)
			if (strlen(c->keys[k].name) == n && !strncmp(c->keys[k].name, t->p, n))
				t->key = k;
		if (t->key < 0)
			return fail(c, t->text, "unknown key '%.*s'", (int)n, name);
		t->f.key = t->key;
		t->f.type = c->keys[t->key].type;
	}
	t->p += n;
	return 0;
}

/* KEY=VALUE */
static int field_constant(struct compiler *c, struct tok *t)
{
	const struct ucall_key *k;
	const char *v = t->p + 1;
	struct ucall_field *f = &t->f;
	char *end;

	if (t->key < 0 || t->copy || f->written || t->byref)
		return fail(c, t->text, "a constant is KEY=VALUE");
	k = &c->keys[f->key];
	f->src = UCALL_SRC_CONST;
	f->type = k->type;
	if (!(1u << f->type & UCALL_T_INTS))
		return fail(c, t->text, "a constant needs an integer key");
	if (k->values) {
		for (__u32 i = 0; i < k->nvalues; i++)
			if (!strcmp(k->values[i], v)) {
				f->konst = i;
				return 0;
			}
		return fail(c, t->text, "unknown value of %s", k->name);
	}
	f->konst = strtoull(v, &end, 0);
	if (end == v || *end || *v == '-')
		return fail(c, t->text, "bad number");
	return 0;
}

/* ':TYPE', when given, and whether the key may have the field's type. */
static int field_type(struct compiler *c, struct tok *t)
{
	if (*t->p == ':') {
		const char *p = t->p + 1;
		size_t tn = strcspn(p, "@!");
		int type = -1;

		for (int i = 0; i < UCALL_T_NR; i++)
			if (strlen(type_names[i]) == tn && !strncmp(type_names[i], p, tn))
				type = i;
		if (type < 0)
			return fail(c, t->text, "unknown type '%.*s'", (int)tn, p);
		if (t->key < 0)
			return fail(c, t->text, "'-' has no type");
		t->f.type = type;
		t->has_type = 1;
		t->p = p + tn;
	}
	if (t->key >= 0 && !(c->keys[t->key].types & 1u << t->f.type))
		return fail(c, t->text, "%s cannot be %s", c->keys[t->key].name,
			    type_names[t->f.type]);
	return 0;
}

/* KEY[:TYPE]@N: a field of the copy. */
static int field_at(struct compiler *c, struct tok *t)
{
	struct ucall_field *f = &t->f;
	unsigned long at = 0;

	if (t->byref)
		return fail(c, t->text, "a '^' field is an argument word");
	if (parse_uint(t->p + 1, 0xffff, &at))
		return fail(c, t->text, "bad offset");
	if (t->key < 0 || t->copy || f->written)
		return fail(c, t->text, "an '@' field is KEY[:TYPE]@N");
	if (!ucall_type_size[f->type])
		return fail(c, t->text, "a %s is not read at an offset", type_names[f->type]);
	if (f->type == UCALL_T_FN)
		return fail(c, t->text, "fn must be an argument word");
	f->src = UCALL_SRC_AT;
	f->off = at;
	if (c->min_at < 0 || (int)at < c->min_at)
		c->min_at = at;
	return 0;
}

/* KEY!N or -!N: a struct passed by value in N stack words, copied. */
static int field_byval(struct compiler *c, struct tok *t)
{
	struct ucall_spec *s = c->s;
	unsigned long words = 0;

	if (parse_uint(t->p + 1, 0xff, &words) || !words)
		return fail(c, t->text, "bad word count");
	if (t->byref)
		return fail(c, t->text, "a '^' field is an argument word");
	if (t->copy || t->f.written || t->has_type)
		return fail(c, t->text, "a by-value struct is KEY!N or -!N");
	if (t->key >= 0 && t->f.type != UCALL_T_MEM)
		return fail(c, t->text, "a by-value struct is type mem");
	if (s->copy_arg && s->copy_arg != BS_DEREF_ARG_STACK)
		return fail(c, t->text, "two copies");
	c->stack += words; /* memory class: stack words only, no register */
	c->byval++;
	s->copy_arg = BS_DEREF_ARG_STACK;
	s->copy_mode = BS_DEREF_STRUCT;
	if (t->key < 0)
		return NO_FIELD;
	t->f.src = UCALL_SRC_COPY;
	return 0;
}

/* A field of the next argument word(s): its value, its pointee copied ('&'), or an out value. */
static int field_word(struct compiler *c, struct tok *t)
{
	struct ucall_spec *s = c->s;
	struct ucall_field *f = &t->f;
	int word = take_words(c, f->type == UCALL_T_DIM3 ? 2 : 1);

	if (word < 0)
		return fail(c, t->text, "past argument word %d", BS_UCALL_NARGS);
	f->word = word;
	if (t->byref) {
		if (t->key < 0 || t->copy || f->written || !(1u << f->type & UCALL_T_INTS) ||
		    ucall_type_size[f->type] > 4)
			return fail(c, t->text,
				    "a '^' field is ^KEY of an integer of 4 bytes or less");
		s->byref |= 1u << f->word;
	}
	if (t->copy) {
		/* An integer KEY is the word itself: the pointer to the object the @ fields read. */
		int word_too = t->key >= 0 && (1u << f->type & UCALL_T_INTS);

		if (t->key >= 0 && !word_too && f->type != UCALL_T_STR && f->type != UCALL_T_MEM)
			return fail(c, t->text, "a '&' field is type str, mem or an integer");
		if (word_too && f->written)
			return fail(c, t->text, "'&*' is type str or mem");
		if (s->copy_arg)
			return fail(c, t->text, "two copies");
		s->copy_arg = f->word + 1;
		s->copy_mode = f->type == UCALL_T_STR ? BS_DEREF_STRING : BS_DEREF_STRUCT;
		if (t->key < 0)
			return f->written ? fail(c, t->text, "'&*' needs a key") : NO_FIELD;
		f->src = word_too ? UCALL_SRC_WORD : UCALL_SRC_COPY;
		return 0;
	}
	if (t->key < 0)
		return f->written ? fail(c, t->text, "'*' needs a key") : NO_FIELD;
	if (f->type == UCALL_T_STR || f->type == UCALL_T_MEM)
		return fail(c, t->text, "a %s is the copy: '&' or '!'", type_names[f->type]);
	if (f->written) {
		if (!(1u << f->type & UCALL_T_INTS))
			return fail(c, t->text, "an out value is an integer");
		if (s->out_word >= 0)
			return fail(c, t->text, "two out fields");
		s->out_word = f->word;
		f->src = UCALL_SRC_OUT;
		return 0;
	}
	if (f->type == UCALL_T_FN) {
		if (s->fn_word >= 0)
			return fail(c, t->text, "two fn fields");
		s->fn_word = f->word;
	}
	f->src = UCALL_SRC_WORD;
	return 0;
}

static int field_add(struct compiler *c, const struct tok *t)
{
	struct ucall_spec *s = c->s;
	const struct ucall_field *f = &t->f;

	if (s->keys & (1ull << f->key) && !c->keys[f->key].repeat)
		return fail(c, t->text, "%s given twice", c->keys[f->key].name);
	if (s->nfields >= UCALL_SPEC_MAX_FIELDS)
		return fail(c, t->text, "more than %d fields", UCALL_SPEC_MAX_FIELDS);
	s->keys |= 1ull << f->key;
	s->f[s->nfields++] = *f;
	return 0;
}

/* One token of a spec: [&][*]KEY|-, then =VALUE, or [:TYPE] and one of @N, !N, nothing. */
static int field(struct compiler *c, const char *text)
{
	struct tok t = { .text = text, .p = text, .key = -1 };
	int ret;

	if (field_key(c, &t))
		return -EINVAL;
	if (*t.p == '=')
		ret = field_constant(c, &t);
	else if (field_type(c, &t))
		return -EINVAL;
	else if (*t.p == '@')
		ret = field_at(c, &t);
	else if (*t.p == '!')
		ret = field_byval(c, &t);
	else if (*t.p)
		return fail(c, text, "trailing '%s'", t.p);
	else
		ret = field_word(c, &t);
	if (ret)
		return ret == NO_FIELD ? 0 : ret;
	return field_add(c, &t);
}

/* Where the copy starts, and that it holds every @ field. */
static int place_copy(struct compiler *c)
{
	struct ucall_spec *s = c->s;
	int start;

	if (c->min_at < 0)
		return 0;
	if (!s->copy_arg)
		return fail(c, NULL, "'@' fields need a '&' or '!' field");
	if (s->copy_mode != BS_DEREF_STRUCT)
		return fail(c, NULL, "'@' fields read a struct copy, not a string");
	/*
	 * From the object's start when the copy reaches every field from there (a mem field is
	 * the copy from the start), else from the lowest field on.
	 */
	start = 0;
	for (int i = 0; i < s->nfields; i++) {
		const struct ucall_field *f = &s->f[i];

		if (f->src == UCALL_SRC_AT &&
		    f->off + ucall_type_size[f->type] > BS_UCALL_DEREF_STRUCT)
			start = c->min_at / 8 * 8;
	}
	for (int i = 0; i < s->nfields; i++)
		if (s->f[i].src == UCALL_SRC_COPY)
			start = 0;
	if (start / 8 > 0xff)
		return fail(c, NULL, "the copy starts past byte %d", 0xff * 8);
	for (int i = 0; i < s->nfields; i++) {
		const struct ucall_field *f = &s->f[i];

		if (f->src == UCALL_SRC_AT &&
		    f->off + ucall_type_size[f->type] > start + BS_UCALL_DEREF_STRUCT)
			return fail(c, NULL, "%s@%u is past the copy (%d bytes from %d)",
				    c->keys[f->key].name, f->off, BS_UCALL_DEREF_STRUCT, start);
	}
	s->copy_off8 = start / 8;
	return 0;
}

int ucall_spec__compile(const char *args, const struct ucall_key *keys, __u32 nkeys,
			struct ucall_spec *s, char *err, size_t len)
{
	struct compiler c = { keys, nkeys, s, 0, 0, 0, -1, err, len };
	const char *p = args ? args : "";
	char tok[64];
	int ret = 0;

	memset(s, 0, sizeof(*s));
	s->out_word = s->fn_word = -1;
	if (nkeys > UCALL_MAX_KEYS)
		return fail(&c, NULL, "more than %d keys", UCALL_MAX_KEYS);
	while (!ret && *p) {
		size_t n;

		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (!n)
			break;
		if (n >= sizeof(tok))
			return fail(&c, NULL, "field '%.20s...' too long", p);
		memcpy(tok, p, n);
		tok[n] = 0;
		p += n;
		ret = field(&c, tok);
	}
	if (!ret)
		ret = place_copy(&c);
	if (ret) {
		memset(s, 0, sizeof(*s));
		s->out_word = s->fn_word = -1;
		return ret;
	}
	s->nwords = c.stack ? NREGS + c.stack : c.regs;
	return 0;
}

__u64 ucall_spec__cookie(const struct ucall_spec *s, __u32 fn)
{
	__u64 c = BS_UCOOKIE(fn, s->copy_arg, s->copy_off8, s->copy_mode, s->out_word + 1);

	/* The stack words are copied at entry only for functions that have them. */
	if (s->nwords > NREGS || s->copy_arg == BS_DEREF_ARG_STACK)
		c |= BS_UCOOKIE_STACK;
	return c | (__u64)s->byref << BS_UCOOKIE_BYREF_SHIFT;
}
