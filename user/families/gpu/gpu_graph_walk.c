// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* CUDA graph nodes on the reading side: see gpu_graph_walk.h. */
#include <stdlib.h>
#include "gpu.h"
#include "gpu_graph_walk.h"
#include "hmap.h"

struct gpu_graph_walk {
	struct hmap *nodes; /* (pid, node id) -> struct node */
};

struct node {
	__u64 orig; /* the node it was copied from, 0 = made here */
	__u64 ts;   /* when it was made (a copy: when it was copied) */
	__u32 tid;
};

void *gpu_graph_walk__new(void)
{
	struct gpu_graph_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->nodes = hmap__new(sizeof(struct node));
	if (!w->nodes) {
		free(w);
		return NULL;
	}
	return w;
}

void gpu_graph_walk__free(void *vw)
{
	struct gpu_graph_walk *w = vw;

	if (!w)
		return;
	hmap__free(w->nodes);
	free(w);
}

void gpu_graph_walk__observe(void *vw, const struct bs_hdr *rec)
{
	const struct bs_gpu_graph_node *g = (const void *)rec;
	struct gpu_graph_walk *w = vw;
	struct node *n;

	if (!w || !rec)
		return;
	/* A new program in the process: its node ids start again. */
	if (rec->type == BS_REC_EXEC) {
		hmap__del_all(w->nodes, 0, rec->pid);
		return;
	}
	if (rec->type != BS_REC_GPU_GRAPH_NODE || rec->size < sizeof(*g) || !g->node_id)
		return;
	n = hmap__get(w->nodes, (struct hkey){ rec->pid, g->node_id }, 1);
	if (!n)
		return;
	/*
	 * CUDA may tell a copy both as made (inside the instantiation) and as copied: the copy's
	 * original is what counts, whichever of the two comes first.
	 */
	if (g->orig_node_id && g->orig_node_id != g->node_id) {
		n->orig = g->orig_node_id;
		n->ts = rec->ts;
		n->tid = rec->tid;
	} else if (!n->ts) {
		n->ts = rec->ts;
		n->tid = rec->tid;
	}
}

int gpu_graph_walk__capture(const struct trace_model *m, __u32 pid, __u64 node, __u32 *tid,
			    __u64 *ts)
{
	const struct gpu_graph_walk *w = trace_model__walk(m, &family_gpu);
	struct node *n = NULL;

	if (!w || !node)
		return 0;
	for (int i = 0; i <= GPU_GRAPH_MAX_COPIES && node; i++) {
		n = hmap__get(w->nodes, (struct hkey){ pid, node }, 0);
		if (!n)
			return 0;
		if (!n->orig) {
			*tid = n->tid;
			*ts = n->ts;
			return 1;
		}
		node = n->orig;
	}
	return 0;
}
