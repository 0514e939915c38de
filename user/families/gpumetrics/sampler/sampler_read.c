// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One tick of a device: each metric read from NVML, or left out of the sample. What NVML
 * answers decides: NOT_SUPPORTED or NO_PERMISSION leave the metric out for good (its DEVICE
 * record says which and why, so a reader tells "not measured" from zero); GPU_IS_LOST (and
 * the answers of a device gone: GPU_NOT_FOUND, RESET_REQUIRED, DRIVER_NOT_LOADED) end the
 * device's samples; any other failure leaves the metric out of this sample only (counted).
 */
#include <stddef.h>
#include <string.h>
#include "sampler.h"

#define BIT GPUM_BIT

/* The GPM metrics read, in the order of their bits from GPUM_GPM_FIRST. */
static const unsigned gpm_ids[GPUM_NMETRICS - GPUM_GPM_FIRST] = {
	NVML_GPM_METRIC_SM_UTIL,
	NVML_GPM_METRIC_SM_OCCUPANCY,
	NVML_GPM_METRIC_GRAPHICS_UTIL,
	NVML_GPM_METRIC_ANY_TENSOR_UTIL,
	NVML_GPM_METRIC_HMMA_TENSOR_UTIL,
	NVML_GPM_METRIC_IMMA_TENSOR_UTIL,
	NVML_GPM_METRIC_DMMA_TENSOR_UTIL,
	NVML_GPM_METRIC_DFMA_TENSOR_UTIL,
	NVML_GPM_METRIC_FP64_UTIL,
	NVML_GPM_METRIC_FP32_UTIL,
	NVML_GPM_METRIC_FP16_UTIL,
	NVML_GPM_METRIC_INTEGER_UTIL,
	NVML_GPM_METRIC_DRAM_BW_UTIL,
	NVML_GPM_METRIC_PCIE_TX_PER_SEC,
	NVML_GPM_METRIC_PCIE_RX_PER_SEC,
	NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
	NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
};

static int gone(nvmlReturn_t r)
{
	return r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_GPU_NOT_FOUND ||
	       r == NVML_ERROR_RESET_REQUIRED || r == NVML_ERROR_DRIVER_NOT_LOADED;
}

/* What NVML answered for the metrics BITS of D: 1 when they have values. */
static int took(struct sampler *s, struct sampler_dev *d, __u64 bits, nvmlReturn_t r)
{
	if (r == NVML_SUCCESS)
		return 1;
	if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND) {
		d->info.unsupported |= bits & ~d->off;
		d->off |= bits;
		d->info_dirty = 1;
	} else if (r == NVML_ERROR_NO_PERMISSION) {
		d->info.denied |= bits & ~d->off;
		d->off |= bits;
		d->info_dirty = 1;
	} else if (gone(r)) {
		if (!d->lost) {
			d->lost = 1;
			d->info.flags |= BS_GPUM_DEV_LOST;
			d->info.lost_err = r;
			d->info_dirty = 1;
		}
	} else {
		__atomic_add_fetch(&s->chan->failed, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

static void set(struct sampler_dev *d, enum gpum_metric m, __u64 v)
{
	d->val[m] = v;
	d->have |= BIT(m);
}

/* D still reads one of the metrics BITS, and its NVML has FN, the function that reads them. */
static int want(const struct sampler_dev *d, __u64 bits, const void *fn)
{
	return !d->lost && (bits & ~d->off) && fn;
}

static void read_slow(struct sampler *s, struct sampler_dev *d)
{
	const struct nvml *n = &s->nvml;
	nvmlUtilization_t u;
	unsigned int v;
	unsigned long long reasons;
	nvmlReturn_t r;

	if (want(d, BIT(GPUM_GPU_UTIL) | BIT(GPUM_MEM_UTIL), n->nvmlDeviceGetUtilizationRates) &&
	    took(s, d, BIT(GPUM_GPU_UTIL) | BIT(GPUM_MEM_UTIL),
		 n->nvmlDeviceGetUtilizationRates(d->h, &u))) {
		set(d, GPUM_GPU_UTIL, u.gpu);
		set(d, GPUM_MEM_UTIL, u.memory);
	}
	if (want(d, BIT(GPUM_SM_CLOCK), n->nvmlDeviceGetClockInfo) &&
	    took(s, d, BIT(GPUM_SM_CLOCK), n->nvmlDeviceGetClockInfo(d->h, NVML_CLOCK_SM, &v)))
		set(d, GPUM_SM_CLOCK, v);
	if (want(d, BIT(GPUM_MEM_CLOCK), n->nvmlDeviceGetClockInfo) &&
	    took(s, d, BIT(GPUM_MEM_CLOCK), n->nvmlDeviceGetClockInfo(d->h, NVML_CLOCK_MEM, &v)))
		set(d, GPUM_MEM_CLOCK, v);
	if (want(d, BIT(GPUM_TEMP), n->nvmlDeviceGetTemperature) &&
	    took(s, d, BIT(GPUM_TEMP), n->nvmlDeviceGetTemperature(d->h, NVML_TEMPERATURE_GPU, &v)))
		set(d, GPUM_TEMP, v);
	if (want(d, BIT(GPUM_THROTTLE),
		 n->nvmlDeviceGetCurrentClocksEventReasons
			 ?: n->nvmlDeviceGetCurrentClocksThrottleReasons)) {
		r = n->nvmlDeviceGetCurrentClocksEventReasons
			    ? n->nvmlDeviceGetCurrentClocksEventReasons(d->h, &reasons)
			    : n->nvmlDeviceGetCurrentClocksThrottleReasons(d->h, &reasons);
		if (took(s, d, BIT(GPUM_THROTTLE), r))
			set(d, GPUM_THROTTLE, reasons);
	}
	if (want(d, BIT(GPUM_MEM_USED) | BIT(GPUM_MEM_RESERVED), n->nvmlDeviceGetMemoryInfo_v2)) {
		nvmlMemory_v2_t m = { .version = NVML_MEMORY_V2_VERSION };

		if (took(s, d, BIT(GPUM_MEM_USED) | BIT(GPUM_MEM_RESERVED),
			 n->nvmlDeviceGetMemoryInfo_v2(d->h, &m))) {
			set(d, GPUM_MEM_USED, m.used);
			set(d, GPUM_MEM_RESERVED, m.reserved);
		}
	} else if (want(d, BIT(GPUM_MEM_USED), n->nvmlDeviceGetMemoryInfo)) {
		nvmlMemory_t m;

		if (took(s, d, BIT(GPUM_MEM_USED), n->nvmlDeviceGetMemoryInfo(d->h, &m)))
			set(d, GPUM_MEM_USED, m.used);
	}
}

/* The counters of PCIe and NVLink traffic, in one call: each field answers on its own. */
static void read_fields(struct sampler *s, struct sampler_dev *d)
{
	static const struct {
		unsigned id;
		enum gpum_metric m;
	} f[] = {
		{ NVML_FI_DEV_PCIE_COUNT_TX_BYTES, GPUM_PCIE_TX },
		{ NVML_FI_DEV_PCIE_COUNT_RX_BYTES, GPUM_PCIE_RX },
		{ NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, GPUM_NVLINK_TX },
		{ NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, GPUM_NVLINK_RX },
	};
	nvmlFieldValue_t v[4];
	enum gpum_metric which[4];
	__u64 bits = 0;
	int n = 0;

	for (unsigned i = 0; i < 4; i++)
		if (!(d->off & BIT(f[i].m))) {
			memset(&v[n], 0, sizeof(v[n]));
			v[n].fieldId = f[i].id;
			v[n].scopeId = f[i].m >= GPUM_NVLINK_TX ? ~0u : 0;
			which[n++] = f[i].m;
			bits |= BIT(f[i].m);
		}
	if (!n || !want(d, bits, s->nvml.nvmlDeviceGetFieldValues) ||
	    !took(s, d, bits, s->nvml.nvmlDeviceGetFieldValues(d->h, n, v)))
		return;
	for (int i = 0; i < n; i++) {
		if (!took(s, d, BIT(which[i]), v[i].nvmlReturn))
			continue;
		switch (v[i].valueType) {
		case NVML_VALUE_TYPE_UNSIGNED_INT:
			set(d, which[i], v[i].value.uiVal);
			break;
		case NVML_VALUE_TYPE_UNSIGNED_SHORT:
			set(d, which[i], v[i].value.usVal);
			break;
		case NVML_VALUE_TYPE_DOUBLE:
			set(d, which[i], (__u64)v[i].value.dVal);
			break;
		default: /* the 64-bit kinds: the counters' own */
			set(d, which[i], v[i].value.ullVal);
		}
	}
}

/*
 * GPM: a sample now, and the metrics between it and the previous one (none at the first
 * tick, which only primes), when SAMPLER_GPM_NS have passed since that one; else nothing.
 */
static void read_gpm(struct sampler *s, struct sampler_dev *d)
{
	const struct nvml *n = &s->nvml;
	const __u64 all = GPUM_DOUBLES;
	nvmlGpmMetricsGet_t g;
	enum gpum_metric which[GPM_METRICS_MAX];
	unsigned k = 0;
	nvmlGpmSample_t cur = d->gpm[d->gpm_cur];
	__u64 now = sampler__now();

	if (d->gpm_primed && now - d->gpm_ts < SAMPLER_GPM_NS)
		return;
	if (!d->gpm_ok || !want(d, all, n->nvmlGpmSampleGet) ||
	    !took(s, d, all & ~d->off, n->nvmlGpmSampleGet(d->h, cur)))
		return;
	d->gpm_ts = now;
	d->gpm_cur ^= 1;
	if (!d->gpm_primed++)
		return;
	memset(&g, 0, offsetof(nvmlGpmMetricsGet_t, metrics));
	g.version = NVML_GPM_METRICS_GET_VERSION;
	g.sample1 = d->gpm[d->gpm_cur]; /* the previous one: the older first */
	g.sample2 = cur;
	for (unsigned m = GPUM_GPM_FIRST; m < GPUM_NMETRICS; m++)
		if (!(d->off & BIT(m))) {
			memset(&g.metrics[k], 0, sizeof(g.metrics[k]));
			g.metrics[k].metricId = gpm_ids[m - GPUM_GPM_FIRST];
			which[k++] = m;
		}
	g.numMetrics = k;
	if (!k || !took(s, d, all & ~d->off, n->nvmlGpmMetricsGet(&g)))
		return;
	for (unsigned i = 0; i < k; i++) {
		__u64 bits;

		if (!took(s, d, BIT(which[i]), g.metrics[i].nvmlReturn))
			continue;
		memcpy(&bits, &g.metrics[i].value, sizeof(bits));
		set(d, which[i], bits);
	}
}

void sampler__read(struct sampler *s, struct sampler_dev *d, int slow)
{
	const struct nvml *n = &s->nvml;
	unsigned long long e;
	unsigned int p;

	d->have = 0;
	d->ts = 0;
	if (want(d, BIT(GPUM_ENERGY), n->nvmlDeviceGetTotalEnergyConsumption)) {
		__u64 t0 = sampler__now();
		nvmlReturn_t r = n->nvmlDeviceGetTotalEnergyConsumption(d->h, &e);

		if (took(s, d, BIT(GPUM_ENERGY), r)) {
			set(d, GPUM_ENERGY, e);
			/* the sample's time is the energy counter's: a step's joules read exactly */
			d->ts = t0 + (sampler__now() - t0) / 2;
		}
	}
	if (want(d, BIT(GPUM_POWER), n->nvmlDeviceGetPowerUsage) &&
	    took(s, d, BIT(GPUM_POWER), n->nvmlDeviceGetPowerUsage(d->h, &p)))
		set(d, GPUM_POWER, p);
	read_fields(s, d);
	read_gpm(s, d);
	if (slow)
		read_slow(s, d);
}

/* A metric whose function this NVML lacks: never read, said so in the DEVICE record. */
static void lacks(struct sampler_dev *d, __u64 bits, const void *fn)
{
	if (!fn) {
		d->info.unsupported |= bits & ~d->off;
		d->off |= bits;
	}
}

static void open_gpm(struct sampler *s, struct sampler_dev *d)
{
	const struct nvml *n = &s->nvml;
	nvmlGpmSupport_t sup = { .version = NVML_GPM_SUPPORT_VERSION };

	if (!n->nvmlGpmQueryDeviceSupport || !n->nvmlGpmSampleAlloc || !n->nvmlGpmSampleGet ||
	    !n->nvmlGpmMetricsGet || !n->nvmlGpmSampleFree ||
	    n->nvmlGpmQueryDeviceSupport(d->h, &sup) != NVML_SUCCESS || !sup.isSupportedDevice) {
		d->info.unsupported |= GPUM_DOUBLES;
		d->off |= GPUM_DOUBLES;
		return;
	}
	if (n->nvmlGpmSampleAlloc(&d->gpm[0]) != NVML_SUCCESS)
		goto fail;
	if (n->nvmlGpmSampleAlloc(&d->gpm[1]) != NVML_SUCCESS) {
		n->nvmlGpmSampleFree(d->gpm[0]);
		goto fail;
	}
	d->gpm_ok = 1;
	d->info.flags |= BS_GPUM_DEV_GPM;
	return;
fail:
	d->off |= GPUM_DOUBLES; /* no memory for its samples: not the device's lack */
}

nvmlReturn_t sampler__open_dev(struct sampler *s, struct sampler_dev *d)
{
	const struct nvml *n = &s->nvml;
	nvmlPciInfo_t pci;
	unsigned int v;
	nvmlReturn_t r;

	r = n->nvmlDeviceGetHandleByIndex_v2(d->index, &d->h);
	if (r != NVML_SUCCESS)
		return r;
	d->info.h.type = BS_REC_GPUM_DEVICE;
	d->info.h.size = sizeof(d->info);
	d->info.device = d->index;
	d->info.arch = NVML_DEVICE_ARCH_UNKNOWN;
	if (n->nvmlDeviceGetName)
		n->nvmlDeviceGetName(d->h, d->info.name, sizeof(d->info.name));
	if (n->nvmlDeviceGetUUID)
		n->nvmlDeviceGetUUID(d->h, d->info.uuid, sizeof(d->info.uuid));
	if (n->nvmlDeviceGetPciInfo_v3 && n->nvmlDeviceGetPciInfo_v3(d->h, &pci) == NVML_SUCCESS)
		memcpy(d->info.bus_id, pci.busId, sizeof(d->info.bus_id));
	d->info.name[sizeof(d->info.name) - 1] = 0;
	d->info.uuid[sizeof(d->info.uuid) - 1] = 0;
	d->info.bus_id[sizeof(d->info.bus_id) - 1] = 0;
	if (n->nvmlDeviceGetMemoryInfo_v2) {
		nvmlMemory_v2_t m = { .version = NVML_MEMORY_V2_VERSION };

		if (n->nvmlDeviceGetMemoryInfo_v2(d->h, &m) == NVML_SUCCESS)
			d->info.mem_total = m.total;
	}
	if (n->nvmlDeviceGetArchitecture && n->nvmlDeviceGetArchitecture(d->h, &v) == NVML_SUCCESS)
		d->info.arch = v;
	if (n->nvmlDeviceGetEnforcedPowerLimit &&
	    n->nvmlDeviceGetEnforcedPowerLimit(d->h, &v) == NVML_SUCCESS)
		d->info.power_limit = v;
	if (n->nvmlDeviceGetMaxClockInfo &&
	    n->nvmlDeviceGetMaxClockInfo(d->h, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
		d->info.max_sm_clock = v;
	if (n->nvmlDeviceGetMaxClockInfo &&
	    n->nvmlDeviceGetMaxClockInfo(d->h, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
		d->info.max_mem_clock = v;
	lacks(d, BIT(GPUM_GPU_UTIL) | BIT(GPUM_MEM_UTIL), n->nvmlDeviceGetUtilizationRates);
	lacks(d, BIT(GPUM_SM_CLOCK) | BIT(GPUM_MEM_CLOCK), n->nvmlDeviceGetClockInfo);
	lacks(d, BIT(GPUM_POWER), n->nvmlDeviceGetPowerUsage);
	lacks(d, BIT(GPUM_ENERGY), n->nvmlDeviceGetTotalEnergyConsumption);
	lacks(d, BIT(GPUM_TEMP), n->nvmlDeviceGetTemperature);
	lacks(d, BIT(GPUM_THROTTLE),
	      n->nvmlDeviceGetCurrentClocksEventReasons
		      ?: n->nvmlDeviceGetCurrentClocksThrottleReasons);
	lacks(d, BIT(GPUM_MEM_USED),
	      n->nvmlDeviceGetMemoryInfo_v2 ? (const void *)n->nvmlDeviceGetMemoryInfo_v2
					    : (const void *)n->nvmlDeviceGetMemoryInfo);
	lacks(d, BIT(GPUM_MEM_RESERVED), n->nvmlDeviceGetMemoryInfo_v2);
	lacks(d, BIT(GPUM_PCIE_TX) | BIT(GPUM_PCIE_RX) | BIT(GPUM_NVLINK_TX) | BIT(GPUM_NVLINK_RX),
	      n->nvmlDeviceGetFieldValues);
	open_gpm(s, d);
	d->info_dirty = 1;
	return NVML_SUCCESS;
}

void sampler__close_dev(struct sampler *s, struct sampler_dev *d)
{
	if (d->gpm_ok) {
		s->nvml.nvmlGpmSampleFree(d->gpm[0]);
		s->nvml.nvmlGpmSampleFree(d->gpm[1]);
		d->gpm_ok = 0;
	}
}
