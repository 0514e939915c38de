// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda family's API table: which runtime (libcudart) and driver (libcuda) functions are
 * probed, and for each its argument spec (args): what the BPF side captures and how the
 * decoder shows it. An entry's index is bs_ucall.fn in trace files: APPEND ONLY, never
 * reorder or remove.
 *
 * Symbols are the ones CUDA 13 exports (nm -D libcudart.so.13, stubs/libcuda.so) and that code
 * built against CUDA 13's headers calls: cuda.h #defines cuMemAlloc to cuMemAlloc_v2, so the
 * table has the _v2 symbol, not the unversioned 32-bit ABI of CUDA < 3.2. Older symbols that
 * binaries built with CUDA 10-12 still call are kept where their arguments differ visibly
 * (cuStreamBeginCapture, cuGraphInstantiate, the 12.8 batch copies). The per-thread default
 * stream variants (_ptds for synchronous copies and memsets, _ptsz for the rest, chosen by
 * --default-stream per-thread) follow their base entry.
 *
 * nvcc's <<<>>> in CUDA 13 calls __cudaLaunchKernel(cudaKernel_t handle, ...), a thunk that
 * tail-jumps to cudaLaunchKernel: the launch is recorded once, as cudaLaunchKernel, whose func
 * is then the handle that __cudaGetKernel(&handle, host_stub) returned earlier (ALIAS_OUT).
 *
 * args: the argument spec (the grammar is ucall_spec.h's, shared with nccl), in cuda_keys:
 *   kernel:fn func:fn name:fn|str handle grid/block(_x _y _z) shared_bytes
 *   dst src bytes value kind count ptr width height depth dst_device src_device dst_ctx
 *   src_ctx addr pool module library graph graph_exec mode flags ctx stream event
 *   (and grid:dim3 block:dim3, giving grid_x.. block_z). What the decoder makes of them
 *   (cuda_decode.c):
 *   kernel/func/name:fn: the function a launch or naming call refers to (a host address, or
 *   a handle named by an earlier call: CUDA_F_NAMES_OUT, CUDA_F_ALIAS_OUT);
 *   bytes: every bytes field multiplies into the "bytes" shown (width * height * elem size);
 *   kind: a cudaMemcpyKind word, or =HtoD =DtoH =DtoD =HtoH =default =PtoP =batch;
 *   src_mt dst_mt (CUmemorytype) give kind when there is no kind field, and choose what
 *   "src"/"dst" show among src (device), src_host and src_arr (array); without a memory type,
 *   a non-zero src_arr wins over src (cudaMemcpy3DParms).
 * Every spec is compiled and checked against its group and flags (cuda_api__check) when
 * bpfsight is built (tools/check_specs.c); tests/unit/test_cuda_report.c checks the symbols
 * against the libraries and the copy offsets against the CUDA headers (offsetof).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cuda_decode.h"

/* The table is aligned by hand: one function a line, its spec beside it. */
// clang-format off
#define A(n, grp, fl, a) { .name = n, .group = grp, .flags = (fl), .args = a }
/* A function and its per-thread default stream variant (SFX "_ptsz" or "_ptds"). */
#define A2(n, sfx, grp, fl, a) A(n, grp, fl, a), A(n sfx, grp, fl, a)
#define D(n, grp, fl, a) A(n, grp, CUDA_F_DRIVER | (fl), a)
#define D2(n, sfx, grp, fl, a) A2(n, sfx, grp, CUDA_F_DRIVER | (fl), a)

/* Launch config structs (cudaLaunchConfig_t, CUlaunchConfig: the same layout). */
#define LAUNCH_CFG "grid:dim3@0 block:dim3@12"
/* cudaMemcpy3DParms */
#define MEMCPY3D_RT "src_arr@0 src@32 dst_arr@64 dst@96 bytes@128 bytes@136 bytes@144 kind:u32@152"
/* cudaMemcpy3DPeerParms */
#define MEMCPY3D_PEER_RT                                                                           \
	"src_arr@0 src@32 src_device:s32@64 dst_arr@72 dst@104 dst_device:s32@136 bytes@144 "     \
	"bytes@152 bytes@160 kind=PtoP"
/* CUDA_MEMCPY2D */
#define MEMCPY2D_DRV                                                                               \
	"src_mt:u32@16 src_host@24 src@32 src_arr@40 dst_mt:u32@72 dst_host@80 dst@88 "           \
	"dst_arr@96 bytes@112 bytes@120"
/* CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER (200 bytes): the copy starts at srcMemoryType (+32). */
#define MEMCPY3D_DRV                                                                               \
	"src_mt:u32@32 src_host@40 src@48 src_arr@56 dst_mt:u32@120 dst_host@128 dst@136 "        \
	"dst_arr@144 bytes@176 bytes@184 bytes@192"
#define MEMCPY3D_PEER_DRV MEMCPY3D_DRV " src_ctx@64 dst_ctx@152 kind=PtoP"
/* cudaMemset3D's by-value cudaPitchedPtr (32 bytes, 4 stack words) and cudaExtent (3). */
#define MEMSET3D_RT "dst@0 bytes@32 bytes@40 bytes@48"

#define RT_LAUNCH "kernel:fn grid:dim3 block:dim3 - shared_bytes stream"
#define DRV_LAUNCH                                                                                 \
	"kernel:fn grid_x:u32 grid_y:u32 grid_z:u32 block_x:u32 block_y:u32 block_z:u32 "         \
	"shared_bytes:u32 stream -"

static const struct ucall_api cuda_apis[] = {
	/* Runtime: launches. */
	A2("cudaLaunchKernel", "_ptsz", CUDA_GRP_LAUNCH, CUDA_F_RT_LAUNCH, RT_LAUNCH),
	A2("cudaLaunchCooperativeKernel", "_ptsz", CUDA_GRP_LAUNCH, CUDA_F_RT_LAUNCH, RT_LAUNCH),
	A2("cudaLaunchKernelExC", "_ptsz", CUDA_GRP_LAUNCH, CUDA_F_RT_LAUNCH,
	   "&- kernel:fn - " LAUNCH_CFG " shared_bytes@24 stream@32"),
	A2("cudaLaunchHostFunc", "_ptsz", CUDA_GRP_LAUNCH, CUDA_F_RT_LAUNCH, "stream func:fn -"),

	/* Runtime: graphs and stream capture. */
	A2("cudaGraphLaunch", "_ptsz", CUDA_GRP_GRAPH, CUDA_F_RT_LAUNCH, "graph_exec stream"),
	A2("cudaStreamBeginCapture", "_ptsz", CUDA_GRP_GRAPH, 0, "stream mode:u32"),
	A2("cudaStreamBeginCaptureToGraph", "_ptsz", CUDA_GRP_GRAPH, 0,
	   "stream graph - - - mode:u32"),
	A2("cudaStreamEndCapture", "_ptsz", CUDA_GRP_GRAPH, 0, "stream *graph"),
	A("cudaGraphInstantiate", CUDA_GRP_GRAPH, 0, "*graph_exec graph flags"),
	A("cudaGraphInstantiateWithFlags", CUDA_GRP_GRAPH, 0, "*graph_exec graph flags"),
	A2("cudaGraphInstantiateWithParams", "_ptsz", CUDA_GRP_GRAPH, 0, "*graph_exec graph -"),

	/* Runtime: copies. */
	A2("cudaMemcpy", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src bytes kind:u32"),
	A2("cudaMemcpyAsync", "_ptsz", CUDA_GRP_MEMCPY, 0, "dst src bytes kind:u32 stream"),
	A2("cudaMemcpy2D", "_ptds", CUDA_GRP_MEMCPY, 0, "dst - src - bytes bytes kind:u32"),
	A2("cudaMemcpy2DAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst - src - bytes bytes kind:u32 stream"),
	A2("cudaMemcpy2DToArray", "_ptds", CUDA_GRP_MEMCPY, 0,
	   "dst - - src - bytes bytes kind:u32"),
	A2("cudaMemcpy2DToArrayAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst - - src - bytes bytes kind:u32 stream"),
	A2("cudaMemcpy2DFromArray", "_ptds", CUDA_GRP_MEMCPY, 0,
	   "dst - src - - bytes bytes kind:u32"),
	A2("cudaMemcpy2DFromArrayAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst - src - - bytes bytes kind:u32 stream"),
	A2("cudaMemcpy2DArrayToArray", "_ptds", CUDA_GRP_MEMCPY, 0,
	   "dst - - src - - bytes bytes kind:u32"),
	A2("cudaMemcpyToArray", "_ptds", CUDA_GRP_MEMCPY, 0, "dst - - src bytes kind:u32"),
	A2("cudaMemcpyToArrayAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst - - src bytes kind:u32 stream"),
	A2("cudaMemcpyFromArray", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src - - bytes kind:u32"),
	A2("cudaMemcpyFromArrayAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst src - - bytes kind:u32 stream"),
	A2("cudaMemcpyArrayToArray", "_ptds", CUDA_GRP_MEMCPY, 0,
	   "dst - - src - - bytes kind:u32"),
	/* The symbol's host address stands for the device variable. */
	A2("cudaMemcpyToSymbol", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src bytes - kind:u32"),
	A2("cudaMemcpyToSymbolAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst src bytes - kind:u32 stream"),
	A2("cudaMemcpyFromSymbol", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src bytes - kind:u32"),
	A2("cudaMemcpyFromSymbolAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst src bytes - kind:u32 stream"),
	A("cudaMemcpyPeer", CUDA_GRP_MEMCPY, 0,
	  "dst dst_device:s32 src src_device:s32 bytes kind=PtoP"),
	A("cudaMemcpyPeerAsync", CUDA_GRP_MEMCPY, 0,
	  "dst dst_device:s32 src src_device:s32 bytes stream kind=PtoP"),
	A2("cudaMemcpy3D", "_ptds", CUDA_GRP_MEMCPY, 0, "&- " MEMCPY3D_RT),
	A2("cudaMemcpy3DAsync", "_ptsz", CUDA_GRP_MEMCPY, 0, "&- stream " MEMCPY3D_RT),
	A2("cudaMemcpy3DPeer", "_ptds", CUDA_GRP_MEMCPY, 0, "&- " MEMCPY3D_PEER_RT),
	A2("cudaMemcpy3DPeerAsync", "_ptsz", CUDA_GRP_MEMCPY, 0, "&- stream " MEMCPY3D_PEER_RT),
	/* Batches: the sizes are in arrays the probe does not read. */
	A2("cudaMemcpyBatchAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "- - - count - - - stream kind=batch"),
	A2("cudaMemcpy3DBatchAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "count - flags stream kind=batch"),

	/* Runtime: memsets. */
	A2("cudaMemset", "_ptds", CUDA_GRP_MEMSET, 0, "dst value:s32 bytes"),
	A2("cudaMemsetAsync", "_ptsz", CUDA_GRP_MEMSET, 0, "dst value:s32 bytes stream"),
	A2("cudaMemset2D", "_ptds", CUDA_GRP_MEMSET, 0, "dst - value:s32 bytes bytes"),
	A2("cudaMemset2DAsync", "_ptsz", CUDA_GRP_MEMSET, 0,
	   "dst - value:s32 bytes bytes stream"),
	A2("cudaMemset3D", "_ptds", CUDA_GRP_MEMSET, 0, "-!4 value:s32 -!3 " MEMSET3D_RT),
	A2("cudaMemset3DAsync", "_ptsz", CUDA_GRP_MEMSET, 0, "-!4 value:s32 -!3 stream " MEMSET3D_RT),

	/* Runtime: allocations. */
	A("cudaMalloc", CUDA_GRP_ALLOC, 0, "*ptr bytes"),
	A("cudaMallocHost", CUDA_GRP_ALLOC, 0, "*ptr bytes"),
	A("cudaHostAlloc", CUDA_GRP_ALLOC, 0, "*ptr bytes flags:u32"),
	A("cudaMallocManaged", CUDA_GRP_ALLOC, 0, "*ptr bytes flags:u32"),
	A2("cudaMallocAsync", "_ptsz", CUDA_GRP_ALLOC, 0, "*ptr bytes stream"),
	A2("cudaMallocFromPoolAsync", "_ptsz", CUDA_GRP_ALLOC, 0, "*ptr bytes pool stream"),
	/* width * height: the pitch the call chose is not seen. */
	A("cudaMallocPitch", CUDA_GRP_ALLOC, 0, "*ptr - bytes bytes"),
	/* out = cudaPitchedPtr.ptr; the cudaExtent is passed in stack words. */
	A("cudaMalloc3D", CUDA_GRP_ALLOC, 0, "*ptr - - - - - bytes bytes bytes"),
	/* Arrays: sizes in elements of the channel format the probe does not read. */
	A("cudaMallocArray", CUDA_GRP_ALLOC, 0, "*ptr - width height flags:u32"),
	A("cudaMalloc3DArray", CUDA_GRP_ALLOC, 0, "*ptr - flags:u32 - - - width height depth"),
	A("cudaHostRegister", CUDA_GRP_ALLOC, 0, "ptr bytes flags:u32"),

	/* Runtime: frees. */
	A("cudaFree", CUDA_GRP_FREE, 0, "ptr"),
	A("cudaFreeHost", CUDA_GRP_FREE, 0, "ptr"),
	A2("cudaFreeAsync", "_ptsz", CUDA_GRP_FREE, 0, "ptr stream"),
	A("cudaFreeArray", CUDA_GRP_FREE, 0, "ptr"),
	A("cudaHostUnregister", CUDA_GRP_FREE, 0, "ptr"),

	/* Runtime: synchronization. */
	A("cudaDeviceSynchronize", CUDA_GRP_SYNC, 0, ""),
	A2("cudaStreamSynchronize", "_ptsz", CUDA_GRP_SYNC, 0, "stream"),
	A("cudaEventSynchronize", CUDA_GRP_SYNC, 0, "event"),
	A2("cudaStreamWaitEvent", "_ptsz", CUDA_GRP_SYNC, 0, "stream event flags:u32"),
	A2("cudaEventRecord", "_ptsz", CUDA_GRP_SYNC, 0, "event stream"),
	A2("cudaEventRecordWithFlags", "_ptsz", CUDA_GRP_SYNC, 0, "event stream flags:u32"),
	A("cudaEventQuery", CUDA_GRP_SYNC, 0, "event"),
	A2("cudaStreamQuery", "_ptsz", CUDA_GRP_SYNC, 0, "stream"),

	/* Runtime: profiler range. */
	A("cudaProfilerStart", CUDA_GRP_PROFILER, CUDA_F_PROFILER_START, ""),
	A("cudaProfilerStop", CUDA_GRP_PROFILER, CUDA_F_PROFILER_STOP, ""),

	/* Runtime: functions that name handles. */
	A("cudaGetFuncBySymbol", CUDA_GRP_MODULE, CUDA_F_ALIAS_OUT, "*handle name:fn"),
	A("cudaGetKernel", CUDA_GRP_MODULE, CUDA_F_ALIAS_OUT, "*handle name:fn"),
	/* What nvcc's launch stubs call once per kernel (see the top of this file). */
	A("__cudaGetKernel", CUDA_GRP_MODULE, CUDA_F_ALIAS_OUT, "*handle name:fn"),
	A("cudaLibraryGetKernel", CUDA_GRP_MODULE, CUDA_F_NAMES_OUT, "*handle library &name:str"),

	/* Driver: launches. */
	D2("cuLaunchKernel", "_ptsz", CUDA_GRP_LAUNCH, CUDA_F_DRV_LAUNCH, DRV_LAUNCH " -"),
	D2("cuLaunchCooperativeKernel", "_ptsz", CUDA_GRP_LAUNCH, CUDA_F_DRV_LAUNCH, DRV_LAUNCH),
	D2("cuLaunchKernelEx", "_ptsz", CUDA_GRP_LAUNCH, CUDA_F_DRV_LAUNCH,
	   "&- kernel:fn - - " LAUNCH_CFG " shared_bytes:u32@24 stream@32"),
	D2("cuLaunchHostFunc", "_ptsz", CUDA_GRP_LAUNCH, CUDA_F_DRV_LAUNCH, "stream func:fn -"),

	/* Driver: graphs and stream capture. */
	D2("cuGraphLaunch", "_ptsz", CUDA_GRP_GRAPH, CUDA_F_DRV_LAUNCH, "graph_exec stream"),
	/* The unversioned symbol is CUDA 10.0's, without the mode. */
	D2("cuStreamBeginCapture", "_ptsz", CUDA_GRP_GRAPH, 0, "stream"),
	D2("cuStreamBeginCapture_v2", "_ptsz", CUDA_GRP_GRAPH, 0, "stream mode:u32"),
	D2("cuStreamBeginCaptureToGraph", "_ptsz", CUDA_GRP_GRAPH, 0,
	   "stream graph - - - mode:u32"),
	D2("cuStreamEndCapture", "_ptsz", CUDA_GRP_GRAPH, 0, "stream *graph"),
	D("cuGraphInstantiateWithFlags", CUDA_GRP_GRAPH, 0, "*graph_exec graph flags"),
	D2("cuGraphInstantiateWithParams", "_ptsz", CUDA_GRP_GRAPH, 0, "*graph_exec graph -"),
	/* CUDA 11's cuGraphInstantiate (error node, log buffer): what older binaries call. */
	D("cuGraphInstantiate", CUDA_GRP_GRAPH, 0, "*graph_exec graph - - -"),
	D("cuGraphInstantiate_v2", CUDA_GRP_GRAPH, 0, "*graph_exec graph - - -"),

	/* Driver: copies. Arrays are device memory for the direction. */
	D2("cuMemcpy", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src bytes kind=default"),
	D2("cuMemcpyAsync", "_ptsz", CUDA_GRP_MEMCPY, 0, "dst src bytes stream kind=default"),
	D2("cuMemcpyHtoD_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src bytes kind=HtoD"),
	D2("cuMemcpyDtoH_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src bytes kind=DtoH"),
	D2("cuMemcpyDtoD_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src bytes kind=DtoD"),
	D2("cuMemcpyHtoDAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0, "dst src bytes stream kind=HtoD"),
	D2("cuMemcpyDtoHAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0, "dst src bytes stream kind=DtoH"),
	D2("cuMemcpyDtoDAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0, "dst src bytes stream kind=DtoD"),
	D2("cuMemcpyDtoA_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "dst - src bytes kind=DtoD"),
	D2("cuMemcpyAtoD_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src - bytes kind=DtoD"),
	D2("cuMemcpyHtoA_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "dst - src bytes kind=HtoD"),
	D2("cuMemcpyAtoH_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "dst src - bytes kind=DtoH"),
	D2("cuMemcpyAtoA_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "dst - src - bytes kind=DtoD"),
	D2("cuMemcpyHtoAAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst - src bytes stream kind=HtoD"),
	D2("cuMemcpyAtoHAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst src - bytes stream kind=DtoH"),
	D2("cuMemcpy2D_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "&- " MEMCPY2D_DRV),
	D2("cuMemcpy2DUnaligned_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "&- " MEMCPY2D_DRV),
	D2("cuMemcpy2DAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0, "&- stream " MEMCPY2D_DRV),
	D2("cuMemcpy3D_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "&- " MEMCPY3D_DRV),
	D2("cuMemcpy3DAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0, "&- stream " MEMCPY3D_DRV),
	D2("cuMemcpyPeer", "_ptds", CUDA_GRP_MEMCPY, 0, "dst dst_ctx src src_ctx bytes kind=PtoP"),
	D2("cuMemcpyPeerAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst dst_ctx src src_ctx bytes stream kind=PtoP"),
	D2("cuMemcpy3DPeer", "_ptds", CUDA_GRP_MEMCPY, 0, "&- " MEMCPY3D_PEER_DRV),
	D2("cuMemcpy3DPeerAsync", "_ptsz", CUDA_GRP_MEMCPY, 0, "&- stream " MEMCPY3D_PEER_DRV),
	D2("cuMemcpyBatchAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "- - - count - - - stream kind=batch"),
	D2("cuMemcpy3DBatchAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "count - flags stream kind=batch"),
	/* CUDA 12.8's batch copies, with failIdx. */
	D2("cuMemcpyBatchAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "- - - count - - - - stream kind=batch"),
	D2("cuMemcpy3DBatchAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "count - - flags stream kind=batch"),

	/* Driver: memsets; N and Width count elements of 1, 2 or 4 bytes. */
	D2("cuMemsetD8_v2", "_ptds", CUDA_GRP_MEMSET, 0, "dst value:u8 bytes"),
	D2("cuMemsetD16_v2", "_ptds", CUDA_GRP_MEMSET, 0, "dst value:u16 bytes bytes=2"),
	D2("cuMemsetD32_v2", "_ptds", CUDA_GRP_MEMSET, 0, "dst value:u32 bytes bytes=4"),
	D2("cuMemsetD2D8_v2", "_ptds", CUDA_GRP_MEMSET, 0, "dst - value:u8 bytes bytes"),
	D2("cuMemsetD2D16_v2", "_ptds", CUDA_GRP_MEMSET, 0,
	   "dst - value:u16 bytes bytes bytes=2"),
	D2("cuMemsetD2D32_v2", "_ptds", CUDA_GRP_MEMSET, 0,
	   "dst - value:u32 bytes bytes bytes=4"),
	D2("cuMemsetD8Async", "_ptsz", CUDA_GRP_MEMSET, 0, "dst value:u8 bytes stream"),
	D2("cuMemsetD16Async", "_ptsz", CUDA_GRP_MEMSET, 0, "dst value:u16 bytes stream bytes=2"),
	D2("cuMemsetD32Async", "_ptsz", CUDA_GRP_MEMSET, 0, "dst value:u32 bytes stream bytes=4"),
	D2("cuMemsetD2D8Async", "_ptsz", CUDA_GRP_MEMSET, 0,
	   "dst - value:u8 bytes bytes stream"),
	D2("cuMemsetD2D16Async", "_ptsz", CUDA_GRP_MEMSET, 0,
	   "dst - value:u16 bytes bytes stream bytes=2"),
	D2("cuMemsetD2D32Async", "_ptsz", CUDA_GRP_MEMSET, 0,
	   "dst - value:u32 bytes bytes stream bytes=4"),

	/* Driver: allocations and frees. */
	D("cuMemAlloc_v2", CUDA_GRP_ALLOC, 0, "*ptr bytes"),
	D("cuMemAllocHost_v2", CUDA_GRP_ALLOC, 0, "*ptr bytes"),
	D("cuMemHostAlloc", CUDA_GRP_ALLOC, 0, "*ptr bytes flags:u32"),
	D("cuMemAllocManaged", CUDA_GRP_ALLOC, 0, "*ptr bytes flags:u32"),
	D2("cuMemAllocAsync", "_ptsz", CUDA_GRP_ALLOC, 0, "*ptr bytes stream"),
	D2("cuMemAllocFromPoolAsync", "_ptsz", CUDA_GRP_ALLOC, 0, "*ptr bytes pool stream"),
	D("cuMemAllocPitch_v2", CUDA_GRP_ALLOC, 0, "*ptr - bytes bytes -"),
	D("cuMemHostRegister_v2", CUDA_GRP_ALLOC, 0, "ptr bytes flags:u32"),
	/* Virtual memory management (PyTorch's expandable segments): handle = physical memory. */
	D("cuMemCreate", CUDA_GRP_ALLOC, 0, "*handle bytes - flags"),
	D("cuMemFree_v2", CUDA_GRP_FREE, 0, "ptr"),
	D("cuMemFreeHost", CUDA_GRP_FREE, 0, "ptr"),
	D2("cuMemFreeAsync", "_ptsz", CUDA_GRP_FREE, 0, "ptr stream"),
	D("cuMemHostUnregister", CUDA_GRP_FREE, 0, "ptr"),
	D("cuMemRelease", CUDA_GRP_FREE, 0, "handle"),
	D("cuMemAddressReserve", CUDA_GRP_OTHER, 0, "*ptr bytes - addr flags"),
	D("cuMemAddressFree", CUDA_GRP_OTHER, 0, "ptr bytes"),
	D("cuMemMap", CUDA_GRP_OTHER, 0, "ptr bytes - handle flags"),
	D("cuMemUnmap", CUDA_GRP_OTHER, 0, "ptr bytes"),

	/* Driver: synchronization. */
	D("cuCtxSynchronize", CUDA_GRP_SYNC, 0, ""),
	D("cuCtxSynchronize_v2", CUDA_GRP_SYNC, 0, "ctx"),
	D2("cuStreamSynchronize", "_ptsz", CUDA_GRP_SYNC, 0, "stream"),
	D("cuEventSynchronize", CUDA_GRP_SYNC, 0, "event"),
	D2("cuStreamWaitEvent", "_ptsz", CUDA_GRP_SYNC, 0, "stream event flags:u32"),
	D2("cuEventRecord", "_ptsz", CUDA_GRP_SYNC, 0, "event stream"),
	D2("cuEventRecordWithFlags", "_ptsz", CUDA_GRP_SYNC, 0, "event stream flags:u32"),
	D("cuEventQuery", CUDA_GRP_SYNC, 0, "event"),
	D2("cuStreamQuery", "_ptsz", CUDA_GRP_SYNC, 0, "stream"),

	/* Driver: profiler range. */
	D("cuProfilerStart", CUDA_GRP_PROFILER, CUDA_F_PROFILER_START, ""),
	D("cuProfilerStop", CUDA_GRP_PROFILER, CUDA_F_PROFILER_STOP, ""),

	/* Driver: functions that name handles. */
	D("cuModuleGetFunction", CUDA_GRP_MODULE, CUDA_F_NAMES_OUT, "*handle module &name:str"),
	D("cuLibraryGetKernel", CUDA_GRP_MODULE, CUDA_F_NAMES_OUT, "*handle library &name:str"),
	D("cuKernelGetFunction", CUDA_GRP_MODULE, CUDA_F_ALIAS_OUT, "*handle name:fn"),
	/* Append new entries here: the index of an entry is in trace files. */
};
// clang-format on

const char *const cuda_kind_names[KIND_NR] = {
	"HtoH", "HtoD", "DtoH", "DtoD", "default", "PtoP", "batch", "unknown",
};

#define INTS UCALL_T_INTS
/* What cuda specs may name: integers are u64 unless the spec says otherwise. */
const struct ucall_key cuda_keys[K_NR] = {
	[K_KERNEL] = { "kernel", 1u << UCALL_T_FN },
	[K_FUNC] = { "func", 1u << UCALL_T_FN },
	[K_NAME] = { "name", 1u << UCALL_T_FN | 1u << UCALL_T_STR },
	[K_HANDLE] = { "handle", INTS },
	[K_GRID_X] = { "grid_x", INTS },
	[K_GRID_Y] = { "grid_y", INTS },
	[K_GRID_Z] = { "grid_z", INTS },
	[K_BLOCK_X] = { "block_x", INTS },
	[K_BLOCK_Y] = { "block_y", INTS },
	[K_BLOCK_Z] = { "block_z", INTS },
	[K_SHARED_BYTES] = { "shared_bytes", INTS },
	[K_DST] = { "dst", INTS },
	[K_DST_DEVICE] = { "dst_device", INTS },
	[K_DST_CTX] = { "dst_ctx", INTS },
	[K_SRC] = { "src", INTS },
	[K_SRC_DEVICE] = { "src_device", INTS },
	[K_SRC_CTX] = { "src_ctx", INTS },
	[K_BYTES] = { "bytes", INTS, .repeat = 1 },
	[K_VALUE] = { "value", INTS },
	[K_KIND] = { "kind", INTS, .values = cuda_kind_names, .nvalues = KIND_NR },
	[K_COUNT] = { "count", INTS },
	[K_PTR] = { "ptr", INTS },
	[K_WIDTH] = { "width", INTS },
	[K_HEIGHT] = { "height", INTS },
	[K_DEPTH] = { "depth", INTS },
	[K_ADDR] = { "addr", INTS },
	[K_POOL] = { "pool", INTS },
	[K_MODULE] = { "module", INTS },
	[K_LIBRARY] = { "library", INTS },
	[K_GRAPH] = { "graph", INTS },
	[K_GRAPH_EXEC] = { "graph_exec", INTS },
	[K_MODE] = { "mode", INTS },
	[K_FLAGS] = { "flags", INTS },
	[K_CTX] = { "ctx", INTS },
	[K_STREAM] = { "stream", INTS },
	[K_EVENT] = { "event", INTS },
	[K_GRID] = { "grid", 1u << UCALL_T_DIM3 },
	[K_BLOCK] = { "block", 1u << UCALL_T_DIM3 },
	[K_SRC_MT] = { "src_mt", INTS },
	[K_DST_MT] = { "dst_mt", INTS },
	[K_SRC_HOST] = { "src_host", INTS },
	[K_DST_HOST] = { "dst_host", INTS },
	[K_SRC_ARR] = { "src_arr", INTS },
	[K_DST_ARR] = { "dst_arr", INTS },
};

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* What the recorder and the reports rely on beyond the grammar, per entry. */
static int cuda_api__check(const struct ucall_api *a, const struct ucall_spec *s, char *err,
			   size_t len)
{
	int driver = starts_with(a->name, "cu") && !starts_with(a->name, "cuda");
	int profiler = !!(a->flags & (CUDA_F_PROFILER_START | CUDA_F_PROFILER_STOP));
	int has_str = s->copy_mode == BS_DEREF_STRING;
	int launch = a->group == CUDA_GRP_LAUNCH || starts_with(a->name, "cudaGraphLaunch") ||
		     starts_with(a->name, "cuGraphLaunch");
	int side = !launch ? 0 : driver ? CUDA_F_DRV_LAUNCH : CUDA_F_RT_LAUNCH;

	if (!driver && !starts_with(a->name, "cuda") && !starts_with(a->name, "__cuda"))
		return fail(err, len, "neither runtime nor driver name");
	if (driver != !!(a->flags & CUDA_F_DRIVER))
		return fail(err, len, "CUDA_F_DRIVER does not match the name");
	if (profiler != (a->group == CUDA_GRP_PROFILER) ||
	    (a->flags & CUDA_F_PROFILER_START && a->flags & CUDA_F_PROFILER_STOP))
		return fail(err, len, "profiler flags and group disagree");
	if (!!(a->flags & CUDA_F_NAMES_OUT) !=
	    (ucall_spec__has(s, K_NAME) && has_str && s->out_word >= 0))
		return fail(err, len, "CUDA_F_NAMES_OUT needs *handle and &name:str, and back");
	if (!!(a->flags & CUDA_F_ALIAS_OUT) !=
	    (ucall_spec__has(s, K_NAME) && s->fn_word >= 0 && s->out_word >= 0))
		return fail(err, len, "CUDA_F_ALIAS_OUT needs *handle and name:fn, and back");
	if ((a->flags & (CUDA_F_NAMES_OUT | CUDA_F_ALIAS_OUT)) && a->group != CUDA_GRP_MODULE)
		return fail(err, len, "naming functions belong to CUDA_GRP_MODULE");
	/* Every launch and graph launch is a side of the pair (one probe pair per launch). */
	if ((a->flags & (CUDA_F_RT_LAUNCH | CUDA_F_DRV_LAUNCH)) != side)
		return fail(err, len, "a launch is CUDA_F_RT_LAUNCH, a driver one _DRV_LAUNCH");
	switch (a->group) {
	case CUDA_GRP_LAUNCH:
		if (ucall_spec__has(s, K_FUNC))
			break;
		if (!ucall_spec__has(s, K_KERNEL) || !ucall_spec__has(s, K_STREAM) ||
		    !ucall_spec__has(s, K_SHARED_BYTES) ||
		    !(ucall_spec__has(s, K_GRID) ||
		      (ucall_spec__has(s, K_GRID_X) && ucall_spec__has(s, K_GRID_Y) &&
		       ucall_spec__has(s, K_GRID_Z))) ||
		    !(ucall_spec__has(s, K_BLOCK) ||
		      (ucall_spec__has(s, K_BLOCK_X) && ucall_spec__has(s, K_BLOCK_Y) &&
		       ucall_spec__has(s, K_BLOCK_Z))))
			return fail(err, len,
				    "a launch needs kernel, grid, block, shared_bytes and stream");
		break;
	case CUDA_GRP_MEMCPY:
		if (!ucall_spec__has(s, K_KIND) &&
		    !(ucall_spec__has(s, K_SRC_MT) && ucall_spec__has(s, K_DST_MT)))
			return fail(err, len, "a copy needs a kind or memory types");
		if (!ucall_spec__has(s, K_COUNT) &&
		    !(ucall_spec__has(s, K_BYTES) && ucall_spec__has(s, K_DST) &&
		      ucall_spec__has(s, K_SRC)))
			return fail(err, len, "a copy needs dst, src and bytes");
		break;
	case CUDA_GRP_MEMSET:
		if (!ucall_spec__has(s, K_DST) || !ucall_spec__has(s, K_BYTES) ||
		    !ucall_spec__has(s, K_VALUE))
			return fail(err, len, "a memset needs dst, value and bytes");
		break;
	case CUDA_GRP_ALLOC:
		if (!ucall_spec__has(s, K_BYTES) && !ucall_spec__has(s, K_WIDTH))
			return fail(err, len, "an allocation needs a size");
		break;
	default:
		break;
	}
	return 0;
}

static struct ucall_spec *cuda_compiled;

/* Where the CUDA runtime and driver usually live: -a probes them up front. */
static const char *const cuda_well_known[] = {
	"/usr/local/cuda*/lib64/libcudart.so*",
	"/usr/local/cuda*/targets/*/lib/libcudart.so*",
	"/usr/lib/x86_64-linux-gnu/lib{cuda,cudart}.so*",
	"/usr/lib64/lib{cuda,cudart}.so*",
	"/opt/conda/lib/libcudart.so*",
	"/usr/{local/,}lib/python3*/{dist,site}-packages/nvidia/*/lib/libcudart.so*",
	"/opt/conda/lib/python3*/site-packages/nvidia/*/lib/libcudart.so*",
	NULL,
};

const struct ucall_table cuda_table = {
	.family = "cuda",
	.rec_type = BS_REC_CUDA_CALL,
	.loss_depth = BS_LOSS_CUDA_DEPTH,
	.well_known = cuda_well_known,
	.apis = cuda_apis,
	.napis = sizeof(cuda_apis) / sizeof(cuda_apis[0]),
	.keys = cuda_keys,
	.nkeys = K_NR,
	.check = cuda_api__check,
	.compiled = &cuda_compiled,
	.strref_prefix = "cuda", /* the runtime's entry points, in cuBLAS, cuDNN, NCCL... */
	.wraps_flag = CUDA_F_RT_LAUNCH,
	.wrapped_flag = CUDA_F_DRV_LAUNCH,
};
