// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A condition names a family, an event name and a duration. A record is decoded the way
 * `dump` decodes it (its family's decoder), so NAME is what dump shows as "name" (or
 * "kind"); only records of a family some condition names are decoded, found with one
 * table lookup by type. A trigger a family offers with no duration (struct family_trigger)
 * names a record type: every record of it fires, undecoded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "flight_trigger.h"
#include "hmap.h"
#include "trace_model.h"

/* @COMM: a process's names, the one it started or exec'd with and its main thread's now. */
struct comms {
	char started[BS_COMM_LEN], now[BS_COMM_LEN];
};

struct flight_triggers {
	const struct flight_opts *fo;
	/* Decoders read names from a model; events' names here need none, so it stays empty. */
	struct trace_model *model;
	__u32 by_type[BS_REC_TYPE_MAX]; /* bit i: triggers[i] may match records of the type */
	struct hmap *comms;		/* pid -> struct comms, when a trigger has @COMM */
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
	for (__u32 i = 0; i < fo->ntriggers; i++)
		if (fo->triggers[i].comm[0] && !ft->comms &&
		    !(ft->comms = hmap__new(sizeof(struct comms)))) {
			flight_triggers__free(ft);
			*err = -ENOMEM;
			return NULL;
		}
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
	hmap__free(ft->comms);
	free(ft);
}

/*
 * @COMM: each process's names as the records say them: the one it started or exec'd with (a
 * PROCESS snapshot, a FORK of a process, an EXEC) and the one its main thread took since (a
 * COMM: what ps shows then). Kept only when a trigger names one. Read from /proc when an event
 * matched, a process that ended before the recorder read its event had none.
 */
static void note_comm(struct flight_triggers *ft, const struct bs_hdr *rec)
{
	const char *comm = NULL;
	__u32 pid = rec->pid;
	int renamed = 0;
	struct comms *c;

	if (rec->type == BS_REC_PROCESS && rec->size >= sizeof(struct bs_process))
		comm = ((const struct bs_process *)rec)->comm;
	else if (rec->type == BS_REC_EXEC && rec->size >= sizeof(struct bs_exec))
		comm = ((const struct bs_exec *)rec)->comm;
	else if (rec->type == BS_REC_COMM && rec->pid == rec->tid &&
		 rec->size >= sizeof(struct bs_comm))
		comm = ((const struct bs_comm *)rec)->comm, renamed = 1;
	else if (rec->type == BS_REC_FORK && rec->size >= sizeof(struct bs_fork)) {
		const struct bs_fork *f = (const void *)rec;

		if (f->child_pid != f->child_tid)
			return; /* a thread: its process keeps its names */
		pid = f->child_pid;
		comm = f->comm;
	}
	if (!comm || !(c = hmap__get(ft->comms, (struct hkey){ pid, 0 }, 1)))
		return;
	snprintf(c->now, sizeof(c->now), "%.*s", BS_COMM_LEN - 1, comm);
	if (!renamed || !c->started[0])
		snprintf(c->started, sizeof(c->started), "%s", c->now);
}

/* Whether T's @WHO takes an event of process PID. */
static int who_matches(struct flight_triggers *ft, const struct flight_trigger *t, __u32 pid)
{
	const struct comms *c;

	if (t->pid)
		return pid == t->pid;
	if (!t->comm[0])
		return 1;
	c = ft->comms ? hmap__get(ft->comms, (struct hkey){ pid, 0 }, 0) : NULL;
	return c && (!strcmp(c->started, t->comm) || !strcmp(c->now, t->comm));
}

const struct flight_trigger *flight_triggers__match(struct flight_triggers *ft,
						    const struct bs_hdr *rec)
{
	const struct rec_decoder *dec;
	struct event ev;
	__u32 bits;

	if (ft && ft->comms)
		note_comm(ft, rec);
	if (!ft || rec->type >= BS_REC_TYPE_MAX || !(bits = ft->by_type[rec->type]))
		return NULL;
	dec = family__decoder(rec->type);
	if (!dec || rec->size < dec->min_size)
		return NULL;
	for (__u32 i = 0; i < ft->fo->ntriggers; i++) /* the family's own: its type is enough */
		if ((bits & (1u << i)) && ft->fo->triggers[i].type &&
		    who_matches(ft, &ft->fo->triggers[i], rec->pid))
			return &ft->fo->triggers[i];
	if (family__decode(rec, ft->model, &ev) != 1)
		return NULL;
	for (__u32 i = 0; i < ft->fo->ntriggers; i++) {
		const struct flight_trigger *t = &ft->fo->triggers[i];

		if (!(bits & (1u << i)) || t->type || ev.dur <= t->min_dur_ns)
			continue;
		if ((!strcmp(t->name, "*") || (ev.name && !strcmp(ev.name, t->name)) ||
		     (ev.kind && !strcmp(ev.kind, t->name))) &&
		    who_matches(ft, t, rec->pid))
			return t;
	}
	return NULL;
}
