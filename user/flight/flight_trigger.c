// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A condition names a family, an event name and a duration. A record is decoded the way
 * `dump` decodes it (its family's decoder), so NAME is what dump shows as "name" (or
 * "kind"); only records of a family some condition names are decoded, found with one
 * table lookup by type. A trigger a family offers with no duration (struct family_trigger)
 * names a record type: every record of it fires, undecoded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "flight_trigger.h"
#include "trace_model.h"

struct flight_triggers {
	const struct flight_opts *fo;
	/* Decoders read names from a model; events' names here need none, so it stays empty. */
	struct trace_model *model;
	__u32 by_type[BS_REC_TYPE_MAX]; /* bit i: triggers[i] may match records of the type */
};

struct flight_triggers *flight_triggers__new(const struct flight_opts *fo, int *err)
{
	struct flight_triggers *ft;

	*err = 0;
	if (!fo->ntriggers)
		return NULL;
	ft = calloc(1, sizeof(*ft));
	if (!ft || !(ft->model = trace_model__new())) {
		free(ft);
		*err = -ENOMEM;
		return NULL;
	}
	ft->fo = fo;
	for (__u32 type = 0; type < BS_REC_TYPE_MAX; type++) {
		int fam;

		if (!family__decoder_at((__u16)type, &fam))
			continue;
		for (__u32 i = 0; i < fo->ntriggers; i++)
			if (fo->triggers[i].family == fam &&
			    (!fo->triggers[i].type || fo->triggers[i].type == type))
				ft->by_type[type] |= 1u << i;
	}
	return ft;
}

void flight_triggers__free(struct flight_triggers *ft)
{
	if (!ft)
		return;
	trace_model__free(ft->model);
	free(ft);
}

const struct flight_trigger *flight_triggers__match(struct flight_triggers *ft,
						    const struct bs_hdr *rec)
{
	const struct rec_decoder *dec;
	struct event ev;
	__u32 bits;

	if (!ft || rec->type >= BS_REC_TYPE_MAX || !(bits = ft->by_type[rec->type]))
		return NULL;
	dec = family__decoder(rec->type);
	if (!dec || rec->size < dec->min_size)
		return NULL;
	for (__u32 i = 0; i < ft->fo->ntriggers; i++) /* the family's own: its type is enough */
		if ((bits & (1u << i)) && ft->fo->triggers[i].type)
			return &ft->fo->triggers[i];
	if (family__decode(rec, ft->model, &ev) != 1)
		return NULL;
	for (__u32 i = 0; i < ft->fo->ntriggers; i++) {
		const struct flight_trigger *t = &ft->fo->triggers[i];

		if (!(bits & (1u << i)) || t->type || ev.dur <= t->min_dur_ns)
			continue;
		if (!strcmp(t->name, "*") || (ev.name && !strcmp(ev.name, t->name)) ||
		    (ev.kind && !strcmp(ev.kind, t->name)))
			return t;
	}
	return NULL;
}
