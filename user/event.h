/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A decoded event: the format-neutral form every output (dump's NDJSON, the exports) is
 * written from. Families turn their records into this in their decoders.
 */
#ifndef BPFSIGHT_EVENT_H
#define BPFSIGHT_EVENT_H

#include <linux/types.h>

struct bs_hdr; /* records.h */

#define EVENT_MAX_ARGS 16

enum event_arg_kind {
	EVENT_ARG_U64,
	EVENT_ARG_S64,
	EVENT_ARG_HEX, /* u64 printed as "0x..." */
	EVENT_ARG_STR,
};

struct event_arg {
	const char *key;
	enum event_arg_kind kind;
	union {
		__u64 u;
		__s64 s;
		const char *str; /* must outlive the event (record, model, or event.strbuf) */
	};
};

struct event {
	__u64 ts;
	__u64 dur; /* 0 for instants */
	__u32 pid;
	__u32 tid;
	const char *kind; /* e.g. "syscall", "offcpu", "fork" */
	const char *name; /* e.g. "nanosleep" */
	__u32 nargs;
	struct event_arg args[EVENT_MAX_ARGS];
	char namebuf[64];  /* for names a decoder formats */
	char strbuf[256];  /* for string args a decoder formats */
	__u32 strbuf_used;
};

void event__init(struct event *ev, const struct bs_hdr *rec, const char *kind);
void event__arg_u64(struct event *ev, const char *key, __u64 v);
void event__arg_s64(struct event *ev, const char *key, __s64 v);
void event__arg_hex(struct event *ev, const char *key, __u64 v);
void event__arg_str(struct event *ev, const char *key, const char *s);
/* Copy a fixed-size, maybe unterminated char array (comm) into strbuf and add it. */
void event__arg_strn(struct event *ev, const char *key, const char *s, __u32 n);

struct json; /* json.h */
/* Write EV's args as one JSON object value (dump, Chrome export). */
void event__json_args(const struct event *ev, struct json *j);

#endif /* BPFSIGHT_EVENT_H */
