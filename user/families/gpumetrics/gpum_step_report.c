// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats -r gpu_metrics_step_sum: per step of each process (the steps service's, steps.h), on
 * each GPU the process used: the energy the GPU took over the step (its energy counter at the
 * step's end less at its start, each read between the samples around it), its mean power,
 * SM, tensor and DRAM activity, and whether the step was bound by memory or by compute.
 *
 * A process's GPUs are those NVML named it on (its gpu_process records); a process NVML never
 * named (its pid in another namespace, a driver that does not say) is shown on every GPU
 * sampled, and the table says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpum_report.h"
#include "hmap.h"
#include "report.h"
#include "steps.h"
#include "table.h"

struct step_state {
	struct gpum_series dev[GPUM_MAX_DEVICES];
	struct hmap *uses; /* {pid, device} -> u8: NVML named the process on the device */
	int err;
};

static void *step_new(void)
{
	struct step_state *s = calloc(1, sizeof(*s));

	if (s && !(s->uses = hmap__new(1))) {
		free(s);
		return NULL;
	}
	return s;
}

static void step_free(void *st)
{
	struct step_state *s = st;

	if (!s)
		return;
	for (int d = 0; d < GPUM_MAX_DEVICES; d++)
		gpum_series__free(&s->dev[d]);
	hmap__free(s->uses);
	free(s);
}

static void step_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct step_state *s = st;
	__u64 have, val[GPUM_NMETRICS];
	__u32 dev;

	if (s->err)
		return;
	if (rec->type == BS_REC_GPUM_PROC) {
		const struct bs_gpum_proc *p = (const void *)rec;

		if (p->device < GPUM_MAX_DEVICES &&
		    !hmap__get(s->uses, (struct hkey){ rec->pid, p->device }, 1))
			s->err = -ENOMEM;
		return;
	}
	if ((rec->type == BS_REC_GPUM_KEY || rec->type == BS_REC_GPUM_SAMPLE) &&
	    !gpum_sample__read(gpum_walk__of(m), rec, &dev, &have, val))
		s->err = gpum_series__add(&s->dev[dev], rec->ts, have, val);
}

const char *gpum_bound(double sm, double tensor, double dram)
{
	if (dram >= GPUM_DRAM_BOUND)
		return "memory";
	if (tensor >= GPUM_TENSOR_BOUND || sm >= GPUM_SM_BOUND)
		return "compute";
	return NULL;
}

enum {
	C_PID,
	C_STEP,
	C_DEVICE,
	C_START,
	C_DUR,
	C_ENERGY,
	C_POWER,
	C_SM,
	C_TENSOR,
	C_DRAM,
	C_UTIL,
	C_BOUND,
	NCOLS
};

static const struct table_col cols[NCOLS] = {
	[C_PID] = { "pid", "Pid", TABLE_U64 },
	[C_STEP] = { "step", "Step", TABLE_U64 },
	[C_DEVICE] = { "device", "GPU", TABLE_U64 },
	[C_START] = { "start", "Start", TABLE_U64, TABLE_COL_TIMESTAMP | TABLE_COL_MINOR },
	[C_DUR] = { "dur_ns", "Duration (ns)", TABLE_U64 },
	[C_ENERGY] = { "energy_j", "Energy (J)", TABLE_DOUBLE, 0, 3 },
	[C_POWER] = { "power_w", "Mean Power (W)", TABLE_DOUBLE },
	[C_SM] = { "sm_active", "SM Active (%)", TABLE_DOUBLE, TABLE_COL_IF_ANY },
	[C_TENSOR] = { "tensor_active", "Tensor Active (%)", TABLE_DOUBLE, TABLE_COL_IF_ANY },
	[C_DRAM] = { "dram_active", "DRAM Active (%)", TABLE_DOUBLE, TABLE_COL_IF_ANY },
	[C_UTIL] = { "gpu_util", "GPU Util (%)", TABLE_DOUBLE, TABLE_COL_MINOR },
	[C_BOUND] = { "bound", "Bound", TABLE_STR, TABLE_COL_IF_ANY },
};

static void set_mean(struct table *t, int col, double v)
{
	if (v >= 0)
		table__set_double(t, col, v);
}

static void step_row(struct table *t, const struct step_span *sp, __u32 dev,
		     const struct gpum_series *ser)
{
	struct gpum_span g;
	const char *bound;

	gpum_series__span(ser, sp->ts, sp->end, &g);
	table__row(t);
	table__set_u64(t, C_PID, sp->pid);
	table__set_u64(t, C_STEP, sp->step);
	table__set_u64(t, C_DEVICE, dev);
	table__set_u64(t, C_START, sp->ts);
	table__set_u64(t, C_DUR, sp->end - sp->ts);
	if (g.energy_mj >= 0) {
		table__set_double(t, C_ENERGY, g.energy_mj / 1000.0);
		if (g.covered_ns)
			table__set_double(t, C_POWER, g.energy_mj * 1e6 / (double)g.covered_ns);
	} else if (g.mean[GS_POWER] >= 0) {
		table__set_double(t, C_POWER, g.mean[GS_POWER] / 1000.0);
	}
	set_mean(t, C_SM, g.mean[GS_SM]);
	set_mean(t, C_TENSOR, g.mean[GS_TENSOR]);
	set_mean(t, C_DRAM, g.mean[GS_DRAM]);
	set_mean(t, C_UTIL, g.mean[GS_UTIL]);
	if (g.mean[GS_SM] >= 0 || g.mean[GS_DRAM] >= 0) {
		bound = gpum_bound(g.mean[GS_SM], g.mean[GS_TENSOR], g.mean[GS_DRAM]);
		table__set_str(t, C_BOUND, bound ? bound : "-");
	}
}

static int step_emit(void *st, const struct trace_model *m, const struct report_ask *ask,
		     struct table *t)
{
	struct step_state *s = st;
	const struct step_span *const *all;
	size_t n = 0;
	int unnamed = 0, sampled = 0;

	if (s->err)
		return s->err;
	table__add_cols(t, cols, NCOLS);
	for (int d = 0; d < GPUM_MAX_DEVICES; d++)
		sampled += s->dev[d].started;
	all = ask && ask->steps ? steps__all(ask->steps, &n) : NULL;
	for (size_t i = 0; i < n && sampled; i++) {
		const struct step_span *sp = all[i];
		int named = 0;

		for (__u32 d = 0; d < GPUM_MAX_DEVICES; d++)
			named += s->dev[d].started &&
				 hmap__get(s->uses, (struct hkey){ sp->pid, d }, 0) != NULL;
		unnamed += !named;
		for (__u32 d = 0; d < GPUM_MAX_DEVICES; d++)
			if (s->dev[d].started &&
			    (!named || hmap__get(s->uses, (struct hkey){ sp->pid, d }, 0)))
				step_row(t, sp, d, &s->dev[d]);
	}
	if (unnamed)
		table__add_note(t,
				"%d step%s of processes NVML did not name on a GPU: shown on every "
				"GPU sampled",
				unnamed, unnamed == 1 ? "" : "s");
	if (!sampled)
		table__add_note(t, "no GPU metrics recorded (record with -t gpumetrics or "
				   "--gpu-metrics-devices)");
	else if (!n)
		table__add_note(t, "no steps: see --steps");
	return table__err(t);
}

static int step_emit_plain(void *st, const struct trace_model *m, struct table *t)
{
	return step_emit(st, m, NULL, t);
}

const struct report gpum_step_report = {
	.name = "gpu_metrics_step_sum",
	.desc = "GPU metrics per step: energy (J), mean power, SM, tensor and DRAM activity, bound "
		"by memory or compute",
	.new = step_new,
	.add = step_add,
	.emit = step_emit_plain,
	.emit_for = step_emit,
	.free = step_free,
};

const struct report *const gpum_reports[] = { &gpum_sum_report, &gpum_step_report, NULL };
