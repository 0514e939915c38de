// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUDA graphs: which call made each node. An op replayed from a graph carries the replay's
 * correlation id (cudaGraphLaunch's) and its node's id, nothing of the launch that was
 * captured. CUPTI's resource callbacks say when a node is made (GRAPHNODE_CREATED, on the
 * thread and inside the call that made it: a launch captured from a stream, a
 * cudaGraphAdd*Node) and when a node is copied (GRAPHNODE_CLONED: cudaGraphInstantiate copies
 * the graph's nodes into the executable graph, and the replayed ops name the copies). Each
 * becomes a GRAPH_NODE record, sent at once (a capture is rare; its replays' ops come later
 * through CUPTI's buffers and must find it first); the reading side follows a replayed op's
 * node through its copies to the node made first (user/families/gpu/gpu_graph_walk.c).
 *
 * The callbacks are on only while GPU activity is (shim_cupti.c subscribes then): a graph
 * captured before GPU timing was switched on is linked to its replays only.
 */
#include <string.h>

#include <cupti.h>

#include "shim.h"

static struct {
	CUptiResult (*node_id)(CUgraphNode, uint64_t *);
	CUptiResult (*graph_id)(CUgraph, uint32_t *);
} ids;

void shim_graph__bind(void *node_id, void *graph_id)
{
	ids.node_id = node_id;
	ids.graph_id = graph_id;
}

void shim_graph__emit(uint64_t node_id, uint64_t orig_node_id, uint32_t graph_id,
		      uint32_t orig_graph_id, uint32_t node_type, uint64_t ts)
{
	uint32_t session = atomic_load_explicit(&shim_session, memory_order_relaxed);
	struct bs_gpu_graph_node r;
	struct shim_thread *t;

	if (!session || !(t = shim_thread__self()))
		return;
	memset(&r, 0, sizeof(r));
	shim_hdr(&r.h, BS_REC_GPU_GRAPH_NODE, sizeof(r), shim_thread__tid(t), ts);
	r.node_id = node_id;
	r.orig_node_id = orig_node_id;
	r.graph_id = graph_id;
	r.orig_graph_id = orig_graph_id;
	r.node_type = node_type;
	shim_thread__lock(t);
	if (shim_thread__append(t, session, &r, sizeof(r)))
		shim_thread__flush(t);
	shim_thread__unlock(t);
}

static uint64_t node_of(CUgraphNode n)
{
	uint64_t id = 0;

	if (n && ids.node_id && ids.node_id(n, &id) != CUPTI_SUCCESS)
		id = 0;
	return id;
}

static uint32_t graph_of(CUgraph g)
{
	uint32_t id = 0;

	if (g && ids.graph_id && ids.graph_id(g, &id) != CUPTI_SUCCESS)
		id = 0;
	return id;
}

void shim_graph__callback(uint32_t cbid, const void *cbdata)
{
	const CUpti_ResourceData *rd = cbdata;
	const CUpti_GraphData *g = rd ? rd->resourceDescriptor : NULL;
	uint64_t node;

	if (!g || (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED &&
		   cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED))
		return;
	node = node_of(g->node);
	if (!node)
		return;
	if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
		shim_graph__emit(node, node_of(g->originalNode), graph_of(g->graph),
				 graph_of(g->originalGraph), (uint32_t)g->nodeType, shim_now());
	else
		shim_graph__emit(node, 0, graph_of(g->graph), 0, (uint32_t)g->nodeType, shim_now());
}
