/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* libfake_c10_cuda.so's allocator (fake_c10_cuda.c), driven by gpu_alloc.c. */
#ifndef FAKE_C10_CUDA_H
#define FAKE_C10_CUDA_H

#include <stddef.h>
#include <stdint.h>

/* Where device D's blocks go: addresses no process here maps. */
#define FAKE_SEGMENT_BASE(d) ((uintptr_t)0x7e0000000000ull + ((uintptr_t)(d) << 36))

int fake_segment(int d, size_t bytes);
void fake_empty_cache(int d);
void *fake_malloc(int d, size_t bytes, int64_t stream);
void fake_free(int d, void *p, size_t bytes);
void fake_oom(int d, size_t bytes);
/* The USDT semaphores' sum: raised while a tracer's link covers the process. */
unsigned fake_semaphores(void);

#endif
