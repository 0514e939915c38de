// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osrt's rule for stats' verdict (verdict.h): the focus thread's time in system calls, by
 * call. osrt_sum sums all threads, so the rule keeps its own totals per thread (the same
 * records, the same cumulative snapshots) and cites `osrt_sum --tid`, which shows them.
 * futex is left out: its waits are for other threads (locks, the GIL), which the gil and sched
 * rules speak of; so is uretprobe (our own probes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "human.h"
#include "osrt.h"
#include "hmap.h"
#include "syscall_names.h"
#include "table.h"
#include "verdict.h"

#define SYSCALL_SHARE  0.30	    /* of the thread's time in system calls */
#define SYSCALL_MIN_NS 100000000ull /* and at least this long */
#define NR_FUTEX       202

struct nr_time {
	__u64 events; /* calls with a record of their own */
	__u64 agg;    /* the last snapshot of the short ones */
	__u64 closed; /* snapshots closed by the thread's exit */
};

struct osrt_rule {
	struct hmap *by_key; /* {pid << 32 | tid, nr} -> struct nr_time */
};

static void *osrt_rule__new(void)
{
	struct osrt_rule *st = calloc(1, sizeof(*st));

	if (st && !(st->by_key = hmap__new(sizeof(struct nr_time)))) {
		free(st);
		st = NULL;
	}
	return st;
}

static void osrt_rule__free(void *vst)
{
	struct osrt_rule *st = vst;

	if (st)
		hmap__free(st->by_key);
	free(st);
}

static void osrt_rule__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_syscall_agg *a = (const void *)rec;
	const struct bs_syscall *s = (const void *)rec;
	struct osrt_rule *st = vst;
	struct nr_time *t;
	__u32 nr;

	if (rec->type != BS_REC_SYSCALL && rec->type != BS_REC_SYSCALL_AGG)
		return;
	nr = rec->type == BS_REC_SYSCALL ? s->nr : a->nr;
	t = hmap__get(st->by_key, (struct hkey){ (__u64)rec->pid << 32 | rec->tid, nr }, 1);
	if (!t)
		return; /* out of memory: the claim undercounts, it never invents */
	if (rec->type == BS_REC_SYSCALL) {
		t->events += s->dur;
	} else if (a->flags & BS_AGG_FINAL) {
		t->closed += a->total_ns;
		t->agg = 0;
	} else {
		t->agg = a->total_ns;
	}
}

/*
 * The same state from a server's answer (stats --from): osrt_thread_calls, a row per thread
 * and call with what ADD sums of its records (docs/CLICKHOUSE.md, "The verdict").
 */
static int osrt_rule__load(void *vst, const char *name, const struct table *t)
{
	int cp = table__col(t, "pid"), ct = table__col(t, "tid"), cn = table__col(t, "nr");
	int ce = table__col(t, "events_ns"), ca = table__col(t, "agg_ns"),
	    cc = table__col(t, "closed_ns");
	struct osrt_rule *st = vst;
	struct nr_time *nt;

	if (cp < 0 || ct < 0 || cn < 0 || ce < 0 || ca < 0 || cc < 0)
		return -EINVAL;
	for (int r = 0; r < table__nrows(t); r++) {
		__u64 key = table__get_u64(t, r, cp) << 32 | (__u32)table__get_u64(t, r, ct);

		nt = hmap__get(st->by_key, (struct hkey){ key, table__get_u64(t, r, cn) }, 1);
		if (!nt)
			return -ENOMEM;
		/* one row per file of the rows: a thread's calls in each add up */
		nt->events += table__get_u64(t, r, ce);
		nt->agg += table__get_u64(t, r, ca);
		nt->closed += table__get_u64(t, r, cc);
	}
	return 0;
}

struct top_call {
	__u32 nr;
	__u64 ns;
};

/*
 * The calls a library's thread waits for work in (an event loop, a timer, a server's accept):
 * a thread other than the main one spending its time there is idle by design (gloo's and
 * NCCL's progress threads, a heartbeat, an idle pool), which the verdict says but never leads
 * with (x86_64 numbers).
 */
static int idle_wait(__u32 nr)
{
	static const __u32 waits[] = { 7 /* poll */,
				       23 /* select */,
				       35 /* nanosleep */,
				       43 /* accept */,
				       61 /* wait4 */,
				       128 /* rt_sigtimedwait */,
				       230 /* clock_nanosleep */,
				       232 /* epoll_wait */,
				       270 /* pselect6 */,
				       271 /* ppoll */,
				       281 /* epoll_pwait */,
				       288 /* accept4 */,
				       441 /* epoll_pwait2 */ };

	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (waits[i] == nr)
			return 1;
	return 0;
}

#define NR_SCHED_YIELD 24 /* x86_64 */

static void osrt_rule__claims(void *vst, struct verdict *v)
{
	struct top_call top[3] = {};
	struct osrt_rule *st = vst;
	char who[128], list[256], d[32], d2[32], name[32], report[48];
	__u64 all = 0, life, ns, yield = 0;
	__u32 pid = 0, tid = 0;
	struct nr_time *t;
	struct hkey key;
	size_t it = 0, used = 0;
	double share;
	int by_design;

	if (verdict__focus(v, &pid, &tid))
		return;
	while ((t = hmap__next(st->by_key, &it, &key))) {
		if (key.a != ((__u64)pid << 32 | tid) || key.b == NR_FUTEX ||
		    key.b == BS_NR_URETPROBE_X86_64)
			continue;
		ns = t->events + t->agg + t->closed;
		all += ns;
		if (key.b == NR_SCHED_YIELD)
			yield += ns;
		for (int i = 0; i < 3; i++) {
			if (ns <= top[i].ns)
				continue;
			for (int k = 2; k > i; k--)
				top[k] = top[k - 1];
			top[i] = (struct top_call){ (__u32)key.b, ns };
			break;
		}
	}
	life = verdict__life(v, pid, tid);
	if (!all || !life)
		return;
	list[0] = 0;
	for (int i = 0; i < 3 && top[i].ns && used < sizeof(list); i++) {
		const char *n = syscall_name(top[i].nr);

		if (!n) {
			snprintf(name, sizeof(name), "syscall_%u", top[i].nr);
			n = name;
		}
		used += snprintf(list + used, sizeof(list) - used, "%s%s %s", i ? ", " : "", n,
				 human__ns((double)top[i].ns, d, sizeof(d)));
	}
	share = (double)all / life;
	if (share < 0.05)
		return;
	verdict__thread(v, pid, tid, who, sizeof(who));
	snprintf(report, sizeof(report), "osrt_sum --tid %u", tid);
	/*
	 * A library's thread waits for work asleep (idle_wait), or spinning: polling a socket
	 * without blocking and yielding its CPU between polls (NCCL's socket progress thread in a
	 * hang, on an H100: recvfrom 1.19 s and sched_yield 791 ms of its 3.0 s). A quarter of
	 * its time in system calls spent in sched_yield is a spin-wait.
	 */
	by_design =
		tid != pid && ((idle_wait(top[0].nr) && top[0].ns * 2 > all) || yield * 4 >= all);
	verdict__claim(
		v, VERDICT_SYSCALL, share >= SYSCALL_SHARE && all >= SYSCALL_MIN_NS && !by_design,
		share > 1 ? 1 : share, report,
		"%s was in system calls other than futex %s of its %s: %s%s", who,
		human__ns((double)all, d, sizeof(d)), human__ns((double)life, d2, sizeof(d2)), list,
		by_design ? " (a thread waiting for work, by design: not a claim)" : "");
}

const struct family_verdict osrt_verdict = {
	.new = osrt_rule__new,
	.add = osrt_rule__add,
	.claims = osrt_rule__claims,
	.free = osrt_rule__free,
	.reads = "osrt_thread_calls",
	.load = osrt_rule__load,
};
