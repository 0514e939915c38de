/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * gpumetrics family: each GPU's utilization, clocks, power, energy, temperature, throttling,
 * memory and PCIe/NVLink traffic from NVML, and on Hopper and later GPM's SM and tensor
 * activity and DRAM bandwidth, sampled at --gpu-metrics-frequency by a process of the
 * recorder's (sampler/sampler.h, gpum_spawn.c), on the trace's clock; each process's use of
 * the devices where NVML gives it. Record side in gpumetrics.c and gpum_drain.c, decoders and
 * the reading walk in gpum_decode.c, what each metric is called in gpum_names.c.
 * docs/GPU-METRICS.md for users.
 */
#ifndef BPFSIGHT_GPUMETRICS_H
#define BPFSIGHT_GPUMETRICS_H

#include <sys/types.h>
#include "family.h"
#include "family_record.h"
#include "gpumetrics_records.h"

#define GPUM_DEFAULT_HZ 10000  /* nsys's --gpu-metrics-frequency default */
#define GPUM_MAX_HZ	200000 /* nsys's bound */
#define GPUM_RING_MIN	(4ull << 20)
#define GPUM_RING_MAX	(64ull << 20)
/* How long attach waits for NVML to start (nvmlInit takes seconds without persistence mode). */
#define GPUM_START_WAIT_NS 10000000000ull
/* How long the stop waits for the sampler past its period, then after killing it. */
#define GPUM_STOP_WAIT_NS 1000000000ull
#define GPUM_KILL_WAIT_NS 500000000ull

struct gpum_opts {
	char devices[256]; /* "all", "none", "cuda-visible", "0,1" */
	__u32 hz;
};

/* The sampler process and its channel (gpum_spawn.c). */
struct gpum_sampler {
	pid_t pid;
	int chan_fd;
	struct gpum_chan *chan;
	char *ring;
	size_t map_len;
	int exited, status, killed;
};

/*
 * Start it for DEVICES at HZ (PROC: each process's use too): 0, or -errno. BORN, if not NULL,
 * is called with its pid before it makes any system call.
 */
int gpum_sampler__start(struct gpum_sampler *sp, const char *devices, unsigned hz, int proc,
			void (*born)(void *arg, pid_t pid), void *arg);
/* 1 once it has ended (reaped here; its wait status in status). */
int gpum_sampler__exited(struct gpum_sampler *sp);
/* Tell it to end, and wait up to WAIT_NS before killing it. */
void gpum_sampler__stop(struct gpum_sampler *sp, __u64 wait_ns);
void gpum_sampler__free(struct gpum_sampler *sp);

/* How a metric reads (gpum_names.c). */
enum gpum_kind {
	GPUM_K_LEVEL = 1, /* a gauge: its value now */
	GPUM_K_COUNTER,	  /* a running total: what matters is its rate, or its difference */
	GPUM_K_BITS,	  /* a set of reasons (throttling) */
};

struct gpum_metric_info {
	const char *key;   /* dump's argument, JSON's: "sm_active" */
	const char *title; /* "SM Active": the tables' */
	const char *unit;  /* "%", "MHz", "W" ... as the reports show it */
	const char *raw;   /* the unit of the value recorded: "mW" (SQLite's metric names) */
	const char *desc;  /* for Perfetto's tracks and Prometheus's HELP */
	/* dcgm-exporter's field, for monitor's gauge (NULL: bpfsight_gpu_KEY) */
	const char *dcgm;
	/* what a reader multiplies the value by for UNIT (mW -> W: 0.001), and dcgm's unit */
	double scale, dcgm_scale;
	__u8 kind; /* enum gpum_kind */
};

extern const struct gpum_metric_info gpum_metrics[GPUM_NMETRICS];
/* Metric M's value V (as the record holds it) as a double, before any scale. */
double gpum_value(unsigned m, __u64 v);
/* The name of throttle reason bit B (nvmlClocksEventReason*), or NULL. */
const char *gpum_throttle_name(unsigned b);
/* The reasons that hold the clocks down: power and thermal caps, slowdowns, sync boost. */
#define GPUM_THROTTLE_SLOWING 0xfcull

/* The reading walk (gpum_decode.c): per device, its DEVICE record and its latest KEY. */
struct gpum_dev_state {
	int known, keyed;
	struct bs_gpum_device info;
	__u64 key_have;
	__u64 key_val[GPUM_NMETRICS];
};

struct gpum_walk {
	struct gpum_dev_state dev[GPUM_MAX_DEVICES];
	struct bs_gpum_status status; /* the latest */
	int has_status;
	__u64 unkeyed; /* samples read before any KEY of their device: their carried values only */
};

void *gpum_walk__new(void);
void gpum_walk__observe(void *w, const struct bs_hdr *rec);
void gpum_walk__free(void *w);
/* The walk of M, or NULL. */
const struct gpum_walk *gpum_walk__of(const struct trace_model *m);
/*
 * A KEY or SAMPLE (checked for its size): its device, the metrics it has (*HAVE) and their
 * values (VAL[m] for m in *HAVE). 0, or -1 for a record too short or with a device out of
 * range. A SAMPLE read without its device's KEY has its carried values only.
 */
int gpum_sample__read(const struct gpum_walk *w, const struct bs_hdr *rec, __u32 *device,
		      __u64 *have, __u64 val[GPUM_NMETRICS]);
/* "GPU 0" (and its name when the walk knows it: "GPU 0 (NVIDIA H100)") into BUF. */
const char *gpum_device_name(const struct gpum_walk *w, __u32 device, int with_model, char *buf,
			     size_t len);

extern const struct rec_decoder gpum_decoders[];
extern const struct report *const gpum_reports[];	/* gpum_step_report.c */
extern const struct family_verdict gpum_verdict;	/* gpum_verdict.c */
extern const struct family_export gpum_export;		/* gpumetrics_export.c */
extern const struct family_sql gpumetrics_sql;		/* gpum_sql.c */
extern const struct metrics_family gpum_metrics_family; /* gpum_metrics.c */
extern const struct top_family gpum_top;		/* gpum_top.c */
extern const struct page_family gpum_page;		/* gpum_page.c */
extern const struct family_option gpum_options[];
void gpum_opts_init(void *opts, const char *cmd);
void gpum_opts_describe(const void *opts, char *buf, size_t len);
extern const struct family family_gpumetrics;

#endif /* BPFSIGHT_GPUMETRICS_H */
