// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Building struct event: bounded everywhere, because decoders run on untrusted records. */
#include <stdio.h>
#include <string.h>
#include "event.h"
#include "json.h"
#include "records.h"

void event__init(struct event *ev, const struct bs_hdr *rec, const char *kind)
{
	/* The fixed part only: zeroing 300+ bytes of buffers per event shows in dump's profile. */
	ev->ts = rec ? rec->ts : 0;
	ev->dur = 0;
	ev->pid = rec ? rec->pid : 0;
	ev->tid = rec ? rec->tid : 0;
	ev->kind = kind;
	ev->name = kind;
	ev->nargs = 0;
	ev->stack = NULL;
	ev->holder_stack = NULL;
	ev->stack_in_kernel = 0;
	ev->stack_id = 0;
	ev->namebuf[0] = 0;
	ev->strbuf[0] = 0;
	ev->strbuf_used = 0;
}

static struct event_arg *event__new_arg(struct event *ev, const char *key, enum event_arg_kind kind)
{
	struct event_arg *a;

	/* Dropping the extra args keeps the event printable; decoders stay within the limit. */
	if (ev->nargs >= EVENT_MAX_ARGS)
		return NULL;
	a = &ev->args[ev->nargs++];
	a->key = key;
	a->kind = kind;
	return a;
}

void event__arg_u64(struct event *ev, const char *key, __u64 v)
{
	struct event_arg *a = event__new_arg(ev, key, EVENT_ARG_U64);

	if (a)
		a->u = v;
}

void event__arg_s64(struct event *ev, const char *key, __s64 v)
{
	struct event_arg *a = event__new_arg(ev, key, EVENT_ARG_S64);

	if (a)
		a->s = v;
}

void event__arg_hex(struct event *ev, const char *key, __u64 v)
{
	struct event_arg *a = event__new_arg(ev, key, EVENT_ARG_HEX);

	if (a)
		a->u = v;
}

void event__arg_str(struct event *ev, const char *key, const char *s)
{
	struct event_arg *a = event__new_arg(ev, key, EVENT_ARG_STR);

	if (a)
		a->str = s ? s : "";
}

void event__arg_bool(struct event *ev, const char *key, int v)
{
	struct event_arg *a = event__new_arg(ev, key, EVENT_ARG_BOOL);

	if (a)
		a->u = !!v;
}

void event__arg_double(struct event *ev, const char *key, double v)
{
	struct event_arg *a = event__new_arg(ev, key, EVENT_ARG_DOUBLE);

	if (a)
		a->d = v;
}

void event__arg_dim3(struct event *ev, const char *key, const __u32 *xyz)
{
	struct event_arg *a = event__new_arg(ev, key, EVENT_ARG_DIM3);

	if (a)
		memcpy(a->dim, xyz, sizeof(a->dim));
}

void event__arg_flags(struct event *ev, const char *key, __u32 bits, const char *const *names,
		      __u32 nnames)
{
	struct event_arg *a = event__new_arg(ev, key, EVENT_ARG_FLAGS);

	if (a)
		a->flags = (struct event_flags){ bits, names ? nnames : 0, names };
}

const char *event_flags__name(const struct event_flags *f, __u32 bit, char *buf, size_t len)
{
	if (bit < f->nnames && f->names[bit])
		return f->names[bit];
	snprintf(buf, len, "bit_%u", bit);
	return buf;
}

const struct event_arg *event__arg(const struct event *ev, const char *key)
{
	for (__u32 i = 0; i < ev->nargs && i < EVENT_MAX_ARGS; i++)
		if (!strcmp(ev->args[i].key, key))
			return &ev->args[i];
	return NULL;
}

void event__arg_strn(struct event *ev, const char *key, const char *s, __u32 n)
{
	__u32 room, len;
	char *dst;

	if (ev->strbuf_used >= sizeof(ev->strbuf))
		ev->strbuf_used = sizeof(ev->strbuf) - 1;
	room = sizeof(ev->strbuf) - ev->strbuf_used - 1; /* keep one byte for the NUL */
	len = s ? strnlen(s, n) : 0;
	if (len > room)
		len = room; /* truncate rather than overflow: the arg is still a valid string */
	dst = ev->strbuf + ev->strbuf_used;
	if (len)
		memcpy(dst, s, len);
	dst[len] = 0;
	ev->strbuf_used += len + 1;
	event__arg_str(ev, key, dst);
}

void event__json_args(const struct event *ev, struct json *j)
{
	char hex[24];

	json__begin_object(j);
	for (__u32 i = 0; i < ev->nargs && i < EVENT_MAX_ARGS; i++) {
		const struct event_arg *a = &ev->args[i];

		json__key(j, a->key);
		switch (a->kind) {
		case EVENT_ARG_U64:
			json__u64(j, a->u);
			break;
		case EVENT_ARG_S64:
			json__s64(j, a->s);
			break;
		case EVENT_ARG_HEX:
			snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)a->u);
			json__str(j, hex);
			break;
		case EVENT_ARG_STR:
			json__str(j, a->str);
			break;
		case EVENT_ARG_BOOL:
			json__bool(j, (int)a->u);
			break;
		case EVENT_ARG_DOUBLE:
			json__double_g(j, a->d);
			break;
		case EVENT_ARG_DIM3:
			json__begin_array(j);
			for (int d = 0; d < 3; d++)
				json__u64(j, a->dim[d]);
			json__end_array(j);
			break;
		case EVENT_ARG_FLAGS:
			json__begin_array(j);
			for (__u32 b = 0; b < 32; b++)
				if (a->flags.bits & (1u << b))
					json__str(j, event_flags__name(&a->flags, b, hex,
								       sizeof(hex)));
			json__end_array(j);
			break;
		}
	}
	json__end_object(j);
}
