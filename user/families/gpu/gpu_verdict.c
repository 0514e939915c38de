// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpu's rules for stats' verdict (verdict.h), from gpu_idle_sum: a GPU busy most of its span
 * is GPU-bound; one idle much of it in many gaps shorter than 1 ms is launch-bound (it ran
 * each kernel as soon as the host launched it, then waited for the next: nsys's "GPU
 * starvation"), with the kernels' and launches' times from cuda_kern_exec_sum; else how busy
 * it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu.h"
#include "gpu_decode.h"
#include "human.h"
#include "table.h"
#include "trace_model.h"
#include "verdict.h"

#define GPU_BOUND_SHARE	   0.80 /* of the span busy */
#define LAUNCH_IDLE_SHARE  0.30 /* of the span idle, */
#define LAUNCH_SHORT_SHARE 0.50 /* of which at least this in gaps under 1 ms, */
#define LAUNCH_MIN_GAPS	   100	/* in at least this many gaps */

/* Kernels' and their launches' mean times over cuda_kern_exec_sum's rows, as a detail. */
static void detail_launches(struct verdict *v)
{
	const struct table *t = verdict__table(v, "cuda_kern_exec_sum");
	double n = 0, api = 0, kern = 0, queue = 0, c;
	char d1[32], d2[32], d3[32];
	int cc, ca, ck, cq;

	if (!t || !table__nrows(t))
		return;
	cc = table__col(t, "count");
	ca = table__col(t, "api_avg_ns");
	ck = table__col(t, "kernel_avg_ns");
	cq = table__col(t, "queue_avg_ns");
	for (int r = 0; r < table__nrows(t); r++) {
		c = table__get_number(t, r, cc);
		n += c;
		api += c * table__get_number(t, r, ca);
		kern += c * table__get_number(t, r, ck);
		queue += c * table__get_number(t, r, cq);
	}
	if (n <= 0)
		return;
	verdict__detail(v, -1, "cuda_kern_exec_sum",
			"its kernels ran %s on average, after %s in the queue; their launch calls "
			"took %s on the host",
			human__ns(kern / n, d1, sizeof(d1)), human__ns(queue / n, d2, sizeof(d2)),
			human__ns(api / n, d3, sizeof(d3)));
}

static void claim_device(const struct gpu_idle_dev *d, void *arg)
{
	struct verdict *v = arg;
	const char *proc = trace_model__process_name(verdict__model(v), d->pid);
	__u64 idle = d->span - d->busy;
	char gpu[96], d1[32], d2[32], d3[32];
	double busy = d->span ? (double)d->busy / d->span : 0;

	if (!d->span)
		return;
	snprintf(gpu, sizeof(gpu), "GPU %u of %s (pid %u)", d->device, proc ? proc : "?", d->pid);
	if (busy >= GPU_BOUND_SHARE) {
		verdict__claim(v, VERDICT_GPU, 1, busy, "gpu_idle_sum", "%s was busy %s of its %s",
			       gpu, human__ns((double)d->busy, d1, sizeof(d1)),
			       human__ns((double)d->span, d2, sizeof(d2)));
		return;
	}
	if ((double)idle / d->span >= LAUNCH_IDLE_SHARE && d->gaps >= LAUNCH_MIN_GAPS &&
	    (double)d->short_idle / idle >= LAUNCH_SHORT_SHARE) {
		verdict__claim(v, VERDICT_LAUNCH, 1, (double)idle / d->span, "gpu_idle_sum",
			       "%s sat idle %s of its %s, %s of it in %llu gaps under 1 ms between "
			       "kernels: it ran them faster than the host launched them",
			       gpu, human__ns((double)idle, d1, sizeof(d1)),
			       human__ns((double)d->span, d2, sizeof(d2)),
			       human__ns((double)d->short_idle, d3, sizeof(d3)),
			       (unsigned long long)(d->gaps - d->long_gaps));
		detail_launches(v);
		return;
	}
	verdict__claim(v, VERDICT_GPU, 0, busy, "gpu_idle_sum",
		       "%s was busy %s of its %s; idle in %llu gaps, %llu of them of 1 ms or more "
		       "(the longest %s)",
		       gpu, human__ns((double)d->busy, d1, sizeof(d1)),
		       human__ns((double)d->span, d2, sizeof(d2)), (unsigned long long)d->gaps,
		       (unsigned long long)d->long_gaps,
		       human__ns((double)d->max_gap, d3, sizeof(d3)));
}

/*
 * The devices from a server's answer (stats --from: gpu_idle_devs, what gpu_idle_sum's sweep
 * finds per process and device); after a pass, gpu_idle_sum's own state has them.
 */
struct gpu_rule {
	struct gpu_idle_dev *devs;
	int n, loaded;
};

static void *gpu_rule__new(void)
{
	return calloc(1, sizeof(struct gpu_rule));
}

static void gpu_rule__free(void *vst)
{
	struct gpu_rule *st = vst;

	if (st)
		free(st->devs);
	free(st);
}

static int gpu_rule__load(void *vst, const char *name, const struct table *t)
{
	static const char *const keys[] = { "pid",  "device",	"span_ns",	 "busy_ns",
					    "gaps", "gaps_1ms", "short_idle_ns", "max_gap_ns" };
	struct gpu_rule *st = vst;
	int c[8];

	for (int i = 0; i < 8; i++)
		if ((c[i] = table__col(t, keys[i])) < 0)
			return -EINVAL;
	st->devs = calloc(table__nrows(t) + 1, sizeof(*st->devs));
	if (!st->devs)
		return -ENOMEM;
	for (int r = 0; r < table__nrows(t); r++)
		st->devs[st->n++] = (struct gpu_idle_dev){
			.pid = (__u32)table__get_u64(t, r, c[0]),
			.device = (__u32)table__get_u64(t, r, c[1]),
			.span = table__get_u64(t, r, c[2]),
			.busy = table__get_u64(t, r, c[3]),
			.gaps = table__get_u64(t, r, c[4]),
			.long_gaps = table__get_u64(t, r, c[5]),
			.short_idle = table__get_u64(t, r, c[6]),
			.max_gap = table__get_u64(t, r, c[7]),
		};
	st->loaded = 1;
	return 0;
}

static void gpu_claims(void *vst, struct verdict *v)
{
	void *idle = verdict__state(v, "gpu_idle_sum");
	struct gpu_rule *st = vst;

	for (int i = 0; st->loaded && i < st->n; i++)
		claim_device(&st->devs[i], v);
	if (!st->loaded && idle && verdict__table(v, "gpu_idle_sum"))
		gpu_idle__each(idle, claim_device, v);
}

const struct family_verdict gpu_verdict = {
	.new = gpu_rule__new,
	.claims = gpu_claims,
	.free = gpu_rule__free,
	.reads = "gpu_idle_devs,cuda_kern_exec_sum?",
	.load = gpu_rule__load,
};
