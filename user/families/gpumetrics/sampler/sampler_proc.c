// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Each process's use of a device, where NVML gives it: its SM, memory, encoder and decoder
 * utilization in NVML's own samples (nvmlDeviceGetProcessUtilization: the samples since the
 * last one seen, each over the driver's sampling period, stamped with the CPU's realtime
 * clock, mapped here onto CLOCK_MONOTONIC), and the device memory it holds
 * (nvmlDeviceGetComputeRunningProcesses_v3). A device that has neither (NOT_SUPPORTED) is
 * not asked again.
 */
#include <stdlib.h>
#include <string.h>
#include "sampler.h"

#define PROC_INITIAL 64
#define PROC_MAX     4096 /* processes on one device NVML reports at most (a sanity bound) */

static int grow(void **buf, unsigned *cap, unsigned want, size_t elem)
{
	void *p;

	if (want <= *cap)
		return 0;
	if (want > PROC_MAX)
		return -1;
	p = realloc(*buf, (size_t)want * elem);
	if (!p)
		return -1;
	*buf = p;
	*cap = want;
	return 0;
}

static void put_proc(struct sampler *s, struct sampler_dev *d, __u32 pid, __u64 ts,
		     const nvmlProcessUtilizationSample_t *u, const nvmlProcessInfo_t *pi)
{
	struct bs_gpum_proc r;

	memset(&r, 0, sizeof(r));
	r.h.type = BS_REC_GPUM_PROC;
	r.h.size = sizeof(r);
	r.h.pid = pid;
	r.h.ts = ts;
	r.device = d->index;
	if (u) {
		r.have |= BS_GPUM_PROC_SM | BS_GPUM_PROC_MEM | BS_GPUM_PROC_ENC | BS_GPUM_PROC_DEC;
		r.sm_util = u->smUtil;
		r.mem_util = u->memUtil;
		r.enc_util = u->encUtil;
		r.dec_util = u->decUtil;
	}
	if (pi) {
		r.have |= BS_GPUM_PROC_USED;
		r.used_mem = pi->usedGpuMemory;
	}
	sampler__put(s, &r);
}

/* NVML's realtime microseconds onto CLOCK_MONOTONIC ns (the pair read every second). */
static __u64 mono_of(const struct sampler *s, unsigned long long real_us)
{
	return real_us * 1000ull + s->mono_minus_real;
}

static void read_util(struct sampler *s, struct sampler_dev *d)
{
	const struct nvml *n = &s->nvml;
	unsigned count = s->putil_cap;
	nvmlReturn_t r;

	if (!n->nvmlDeviceGetProcessUtilization || (d->off & GPUM_PROC_UTIL_OFF))
		return;
	r = n->nvmlDeviceGetProcessUtilization(d->h, s->putil, &count, d->proc_seen);
	if (r == NVML_ERROR_INSUFFICIENT_SIZE &&
	    !grow((void **)&s->putil, &s->putil_cap, count + PROC_INITIAL, sizeof(*s->putil))) {
		count = s->putil_cap;
		r = n->nvmlDeviceGetProcessUtilization(d->h, s->putil, &count, d->proc_seen);
	}
	if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION) {
		d->off |= GPUM_PROC_UTIL_OFF;
		return;
	}
	if (r != NVML_SUCCESS) /* NOT_FOUND: no sample since the last one */
		return;
	for (unsigned i = 0; i < count && i < s->putil_cap; i++) {
		const nvmlProcessUtilizationSample_t *u = &s->putil[i];

		if (u->timeStamp > d->proc_seen)
			d->proc_seen = u->timeStamp;
		put_proc(s, d, u->pid, mono_of(s, u->timeStamp), u, NULL);
	}
}

static void read_mem(struct sampler *s, struct sampler_dev *d, __u64 now)
{
	const struct nvml *n = &s->nvml;
	unsigned count = s->pinfo_cap;
	nvmlReturn_t r;

	if (!n->nvmlDeviceGetComputeRunningProcesses_v3 || (d->off & GPUM_PROC_MEM_OFF))
		return;
	r = n->nvmlDeviceGetComputeRunningProcesses_v3(d->h, &count, s->pinfo);
	if (r == NVML_ERROR_INSUFFICIENT_SIZE &&
	    !grow((void **)&s->pinfo, &s->pinfo_cap, count + PROC_INITIAL, sizeof(*s->pinfo))) {
		count = s->pinfo_cap;
		r = n->nvmlDeviceGetComputeRunningProcesses_v3(d->h, &count, s->pinfo);
	}
	if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION) {
		d->off |= GPUM_PROC_MEM_OFF;
		return;
	}
	if (r != NVML_SUCCESS)
		return;
	for (unsigned i = 0; i < count && i < s->pinfo_cap; i++)
		put_proc(s, d, s->pinfo[i].pid, now, NULL, &s->pinfo[i]);
}

void sampler__read_procs(struct sampler *s, struct sampler_dev *d, __u64 now)
{
	if (d->lost)
		return;
	if (!s->putil_cap &&
	    grow((void **)&s->putil, &s->putil_cap, PROC_INITIAL, sizeof(*s->putil)))
		return;
	if (!s->pinfo_cap &&
	    grow((void **)&s->pinfo, &s->pinfo_cap, PROC_INITIAL, sizeof(*s->pinfo)))
		return;
	read_util(s, d);
	read_mem(s, d, now);
}
