// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cuda family's API table: which runtime (libcudart) and driver (libcuda) functions are
 * probed, what the BPF side captures for each (deref, out) and how the decoder shows them
 * (args). An entry's index is bs_ucall.fn in trace files: APPEND ONLY, never reorder or remove.
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
 * args: the arguments the decoder shows, as space-separated fields.
 *   -            skip one argument word
 *   KEY[:TYPE]   the next argument word(s): args[0..5] = rdi rsi rdx rcx r8 r9, args[6..11] =
 *                the stack words (x86-64 SysV: a struct of <= 16 bytes by value takes one or
 *                two words, a larger one is passed in stack words)
 *   *KEY         the next argument word is the out pointer (out_arg must be its index + 1):
 *                KEY shows bs_ucall.out, only when the call returned 0
 *   KEY[:TYPE]@N N bytes into the deref copy (deref_arg / deref_off8); takes no word
 *   KEY=VALUE    a constant: a number, or a direction for `kind`
 * TYPE: u64 (default), u32, s32, u16, u8 (the word's low bits, or that many deref bytes);
 *   dim3 (two words x | y << 32 and z, or 12 deref bytes; gives KEY_x, KEY_y, KEY_z);
 *   fn (a kernel, host function or handle, shown by name: CUDA_F_FUNC_ARG points at it);
 *   str (the NUL-terminated deref string, @0 only). A deref_arg word is listed like any
 *   other, by its key or by '-' ("*handle module - name:str@0": the name pointer is word 2).
 * KEYs and what the decoder makes of them (cuda_report.c):
 *   kernel:fn func:fn name:fn|str handle grid/block(_x _y _z) shared_bytes
 *   dst src bytes value kind count ptr width height depth dst_device src_device dst_ctx
 *   src_ctx addr pool module library graph graph_exec mode flags ctx stream event
 *   bytes: every bytes field multiplies into the "bytes" shown (width * height * elem size);
 *   kind: a cudaMemcpyKind word, or =HtoD =DtoH =DtoD =HtoH =default =PtoP =batch;
 *   src_mt dst_mt (CUmemorytype) give kind when there is no kind field, and choose what
 *   "src"/"dst" show among src (device), src_host and src_arr (array); without a memory type,
 *   a non-zero src_arr wins over src (cudaMemcpy3DParms).
 * tests/unit/test_cuda_report.c checks every string, its consistency with deref/out/flags, the
 * symbols against the libraries, and the deref offsets against the CUDA headers (offsetof).
 */
#include "cuda.h"

/* The table is aligned by hand: one function a line, its spec beside it. */
// clang-format off
#define A(n, grp, fl, a, ...) { .name = n, .group = grp, .flags = (fl), .args = a, __VA_ARGS__ }
/* A function and its per-thread default stream variant (SFX "_ptsz" or "_ptds"). */
#define A2(n, sfx, grp, fl, a, ...) A(n, grp, fl, a, __VA_ARGS__), A(n sfx, grp, fl, a, __VA_ARGS__)
#define D(n, grp, fl, a, ...) A(n, grp, CUDA_F_DRIVER | (fl), a, __VA_ARGS__)
#define D2(n, sfx, grp, fl, a, ...) A2(n, sfx, grp, CUDA_F_DRIVER | (fl), a, __VA_ARGS__)

#define OUT(i1)		     .out_arg = (i1)
#define DEREF(i1, off8)	     .deref_arg = (i1), .deref_off8 = (off8), .deref_mode = BS_DEREF_STRUCT
#define DEREF_STR(i1)	     .deref_arg = (i1), .deref_mode = BS_DEREF_STRING
#define DEREF_STACK	     DEREF(BS_DEREF_ARG_STACK, 0)

#define FN0 CUDA_F_FUNC_ARG(0)
#define FN1 CUDA_F_FUNC_ARG(1)

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
/* CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER (200 bytes) copied from +32 (deref_off8 4). */
#define MEMCPY3D_DRV                                                                               \
	"src_mt:u32@0 src_host@8 src@16 src_arr@24 dst_mt:u32@88 dst_host@96 dst@104 "            \
	"dst_arr@112 bytes@144 bytes@152 bytes@160"
#define MEMCPY3D_PEER_DRV MEMCPY3D_DRV " src_ctx@32 dst_ctx@120 kind=PtoP"
/* cudaMemset3D's by-value cudaPitchedPtr (32 bytes) and cudaExtent, in stack words. */
#define MEMSET3D_RT "dst@0 bytes@32 bytes@40 bytes@48"

#define RT_LAUNCH "kernel:fn grid:dim3 block:dim3 - shared_bytes stream"
#define DRV_LAUNCH                                                                                 \
	"kernel:fn grid_x:u32 grid_y:u32 grid_z:u32 block_x:u32 block_y:u32 block_z:u32 "         \
	"shared_bytes:u32 stream -"

static const struct ucall_api cuda_apis[] = {
	/* Runtime: launches. */
	A2("cudaLaunchKernel", "_ptsz", CUDA_GRP_LAUNCH, FN0, RT_LAUNCH),
	A2("cudaLaunchCooperativeKernel", "_ptsz", CUDA_GRP_LAUNCH, FN0, RT_LAUNCH),
	A2("cudaLaunchKernelExC", "_ptsz", CUDA_GRP_LAUNCH, FN1,
	   "- kernel:fn - " LAUNCH_CFG " shared_bytes@24 stream@32", DEREF(1, 0)),
	A2("cudaLaunchHostFunc", "_ptsz", CUDA_GRP_LAUNCH, FN1, "stream func:fn -"),

	/* Runtime: graphs and stream capture. */
	A2("cudaGraphLaunch", "_ptsz", CUDA_GRP_GRAPH, 0, "graph_exec stream"),
	A2("cudaStreamBeginCapture", "_ptsz", CUDA_GRP_GRAPH, 0, "stream mode:u32"),
	A2("cudaStreamBeginCaptureToGraph", "_ptsz", CUDA_GRP_GRAPH, 0,
	   "stream graph - - - mode:u32"),
	A2("cudaStreamEndCapture", "_ptsz", CUDA_GRP_GRAPH, 0, "stream *graph", OUT(2)),
	A("cudaGraphInstantiate", CUDA_GRP_GRAPH, 0, "*graph_exec graph flags", OUT(1)),
	A("cudaGraphInstantiateWithFlags", CUDA_GRP_GRAPH, 0, "*graph_exec graph flags", OUT(1)),
	A2("cudaGraphInstantiateWithParams", "_ptsz", CUDA_GRP_GRAPH, 0, "*graph_exec graph -",
	   OUT(1)),

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
	A2("cudaMemcpy3D", "_ptds", CUDA_GRP_MEMCPY, 0, "- " MEMCPY3D_RT, DEREF(1, 0)),
	A2("cudaMemcpy3DAsync", "_ptsz", CUDA_GRP_MEMCPY, 0, "- stream " MEMCPY3D_RT,
	   DEREF(1, 0)),
	A2("cudaMemcpy3DPeer", "_ptds", CUDA_GRP_MEMCPY, 0, "- " MEMCPY3D_PEER_RT, DEREF(1, 0)),
	A2("cudaMemcpy3DPeerAsync", "_ptsz", CUDA_GRP_MEMCPY, 0, "- stream " MEMCPY3D_PEER_RT,
	   DEREF(1, 0)),
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
	A2("cudaMemset3D", "_ptds", CUDA_GRP_MEMSET, 0, "value:s32 " MEMSET3D_RT, DEREF_STACK),
	A2("cudaMemset3DAsync", "_ptsz", CUDA_GRP_MEMSET, 0, "value:s32 stream " MEMSET3D_RT,
	   DEREF_STACK),

	/* Runtime: allocations. */
	A("cudaMalloc", CUDA_GRP_ALLOC, 0, "*ptr bytes", OUT(1)),
	A("cudaMallocHost", CUDA_GRP_ALLOC, 0, "*ptr bytes", OUT(1)),
	A("cudaHostAlloc", CUDA_GRP_ALLOC, 0, "*ptr bytes flags:u32", OUT(1)),
	A("cudaMallocManaged", CUDA_GRP_ALLOC, 0, "*ptr bytes flags:u32", OUT(1)),
	A2("cudaMallocAsync", "_ptsz", CUDA_GRP_ALLOC, 0, "*ptr bytes stream", OUT(1)),
	A2("cudaMallocFromPoolAsync", "_ptsz", CUDA_GRP_ALLOC, 0, "*ptr bytes pool stream",
	   OUT(1)),
	/* width * height: the pitch the call chose is not seen. */
	A("cudaMallocPitch", CUDA_GRP_ALLOC, 0, "*ptr - bytes bytes", OUT(1)),
	/* out = cudaPitchedPtr.ptr; the cudaExtent is passed in stack words. */
	A("cudaMalloc3D", CUDA_GRP_ALLOC, 0, "*ptr - - - - - bytes bytes bytes", OUT(1)),
	/* Arrays: sizes in elements of the channel format the probe does not read. */
	A("cudaMallocArray", CUDA_GRP_ALLOC, 0, "*ptr - width height flags:u32", OUT(1)),
	A("cudaMalloc3DArray", CUDA_GRP_ALLOC, 0, "*ptr - flags:u32 - - - width height depth",
	  OUT(1)),
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
	A("cudaGetFuncBySymbol", CUDA_GRP_MODULE, CUDA_F_ALIAS_OUT | FN1, "*handle name:fn",
	  OUT(1)),
	A("cudaGetKernel", CUDA_GRP_MODULE, CUDA_F_ALIAS_OUT | FN1, "*handle name:fn", OUT(1)),
	/* What nvcc's launch stubs call once per kernel (see the top of this file). */
	A("__cudaGetKernel", CUDA_GRP_MODULE, CUDA_F_ALIAS_OUT | FN1, "*handle name:fn", OUT(1)),
	A("cudaLibraryGetKernel", CUDA_GRP_MODULE, CUDA_F_NAMES_OUT, "*handle library - name:str@0",
	  OUT(1), DEREF_STR(3)),

	/* Driver: launches. */
	D2("cuLaunchKernel", "_ptsz", CUDA_GRP_LAUNCH, FN0, DRV_LAUNCH " -"),
	D2("cuLaunchCooperativeKernel", "_ptsz", CUDA_GRP_LAUNCH, FN0, DRV_LAUNCH),
	D2("cuLaunchKernelEx", "_ptsz", CUDA_GRP_LAUNCH, FN1,
	   "- kernel:fn - - " LAUNCH_CFG " shared_bytes:u32@24 stream@32", DEREF(1, 0)),
	D2("cuLaunchHostFunc", "_ptsz", CUDA_GRP_LAUNCH, FN1, "stream func:fn -"),

	/* Driver: graphs and stream capture. */
	D2("cuGraphLaunch", "_ptsz", CUDA_GRP_GRAPH, 0, "graph_exec stream"),
	/* The unversioned symbol is CUDA 10.0's, without the mode. */
	D2("cuStreamBeginCapture", "_ptsz", CUDA_GRP_GRAPH, 0, "stream"),
	D2("cuStreamBeginCapture_v2", "_ptsz", CUDA_GRP_GRAPH, 0, "stream mode:u32"),
	D2("cuStreamBeginCaptureToGraph", "_ptsz", CUDA_GRP_GRAPH, 0,
	   "stream graph - - - mode:u32"),
	D2("cuStreamEndCapture", "_ptsz", CUDA_GRP_GRAPH, 0, "stream *graph", OUT(2)),
	D("cuGraphInstantiateWithFlags", CUDA_GRP_GRAPH, 0, "*graph_exec graph flags", OUT(1)),
	D2("cuGraphInstantiateWithParams", "_ptsz", CUDA_GRP_GRAPH, 0, "*graph_exec graph -",
	   OUT(1)),
	/* CUDA 11's cuGraphInstantiate (error node, log buffer): what older binaries call. */
	D("cuGraphInstantiate", CUDA_GRP_GRAPH, 0, "*graph_exec graph - - -", OUT(1)),
	D("cuGraphInstantiate_v2", CUDA_GRP_GRAPH, 0, "*graph_exec graph - - -", OUT(1)),

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
	D2("cuMemcpy2D_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "- " MEMCPY2D_DRV, DEREF(1, 0)),
	D2("cuMemcpy2DUnaligned_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "- " MEMCPY2D_DRV,
	   DEREF(1, 0)),
	D2("cuMemcpy2DAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0, "- stream " MEMCPY2D_DRV,
	   DEREF(1, 0)),
	D2("cuMemcpy3D_v2", "_ptds", CUDA_GRP_MEMCPY, 0, "- " MEMCPY3D_DRV, DEREF(1, 4)),
	D2("cuMemcpy3DAsync_v2", "_ptsz", CUDA_GRP_MEMCPY, 0, "- stream " MEMCPY3D_DRV,
	   DEREF(1, 4)),
	D2("cuMemcpyPeer", "_ptds", CUDA_GRP_MEMCPY, 0, "dst dst_ctx src src_ctx bytes kind=PtoP"),
	D2("cuMemcpyPeerAsync", "_ptsz", CUDA_GRP_MEMCPY, 0,
	   "dst dst_ctx src src_ctx bytes stream kind=PtoP"),
	D2("cuMemcpy3DPeer", "_ptds", CUDA_GRP_MEMCPY, 0, "- " MEMCPY3D_PEER_DRV, DEREF(1, 4)),
	D2("cuMemcpy3DPeerAsync", "_ptsz", CUDA_GRP_MEMCPY, 0, "- stream " MEMCPY3D_PEER_DRV,
	   DEREF(1, 4)),
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
	D("cuMemAlloc_v2", CUDA_GRP_ALLOC, 0, "*ptr bytes", OUT(1)),
	D("cuMemAllocHost_v2", CUDA_GRP_ALLOC, 0, "*ptr bytes", OUT(1)),
	D("cuMemHostAlloc", CUDA_GRP_ALLOC, 0, "*ptr bytes flags:u32", OUT(1)),
	D("cuMemAllocManaged", CUDA_GRP_ALLOC, 0, "*ptr bytes flags:u32", OUT(1)),
	D2("cuMemAllocAsync", "_ptsz", CUDA_GRP_ALLOC, 0, "*ptr bytes stream", OUT(1)),
	D2("cuMemAllocFromPoolAsync", "_ptsz", CUDA_GRP_ALLOC, 0, "*ptr bytes pool stream",
	   OUT(1)),
	D("cuMemAllocPitch_v2", CUDA_GRP_ALLOC, 0, "*ptr - bytes bytes -", OUT(1)),
	D("cuMemHostRegister_v2", CUDA_GRP_ALLOC, 0, "ptr bytes flags:u32"),
	/* Virtual memory management (PyTorch's expandable segments): handle = physical memory. */
	D("cuMemCreate", CUDA_GRP_ALLOC, 0, "*handle bytes - flags", OUT(1)),
	D("cuMemFree_v2", CUDA_GRP_FREE, 0, "ptr"),
	D("cuMemFreeHost", CUDA_GRP_FREE, 0, "ptr"),
	D2("cuMemFreeAsync", "_ptsz", CUDA_GRP_FREE, 0, "ptr stream"),
	D("cuMemHostUnregister", CUDA_GRP_FREE, 0, "ptr"),
	D("cuMemRelease", CUDA_GRP_FREE, 0, "handle"),
	D("cuMemAddressReserve", CUDA_GRP_OTHER, 0, "*ptr bytes - addr flags", OUT(1)),
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
	D("cuModuleGetFunction", CUDA_GRP_MODULE, CUDA_F_NAMES_OUT, "*handle module - name:str@0",
	  OUT(1), DEREF_STR(3)),
	D("cuLibraryGetKernel", CUDA_GRP_MODULE, CUDA_F_NAMES_OUT, "*handle library - name:str@0",
	  OUT(1), DEREF_STR(3)),
	D("cuKernelGetFunction", CUDA_GRP_MODULE, CUDA_F_ALIAS_OUT | FN1, "*handle name:fn",
	  OUT(1)),
	/* Append new entries here: the index of an entry is in trace files. */
};
// clang-format on

const struct ucall_table cuda_table = {
	.family = "cuda",
	.rec_type = BS_REC_CUDA_CALL,
	.apis = cuda_apis,
	.napis = sizeof(cuda_apis) / sizeof(cuda_apis[0]),
};
