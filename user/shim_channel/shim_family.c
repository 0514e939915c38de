// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The shim families of the registry, as the channel asks after them (shim_family.h). */
#include <stddef.h>
#include <string.h>
#include "family.h"
#include "family_record.h"
#include "shim_cookie.h"
#include "shim_family.h"

/* The channel's own state bits and events (bpf/shim_records.h). */
static const struct shim_name channel_states[] = {
	{ BS_SHIM_ST_CUDA_INJECTED, "cuda_injected" },
	{ BS_SHIM_ST_PTRACE_INJECTED, "ptrace_injected" },
	{ BS_SHIM_ST_PRELOADED, "preloaded" },
	{ 0 },
};

static const struct shim_name channel_events[] = {
	{ BS_SHIM_EV_ATTACH, "attach" },
	{ BS_SHIM_EV_STATE, "state" },
	{ BS_SHIM_EV_CUPTI_ERROR, "cupti_error" },
	{ BS_SHIM_EV_DRAINED, "drained" },
	{ BS_SHIM_EV_DROPPED, "dropped" },
	{ BS_SHIM_EV_EXIT, "exit" },
	{ BS_SHIM_EV_NO_SHIM, "no_shim" },
	{ BS_SHIM_EV_JOIN, "join" },
	{ 0 },
};

int shim_family__of(__u16 type, const struct shim_rec **rec)
{
	for_each_family(it) {
		const struct family_shim *s = it.f->record->shim;

		for (const struct shim_rec *r = s ? s->recs : NULL; r && r->type; r++)
			if (r->type == type) {
				if (rec)
					*rec = r;
				return it.i;
			}
	}
	return -1;
}

const struct shim_site *shim_family__stack_slot(int k, int *family)
{
	for_each_family(it) {
		const struct family_shim *s = it.f->record->shim;

		for (const struct shim_site *t = s ? s->sites : NULL; t && t->name; t++)
			if (t->stack_type && k-- == 0) {
				*family = it.i;
				return t;
			}
	}
	return NULL;
}

int shim_family__stack_site(const char *name, int *family)
{
	const struct shim_site *t;

	for (int k = 0; k < SHIM_STACK_SITES && (t = shim_family__stack_slot(k, family)); k++)
		if (!strcmp(t->name, name))
			return k;
	return -1;
}

const struct family *shim_family__channel(void)
{
	const struct family *first = NULL;

	for_each_family(it) {
		if (!it.f->record->shim)
			continue;
		if (it.f->record->shim->channel)
			return it.f;
		if (!first)
			first = it.f;
	}
	return first;
}

void shim_family__min_sizes(__u16 min_size[BS_REC_TYPE_MAX])
{
	for (int t = 0; t < BS_REC_TYPE_MAX; t++)
		min_size[t] = 0;
	min_size[BS_REC_STRING] = sizeof(struct bs_string);
	min_size[BS_REC_SHIM_STATUS] = sizeof(struct bs_shim_status);
	for_each_family(it) {
		const struct family_shim *s = it.f->record->shim;

		for (const struct shim_rec *r = s ? s->recs : NULL; r && r->type; r++)
			if (r->type < BS_REC_TYPE_MAX)
				min_size[r->type] = r->min_size;
	}
}

static void names_of(const struct shim_name *n, const char *names[32])
{
	for (; n && n->name; n++)
		if (n->value && !(n->value & (n->value - 1)))
			names[__builtin_ctz(n->value)] = n->name;
}

void shim_family__state_names(const char *names[32])
{
	for (int b = 0; b < 32; b++)
		names[b] = NULL;
	names_of(channel_states, names);
	for_each_family(it)
		if (it.f->record->shim)
			names_of(it.f->record->shim->states, names);
}

static const char *event_in(const struct shim_name *n, __u32 event)
{
	for (; n && n->name; n++)
		if (n->value == event)
			return n->name;
	return NULL;
}

const char *shim_family__event_name(__u32 event)
{
	const char *name = event_in(channel_events, event);

	for_each_family_while(fit, !name)
		if (fit.f->record->shim)
			name = event_in(fit.f->record->shim->events, event);
	return name;
}
