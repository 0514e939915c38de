// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cublas's rule for stats' verdict (verdict.h): a low MFU. Over the steps gemm_step_sum gave
 * an MFU (the steps' GEMMs' time at the peak over the steps' time), when that share is under
 * LOW_MFU the verdict says how far the GEMMs are from the peak and how idle the GPU was
 * (gpu_idle_sum's rows of the steps' processes), and so where to look next: a GPU idle much
 * of its span waits for the host; a busy one runs small GEMMs or other kernels.
 *
 * LOW_MFU, 30 %: tuned large-model training reports about 40 % and more (PaLM 46 %, Llama 3
 * 38 to 43 % on H100s); the large GPU runs before PaLM reported 21 to 32 % (GPT-3, Megatron-
 * Turing NLG, Gopher), what ML engineers call low. Only cuBLAS's GEMMs count here (not
 * attention kernels of other libraries), which makes this MFU a lower bound of the model's:
 * under 30 % it is low by any count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cublas.h"
#include "cublas_mfu.h"
#include "human.h"
#include "table.h"
#include "verdict.h"

#define LOW_MFU	     0.30
#define IDLE_WAITING 0.30 /* of the GPU's span idle: it waits for the host (gpu's verdict) */

/*
 * The rule's state: after a pass, gemm_step_sum's (its report's); from a server's answer
 * (stats --from: cublas_step_gemms), the summary loaded here.
 */
static void *mfu_rule__new(void)
{
	return calloc(1, sizeof(struct gemm_mfu_from));
}

static void mfu_rule__free(void *vst)
{
	struct gemm_mfu_from *f = vst;

	if (f)
		free(f->pids);
	free(f);
}

static int mfu_rule__load(void *vst, const char *name, const struct table *t)
{
	return strcmp(name, "cublas_step_gemms") ? 0 : cublas_mfu__load(vst, t);
}

/* 1 when the summary is of process PID: the loaded one's (FROM), else the pass's (ST). */
static int of_pid(const struct gemm_mfu_from *from, const void *st, __u32 pid)
{
	return from ? cublas_mfu__from_has_pid(from, pid) : cublas_mfu__has_pid(st, pid);
}

/*
 * The GPU's idle share over the steps' processes' devices, -1 unknown: gpu_idle_sum's rows
 * after a pass, gpu_idle_devs' from a server (their span less the time busy).
 */
static double gpu_idle(struct verdict *v, const struct gemm_mfu_from *from, const void *st)
{
	const struct table *t = verdict__table(v, from ? "gpu_idle_devs" : "gpu_idle_sum");
	double span = 0, idle = 0;
	int cp, cs, ci;

	if (!t)
		return -1;
	cp = table__col(t, "pid");
	cs = table__col(t, "span_ns");
	ci = table__col(t, from ? "busy_ns" : "idle_ns");
	for (int r = 0; r < table__nrows(t); r++) {
		double s = table__get_number(t, r, cs);

		if (!of_pid(from, st, (__u32)table__get_number(t, r, cp)))
			continue;
		span += s;
		idle += from ? s - table__get_number(t, r, ci) : table__get_number(t, r, ci);
	}
	return span > 0 ? idle / span : -1;
}

static void cublas_claims(void *vst, struct verdict *v)
{
	const struct gemm_mfu_from *from =
		vst && ((struct gemm_mfu_from *)vst)->loaded ? vst : NULL;
	const void *st = verdict__state(v, "gemm_step_sum");
	const struct gemm_mfu *s;
	char over[96], idle_text[64] = "", d1[32];
	double mfu, idle;

	if (from)
		s = &from->sum;
	else if (st && verdict__table(v, "gemm_step_sum"))
		s = cublas_mfu__summary(st);
	else
		return;
	if (!s->known || !s->steps || !s->step_ns)
		return;
	mfu = s->peak_ns / (double)s->step_ns;
	if (mfu >= LOW_MFU)
		return;
	if (s->by_step)
		snprintf(over, sizeof(over), "over %llu steps (%s)", (unsigned long long)s->steps,
			 human__ns((double)s->step_ns, d1, sizeof(d1)));
	else
		snprintf(over, sizeof(over),
			 "over the %s from the first GEMM to the last (no training steps)",
			 human__ns((double)s->step_ns, d1, sizeof(d1)));
	idle = gpu_idle(v, from, st);
	if (idle >= 0)
		snprintf(idle_text, sizeof(idle_text), "; GPU idle %.1f%% of its span", idle * 100);
	verdict__claim(v, VERDICT_MFU, 1, mfu, "gemm_step_sum", "GEMMs reach %.1f%% of %s %s%s",
		       mfu * 100, s->peak_of, over, idle_text);
	if (idle < 0)
		verdict__detail(v, -1, "",
				"record -t gpu too to see whether the GPU waits for the host or "
				"runs other kernels");
	else if (idle >= IDLE_WAITING)
		verdict__detail(v, -1, "gpu_idle_sum",
				"the GPU waits for work: look at the host first (its gaps, then "
				"what the launching thread did in them)");
	else
		verdict__detail(v, -1, "gemm_sum",
				"the GPU is busy, not in large GEMMs: the GEMMs' shapes and "
				"TFLOP/s, then the kernels that take its time (cuda_gpu_kern_sum)");
}

const struct family_verdict cublas_verdict = {
	.new = mfu_rule__new,
	.claims = cublas_claims,
	.free = mfu_rule__free,
	.reads = "cublas_step_gemms,gpu_idle_devs",
	.load = mfu_rule__load,
};
