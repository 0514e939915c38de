// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What each metric is called, in every output: dump's key, the tables' title and unit, the
 * description the exports give, and dcgm-exporter's field name for monitor's gauge (its unit:
 * dcgm's profiling fields are ratios 0..1, power in W, memory in MiB).
 */
#include <string.h>
#include "gpumetrics.h"

#define MIB (1.0 / 1048576.0)

// clang-format off
const struct gpum_metric_info gpum_metrics[GPUM_NMETRICS] = {
	[GPUM_GPU_UTIL] = { "gpu_util", "GPU Util", "%", "%",
		"Share of time a kernel ran (NVML's utilization.gpu, over the driver's window of 1/6 to 1 s)",
		"DCGM_FI_DEV_GPU_UTIL", 1, 1, GPUM_K_LEVEL },
	[GPUM_MEM_UTIL] = { "mem_util", "Mem Util", "%", "%",
		"Share of time device memory was read or written (NVML's utilization.memory)",
		"DCGM_FI_DEV_MEM_COPY_UTIL", 1, 1, GPUM_K_LEVEL },
	[GPUM_SM_CLOCK] = { "sm_clock", "SM Clock", "MHz", "MHz", "SM clock (NVML)",
		"DCGM_FI_DEV_SM_CLOCK", 1, 1, GPUM_K_LEVEL },
	[GPUM_MEM_CLOCK] = { "mem_clock", "Mem Clock", "MHz", "MHz", "Memory clock (NVML)",
		"DCGM_FI_DEV_MEM_CLOCK", 1, 1, GPUM_K_LEVEL },
	[GPUM_POWER] = { "power", "Power", "W", "mW", "Power drawn by the board (NVML's power usage)",
		"DCGM_FI_DEV_POWER_USAGE", 0.001, 0.001, GPUM_K_LEVEL },
	[GPUM_ENERGY] = { "energy", "Energy", "J", "mJ",
		"Energy used since the driver loaded (nvmlDeviceGetTotalEnergyConsumption)",
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0.001, 1, GPUM_K_COUNTER },
	[GPUM_TEMP] = { "temp", "Temp", "C", "C", "GPU die temperature (NVML)",
		"DCGM_FI_DEV_GPU_TEMP", 1, 1, GPUM_K_LEVEL },
	[GPUM_THROTTLE] = { "throttle", "Throttle", "", "bits",
		"Why the clocks are held down (nvmlClocksEventReason bits)",
		"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 1, 1, GPUM_K_BITS },
	[GPUM_MEM_USED] = { "mem_used", "Mem Used", "B", "B", "Device memory allocated (NVML)",
		"DCGM_FI_DEV_FB_USED", 1, MIB, GPUM_K_LEVEL },
	[GPUM_MEM_RESERVED] = { "mem_reserved", "Mem Reserved", "B", "B",
		"Device memory the driver and firmware keep (NVML)",
		"DCGM_FI_DEV_FB_RESERVED", 1, MIB, GPUM_K_LEVEL },
	[GPUM_PCIE_TX] = { "pcie_tx", "PCIe TX", "B", "B", "Bytes sent over PCIe (an NVML counter)",
		NULL, 1, 1, GPUM_K_COUNTER },
	[GPUM_PCIE_RX] = { "pcie_rx", "PCIe RX", "B", "B", "Bytes received over PCIe (an NVML counter)",
		NULL, 1, 1, GPUM_K_COUNTER },
	[GPUM_NVLINK_TX] = { "nvlink_tx", "NVLink TX", "B", "KiB",
		"Data sent over every NVLink (an NVML counter, KiB: shown in bytes)",
		NULL, 1024, 1024, GPUM_K_COUNTER },
	[GPUM_NVLINK_RX] = { "nvlink_rx", "NVLink RX", "B", "KiB",
		"Data received over every NVLink (an NVML counter)",
		NULL, 1024, 1024, GPUM_K_COUNTER },
	[GPUM_SM_ACTIVE] = { "sm_active", "SM Active", "%", "%",
		"Share of SMs busy, averaged over the sample (GPM)",
		"DCGM_FI_PROF_SM_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_SM_OCCUPANCY] = { "sm_occupancy", "SM Occupancy", "%", "%",
		"Warps resident on the SMs, of the most they hold (GPM)",
		"DCGM_FI_PROF_SM_OCCUPANCY", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_GR_ACTIVE] = { "gr_active", "GR Active", "%", "%",
		"Share of time the graphics/compute engine had work (GPM)",
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_TENSOR_ACTIVE] = { "tensor_active", "Tensor Active", "%", "%",
		"Share of time tensor cores ran, any type (GPM)",
		"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_TENSOR_HMMA] = { "tensor_hmma", "Tensor HMMA", "%", "%",
		"Share of time tensor cores ran half-precision MMA: FP16, BF16, TF32, FP8 (GPM)",
		"DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_TENSOR_IMMA] = { "tensor_imma", "Tensor IMMA", "%", "%",
		"Share of time tensor cores ran integer MMA (GPM)",
		"DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_TENSOR_DMMA] = { "tensor_dmma", "Tensor DMMA", "%", "%",
		"Share of time tensor cores ran FP64 MMA (GPM)",
		NULL, 1, 0.01, GPUM_K_LEVEL },
	[GPUM_TENSOR_DFMA] = { "tensor_dfma", "Tensor DFMA", "%", "%",
		"Share of time tensor cores ran FP64 FMA (GPM)",
		"DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_FP64_ACTIVE] = { "fp64_active", "FP64 Active", "%", "%",
		"Share of time the FP64 pipe ran, not on tensor cores (GPM)",
		"DCGM_FI_PROF_PIPE_FP64_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_FP32_ACTIVE] = { "fp32_active", "FP32 Active", "%", "%",
		"Share of time the FP32 pipe ran (GPM)",
		"DCGM_FI_PROF_PIPE_FP32_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_FP16_ACTIVE] = { "fp16_active", "FP16 Active", "%", "%",
		"Share of time the FP16 pipe ran, not on tensor cores (GPM)",
		"DCGM_FI_PROF_PIPE_FP16_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_INT_ACTIVE] = { "int_active", "INT Active", "%", "%",
		"Share of time the integer pipe ran (GPM)",
		NULL, 1, 0.01, GPUM_K_LEVEL },
	[GPUM_DRAM_ACTIVE] = { "dram_active", "DRAM Active", "%", "%",
		"DRAM bandwidth used, of the device's peak (GPM)",
		"DCGM_FI_PROF_DRAM_ACTIVE", 1, 0.01, GPUM_K_LEVEL },
	[GPUM_GPM_PCIE_TX] = { "pcie_tx_rate", "PCIe TX Rate", "B/s", "MiB/s",
		"PCIe traffic out of the GPU (GPM, MiB/s: shown in bytes/s)",
		"DCGM_FI_PROF_PCIE_TX_BYTES", 1048576, 1048576, GPUM_K_LEVEL },
	[GPUM_GPM_PCIE_RX] = { "pcie_rx_rate", "PCIe RX Rate", "B/s", "MiB/s",
		"PCIe traffic into the GPU (GPM)",
		"DCGM_FI_PROF_PCIE_RX_BYTES", 1048576, 1048576, GPUM_K_LEVEL },
	[GPUM_GPM_NVLINK_TX] = { "nvlink_tx_rate", "NVLink TX Rate", "B/s", "MiB/s",
		"NVLink traffic out of the GPU, every link (GPM)",
		"DCGM_FI_PROF_NVLINK_TX_BYTES", 1048576, 1048576, GPUM_K_LEVEL },
	[GPUM_GPM_NVLINK_RX] = { "nvlink_rx_rate", "NVLink RX Rate", "B/s", "MiB/s",
		"NVLink traffic into the GPU, every link (GPM)",
		"DCGM_FI_PROF_NVLINK_RX_BYTES", 1048576, 1048576, GPUM_K_LEVEL },
};
// clang-format on

double gpum_value(unsigned m, __u64 v)
{
	double d;

	if (m < GPUM_NMETRICS && (GPUM_DOUBLES & GPUM_BIT(m))) {
		memcpy(&d, &v, sizeof(d));
		return d;
	}
	return (double)v;
}

const char *gpum_throttle_name(unsigned b)
{
	static const char *const names[] = {
		"gpu_idle",	 "applications_clocks", "sw_power_cap",	       "hw_slowdown",
		"sync_boost",	 "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake",
		"display_clock",
	};

	return b < sizeof(names) / sizeof(names[0]) ? names[b] : NULL;
}
