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
#include <string.h>
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

/*
 * What cuda_kern_exec_sum's rows add up to: the kernels, their time, their launching calls'
 * and their waits in the queue (a server's answer loads it: gpu_launch_totals).
 */
struct launch_totals {
	double n, api, kern, queue;
	int loaded;
};

/* T's rows summed into L, each row's averages times its count. */
static void launch_totals(const struct table *t, struct launch_totals *l)
{
	int cc = table__col(t, "count"), ca = table__col(t, "api_avg_ns"),
	    ck = table__col(t, "kernel_avg_ns"), cq = table__col(t, "queue_avg_ns");
	double c;

	for (int r = 0; r < table__nrows(t); r++) {
		c = table__get_number(t, r, cc);
		l->n += c;
		l->api += c * table__get_number(t, r, ca);
		l->kern += c * table__get_number(t, r, ck);
		l->queue += c * table__get_number(t, r, cq);
	}
}

/* Kernels' and their launches' mean times (LOADED's, else cuda_kern_exec_sum's), a detail. */
static void detail_launches(struct verdict *v, const struct launch_totals *loaded)
{
	const struct table *t = verdict__table(v, "cuda_kern_exec_sum");
	struct launch_totals l = { 0 };
	double n, api, kern, queue;
	char d1[32], d2[32], d3[32];

	if (loaded->loaded)
		l = *loaded;
	else if (t)
		launch_totals(t, &l);
	n = l.n;
	api = l.api;
	kern = l.kern;
	queue = l.queue;
	if (n <= 0)
		return;
	verdict__detail(v, -1, "cuda_kern_exec_sum",
			"its kernels ran %s on average, after %s in the queue; their launch calls "
			"took %s on the host",
			human__ns(kern / n, d1, sizeof(d1)), human__ns(queue / n, d2, sizeof(d2)),
			human__ns(api / n, d3, sizeof(d3)));
}

/* What claim_device is handed: the verdict, the launches' totals a server's answer gave. */
struct claim_ctx {
	struct verdict *v;
	const struct launch_totals *loaded;
};

static void claim_device(const struct gpu_idle_dev *d, void *arg)
{
	const struct claim_ctx *ctx = arg;
	struct verdict *v = ctx->v;
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
		detail_launches(v, ctx->loaded);
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
	struct launch_totals launches; /* gpu_launch_totals */
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

/* gpu_launch_totals' one row: what cuda_kern_exec_sum's rows add up to. */
static int load_launches(struct gpu_rule *st, const struct table *t)
{
	int cn = table__col(t, "kernels"), ck = table__col(t, "kernel_ns"),
	    ca = table__col(t, "api_ns"), cq = table__col(t, "queue_ns");

	if (cn < 0 || ck < 0 || ca < 0 || cq < 0)
		return -EINVAL;
	st->launches = (struct launch_totals){ .loaded = 1 };
	if (table__nrows(t)) {
		st->launches.n = table__get_number(t, 0, cn);
		st->launches.kern = table__get_number(t, 0, ck);
		st->launches.api = table__get_number(t, 0, ca);
		st->launches.queue = table__get_number(t, 0, cq);
	}
	return 0;
}

static int gpu_rule__load(void *vst, const char *name, const struct table *t)
{
	static const char *const keys[] = { "pid",  "device",	"span_ns",	 "busy_ns",
					    "gaps", "gaps_1ms", "short_idle_ns", "max_gap_ns" };
	struct gpu_rule *st = vst;
	int c[8];

	if (!strcmp(name, "gpu_launch_totals"))
		return load_launches(st, t);
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
	struct claim_ctx ctx = { v, &st->launches };

	for (int i = 0; st->loaded && i < st->n; i++)
		claim_device(&st->devs[i], &ctx);
	if (!st->loaded && idle && verdict__table(v, "gpu_idle_sum"))
		gpu_idle__each(idle, claim_device, &ctx);
}

const struct family_verdict gpu_verdict = {
	.new = gpu_rule__new,
	.claims = gpu_claims,
	.free = gpu_rule__free,
	.reads = "gpu_idle_devs,gpu_launch_totals",
	.load = gpu_rule__load,
};
