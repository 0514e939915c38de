// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Lookups in the family registry (families[], families.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "family.h"

const struct family *family__find(const char *name)
{
	for_each_family(it)
		if (!strcmp(it.f->name, name))
			return it.f;
	return NULL;
}

const struct family *family__always(void)
{
	for_each_family(it)
		if (it.f->flags & FAMILY_ALWAYS)
			return it.f;
	return NULL;
}

int family__recorded_type(const struct trace_meta *meta, __u16 type)
{
	int f;

	return family__decoder_at(type, &f) && trace_meta__has_family(meta, families[f]->name);
}

int family__count(void)
{
	int n = 0;

	while (families[n])
		n++;
	return n;
}

/* Decoders by type, built once: every record read (and each one a flight recorder keeps) asks. */
static const struct rec_decoder *by_type[BS_REC_TYPE_MAX];
static signed char family_of[BS_REC_TYPE_MAX];
static pthread_once_t by_type_once = PTHREAD_ONCE_INIT;

static void by_type_build(void)
{
	for_each_family(it)
		for (const struct rec_decoder *d = it.f->decode->decoders; d && d->type; d++)
			if (d->type < BS_REC_TYPE_MAX && !by_type[d->type]) {
				by_type[d->type] = d;
				family_of[d->type] = it.i;
			}
}

const struct rec_decoder *family__decoder_at(__u16 type, int *family)
{
	pthread_once(&by_type_once, by_type_build);
	if (type >= BS_REC_TYPE_MAX || !by_type[type]) {
		*family = -1;
		return NULL;
	}
	*family = family_of[type];
	return by_type[type];
}

const struct rec_decoder *family__decoder(__u16 type)
{
	int f;

	return family__decoder_at(type, &f);
}

int family__samples(const struct family *f)
{
	for (const struct rec_decoder *d = f->decode->decoders; d && d->type; d++)
		if (d->style && d->style->sample)
			return 1;
	return 0;
}

const struct export_style *family__kind_style(const char *kind)
{
	for_each_family(it)
		for (const struct rec_decoder *d = it.f->decode->decoders; d && d->type; d++)
			if (d->kind && !strcmp(d->kind, kind))
				return d->style;
	return NULL;
}

/* REC into EV by DECODE (D's decode or row); a span clipped to the start says where it began. */
static int family_decode_by(const struct rec_decoder *d,
			    int (*decode)(const struct bs_hdr *, const struct trace_model *,
					  struct event *),
			    const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	__u64 began;
	int ret;

	if (!d || !decode)
		return 0;
	if (rec->size < d->min_size)
		return -EINVAL;
	event__init(ev, rec, d->kind);
	ret = decode(rec, m, ev);
	/* An interval the walk clipped to the recording's start: drawn from it, said so. */
	if (ret == 1 && d->span && (began = trace_model__began(m, rec)) != rec->ts) {
		event__arg_bool(ev, "began_before_start", 1);
		event__arg_u64(ev, "began_ts", began);
	}
	return ret;
}

int family__decode(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct rec_decoder *d = family__decoder(rec->type);

	return family_decode_by(d, d ? d->decode : NULL, rec, m, ev);
}

int family__decode_row(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct rec_decoder *d = family__decoder(rec->type);

	return family_decode_by(d, d ? d->row : NULL, rec, m, ev);
}

int family__decode_meta(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	return 0;
}

int family__kind_is_event(const char *kind)
{
	for_each_family(it)
		for (const struct rec_decoder *d = it.f->decode->decoders; d && d->type; d++)
			if (d->kind && !strcmp(d->kind, kind) && d->decode != family__decode_meta)
				return 1;
	return 0;
}

void family__list_selectable(char *buf, __u32 len)
{
	__u32 used = 0;

	buf[0] = 0;
	for_each_family_while(fit, used < len) {
		if (fit.f->flags & FAMILY_ALWAYS)
			continue;
		used += snprintf(buf + used, len - used, "%s%s", used ? ", " : "", fit.f->name);
	}
}
