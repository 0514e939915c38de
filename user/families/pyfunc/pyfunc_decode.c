// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of the pyfunc family: a call piece, as docs/PYFUNC.md describes it for dump. */
#include <stddef.h>
#include "pyfunc_read.h"

static const char *const ends[] = {
	[BS_PYFUNC_END_RETURN] = "return",
	[BS_PYFUNC_END_UNWIND] = "unwind",
	[BS_PYFUNC_END_YIELD] = "yield",
	[BS_PYFUNC_END_OPEN] = "open",
};

const char *pyfunc_end_name(__u8 end)
{
	return end < sizeof(ends) / sizeof(ends[0]) ? ends[end] : "unknown";
}

int pyfunc_call__valid(const struct bs_hdr *rec)
{
	return rec->type == BS_REC_PYFUNC_CALL && rec->size >= sizeof(struct bs_pyfunc_call);
}

static int decode_call(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_pyfunc_call *r = (const void *)rec;
	const char *name = r->func_id ? trace_model__string(m, r->func_id) : NULL;
	const char *file = r->file_id ? trace_model__string(m, r->file_id) : NULL;
	const char *domain = r->domain_id ? trace_model__string(m, r->domain_id) : NULL;

	ev->name = name ? name : "";
	ev->dur = r->dur;
	event__arg_str(ev, "file", file ? file : "");
	event__arg_u64(ev, "line", r->line);
	if (domain && *domain)
		event__arg_str(ev, "domain", domain);
	event__arg_u64(ev, "depth", r->depth);
	event__arg_str(ev, "end", pyfunc_end_name(r->end));
	if (r->flags & BS_PYFUNC_RESUMED)
		event__arg_bool(ev, "resumed", 1);
	/* already running when tracing began: ts is then */
	if (r->flags & BS_PYFUNC_BEGAN_BEFORE)
		event__arg_bool(ev, "began_before", 1);
	return 1;
}

/*
 * Kineto's category for Python calls (its Python tracer's). Perfetto: a child track of the
 * thread, as torch ops: the shim's clock is CLOCK_MONOTONIC to a fraction of a microsecond,
 * so a call that returns right after a CUDA call it made could cross that call's end on a
 * shared track; on their own track the calls nest exactly, and with the thread's other
 * tracks by time.
 */
static const struct export_style call_style = {
	.cat = "python_function",
	.ph = 'X',
	.track = "python functions",
	.desc = "Calls of the Python functions --python-functions names, nested by time",
};

#define OFF(t, f) offsetof(struct t, f)

const struct rec_decoder pyfunc_decoders[] = {
	{ BS_REC_PYFUNC_CALL, sizeof(struct bs_pyfunc_call), "pyfunc_call", decode_call,
	  &call_style,
	  .string_offs = { OFF(bs_pyfunc_call, func_id), OFF(bs_pyfunc_call, file_id),
			   OFF(bs_pyfunc_call, domain_id) },
	  .span = 1 },
	{ 0 },
};
