/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What a trace file says about itself: its header (start) and its footer (clean end). */
#ifndef BPFSIGHT_TRACE_META_H
#define BPFSIGHT_TRACE_META_H

#include <stddef.h>
#include <linux/types.h>

struct trace_clocks {
	__u64 mono_ns;
	__u64 realtime_ns;
	__u64 boottime_ns;
};

/* Text fields are NUL-terminated; the reader owns them. NULL or "" = absent. */
struct trace_meta {
	__u32 version; /* file format version */
	char *hostname;
	char *kernel;
	char *boot_id;
	char *cmdline;
	char *families;
	char *target;
	char *options;
	char *tool_version;
	char *gpus; /* "0000:18:00.0 NVIDIA H100 80GB HBM3", a line per GPU */
	struct trace_clocks start;
};

/* Read the three clocks as close together as possible. */
void trace_clocks__now(struct trace_clocks *c);
/* 1 when the trace recorded family NAME (its header's comma-separated families). */
int trace_meta__has_family(const struct trace_meta *meta, const char *name);
/*
 * The model of GPUS (struct trace_meta.gpus) into BUF when every GPU line names the same one
 * ("NVIDIA H100 80GB HBM3"); NULL when there is none, or GPUs of several models.
 */
const char *trace_meta__gpu_model(const char *gpus, char *buf, size_t len);

#endif /* BPFSIGHT_TRACE_META_H */
