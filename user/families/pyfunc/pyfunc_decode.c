// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of the pyfunc family: a named function's call (a piece of it), for dump. */
#include <stddef.h>
#include "pyfunc.h"

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

static int decode_call(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_pyfunc_call *r = (const void *)rec;
	const char *func = r->func_id ? trace_model__string(m, r->func_id) : NULL;
	const char *file = r->file_id ? trace_model__string(m, r->file_id) : NULL;
	const char *domain = r->domain_id ? trace_model__string(m, r->domain_id) : NULL;

	ev->name = func ? func : "";
	ev->dur = r->dur;
	event__arg_str(ev, "file", file ? file : "");
	event__arg_u64(ev, "line", r->line);
	event__arg_u64(ev, "depth", r->depth);
	event__arg_str(ev, "end", pyfunc_end_name(r->end));
	if (r->flags & BS_PYFUNC_RESUMED)
		event__arg_bool(ev, "resumed", 1);
	if (domain)
		event__arg_str(ev, "domain", domain);
	return 1;
}

static const struct export_style call_style = {
	.cat = "python_function",
	.ph = 'X',
	.track = "python functions",
	.desc = "Calls of the Python functions --python-functions names, nested by time",
};

#define OFF(f) offsetof(struct bs_pyfunc_call, f)

const struct rec_decoder pyfunc_decoders[] = {
	{ BS_REC_PYFUNC_CALL, sizeof(struct bs_pyfunc_call), "pyfunc_call", decode_call,
	  &call_style, .string_offs = { OFF(func_id), OFF(file_id), OFF(domain_id) } },
	{ 0 },
};
