// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A CUDA graph captured, instantiated and replayed, as the shim tells it (no GPU here): the
 * graph nodes the resource callbacks would report, through the test variant's
 * bpfsight_shim_test_graph_node (the callback's own record path), then the replays' ops as
 * CUPTI 13 activity records through bpfsight_shim_test_feed, each naming the executable
 * graph's copy of a node. The reading side must trace each op back to the node made at
 * capture: its thread and time.
 *
 *   graph_feed SHIM
 *
 * The main thread "captures": three real cudaLaunchKernel calls on a stream handle (libcudart,
 * probed by the cuda family; they fail), each making a node of graph 7 (kernel 101, memset
 * 102, kernel 103) at the call's end time. A second thread "instantiates" graph 9: copies
 * 201 <- 101 (told as made first, then as copied), 202 <- 102 (copied, then made: CUDA may
 * tell a copy either way) and 203 <- 103; then a copy of a copy, 301 <- 201 (graph 11).
 * The main thread replays three times (real cudaGraphLaunch calls, failing); the feed then
 * has each replay's ops: kernel 201, memset 202, kernel 203; one op of node 301; and one of a
 * node never reported (999), which has no capture.
 *
 * Prints {"pid": P, "tid": T} first, then {"nodes": [...], "ops": [...]}: the
 * node records as fed (tid, ts, node, orig, graph, orig_graph, type) and the ops (kind,
 * correlation, graph, node, capture: {"tid", "ts"} or null).
 */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include "record_buf.h"

static void (*graph_node)(uint64_t, uint64_t, uint32_t, uint32_t, uint32_t, uint64_t);

struct made {
	uint64_t node, orig, ts;
	uint32_t graph, orig_graph, type;
	int tid;
};

static struct made nodes[16];
static int nnodes;

static void node(uint64_t id, uint64_t orig, uint32_t graph, uint32_t orig_graph, uint32_t type,
		 uint64_t ts)
{
	nodes[nnodes++] = (struct made){ .node = id,
					 .orig = orig,
					 .ts = ts,
					 .graph = graph,
					 .orig_graph = orig_graph,
					 .type = type,
					 .tid = gettid() };
	graph_node(id, orig, graph, orig_graph, type, ts);
}

static void kernel_dummy(void)
{
}

static void *instantiate(void *arg)
{
	(void)arg;
	node(201, 0, 9, 0, 0, now());
	node(201, 101, 9, 7, 0, now());
	node(202, 102, 9, 7, 2, now());
	node(202, 0, 9, 0, 2, now());
	node(203, 103, 9, 7, 0, now());
	node(301, 201, 11, 9, 0, now());
	return NULL;
}

/* The first record of NODE made (orig 0) with no copy record: its capture; else follow. */
static const struct made *capture_of(uint64_t id)
{
	for (int depth = 0; depth < 8; depth++) {
		const struct made *copy = NULL, *made = NULL;

		for (int i = 0; i < nnodes; i++) {
			if (nodes[i].node != id)
				continue;
			if (nodes[i].orig && !copy)
				copy = &nodes[i];
			if (!nodes[i].orig && !made)
				made = &nodes[i];
		}
		if (copy) {
			id = copy->orig;
			continue;
		}
		return made;
	}
	return NULL;
}

static uint32_t corr_next = 1;
static int first = 1;

static void op(int memset_op, uint32_t graph, uint64_t id, uint64_t start)
{
	const struct made *cap = capture_of(id);
	uint32_t corr = corr_next++;

	if (memset_op) {
		CUpti_ActivityMemset4 r;

		memset(&r, 0, sizeof(r));
		r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
		r.bytes = 4096;
		r.start = start;
		r.end = start + 100;
		r.contextId = 1;
		r.streamId = 7;
		r.correlationId = corr;
		r.graphId = graph;
		r.graphNodeId = id;
		r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		put(&r, sizeof(r));
	} else {
		CUpti_ActivityKernel10 r;

		memset(&r, 0, sizeof(r));
		r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		r.start = start;
		r.end = r.completed = start + 1000;
		r.contextId = 1;
		r.streamId = 7;
		r.gridX = r.gridY = r.gridZ = 1;
		r.blockX = 32, r.blockY = r.blockZ = 1;
		r.correlationId = corr;
		r.graphId = graph;
		r.graphNodeId = id;
		r.name = "_Z10graph_nodev";
		put(&r, sizeof(r));
	}
	printf("%s\n  {\"kind\": \"%s\", \"correlation\": %u, \"graph\": %u, \"node\": %llu, "
	       "\"capture\": ",
	       first ? "" : ",", memset_op ? "gpu_memset" : "gpu_kernel", corr, graph,
	       (unsigned long long)id);
	if (cap)
		printf("{\"tid\": %d, \"ts\": %llu}}", cap->tid, (unsigned long long)cap->ts);
	else
		printf("null}");
	first = 0;
}

int main(int argc, char **argv)
{
	int (*init)(void);
	int (*feed)(const uint8_t *, size_t);
	cudaStream_t s = (cudaStream_t)0x1000;
	dim3 one = { 1, 1, 1 };
	void *args[1] = { NULL };
	uint64_t t, start;
	pthread_t th;
	void *h;
	int fed;

	if (argc != 2) {
		fprintf(stderr, "usage: graph_feed SHIM\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "graph_feed: %s\n", dlerror());
		return 1;
	}
	*(void **)&init = dlsym(h, "InitializeInjection");
	*(void **)&feed = dlsym(h, "bpfsight_shim_test_feed");
	*(void **)&graph_node = dlsym(h, "bpfsight_shim_test_graph_node");
	if (!init || !feed || !graph_node) {
		fprintf(stderr, "graph_feed: %s lacks the test variant's entry points\n", argv[1]);
		return 1;
	}
	init();
	printf("{\"pid\": %d, \"tid\": %d}\n", (int)getpid(), (int)gettid());
	fflush(stdout);
	/* The capture: each launch makes its node (the memset's between the two kernels). */
	(void)cudaLaunchKernel((const void *)kernel_dummy, one, one, args, 0, s);
	node(101, 0, 7, 0, 0, now());
	node(102, 0, 7, 0, 2, now());
	(void)cudaLaunchKernel((const void *)kernel_dummy, one, one, args, 0, s);
	node(103, 0, 7, 0, 0, now());
	if (pthread_create(&th, NULL, instantiate, NULL) || pthread_join(th, NULL))
		return 1;
	t = now();
	for (int i = 0; i < 3; i++)
		(void)cudaGraphLaunch((cudaGraphExec_t)0x2000, s);
	printf("{\"nodes\": [");
	for (int i = 0; i < nnodes; i++)
		printf("%s\n  {\"tid\": %d, \"ts\": %llu, \"node\": %llu, \"orig\": %llu, "
		       "\"graph\": %u, \"orig_graph\": %u, \"type\": %u}",
		       i ? "," : "", nodes[i].tid, (unsigned long long)nodes[i].ts,
		       (unsigned long long)nodes[i].node, (unsigned long long)nodes[i].orig,
		       nodes[i].graph, nodes[i].orig_graph, nodes[i].type);
	printf("\n], \"ops\": [");
	start = t + 1000000;
	for (int i = 0; i < 3; i++, start += 100000) {
		op(0, 9, 201, start);
		op(1, 9, 202, start + 2000);
		op(0, 9, 203, start + 4000);
	}
	op(0, 11, 301, start);
	op(0, 9, 999, start + 10000);
	fed = feed(buf, len);
	printf("\n], \"fed\": %d}\n", fed);
	free(buf);
	return 0;
}
