// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu's rule for stats' verdict (verdict.h): the code that ran most (cpu_sum's first row that
 * names code: not the kernel, a module's unnamed code or a marker), as py-spy top's first line.
 * How much of a thread's time was on a CPU is sched's to say; this says where. And
 * fault-bound, a process whose CPU went to page faults (cpu_fault.h).
 */
#include <stdio.h>
#include "cpu.h"
#include "cpu_fault.h"
#include "human.h"
#include "table.h"
#include "verdict.h"

static void cpu_top_claim(struct verdict *v)
{
	const struct table *t = verdict__table(v, "cpu_sum");
	int cf, cfile, cl, cs;
	const char *func, *file;

	if (!t)
		return;
	cf = table__col(t, "func");
	cfile = table__col(t, "file");
	cl = table__col(t, "line");
	cs = table__col(t, "self_pct");
	for (int r = 0; r < table__nrows(t); r++) {
		func = table__get_str(t, r, cf);
		if (!func || func[0] == '[')
			continue;
		file = table__get_str(t, r, cfile);
		if (table__get_u64(t, r, cl))
			verdict__claim(v, VERDICT_CPU, 0, table__get_number(t, r, cs) / 100,
				       "cpu_sum", "of the CPU samples, the most ran %s (%s:%llu)",
				       func, file ? human__base(file) : "?",
				       (unsigned long long)table__get_u64(t, r, cl));
		else
			verdict__claim(v, VERDICT_CPU, 0, table__get_number(t, r, cs) / 100,
				       "cpu_sum", "of the CPU samples, the most ran %s (%s)", func,
				       file && *file ? human__base(file) : "?");
		return;
	}
}

static void cpu_claims(void *st, struct verdict *v)
{
	cpu_fault__claims(st, v);
	cpu_top_claim(v);
}

const struct family_verdict cpu_verdict = {
	.new = cpu_fault__new,
	.add = cpu_fault__add,
	.claims = cpu_claims,
	.free = cpu_fault__free,
	/* from a server: cpu_sum and the fault rule's state, cpu_sql.c's SQL */
	.reads = "cpu_sum,cpu_fault_procs",
	.load = cpu_fault__load,
};
