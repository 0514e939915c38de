// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * GPU records without CUPTI's API records (GPU timing switched on in a running job): the
 * recorder must link each op to its launch by the order of its stream's launches
 * (user/shim_channel/order_link.h). Real CUDA runtime calls (libcudart, probed by the cuda
 * family; they fail here), then the kernels, copies and memsets they would have run, fed to
 * the shim as CUPTI 13 records through the test variant's bufferCompleted hook, without any
 * API record.
 *
 *   order_feed SHIM
 *
 * Calls: the main thread launches 40 kernels (five shapes in turn, as a training loop
 * repeats) and one memset on stream handle A; a second thread 20 kernels (three shapes) and a
 * copy on handle B; the main thread then three memsets on the legacy default stream. CUPTI's
 * streams: A -> (context 1, stream 7), B -> 13, legacy -> 14. Each op starts 1 ns after its
 * call returned. On stream 7 the feed also has an op queued before any call was recorded
 * (before the first call began), an op whose launch was not probed (a shape no call has)
 * after the 16th launch, and it lacks the op of the 31st launch (a lost record). Streams are
 * fed 13, 14, then 7, and 7's first op last; then a CUDA graph's node on 7 (graph 5), which
 * launch order does not link.
 *
 * Prints {"pid": P, "tid": T} first, then {"calls": [{"tid", "t0", "t1"}...], "ops":
 * [{"correlation", "call": index into calls or -1}...], "fed": N}.
 */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include "record_buf.h"

#define A_KERNELS 40
#define B_KERNELS 20
#define NCALLS	  (A_KERNELS + 1 + B_KERNELS + 1 + 3)

enum { K_KERNEL, K_MEMSET, K_MEMCPY };

struct call {
	int kind, tid;
	unsigned int grid[3], block[3], shmem;
	uint64_t bytes, t0, t1;
	cudaStream_t stream;
	uint32_t graph; /* the op is a node of this CUDA graph (no call of its own) */
};

static struct call calls[NCALLS];
static int ncalls;
static char host[65536], host2[65536];

static void kernel_dummy(void)
{
}

static void launch(const unsigned int *shape, cudaStream_t stream)
{
	struct call *c = &calls[ncalls++];
	dim3 grid = { shape[0], shape[1], 1 }, block = { shape[2], shape[3], 1 };
	void *args[1] = { NULL };

	*c = (struct call){
		.kind = K_KERNEL, .tid = gettid(), .shmem = shape[4], .stream = stream
	};
	c->grid[0] = shape[0], c->grid[1] = shape[1], c->grid[2] = 1;
	c->block[0] = shape[2], c->block[1] = shape[3], c->block[2] = 1;
	c->t0 = now();
	(void)cudaLaunchKernel((const void *)kernel_dummy, grid, block, args, shape[4], stream);
	c->t1 = now();
}

static void memset_call(uint64_t bytes, cudaStream_t stream)
{
	struct call *c = &calls[ncalls++];

	*c = (struct call){ .kind = K_MEMSET, .tid = gettid(), .bytes = bytes, .stream = stream };
	c->t0 = now();
	(void)cudaMemsetAsync(host2, 0, bytes, stream);
	c->t1 = now();
}

#define STREAM_A ((cudaStream_t)0x1000)
#define STREAM_B ((cudaStream_t)0x2000)

/* grid x, grid y, block x, block y, dynamic shared memory */
static const unsigned int shapes_a[5][5] = {
	{ 8, 1, 128, 1, 0 },   { 4, 2, 64, 2, 256 }, { 16, 1, 32, 1, 0 },
	{ 1, 1, 1024, 1, 48 }, { 2, 3, 128, 1, 0 },
};
static const unsigned int shapes_b[3][5] = {
	{ 8, 1, 128, 1, 0 },
	{ 32, 1, 256, 1, 0 },
	{ 2, 2, 2, 2, 16 },
};

static void *second_thread(void *arg)
{
	struct call *c;

	(void)arg;
	for (int k = 0; k < B_KERNELS; k++)
		launch(shapes_b[k % 3], STREAM_B);
	c = &calls[ncalls++];
	*c = (struct call){ .kind = K_MEMCPY, .tid = gettid(), .bytes = 8192, .stream = STREAM_B };
	c->t0 = now();
	(void)cudaMemcpyAsync(host2, host, 8192, cudaMemcpyHostToDevice, STREAM_B);
	c->t1 = now();
	return NULL;
}

static int first = 1;

/* A memset's or copy's CUPTI record R of KIND for call C (in scope: c, stream, corr, start). */
#define BYTES_OP(r, KIND)                                                                          \
	do {                                                                                       \
		memset(&(r), 0, sizeof(r));                                                        \
		(r).kind = (KIND);                                                                 \
		(r).bytes = c->bytes;                                                              \
		(r).start = start;                                                                 \
		(r).end = start + 1;                                                               \
		(r).contextId = 1;                                                                 \
		(r).streamId = stream;                                                             \
		(r).correlationId = corr;                                                          \
	} while (0)

static void op_record(const struct call *c, uint32_t stream, uint32_t corr, uint64_t start)
{
	if (c->kind == K_KERNEL) {
		CUpti_ActivityKernel10 r;

		memset(&r, 0, sizeof(r));
		r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		r.start = start;
		r.end = r.completed = start + 1;
		r.contextId = 1;
		r.streamId = stream;
		r.gridX = (int32_t)c->grid[0], r.gridY = (int32_t)c->grid[1], r.gridZ = 1;
		r.blockX = (int32_t)c->block[0], r.blockY = (int32_t)c->block[1], r.blockZ = 1;
		r.dynamicSharedMemory = (int32_t)c->shmem;
		r.correlationId = corr;
		r.graphId = c->graph;
		r.graphNodeId = c->graph ? 0x42 : 0;
		r.name = "_Z6kernelv";
		put(&r, sizeof(r));
	} else if (c->kind == K_MEMSET) {
		CUpti_ActivityMemset4 r;

		BYTES_OP(r, CUPTI_ACTIVITY_KIND_MEMSET);
		r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		put(&r, sizeof(r));
	} else {
		CUpti_ActivityMemcpy6 r;

		BYTES_OP(r, CUPTI_ACTIVITY_KIND_MEMCPY);
		r.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
		put(&r, sizeof(r));
	}
}

/* One op: fed now, printed with the call it belongs to (CALL -1: none). */
static uint32_t corr_next = 1;

static void op(const struct call *c, int call, uint32_t stream, uint64_t start)
{
	uint32_t corr = corr_next++;

	op_record(c, stream, corr, start);
	printf("%s\n  {\"correlation\": %u, \"call\": %d}", first ? "" : ",", corr, call);
	first = 0;
}

/* The ops of the calls on STREAM_H, in order, on CUPTI stream ID, but the call LOST's. */
static void ops_of(cudaStream_t h, uint32_t id, int lost, int extra_after)
{
	static const struct call unprobed = { .kind = K_KERNEL,
					      .grid = { 99, 1, 1 },
					      .block = { 99, 1, 1 } };
	int n = 0;

	for (int i = 0; i < ncalls; i++) {
		if (calls[i].stream != h)
			continue;
		if (n++ == lost)
			continue;
		op(&calls[i], i, id, calls[i].t1 + 1);
		if (n == extra_after)
			op(&unprobed, -1, id, calls[i].t1 + 2);
	}
}

int main(int argc, char **argv)
{
	int (*init)(void);
	int (*feed)(const uint8_t *, size_t);
	pthread_t th;
	void *h;
	int fed, k, a0 = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: order_feed SHIM\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "order_feed: %s\n", dlerror());
		return 1;
	}
	*(void **)&init = dlsym(h, "InitializeInjection");
	*(void **)&feed = dlsym(h, "bpfsight_shim_test_feed");
	if (!init || !feed) {
		fprintf(stderr, "order_feed: %s lacks the shim's entry points\n", argv[1]);
		return 1;
	}
	init();
	printf("{\"pid\": %d, \"tid\": %d}\n", (int)getpid(), (int)gettid());
	fflush(stdout);

	for (k = 0; k < A_KERNELS; k++) {
		launch(shapes_a[k % 5], STREAM_A);
		if (k == 25)
			memset_call(4096, STREAM_A);
	}
	if (pthread_create(&th, NULL, second_thread, NULL) || pthread_join(th, NULL)) {
		fprintf(stderr, "order_feed: pthread\n");
		return 1;
	}
	for (k = 0; k < 3; k++)
		memset_call(1000 * (uint64_t)(k + 1), NULL);

	printf("{\"ops\": [");
	ops_of(STREAM_B, 13, -1, -1);
	ops_of(NULL, 14, -1, -1);
	/* Stream 7: its first op (queued before the recording) is fed last. */
	ops_of(STREAM_A, 7, 31, 16);
	op(&calls[a0], -1, 7, calls[a0].t0 - 1000);
	{
		struct call node = calls[a0];

		node.graph = 5; /* a graph's node, after the last launch */
		op(&node, -1, 7, calls[ncalls - 1].t1 + 1000);
	}
	fed = feed(buf, len);
	printf("\n], \"calls\": [");
	for (k = 0; k < ncalls; k++)
		printf("%s\n  {\"tid\": %d, \"t0\": %llu, \"t1\": %llu}", k ? "," : "",
		       calls[k].tid, (unsigned long long)calls[k].t0,
		       (unsigned long long)calls[k].t1);
	printf("\n], \"fed\": %d}\n", fed);
	free(buf);
	return 0;
}
