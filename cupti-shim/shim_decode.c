// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUPTI activity records -> bs_gpu_* records: the one decode path, taken by the records
 * CUPTI completes and by the test hook's hand-made buffers alike.
 *
 * The layouts are CUPTI 13's (CUpti_ActivityKernel10, Memcpy6, MemcpyPtoP4, Memset4, API):
 * CUPTI fills the newest layout it knows, so shim_cupti.c refuses other major versions.
 * Timestamps are CLOCK_MONOTONIC already (our timestamp callback). call_ts and the CALL
 * flags are the recorder's to fill; the launching thread is known from the API record.
 */
#include <string.h>

#include <cupti.h>

#include "shim.h"

static uint64_t dur_of(uint64_t start, uint64_t end)
{
	return end > start ? end - start : 0;
}

static int kernel(struct shim_thread *t, uint32_t session, const CUpti_ActivityKernel10 *k)
{
	uint32_t me = shim_thread__tid(t);
	struct bs_gpu_kernel r;

	memset(&r, 0, sizeof(r));
	shim_hdr(&r.h, BS_REC_GPU_KERNEL, sizeof(r), 0, k->start);
	r.dur = dur_of(k->start, k->end);
	r.correlation = k->correlationId;
	r.name_id = shim_str__use(shim_str__intern_c(k->name), session, me);
	r.device = k->deviceId;
	r.context = k->contextId;
	r.stream = k->streamId;
	r.grid[0] = (uint32_t)k->gridX;
	r.grid[1] = (uint32_t)k->gridY;
	r.grid[2] = (uint32_t)k->gridZ;
	r.block[0] = (uint32_t)k->blockX;
	r.block[1] = (uint32_t)k->blockY;
	r.block[2] = (uint32_t)k->blockZ;
	r.shmem_dynamic = (uint32_t)k->dynamicSharedMemory;
	r.shmem_static = (uint32_t)k->staticSharedMemory;
	r.registers = k->registersPerThread;
	r.graph_id = k->graphId;
	r.graph_node_id = k->graphNodeId;
	r.flags = k->graphId ? BS_GPU_GRAPH : 0;
	return shim_thread__append(t, session, &r, sizeof(r));
}

/*
 * CUpti_ActivityMemcpy6 and CUpti_ActivityMemcpyPtoP4 name their common fields alike (the
 * layouts differ): one body for both. SRC, DST: the devices copied between.
 */
#define COPY(t, session, m, src, dst)                                                              \
	({                                                                                         \
		struct bs_gpu_memcpy r_;                                                           \
                                                                                                   \
		memset(&r_, 0, sizeof(r_));                                                        \
		shim_hdr(&r_.h, BS_REC_GPU_MEMCPY, sizeof(r_), 0, (m)->start);                     \
		r_.dur = dur_of((m)->start, (m)->end);                                             \
		r_.bytes = (m)->bytes;                                                             \
		r_.correlation = (m)->correlationId;                                               \
		r_.device = (m)->deviceId;                                                         \
		r_.context = (m)->contextId;                                                       \
		r_.stream = (m)->streamId;                                                         \
		r_.copy_kind = (m)->copyKind;                                                      \
		r_.src_kind = (m)->srcKind;                                                        \
		r_.dst_kind = (m)->dstKind;                                                        \
		r_.async = !!((m)->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);                      \
		r_.src_device = (src);                                                             \
		r_.dst_device = (dst);                                                             \
		r_.graph_id = (m)->graphId;                                                        \
		r_.graph_node_id = (m)->graphNodeId;                                               \
		r_.flags = (m)->graphId ? BS_GPU_GRAPH : 0;                                        \
		shim_thread__append((t), (session), &r_, sizeof(r_));                              \
	})

static int copy(struct shim_thread *t, uint32_t session, const CUpti_ActivityMemcpy6 *m)
{
	/* A copy within one device: its device is both ends. */
	return COPY(t, session, m, m->deviceId, m->deviceId);
}

static int copy_peer(struct shim_thread *t, uint32_t session, const CUpti_ActivityMemcpyPtoP4 *m)
{
	return COPY(t, session, m, m->srcDeviceId, m->dstDeviceId);
}

static int set(struct shim_thread *t, uint32_t session, const CUpti_ActivityMemset4 *m)
{
	struct bs_gpu_memset r;

	memset(&r, 0, sizeof(r));
	shim_hdr(&r.h, BS_REC_GPU_MEMSET, sizeof(r), 0, m->start);
	r.dur = dur_of(m->start, m->end);
	r.bytes = m->bytes;
	r.correlation = m->correlationId;
	r.device = m->deviceId;
	r.context = m->contextId;
	r.stream = m->streamId;
	r.value = m->value;
	r.mem_kind = m->memoryKind;
	r.graph_id = m->graphId;
	r.graph_node_id = m->graphNodeId;
	r.flags = m->graphId ? BS_GPU_GRAPH : 0;
	return shim_thread__append(t, session, &r, sizeof(r));
}

static int api(struct shim_thread *t, uint32_t session, const CUpti_ActivityAPI *a, uint32_t domain)
{
	struct bs_gpu_api r;

	memset(&r, 0, sizeof(r));
	/* threadId is the kernel's tid: cuptiSetThreadIdType(SYSTEM). */
	shim_hdr(&r.h, BS_REC_GPU_API, sizeof(r), a->threadId, a->start);
	r.dur = dur_of(a->start, a->end);
	r.correlation = a->correlationId;
	r.cbid = a->cbid;
	r.name_id = shim_str__use(shim_cbid__name(domain, a->cbid), session, shim_thread__tid(t));
	r.ret = a->returnValue;
	r.domain = (uint16_t)domain;
	return shim_thread__append(t, session, &r, sizeof(r));
}

int shim_decode__record(struct shim_thread *t, uint32_t session, const void *rec)
{
	const CUpti_Activity *a = rec;

	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return kernel(t, session, rec);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return copy(t, session, rec);
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		return copy_peer(t, session, rec);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return set(t, session, rec);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		return api(t, session, rec, CUPTI_CB_DOMAIN_RUNTIME_API);
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return api(t, session, rec, CUPTI_CB_DOMAIN_DRIVER_API);
	default:
		return 0;
	}
}
