// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Feeds the cupti-shim CUPTI activity records laid out with the real CUPTI 13 structs, through
 * the exact decode path of CUPTI's bufferCompleted (bpfsight_shim_test_feed), so the GPU record
 * path is tested without a GPU.
 *
 *   cupti_feed [--wait-file PATH] [--extra N] [--nvtx] [SHIM]  (SHIM: default $BPFSIGHT_SHIM)
 *
 * 1. dlopen()s the shim and calls InitializeInjection() as libcuda would (without a GPU
 *    CUPTI fails: the shim must report it and carry on; we must exit 0).
 * 2. Prints {"pid": P, "tid": T, "init": RET} and waits for PATH (a tracer attaches).
 * 3. Makes twelve real CUDA runtime calls (libcudart, which the cuda family probes; they fail
 *    here), timing each: t0 just before, t1 just after.
 *    With --nvtx, NVTX push/pop ranges around them, through SHIM as the NVTX injection
 *    (NVTX_INJECTION64_PATH set to it before the first NVTX call): "step" around the twelve,
 *    "fwd" inside it around the three cudaLaunchKernel calls.
 * 4. Builds one buffer: per call, the CUpti_ActivityAPI record of that call (runtime domain,
 *    its cbid, start t0+1, end t1-1, this thread, correlation 101..112, the call's return
 *    value) and the GPU record it launched (same correlation), after it in time:
 *      101-103 cudaLaunchKernel  kernels: (device, context, stream) (0,1,7) (1,2,13) (0,1,14)
 *      104 cudaGraphLaunch       a graph node kernel (graph 5, node 0x123456789abc), (0,1,7)
 *      105-108 cudaMemcpy        HtoD pageable->device 4096, DtoH device->pinned 12345,
 *                                DtoD 777, HtoH pinned->pinned 333
 *      109 cudaMemcpyAsync       HtoD pinned->device 8192, async, stream 7
 *      110 cudaMemcpyPeer        PtoP (MEMCPY2) device 0 -> device 1, 65536 bytes
 *      111 cudaMemset            1000 bytes of 0x5a, device memory, (0,1,7)
 *      112 cudaMemsetAsync       2000 bytes of 0xa5, device memory, (1,2,13)
 *    plus a kernel launched through the driver (cuLaunchKernel API record, correlation 200,
 *    no real call), a kernel with no API record at all (correlation 300), and N more kernels
 *    "_Z5extrai" (correlation 1000+j, no API record) for batch volume.
 * 5. Feeds it and prints {"records": [...], "calls": [...], "fed": N, "feed_ns": T}: every
 *    record as the shim must write it (ts, dur, fields, names), every call (name, t0, t1,
 *    ret), and the feed's wall time: decode plus, while recording, every batch's probe hit
 *    (bench/bench_shim.py's records per second through the channel).
 */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "record_buf.h"
#include <time.h>
#include <unistd.h>

struct call {
	const char *name;
	uint32_t cbid;
	uint64_t t0, t1;
	int ret;
};

static int first = 1;

static void sep(void)
{
	printf(first ? "\n  " : ",\n  ");
	first = 0;
}

static void api(const struct call *c, CUpti_ActivityKind kind, uint32_t corr)
{
	CUpti_ActivityAPI a;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.cbid = c->cbid;
	a.start = c->t0 + 1;
	a.end = c->t1 - 1;
	a.processId = (uint32_t)getpid();
	a.threadId = (uint32_t)gettid();
	a.correlationId = corr;
	a.returnValue = (uint32_t)c->ret;
	put(&a, sizeof(a));
	sep();
	printf("{\"type\": \"api\", \"ts\": %llu, \"dur\": %llu, \"tid\": %u, \"correlation\": %u, "
	       "\"cbid\": %u, \"domain\": %d, \"name\": \"%s\", \"ret\": %u}",
	       (unsigned long long)a.start, (unsigned long long)(a.end - a.start), a.threadId, corr,
	       c->cbid, kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 2 : 1, c->name, a.returnValue);
}

struct kdesc {
	const char *name;
	uint32_t device, context, stream;
	int grid[3], block[3];
	int shmem_dynamic, shmem_static;
	uint16_t registers;
	uint32_t graph_id;
	uint64_t graph_node_id;
};

static void kernel(const struct kdesc *k, uint32_t corr, uint64_t start, uint64_t dur)
{
	CUpti_ActivityKernel10 r;

	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	r.start = start;
	r.end = start + dur;
	r.completed = r.end;
	r.deviceId = k->device;
	r.contextId = k->context;
	r.streamId = k->stream;
	r.gridX = k->grid[0];
	r.gridY = k->grid[1];
	r.gridZ = k->grid[2];
	r.blockX = k->block[0];
	r.blockY = k->block[1];
	r.blockZ = k->block[2];
	r.dynamicSharedMemory = k->shmem_dynamic;
	r.staticSharedMemory = k->shmem_static;
	r.registersPerThread = k->registers;
	r.correlationId = corr;
	r.name = k->name;
	r.graphId = k->graph_id;
	r.graphNodeId = k->graph_node_id;
	put(&r, sizeof(r));
	sep();
	printf("{\"type\": \"kernel\", \"ts\": %llu, \"dur\": %llu, \"correlation\": %u, "
	       "\"name\": \"%s\", \"device\": %u, \"context\": %u, \"stream\": %u, "
	       "\"grid\": [%d, %d, %d], \"block\": [%d, %d, %d], \"shmem_dynamic\": %d, "
	       "\"shmem_static\": %d, \"registers\": %u, \"graph_id\": %u, "
	       "\"graph_node_id\": %llu}",
	       (unsigned long long)start, (unsigned long long)dur, corr, k->name, k->device,
	       k->context, k->stream, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
	       k->block[2], k->shmem_dynamic, k->shmem_static, k->registers, k->graph_id,
	       (unsigned long long)k->graph_node_id);
}

struct cdesc {
	uint8_t copy_kind, src_kind, dst_kind, async;
	uint64_t bytes;
	uint32_t device, context, stream;
	uint32_t src_device, dst_device; /* peer copies */
};

static void print_copy(const struct cdesc *c, uint32_t corr, uint64_t start, uint64_t dur,
		       uint32_t src_device, uint32_t dst_device)
{
	sep();
	printf("{\"type\": \"memcpy\", \"ts\": %llu, \"dur\": %llu, \"correlation\": %u, "
	       "\"bytes\": %llu, \"copy_kind\": %u, \"src_kind\": %u, \"dst_kind\": %u, "
	       "\"async\": %u, \"device\": %u, \"context\": %u, \"stream\": %u, "
	       "\"src_device\": %u, \"dst_device\": %u}",
	       (unsigned long long)start, (unsigned long long)dur, corr,
	       (unsigned long long)c->bytes, c->copy_kind, c->src_kind, c->dst_kind, c->async,
	       c->device, c->context, c->stream, src_device, dst_device);
}

static void copy(const struct cdesc *c, uint32_t corr, uint64_t start, uint64_t dur)
{
	CUpti_ActivityMemcpy6 r;

	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	r.copyKind = c->copy_kind;
	r.srcKind = c->src_kind;
	r.dstKind = c->dst_kind;
	r.flags = c->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
	r.bytes = c->bytes;
	r.start = start;
	r.end = start + dur;
	r.deviceId = c->device;
	r.contextId = c->context;
	r.streamId = c->stream;
	r.correlationId = corr;
	put(&r, sizeof(r));
	print_copy(c, corr, start, dur, c->device, c->device);
}

static void copy_peer(const struct cdesc *c, uint32_t corr, uint64_t start, uint64_t dur)
{
	CUpti_ActivityMemcpyPtoP4 r;

	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	r.copyKind = c->copy_kind;
	r.srcKind = c->src_kind;
	r.dstKind = c->dst_kind;
	r.flags = c->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
	r.bytes = c->bytes;
	r.start = start;
	r.end = start + dur;
	r.deviceId = c->device;
	r.contextId = c->context;
	r.streamId = c->stream;
	r.srcDeviceId = c->src_device;
	r.srcContextId = 1;
	r.dstDeviceId = c->dst_device;
	r.dstContextId = 2;
	r.correlationId = corr;
	put(&r, sizeof(r));
	print_copy(c, corr, start, dur, c->src_device, c->dst_device);
}

static void set(uint32_t value, uint64_t bytes, uint32_t device, uint32_t context, uint32_t stream,
		int async, uint32_t corr, uint64_t start, uint64_t dur)
{
	CUpti_ActivityMemset4 r;

	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	r.value = value;
	r.bytes = bytes;
	r.start = start;
	r.end = start + dur;
	r.deviceId = device;
	r.contextId = context;
	r.streamId = stream;
	r.correlationId = corr;
	r.flags = async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
	r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	put(&r, sizeof(r));
	sep();
	printf("{\"type\": \"memset\", \"ts\": %llu, \"dur\": %llu, \"correlation\": %u, "
	       "\"bytes\": %llu, \"value\": %u, \"mem_kind\": %u, \"device\": %u, "
	       "\"context\": %u, \"stream\": %u}",
	       (unsigned long long)start, (unsigned long long)dur, corr, (unsigned long long)bytes,
	       value, (unsigned)CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device, context, stream);
}

static void dummy_kernel(void)
{
}

#define TIMED(c, nm, id, expr)                                                                     \
	do {                                                                                       \
		(c)->name = (nm);                                                                  \
		(c)->cbid = CUPTI_RUNTIME_TRACE_CBID_##id;                                         \
		(c)->t0 = now();                                                                   \
		(c)->ret = (int)(expr);                                                            \
		(c)->t1 = now();                                                                   \
	} while (0)

int main(int argc, char **argv)
{
	static char host[65536], host2[65536];
	int (*init)(void);
	int (*feed)(const uint8_t *, size_t);
	const char *shim = getenv("BPFSIGHT_SHIM"), *wait_file = NULL;
	const struct timespec tick = { 0, 10000000 };
	struct call c[12];
	dim3 grid = { 4, 2, 1 }, block = { 128, 1, 1 };
	void *args[1] = { NULL };
	long extra = 0, j;
	int nvtx = 0;
	struct stat st;
	void *h;
	uint64_t feed_ns;
	int i, ret, fed;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait-file") && i + 1 < argc)
			wait_file = argv[++i];
		else if (!strcmp(argv[i], "--extra") && i + 1 < argc)
			extra = atol(argv[++i]);
		else if (!strcmp(argv[i], "--nvtx"))
			nvtx = 1;
		else if (argv[i][0] != '-')
			shim = argv[i];
		else
			shim = NULL, i = argc;
	}
	if (!shim) {
		fprintf(stderr, "usage: cupti_feed [--wait-file PATH] [--extra N] [--nvtx] SHIM\n");
		return 2;
	}
	h = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "cupti_feed: %s\n", dlerror());
		return 1;
	}
	*(void **)&init = dlsym(h, "InitializeInjection");
	*(void **)&feed = dlsym(h, "bpfsight_shim_test_feed");
	if (!init || !feed) {
		fprintf(stderr, "cupti_feed: %s lacks the shim's entry points\n", shim);
		return 1;
	}
	ret = init();
	printf("{\"pid\": %d, \"tid\": %d, \"init\": %d}\n", (int)getpid(), (int)gettid(), ret);
	fflush(stdout);
	while (wait_file && stat(wait_file, &st))
		nanosleep(&tick, NULL);

	/* The shim already loaded, as the NVTX injection too: NVTX reads the variable at its
	 * first call, and dlopen of the same file returns the same object. */
	if (nvtx && setenv("NVTX_INJECTION64_PATH", shim, 1)) {
		perror("cupti_feed: setenv");
		return 1;
	}
	if (nvtx) {
		nvtxRangePushA("step");
		nvtxRangePushA("fwd");
	}
	TIMED(&c[0], "cudaLaunchKernel", cudaLaunchKernel_v7000,
	      cudaLaunchKernel((const void *)dummy_kernel, grid, block, args, 256, NULL));
	TIMED(&c[1], "cudaLaunchKernel", cudaLaunchKernel_v7000,
	      cudaLaunchKernel((const void *)dummy_kernel, grid, block, args, 0, NULL));
	TIMED(&c[2], "cudaLaunchKernel", cudaLaunchKernel_v7000,
	      cudaLaunchKernel((const void *)dummy_kernel, grid, block, args, 0, NULL));
	if (nvtx)
		nvtxRangePop(); /* fwd */
	TIMED(&c[3], "cudaGraphLaunch", cudaGraphLaunch_v10000, cudaGraphLaunch(NULL, NULL));
	TIMED(&c[4], "cudaMemcpy", cudaMemcpy_v3020,
	      cudaMemcpy(host2, host, 4096, cudaMemcpyHostToDevice));
	TIMED(&c[5], "cudaMemcpy", cudaMemcpy_v3020,
	      cudaMemcpy(host2, host, 12345, cudaMemcpyDeviceToHost));
	TIMED(&c[6], "cudaMemcpy", cudaMemcpy_v3020,
	      cudaMemcpy(host2, host, 777, cudaMemcpyDeviceToDevice));
	TIMED(&c[7], "cudaMemcpy", cudaMemcpy_v3020,
	      cudaMemcpy(host2, host, 333, cudaMemcpyHostToHost));
	TIMED(&c[8], "cudaMemcpyAsync", cudaMemcpyAsync_v3020,
	      cudaMemcpyAsync(host2, host, 8192, cudaMemcpyHostToDevice, NULL));
	TIMED(&c[9], "cudaMemcpyPeer", cudaMemcpyPeer_v4000,
	      cudaMemcpyPeer(host2, 1, host, 0, 65536));
	TIMED(&c[10], "cudaMemset", cudaMemset_v3020, cudaMemset(host2, 0x5a, 1000));
	TIMED(&c[11], "cudaMemsetAsync", cudaMemsetAsync_v3020,
	      cudaMemsetAsync(host2, 0xa5, 2000, NULL));
	if (nvtx)
		nvtxRangePop(); /* step */

	printf("{\"records\": [");
	{
		const struct kdesc k[] = {
			{ "_Z8kernel_av",
			  0,
			  1,
			  7,
			  { 4, 2, 1 },
			  { 128, 1, 1 },
			  256,
			  1024,
			  32,
			  0,
			  0 },
			{ "_Z8kernel_bPfi", 1, 2, 13, { 16, 1, 1 }, { 256, 1, 1 }, 0, 0, 40, 0, 0 },
			{ "_Z8kernel_cv", 0, 1, 14, { 1, 1, 1 }, { 32, 4, 2 }, 0, 48, 16, 0, 0 },
			{ "_Z10graph_nodev",
			  0,
			  1,
			  7,
			  { 2, 2, 2 },
			  { 8, 8, 8 },
			  64,
			  0,
			  24,
			  5,
			  0x123456789abcull },
			{ "_Z8kernel_dv", 1, 2, 13, { 3, 1, 1 }, { 64, 1, 1 }, 0, 0, 8, 0, 0 },
			{ "_Z8orphan_v", 0, 1, 14, { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, 4, 0, 0 },
		};
		const struct cdesc m[] = {
			{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
			  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 4096, 0, 1, 7, 0, 0 },
			{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
			  CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0, 12345, 0, 1, 7, 0, 0 },
			{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
			  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 777, 1, 2, 13, 0, 0 },
			{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
			  CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0, 333, 0, 1, 14, 0, 0 },
			{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
			  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 8192, 0, 1, 7, 0, 0 },
			{ CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
			  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 65536, 0, 1, 7, 0, 1 },
		};
		struct call drv = { "cuLaunchKernel", CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, 0,
				    0 };
		struct kdesc x = {
			"_Z5extrai", 0, 1, 7, { 1, 1, 1 }, { 32, 1, 1 }, 0, 0, 10, 0, 0
		};
		uint64_t end;

		for (i = 0; i < 4; i++) {
			api(&c[i], CUPTI_ACTIVITY_KIND_RUNTIME, 101 + i);
			kernel(&k[i], 101 + i, c[i].t1 + 1000, 10000 * (i + 1));
		}
		for (i = 4; i < 9; i++) {
			api(&c[i], CUPTI_ACTIVITY_KIND_RUNTIME, 101 + i);
			copy(&m[i - 4], 101 + i, c[i].t1 + 1000, 2000 * (i + 1));
		}
		api(&c[9], CUPTI_ACTIVITY_KIND_RUNTIME, 110);
		copy_peer(&m[5], 110, c[9].t1 + 1000, 30000);
		api(&c[10], CUPTI_ACTIVITY_KIND_RUNTIME, 111);
		set(0x5a, 1000, 0, 1, 7, 0, 111, c[10].t1 + 1000, 3000);
		api(&c[11], CUPTI_ACTIVITY_KIND_RUNTIME, 112);
		set(0xa5, 2000, 1, 2, 13, 1, 112, c[11].t1 + 1000, 4000);

		end = now();
		drv.t0 = end + 1000;
		drv.t1 = end + 9000;
		api(&drv, CUPTI_ACTIVITY_KIND_DRIVER, 200);
		kernel(&k[4], 200, end + 20000, 15000);
		kernel(&k[5], 300, end + 40000, 5000);
		for (j = 0; j < extra; j++)
			kernel(&x, (uint32_t)(1000 + j), end + 100000 + (uint64_t)j * 2000, 1000);
	}
	feed_ns = now();
	fed = feed(buf, len);
	feed_ns = now() - feed_ns;
	printf("\n], \"calls\": [");
	first = 1;
	for (i = 0; i < 12; i++) {
		sep();
		printf("{\"name\": \"%s\", \"t0\": %llu, \"t1\": %llu, \"ret\": %d}", c[i].name,
		       (unsigned long long)c[i].t0, (unsigned long long)c[i].t1, c[i].ret);
	}
	printf("\n], \"fed\": %d, \"feed_ns\": %llu}\n", fed, (unsigned long long)feed_ns);
	free(buf);
	return 0;
}
