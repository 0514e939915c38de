/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading side of CUDA graphs: each process's graph nodes (GRAPH_NODE records, in file
 * order), so that an op replayed from a graph is traced back to its capture: the node the
 * replayed op names was copied (cudaGraphInstantiate, cudaGraphClone) from another, and so on
 * to the node made first, whose thread and time are the capturing call's (a captured launch:
 * inside that launch call). The family's walk state (struct family.walk_new).
 */
#ifndef BPFSIGHT_GPU_GRAPH_WALK_H
#define BPFSIGHT_GPU_GRAPH_WALK_H

#include <linux/types.h>
#include "trace_model.h"

#define GPU_GRAPH_MAX_COPIES 16 /* copies of copies followed, at most */

struct gpu_graph_walk;

void *gpu_graph_walk__new(void);
void gpu_graph_walk__observe(void *w, const struct bs_hdr *rec);
void gpu_graph_walk__free(void *w);

/*
 * Where NODE of process PID was made first: its thread and time (1), or 0 when no record of it
 * (or of an original it was copied from) is in the file.
 */
int gpu_graph_walk__capture(const struct trace_model *m, __u32 pid, __u64 node, __u32 *tid,
			    __u64 *ts);

#endif /* BPFSIGHT_GPU_GRAPH_WALK_H */
