// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The runtime and driver calls that put work on the GPU (kernel launches of every flavour,
 * graph launches, copies and memsets, synchronous and asynchronous, _ptsz/_ptds included).
 * Their CUPTI API records carry the correlation id that joins a kernel, copy or memset to
 * the thread and call that launched it; enabling only these (cuptiActivityEnableRuntimeApi
 * / DriverApi per callback id) costs less than CUPTI_ACTIVITY_KIND_RUNTIME/DRIVER, which
 * records every call.
 *
 * The names double as a fallback when cuptiGetCallbackName has none.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <cupti.h>

#include "shim.h"

#define RT(n)                                                                                      \
	{                                                                                          \
		CUPTI_RUNTIME_TRACE_CBID_##n, #n                                                   \
	}
#define DRV(n)                                                                                     \
	{                                                                                          \
		CUPTI_DRIVER_TRACE_CBID_##n, #n                                                    \
	}

const struct shim_cbid shim_cbid_runtime[] = {
	RT(cudaLaunch_v3020),
	RT(cudaMemcpy_v3020),
	RT(cudaMemcpy2D_v3020),
	RT(cudaMemcpyToArray_v3020),
	RT(cudaMemcpy2DToArray_v3020),
	RT(cudaMemcpyFromArray_v3020),
	RT(cudaMemcpy2DFromArray_v3020),
	RT(cudaMemcpyArrayToArray_v3020),
	RT(cudaMemcpy2DArrayToArray_v3020),
	RT(cudaMemcpyToSymbol_v3020),
	RT(cudaMemcpyFromSymbol_v3020),
	RT(cudaMemcpyAsync_v3020),
	RT(cudaMemcpyToArrayAsync_v3020),
	RT(cudaMemcpyFromArrayAsync_v3020),
	RT(cudaMemcpy2DAsync_v3020),
	RT(cudaMemcpy2DToArrayAsync_v3020),
	RT(cudaMemcpy2DFromArrayAsync_v3020),
	RT(cudaMemcpyToSymbolAsync_v3020),
	RT(cudaMemcpyFromSymbolAsync_v3020),
	RT(cudaMemset_v3020),
	RT(cudaMemset2D_v3020),
	RT(cudaMemsetAsync_v3020),
	RT(cudaMemset2DAsync_v3020),
	RT(cudaMemset3D_v3020),
	RT(cudaMemset3DAsync_v3020),
	RT(cudaMemcpy3D_v3020),
	RT(cudaMemcpy3DAsync_v3020),
	RT(cudaMemcpyPeer_v4000),
	RT(cudaMemcpyPeerAsync_v4000),
	RT(cudaMemcpy3DPeer_v4000),
	RT(cudaMemcpy3DPeerAsync_v4000),
	RT(cudaLaunchKernel_v7000),
	RT(cudaLaunch_ptsz_v7000),
	RT(cudaLaunchKernel_ptsz_v7000),
	RT(cudaMemcpy_ptds_v7000),
	RT(cudaMemcpy2D_ptds_v7000),
	RT(cudaMemcpyToArray_ptds_v7000),
	RT(cudaMemcpy2DToArray_ptds_v7000),
	RT(cudaMemcpyFromArray_ptds_v7000),
	RT(cudaMemcpy2DFromArray_ptds_v7000),
	RT(cudaMemcpyArrayToArray_ptds_v7000),
	RT(cudaMemcpy2DArrayToArray_ptds_v7000),
	RT(cudaMemcpyToSymbol_ptds_v7000),
	RT(cudaMemcpyFromSymbol_ptds_v7000),
	RT(cudaMemcpyAsync_ptsz_v7000),
	RT(cudaMemcpyToArrayAsync_ptsz_v7000),
	RT(cudaMemcpyFromArrayAsync_ptsz_v7000),
	RT(cudaMemcpy2DAsync_ptsz_v7000),
	RT(cudaMemcpy2DToArrayAsync_ptsz_v7000),
	RT(cudaMemcpy2DFromArrayAsync_ptsz_v7000),
	RT(cudaMemcpyToSymbolAsync_ptsz_v7000),
	RT(cudaMemcpyFromSymbolAsync_ptsz_v7000),
	RT(cudaMemset_ptds_v7000),
	RT(cudaMemset2D_ptds_v7000),
	RT(cudaMemsetAsync_ptsz_v7000),
	RT(cudaMemset2DAsync_ptsz_v7000),
	RT(cudaMemset3D_ptds_v7000),
	RT(cudaMemset3DAsync_ptsz_v7000),
	RT(cudaMemcpy3D_ptds_v7000),
	RT(cudaMemcpy3DAsync_ptsz_v7000),
	RT(cudaMemcpy3DPeer_ptds_v7000),
	RT(cudaMemcpy3DPeerAsync_ptsz_v7000),
	RT(cudaLaunchCooperativeKernel_v9000),
	RT(cudaLaunchCooperativeKernel_ptsz_v9000),
	RT(cudaLaunchCooperativeKernelMultiDevice_v9000),
	RT(cudaGraphLaunch_v10000),
	RT(cudaGraphLaunch_ptsz_v10000),
	RT(cudaLaunchKernelExC_v11060),
	RT(cudaLaunchKernelExC_ptsz_v11060),
	RT(cudaMemcpyBatchAsync_v12080),
	RT(cudaMemcpyBatchAsync_ptsz_v12080),
	RT(cudaMemcpy3DBatchAsync_v12080),
	RT(cudaMemcpy3DBatchAsync_ptsz_v12080),
	RT(cudaMemcpyBatchAsync_v13000),
	RT(cudaMemcpyBatchAsync_ptsz_v13000),
	RT(cudaMemcpy3DBatchAsync_v13000),
	RT(cudaMemcpy3DBatchAsync_ptsz_v13000),
};
const size_t shim_cbid_runtime_nr = sizeof(shim_cbid_runtime) / sizeof(shim_cbid_runtime[0]);

const struct shim_cbid shim_cbid_driver[] = {
	DRV(cuMemcpyHtoD),
	DRV(cuMemcpyDtoH),
	DRV(cuMemcpyDtoD),
	DRV(cuMemcpyDtoA),
	DRV(cuMemcpyAtoD),
	DRV(cuMemcpyHtoA),
	DRV(cuMemcpyAtoH),
	DRV(cuMemcpyAtoA),
	DRV(cuMemcpy2D),
	DRV(cuMemcpy2DUnaligned),
	DRV(cuMemcpy3D),
	DRV(cuMemcpyHtoDAsync),
	DRV(cuMemcpyDtoHAsync),
	DRV(cuMemcpyDtoDAsync),
	DRV(cuMemcpyHtoAAsync),
	DRV(cuMemcpyAtoHAsync),
	DRV(cuMemcpy2DAsync),
	DRV(cuMemcpy3DAsync),
	DRV(cuMemsetD8),
	DRV(cuMemsetD16),
	DRV(cuMemsetD32),
	DRV(cuMemsetD2D8),
	DRV(cuMemsetD2D16),
	DRV(cuMemsetD2D32),
	DRV(cuLaunch),
	DRV(cuLaunchGrid),
	DRV(cuLaunchGridAsync),
	DRV(cuMemsetD8Async),
	DRV(cuMemsetD16Async),
	DRV(cuMemsetD32Async),
	DRV(cuMemsetD2D8Async),
	DRV(cuMemsetD2D16Async),
	DRV(cuMemsetD2D32Async),
	DRV(cuMemcpy_v2),
	DRV(cuMemsetD8_v2),
	DRV(cuMemsetD16_v2),
	DRV(cuMemsetD32_v2),
	DRV(cuMemsetD2D8_v2),
	DRV(cuMemsetD2D16_v2),
	DRV(cuMemsetD2D32_v2),
	DRV(cuMemcpyHtoD_v2),
	DRV(cuMemcpyHtoDAsync_v2),
	DRV(cuMemcpyDtoH_v2),
	DRV(cuMemcpyDtoHAsync_v2),
	DRV(cuMemcpyDtoD_v2),
	DRV(cuMemcpyDtoDAsync_v2),
	DRV(cuMemcpyAtoH_v2),
	DRV(cuMemcpyAtoHAsync_v2),
	DRV(cuMemcpyAtoD_v2),
	DRV(cuMemcpyDtoA_v2),
	DRV(cuMemcpyAtoA_v2),
	DRV(cuMemcpy2D_v2),
	DRV(cuMemcpy2DUnaligned_v2),
	DRV(cuMemcpy2DAsync_v2),
	DRV(cuMemcpy3D_v2),
	DRV(cuMemcpy3DAsync_v2),
	DRV(cuMemcpyHtoA_v2),
	DRV(cuMemcpyHtoAAsync_v2),
	DRV(cuMemcpy),
	DRV(cuMemcpyAsync),
	DRV(cuLaunchKernel),
	DRV(cuMemcpyPeer),
	DRV(cuMemcpyPeerAsync),
	DRV(cuMemcpy3DPeer),
	DRV(cuMemcpy3DPeerAsync),
	DRV(cuMemcpyHtoD_v2_ptds),
	DRV(cuMemcpyDtoH_v2_ptds),
	DRV(cuMemcpyDtoD_v2_ptds),
	DRV(cuMemcpyDtoA_v2_ptds),
	DRV(cuMemcpyAtoD_v2_ptds),
	DRV(cuMemcpyHtoA_v2_ptds),
	DRV(cuMemcpyAtoH_v2_ptds),
	DRV(cuMemcpyAtoA_v2_ptds),
	DRV(cuMemcpy2D_v2_ptds),
	DRV(cuMemcpy2DUnaligned_v2_ptds),
	DRV(cuMemcpy3D_v2_ptds),
	DRV(cuMemcpy_ptds),
	DRV(cuMemcpyPeer_ptds),
	DRV(cuMemcpy3DPeer_ptds),
	DRV(cuMemsetD8_v2_ptds),
	DRV(cuMemsetD16_v2_ptds),
	DRV(cuMemsetD32_v2_ptds),
	DRV(cuMemsetD2D8_v2_ptds),
	DRV(cuMemsetD2D16_v2_ptds),
	DRV(cuMemsetD2D32_v2_ptds),
	DRV(cuMemcpyAsync_ptsz),
	DRV(cuMemcpyHtoAAsync_v2_ptsz),
	DRV(cuMemcpyAtoHAsync_v2_ptsz),
	DRV(cuMemcpyHtoDAsync_v2_ptsz),
	DRV(cuMemcpyDtoHAsync_v2_ptsz),
	DRV(cuMemcpyDtoDAsync_v2_ptsz),
	DRV(cuMemcpy2DAsync_v2_ptsz),
	DRV(cuMemcpy3DAsync_v2_ptsz),
	DRV(cuMemcpyPeerAsync_ptsz),
	DRV(cuMemcpy3DPeerAsync_ptsz),
	DRV(cuMemsetD8Async_ptsz),
	DRV(cuMemsetD16Async_ptsz),
	DRV(cuMemsetD32Async_ptsz),
	DRV(cuMemsetD2D8Async_ptsz),
	DRV(cuMemsetD2D16Async_ptsz),
	DRV(cuMemsetD2D32Async_ptsz),
	DRV(cuLaunchKernel_ptsz),
	DRV(cuLaunchCooperativeKernel),
	DRV(cuLaunchCooperativeKernel_ptsz),
	DRV(cuLaunchCooperativeKernelMultiDevice),
	DRV(cuGraphLaunch),
	DRV(cuGraphLaunch_ptsz),
	DRV(cuLaunchKernelEx),
	DRV(cuLaunchKernelEx_ptsz),
	DRV(cuMemcpyBatchAsync),
	DRV(cuMemcpyBatchAsync_ptsz),
	DRV(cuMemcpy3DBatchAsync),
	DRV(cuMemcpy3DBatchAsync_ptsz),
	DRV(cuMemcpyBatchAsync_v2),
	DRV(cuMemcpyBatchAsync_v2_ptsz),
	DRV(cuMemcpy3DBatchAsync_v2),
	DRV(cuMemcpy3DBatchAsync_v2_ptsz),
};
const size_t shim_cbid_driver_nr = sizeof(shim_cbid_driver) / sizeof(shim_cbid_driver[0]);

/* (domain, cbid) -> interned name, looked up once each. */
static _Atomic(struct shim_str *) names_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static _Atomic(struct shim_str *) names_driver[CUPTI_DRIVER_TRACE_CBID_SIZE];

static const char *table_name(const struct shim_cbid *t, size_t n, uint32_t cbid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].cbid == cbid)
			return t[i].name;
	return NULL;
}

/*
 * "cudaMemcpy_v3020" -> "cudaMemcpy": the tag names the CUDA version that added the entry
 * point; the "_v2" of the driver's cuMemcpyHtoD_v2 is part of the symbol and stays.
 */
static size_t untagged_len(const char *name)
{
	size_t len = strlen(name), i = len;

	while (i > 0 && isdigit((unsigned char)name[i - 1]))
		i--;
	if (len - i >= 4 && i >= 2 && name[i - 1] == 'v' && name[i - 2] == '_')
		return i - 2;
	return len;
}

struct shim_str *shim_cbid__name(uint32_t domain, uint32_t cbid)
{
	_Atomic(struct shim_str *) *slot = NULL;
	const char *name;
	char other[48];
	struct shim_str *s;

	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		slot = &names_runtime[cbid];
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		slot = &names_driver[cbid];
	s = slot ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
	if (s)
		return s;
	name = shim_cupti__callback_name(domain, cbid);
	if (!name && domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		name = table_name(shim_cbid_runtime, shim_cbid_runtime_nr, cbid);
	if (!name && domain == CUPTI_CB_DOMAIN_DRIVER_API)
		name = table_name(shim_cbid_driver, shim_cbid_driver_nr, cbid);
	if (!name) {
		snprintf(other, sizeof(other), "%s_cbid_%u",
			 domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime" : "driver", cbid);
		name = other;
	}
	s = shim_str__intern(name, untagged_len(name));
	if (slot)
		atomic_store_explicit(slot, s, memory_order_release);
	return s;
}
