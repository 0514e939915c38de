// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Building struct event: bounded everywhere, because decoders run on untrusted records. */
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
		}
	}
	json__end_object(j);
}
