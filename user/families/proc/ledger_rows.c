// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ledger in a file's rows (EX_ROWS: export --format clickhouse, ship), so that stats --from
 * words the verdict's first lines from the same ledger stats FILE builds (ledger.h): every
 * record fed to a ledger as the rows are rendered, by the same C the pass runs, and at the end
 * its critical unit written as rows of proc's own:
 * - `ledger_unit` (of its pid and tid, named by the unit's name): its threads, their time, the
 *   CPUs and the job's threads busy at once, the weight it was chosen by (`score`: a job's
 *   files' units are compared by it, the best one's lines are the job's);
 * - `ledger_entry` (named by the entry's what), one per entry, the largest first (`i`): its
 *   kind, where, inside, its times, its waker and where that was;
 * - `ledger_input` (of a thread): its time waiting for its DataLoader's next batch, which the
 *   input rule reads (ledger__time_in).
 * Memory: the ledger's, as stats FILE's (bench/RESULTS.md).
 */
#include "export_model.h"
#include "ledger.h"
#include "proc.h"

void *proc_ledger_rows__new(void)
{
	return ledger__new(NULL);
}

void proc_ledger_rows__free(void *st)
{
	ledger__free(st);
}

int proc_ledger_rows__record(struct ex_sink *s, void *st, const struct bs_hdr *rec)
{
	ledger__add(st, rec, s->model);
	return 0;
}

static int unit_row(struct ex_sink *s, const struct ledger_unit *u)
{
	const struct ex_value v[] = {
		{ .key = "threads", .kind = EX_UINT, .u = u->nthreads },
		{ .key = "total_ns", .kind = EX_UINT, .u = u->total_ns },
		{ .key = "job_threads", .kind = EX_UINT, .u = u->job_threads },
		{ .key = "cpus", .kind = EX_UINT, .u = u->cpus },
		{ .key = "score", .kind = EX_UINT, .u = u->score },
	};

	return ex_own_row(s, u->pid, u->tid, "ledger_unit", u->name, v, sizeof(v) / sizeof(v[0]));
}

static int entry_row(struct ex_sink *s, const struct ledger_unit *u, const struct ledger_entry *e,
		     size_t i)
{
	const struct ex_value v[] = {
		{ .key = "i", .kind = EX_UINT, .u = i },
		{ .key = "entry", .kind = EX_TEXT, .s = ledger__kind_key(e->kind) },
		{ .key = "where", .kind = EX_TEXT, .s = e->where ? e->where : "" },
		{ .key = "inside", .kind = EX_TEXT, .s = ledger__kind_key(e->inside) },
		{ .key = "ns", .kind = EX_UINT, .u = e->ns },
		{ .key = "oncpu_ns", .kind = EX_UINT, .u = e->oncpu_ns },
		{ .key = "runnable_ns", .kind = EX_UINT, .u = e->runnable_ns },
		{ .key = "own_ns", .kind = EX_UINT, .u = e->own_ns },
		{ .key = "waker", .kind = EX_UINT, .u = e->waker },
		{ .key = "waker_ns", .kind = EX_UINT, .u = e->waker_ns },
		{ .key = "waker_where",
		  .kind = EX_TEXT,
		  .s = e->waker_where ? e->waker_where : "" },
		{ .key = "idle", .kind = EX_UINT, .u = e->idle },
		{ .key = "own", .kind = EX_UINT, .u = e->own },
	};

	return ex_own_row(s, u->pid, u->tid, "ledger_entry", e->what ? e->what : "", v,
			  sizeof(v) / sizeof(v[0]));
}

int proc_ledger_rows__end(struct ex_sink *s, void *st)
{
	const struct ledger_entry *e;
	struct ledger_unit u;
	__u32 pid, tid;
	size_t n, it = 0;
	int err = ledger__build(st, s->model);

	if (err || !ledger__has_timeline(st) || ledger__critical(st, &u, &e, &n))
		return err;
	err = unit_row(s, &u);
	for (size_t i = 0; !err && i < n; i++)
		err = entry_row(s, &u, &e[i], i);
	while (!err && ledger__next_thread(st, &it, &pid, &tid)) {
		__u64 ns = ledger__time_in(st, pid, tid, LEDGER_INPUT);
		const struct ex_value v = { .key = "ns", .kind = EX_UINT, .u = ns };

		if (ns)
			err = ex_own_row(s, pid, tid, "ledger_input", "", &v, 1);
	}
	return err;
}
