// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The family registry: adding a family is one line here plus its own files. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "family.h"
#include "proc.h"
#include "osrt.h"
#include "sched.h"
#include "gil.h"
#include "cuda.h"
#include "nccl.h"
#include "gpu.h"
#include "nvtx.h"
#include "cpu.h"

/*
 * Families attach in this order. cpu comes before gil: the uprobe manager tells a listener
 * only of the files examined after it joined, and gil examines interpreters as it attaches.
 */
// clang-format off
const struct family *const families[] = {
	&family_proc, /* first: always on, names what the others record */
	&family_osrt, &family_sched, &family_cpu, &family_gil, &family_cuda, &family_nccl,
	&family_gpu, &family_nvtx, NULL,
};
// clang-format on

const struct family *family__find(const char *name)
{
	for (int i = 0; families[i]; i++)
		if (!strcmp(families[i]->name, name))
			return families[i];
	return NULL;
}

const struct rec_decoder *family__decoder(__u16 type)
{
	for (int i = 0; families[i]; i++)
		for (const struct rec_decoder *d = families[i]->decoders; d && d->type; d++)
			if (d->type == type)
				return d;
	return NULL;
}

int family__decode(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct rec_decoder *d = family__decoder(rec->type);

	if (!d)
		return 0;
	if (rec->size < d->min_size)
		return -EINVAL;
	event__init(ev, rec, d->kind);
	return d->decode(rec, m, ev);
}

int family__decode_meta(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	return 0;
}

int family__kind_is_event(const char *kind)
{
	for (int i = 0; families[i]; i++)
		for (const struct rec_decoder *d = families[i]->decoders; d && d->type; d++)
			if (d->kind && !strcmp(d->kind, kind) && d->decode != family__decode_meta)
				return 1;
	return 0;
}

void family__list_selectable(char *buf, __u32 len)
{
	__u32 used = 0;

	buf[0] = 0;
	for (int i = 0; families[i] && used < len; i++) {
		if (families[i]->flags & FAMILY_ALWAYS)
			continue;
		used += snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
				 families[i]->name);
	}
}
