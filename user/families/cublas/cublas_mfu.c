// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gemm_step_sum: per training step, the FLOPs of the cuBLAS GEMMs the step called, the FLOP/s
 * achieved over the step's time and the MFU: the share of the step the GPU would have needed
 * at its peak for those GEMMs, sum(flops / peak of their types) / step time. Steps are the
 * steps service's (steps.h: torch's, ProfilerStep#N or the optimizer's steps, else the source
 * --steps names), in the trace's order; without any, one row spans the GEMMs, from the first
 * call's start to the last one's end.
 *
 * Peaks (dense, no sparsity; TFLOP/s, NVIDIA's data sheets) by GPU and the class of a GEMM's
 * types; the GPU is the one the trace's header names (BS_META_GPUS), or --peak-tflops GPU;
 * --peak-tflops N takes N for every GEMM instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "cublas_decode.h"
#include "cublas_mfu.h"
#include "msg.h"
#include "steps.h"
#include "table.h"
#include "trace_meta.h"

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

/*
 * The row of a GPU model as the driver names it ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-
 * 40GB", "NVIDIA L4"): by the words of its name, the first rule that matches; NVL boards (two
 * GPUs bridged, other clocks) and anything else have none.
 */
static const struct {
	const char *word, *and_word, *not_word, *gpu;
} model_rules[] = {
	{ "H100", "PCIe", NULL, "h100-pcie" }, { "H100", NULL, "NVL", "h100-sxm" },
	{ "H200", NULL, "NVL", "h200" },       { "GH200", NULL, NULL, "h200" },
	{ "A100", NULL, NULL, "a100" },	       { "L4", NULL, NULL, "l4" },
};

/* 1 when WORD is a word of NAME (between spaces or dashes). */
static int has_word(const char *name, const char *word)
{
	size_t n = word ? strlen(word) : 0;

	for (const char *p = name; n && p && *p; p += strcspn(p, " -"), p += strspn(p, " -"))
		if (strcspn(p, " -") == n && !strncmp(p, word, n))
			return 1;
	return 0;
}

static int peaks_of_model(const char *model)
{
	for (size_t r = 0; model && r < sizeof(model_rules) / sizeof(model_rules[0]); r++) {
		if (!has_word(model, model_rules[r].word) ||
		    (model_rules[r].and_word && !has_word(model, model_rules[r].and_word)) ||
		    (model_rules[r].not_word && has_word(model, model_rules[r].not_word)))
			continue;
		for (size_t i = 0; i < NPEAKS; i++)
			if (!strcmp(peaks[i].gpu, model_rules[r].gpu))
				return (int)i;
	}
	return -1;
}

/* A GEMM's data type, as the verdict names it; its peak's class. */
enum gemm_dtype { D_FP64, D_FP32, D_TF32, D_BF16, D_FP16, D_FP8, D_INT8, D_NTYPES };

static const char *const dtype_name[D_NTYPES] = { "fp64", "fp32", "tf32", "bf16",
						  "fp16", "fp8",  "int8" };
static const enum peak_class class_of[D_NTYPES] = { P_FP64, P_FP32, P_TF32, P_16,
						    P_16,   P_FP8,  P_INT8 };

/*
 * Its input type A, and TF32 or a 16-bit type where the compute type C asks for it: cuBLAS's
 * names ("CUDA_R_16BF", "CUBLAS_COMPUTE_32F_FAST_TF32"), as a record decodes them and as a
 * server's rows have them.
 */
static int dtype_of(const char *a, const char *c)
{
	if (!a || !*a)
		return -1;
	if (strstr(a, "_8F_") || strstr(a, "_6F_") || strstr(a, "_4F_"))
		return D_FP8;
	if (strstr(a, "16BF") || (c && strstr(c, "FAST_16BF")))
		return D_BF16;
	if (strstr(a, "16F") || (c && strstr(c, "FAST_16F")))
		return D_FP16;
	if (strstr(a, "8I") || strstr(a, "8U"))
		return D_INT8;
	if (strstr(a, "64F"))
		return D_FP64;
	return c && strstr(c, "TF32") ? D_TF32 : D_FP32;
}

static int gemm_dtype(const struct cublas_gemm *g)
{
	return dtype_of(cublas__type_name(g->atype), cublas__compute_name(g->compute));
}

struct step_gemm {
	__u32 pid;
	__u64 ts, end, flops;
	__s8 dtype;
};

struct step_row {
	__u32 pid;
	__u64 step, ts, dur;
};

struct step_sum {
	struct step_gemm *gemms;
	size_t ngemms, cap_gemms;
	int err;
	struct gemm_mfu sum;	   /* the rows with an MFU, together */
	const struct steps *steps; /* the rows' steps: emit's (stats keeps them until its end) */
	size_t nsteps;
};

static void *step_sum__new(void)
{
	return calloc(1, sizeof(struct step_sum));
}

static void step_sum__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	struct step_sum *st = vst;
	struct cublas_gemm g;

	/* The GEMMs that did math: a failed call has no FLOPs (cublas_decode.h). */
	if (rec->type != BS_REC_CUBLAS_CALL || rec->size < sizeof(*u) || u->depth ||
	    !cublas__gemm(trace_model__walk(m, &family_cublas), rec, &g) || !g.flops)
		return;
	if (array__grow((void **)&st->gemms, st->ngemms, &st->cap_gemms, sizeof(*st->gemms)))
		st->err = -ENOMEM;
	else
		st->gemms[st->ngemms++] = (struct step_gemm){ rec->pid, rec->ts, rec->ts + u->dur,
							      g.flops, (__s8)gemm_dtype(&g) };
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

/* Where the peaks come from: --peak-tflops (N, or a GPU of the table), else the trace's GPU. */
struct peak_src {
	double n;
	int gpu;
	char model[128];  /* the trace's GPU, when it chose the row */
	char unknown[96]; /* why there is no peak, "" when there is one */
};

static int peak_src(const struct report_ask *ask, struct peak_src *p)
{
	int err = parse_peak(ask->peak, &p->n, &p->gpu);

	p->model[0] = p->unknown[0] = 0;
	if (err || ask->peak)
		return err;
	if (!trace_meta__gpu_model(ask->gpus, p->model, sizeof(p->model)))
		snprintf(p->unknown, sizeof(p->unknown), "%s",
			 ask->gpus && *ask->gpus ? "the trace's GPUs are of several models"
						 : "the trace names no GPU");
	else if ((p->gpu = peaks_of_model(p->model)) < 0)
		snprintf(p->unknown, sizeof(p->unknown), "no peak known for the %s", p->model);
	return 0;
}

/* A GEMM's time at peak (ns), or -1 when its type has no peak on the GPU. */
static double at_peak_ns(const struct step_gemm *g, const struct peak_src *p)
{
	double tf = p->n;

	if (p->gpu >= 0)
		tf = g->dtype >= 0 ? peaks[p->gpu].tflops[class_of[(int)g->dtype]] : 0;
	return tf > 0 ? (double)g->flops / (tf * 1e3) : -1;
}

/* "the NVIDIA H100 80GB HBM3's bf16 peak (989.4 TFLOP/s)": what the MFU is of, for the verdict. */
static void name_peak(struct gemm_mfu *sum, const struct peak_src *p, const __u64 *flops)
{
	int top = 0;
	__u64 all = 0;
	char share[48] = "";
	double tf;

	for (int d = 0; d < D_NTYPES; d++) {
		all += flops[d];
		top = flops[d] > flops[top] ? d : top;
	}
	if (p->gpu < 0) {
		snprintf(sum->peak_of, sizeof(sum->peak_of), "%g TFLOP/s (--peak-tflops)", p->n);
		return;
	}
	tf = peaks[p->gpu].tflops[class_of[top]];
	if (all && flops[top] < all)
		snprintf(share, sizeof(share), "; %.1f%% of the FLOPs are %s",
			 100.0 * (double)flops[top] / (double)all, dtype_name[top]);
	if (p->model[0])
		snprintf(sum->peak_of, sizeof(sum->peak_of), "the %s's %s peak (%g TFLOP/s%s)",
			 p->model, dtype_name[top], tf, share);
	else
		snprintf(sum->peak_of, sizeof(sum->peak_of), "%s's %s peak (%g TFLOP/s%s)",
			 peaks[p->gpu].gpu, dtype_name[top], tf, share);
}

static int step_sum__emit_for(void *vst, const struct trace_model *m, const struct report_ask *ask,
			      struct table *t)
{
	enum { PID, STEP, DUR, GEMMS, FLOPS, TFLOPS, MFU, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[PID] = { "pid", "PID", TABLE_U64 },
		[STEP] = { "step", "Step", TABLE_STR },
		[DUR] = { "step_ns", "Step Time (ns)", TABLE_U64 },
		[GEMMS] = { "gemms", "GEMMs", TABLE_U64 },
		[FLOPS] = { "flops", "FLOPs", TABLE_U64 },
		[TFLOPS] = { "tflops", "TFLOP/s", TABLE_DOUBLE, .precision = 2 },
		[MFU] = { "mfu_pct", "MFU (%)", TABLE_DOUBLE, .precision = 2 },
	};
	struct step_sum *st = vst;
	struct step_row all = { 0 }, step;
	const struct step_span *const *steps = steps__all(ask->steps, &st->nsteps);
	__u64 flops_of[D_NTYPES] = { 0 };
	struct peak_src peak;
	int err;

	if (st->err)
		return st->err;
	err = peak_src(ask, &peak);
	if (err)
		return err;
	st->steps = ask->steps;
	memset(&st->sum, 0, sizeof(st->sum));
	st->sum.known = peak.n > 0 || peak.gpu >= 0;
	st->sum.by_step = st->nsteps > 0;
	table__add_cols(t, cols, NCOLS);
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
		const struct step_row *r = &all;
		__u64 count = 0, flops = 0, by_type[D_NTYPES] = { 0 };
		double peak_ns = 0;
		int peak_known = st->sum.known;
		char num[24];

		if (st->nsteps) {
			step = (struct step_row){ steps[s]->pid, steps[s]->step, steps[s]->ts,
						  steps[s]->end - steps[s]->ts };
			r = &step;
		}
		for (size_t i = 0; i < st->ngemms; i++) {
			const struct step_gemm *g = &st->gemms[i];
			double p;

			if ((st->nsteps && g->pid != r->pid) || g->ts < r->ts ||
			    g->ts >= r->ts + r->dur + !st->nsteps)
				continue;
			count++;
			flops += g->flops;
			if (g->dtype >= 0)
				by_type[(int)g->dtype] += g->flops;
			p = at_peak_ns(g, &peak);
			if (p < 0)
				peak_known = 0;
			peak_ns += p;
		}
		table__row(t);
		if (st->nsteps) {
			table__set_u64(t, PID, r->pid);
			snprintf(num, sizeof(num), "%llu", (unsigned long long)r->step);
		} else {
			snprintf(num, sizeof(num), "all");
		}
		table__set_str(t, STEP, num);
		table__set_u64(t, DUR, r->dur);
		table__set_u64(t, GEMMS, count);
		table__set_u64(t, FLOPS, flops);
		if (r->dur)
			table__set_double(t, TFLOPS, (double)flops / (double)r->dur / 1e3);
		if (!r->dur || !peak_known || !count)
			continue;
		table__set_double(t, MFU, 100.0 * peak_ns / (double)r->dur);
		st->sum.steps++;
		st->sum.step_ns += r->dur;
		st->sum.peak_ns += peak_ns;
		for (int d = 0; d < D_NTYPES; d++)
			flops_of[d] += by_type[d];
	}
	if (st->sum.known)
		name_peak(&st->sum, &peak, flops_of);
	if (peak.model[0] && peak.gpu >= 0)
		table__add_note(t,
				"MFU: against the peaks of the trace's GPU, the %s (%s's row, "
				"docs/BLAS.md); --peak-tflops overrides",
				peak.model, peaks[peak.gpu].gpu);
	else if (!st->sum.known)
		table__add_note(t,
				"MFU: peak unknown (%s): --peak-tflops N (TFLOP/s) or a GPU "
				"(h100-sxm, h100-pcie, h200, a100, l4)",
				peak.unknown);
	return table__err(t);
}

const struct gemm_mfu *cublas_mfu__summary(const void *vst)
{
	return &((const struct step_sum *)vst)->sum;
}

int cublas_mfu__has_pid(const void *vst, __u32 pid)
{
	const struct step_sum *st = vst;
	size_t n;

	if (st->nsteps)
		return steps__of(st->steps, pid, &n) != NULL;
	for (size_t i = 0; i < st->ngemms; i++)
		if (st->gemms[i].pid == pid)
			return 1;
	return 0;
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

/* The GPUs of T's rows (column C), each file's once, a line each: the header's form. */
static int rows_gpus(const struct table *t, int c, char **out)
{
	size_t len = 0;
	FILE *f = open_memstream(out, &len);

	if (!f)
		return -ENOMEM;
	for (int r = 0; r < table__nrows(t); r++) {
		const char *g = table__get_str(t, r, c);

		fflush(f);
		if (g && *g && !(len && strstr(*out, g)))
			fprintf(f, "%s%s", len ? "\n" : "", g);
	}
	return fclose(f) ? -ENOMEM : 0;
}

static int add_pid(struct gemm_mfu_from *f, __u32 pid)
{
	if (cublas_mfu__from_has_pid(f, pid))
		return 0;
	if (array__grow((void **)&f->pids, f->npids, &f->cap, sizeof(*f->pids)))
		return -ENOMEM;
	f->pids[f->npids++] = pid;
	return 0;
}

int cublas_mfu__load(struct gemm_mfu_from *f, const struct table *t)
{
	enum { PID, BY_STEP, TS, DUR, ATYPE, CTYPE, GEMMS, FLOPS, GPUS, NCOLS };
	static const char *const names[NCOLS] = { "pid",     "by_step", "step_ts",
						  "step_ns", "a_type",	"compute_type",
						  "gemms",   "flops",	"gpus" };
	__u64 flops_of[D_NTYPES] = { 0 };
	struct peak_src peak = { .gpu = -1 };
	struct gemm_mfu *sum = &f->sum;
	char *gpus = NULL;
	int c[NCOLS], err;

	for (int k = 0; k < NCOLS; k++)
		if ((c[k] = table__col(t, names[k])) < 0)
			return -EINVAL;
	err = rows_gpus(t, c[GPUS], &gpus);
	if (err)
		return err;
	if (trace_meta__gpu_model(gpus, peak.model, sizeof(peak.model)))
		peak.gpu = peaks_of_model(peak.model);
	free(gpus);
	memset(sum, 0, sizeof(*sum));
	sum->known = peak.gpu >= 0;
	for (int r = 0, next; r < table__nrows(t) && !err; r = next) {
		int by_step = (int)table__get_u64(t, r, c[BY_STEP]), peak_known = sum->known;
		__u64 dur = table__get_u64(t, r, c[DUR]), count = 0, by_type[D_NTYPES] = { 0 };
		double peak_ns = 0;

		sum->by_step |= by_step;
		/* a step's rows: its process's, its start's; without steps, every row is one span */
		for (next = r; next < table__nrows(t) && !err; next++) {
			int d = dtype_of(table__get_str(t, next, c[ATYPE]),
					 table__get_str(t, next, c[CTYPE]));
			__u64 flops = table__get_u64(t, next, c[FLOPS]), n;
			double tf;

			if (next > r &&
			    ((int)table__get_u64(t, next, c[BY_STEP]) != by_step ||
			     table__get_u64(t, next, c[DUR]) != dur ||
			     (by_step &&
			      (table__get_u64(t, next, c[PID]) != table__get_u64(t, r, c[PID]) ||
			       table__get_s64(t, next, c[TS]) != table__get_s64(t, r, c[TS])))))
				break;
			err = add_pid(f, (__u32)table__get_u64(t, next, c[PID]));
			if (!(n = table__get_u64(t, next, c[GEMMS])))
				continue; /* a process's steps, none with GEMMs */
			count += n;
			if (d >= 0)
				by_type[d] += flops;
			tf = peak.gpu >= 0 && d >= 0 ? peaks[peak.gpu].tflops[class_of[d]] : 0;
			if (tf > 0)
				peak_ns += (double)flops / (tf * 1e3);
			else
				peak_known = 0;
		}
		if (!dur || !peak_known || !count)
			continue;
		sum->steps++;
		sum->step_ns += dur;
		sum->peak_ns += peak_ns;
		for (int d = 0; d < D_NTYPES; d++)
			flops_of[d] += by_type[d];
	}
	if (!err && sum->known)
		name_peak(sum, &peak, flops_of);
	f->loaded = !err;
	return err;
}

int cublas_mfu__from_has_pid(const struct gemm_mfu_from *f, __u32 pid)
{
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return 1;
	return 0;
}
