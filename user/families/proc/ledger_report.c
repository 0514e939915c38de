// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ledger report (ledger.h, docs/USAGE.md "How the verdict is made"): where each thread's
 * time went, every nanosecond of it in one entry, the critical unit's first (its threads'
 * entries summed). The verdict reads the same ledger (this report's state).
 */
#include <stdlib.h>
#include "ledger.h"
#include "proc.h"
#include "table.h"
#include "verdict.h"

enum {
	C_UNIT,
	C_PID,
	C_TID,
	C_THREAD,
	C_KIND,
	C_WHAT,
	C_WHERE,
	C_NS,
	C_SHARE,
	C_ONCPU,
	C_RUNNABLE,
	C_BLOCKED,
	C_OWN,
	C_WAKER,
	C_WAKER_WHERE,
	C_IDLE,
	C_INSIDE,
	C_CLOCK_ONCPU,
	C_CLOCK_RUNNABLE,
	NCOLS
};

static const struct table_col cols[NCOLS] = {
	[C_UNIT] = { "unit", "Unit", TABLE_STR },
	[C_PID] = { "pid", "PID", TABLE_U64 },
	[C_TID] = { "tid", "TID", TABLE_U64 },
	[C_THREAD] = { "thread", "Thread", TABLE_STR },
	[C_KIND] = { "kind", "Kind", TABLE_STR },
	[C_WHAT] = { "what", "What", TABLE_STR },
	[C_WHERE] = { "where", "Where", TABLE_STR },
	[C_NS] = { "time_ns", "Time", TABLE_U64, TABLE_COL_WEIGHT },
	[C_SHARE] = { "share_pct", "Share (%)", TABLE_DOUBLE },
	[C_ONCPU] = { "oncpu_ns", "On CPU", TABLE_U64, TABLE_COL_MINOR },
	[C_RUNNABLE] = { "runnable_ns", "Ready, No CPU", TABLE_U64, TABLE_COL_MINOR },
	[C_BLOCKED] = { "blocked_ns", "Blocked", TABLE_U64, TABLE_COL_MINOR },
	[C_OWN] = { "own_cpus_ns", "Job Had The CPUs", TABLE_U64,
		    TABLE_COL_MINOR | TABLE_COL_IF_ANY },
	[C_WAKER] = { "woken_by", "Woken By", TABLE_STR, TABLE_COL_MINOR | TABLE_COL_IF_ANY },
	[C_WAKER_WHERE] = { "waker_where", "Waker Was At", TABLE_STR,
			    TABLE_COL_MINOR | TABLE_COL_IF_ANY },
	[C_IDLE] = { "idle", "Waiting For Work", TABLE_U64, TABLE_COL_MINOR | TABLE_COL_IF_ANY },
	[C_INSIDE] = { "inside", "Ready Inside", TABLE_STR, TABLE_COL_MINOR | TABLE_COL_IF_ANY },
	[C_CLOCK_ONCPU] = { "clock_oncpu_ns", "On CPU By Its Clock", TABLE_U64,
			    TABLE_COL_MINOR | TABLE_COL_IF_ANY },
	[C_CLOCK_RUNNABLE] = { "clock_runnable_ns", "Ready By Its Clock", TABLE_U64,
			       TABLE_COL_MINOR | TABLE_COL_IF_ANY },
};

static void *ledger_report_new(void)
{
	return ledger__new(NULL);
}

static void ledger_report_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	ledger__add(st, rec, m);
}

static void row(struct table *t, const struct trace_model *m, const char *unit, __u32 pid,
		__u32 tid, const char *thread, const struct ledger_entry *e, __u64 total)
{
	char who[160];

	table__row(t);
	table__set_str(t, C_UNIT, unit);
	table__set_u64(t, C_PID, pid);
	table__set_u64(t, C_TID, tid);
	table__set_str(t, C_THREAD, thread);
	table__set_str(t, C_KIND, ledger__kind_name(e->kind));
	table__set_str(t, C_WHAT, e->what);
	table__set_str(t, C_WHERE, e->where);
	table__set_u64(t, C_NS, e->ns);
	table__set_double(t, C_SHARE, total ? 100.0 * (double)e->ns / (double)total : 0);
	table__set_u64(t, C_ONCPU, e->oncpu_ns);
	table__set_u64(t, C_RUNNABLE, e->runnable_ns);
	table__set_u64(t, C_BLOCKED, e->ns - e->oncpu_ns - e->runnable_ns);
	table__set_u64(t, C_OWN, e->own_ns);
	if (e->waker) {
		const char *name = trace_model__thread_name(m, e->waker);

		if (e->waker_pid) /* else a thread of no traced process: its name and tid */
			verdict__thread_in(m, e->waker_pid, e->waker, who, sizeof(who));
		else
			snprintf(who, sizeof(who), "%s (tid %u)", name && *name ? name : "thread",
				 e->waker);
		table__set_str(t, C_WAKER, who);
		table__set_str(t, C_WAKER_WHERE, e->waker_where);
	}
	table__set_u64(t, C_IDLE, e->idle);
	if (e->kind == LEDGER_RUNNABLE) /* what it waited for a CPU inside: "CPU", its own code */
		table__set_str(t, C_INSIDE, ledger__kind_name(e->inside));
}

#define CLOCK_AGREE 0.05 /* of its time: the ledger and a thread's own clocks agree within */

#define NAMED 4 /* threads a note names; "and N more" */

/* "tid 5" or "tids 5, 6, 7, 8 and 2 more": the first NAMED of N threads. */
static const char *tids_text(char *buf, size_t len, const __u32 *tid, __u32 n)
{
	size_t used = snprintf(buf, len, "tid%s", n == 1 ? "" : "s");

	for (__u32 i = 0; i < n && i < NAMED && used < len; i++)
		used += snprintf(buf + used, len - used, "%s %u", i ? "," : "", tid[i]);
	if (n > NAMED && used < len)
		snprintf(buf + used, len - used, " and %u more", n - NAMED);
	return buf;
}

/*
 * A row per thread read at both edges (-p): its time on a CPU and ready to run between them,
 * by the ledger's timeline and by its own clocks (the kernel's schedstat); a note where they
 * part (switches sched's probes missed: its loss says how many).
 */
static void check_rows(struct ledger *l, const struct trace_model *m, struct table *t)
{
	struct ledger_check c;
	double worst = 0;
	__u32 wtid = 0, stale[NAMED], nstale = 0, skewed[NAMED], nskewed = 0;
	char tids[96];
	__u64 skew = 0;
	size_t it = 0;

	while (ledger__check(l, &it, &c)) {
		const char *name = trace_model__thread_name(m, c.tid);
		double d1 = ((double)c.oncpu_ns - (double)c.clock_oncpu_ns) / (double)c.window_ns;
		double d2 =
			((double)c.runnable_ns - (double)c.clock_runnable_ns) / (double)c.window_ns;

		table__row(t);
		table__set_str(t, C_UNIT, "clock");
		table__set_u64(t, C_PID, c.pid);
		table__set_u64(t, C_TID, c.tid);
		table__set_str(t, C_THREAD, name ? name : "");
		table__set_str(t, C_KIND, "check");
		table__set_str(t, C_WHAT, "its own clocks between the edges");
		table__set_u64(t, C_NS, c.window_ns);
		table__set_u64(t, C_ONCPU, c.oncpu_ns);
		table__set_u64(t, C_RUNNABLE, c.runnable_ns);
		table__set_u64(t, C_CLOCK_ONCPU, c.clock_oncpu_ns);
		if (c.clock_skew_ns) { /* taken out, said below */
			if (nskewed < NAMED)
				skewed[nskewed] = c.tid;
			nskewed++;
			skew += c.clock_skew_ns;
		}
		if (c.clock_stale) { /* no check: left empty, said below */
			if (nstale < NAMED)
				stale[nstale] = c.tid;
			nstale++;
			d2 = 0;
		} else {
			table__set_u64(t, C_CLOCK_RUNNABLE, c.clock_runnable_ns);
		}
		d1 = d1 < 0 ? -d1 : d1;
		d2 = d2 < 0 ? -d2 : d2;
		if (d1 > worst || d2 > worst) {
			worst = d1 > d2 ? d1 : d2;
			wtid = c.tid;
		}
	}
	if (worst > CLOCK_AGREE)
		table__add_note(
			t,
			"The ledger's timeline of thread %u is %.1f points of its time from "
			"its own clocks: context switches were missed (sched_missed)",
			wtid, 100 * worst);
	if (nskewed)
		table__add_note(
			t,
			"Ready By Its Clock leaves out %.1f ms that the kernel's schedstat "
			"counted as ready to run for %u thread%s (%s) while %s slept: "
			"moved to another CPU with %s dequeue delayed (6.12+), a thread keeps "
			"a stale queue stamp (clock_skew records)",
			skew / 1e6, nskewed, nskewed == 1 ? "" : "s",
			tids_text(tids, sizeof(tids), skewed, nskewed),
			nskewed == 1 ? "it" : "they", nskewed == 1 ? "its" : "their");
	if (nstale)
		table__add_note(
			t,
			"Ready By Its Clock is left empty for %u thread%s (%s): asleep at the "
			"start after the kernel moved %s to another CPU with %s dequeue "
			"delayed (6.12+), %s schedstat counts that sleep as a wait for a CPU",
			nstale, nstale == 1 ? "" : "s",
			tids_text(tids, sizeof(tids), stale, nstale), nstale == 1 ? "it" : "them",
			nstale == 1 ? "its" : "their", nstale == 1 ? "its" : "their");
}

static int ledger_report_emit(void *st, const struct trace_model *m, struct table *t)
{
	const struct ledger_entry *e;
	struct ledger_unit u;
	size_t n, it = 0;
	__u32 pid, tid;
	__u64 total;
	int err = ledger__build_all(st, m);

	if (err)
		return err;
	table__add_cols(t, cols, NCOLS);
	if (!ledger__has_timeline(st)) {
		table__add_note(t, "sched was not recorded: the ledger is made of its timeline");
		return table__err(t);
	}
	if (!ledger__critical(st, &u, &e, &n)) {
		char name[200];

		snprintf(name, sizeof(name), "%s (%u thread%s, pid %u)", u.name, u.nthreads,
			 u.nthreads == 1 ? "" : "s", u.pid);
		for (size_t i = 0; i < n; i++)
			row(t, m, "critical", u.pid, u.nthreads == 1 ? u.tid : 0, name, &e[i],
			    u.total_ns);
	}
	while (ledger__next_thread(st, &it, &pid, &tid)) {
		const char *name = trace_model__thread_name(m, tid);

		e = ledger__thread(st, pid, tid, &n, &total);
		for (size_t i = 0; i < n; i++)
			row(t, m, "thread", pid, tid, name ? name : "", &e[i], total);
	}
	check_rows(st, m, t);
	table__add_note(t, "Every thread's time in the recording is in one entry of its own rows; "
			   "the critical unit (the thread or pool that carries the job) first.");
	return table__err(t);
}

const struct report ledger_report = {
	.name = "ledger",
	.desc = "where each thread's time went: every ns in one entry, what and where (the "
		"verdict's account)",
	.new = ledger_report_new,
	.add = ledger_report_add,
	.emit = ledger_report_emit,
	.free = (void (*)(void *))ledger__free,
};
