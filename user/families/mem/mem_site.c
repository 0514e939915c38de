// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Sites of mem's records and the columns that name them (mem_site.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "frame_sum.h"
#include "hmap.h"
#include "mem.h"
#include "mem_report.h"
#include "mem_site.h"
#include "stack_format.h"
#include "string_pool.h"
#include "table.h"
#include "trace_model.h"

const char *const mem_site_groups[] = { "stack:N", NULL };

struct mem_site {
	const struct bs_frame *own, *via; /* the model's; via NULL when none */
	__u32 text;			  /* the stack's first N frames: texts[text], 0 none */
};

struct mem_sites {
	unsigned stack_n;
	struct hmap *by_stack;	  /* (stack id, 0) -> site */
	struct hmap *by_frame;	  /* stack_frame__key -> frame number + 1 */
	struct hmap *by_key;	  /* (own | via << 32, text) frame numbers -> site */
	struct string_pool *pool; /* the stacks' texts, by id */
	char **texts;		  /* [id] */
	size_t ntexts, cap_texts;
	struct mem_site *v; /* [site]; [0] = none */
	size_t n, cap;
};

struct mem_sites *mem_sites__new(unsigned stack_n)
{
	struct mem_sites *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->stack_n = stack_n;
	s->by_stack = hmap__new(sizeof(__u32));
	s->by_frame = hmap__new(sizeof(__u32));
	s->by_key = hmap__new(sizeof(__u32));
	s->pool = string_pool__new();
	if (!s->by_stack || !s->by_frame || !s->by_key || !s->pool ||
	    array__grow((void **)&s->v, 0, &s->cap, sizeof(*s->v)) ||
	    array__grow((void **)&s->texts, 0, &s->cap_texts, sizeof(*s->texts))) {
		mem_sites__free(s);
		return NULL;
	}
	s->v[s->n++] = (struct mem_site){ 0 }; /* 0: no stack */
	s->v[s->n++] = (struct mem_site){ 0 }; /* MEM_SITE_EARLY */
	s->texts[s->ntexts++] = NULL;
	return s;
}

void mem_sites__free(struct mem_sites *s)
{
	if (!s)
		return;
	hmap__free(s->by_stack);
	hmap__free(s->by_frame);
	hmap__free(s->by_key);
	string_pool__free(s->pool);
	for (size_t i = 0; i < s->ntexts; i++)
		free(s->texts[i]);
	free(s->texts);
	free(s->v);
	free(s);
}

unsigned mem_sites__stack_n(const struct report_ask *ask)
{
	return ask && ask->group_by && !strcmp(ask->group_by, "stack") ? ask->group_n : 0;
}

/* Frame F's number (1-based: frames equal by stack_frame__key share one); 0 for NULL. */
static __u64 frame_number(struct mem_sites *s, const struct bs_frame *f)
{
	__u64 key[2];
	__u32 *at;

	if (!f)
		return 0;
	stack_frame__key(f, key);
	at = hmap__get(s->by_frame, (struct hkey){ key[0], key[1] }, 1);
	if (at && !*at)
		*at = (__u32)hmap__count(s->by_frame);
	return at ? *at : 0;
}

/* The id of ST's first stack_n Python frames as text, 0 when not grouped by them or no memory. */
static __u32 text_id(struct mem_sites *s, const struct trace_model *m, const struct trace_stack *st)
{
	char *text;
	__u32 id;
	int is_new = 0;

	if (!s->stack_n ||
	    array__grow((void **)&s->texts, s->ntexts, &s->cap_texts, sizeof(*s->texts)) ||
	    !(text = frame_sum__stack_text(st, m, s->stack_n, NULL)))
		return 0;
	id = string_pool__intern(s->pool, text, &is_new);
	if (is_new) /* ids count up from 1 as texts are added: texts[id] */
		s->texts[s->ntexts++] = text;
	else
		free(text);
	return id;
}

/* The site of ST, numbered when first met: 0 when out of memory. */
static __u32 site_of_stack(struct mem_sites *s, const struct trace_model *m,
			   const struct trace_stack *st)
{
	const struct bs_frame *via, *own = frame_sum__own_site(st, m, &via);
	__u64 fo = frame_number(s, own), fv = frame_number(s, via);
	__u32 text = text_id(s, m, st), *site;

	if (!own || !fo || (via && !fv))
		return 0;
	site = hmap__get(s->by_key, (struct hkey){ fo | fv << 32, text }, 1);
	if (!site)
		return 0;
	if (!*site) {
		if (array__grow((void **)&s->v, s->n, &s->cap, sizeof(*s->v))) {
			hmap__del(s->by_key, (struct hkey){ fo | fv << 32, text });
			return 0;
		}
		s->v[s->n] = (struct mem_site){ own, via, text };
		*site = (__u32)s->n++;
	}
	return *site;
}

__u32 mem_sites__of(struct mem_sites *s, const struct trace_model *m, __u32 stack)
{
	const struct trace_stack *st;
	__u32 *site, found;

	if (!stack)
		return 0;
	if (stack == MEM_SITE_STACK_EARLY)
		return MEM_SITE_EARLY;
	site = hmap__get(s->by_stack, (struct hkey){ stack, 0 }, 0);
	if (site)
		return *site;
	st = trace_model__stack(m, stack);
	found = st && st->nframes ? site_of_stack(s, m, st) : 0;
	site = hmap__get(s->by_stack, (struct hkey){ stack, 0 }, 1);
	if (site)
		*site = found;
	return found;
}

__u32 mem_sites__stack_of(const struct trace_model *m, const struct bs_hdr *rec)
{
	const struct trace_stack *st = trace_model__event_stack(m, rec);

	return st ? st->id : 0;
}

const struct bs_frame *mem_sites__frame(const struct mem_sites *s, __u32 site)
{
	return site < s->n ? s->v[site].own : NULL;
}

/* FUNC, FILE and LINE columns at AT of frame F. */
static void set_frame(struct table *t, int at, const struct bs_frame *f,
		      const struct trace_model *m)
{
	char buf[512];

	table__set_str(t, at, stack_frame__func(f, m, buf, sizeof(buf)));
	table__set_str(t, at + 1, stack_frame__file(f, m));
	table__set_u64(t, at + 2, f->kind == BS_FRAME_PYTHON ? f->line : 0);
}

int mem_site__set(struct table *t, int at, const struct mem_sites *s, __u32 site,
		  const struct trace_model *m, const char *none)
{
	const struct mem_site *v = site < s->n ? &s->v[site] : NULL;

	if (site == MEM_SITE_EARLY) {
		table__set_str(t, at + MEM_SITE_FUNC, MEM_BEFORE_STACKS);
		return 2;
	}
	if (!v || !v->own) {
		table__set_str(t, at + MEM_SITE_FUNC, none);
		return 1;
	}
	set_frame(t, at + MEM_SITE_FUNC, v->own, m);
	if (v->via)
		set_frame(t, at + MEM_SITE_VIA_FUNC, v->via, m);
	return 0;
}

void mem_site__set_stack(struct table *t, int col, const struct mem_sites *s, __u32 site)
{
	if (s->stack_n && site && site < s->n)
		table__set_str(t, col, s->v[site].text ? s->texts[s->v[site].text] : "");
}

void mem_site_notes(struct table *t, int unstacked, const char *no_stack)
{
	if (unstacked & 1)
		table__add_note(t, "%s", no_stack);
	if (unstacked & 2)
		table__add_note(t, MEM_BEFORE_STACKS_NOTE);
}

void mem_who__set(struct table *t, int at, const struct trace_model *m, __u32 pid, __s16 device)
{
	char dev[16];

	table__set_u64(t, at + MEM_WHO_PID, pid);
	table__set_str(t, at + MEM_WHO_PROCESS, trace_model__process_name(m, pid));
	table__set_str(t, at + MEM_WHO_DEVICE, mem_device_name(device, dev, sizeof(dev)));
}
