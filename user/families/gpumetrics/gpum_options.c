// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpumetrics family's options, nsys's names and values: --gpu-metrics-devices (record,
 * monitor, top; giving it records the family) and --gpu-metrics-frequency.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpumetrics.h"
#include "family_record.h"
#include "msg.h"
#include "record_ctx.h"

void gpum_opts_init(void *opts, const char *cmd)
{
	struct gpum_opts *o = opts;

	snprintf(o->devices, sizeof(o->devices), "all");
	o->hz = GPUM_DEFAULT_HZ;
}

/* "all", "none", "cuda-visible" or indices "0,1" (each a GPU's NVML index, below 64). */
static int parse_devices(void *opts, const char *arg, const char *cmd)
{
	struct gpum_opts *o = opts;
	const char *p = arg;

	if (strlen(arg) >= sizeof(o->devices))
		return msg__fail("bad --gpu-metrics-devices '%.40s...': too long", arg);
	if (strcmp(arg, "all") && strcmp(arg, "none") && strcmp(arg, "cuda-visible")) {
		do {
			char *end;
			unsigned long i;

			errno = 0;
			i = strtoul(p, &end, 10);
			if (errno || end == p || (*end && *end != ',') || i >= GPUM_MAX_DEVICES)
				return msg__fail("bad --gpu-metrics-devices '%s': all, none, "
						 "cuda-visible, or GPU indices as nvidia-smi "
						 "numbers them (0,1)",
						 arg);
			p = *end ? end + 1 : end;
		} while (*p);
	}
	snprintf(o->devices, sizeof(o->devices), "%s", arg);
	return 0;
}

static int parse_hz(void *opts, const char *arg, const char *cmd)
{
	unsigned long hz;
	char *end;

	errno = 0;
	hz = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || hz < 1 || hz > GPUM_MAX_HZ)
		return msg__fail("bad --gpu-metrics-frequency '%s': samples per second, 1 to %d "
				 "(default %d, nsys's)",
				 arg, GPUM_MAX_HZ, GPUM_DEFAULT_HZ);
	((struct gpum_opts *)opts)->hz = hz;
	return 0;
}

void gpum_opts_describe(const void *opts, char *buf, size_t len)
{
	const struct gpum_opts *o = opts;

	snprintf(buf, len, " gpu_metrics_devices=%s gpu_metrics_frequency=%u", o->devices, o->hz);
}

const struct family_option gpum_options[] = {
	{ "gpu-metrics-devices", "LIST",
	  "gpumetrics: sample these GPUs' NVML and GPM metrics (nsys's option; records the "
	  "gpumetrics family; default all when -t names it)",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR | FAMILY_OPT_IMPLIES, parse_devices },
	{ "gpu-metrics-frequency", "HZ",
	  "gpumetrics: samples per second of each GPU (default 10000, nsys's; 1 to 200000; "
	  "lowered to what NVML's reads allow, and said)",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, parse_hz },
	{ 0 },
};
