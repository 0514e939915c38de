// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cpu family in the exports (export_model.h): its samples are drawn by their style (a
 * sample of its thread's stack). Table: BPFSIGHT_CPU_SAMPLES, one row per sample: its thread,
 * CPU, whether it was taken in kernel code (its stack is then where the thread entered the
 * kernel) and whether the thread held the GIL (NULL: not a Python thread bpfsight reads), and
 * its stack (callchainId, a BPFSIGHT_STACKS id; NULL: none could be read). nsys keeps its
 * samples in COMPOSITE_EVENTS with a callchain per sample; ours are interned, shared with every
 * event. docs/EXPORT.md's cpu_sum query sums it as `stats -r cpu_sum` does.
 */
#include "cpu.h"
#include "export_model.h"

static const struct ex_column samples_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT_NN("globalTid"),
	EXC_INT_NN("cpu"),
	EXC_INT_NN("kernel"),
	EXC_INT("gil"),
	EXC_INT("callchainId"),
	{ 0 },
};
static const struct ex_index samples_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ "callchainId", "callchainId" },
	{ 0 },
};
static const struct ex_table cpu_samples = {
	"BPFSIGHT_CPU_SAMPLES",
	samples_cols,
	.indexes = samples_idx,
};

static const struct ex_table *const cpu_tables[] = { &cpu_samples, NULL };

static int cpu_record(struct ex_sink *s, void *st, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_cpu_sample *c = (const void *)rec;

	if (rec->type != BS_REC_CPU_SAMPLE || !ev)
		return 0;
	return ex_row(s, &cpu_samples, EX_ROW_ADD,
		      (struct ex_value[]){
			      EX_V_INT(rec->ts), EX_V_INT(ex_gtid(rec->pid, rec->tid)),
			      EX_V_INT(rec->cpu), EX_V_INT(!!(c->flags & BS_CPU_KERNEL)),
			      EX_V_INT_IF(c->flags & BS_CPU_PYTHON, !!(c->flags & BS_CPU_GIL)),
			      EX_V_STACK(ev->stack) },
		      NULL);
}

const struct family_export cpu_export = {
	.tables = cpu_tables,
	.record = cpu_record,
};
