// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libfake_c10_cuda.so: PyTorch's CUDA caching allocator as the mem family sees it, for a
 * machine without a GPU (tests/e2e/test_mem_gpu.py). It carries what a real libc10 and
 * libc10_cuda carry: c10::reportMemoryUsageToProfiler and reportOutOfMemoryToProfiler under
 * their 2.x mangled names (a c10::Device passed by value: type CUDA = 1 in the low byte, the
 * index in the next), and the USDT probes pytorch:malloc(ptr, device, size, stream) and
 * pytorch:free(ptr) behind semaphores in .probes, with an int8 device as torch's note has
 * it. Segments come from real cudaMalloc/cudaFree calls through libcudart, which fail here
 * (no GPU) but enter the library: the allocator then carves the segment it asked for out of
 * an address range of its own, so the totals it reports are exact and known to the test.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <stdio.h>
#include <sys/sdt.h>
#include <cuda_runtime_api.h>
#include "fake_c10_cuda.h"

unsigned short pytorch_malloc_semaphore __attribute__((section(".probes"), used));
unsigned short pytorch_free_semaphore __attribute__((section(".probes"), used));

struct c10_device {
	int8_t type;
	int8_t index;
};

/* c10::reportMemoryUsageToProfiler(void*, long, unsigned long, unsigned long, c10::Device) */
__attribute__((noinline, visibility("default"))) void
report_usage(void *ptr, int64_t size, size_t allocated, size_t reserved,
	     struct c10_device d) __asm__("_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE");

void report_usage(void *ptr, int64_t size, size_t allocated, size_t reserved, struct c10_device d)
{
	__asm__ volatile("" ::: "memory"); /* a real function, as libc10's is */
}

/* c10::reportOutOfMemoryToProfiler(long, unsigned long, unsigned long, c10::Device) */
__attribute__((noinline, visibility("default"))) void
report_oom(int64_t size, size_t allocated, size_t reserved,
	   struct c10_device d) __asm__("_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE");

void report_oom(int64_t size, size_t allocated, size_t reserved, struct c10_device d)
{
	__asm__ volatile("" ::: "memory");
}

#define NDEV 2

static struct {
	size_t allocated, reserved;
	uintptr_t next; /* where the next block goes in the device's one segment */
} dev[NDEV];

/* A segment of BYTES on device D: cudaMalloc asked (and refused here), then carved. */
int fake_segment(int d, size_t bytes)
{
	void *p = NULL;
	cudaError_t err = cudaMalloc(&p, bytes);

	if (d < 0 || d >= NDEV)
		return -1;
	if (!dev[d].next)
		dev[d].next = FAKE_SEGMENT_BASE(d);
	dev[d].reserved += bytes;
	return err == cudaSuccess ? 1 : 0;
}

/* Release device D's segments (cudaFree, refused here): reserved drops to what is live. */
void fake_empty_cache(int d)
{
	cudaFree(NULL);
	dev[d].reserved = dev[d].allocated;
}

void *fake_malloc(int d, size_t bytes, int64_t stream)
{
	struct c10_device cd = { 1, (int8_t)d };
	/* The caching allocator rounds a block up to 512 bytes; the USDT shows what was asked. */
	size_t block = (bytes + 511) & ~(size_t)511;
	void *p = (void *)dev[d].next;

	dev[d].next += block;
	dev[d].allocated += block;
	report_usage(p, (int64_t)block, dev[d].allocated, dev[d].reserved, cd);
	if (pytorch_malloc_semaphore) {
		int8_t index = (int8_t)d;

		STAP_PROBE4(pytorch, malloc, p, index, bytes, stream);
	}
	return p;
}

void fake_free(int d, void *p, size_t bytes)
{
	struct c10_device cd = { 1, (int8_t)d };
	size_t block = (bytes + 511) & ~(size_t)511;

	if (pytorch_free_semaphore)
		STAP_PROBE1(pytorch, free, p);
	dev[d].allocated -= block;
	report_usage(p, -(int64_t)block, dev[d].allocated, dev[d].reserved, cd);
}

void fake_oom(int d, size_t bytes)
{
	struct c10_device cd = { 1, (int8_t)d };

	report_oom((int64_t)bytes, dev[d].allocated, dev[d].reserved, cd);
}

unsigned fake_semaphores(void)
{
	return pytorch_malloc_semaphore + pytorch_free_semaphore;
}
