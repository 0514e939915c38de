// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Sites of mem's records and the columns that name them (mem_site.h). */
#include <stdio.h>
#include <stdlib.h>
#include "array.h"
#include "frame_sum.h"
#include "hmap.h"
#include "mem.h"
#include "mem_site.h"
#include "stack_format.h"
#include "table.h"
#include "trace_model.h"

struct mem_sites {
	struct hmap *by_stack;		/* (stack id, 0) -> site */
	struct hmap *by_frame;		/* stack_frame__key -> site */
	const struct bs_frame **frames; /* [site]: the model's; [0] = NULL */
	size_t n, cap;
};

struct mem_sites *mem_sites__new(void)
{
	struct mem_sites *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->by_stack = hmap__new(sizeof(__u32));
	s->by_frame = hmap__new(sizeof(__u32));
	if (!s->by_stack || !s->by_frame ||
	    array__grow((void **)&s->frames, 0, &s->cap, sizeof(*s->frames))) {
		mem_sites__free(s);
		return NULL;
	}
	s->frames[s->n++] = NULL;
	return s;
}

void mem_sites__free(struct mem_sites *s)
{
	if (!s)
		return;
	hmap__free(s->by_stack);
	hmap__free(s->by_frame);
	free(s->frames);
	free(s);
}

/* The site of frame F, numbered when first met: 0 when out of memory. */
static __u32 site_of_frame(struct mem_sites *s, const struct bs_frame *f)
{
	__u64 key[2];
	__u32 *site;

	stack_frame__key(f, key);
	site = hmap__get(s->by_frame, (struct hkey){ key[0], key[1] }, 1);
	if (!site)
		return 0;
	if (!*site) {
		if (array__grow((void **)&s->frames, s->n, &s->cap, sizeof(*s->frames))) {
			hmap__del(s->by_frame, (struct hkey){ key[0], key[1] });
			return 0;
		}
		s->frames[s->n] = f;
		*site = (__u32)s->n++;
	}
	return *site;
}

__u32 mem_sites__of(struct mem_sites *s, const struct trace_model *m, const struct bs_hdr *rec)
{
	const struct trace_stack *st = trace_model__event_stack(m, rec);
	const struct bs_frame *f;
	__u32 *site, found;

	if (!st)
		return 0;
	site = hmap__get(s->by_stack, (struct hkey){ st->id, 0 }, 0);
	if (site)
		return *site;
	f = frame_sum__site(st);
	found = f ? site_of_frame(s, f) : 0;
	site = hmap__get(s->by_stack, (struct hkey){ st->id, 0 }, 1);
	if (site)
		*site = found;
	return found;
}

const struct bs_frame *mem_sites__frame(const struct mem_sites *s, __u32 site)
{
	return site < s->n ? s->frames[site] : NULL;
}

int mem_site__set(struct table *t, int at, const struct mem_sites *s, __u32 site,
		  const struct trace_model *m, const char *none)
{
	const struct bs_frame *f = mem_sites__frame(s, site);
	char buf[512];

	if (!f) {
		table__set_str(t, at + MEM_SITE_FUNC, none);
		return 1;
	}
	table__set_str(t, at + MEM_SITE_FUNC, stack_frame__func(f, m, buf, sizeof(buf)));
	table__set_str(t, at + MEM_SITE_FILE, stack_frame__file(f, m));
	table__set_u64(t, at + MEM_SITE_LINE, f->kind == BS_FRAME_PYTHON ? f->line : 0);
	return 0;
}

void mem_who__set(struct table *t, int at, const struct trace_model *m, __u32 pid, __s16 device)
{
	char dev[16];

	table__set_u64(t, at + MEM_WHO_PID, pid);
	table__set_str(t, at + MEM_WHO_PROCESS, trace_model__process_name(m, pid));
	table__set_str(t, at + MEM_WHO_DEVICE, mem_device_name(device, dev, sizeof(dev)));
}
