// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * torch's input-bound rule fed from a server (stats --from, torch_input.h): what the rule
 * reads of each stack goes with the stack's row (the export model's EX_ROWS, torch_export.c:
 * `loader`, the worker's `wfunc` and `wsite`, beside the `own` line every user stack's row
 * has), and the
 * server sums the off-CPU time and CPU samples by thread and stack (torch_input_sql.c's
 * torch_input_waits). Here those sums become the rule's rows as its ADD would have: a
 * DataLoader worker's main thread's blocks and samples at its site, another thread's off-CPU
 * time inside the DataLoader's __next__ at its own line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_model.h"
#include "table.h"
#include "torch_input.h"
#include "trace_model.h"

void torch_input__stack_keys(struct ex_sink *x, void *st, const struct trace_stack *s, int kernel)
{
	const struct trace_model *m = x->model;
	const struct bs_frame *site;
	char text[INPUT_SITE_LEN], func[INPUT_FUNC_LEN];

	(void)st;
	(void)kernel;
	if (!s)
		return;
	if (torch_input__in_loader(s, m))
		ex_key(x, "loader", EX_V_UINT(1));
	site = torch_input__worker_site(s, m);
	if (!site)
		return;
	torch_input__site(site, m, text, func);
	ex_key(x, "wfunc", EX_V_TEXT(func));
	ex_key(x, "wsite", EX_V_TEXT(text));
}

/* Row R's string in column C ("" for none). */
static const char *str_at(const struct table *t, int r, int c)
{
	const char *s = c >= 0 ? table__get_str(t, r, c) : NULL;

	return s ? s : "";
}

struct input_row *torch_input__rows_of(const struct table *t, const struct trace_model *m,
				       size_t *n)
{
	int cp = table__col(t, "pid"), ct = table__col(t, "tid"), cs = table__col(t, "sample"),
	    cl = table__col(t, "loader"), co = table__col(t, "own"), cf = table__col(t, "wfunc"),
	    cw = table__col(t, "wsite"), cn = table__col(t, "ns"), cc = table__col(t, "count");
	struct input_row *rows = calloc((size_t)table__nrows(t) + 1, sizeof(*rows));

	*n = 0;
	for (int r = 0; rows && r < table__nrows(t); r++) {
		__u32 pid = (__u32)table__get_u64(t, r, cp), tid = (__u32)table__get_u64(t, r, ct);
		int sample = table__get_u64(t, r, cs) != 0;
		struct input_row *w = &rows[*n];

		if (torch_input__is_worker(m, pid, tid)) {
			if (!table__is_set(t, r, cw))
				continue; /* no site: its ADD takes nothing of it */
			w->what = sample ? INPUT_SAMPLES : INPUT_BLOCKED;
			snprintf(w->func, sizeof(w->func), "%s", str_at(t, r, cf));
			snprintf(w->site, sizeof(w->site), "%s", str_at(t, r, cw));
			/* a sample counts one, as ADD adds it */
			w->ns = sample ? table__get_u64(t, r, cc) : table__get_u64(t, r, cn);
		} else {
			if (sample || !table__get_u64(t, r, cl) || !table__is_set(t, r, co))
				continue;
			w->what = INPUT_WAIT;
			snprintf(w->site, sizeof(w->site), "%s", str_at(t, r, co));
			w->ns = table__get_u64(t, r, cn);
		}
		w->thread = (__u64)pid << 32 | tid;
		w->count = table__get_u64(t, r, cc);
		(*n)++;
	}
	return rows;
}
