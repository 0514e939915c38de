// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gemm_step_sum: per training step, the FLOPs of the cuBLAS GEMMs the step called, the FLOP/s
 * achieved over the step's time and the MFU: the share of the step the GPU would have needed
 * at its peak for those GEMMs, sum(flops / peak of their types) / step time. Steps are the
 * torch family's (BS_REC_TORCH_STEP: ProfilerStep#N or the optimizer's steps); without any, one
 * row spans the GEMMs, from the first call's start to the last one's end.
 *
 * Peaks (dense, no sparsity; TFLOP/s, NVIDIA's data sheets) by GPU and the class of a GEMM's
 * types; --peak-tflops N takes N for every GEMM instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "cublas_decode.h"
#include "msg.h"
#include "table.h"
#include "torch_records.h"

enum peak_class { P_FP64, P_FP32, P_TF32, P_16, P_FP8, P_INT8, P_NCLASS };

static const struct {
	const char *gpu;
	double tflops[P_NCLASS];
} peaks[] = {
	/*               fp64   fp32   tf32   bf16/fp16  fp8     int8 */
	{ "h100-sxm", { 67.0, 67.0, 494.7, 989.4, 1978.9, 1978.9 } },
	{ "h100-pcie", { 51.2, 51.2, 378.0, 756.0, 1513.0, 1513.0 } },
	{ "h200", { 67.0, 67.0, 494.7, 989.4, 1978.9, 1978.9 } },
	{ "a100", { 19.5, 19.5, 156.0, 312.0, 0, 624.0 } },
	{ "l4", { 0.5, 30.3, 60.0, 121.0, 242.0, 242.0 } },
};

#define NPEAKS (sizeof(peaks) / sizeof(peaks[0]))

/* The class of a GEMM's peak: its input type, and TF32 where the compute type asks for it. */
static int peak_class(const struct cublas_gemm *g)
{
	const char *a = cublas__type_name(g->atype), *c = cublas__compute_name(g->compute);

	if (!a)
		return -1;
	if (strstr(a, "_8F_") || strstr(a, "_6F_") || strstr(a, "_4F_"))
		return P_FP8;
	if (strstr(a, "16F") || strstr(a, "16BF") || (c && strstr(c, "FAST_16")))
		return P_16;
	if (strstr(a, "8I") || strstr(a, "8U"))
		return P_INT8;
	if (strstr(a, "64F"))
		return P_FP64;
	return c && strstr(c, "TF32") ? P_TF32 : P_FP32;
}

struct step_gemm {
	__u32 pid;
	__u64 ts, end, flops;
	__s8 cls;
};

struct step_row {
	__u32 pid;
	__u64 step, ts, dur;
};

struct step_sum {
	struct step_gemm *gemms;
	struct step_row *steps;
	size_t ngemms, cap_gemms, nsteps, cap_steps;
	int err;
};

static void *step_sum__new(void)
{
	return calloc(1, sizeof(struct step_sum));
}

static void step_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_torch_step *ts = (const void *)rec;
	const struct bs_ucall *u = (const void *)rec;
	struct step_sum *st = vst;
	struct cublas_gemm g;

	if (rec->type == BS_REC_TORCH_STEP && rec->size >= sizeof(*ts)) {
		if (array__grow((void **)&st->steps, st->nsteps, &st->cap_steps,
				sizeof(*st->steps)))
			st->err = -ENOMEM;
		else
			st->steps[st->nsteps++] =
				(struct step_row){ rec->pid, ts->step, rec->ts, ts->dur };
		return;
	}
	if (rec->type != BS_REC_CUBLAS_CALL || rec->size < sizeof(*u) || u->depth ||
	    !cublas__gemm(trace_model__walk(m, &family_cublas), rec, &g) || !g.flops)
		return;
	if (array__grow((void **)&st->gemms, st->ngemms, &st->cap_gemms, sizeof(*st->gemms)))
		st->err = -ENOMEM;
	else
		st->gemms[st->ngemms++] = (struct step_gemm){ rec->pid, rec->ts, rec->ts + u->dur,
							      g.flops, (__s8)peak_class(&g) };
}

/* --peak-tflops: a number (*N), or a GPU of the table (*GPU); 0, or -EINVAL said. */
static int parse_peak(const char *arg, double *n, int *gpu)
{
	char *end;

	*n = 0;
	*gpu = -1;
	if (!arg)
		return 0;
	for (size_t i = 0; i < NPEAKS; i++)
		if (!strcmp(arg, peaks[i].gpu)) {
			*gpu = (int)i;
			return 0;
		}
	*n = strtod(arg, &end);
	if (end != arg && !*end && *n > 0)
		return 0;
	pr_err("--peak-tflops %s: give TFLOP/s (989) or a GPU: h100-sxm, h100-pcie, h200, a100, "
	       "l4\n",
	       arg);
	return -EINVAL;
}

/* A GEMM's time at peak (ns), or -1 when its class has no peak on GPU. */
static double at_peak_ns(const struct step_gemm *g, double n, int gpu)
{
	double tf = n;

	if (gpu >= 0)
		tf = g->cls >= 0 ? peaks[gpu].tflops[(int)g->cls] : 0;
	return tf > 0 ? (double)g->flops / (tf * 1e3) : -1;
}

static int step_sum__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			      struct table *t)
{
	enum { PID, STEP, DUR, GEMMS, FLOPS, TFLOPS, MFU, NCOLS };
	struct step_sum *st = vst;
	struct step_row all = { 0 };
	int c[NCOLS], gpu, err;
	double n;

	if (st->err)
		return st->err;
	err = parse_peak(ask->peak, &n, &gpu);
	if (err)
		return err;
	c[PID] = table__add_col(t, "pid", "PID", TABLE_U64);
	c[STEP] = table__add_col(t, "step", "Step", TABLE_STR);
	c[DUR] = table__add_col(t, "step_ns", "Step Time (ns)", TABLE_U64);
	c[GEMMS] = table__add_col(t, "gemms", "GEMMs", TABLE_U64);
	c[FLOPS] = table__add_col(t, "flops", "FLOPs", TABLE_U64);
	c[TFLOPS] = table__add_col(t, "tflops", "TFLOP/s", TABLE_DOUBLE);
	c[MFU] = table__add_col(t, "mfu_pct", "MFU (%)", TABLE_DOUBLE);
	table__set_precision(t, c[TFLOPS], 2);
	table__set_precision(t, c[MFU], 2);
	if (!st->nsteps && st->ngemms) {
		/* No steps: the GEMMs' span, in one row. */
		__u64 lo = st->gemms[0].ts, hi = st->gemms[0].end;

		for (size_t i = 1; i < st->ngemms; i++) {
			lo = st->gemms[i].ts < lo ? st->gemms[i].ts : lo;
			hi = st->gemms[i].end > hi ? st->gemms[i].end : hi;
		}
		all = (struct step_row){ 0, 0, lo, hi - lo };
	}
	for (size_t s = 0; s < (st->nsteps ? st->nsteps : !!st->ngemms); s++) {
		const struct step_row *r = st->nsteps ? &st->steps[s] : &all;
		__u64 count = 0, flops = 0;
		double peak_ns = 0;
		int peak_known = n > 0 || gpu >= 0;
		char step[24];

		for (size_t i = 0; i < st->ngemms; i++) {
			const struct step_gemm *g = &st->gemms[i];
			double p;

			if ((st->nsteps && g->pid != r->pid) || g->ts < r->ts ||
			    g->ts >= r->ts + r->dur + !st->nsteps)
				continue;
			count++;
			flops += g->flops;
			p = at_peak_ns(g, n, gpu);
			if (p < 0)
				peak_known = 0;
			peak_ns += p;
		}
		table__row(t);
		if (st->nsteps) {
			table__set_u64(t, c[PID], r->pid);
			snprintf(step, sizeof(step), "%llu", (unsigned long long)r->step);
		} else {
			snprintf(step, sizeof(step), "all");
		}
		table__set_str(t, c[STEP], step);
		table__set_u64(t, c[DUR], r->dur);
		table__set_u64(t, c[GEMMS], count);
		table__set_u64(t, c[FLOPS], flops);
		if (r->dur)
			table__set_double(t, c[TFLOPS], (double)flops / (double)r->dur / 1e3);
		if (r->dur && peak_known && count)
			table__set_double(t, c[MFU], 100.0 * peak_ns / (double)r->dur);
	}
	if (!ask->peak)
		table__add_note(t, "MFU: give --peak-tflops N (TFLOP/s) or a GPU (h100-sxm, ...)");
	return table__err(t);
}

static int step_sum__emit(void *vst, const struct trace_model *m, struct table *t)
{
	static const struct report_ask none;

	return step_sum__emit_for(vst, m, &none, t);
}

static void step_sum__free(void *vst)
{
	struct step_sum *st = vst;

	if (!st)
		return;
	free(st->gemms);
	free(st->steps);
	free(st);
}

const struct report cublas_gemm_step_sum = {
	.name = "gemm_step_sum",
	.desc = "cuBLAS GEMM FLOPs per step: TFLOP/s achieved and MFU",
	.new = step_sum__new,
	.add = step_sum__add,
	.emit = step_sum__emit,
	.emit_for = step_sum__emit_for,
	.free = step_sum__free,
};
