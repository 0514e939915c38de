/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The part of NVML's ABI (libnvidia-ml.so.1, the driver's library) the sampler calls: its
 * types, constants and the functions it looks up, declared here from NVML's documentation so
 * that neither the build nor the machine needs nvml.h. Every function is found with dlsym when
 * the library is loaded; one that an older driver lacks is NULL, and what it reads is left out.
 */
#ifndef BPFSIGHT_NVML_API_H
#define BPFSIGHT_NVML_API_H

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

#define NVML_SUCCESS		      0
#define NVML_ERROR_UNINITIALIZED      1
#define NVML_ERROR_INVALID_ARGUMENT   2
#define NVML_ERROR_NOT_SUPPORTED      3
#define NVML_ERROR_NO_PERMISSION      4
#define NVML_ERROR_NOT_FOUND	      6
#define NVML_ERROR_INSUFFICIENT_SIZE  7
#define NVML_ERROR_DRIVER_NOT_LOADED  9
#define NVML_ERROR_TIMEOUT	      10
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_GPU_IS_LOST	      15
#define NVML_ERROR_RESET_REQUIRED     16
#define NVML_ERROR_NO_DATA	      21
#define NVML_ERROR_GPU_NOT_FOUND      28
#define NVML_ERROR_UNKNOWN	      999

#define NVML_CLOCK_SM		 1
#define NVML_CLOCK_MEM		 2
#define NVML_TEMPERATURE_GPU	 0
#define NVML_DEVICE_ARCH_HOPPER	 9
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffffu

/* nvmlDeviceGetFieldValues's fields the sampler reads; a scope of ~0u: every NVLink summed. */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* KiB */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_FI_DEV_PCIE_COUNT_TX_BYTES	      197
#define NVML_FI_DEV_PCIE_COUNT_RX_BYTES	      198

#define NVML_VALUE_TYPE_DOUBLE		   0
#define NVML_VALUE_TYPE_UNSIGNED_INT	   1
#define NVML_VALUE_TYPE_UNSIGNED_LONG	   2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG   4
#define NVML_VALUE_TYPE_SIGNED_INT	   5
#define NVML_VALUE_TYPE_UNSIGNED_SHORT	   6

/* GPM metric ids (nvmlGpmMetricId_t). */
#define NVML_GPM_METRIC_GRAPHICS_UTIL		1
#define NVML_GPM_METRIC_SM_UTIL			2
#define NVML_GPM_METRIC_SM_OCCUPANCY		3
#define NVML_GPM_METRIC_INTEGER_UTIL		4
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL		5
#define NVML_GPM_METRIC_DFMA_TENSOR_UTIL	6
#define NVML_GPM_METRIC_HMMA_TENSOR_UTIL	7
#define NVML_GPM_METRIC_DMMA_TENSOR_UTIL	8
#define NVML_GPM_METRIC_IMMA_TENSOR_UTIL	9
#define NVML_GPM_METRIC_DRAM_BW_UTIL		10
#define NVML_GPM_METRIC_FP64_UTIL		11
#define NVML_GPM_METRIC_FP32_UTIL		12
#define NVML_GPM_METRIC_FP16_UTIL		13
#define NVML_GPM_METRIC_PCIE_TX_PER_SEC		20
#define NVML_GPM_METRIC_PCIE_RX_PER_SEC		21
#define NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC 60
#define NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC 61

#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION     1
/* NVML_STRUCT_VERSION(Memory, 2): the struct's size, and its version in the top byte. */
#define NVML_MEMORY_V2_VERSION (unsigned int)(sizeof(nvmlMemory_v2_t) | 2u << 24)

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef union {
	double dVal;
	int siVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
	unsigned short usVal;
} nvmlValue_t;

typedef struct {
	unsigned int fieldId, scopeId;
	long long timestamp;   /* us since 1970 */
	long long latencyUsec; /* how old NVML's value was */
	int valueType;	       /* NVML_VALUE_TYPE_* */
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
	unsigned int pid;
	unsigned long long timeStamp; /* us since 1970 (the CPU's realtime clock) */
	unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t; /* nvmlProcessInfo_v2_t, what ..._v3 fills */

typedef struct {
	unsigned int version, isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
	unsigned int metricId;
	nvmlReturn_t nvmlReturn;
	double value;
	struct {
		char *shortName, *longName, *unit;
	} metricInfo;
} nvmlGpmMetric_t;

/*
 * NVML reads numMetrics entries of metrics[]: the array may be shorter than NVML's own
 * NVML_GPM_METRIC_MAX, which grows from release to release.
 */
#define GPM_METRICS_MAX 32
typedef struct {
	unsigned int version, numMetrics;
	nvmlGpmSample_t sample1, sample2;
	nvmlGpmMetric_t metrics[GPM_METRICS_MAX];
} nvmlGpmMetricsGet_t;

#define NVML_FN(ret, name, args) ret(*name) args;

/* The functions, found by name (NULL: this driver's NVML lacks it). */
struct nvml {
	void *lib;
	/* needed: without them the sampler cannot start */
	NVML_FN(nvmlReturn_t, nvmlInit_v2, (void))
	NVML_FN(nvmlReturn_t, nvmlShutdown, (void))
	NVML_FN(const char *, nvmlErrorString, (nvmlReturn_t))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *))
	/* the rest: each missing one leaves out what it reads */
	NVML_FN(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *, unsigned int))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t, char *, unsigned int))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t, nvmlPciInfo_t *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetArchitecture, (nvmlDevice_t, unsigned int *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetMaxClockInfo, (nvmlDevice_t, int, unsigned int *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t, unsigned int *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t, int, unsigned int *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t, unsigned int *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetTotalEnergyConsumption,
		(nvmlDevice_t, unsigned long long *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetTemperature, (nvmlDevice_t, int, unsigned int *))
	/* the newer name first; drivers before 535 have only ...ThrottleReasons */
	NVML_FN(nvmlReturn_t, nvmlDeviceGetCurrentClocksEventReasons,
		(nvmlDevice_t, unsigned long long *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetCurrentClocksThrottleReasons,
		(nvmlDevice_t, unsigned long long *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t, nvmlMemory_v2_t *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetFieldValues, (nvmlDevice_t, int, nvmlFieldValue_t *))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetProcessUtilization,
		(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
		 unsigned long long))
	NVML_FN(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,
		(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))
	NVML_FN(nvmlReturn_t, nvmlGpmQueryDeviceSupport, (nvmlDevice_t, nvmlGpmSupport_t *))
	NVML_FN(nvmlReturn_t, nvmlGpmSampleAlloc, (nvmlGpmSample_t *))
	NVML_FN(nvmlReturn_t, nvmlGpmSampleFree, (nvmlGpmSample_t))
	NVML_FN(nvmlReturn_t, nvmlGpmSampleGet, (nvmlDevice_t, nvmlGpmSample_t))
	NVML_FN(nvmlReturn_t, nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t *))
};

/*
 * Load libnvidia-ml.so.1 as dlopen finds it (LD_LIBRARY_PATH, then ld.so's cache and the
 * system's directories) and look up every function. 0; or -1 with WHY (LEN bytes) saying
 * what failed: the library not found (*MISSING 1), or a needed function absent.
 */
int nvml__load(struct nvml *n, char *why, unsigned len, int *missing);
/* NVML's words for R, or "error N" when it has none. */
const char *nvml__err(const struct nvml *n, nvmlReturn_t r);

#endif /* BPFSIGHT_NVML_API_H */
