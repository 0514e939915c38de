// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of the nvtx family: ranges, marks and names as docs/NVTX.md describes them for
 * dump. BEGIN records (sync mode) are metadata for --capture-range=nvtx: the RANGE record that
 * follows when the range ends is the event.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "nvtx.h"
#include "nvtx_decode.h"

const char *nvtx_domain_name(const struct trace_model *m, __u32 domain_id)
{
	const char *name = domain_id ? trace_model__string(m, domain_id) : NULL;

	return name ? name : "";
}

const char *nvtx_message(const struct trace_model *m, __u32 name_id)
{
	const char *name = name_id ? trace_model__string(m, name_id) : NULL;

	return name ? name : "";
}

/* "#AARRGGBB", as nsys shows an ARGB color. */
static void arg_color(struct event *ev, __u32 argb)
{
	char buf[12];

	snprintf(buf, sizeof(buf), "#%08X", argb);
	event__arg_strn(ev, "color", buf, sizeof(buf));
}

/* The payload in the type the application gave it; nothing when it gave none. */
static void arg_payload(struct event *ev, __u16 flags, __u64 raw)
{
	__u32 lo = (__u32)raw;
	double d;
	float f;

	switch (flags & BS_NVTX_PAYLOAD_MASK) {
	case BS_NVTX_PAYLOAD_U64:
		event__arg_u64(ev, "payload", raw);
		break;
	case BS_NVTX_PAYLOAD_I64:
		event__arg_s64(ev, "payload", (__s64)raw);
		break;
	case BS_NVTX_PAYLOAD_F64:
		memcpy(&d, &raw, sizeof(d));
		event__arg_double(ev, "payload", d);
		break;
	case BS_NVTX_PAYLOAD_U32:
		event__arg_u64(ev, "payload", lo);
		break;
	case BS_NVTX_PAYLOAD_I32:
		event__arg_s64(ev, "payload", (__s32)lo);
		break;
	case BS_NVTX_PAYLOAD_F32:
		memcpy(&f, &lo, sizeof(f));
		event__arg_double(ev, "payload", f);
		break;
	default:
		break;
	}
}

static int decode_range(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_nvtx_range *r = (const void *)rec;
	int pushpop = !!(r->flags & BS_NVTX_PUSHPOP);

	ev->name = nvtx_message(m, r->name_id);
	ev->dur = r->dur;
	event__arg_str(ev, "domain", nvtx_domain_name(m, r->domain_id));
	event__arg_str(ev, "style", pushpop ? "PushPop" : "StartEnd");
	if (pushpop)
		event__arg_u64(ev, "depth", r->depth);
	event__arg_u64(ev, "end_tid", r->end_tid);
	if (!pushpop)
		event__arg_u64(ev, "range_id", r->range_id);
	event__arg_u64(ev, "category", r->category);
	if (r->flags & BS_NVTX_COLOR)
		arg_color(ev, r->color);
	arg_payload(ev, r->flags, r->payload);
	if (r->flags & BS_NVTX_OPEN)
		event__arg_bool(ev, "open", 1);
	if (r->flags & BS_NVTX_REGISTERED)
		event__arg_bool(ev, "registered", 1);
	return 1;
}

static int decode_mark(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_nvtx_mark *k = (const void *)rec;

	ev->name = nvtx_message(m, k->name_id);
	event__arg_str(ev, "domain", nvtx_domain_name(m, k->domain_id));
	event__arg_u64(ev, "category", k->category);
	if (k->flags & BS_NVTX_COLOR)
		arg_color(ev, k->color);
	arg_payload(ev, k->flags, k->payload);
	return 1;
}

static int decode_name(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_nvtx_name *n = (const void *)rec;

	ev->name = nvtx_message(m, n->name_id);
	event__arg_str(ev, "what",
		       n->kind == BS_NVTX_NAME_THREAD	  ? "thread"
		       : n->kind == BS_NVTX_NAME_CATEGORY ? "category"
							  : "unknown");
	event__arg_u64(ev, "key", n->key);
	event__arg_str(ev, "domain", nvtx_domain_name(m, n->domain_id));
	return 1;
}

/* The instants; ranges are drawn by the nvtx export hooks (export_*_nvtx.c). */
static const struct export_style mark_style = { .cat = "user_annotation", .ph = 'i' };
static const struct export_style name_style = { .cat = "nvtx", .ph = 'i' };

/* nvtxNameOsThread names the thread KEY: the model keeps it over the thread's comm. */
void nvtx_name_observe(struct trace_model *m, const struct bs_hdr *rec)
{
	const struct bs_nvtx_name *n = (const void *)rec;

	if (rec->type != BS_REC_NVTX_NAME || rec->size < sizeof(*n) ||
	    n->kind != BS_NVTX_NAME_THREAD || !n->key || n->key > 0xffffffffull)
		return;
	trace_model__name_thread(m, (__u32)n->key, trace_model__string(m, n->name_id));
}

/* An NVTX_NAME's key is a thread id when it names a thread (bpfsight merge). */
static void rebase_name(struct bs_hdr *rec, const struct rec_rebase *rb)
{
	struct bs_nvtx_name *n = (void *)rec;

	if (n->kind == BS_NVTX_NAME_THREAD && n->key <= 0xffffffffull)
		n->key = rb->task(rb, (__u32)n->key);
}

#define NAMES(t) .string_offs = { offsetof(struct t, name_id), offsetof(struct t, domain_id) }

const struct rec_decoder nvtx_decoders[] = {
	{ BS_REC_NVTX_RANGE, sizeof(struct bs_nvtx_range), "nvtx_range", decode_range,
	  NAMES(bs_nvtx_range), .task_offs = { offsetof(struct bs_nvtx_range, end_tid) },
	  .span = 1 },
	{ BS_REC_NVTX_MARK, sizeof(struct bs_nvtx_mark), "nvtx_mark", decode_mark, &mark_style,
	  NAMES(bs_nvtx_mark) },
	{ BS_REC_NVTX_NAME, sizeof(struct bs_nvtx_name), "nvtx_name", decode_name, &name_style,
	  NAMES(bs_nvtx_name), .rebase = rebase_name },
	/* A range began: --capture-range=nvtx's signal, not an event (its RANGE record is). */
	{ BS_REC_NVTX_BEGIN, sizeof(struct bs_nvtx_begin), "nvtx_begin", family__decode_meta,
	  NAMES(bs_nvtx_begin) },
	{ 0 },
};
