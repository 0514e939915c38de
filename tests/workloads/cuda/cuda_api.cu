// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUDA runtime workload with exactly known calls and arguments, for the cuda family's tests.
 * Built twice: -cudart shared (cuda_api_shared, libcudart.so.13 mapped) and -cudart static
 * (cuda_api_static, cudart inside the executable, mostly in .symtab only).
 *
 *   cuda_api [--wait-stdin] [--fork] [--sleep-ms MS] [ROUNDS]     (ROUNDS defaults to 1)
 *
 *   --wait-stdin  print "pid P", then block on a read of stdin before any CUDA call
 *   --sleep-ms    sleep MS before any CUDA call (lets -a find a process started late)
 *   --fork        fork before any CUDA call; parent and child both make every call below
 *
 * Without a GPU every call enters the real cudart and fails (cudaErrorInsufficientDriver,
 * 35), leaving out-parameters untouched, so handles and pointers keep the preset values
 * below. With a GPU the same program is valid and does real work. Calls, in order:
 *
 *   setup (once): cudaStreamCreate(&s), cudaEventCreate(&ev),
 *                 cudaMalloc(&dbuf, 65536), cudaMalloc(&dbuf2, 65536)
 *   each round:
 *     cudaMalloc(&tmp, 1048576); cudaMallocHost(&pinned, 3000);
 *     cudaMallocManaged(&managed, 7000, cudaMemAttachGlobal); cudaMallocAsync(&apool, 9000, s)
 *     cudaMemset(dbuf, 0x5a, 1000); cudaMemsetAsync(dbuf2, 0xa5, 2000, s)
 *     cudaStreamBeginCapture(s, thread-local); cudaStreamEndCapture(s, &graph);
 *     cudaGraphInstantiate(&gexec, graph, 0); cudaGraphLaunch(gexec, s) x2
 *     cudaProfilerStart()                        <- the range (--capture-range=cudaProfilerApi)
 *       my_kernel_a<<<(7,3,1), (128,2,1), 96, s>>> x2               (__cudaLaunchKernel)
 *       cudaLaunchKernel(my_kernel_b, (13,1,1), (32,4,1), args, 2048, s) x3
 *       scale_kernel<float><<<(2,2,2), (8,8,8)>>> x1  (default stream 0, no shared memory)
 *       cudaLaunchHostFunc(s, host_callback, 0xc0ffee)
 *       cudaMemcpy(dbuf, hbuf, 4096, HtoD); cudaMemcpy(hbuf, dbuf, 12345, DtoH)
 *       cudaMemcpy(dbuf2, dbuf, 777, DtoD); cudaMemcpy(hbuf2, hbuf, 333, HtoH)
 *       cudaMemcpy(dbuf, hbuf, 5000, Default)
 *       cudaMemcpyAsync(dbuf2, hbuf, 8192, HtoD, s) x2
 *       cudaMemcpy2D(dbuf, 512, hbuf, 256, 200, 10, HtoD)
 *       cudaStreamSynchronize(s)
 *     cudaProfilerStop()
 *     cudaEventRecord(ev, s); cudaStreamWaitEvent(s, ev, 0); cudaEventQuery(ev);
 *     cudaEventSynchronize(ev); cudaStreamQuery(s); cudaStreamSynchronize(s);
 *     cudaDeviceSynchronize()
 *     cudaFreeAsync(apool, s); cudaFreeHost(pinned); cudaFree(managed); cudaFree(tmp)
 *     cudaGraphExecDestroy(gexec); cudaGraphDestroy(graph)
 *   teardown (once): cudaFree(dbuf), cudaFree(dbuf2), cudaEventDestroy(ev),
 *                    cudaStreamDestroy(s)
 *
 * Output on stdout: "pid P" first; with --fork, "child C" (from the parent) and each
 * process's own lines prefixed by nothing but carrying its pid; then per process:
 *   "t0 P NS" / "t1 P NS"  CLOCK_MONOTONIC just before the first and after the last call
 *   "ptr P NAME 0xHEX"     the value of each handle and pointer named above after the run
 *                          (per-round ones are reset to their preset before each call)
 *   "ret P NAME N"         the return code of the first cudaMalloc (35 without a GPU)
 */
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Distinctive presets: what the handles hold when the calls fail (no GPU). */
#define P_STREAM  0x5eed0000UL
#define P_EVENT	  0xe7e70000UL
#define P_DBUF	  0xd0000000UL
#define P_DBUF2	  0xd0100000UL
#define P_TMP	  0xd0200000UL
#define P_PINNED  0xb0000000UL
#define P_MANAGED 0xa0000000UL
#define P_APOOL	  0xa0100000UL
#define P_GRAPH	  0x6a0000UL
#define P_GEXEC	  0x6e0000UL
#define HOST_ARG  0xc0ffeeUL

__global__ void my_kernel_a(float *p, int n)
{
	if ((int)threadIdx.x < n)
		p[threadIdx.x] = 1.0f;
}

__global__ void my_kernel_b(int *p, unsigned int n)
{
	if (threadIdx.x < n)
		p[threadIdx.x] += 1;
}

template <typename T> __global__ void scale_kernel(T *p, T f, int n)
{
	if ((int)threadIdx.x < n)
		p[threadIdx.x] *= f;
}

static void CUDART_CB host_callback(void *arg)
{
	(void)arg;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#define SET(p, v) ((p) = (decltype(p))(uintptr_t)(v))

struct handles {
	cudaStream_t s;
	cudaEvent_t ev;
	void *dbuf, *dbuf2, *tmp, *pinned, *managed, *apool;
	cudaGraph_t graph;
	cudaGraphExec_t gexec;
	char *hbuf, *hbuf2;
	cudaError_t first_malloc;
};

static void round_calls(struct handles *h)
{
	cudaStream_t s = h->s;
	float *fa = (float *)h->dbuf;
	int *ib = (int *)h->dbuf2;
	unsigned int nb = 0;
	int i;

	SET(h->tmp, P_TMP);
	cudaMalloc(&h->tmp, 1048576);
	SET(h->pinned, P_PINNED);
	cudaMallocHost(&h->pinned, 3000);
	SET(h->managed, P_MANAGED);
	cudaMallocManaged(&h->managed, 7000, cudaMemAttachGlobal);
	SET(h->apool, P_APOOL);
	cudaMallocAsync(&h->apool, 9000, s);
	cudaMemset(h->dbuf, 0x5a, 1000);
	cudaMemsetAsync(h->dbuf2, 0xa5, 2000, s);

	SET(h->graph, P_GRAPH);
	SET(h->gexec, P_GEXEC);
	cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
	cudaStreamEndCapture(s, &h->graph);
	cudaGraphInstantiate(&h->gexec, h->graph, 0);
	cudaGraphLaunch(h->gexec, s);
	cudaGraphLaunch(h->gexec, s);

	cudaProfilerStart();
	for (i = 0; i < 2; i++)
		my_kernel_a<<<dim3(7, 3, 1), dim3(128, 2, 1), 96, s>>>(fa, 0);
	for (i = 0; i < 3; i++) {
		void *args[] = { &ib, &nb };

		cudaLaunchKernel((const void *)my_kernel_b, dim3(13, 1, 1), dim3(32, 4, 1), args,
				 2048, s);
	}
	scale_kernel<float><<<dim3(2, 2, 2), dim3(8, 8, 8)>>>(fa, 2.0f, 0);
	cudaLaunchHostFunc(s, host_callback, (void *)HOST_ARG);
	cudaMemcpy(h->dbuf, h->hbuf, 4096, cudaMemcpyHostToDevice);
	cudaMemcpy(h->hbuf, h->dbuf, 12345, cudaMemcpyDeviceToHost);
	cudaMemcpy(h->dbuf2, h->dbuf, 777, cudaMemcpyDeviceToDevice);
	cudaMemcpy(h->hbuf2, h->hbuf, 333, cudaMemcpyHostToHost);
	cudaMemcpy(h->dbuf, h->hbuf, 5000, cudaMemcpyDefault);
	cudaMemcpyAsync(h->dbuf2, h->hbuf, 8192, cudaMemcpyHostToDevice, s);
	cudaMemcpyAsync(h->dbuf2, h->hbuf, 8192, cudaMemcpyHostToDevice, s);
	cudaMemcpy2D(h->dbuf, 512, h->hbuf, 256, 200, 10, cudaMemcpyHostToDevice);
	cudaStreamSynchronize(s);
	cudaProfilerStop();

	cudaEventRecord(h->ev, s);
	cudaStreamWaitEvent(s, h->ev, 0);
	cudaEventQuery(h->ev);
	cudaEventSynchronize(h->ev);
	cudaStreamQuery(s);
	cudaStreamSynchronize(s);
	cudaDeviceSynchronize();
	cudaFreeAsync(h->apool, s);
	cudaFreeHost(h->pinned);
	cudaFree(h->managed);
	cudaFree(h->tmp);
	cudaGraphExecDestroy(h->gexec);
	cudaGraphDestroy(h->graph);
}

static void run(long rounds)
{
	struct handles h;
	unsigned long long t0, t1;
	int me = getpid();

	memset(&h, 0, sizeof(h));
	h.hbuf = (char *)calloc(1, 65536);
	h.hbuf2 = (char *)calloc(1, 65536);
	if (!h.hbuf || !h.hbuf2)
		exit(4);
	SET(h.s, P_STREAM);
	SET(h.ev, P_EVENT);
	SET(h.dbuf, P_DBUF);
	SET(h.dbuf2, P_DBUF2);

	t0 = now_ns();
	cudaStreamCreate(&h.s);
	cudaEventCreate(&h.ev);
	h.first_malloc = cudaMalloc(&h.dbuf, 65536);
	cudaMalloc(&h.dbuf2, 65536);
	for (long r = 0; r < rounds; r++)
		round_calls(&h);
	cudaFree(h.dbuf);
	cudaFree(h.dbuf2);
	cudaEventDestroy(h.ev);
	cudaStreamDestroy(h.s);
	t1 = now_ns();

	printf("t0 %d %llu\nt1 %d %llu\n", me, t0, me, t1);
	printf("ptr %d stream %p\nptr %d event %p\n", me, (void *)h.s, me, (void *)h.ev);
	printf("ptr %d dbuf %p\nptr %d dbuf2 %p\n", me, h.dbuf, me, h.dbuf2);
	printf("ptr %d hbuf %p\nptr %d hbuf2 %p\n", me, (void *)h.hbuf, me, (void *)h.hbuf2);
	printf("ptr %d tmp %p\nptr %d pinned %p\n", me, h.tmp, me, h.pinned);
	printf("ptr %d managed %p\nptr %d apool %p\n", me, h.managed, me, h.apool);
	printf("ptr %d graph %p\nptr %d gexec %p\n", me, (void *)h.graph, me, (void *)h.gexec);
	printf("ptr %d my_kernel_a %p\nptr %d my_kernel_b %p\n", me, (void *)my_kernel_a, me,
	       (void *)my_kernel_b);
	printf("ptr %d scale_kernel %p\nptr %d host_callback %p\n", me,
	       (void *)scale_kernel<float>, me, (void *)host_callback);
	printf("ret %d cudaMalloc %d\n", me, (int)h.first_malloc);
	fflush(stdout);
	free(h.hbuf);
	free(h.hbuf2);
}

int main(int argc, char **argv)
{
	int wait_stdin = 0, do_fork = 0, i;
	long rounds = 1, sleep_ms = 0;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--wait-stdin"))
			wait_stdin = 1;
		else if (!strcmp(argv[i], "--fork"))
			do_fork = 1;
		else if (!strcmp(argv[i], "--sleep-ms") && i + 1 < argc)
			sleep_ms = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: cuda_api [--wait-stdin] [--fork] [--sleep-ms MS] "
					"[ROUNDS]\n");
			return 2;
		}
	}
	if (i < argc)
		rounds = atol(argv[i]);
	printf("pid %d\n", getpid());
	fflush(stdout);
	if (wait_stdin) {
		char c;

		if (read(0, &c, 1) != 1)
			return 3;
	}
	if (sleep_ms)
		usleep(sleep_ms * 1000);
	if (do_fork) {
		pid_t child = fork();

		if (child < 0)
			return 5;
		if (child == 0) {
			run(rounds);
			_exit(0);
		}
		printf("child %d\n", child);
		fflush(stdout);
		run(rounds);
		waitpid(child, NULL, 0);
	} else {
		run(rounds);
	}
	return 0;
}
