// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reports across ranks (nccl_straggle.h): nccl_stragglers, one row per collective (who
 * entered last, how long the others waited), with a sentence per rank that held the others;
 * nccl_rank_sum, one row per rank process (its time in collectives and outside, the waits
 * it caused).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl_straggle.h"
#include "table.h"
#include "trace_ranks.h"

static void *straggle_new(void)
{
	return nccl_straggle__new();
}

static void straggle_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	nccl_straggle__add(st, rec, m);
}

static void straggle_free(void *st)
{
	nccl_straggle__free(st);
}

static const char *fn_name(__u32 fn, char *buf, size_t len)
{
	const struct ucall_api *api = ucall_table__api(&nccl_table, fn);

	if (api)
		return ucall_api__shown(api);
	snprintf(buf, len, "nccl_fn_%u", fn);
	return buf;
}

/* "rank 3 @ node7" in a merged file, else "rank 3 (pid 1234)", else "pid 1234". */
static const char *rank_label(const struct trace_model *m, __u32 pid, __s32 rank, char *buf,
			      size_t len)
{
	const struct trace_rank *r = trace_model__rank(m, pid);

	if (r && r->r.h.pid == pid)
		return r->label;
	if (rank >= 0)
		snprintf(buf, len, "rank %d (pid %u)", rank, trace_ranks__host_pid(pid));
	else
		snprintf(buf, len, "pid %u", trace_ranks__host_pid(pid));
	return buf;
}

static void set_hash(struct table *t, int col, __u64 h)
{
	char buf[20];

	snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)h);
	table__set_str(t, col, buf);
}

/* The function that most of R's caused waits were in, and its share. */
static __u32 top_fn(const struct nccl_rank_tot *r, double *pct)
{
	__u32 best = 0;

	for (__u32 f = 1; f < NCCL_FN_SLOTS; f++)
		if (r->fn_wait[f] > r->fn_wait[best])
			best = f;
	*pct = r->made_wait_ns ? 100.0 * r->fn_wait[best] / r->made_wait_ns : 0;
	return best;
}

static int made_cmp(const void *a, const void *b)
{
	const struct nccl_rank_tot *x = *(const struct nccl_rank_tot *const *)a;
	const struct nccl_rank_tot *y = *(const struct nccl_rank_tot *const *)b;

	return x->made_wait_ns < y->made_wait_ns ? 1 : x->made_wait_ns > y->made_wait_ns ? -1 : 0;
}

/* "rank 5 @ node2 made the others wait 312.4 ms in 40 collectives, 80% in ncclAllReduce". */
static int straggler_notes(struct table *t, const struct trace_model *m,
			   struct nccl_rank_tot **ranks, size_t n)
{
	struct nccl_rank_tot **v = malloc((n + 1) * sizeof(*v));
	char lbuf[64], fbuf[32], wbuf[32];
	double pct;

	if (!v)
		return -ENOMEM;
	memcpy(v, ranks, n * sizeof(*v));
	qsort(v, n, sizeof(*v), made_cmp);
	for (size_t i = 0; i < n && v[i]->made_wait_ns; i++) {
		__u32 f = top_fn(v[i], &pct);

		table__add_note(
			t,
			"%s made the others wait %.3f ms in %llu collective%s, %.0f%% in %s "
			"(the longest: %s #%llu, %.3f ms)",
			rank_label(m, v[i]->pid, v[i]->rank, lbuf, sizeof(lbuf)),
			v[i]->made_wait_ns / 1e6, (unsigned long long)v[i]->late,
			v[i]->late == 1 ? "" : "s", pct, fn_name(f, fbuf, sizeof(fbuf)),
			fn_name(v[i]->worst_fn, wbuf, sizeof(wbuf)),
			(unsigned long long)v[i]->worst_seq, v[i]->worst_wait_ns / 1e6);
	}
	free(v);
	return 0;
}

static int stragglers_emit(void *st, const struct trace_model *m, struct table *t)
{
	enum {
		C_COMM,
		C_SEQ,
		C_NAME,
		C_RANKS,
		C_NRANKS,
		C_LAST_RANK,
		C_LAST,
		C_SKEW,
		C_WAIT,
		C_END_SPREAD,
		C_START,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_COMM] = { "comm", "Communicator", TABLE_STR },
		[C_SEQ] = { "seq", "Seq", TABLE_U64 },
		[C_NAME] = { "name", "Name", TABLE_STR },
		[C_RANKS] = { "ranks", "Ranks", TABLE_U64 },
		[C_NRANKS] = { "nranks", "NRanks", TABLE_S64 },
		[C_LAST_RANK] = { "last_rank", "Last Rank", TABLE_S64 },
		[C_LAST] = { "last", "Entered Last", TABLE_STR },
		[C_SKEW] = { "skew_ns", "Skew (ns)", TABLE_U64 },
		[C_WAIT] = { "wait_ns", "Others Waited (ns)", TABLE_U64 },
		[C_END_SPREAD] = { "end_spread_ns", "End Spread (ns)", TABLE_U64 },
		[C_START] = { "start", "First Entry (ns)", TABLE_U64 },
	};
	struct nccl_rank_tot **ranks;
	struct nccl_inst **insts;
	size_t ni, nr, async = 0;
	char buf[64];
	int err;

	err = nccl_straggle__finish(st, &insts, &ni, &ranks, &nr);
	if (err)
		return err;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < ni; i++) {
		const struct nccl_inst *in = insts[i];

		if (in->ranks < 2)
			continue; /* one rank recorded it: nothing to compare */
		table__row(t);
		set_hash(t, C_COMM, in->group);
		table__set_u64(t, C_SEQ, in->seq);
		table__set_str(t, C_NAME, fn_name(in->fn, buf, sizeof(buf)));
		table__set_u64(t, C_RANKS, in->ranks);
		if (in->nranks >= 0)
			table__set_s64(t, C_NRANKS, in->nranks);
		if (in->last_rank >= 0)
			table__set_s64(t, C_LAST_RANK, in->last_rank);
		table__set_str(t, C_LAST,
			       rank_label(m, in->last_pid, in->last_rank, buf, sizeof(buf)));
		table__set_u64(t, C_SKEW, in->last_enter - in->first_enter);
		table__set_u64(t, C_WAIT, nccl_inst__wait(in));
		if (!in->async)
			table__set_u64(t, C_END_SPREAD, in->max_end - in->min_end);
		table__set_u64(t, C_START, in->first_enter);
		async += in->async;
	}
	if (async)
		table__add_note(
			t,
			"%zu gloo collective%s, seen at each rank's entry only (where "
			"ProcessGroupGloo takes the tag): its wait is to the last entry; no end "
			"spread",
			async, async == 1 ? "" : "s");
	err = table__err(t);
	return err ? err : straggler_notes(t, m, ranks, nr);
}

const struct report nccl_stragglers = {
	.name = "nccl_stragglers",
	.desc = "NCCL Stragglers (per collective: who entered last, how long the others waited)",
	.new = straggle_new,
	.add = straggle_add,
	.emit = stragglers_emit,
	.free = straggle_free,
};

static int rank_sum_emit(void *st, const struct trace_model *m, struct table *t)
{
	enum {
		C_RANK,
		C_NRANKS,
		C_PID,
		C_COLLECTIVES,
		C_SPAN,
		C_COLL,
		C_OUTSIDE,
		C_COLL_PCT,
		C_LATE,
		C_MADE_WAIT,
		C_TOP_OP,
		C_TOP_OP_PCT,
		C_WORST_SEQ,
		C_WORST_WAIT,
		C_NAME,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_RANK] = { "rank", "Rank", TABLE_S64 },
		[C_NRANKS] = { "nranks", "NRanks", TABLE_S64 },
		[C_PID] = { "pid", "PID", TABLE_U64 },
		[C_COLLECTIVES] = { "collectives", "Collectives", TABLE_U64 },
		[C_SPAN] = { "span_ns", "Span (ns)", TABLE_U64 },
		[C_COLL] = { "coll_ns", "In Collectives (ns)", TABLE_U64 },
		[C_OUTSIDE] = { "outside_ns", "Outside (ns)", TABLE_U64 },
		[C_COLL_PCT] = { "coll_pct", "In Coll (%)", TABLE_DOUBLE },
		[C_LATE] = { "late", "Entered Last", TABLE_U64 },
		[C_MADE_WAIT] = { "made_wait_ns", "Made Others Wait (ns)", TABLE_U64 },
		[C_TOP_OP] = { "top_op", "Mostly In", TABLE_STR },
		[C_TOP_OP_PCT] = { "top_op_pct", "Share (%)", TABLE_DOUBLE },
		[C_WORST_SEQ] = { "worst_seq", "Worst Seq", TABLE_U64 },
		[C_WORST_WAIT] = { "worst_wait_ns", "Worst Wait (ns)", TABLE_U64 },
		[C_NAME] = { "name", "Process", TABLE_STR },
	};
	struct nccl_rank_tot **ranks;
	struct nccl_inst **insts;
	size_t ni, nr, async = 0;
	char buf[64];
	int err;

	err = nccl_straggle__finish(st, &insts, &ni, &ranks, &nr);
	if (err)
		return err;
	table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < nr; i++) {
		const struct nccl_rank_tot *r = ranks[i];
		__u64 span = r->last_end > r->first_enter ? r->last_end - r->first_enter : 0;
		__u64 in = r->busy.busy_ns < span ? r->busy.busy_ns : span;
		double pct;
		__u32 f = top_fn(r, &pct);

		table__row(t);
		if (r->rank >= 0)
			table__set_s64(t, C_RANK, r->rank);
		if (r->nranks >= 0)
			table__set_s64(t, C_NRANKS, r->nranks);
		table__set_u64(t, C_PID, trace_ranks__host_pid(r->pid)); /* the host's */
		table__set_u64(t, C_COLLECTIVES, r->calls);
		table__set_u64(t, C_SPAN, span);
		async += r->async_calls != 0;
		/* a gloo collective is seen at its entry only: no time inside */
		if (r->async_calls < r->calls) {
			table__set_u64(t, C_COLL, in);
			table__set_u64(t, C_OUTSIDE, span - in);
			table__set_double(t, C_COLL_PCT, span ? 100.0 * in / span : 0);
		}
		table__set_u64(t, C_LATE, r->late);
		table__set_u64(t, C_MADE_WAIT, r->made_wait_ns);
		if (r->made_wait_ns) {
			table__set_str(t, C_TOP_OP, fn_name(f, buf, sizeof(buf)));
			table__set_double(t, C_TOP_OP_PCT, pct);
			table__set_u64(t, C_WORST_SEQ, r->worst_seq);
			table__set_u64(t, C_WORST_WAIT, r->worst_wait_ns);
		}
		table__set_str(t, C_NAME, rank_label(m, r->pid, r->rank, buf, sizeof(buf)));
	}
	if (async)
		table__add_note(
			t,
			"gloo's collectives are seen at their entry only (where ProcessGroupGloo "
			"takes the tag): In Collectives and Outside count NCCL's calls, empty "
			"where a rank made gloo's alone");
	return table__err(t);
}

const struct report nccl_rank_sum = {
	.name = "nccl_rank_sum",
	.desc = "NCCL Rank Summary (per rank: time in collectives and outside, waits caused)",
	.new = straggle_new,
	.add = straggle_add,
	.emit = rank_sum_emit,
	.free = straggle_free,
};
