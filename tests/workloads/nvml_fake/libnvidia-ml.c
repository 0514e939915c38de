// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A libnvidia-ml.so.1 for the gpumetrics tests on a machine without a GPU: every function the
 * sampler calls (user/families/gpumetrics/sampler/nvml_api.h's ABI), serving scripted values
 * and the failures NVML can return, and logging what it served so that a test compares the
 * file with it value by value. Found as the real one is: by the dynamic loader's search
 * (the tests put its directory first in LD_LIBRARY_PATH).
 *
 * Scripted by the environment, read at nvmlInit_v2:
 *   FAKE_NVML_DEVICES=N        devices (default 1), named "Fake H100 N", UUID GPU-fake-000N
 *   FAKE_NVML_LOG=PATH         one line per value served: "TICK DEV METRIC VALUE", TICK being
 *                              the device's energy reads so far (one a tick); "fail" for a
 *                              transient failure; the first line "start MONO_NS"
 *   FAKE_NVML_COUNTS=PATH      at nvmlShutdown: "DEV TICKS FIRST_NS LAST_NS" per device, its
 *                              energy reads and when the first and last were served
 *   FAKE_NVML_UNSUPPORTED=LIST metrics answered NOT_SUPPORTED (util, clock, power, energy,
 *                              temp, throttle, mem, fields, gpm, proc); FAKE_NVML_DENIED=LIST:
 *                              NO_PERMISSION
 *   FAKE_NVML_LOST=DEV:K       device DEV answers GPU_IS_LOST from its Kth energy read on
 *   FAKE_NVML_FLAKY=K          every Kth SM clock read fails once with NVML_ERROR_UNKNOWN
 *   FAKE_NVML_LATENCY_US=N     each energy read takes N us (a slow driver)
 *   FAKE_NVML_SPIN_US=N        each energy read (every tick) and each utilization read (one
 *                              of NVML's slow reads) spins N us of CPU (a driver whose ioctls
 *                              cost the caller's CPU, as an H200's did)
 *   FAKE_NVML_POWER_MW=P       the power drawn (default 300000): energy is P mW times the time
 *                              since nvmlInit, on CLOCK_MONOTONIC, in mJ from 1,000,000
 *   FAKE_NVML_PIDS=LIST        processes on device 0 (their utilization and memory);
 *   FAKE_NVML_PIDS_FILE=PATH   or those listed in PATH (comma-separated), read at each call
 *   FAKE_NVML_DRAM=PCT         GPM's DRAM bandwidth (default 41.5); FAKE_NVML_SM=PCT SM active
 *   FAKE_NVML_NO_LIB=1         nvmlInit_v2 fails with DRIVER_NOT_LOADED
 *   FAKE_NVML_CRASH=K          the Kth energy read of device 0 aborts the process (0: nvmlInit
 *                              itself): a driver library that crashes its caller
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nvml_api.h"

#define MAX_DEV 8
#define EXPORT	__attribute__((visibility("default")))

struct fdev {
	unsigned index;
	unsigned long long tick; /* energy reads */
	unsigned long long first_ns, last_ns;
	unsigned long long clock_reads, gpm_gets;
	int lost;
};

struct gpm_sample {
	unsigned dev;
	unsigned long long tick;
};

static struct fdev devs[MAX_DEV];
static unsigned ndev = 1;
static FILE *logf;
static char unsupported[256], denied[256];
static int lost_dev = -1;
static unsigned long long lost_at, flaky, latency_us, spin_us, power_mw = 300000;
static unsigned long long init_ns, crash_at = ~0ull;
static double dram = 41.5, sm = 37.25;
static char pids[256];

static unsigned long long mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* FAKE_NVML_SPIN_US of CPU time burnt, as a driver's ioctl would. */
static void spin(void)
{
	unsigned long long end;

	if (!spin_us)
		return;
	for (end = mono() + spin_us * 1000; mono() < end;)
		;
}

static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

static struct fdev *dev_of(nvmlDevice_t h)
{
	unsigned long i = (unsigned long)h - 1;

	return i < ndev ? &devs[i] : NULL;
}

/* What METRIC of D answers before its value: 0 to serve it. */
static nvmlReturn_t gate(struct fdev *d, const char *metric)
{
	if (!d)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->lost)
		return NVML_ERROR_GPU_IS_LOST;
	if (listed(unsupported, metric))
		return NVML_ERROR_NOT_SUPPORTED;
	if (listed(denied, metric))
		return NVML_ERROR_NO_PERMISSION;
	return NVML_SUCCESS;
}

static void logu(struct fdev *d, const char *metric, unsigned long long v)
{
	if (logf)
		fprintf(logf, "%llu %u %s %llu\n", d->tick, d->index, metric, v);
}

static void logd(struct fdev *d, const char *metric, double v)
{
	if (logf)
		fprintf(logf, "%llu %u %s %.17g\n", d->tick, d->index, metric, v);
}

static const char *env(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	const char *v;

	if (getenv("FAKE_NVML_NO_LIB"))
		return NVML_ERROR_DRIVER_NOT_LOADED;
	crash_at = strtoull(env("FAKE_NVML_CRASH", "-1"), NULL, 10);
	if (crash_at == 0)
		abort();
	ndev = (unsigned)atoi(env("FAKE_NVML_DEVICES", "1"));
	if (ndev > MAX_DEV)
		ndev = MAX_DEV;
	for (unsigned i = 0; i < ndev; i++)
		devs[i] = (struct fdev){ .index = i };
	snprintf(unsupported, sizeof(unsupported), "%s", env("FAKE_NVML_UNSUPPORTED", ""));
	snprintf(denied, sizeof(denied), "%s", env("FAKE_NVML_DENIED", ""));
	snprintf(pids, sizeof(pids), "%s", env("FAKE_NVML_PIDS", ""));
	if ((v = getenv("FAKE_NVML_LOST")) && sscanf(v, "%d:%llu", &lost_dev, &lost_at) != 2)
		lost_dev = -1;
	flaky = strtoull(env("FAKE_NVML_FLAKY", "0"), NULL, 10);
	latency_us = strtoull(env("FAKE_NVML_LATENCY_US", "0"), NULL, 10);
	spin_us = strtoull(env("FAKE_NVML_SPIN_US", "0"), NULL, 10);
	power_mw = strtoull(env("FAKE_NVML_POWER_MW", "300000"), NULL, 10);
	dram = atof(env("FAKE_NVML_DRAM", "41.5"));
	sm = atof(env("FAKE_NVML_SM", "37.25"));
	init_ns = mono();
	if ((v = getenv("FAKE_NVML_LOG")) && (logf = fopen(v, "w")))
		fprintf(logf, "start %llu\n", init_ns);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	const char *v = getenv("FAKE_NVML_COUNTS");
	FILE *f;

	if (v && (f = fopen(v, "w"))) {
		for (unsigned i = 0; i < ndev; i++)
			fprintf(f, "%u %llu %llu %llu\n", i, devs[i].tick, devs[i].first_ns,
				devs[i].last_ns);
		fclose(f);
	}
	if (logf)
		fclose(logf);
	logf = NULL;
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NO_PERMISSION:
		return "Insufficient Permissions";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	default:
		return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	snprintf(buf, len, "999.99-fake");
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = ndev;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h)
{
	if (i >= ndev)
		return NVML_ERROR_INVALID_ARGUMENT;
	*h = (nvmlDevice_t)(unsigned long)(i + 1);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned int len)
{
	snprintf(buf, len, "Fake H100 %u", dev_of(h)->index);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned int len)
{
	snprintf(buf, len, "GPU-fake-%04u", dev_of(h)->index);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->busId, sizeof(p->busId), "00000000:%02X:00.0", 0x18 + dev_of(h)->index);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t h, unsigned int *a)
{
	*a = NVML_DEVICE_ARCH_HOPPER;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int type, unsigned int *v)
{
	*v = type == NVML_CLOCK_SM ? 1980 : 2619;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int *v)
{
	*v = 700000;
	return NVML_SUCCESS;
}

/* The tick starts with the energy read: the one every tick makes first. */
EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *e)
{
	struct fdev *d = dev_of(h);
	unsigned long long now;
	nvmlReturn_t r;

	if (d && lost_dev == (int)d->index && d->tick + 1 >= lost_at)
		d->lost = 1;
	if (d && d->index == 0 && d->tick + 1 == crash_at)
		abort();
	if ((r = gate(d, "energy")))
		return r;
	if (latency_us)
		usleep(latency_us);
	spin();
	now = mono();
	d->tick++;
	if (!d->first_ns)
		d->first_ns = now;
	d->last_ns = now;
	*e = 1000000ull + (now - init_ns) * power_mw / 1000000000ull;
	logu(d, "energy", *e);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *p)
{
	struct fdev *d = dev_of(h);
	nvmlReturn_t r;

	if ((r = gate(d, "power")))
		return r;
	*p = (unsigned)(power_mw + (d->tick % 17) * 10);
	logu(d, "power", *p);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
	struct fdev *d = dev_of(h);
	nvmlReturn_t r;

	if ((r = gate(d, "util")))
		return r;
	spin();
	u->gpu = (unsigned)((d->tick / 7) % 101);
	u->memory = (unsigned)((d->tick / 13) % 101);
	logu(d, "gpu_util", u->gpu);
	logu(d, "mem_util", u->memory);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *v)
{
	struct fdev *d = dev_of(h);
	nvmlReturn_t r;

	if ((r = gate(d, "clock")))
		return r;
	if (type == NVML_CLOCK_SM) {
		if (flaky && ++d->clock_reads % flaky == 0) {
			if (logf)
				fprintf(logf, "%llu %u sm_clock fail\n", d->tick, d->index);
			return NVML_ERROR_UNKNOWN;
		}
		*v = 1410 + (unsigned)((d->tick / 50) % 3) * 15;
		logu(d, "sm_clock", *v);
	} else {
		*v = 2619;
		logu(d, "mem_clock", *v);
	}
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int *t)
{
	struct fdev *d = dev_of(h);
	nvmlReturn_t r;

	if ((r = gate(d, "temp")))
		return r;
	*t = 60 + (unsigned)((d->tick / 100) % 5);
	logu(d, "temp", *t);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h,
							   unsigned long long *reasons)
{
	struct fdev *d = dev_of(h);
	nvmlReturn_t r;

	if ((r = gate(d, "throttle")))
		return r;
	/* a quarter of the time capped by software power management */
	*reasons = d->tick % 200 < 50 ? 0x4 : 0;
	logu(d, "throttle", *reasons);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m)
{
	struct fdev *d = dev_of(h);
	nvmlReturn_t r;

	if (m->version != NVML_MEMORY_V2_VERSION)
		return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	if ((r = gate(d, "mem")))
		return r;
	m->total = 80ull << 30;
	m->reserved = 512ull << 20;
	m->used = (1ull << 30) + (d->tick / 10) * 4096;
	m->free = m->total - m->used - m->reserved;
	logu(d, "mem_used", m->used);
	logu(d, "mem_reserved", m->reserved);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t h, int n, nvmlFieldValue_t *v)
{
	struct fdev *d = dev_of(h);
	nvmlReturn_t r;

	if ((r = gate(d, "fields")))
		return r;
	for (int i = 0; i < n; i++) {
		const char *name = NULL;
		unsigned long long x = 0;

		v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
		v[i].nvmlReturn = NVML_SUCCESS;
		switch (v[i].fieldId) {
		case NVML_FI_DEV_PCIE_COUNT_TX_BYTES:
			name = "pcie_tx", x = 5000000 + d->tick * 65536;
			break;
		case NVML_FI_DEV_PCIE_COUNT_RX_BYTES:
			name = "pcie_rx", x = 7000000 + d->tick * 131072;
			break;
		case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
			/* no NVLink on this board: the field is not supported */
			v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			continue;
		case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
			v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			continue;
		default:
			v[i].nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
			continue;
		}
		v[i].value.ullVal = x;
		logu(d, name, x);
	}
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t h, nvmlGpmSupport_t *s)
{
	s->isSupportedDevice = !listed(unsupported, "gpm");
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s)
{
	*s = calloc(1, sizeof(struct gpm_sample));
	return *s ? NVML_SUCCESS : 20; /* NVML_ERROR_MEMORY */
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
	free(s);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t h, nvmlGpmSample_t s)
{
	struct fdev *d = dev_of(h);
	struct gpm_sample *g = (void *)s;
	nvmlReturn_t r;

	if ((r = gate(d, "gpm")))
		return r;
	g->dev = d->index;
	g->tick = d->tick;
	d->gpm_gets++;
	return NVML_SUCCESS;
}

/* GPM's value of metric ID over the ticks up to TICK. */
static double gpm_value(unsigned id, unsigned long long tick, nvmlReturn_t *r)
{
	*r = NVML_SUCCESS;
	switch (id) {
	case NVML_GPM_METRIC_SM_UTIL:
		return sm + (double)(tick % 8) * 0.5;
	case NVML_GPM_METRIC_SM_OCCUPANCY:
		return 21.125;
	case NVML_GPM_METRIC_GRAPHICS_UTIL:
		return 88.0 + (double)(tick % 3);
	case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
		return 12.5 + (double)(tick % 5) * 0.25;
	case NVML_GPM_METRIC_HMMA_TENSOR_UTIL:
		return 12.5;
	case NVML_GPM_METRIC_IMMA_TENSOR_UTIL:
	case NVML_GPM_METRIC_DMMA_TENSOR_UTIL:
	case NVML_GPM_METRIC_DFMA_TENSOR_UTIL:
	case NVML_GPM_METRIC_FP64_UTIL:
		return 0;
	case NVML_GPM_METRIC_FP32_UTIL:
		return 3.0625;
	case NVML_GPM_METRIC_FP16_UTIL:
		return 1.5;
	case NVML_GPM_METRIC_INTEGER_UTIL:
		return 4.75;
	case NVML_GPM_METRIC_DRAM_BW_UTIL:
		return dram + (double)(tick % 4) * 0.125;
	case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
		return 1024.5;
	case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
		return 2048.25;
	default: /* NVLink: none on this board */
		*r = NVML_ERROR_NOT_SUPPORTED;
		return 0;
	}
}

EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *g)
{
	const struct gpm_sample *a = (void *)g->sample1, *b = (void *)g->sample2;
	struct fdev *d;

	if (g->version != NVML_GPM_METRICS_GET_VERSION || !a || !b || a->dev != b->dev)
		return NVML_ERROR_INVALID_ARGUMENT;
	d = &devs[b->dev];
	for (unsigned i = 0; i < g->numMetrics; i++) {
		char name[32];

		g->metrics[i].value =
			gpm_value(g->metrics[i].metricId, b->tick, &g->metrics[i].nvmlReturn);
		if (g->metrics[i].nvmlReturn)
			continue;
		snprintf(name, sizeof(name), "gpm%u", g->metrics[i].metricId);
		logd(d, name, g->metrics[i].value);
	}
	return NVML_SUCCESS;
}

/* The pids of FAKE_NVML_PIDS (or FAKE_NVML_PIDS_FILE's, now) into OUT (at most MAX). */
static unsigned fake_pids(unsigned *out, unsigned max)
{
	const char *path = getenv("FAKE_NVML_PIDS_FILE");
	char buf[256] = "";
	const char *list = pids;
	unsigned n = 0;
	FILE *f;

	if (path && (f = fopen(path, "r"))) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
		list = buf;
	}
	for (const char *p = list; *p && *p != '\n' && n < max;
	     p += strcspn(p, ",\n"), p += *p == ',')
		out[n++] = (unsigned)strtoul(p, NULL, 10);
	return n;
}

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t h,
						    nvmlProcessUtilizationSample_t *u,
						    unsigned int *count, unsigned long long since)
{
	struct fdev *d = dev_of(h);
	unsigned p[16], n = d && d->index == 0 ? fake_pids(p, 16) : 0;
	struct timespec rt;
	nvmlReturn_t r;

	if ((r = gate(d, "proc")))
		return r;
	if (!n)
		return NVML_ERROR_NOT_FOUND;
	if (*count < n || !u) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	for (unsigned i = 0; i < n; i++) {
		u[i].pid = p[i];
		u[i].timeStamp = (unsigned long long)rt.tv_sec * 1000000ull + rt.tv_nsec / 1000;
		u[i].smUtil = 40 + i;
		u[i].memUtil = 20 + i;
		u[i].encUtil = u[i].decUtil = 0;
		if (logf)
			fprintf(logf, "%llu %u proc_sm %u %u\n", d->tick, d->index, p[i],
				u[i].smUtil);
	}
	*count = n;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int *count,
							    nvmlProcessInfo_t *info)
{
	struct fdev *d = dev_of(h);
	unsigned p[16], n = d && d->index == 0 ? fake_pids(p, 16) : 0;
	nvmlReturn_t r;

	if ((r = gate(d, "proc")))
		return r;
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; i < n; i++)
		info[i] = (nvmlProcessInfo_t){ .pid = p[i],
					       .usedGpuMemory = (3ull << 30) + i * 4096,
					       .gpuInstanceId = ~0u,
					       .computeInstanceId = ~0u };
	*count = n;
	return NVML_SUCCESS;
}
