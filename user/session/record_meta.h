/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What a recording's file header says (struct trace_meta) and the buffers its strings live in. */
#ifndef BPFSIGHT_RECORD_META_H
#define BPFSIGHT_RECORD_META_H

#include <sys/utsname.h>
#include "record_ctx.h"
#include "trace_meta.h"

struct record_meta {
	struct trace_meta meta;
	char families[256], target[1024], options[512], kernel[512], boot_id[64];
	char gpus[2048]; /* nv_gpus.h */
	struct utsname uts;
};

/*
 * The header of a recording with options O: host, kernel, boot, the families, the target
 * ("launch: CMD", "pid: 1,2", "system-wide"), the options (the families' own too, and the
 * kernel features missing), the NVIDIA GPUs (nv_gpus.h), the start's clocks.
 */
void record_meta__fill(struct record_meta *rm, const struct record_opts *o);

#endif /* BPFSIGHT_RECORD_META_H */
