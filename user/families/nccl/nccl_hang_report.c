// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A hung job, said (nccl_hang.h): the report nccl_hang (a row per rank process and
 * communicator: the last collective entered and left, how long ago, where its thread was when
 * the trigger fired) and the verdict's hang rule, which opens stats with the answer: "hang:
 * ranks 0, 1, 3 wait in ncclAllReduce #1207 (...) for 41.0 s; rank 2 never entered it: it is
 * in `load_batch` (data.py:88), sleeping in read for 43.0 s".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "human.h"
#include "nccl_hang.h"
#include "stack_format.h"
#include "table.h"
#include "thread_state.h"
#include "trace_ranks.h"
#include "trace_snaps.h"
#include "verdict.h"

#define STACK_FRAMES 4 /* the frames the table's stack column shows, innermost first */

static void *hang_new(void)
{
	return nccl_hang__new();
}

static void hang_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	nccl_hang__add(st, rec, m);
}

static void hang_free(void *st)
{
	nccl_hang__free(st);
}

/* "rank 2", "rank 2 @ node1" in a merged file, "pid 1234" when its rank is unknown. */
static const char *who(const struct trace_model *m, __u32 pid, __s32 rank, char *buf, size_t len)
{
	const struct trace_rank *r = trace_model__rank(m, pid);
	const char *host = r && r->host ? r->host : NULL;

	if (rank >= 0 && host)
		snprintf(buf, len, "rank %d @ %s", rank, host);
	else if (rank >= 0)
		snprintf(buf, len, "rank %d", rank);
	else
		snprintf(buf, len, "pid %u", pid);
	return buf;
}

/* The innermost STACK_FRAMES frames of TID's snapshot stack, "f (x.py:3) < g (x.py:9)". */
static const char *stack_text(const struct trace_model *m, __u32 tid, char *buf, size_t len)
{
	const struct bs_thread_snap *t = trace_snaps__thread(trace_model__snaps(m), tid);
	const struct trace_stack *st = t ? trace_model__stack(m, t->stack_id) : NULL;
	size_t used = 0;
	char fbuf[256];
	int shown = 0;

	buf[0] = 0;
	for (__u16 i = 0; st && i < st->nframes && shown < STACK_FRAMES && used < len; i++) {
		const struct bs_frame *f = &st->frames[i];
		const char *file = human__base(stack_frame__file(f, m));

		if (f->kind == BS_FRAME_CUT)
			continue;
		if (f->kind == BS_FRAME_PYTHON)
			used += snprintf(buf + used, len - used, "%s%s (%s:%u)", shown ? " < " : "",
					 stack_frame__func(f, m, fbuf, sizeof(fbuf)), file,
					 f->line);
		else
			used += snprintf(buf + used, len - used, "%s%s (%s)", shown ? " < " : "",
					 stack_frame__func(f, m, fbuf, sizeof(fbuf)), file);
		shown++;
	}
	return buf;
}

/*
 * Rank RANK of a communicator, process PID: "2", or "0 (RANK 2)" where the communicator's
 * rank is not the job's (a sub-communicator), "pid 42" without a rank.
 */
static const char *rank_text(const struct trace_model *m, __u32 pid, __s32 rank, char *buf,
			     size_t len)
{
	const struct bs_proc_snap *p = trace_snaps__proc(trace_model__snaps(m), pid);

	if (rank < 0)
		snprintf(buf, len, "pid %u", pid);
	else if (p && p->env_rank >= 0 && p->env_rank != rank)
		snprintf(buf, len, "%d (RANK %d)", rank, p->env_rank);
	else
		snprintf(buf, len, "%d", rank);
	return buf;
}

/* Ranks of C's waiters, "0, 1, 3". */
static void waiter_list(const struct trace_model *m, const struct hang_coll *c, char *buf,
			size_t len)
{
	size_t used = 0;
	char r[48];

	buf[0] = 0;
	for (size_t k = 0; k < c->nwait && used < len; k++)
		used += snprintf(buf + used, len - used, "%s%s", k ? ", " : "",
				 rank_text(m, c->wait[k]->pid, c->wait[k]->rank, r, sizeof(r)));
}

/* What rank RANK of C's communicator was doing instead: "it is in `f` (x.py:3), ...". */
static const char *missing_doing(struct nccl_hang *h, const struct trace_model *m,
				 const struct hang_coll *c, __s32 rank, char *buf, size_t len)
{
	__u32 pid = nccl_hang__rank_pid(h, m, c->group, rank);

	if (!pid)
		snprintf(buf, len,
			 "it is not in this trace (record its process too, or merge its host's "
			 "dump)");
	else
		nccl_hang__doing(h, m, pid, buf, len);
	return buf;
}

/* C in one sentence: who waits in what, for how long, and the first rank that never came. */
static void say(struct nccl_hang *h, const struct trace_model *m, const struct hang_coll *c,
		char *buf, size_t len)
{
	char ranks[256], fn[32], bytes[32] = "", doing[400], gpu[96] = "", miss[48];
	const char *call = c->on_gpu ? nccl_hang__open_call(h, c->wait[0]->pid) : NULL;

	waiter_list(m, c, ranks, sizeof(ranks));
	if (call)
		snprintf(gpu, sizeof(gpu), " on the GPU (its host call returned; it waits in %s)",
			 call);
	if (c->bytes_known)
		snprintf(bytes, sizeof(bytes), ", %s",
			 human__bytes((double)c->bytes, fn, sizeof(fn)));
	snprintf(buf, len,
		 "rank%s %s wait%s in %s #%lld (communicator %016llx%s%s) for %.1f s%s; rank %s "
		 "never entered it: %s",
		 c->nwait > 1 ? "s" : "", ranks, c->nwait > 1 ? "" : "s",
		 nccl_hang__fn(c->fn, fn, sizeof(fn)), (long long)c->seq,
		 (unsigned long long)c->group, c->have_hash ? "" : ", its id unseen", bytes,
		 c->waited_ns / 1e9, gpu,
		 rank_text(m, nccl_hang__rank_pid(h, m, c->group, c->miss[0]), c->miss[0], miss,
			   sizeof(miss)),
		 missing_doing(h, m, c, c->miss[0], doing, sizeof(doing)));
}

static int hang_emit(void *st, const struct trace_model *m, struct table *t)
{
	enum {
		C_RANK,
		C_PROCESS,
		C_COMM,
		C_NRANKS,
		C_ENTERED,
		C_ENTERED_NAME,
		C_ENTERED_AGO,
		C_IN_IT,
		C_LEFT,
		C_LEFT_AGO,
		C_TID,
		C_STATE,
		C_OFF_CPU,
		C_WHERE,
		C_STACK,
		NCOLS
	};
	static const struct table_col cols[NCOLS] = {
		[C_RANK] = { "rank", "Rank", TABLE_S64 },
		[C_PROCESS] = { "process", "Process", TABLE_STR },
		[C_COMM] = { "comm", "Communicator", TABLE_STR },
		[C_NRANKS] = { "nranks", "Ranks", TABLE_S64, TABLE_COL_MINOR },
		[C_ENTERED] = { "entered", "Last Entered", TABLE_S64 },
		[C_ENTERED_NAME] = { "entered_name", "Collective", TABLE_STR },
		[C_ENTERED_AGO] = { "entered_ago_ns", "Entered Ago", TABLE_U64 },
		[C_IN_IT] = { "in_it", "In It", TABLE_STR },
		[C_LEFT] = { "left", "Last Left", TABLE_S64 },
		[C_LEFT_AGO] = { "left_ago_ns", "Left Ago", TABLE_U64 },
		[C_TID] = { "tid", "Thread", TABLE_U64, TABLE_COL_MINOR },
		[C_STATE] = { "state", "State", TABLE_STR },
		[C_OFF_CPU] = { "off_cpu_ns", "Off CPU For", TABLE_U64 },
		[C_WHERE] = { "where", "Where", TABLE_STR },
		[C_STACK] = { "stack", "Stack (innermost first)", TABLE_STR, TABLE_COL_MINOR },
	};
	const struct hang_coll *colls;
	const struct bs_thread_snap *ts;
	const struct hang_rank *r;
	char buf[1024], name[64], state[96];
	struct nccl_hang *h = st;
	size_t i = 0, n;
	int err = table__add_cols(t, cols, NCOLS);

	if (err || !nccl_hang__has_snapshot(h, m))
		return err; /* a hang trigger's dump only */
	while ((r = nccl_hang__next(h, m, &i))) {
		__u64 taken = nccl_hang__taken(m, r->pid);

		table__row(t);
		if (r->rank >= 0)
			table__set_s64(t, C_RANK, r->rank);
		table__set_str(t, C_PROCESS, trace_model__process_name(m, r->pid));
		if (r->group) {
			snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)r->group);
			table__set_str(t, C_COMM, buf);
		}
		if (r->nranks >= 0)
			table__set_s64(t, C_NRANKS, r->nranks);
		if (r->entered >= 0) {
			table__set_s64(t, C_ENTERED, r->entered);
			table__set_str(t, C_ENTERED_NAME,
				       nccl_hang__fn(r->entered_fn, name, sizeof(name)));
			table__set_u64(t, C_ENTERED_AGO,
				       taken > r->entered_ts ? taken - r->entered_ts : 0);
			table__set_str(t, C_IN_IT, r->entered_open ? "yes" : "no");
		}
		if (r->left >= 0) {
			table__set_s64(t, C_LEFT, r->left);
			table__set_u64(t, C_LEFT_AGO, taken > r->left_ts ? taken - r->left_ts : 0);
		}
		table__set_u64(t, C_TID, r->tid);
		ts = trace_snaps__thread(trace_model__snaps(m), r->tid);
		if (ts) {
			table__set_str(t, C_STATE,
				       thread_state__text(ts->state, ts->syscall, ts->flags, state,
							  sizeof(state)));
			table__set_u64(t, C_OFF_CPU, ts->off_cpu_ns);
		}
		table__set_str(t, C_WHERE, nccl_hang__where(m, r->tid, buf, sizeof(buf)));
		table__set_str(t, C_STACK, stack_text(m, r->tid, buf, sizeof(buf)));
	}
	colls = nccl_hang__colls(h, m, &n);
	for (i = 0; i < n; i++) {
		say(h, m, &colls[i], buf, sizeof(buf));
		table__add_note(t, "%s", buf);
	}
	return table__err(t);
}

const struct report nccl_hang_report = {
	.name = "nccl_hang",
	.desc = "A hang: each rank's last collective entered and left, and where it is now",
	.new = hang_new,
	.add = hang_add,
	.emit = hang_emit,
	.free = hang_free,
};

/*
 * A hang no collective explains (a synchronization on a GPU that never finishes, an init whose
 * peers never come): the calls in flight, the longest first, each where it was called from.
 */
static void say_calls(struct nccl_hang *h, const struct trace_model *m, struct verdict *v)
{
	char where[320], lbuf[64];
	const char *name;
	__u32 pid, tid;
	size_t i = 0;
	__u64 ts;

	while (nccl_hang__next_open(h, &i, &pid, &tid, &name, &ts)) {
		__u64 taken = nccl_hang__taken(m, pid);
		const struct bs_proc_snap *p = trace_snaps__proc(trace_model__snaps(m), pid);

		nccl_hang__where(m, tid, where, sizeof(where));
		if (i == 1)
			verdict__claim(v, VERDICT_HANG, 1, -1, "nccl_hang",
				       "%s waits in %s for %.1f s, called from %s",
				       who(m, pid, p ? p->env_rank : -1, lbuf, sizeof(lbuf)), name,
				       taken > ts ? (taken - ts) / 1e9 : 0, where);
		else
			verdict__detail(v, -1, "", "%s waits in %s for %.1f s, called from %s",
					who(m, pid, p ? p->env_rank : -1, lbuf, sizeof(lbuf)), name,
					taken > ts ? (taken - ts) / 1e9 : 0, where);
	}
}

/* The verdict's hang rule: a claim per communicator whose ranks stopped apart. */
static void hang_claims(void *loaded, struct verdict *v)
{
	struct nccl_hang *h = verdict__state(v, "nccl_hang");
	const struct trace_model *m = verdict__model(v);
	const struct hang_coll *c;
	char buf[1024], doing[400], lbuf[64];
	size_t n;

	if (!h && nccl_hang__loaded(loaded))
		h = loaded; /* judged from a server: its answer */
	if (!h)
		return;
	c = nccl_hang__colls(h, m, &n);
	if (!n && nccl_hang__has_snapshot(h, m))
		say_calls(h, m, v);
	for (size_t i = 0; i < n; i++) {
		say(h, m, &c[i], buf, sizeof(buf));
		verdict__claim(v, VERDICT_HANG, 1, -1, "nccl_hang", "%s", buf);
		for (size_t k = 1; k < c[i].nmiss; k++)
			verdict__detail(
				v, -1, "", "%s never entered it either: %s",
				who(m, nccl_hang__rank_pid(h, m, c[i].group, c[i].miss[k]),
				    c[i].miss[k], lbuf, sizeof(lbuf)),
				missing_doing(h, m, &c[i], c[i].miss[k], doing, sizeof(doing)));
	}
}

/* From a server, what the report's pass keeps (nccl_sql.c's nccl_hang_state); the
 * snapshots the rule reads are the model's (stats --from puts them there). */
static int hang_rule_load(void *st, const char *name, const struct table *t)
{
	return strcmp(name, "nccl_hang_state") ? 0 : nccl_hang__load(st, t);
}

const struct family_verdict nccl_verdict = {
	.new = hang_new,
	.claims = hang_claims,
	.free = hang_free,
	.reads = "nccl_hang_state", /* its report's state */
	.load = hang_rule_load,
};
