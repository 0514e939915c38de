/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A decoded event: the format-neutral form every output (dump's NDJSON, the exports) is
 * written from. Families turn their records into this in their decoders.
 */
#ifndef BPFSIGHT_EVENT_H
#define BPFSIGHT_EVENT_H

#include <stddef.h>
#include <linux/types.h>

struct bs_hdr;	    /* records.h */
struct trace_stack; /* trace_model.h */

/* A GPU metrics sample has one per metric (bpf/gpumetrics_records.h) and its device. */
#define EVENT_MAX_ARGS 40

enum event_arg_kind {
	EVENT_ARG_U64,
	EVENT_ARG_S64,
	EVENT_ARG_HEX, /* u64 printed as "0x..." */
	EVENT_ARG_STR,
	EVENT_ARG_BOOL,	  /* u: 0 or 1 */
	EVENT_ARG_DOUBLE, /* d: written as the shortest text that reads back the same */
	EVENT_ARG_DIM3,	  /* dim[3]: a kernel's grid or block, written as [x, y, z] */
	EVENT_ARG_FLAGS,  /* flags: the names of the set bits, written as a list */
};

/* EVENT_ARG_FLAGS: bit i is called names[i] (NULL or past nnames: "bit_i"). */
struct event_flags {
	__u32 bits;
	__u32 nnames;
	const char *const *names;
};

struct event_arg {
	const char *key;
	enum event_arg_kind kind;
	union {
		__u64 u;
		__s64 s;
		const char *str; /* must outlive the event (record, model, or event.strbuf) */
		double d;
		__u32 dim[3];
		struct event_flags flags; /* names must outlive the event (static tables) */
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
	const struct trace_stack *stack;	/* where in the code (the model's), or NULL */
	const struct trace_stack *holder_stack; /* gil_wait: the GIL holder's code, or NULL */
	/* The stack goes on into the kernel (a sample taken in kernel code): a "[kernel]" leaf. */
	__u8 stack_in_kernel;
	/*
	 * A sample's stack id as its record names it (0: none), also when the trace lacks that
	 * stack: the sample exports count by it.
	 */
	__u32 stack_id;
	char namebuf[64]; /* for names a decoder formats */
	char strbuf[512]; /* for string args a decoder formats */
	__u32 strbuf_used;
};

void event__init(struct event *ev, const struct bs_hdr *rec, const char *kind);
void event__arg_u64(struct event *ev, const char *key, __u64 v);
void event__arg_s64(struct event *ev, const char *key, __s64 v);
void event__arg_hex(struct event *ev, const char *key, __u64 v);
void event__arg_str(struct event *ev, const char *key, const char *s);
void event__arg_bool(struct event *ev, const char *key, int v);
void event__arg_double(struct event *ev, const char *key, double v);
void event__arg_dim3(struct event *ev, const char *key, const __u32 *xyz);
void event__arg_flags(struct event *ev, const char *key, __u32 bits, const char *const *names,
		      __u32 nnames);
/* The name of bit BIT of a FLAGS arg: its table's, or "bit_N" formatted into BUF. */
const char *event_flags__name(const struct event_flags *f, __u32 bit, char *buf, size_t len);
/* EV's argument KEY, NULL when the decoder did not give it. */
const struct event_arg *event__arg(const struct event *ev, const char *key);
/* Copy a fixed-size, maybe unterminated char array (comm) into strbuf and add it. */
void event__arg_strn(struct event *ev, const char *key, const char *s, __u32 n);

struct json; /* json.h */
/* Write EV's args as one JSON object value (dump, Chrome export). */
void event__json_args(const struct event *ev, struct json *j);

#endif /* BPFSIGHT_EVENT_H */
