/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The gpumetrics family's records (block 0x100; 0xa8-0xac, in merge's block, in files of format
 * 3 and before, which readers map: trace_renumber.h): NVML's and GPM's device metrics, sampled by the family's sampler
 * process (user/families/gpumetrics/sampler/), and the shared memory that carries them to the
 * recorder. No BPF program writes them. docs/GPU-METRICS.md for users; docs/FORMAT.md lists
 * the fields.
 *
 * A sample is compact: it names the metrics it has (have) and carries the values of those
 * that differ from the device's latest KEY sample (carry), in bit order; the others are the
 * KEY's. A KEY carries every value it has, and comes first for its device, then at least once
 * a second (and whenever a sample would carry most of its values), so a sample is read with
 * its device's latest KEY alone (a flight recorder's window keeps it: a state record).
 */
#ifndef BPFSIGHT_GPUMETRICS_RECORDS_H
#define BPFSIGHT_GPUMETRICS_RECORDS_H

#include "records.h"

#define BS_REC_GPUM_DEVICE 0x100 /* a device: its identity and what it lacks (state) */
#define BS_REC_GPUM_KEY	   0x101 /* a sample carrying every value it has (state) */
#define BS_REC_GPUM_SAMPLE 0x102 /* a sample carrying what differs from its device's KEY */
#define BS_REC_GPUM_PROC   0x103 /* a process's use of a device, as NVML accounts it */
#define BS_REC_GPUM_STATUS 0x104 /* the sampler: started, or why it has no metrics (state) */

/* Loss causes (its first types' numbers in format 3, kept: causes are never renumbered). */
#define BS_LOSS_GPUM_LATE                                                                          \
	0xa8 /* ticks skipped: the sampler woke late, or a tick's reads ran long */
#define BS_LOSS_GPUM_LOST 0xa9 /* samples of a device that stopped answering (GPU is lost) */
#define BS_LOSS_GPUM_FULL 0xaa /* samples the recorder's buffer could not take (it fell behind) */

/*
 * The metrics: bit i of have and carry. Below GPUM_GPM_FIRST, NVML's device queries, each an
 * unsigned integer; from it, GPM's metrics (Hopper and later), each an IEEE double (its bits
 * in the u64), a percentage or MiB/s as nvmlGpmMetricsGet gives it.
 */
enum gpum_metric {
	GPUM_GPU_UTIL,	   /* %: time a kernel ran (nvmlDeviceGetUtilizationRates .gpu) */
	GPUM_MEM_UTIL,	   /* %: time device memory was read or written (.memory) */
	GPUM_SM_CLOCK,	   /* MHz (nvmlDeviceGetClockInfo NVML_CLOCK_SM) */
	GPUM_MEM_CLOCK,	   /* MHz (NVML_CLOCK_MEM) */
	GPUM_POWER,	   /* mW (nvmlDeviceGetPowerUsage) */
	GPUM_ENERGY,	   /* mJ since the driver loaded (nvmlDeviceGetTotalEnergyConsumption) */
	GPUM_TEMP,	   /* degrees C, the die (nvmlDeviceGetTemperature NVML_TEMPERATURE_GPU) */
	GPUM_THROTTLE,	   /* nvmlClocksEventReason* bits (...GetCurrentClocksEventReasons) */
	GPUM_MEM_USED,	   /* bytes (nvmlDeviceGetMemoryInfo_v2 .used) */
	GPUM_MEM_RESERVED, /* bytes the driver and firmware keep (.reserved) */
	GPUM_PCIE_TX,	   /* bytes sent over PCIe, a counter (NVML_FI_DEV_PCIE_COUNT_TX_BYTES) */
	GPUM_PCIE_RX,	   /* bytes received (NVML_FI_DEV_PCIE_COUNT_RX_BYTES) */
	GPUM_NVLINK_TX,	   /* KiB of data sent over NVLink, every link (..._THROUGHPUT_DATA_TX) */
	GPUM_NVLINK_RX,	   /* KiB received (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX) */
	GPUM_GPM_FIRST = 16,
	GPUM_SM_ACTIVE = GPUM_GPM_FIRST, /* % of SMs busy (NVML_GPM_METRIC_SM_UTIL) */
	GPUM_SM_OCCUPANCY,		 /* % of the warps an SM holds (SM_OCCUPANCY) */
	GPUM_GR_ACTIVE,			 /* % of time an engine ran work (GRAPHICS_UTIL) */
	GPUM_TENSOR_ACTIVE,		 /* % of time tensor cores ran, any type (ANY_TENSOR) */
	GPUM_TENSOR_HMMA,		 /* ... FP16/BF16/TF32/FP8 MMA (HMMA_TENSOR_UTIL) */
	GPUM_TENSOR_IMMA,		 /* ... integer MMA (IMMA_TENSOR_UTIL) */
	GPUM_TENSOR_DMMA,		 /* ... FP64 MMA (DMMA_TENSOR_UTIL) */
	GPUM_TENSOR_DFMA,		 /* ... FP64 FMA on tensor cores (DFMA_TENSOR_UTIL) */
	GPUM_FP64_ACTIVE,		 /* % of time the FP64 pipe ran, not tensor (FP64_UTIL) */
	GPUM_FP32_ACTIVE,		 /* (FP32_UTIL) */
	GPUM_FP16_ACTIVE,		 /* (FP16_UTIL) */
	GPUM_INT_ACTIVE,		 /* (INTEGER_UTIL) */
	GPUM_DRAM_ACTIVE,		 /* % of the peak DRAM bandwidth used (DRAM_BW_UTIL) */
	GPUM_GPM_PCIE_TX,		 /* MiB/s sent over PCIe (PCIE_TX_PER_SEC) */
	GPUM_GPM_PCIE_RX,		 /* MiB/s received (PCIE_RX_PER_SEC) */
	GPUM_GPM_NVLINK_TX, /* MiB/s sent over every NVLink (NVLINK_TOTAL_TX_PER_SEC) */
	GPUM_GPM_NVLINK_RX, /* (NVLINK_TOTAL_RX_PER_SEC) */
	GPUM_NMETRICS,
};

#define GPUM_BIT(m) (1ull << (m))
/* The metrics whose values are doubles: GPM's. */
#define GPUM_DOUBLES	 (((1ull << GPUM_NMETRICS) - 1) & ~((1ull << GPUM_GPM_FIRST) - 1))
#define GPUM_MAX_DEVICES 64
#define GPUM_NAME_LEN	 64
#define GPUM_UUID_LEN	 48
#define GPUM_BUS_LEN	 32
#define GPUM_STATUS_TEXT 192

#define BS_GPUM_DEV_GPM	 0x1 /* GPM metrics are read (nvmlGpmQueryDeviceSupport said yes) */
#define BS_GPUM_DEV_LOST 0x2 /* it stopped answering: no sample of it from hdr.ts on */

/*
 * A device sampled (hdr.pid = hdr.tid = 0; hdr.ts: when it was found, or lost), written
 * before its first sample and again when it changes (lost, a metric found missing).
 */
struct bs_gpum_device {
	struct bs_hdr h;
	__u32 device; /* NVML's index (first: the flight recorder keeps the latest per device) */
	__u32 _pad0;
	__u32 flags;	   /* BS_GPUM_DEV_* */
	__u32 arch;	   /* nvmlDeviceArchitecture_t (9: Hopper), 0xffffffff unknown */
	__u64 unsupported; /* metrics NVML says this device does not have: never read */
	__u64 denied;	   /* metrics NVML refused (NO_PERMISSION): never read */
	__u64 mem_total;   /* bytes, 0 unknown */
	__u32 power_limit; /* mW the driver enforces, 0 unknown */
	__u32 lost_err;	   /* the nvmlReturn_t that said it was lost (15: GPU_IS_LOST) */
	__u32 max_sm_clock, max_mem_clock; /* MHz, 0 unknown */
	char name[GPUM_NAME_LEN];	   /* "NVIDIA H100 80GB HBM3" */
	char uuid[GPUM_UUID_LEN];	   /* "GPU-8ed0..." */
	char bus_id[GPUM_BUS_LEN];	   /* "00000000:18:00.0" */
};

/*
 * A sample of a device (KEY or SAMPLE; hdr.pid = hdr.tid = 0; hdr.ts: the middle of its
 * reads, CLOCK_MONOTONIC): the u64 values of the metrics in carry, in bit order, follow.
 */
struct bs_gpum_sample {
	struct bs_hdr h;
	__u32 device;
	__u32 _pad0;
	__u64 have;  /* GPUM_BIT(metric): the metrics this sample has */
	__u64 carry; /* of have, those whose values follow (a KEY: all of have) */
		     /* __u64 values[popcount(carry)]; */
};

#define BS_GPUM_PROC_SM	  0x1 /* sm_util (nvmlDeviceGetProcessUtilization) */
#define BS_GPUM_PROC_MEM  0x2 /* mem_util */
#define BS_GPUM_PROC_ENC  0x4
#define BS_GPUM_PROC_DEC  0x8
#define BS_GPUM_PROC_USED 0x10 /* used_mem (nvmlDeviceGetComputeRunningProcesses_v3) */

/*
 * A process on a device, as NVML accounts it (hdr.pid: the process as NVML names it,
 * hdr.tid = 0). Utilization comes in NVML's own samples, hdr.ts = its timestamp mapped onto
 * CLOCK_MONOTONIC, each over the time since the process's previous one; memory when read.
 */
struct bs_gpum_proc {
	struct bs_hdr h;
	__u32 device;
	__u32 have;				     /* BS_GPUM_PROC_* */
	__u32 sm_util, mem_util, enc_util, dec_util; /* % */
	__u64 used_mem;				     /* bytes */
};

enum bs_gpum_state {
	BS_GPUM_STARTING,    /* the sampler is loading NVML */
	BS_GPUM_RUNNING,     /* sampling ndevices devices */
	BS_GPUM_NO_NVML,     /* libnvidia-ml.so.1 could not be loaded: no driver here */
	BS_GPUM_NVML_FAILED, /* NVML did not start (nvmlInit), or a function it needs is missing */
	BS_GPUM_NO_DEVICE,   /* NVML has no device, or none of those asked */
	BS_GPUM_NO_SAMPLER,  /* the sampler process could not be started */
	BS_GPUM_ENDED,	     /* the sampler ended early (it died: text says how) */
	BS_GPUM_STOPPED,     /* the recording stopped it: its ticks and CPU time, as it ended */
};

/*
 * The sampler's state (hdr.pid = hdr.tid = 0, hdr.ts: when it changed): written once it
 * starts or fails, if it ends before the recording does, and when the recording stops it.
 */
struct bs_gpum_status {
	struct bs_hdr h;
	__u32 state;	   /* enum bs_gpum_state */
	__u32 sampler_pid; /* its process, 0 when none ran */
	__u32 hz_asked;	   /* --gpu-metrics-frequency */
	__u32 hz;	   /* the rate it samples at: lower where a tick's reads take longer */
	__u32 tick_ns;	   /* what a tick's reads took (the median of the first ticks); 0 unknown */
	__u32 ndevices;
	char text[GPUM_STATUS_TEXT]; /* what NVML said, its driver version */
	__u64 ticks;		     /* ticks taken so far (STOPPED, ENDED) */
	__u64 cpu_ns;		     /* the sampler's CPU time so far, user and system */
};

BS_ASSERT_RECORD(bs_gpum_device, 224);
BS_ASSERT_RECORD(bs_gpum_sample, 48);
BS_ASSERT_RECORD(bs_gpum_proc, 56);
BS_ASSERT_RECORD(bs_gpum_status, 256);

/*
 * The channel between the sampler process and the recorder: a shared memory file (a memfd the
 * recorder makes, mapped by both) of a header page and a ring of SIZE bytes. The sampler
 * writes records (the types above, whole, each a multiple of 8 bytes) at head and publishes
 * head with release order; the recorder copies them out up to head and publishes tail. A
 * record that would run past the ring's end is written at its start, after a word of zeros
 * where it would have gone (a reader seeing type 0 goes on at the start). The counters are
 * cumulative: the recorder writes their increments as LOSS records.
 */
#define GPUM_CHAN_MAGIC	  0x4d555047 /* "GPUM" */
#define GPUM_CHAN_VERSION 1
#define GPUM_CHAN_HDR	  4096

struct gpum_chan {
	__u32 magic, version;
	__u64 size;	     /* bytes of the ring, after the header page */
	__u64 head;	     /* sampler: bytes written, ever */
	__u64 tail;	     /* recorder: bytes read, ever */
	__u32 stop;	     /* recorder: 1 = end now */
	__u32 state;	     /* sampler: enum bs_gpum_state */
	__u64 ticks;	     /* sampler: ticks taken */
	__u64 late;	     /* ticks skipped (BS_LOSS_GPUM_LATE) */
	__u64 full;	     /* samples the ring could not take (BS_LOSS_GPUM_FULL) */
	__u64 lost;	     /* samples of lost devices (BS_LOSS_GPUM_LOST) */
	__u64 failed;	     /* reads that failed once, the metric left out of its sample */
	__u64 cpu_ns;	     /* the sampler's CPU time (user + system) at its last tick */
	__u64 first_tick_ns; /* CLOCK_MONOTONIC of its first tick and its latest */
	__u64 last_tick_ns;
};

#endif /* BPFSIGHT_GPUMETRICS_RECORDS_H */
