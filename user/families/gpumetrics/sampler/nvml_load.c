// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libnvidia-ml.so.1 loaded, its functions found by name (nvml_api.h). */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "nvml_api.h"

#define NVML_LIB "libnvidia-ml.so.1"

static const struct {
	const char *name;
	size_t off;
	int needed;
} fns[] = {
#define F(name, needed)                                                                            \
	{                                                                                          \
#name, offsetof(struct nvml, name), needed                                         \
	}
	F(nvmlInit_v2, 1),
	F(nvmlShutdown, 1),
	F(nvmlErrorString, 1),
	F(nvmlDeviceGetCount_v2, 1),
	F(nvmlDeviceGetHandleByIndex_v2, 1),
	F(nvmlSystemGetDriverVersion, 0),
	F(nvmlDeviceGetName, 0),
	F(nvmlDeviceGetUUID, 0),
	F(nvmlDeviceGetPciInfo_v3, 0),
	F(nvmlDeviceGetArchitecture, 0),
	F(nvmlDeviceGetMaxClockInfo, 0),
	F(nvmlDeviceGetEnforcedPowerLimit, 0),
	F(nvmlDeviceGetUtilizationRates, 0),
	F(nvmlDeviceGetClockInfo, 0),
	F(nvmlDeviceGetPowerUsage, 0),
	F(nvmlDeviceGetTotalEnergyConsumption, 0),
	F(nvmlDeviceGetTemperature, 0),
	F(nvmlDeviceGetCurrentClocksEventReasons, 0),
	F(nvmlDeviceGetCurrentClocksThrottleReasons, 0),
	F(nvmlDeviceGetMemoryInfo_v2, 0),
	F(nvmlDeviceGetMemoryInfo, 0),
	F(nvmlDeviceGetFieldValues, 0),
	F(nvmlDeviceGetProcessUtilization, 0),
	F(nvmlDeviceGetComputeRunningProcesses_v3, 0),
	F(nvmlGpmQueryDeviceSupport, 0),
	F(nvmlGpmSampleAlloc, 0),
	F(nvmlGpmSampleFree, 0),
	F(nvmlGpmSampleGet, 0),
	F(nvmlGpmMetricsGet, 0),
#undef F
};

int nvml__load(struct nvml *n, char *why, unsigned len, int *missing)
{
	memset(n, 0, sizeof(*n));
	*missing = 0;
	/* RTLD_LOCAL: its symbols stay its own (the fake of the tests defines the same names) */
	n->lib = dlopen(NVML_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		const char *e = dlerror();

		snprintf(why, len, "%s", e ? e : NVML_LIB ": cannot be loaded");
		*missing = 1;
		return -1;
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *f = dlsym(n->lib, fns[i].name);

		memcpy((char *)n + fns[i].off, &f, sizeof(f));
		if (!f && fns[i].needed) {
			snprintf(why, len, "%s has no %s: a driver older than NVML 5.319", NVML_LIB,
				 fns[i].name);
			return -1;
		}
	}
	return 0;
}

const char *nvml__err(const struct nvml *n, nvmlReturn_t r)
{
	static char buf[32];
	const char *s = n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;

	if (s && *s)
		return s;
	snprintf(buf, sizeof(buf), "error %d", r);
	return buf;
}
