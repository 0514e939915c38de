// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Many short CUDA processes, each with a cupti-shim, as a busy node has them: what `monitor`
 * must keep up with without growing (tests/e2e/test_shim_churn.py).
 *
 * usage: shim_churn N [P] [--wait-file PATH]
 *   Waits (up to 20 s) until the shim's batch semaphore is up (a tracer attached), or, with
 *   --wait-file, until PATH exists. Then forks N children, at most P (default 4) alive at
 *   once. Each child is a process of its own to the tracer: two threads (its main one and one
 *   it starts) each make one launching CUDA call; then it sends, through the shim channel (the
 *   probes of tests/workloads/shim_fake.c), one batch as the cupti-shim would: its strings,
 *   CUPTI's API record of each call (inside it, on its thread, correlations 1 and 2) and the
 *   kernel each launched; then it exits. So N processes have 2N threads launching work.
 *   Prints "pid P" first and "done N FAILED" at the end; exits 1 if a child failed.
 *
 * The call is this program's own cudaLaunchKernel: the cuda family probes it as it would a
 * statically linked runtime's, and it takes the API record's times inside itself, as CUPTI
 * does, so the record lies inside the call the tracer saw. No libcudart is loaded: a child
 * costs a fork, so 10,000 of them fit in a test.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "../../bpf/gpu_records.h"
#include "../../bpf/nvtx_records.h"

unsigned short bpfsight_batch_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_gpu_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_nvtx_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_sync_semaphore __attribute__((section(".probes"), used));
unsigned short bpfsight_drain_semaphore __attribute__((section(".probes"), used));

static __u64 buf[(sizeof(struct bs_shim_batch_hdr) + BS_SHIM_BATCH_MAX) / 8];
static __u32 used, nrec;
/* CUPTI's API record of the calling thread's last call */
static __thread __u64 api_t0, api_t1;

struct call {
	__u64 t0, t1;
	__u32 tid;
	int ret;
};

struct dim3 {
	unsigned x, y, z;
};

static __u64 now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* The kernel's host stub, as nvcc makes one: the call's func argument. */
__attribute__((noinline)) void churn_kernel(void)
{
	__asm__ volatile("");
}

/* CUPTI's API record times: taken inside the call. */
__attribute__((noinline, used)) int cudaLaunchKernel(const void *func, struct dim3 grid,
						     struct dim3 block, void **args, size_t shmem,
						     void *stream)
{
	api_t0 = now();
	__asm__ volatile("" ::: "memory");
	api_t1 = now();
	return func ? 0 : 1;
}

static void *add(__u16 type, __u32 size, __u64 ts)
{
	struct bs_hdr *h = (void *)((char *)buf + sizeof(struct bs_shim_batch_hdr) + used);

	memset(h, 0, size);
	h->type = type;
	h->size = size;
	h->pid = getpid();
	h->tid = syscall(SYS_gettid);
	h->ts = ts;
	used += size;
	nrec++;
	return h;
}

static void add_string(__u32 id, const char *s)
{
	__u32 len = strlen(s), size = (sizeof(struct bs_string) + len + 7) & ~7u;
	struct bs_string *r = add(BS_REC_STRING, size, 0);

	r->id = id;
	r->len = len;
	memcpy(r + 1, s, len);
}

static void *launch(void *arg)
{
	struct dim3 g = { 1, 1, 1 }, b = { 32, 1, 1 };
	struct call *c = arg;

	c->ret = cudaLaunchKernel((const void *)churn_kernel, g, b, NULL, 0, NULL);
	c->t0 = api_t0;
	c->t1 = api_t1;
	c->tid = syscall(SYS_gettid);
	return NULL;
}

/* The API record of call C (correlation CORR) and the kernel it launched. */
static void add_call(const struct call *c, __u32 corr)
{
	struct bs_gpu_api *a = add(BS_REC_GPU_API, sizeof(*a), c->t0);
	struct bs_gpu_kernel *k;

	a->h.tid = c->tid;
	a->dur = c->t1 - c->t0;
	a->correlation = corr;
	a->cbid = 211;
	a->name_id = 1;
	a->domain = 2;
	k = add(BS_REC_GPU_KERNEL, sizeof(*k), c->t1 + 1000);
	k->h.tid = 0;
	k->dur = 1000;
	k->correlation = corr;
	k->name_id = 2;
	k->grid[0] = 1;
	k->block[0] = 32;
}

static int child(void)
{
	struct bs_shim_batch_hdr *bh = (void *)buf;
	struct call c[2] = {};
	pthread_t th;

	if (pthread_create(&th, NULL, launch, &c[1]))
		return 1;
	launch(&c[0]);
	pthread_join(th, NULL);
	if (c[0].ret || c[1].ret)
		return 1;
	add_string(1, "cudaLaunchKernel_v7000");
	add_string(2, "_Z12churn_kernelv");
	add_call(&c[0], 1);
	add_call(&c[1], 2);
	bh->magic = BS_SHIM_MAGIC;
	bh->version = BS_SHIM_VERSION;
	bh->nrec = nrec;
	bh->len = used;
	bh->seq = 1;
	STAP_PROBE2(bpfsight, batch, (__u64)(uintptr_t)buf, (__u64)(sizeof(*bh) + used));
	return 0;
}

static int reap(void)
{
	int status;

	if (wait(&status) < 0)
		return 1;
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	const struct timespec tick = { 0, 10000000 };
	long n = argc > 1 ? atol(argv[1]) : 0, par = 4, alive = 0, failed = 0;
	const char *wait_file = NULL;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--wait-file") && i + 1 < argc)
			wait_file = argv[++i];
		else
			par = atol(argv[i]);
	}
	if (n <= 0 || par <= 0) {
		fprintf(stderr, "usage: shim_churn N [P] [--wait-file PATH]\n");
		return 2;
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	for (int i = 0; i < 2000; i++) {
		if (wait_file ? !access(wait_file, F_OK) : bpfsight_batch_semaphore > 0)
			break;
		nanosleep(&tick, NULL);
	}
	for (long i = 0; i < n; i++) {
		pid_t p;

		if (alive == par) {
			failed += reap();
			alive--;
		}
		p = fork();
		if (p < 0) {
			failed++;
			continue;
		}
		if (!p)
			_exit(child());
		alive++;
	}
	while (alive--)
		failed += reap();
	if (argc > 99) { /* never: keeps every probe in the binary */
		STAP_PROBE1(bpfsight, gpu, (__u64)argc);
		STAP_PROBE1(bpfsight, nvtx, (__u64)argc);
		STAP_PROBE1(bpfsight, sync, (__u64)argc);
		STAP_PROBE1(bpfsight, drain, (__u64)argc);
	}
	printf("done %ld %ld\n", n, failed);
	return failed ? 1 : 0;
}
