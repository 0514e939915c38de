// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The sched family's metrics: per process, its threads' time off the CPU by what they did. */
#include "metrics_family.h"
#include "sched.h"

enum { OFF_SLEEPING, OFF_DISK, OFF_RUNNABLE, OFF_OTHER, OFF_NR };

struct sched_series {
	__u64 offcpu_ns[OFF_NR];
};

static void sched_metrics_record(struct metrics *m, void *st, const struct bs_hdr *h)
{
	const struct bs_offcpu *r = (const void *)h;
	struct sched_series *s;
	__u64 runnable;
	int blocked = OFF_OTHER;

	if (h->type != BS_REC_OFFCPU || !(s = metrics__series(m, &family_sched, h->pid, 1)))
		return;
	runnable = r->runnable_ns < r->dur ? r->runnable_ns : r->dur;
	/* prev_state: TASK_INTERRUPTIBLE 1, TASK_UNINTERRUPTIBLE 2; 0 was preempted. */
	if (r->state == 0)
		blocked = OFF_RUNNABLE;
	else if (r->state & 1)
		blocked = OFF_SLEEPING;
	else if (r->state & 2)
		blocked = OFF_DISK;
	s->offcpu_ns[OFF_RUNNABLE] += runnable;
	s->offcpu_ns[blocked] += r->dur - runnable;
}

static void sched_metrics_render(FILE *f, void *st, const struct metrics_owner *ow, size_t n)
{
	static const char *const states[OFF_NR] = { "sleeping", "disk", "runnable", "other" };
	const struct sched_series *s;

	metrics__head(
		f, "bpfsight_offcpu_seconds_total", "counter",
		"Time threads spent off CPU: sleeping (interruptible), disk (uninterruptible), "
		"runnable (waiting for a CPU), other.");
	for (size_t i = 0; i < n; i++)
		for (int k = 0; (s = metrics_owner__series(&ow[i], &family_sched)) && k < OFF_NR;
		     k++) {
			if (!s->offcpu_ns[k])
				continue;
			fputs("bpfsight_offcpu_seconds_total{", f);
			metrics__owner_labels(f, &ow[i]);
			fprintf(f, ",state=\"%s\"} %.9f\n", states[k], s->offcpu_ns[k] / 1e9);
		}
}

const struct metrics_family sched_metrics = {
	.series_size = sizeof(struct sched_series),
	.record = sched_metrics_record,
	.render = sched_metrics_render,
};
