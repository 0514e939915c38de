// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pyfunc_not_found: each --python-functions entry a process never found, and why, in words a
 * user can act on ("__main__ has no trian_step; did you mean train_step?", "the module
 * trainer was never imported"), from the shim's notes at the recording's end (a STATUS
 * BS_SHIM_EV_PYFUNC whose cupti_result is BS_PYFUNC_NEVER_FOUND, bpf/pyfunc_records.h). A
 * preset's entries are not among them: a preset names libraries a job may not use. `info`
 * shows it too: a trace without the calls a user asked for says why first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "pyfunc_read.h"
#include "table.h"

#define NEVER_FOUND "never found: "

struct missing {
	__u32 pid;
	char *function, *why;
};

struct missing_sum {
	struct missing *v;
	size_t n, cap;
	int err;
};

static void *missing__new(void)
{
	return calloc(1, sizeof(struct missing_sum));
}

static void missing__free(void *vs)
{
	struct missing_sum *s = vs;

	for (size_t i = 0; s && i < s->n; i++) {
		free(s->v[i].function);
		free(s->v[i].why);
	}
	if (s)
		free(s->v);
	free(s);
}

/* A qualname holds no ": ": the first one ends the name. */
int pyfunc_never_found__split(const char *text, char **function, char **why)
{
	const char *name = text + strlen(NEVER_FOUND), *sep;

	if (strncmp(text, NEVER_FOUND, strlen(NEVER_FOUND)) || !(sep = strstr(name, ": ")))
		return -EINVAL;
	*function = strndup(name, (size_t)(sep - name));
	*why = strdup(sep + 2);
	if (*function && *why)
		return 0;
	free(*function);
	free(*why);
	return -ENOMEM;
}

static void missing__add(void *vs, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_shim_status *st = (const void *)rec;
	struct missing_sum *s = vs;
	const char *text;
	char *function = NULL, *why = NULL;
	size_t i;

	if (s->err || rec->type != BS_REC_SHIM_STATUS || rec->size < sizeof(*st) ||
	    st->event != BS_SHIM_EV_PYFUNC || st->cupti_result != BS_PYFUNC_NEVER_FOUND ||
	    !st->detail_id || !(text = trace_model__string(m, st->detail_id)))
		return;
	if (pyfunc_never_found__split(text, &function, &why))
		return;
	/* The last word on each (an exit after a drain says it again, maybe better). */
	for (i = 0; i < s->n; i++)
		if (s->v[i].pid == rec->pid && !strcmp(s->v[i].function, function))
			break;
	if (i == s->n) {
		if (array__grow((void **)&s->v, s->n, &s->cap, sizeof(*s->v))) {
			s->err = -ENOMEM;
			free(function);
			free(why);
			return;
		}
		s->v[s->n++] = (struct missing){ rec->pid, function, why };
		return;
	}
	free(function);
	free(s->v[i].why);
	s->v[i].why = why;
}

enum { C_PID, C_FUNCTION, C_WHY, NCOLS };

static const struct table_col cols[NCOLS] = {
	[C_PID] = { "pid", "PID", TABLE_U64 },
	[C_FUNCTION] = { "function", "Function", TABLE_STR },
	[C_WHY] = { "why", "Why", TABLE_STR },
};

static int missing__emit(void *vs, const struct trace_model *m, struct table *t)
{
	struct missing_sum *s = vs;

	(void)m;
	if (s->err)
		return s->err;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < s->n; i++) {
		table__row(t);
		table__set_u64(t, C_PID, s->v[i].pid);
		table__set_str(t, C_FUNCTION, s->v[i].function);
		table__set_str(t, C_WHY, s->v[i].why);
	}
	if (s->n)
		table__add_note(
			t, "--python-functions names these: none of their calls could be "
			   "recorded. A preset's functions a job does not use are not listed.");
	return table__err(t);
}

const struct report pyfunc_not_found = {
	.name = "pyfunc_not_found",
	.desc = "Python functions never found: why (--python-functions)",
	.new = missing__new,
	.add = missing__add,
	.emit = missing__emit,
	.free = missing__free,
	.info = &(const struct report_info){ "Python functions never found", "pyfunc_not_found" },
};
