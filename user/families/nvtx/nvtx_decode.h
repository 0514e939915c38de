/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading side of the nvtx family, shared by its decoders, reports and the exports. */
#ifndef BPFSIGHT_NVTX_DECODE_H
#define BPFSIGHT_NVTX_DECODE_H

#include <linux/types.h>
#include "trace_model.h"

/* A domain's name; "" for the default domain (id 0) or a string the trace lacks. */
const char *nvtx_domain_name(const struct trace_model *m, __u32 domain_id);
/* A range's or mark's message; "" when it has none. */
const char *nvtx_message(const struct trace_model *m, __u32 name_id);

#endif /* BPFSIGHT_NVTX_DECODE_H */
