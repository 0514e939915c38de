// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The memory an op's time holds (torch_op_mem.h). */
#include <errno.h>
#include <stdlib.h>
#include "array.h"
#include "mem_live.h"
#include "torch_op_mem.h"
#include "torch_ops.h"

struct torch_op_mem *torch_op_mem__new(void)
{
	struct torch_op_mem *mm = calloc(1, sizeof(*mm));

	if (mm && !(mm->live = mem_live__new())) {
		free(mm);
		return NULL;
	}
	return mm;
}

void torch_op_mem__free(struct torch_op_mem *mm)
{
	if (!mm)
		return;
	mem_live__free(mm->live);
	free(mm->ev);
	free(mm);
}

int torch_op_mem__add(struct torch_op_mem *mm, const struct bs_hdr *rec)
{
	const struct bs_mem_alloc *r = (const void *)rec;
	__u64 bytes;

	if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit) &&
	    ((const struct bs_exit *)rec)->group_dead) {
		mem_live__forget(mm->live, rec->pid); /* its addresses may be another's later */
		return 0;
	}
	if (rec->type != BS_REC_MEM_ALLOC || rec->size < sizeof(*r))
		return 0;
	mm->seen = 1;
	bytes = mem_live__apply(mm->live, r, 0, NULL);
	if (!bytes) /* a CPU block freed that no one saw allocated: torch.profiler has no event */
		return 0;
	if (array__grow((void **)&mm->ev, mm->n, &mm->cap, sizeof(*mm->ev)))
		return -ENOMEM;
	mm->ev[mm->n++] = (struct torch_mem_ev){
		.pid = rec->pid,
		.device = r->device,
		.ts = rec->ts,
		.bytes = r->flags & BS_MEM_FREE ? -(__s64)bytes : (__s64)bytes,
	};
	return 0;
}

static int ev_cmp(const void *x, const void *y)
{
	const struct torch_mem_ev *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return (a->ts > b->ts) - (a->ts < b->ts);
}

/* The first event of (PID, TS) or after it in the sorted events; AFTER: the first past it. */
static size_t bound(const struct torch_mem_ev *ev, size_t n, __u32 pid, __u64 ts, int after)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int before = ev[mid].pid != pid ? ev[mid].pid < pid
						: (after ? ev[mid].ts <= ts : ev[mid].ts < ts);

		if (before)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int torch_op_mem__join(struct torch_op_mem *mm, struct torch_op_row *ops, size_t nops)
{
	size_t n = mm->n;
	/* Bytes of events [0, i) (prefix sums), and how many ops' times begin (+1) or end (-1)
	 * at event i: an event with none open is in no op. */
	__s64 *cpu = malloc((n + 1) * sizeof(*cpu)), *cuda = malloc((n + 1) * sizeof(*cuda));
	long *open = calloc(n + 1, sizeof(*open));
	long inside = 0;
	int err = 0;

	mm->loose = 0;
	mm->loose_cpu = mm->loose_cuda = 0;
	if (!cpu || !cuda || !open) {
		err = -ENOMEM;
		goto out;
	}
	if (n)
		qsort(mm->ev, n, sizeof(*mm->ev), ev_cmp);
	cpu[0] = cuda[0] = 0;
	for (size_t i = 0; i < n; i++) {
		int on_cpu = mm->ev[i].device == BS_MEM_DEV_CPU;

		cpu[i + 1] = cpu[i] + (on_cpu ? mm->ev[i].bytes : 0);
		cuda[i + 1] = cuda[i] + (on_cpu ? 0 : mm->ev[i].bytes);
	}
	for (size_t i = 0; i < nops; i++) {
		struct torch_op_row *o = &ops[i];
		size_t lo = bound(mm->ev, n, o->pid, o->ts, 0);
		size_t hi = bound(mm->ev, n, o->pid, o->ts + o->dur, 1);

		o->cpu_mem = cpu[hi] - cpu[lo];
		o->cuda_mem = cuda[hi] - cuda[lo];
		open[lo]++;
		open[hi]--;
	}
	for (size_t i = 0; i < n; i++) {
		inside += open[i];
		if (inside)
			continue;
		mm->loose++;
		if (mm->ev[i].device == BS_MEM_DEV_CPU)
			mm->loose_cpu += mm->ev[i].bytes;
		else
			mm->loose_cuda += mm->ev[i].bytes;
	}
out:
	free(cpu);
	free(cuda);
	free(open);
	return err;
}
