// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What every uprobe family's API table offers: its compiled specs, cookies and checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ucall_api.h"
#include "event.h"

static void compile(const struct ucall_table *t, __u32 fn, struct ucall_spec *s)
{
	if (ucall_spec__compile(t->apis[fn].args, t->keys, t->nkeys, s, NULL, 0))
		s->nwords = BS_UCALL_NARGS; /* without a description, capture the most */
}

/*
 * Compiled once: dump decodes every call, and the specs never change. Racing first callers
 * each compile, one publishes, the others free theirs.
 */
const struct ucall_spec *ucall_table__spec(const struct ucall_table *t, __u32 fn,
					   struct ucall_spec *tmp)
{
	struct ucall_spec *s, *expected = NULL;

	if (fn >= t->napis)
		return NULL;
	s = __atomic_load_n(t->compiled, __ATOMIC_ACQUIRE);
	if (!s) {
		s = calloc(t->napis, sizeof(*s));
		if (!s) { /* out of memory: the slow way */
			compile(t, fn, tmp);
			return tmp;
		}
		for (__u32 i = 0; i < t->napis; i++)
			compile(t, i, &s[i]);
		if (!__atomic_compare_exchange_n(t->compiled, &expected, s, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			free(s);
			s = expected;
		}
	}
	return &s[fn];
}

__u64 ucall_api__cookie(const struct ucall_table *t, __u32 fn)
{
	const struct ucall_api *a = ucall_table__api(t, fn);
	const struct ucall_spec *s;
	struct ucall_spec tmp;
	__u64 c;

	s = ucall_table__spec(t, fn, &tmp);
	c = s ? ucall_spec__cookie(s, fn) : (__u64)fn | BS_UCOOKIE_STACK;
	if (a && (a->flags & t->wraps_flag))
		c |= BS_UCOOKIE_WRAPS;
	if (a && (a->flags & t->wrapped_flag))
		c |= BS_UCOOKIE_WRAPPED;
	return c;
}

int ucall_table__has_byref(const struct ucall_table *t)
{
	for (__u32 fn = 0; fn < t->napis; fn++)
		if (BS_UCOOKIE_BYREF(ucall_api__cookie(t, fn)))
			return 1;
	return 0;
}

int ucall_table__check(const struct ucall_table *t, char *err, size_t len)
{
	struct ucall_spec s;
	char why[192];

#define FAIL(...) return snprintf(err, len, __VA_ARGS__), -EINVAL
	if (t->napis > 0x1000)
		FAIL("%s: %u entries: fn has 12 bits", t->family, t->napis);
	for (__u32 i = 0; i < t->napis; i++) {
		const struct ucall_api *a = &t->apis[i];

		if (!a->name || !a->name[0])
			FAIL("%s: entry %u has no name", t->family, i);
		for (__u32 j = 0; j < i; j++)
			if (!strcmp(t->apis[j].name, a->name))
				FAIL("%s: listed twice (%u, %u)", a->name, j, i);
		if (!a->args)
			FAIL("%s: no argument spec", a->name);
		if (ucall_spec__compile(a->args, t->keys, t->nkeys, &s, why, sizeof(why)) ||
		    (t->check && t->check(a, &s, why, sizeof(why))))
			FAIL("%s: %s", a->name, why);
	}
#undef FAIL
	return 0;
}

int ucall_field__value(const struct bs_hdr *rec, const struct ucall_spec *s,
		       const struct ucall_field *f, __u64 *v)
{
	const struct bs_ucall *r = (const void *)rec;
	__u32 size = ucall_type_size[f->type], at, len = r->deref_len;

	switch (f->src) {
	case UCALL_SRC_WORD:
		*v = r->args[f->word];
		break;
	case UCALL_SRC_OUT:
		*v = r->out;
		break;
	case UCALL_SRC_CONST:
		*v = f->konst;
		break;
	case UCALL_SRC_AT:
		at = f->off - s->copy_off8 * 8u;
		if (!size || size > 8 || rec->size < sizeof(*r) + len || at + size > len)
			return 0;
		*v = 0;
		memcpy(v, (const __u8 *)(r + 1) + at, size); /* little-endian: the low bytes */
		break;
	default:
		return 0;
	}
	if (f->type == UCALL_T_S32)
		*v = (__u64)(__s64)(__s32)*v; /* a C int: the low half of its word */
	else if (size && size < 8)
		*v &= (1ull << 8 * size) - 1; /* u32, u16, u8: the word's low bits */
	return 1;
}

void ucall_table__name_event(const struct ucall_table *t, __u32 fn, struct event *ev)
{
	const struct ucall_api *a = ucall_table__api(t, fn);

	if (a) {
		ev->name = ucall_api__shown(a);
		return;
	}
	snprintf(ev->namebuf, sizeof(ev->namebuf), "%s_fn_%u", t->family, fn);
	ev->name = ev->namebuf;
}

void ucall_record__values(const struct ucall_table *t, const struct bs_hdr *rec, int ok, __u64 *v,
			  __u64 *have)
{
	const struct bs_ucall *r = (const void *)rec;
	const struct ucall_spec *s;
	struct ucall_spec tmp;

	if (!ucall_table__api(t, r->fn))
		return;
	s = ucall_table__spec(t, r->fn, &tmp);
	for (int i = 0; i < s->nfields; i++) {
		const struct ucall_field *f = &s->f[i];

		if (f->written && !ok)
			continue; /* nothing written */
		if (ucall_field__value(rec, s, f, &v[f->key]))
			*have |= 1ull << f->key;
	}
}
