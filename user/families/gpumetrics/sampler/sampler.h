/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bpfsight-gpum-sampler: the gpumetrics family's sampler, a small dynamically linked program
 * the recorder carries inside its binary and runs (gpum_spawn.c). bpfsight is one static
 * file, and glibc's static dlopen cannot load a library that starts threads (it crashes in
 * pthread_create); NVML is the driver's library, loaded as any program loads it, here. The
 * sampler reads NVML at the asked rate and writes records into the channel the recorder maps
 * (bpf/gpumetrics_records.h). It never writes anywhere else; it ends when the recorder says
 * stop, or dies.
 *
 * Usage: bpfsight-gpum-sampler CHAN_FD HZ DEVICES PROC
 *   CHAN_FD  the channel's memfd; HZ the ticks per second asked; DEVICES "all" or "0,2";
 *   PROC     1: read each process's use of the devices too.
 */
#ifndef BPFSIGHT_SAMPLER_H
#define BPFSIGHT_SAMPLER_H

#include <linux/types.h>
#include "gpumetrics_records.h"
#include "nvml_api.h"

/*
 * Metrics that NVML refreshes slowly (its utilization: every 1/6 s to 1 s): read every so many
 * ticks, about this often; every other one at each tick.
 */
#define SAMPLER_SLOW_NS 10000000ull /* 100 Hz */
/* Each process's use of the devices: NVML's own samples come every 1/6 s. */
#define SAMPLER_PROC_NS 100000000ull /* 10 Hz */
/* A KEY at least this often per device, and the clocks' pair read again as often. */
#define SAMPLER_KEY_NS 1000000000ull
/* Ticks whose reads are timed before the rate is settled (SAMPLER_CALIBRATE). */
#define SAMPLER_CALIBRATE 32
/* A tick's reads may take at most this share of its period: the rest is the machine's. */
#define SAMPLER_BUSY_MAX 2 /* 1/2 */

/*
 * GPM's samples at most this often: NVML's counters behind them are refreshed about every 100 ms
 * (its manual asks more than 100 ms between two samples). On an H200 at 136 Hz, 95% of the
 * ticks' GPM values were 0 and the rest 93%: a bf16 GEMM busy 65% of the time read as 4.6%
 * tensor active. A GPM value is over the time since the previous GPM sample.
 */
#define SAMPLER_GPM_NS (200 * 1000000ull)

/* Bits of sampler_dev.off past the metrics': its process reads NVML refused. */
#define GPUM_PROC_UTIL_OFF (1ull << 62)
#define GPUM_PROC_MEM_OFF  (1ull << 63)

struct sampler_dev {
	unsigned index;
	nvmlDevice_t h;
	int lost;
	__u64 off;  /* metrics not read on it: unsupported, denied */
	int gpm_ok; /* GPM samples allocated */
	nvmlGpmSample_t gpm[2];
	int gpm_cur, gpm_primed;
	__u64 gpm_ts;		  /* when its last GPM sample was taken */
	__u64 val[GPUM_NMETRICS]; /* this tick's */
	__u64 have;
	__u64 ts; /* this tick's time: when its energy was read (0: the middle of its reads) */
	__u64 key_val[GPUM_NMETRICS]; /* the last KEY's */
	__u64 key_have, key_ts;
	int info_dirty;		      /* write its DEVICE record again */
	unsigned long long proc_seen; /* lastSeenTimeStamp of its process samples */
	struct bs_gpum_device info;
};

struct sampler {
	struct nvml nvml;
	struct gpum_chan *chan;
	char *ring;
	struct sampler_dev dev[GPUM_MAX_DEVICES];
	unsigned ndev;
	int proc;
	__u64 mono_minus_real; /* CLOCK_MONOTONIC - CLOCK_REALTIME, ns: NVML's times mapped */
	__u64 last_pair;
	/* scratch of the process reads */
	nvmlProcessUtilizationSample_t *putil;
	unsigned putil_cap;
	nvmlProcessInfo_t *pinfo;
	unsigned pinfo_cap;
};

/* sampler_read.c: one tick of device D: its values, have and ts; SLOW: the slow ones too. */
void sampler__read(struct sampler *s, struct sampler_dev *d, int slow);
/* Open device D's handle and fill its DEVICE record: 0, or an nvmlReturn_t. */
nvmlReturn_t sampler__open_dev(struct sampler *s, struct sampler_dev *d);
void sampler__close_dev(struct sampler *s, struct sampler_dev *d);
/* sampler_proc.c: the processes on device D (NVML's samples since the last call, memory). */
void sampler__read_procs(struct sampler *s, struct sampler_dev *d, __u64 now);

/* sampler_out.c: records into the channel. 0, or -1 when the ring is full (counted). */
int sampler__put(struct sampler *s, const void *rec);
/* Device D's sample at TS: a KEY or a SAMPLE, as compact as its KEY allows. */
void sampler__put_sample(struct sampler *s, struct sampler_dev *d, __u64 ts);
void sampler__put_device(struct sampler *s, struct sampler_dev *d, __u64 ts);
void sampler__put_status(struct sampler *s, enum bs_gpum_state state, unsigned hz_asked,
			 unsigned hz, unsigned tick_ns, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* CLOCK_MONOTONIC now, ns. */
__u64 sampler__now(void);

#endif /* BPFSIGHT_SAMPLER_H */
