// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nccl family in the exports (export_model.h): its calls are slices on their threads, by
 * their style. The trace's rank (ex_rank: Kineto's distributedInfo in the profiler's view) is
 * said at the end, only when exactly one process of the trace has a known rank, and one rank in
 * its largest communicator. Table: BPFSIGHT_NCCL, one row per NCCL call, with what dump shows
 * (the communicator's rank joined by the decoder). callchainId: the call's stack
 * (--stacks=nccl), a BPFSIGHT_STACKS id. Memory: a rank per process that made NCCL calls.
 */
#include <errno.h>
#include <string.h>
#include "export_model.h"
#include "hmap.h"
#include "nccl.h"

static const struct ex_column nccl_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT_NN("end"),
	EXC_INT_NN("globalTid"),
	EXC_REF_NN("nameId", EX_STRING_IDS),
	EXC_INT_NN("returnValue"),
	EXC_INT_NN("nestingLevel"),
	EXC_INT("comm"),
	EXC_INT("rank"),
	EXC_INT("nranks"),
	EXC_INT("count"),
	EXC_INT("bytes"),
	EXC_TEXT("datatype"),
	EXC_TEXT("op"),
	EXC_INT("root"),
	EXC_INT("peer"),
	EXC_INT("stream"),
	EXC_INT_NN("groupDepth"),
	EXC_INT("groupNs"),
	EXC_TEXT("uniqueIdHash"),
	EXC_INT("callchainId"),
	EXC_INT("seq"),
	{ 0 },
};
static const struct ex_index nccl_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table nccl_calls = { "BPFSIGHT_NCCL", nccl_cols, .indexes = nccl_idx };

static const struct ex_table *const nccl_tables[] = { &nccl_calls, NULL };

/* The rank a process showed in its largest NCCL communicator (its world, in torch terms). */
struct nccl_rank {
	__s32 rank;
	__s32 nranks; /* -1 = unknown (only ncclCommUserRank was seen) */
	__u32 have;
	__u32 ambiguous; /* two communicators of that size gave different ranks */
};

static int nccl_open(struct ex_sink *s, void **st)
{
	if (!ex_wants(s, EX_PROFILER))
		return 0;
	*st = hmap__new(sizeof(struct nccl_rank)); /* {pid, 0} -> struct nccl_rank */
	return *st ? 0 : -ENOMEM;
}

static void nccl_free(void *st)
{
	hmap__free(st);
}

/*
 * A communicator an NCCL call used, as the nccl walk knows it now (the init that made it, or
 * ncclCommUserRank/ncclCommCount): the rank of the call's process, kept from its largest
 * communicator. A failed init's rank argument is only a request and never counts.
 */
static int nccl_rank_of(struct hmap *ranks, const struct event *ev, const struct trace_model *m)
{
	const struct nccl_walk *w = trace_model__walk(m, &family_nccl);
	const struct nccl_comm *cm = NULL;
	struct nccl_rank *r;

	for (__u32 i = 0; i < ev->nargs && i < EVENT_MAX_ARGS; i++)
		if (ev->args[i].kind == EVENT_ARG_HEX && !strcmp(ev->args[i].key, "comm"))
			cm = nccl_walk__comm(w, ev->pid, ev->args[i].u);
	if (!cm || cm->rank < 0)
		return 0;
	r = hmap__get(ranks, (struct hkey){ ev->pid, 0 }, 1);
	if (!r)
		return -ENOMEM;
	if (!r->have || cm->nranks > r->nranks)
		*r = (struct nccl_rank){ cm->rank, cm->nranks, 1, 0 };
	else if (cm->nranks == r->nranks && cm->rank != r->rank)
		r->ambiguous = 1;
	return 0;
}

/* One NCCL API call's row. */
static int nccl_row(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	static const char *const cols[] = { "comm",	"rank", "nranks", "count", "bytes",
					    "datatype", "op",	"root",	  "peer",  "stream" };
	struct ex_value v[21];
	int n = 0;

	v[n++] = EX_V_INT(ev->ts);
	v[n++] = EX_V_INT(ev->ts + ev->dur);
	v[n++] = EX_V_INT(ex_gtid(rec->pid, rec->tid));
	v[n++] = EX_V_STRING(ev->name);
	v[n++] = EX_V_INT(ex_arg_int(ev, "ret", 0));
	v[n++] = EX_V_INT(ex_arg_int(ev, "depth", 0));
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		v[n++] = ex_v_arg(ev, cols[i]);
	v[n++] = EX_V_INT(ex_arg_int(ev, "group_depth", 0));
	v[n++] = ex_v_arg(ev, "group_ns");
	v[n++] = ex_v_arg(ev, "unique_id_hash");
	v[n++] = EX_V_STACK(ev->stack); /* --stacks=nccl */
	v[n++] = ex_v_arg(ev, "seq");	/* a collective's number on its communicator */
	return ex_row(s, &nccl_calls, EX_ROW_ADD, v, NULL);
}

static int nccl_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
		       const struct event *ev)
{
	int err = 0;

	if (!ev)
		return 0;
	if (st)
		err = nccl_rank_of(st, ev, s->model);
	if (!err && ex_wants(s, EX_TABLES) && ev->name)
		err = nccl_row(s, rec, ev);
	return err;
}

static int nccl_finish(struct ex_sink *s, void *st)
{
	const struct nccl_rank *r, *one = NULL;
	size_t it = 0, n = 0;

	while (st && (r = hmap__next(st, &it, NULL))) {
		one = r;
		n++;
	}
	if (n == 1 && !one->ambiguous)
		ex_rank(s, "nccl", one->rank, one->nranks);
	return 0;
}

const struct family_export nccl_export = {
	.tables = nccl_tables,
	.says = EX_SAYS_RANK,
	.open = nccl_open,
	.free = nccl_free,
	.record = nccl_record,
	.finish = nccl_finish,
};
