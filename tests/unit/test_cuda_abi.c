// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda family, decode side: the decoder against argument words produced by the compiler from
 * CUDA 13's own prototypes (runtime and driver).
 */
#include "cuda_rec.h"

/* ---- Argument words as the compiler passes them, from CUDA's own prototypes. ---- */

#ifdef HAVE_CUDA_HEADERS
/*
 * cap_call stands in for a CUDA function: it keeps what a uprobe at the function's entry sees,
 * rdi..r9 and the stack above the return address (BPF reads 6 words there; a BS_DEREF_ARG_STACK
 * deref copies 192 bytes).
 */
__u64 cap_regs[6];
__u64 cap_stack[BS_UCALL_DEREF_STRUCT / 8];
void cap_call(void);
__asm__(".text\n"
	".globl cap_call\n"
	".type cap_call, @function\n"
	"cap_call:\n"
	"	movq %rdi, cap_regs(%rip)\n"
	"	movq %rsi, cap_regs+8(%rip)\n"
	"	movq %rdx, cap_regs+16(%rip)\n"
	"	movq %rcx, cap_regs+24(%rip)\n"
	"	movq %r8, cap_regs+32(%rip)\n"
	"	movq %r9, cap_regs+40(%rip)\n"
	"	leaq 8(%rsp), %rsi\n"
	"	leaq cap_stack(%rip), %rdi\n"
	"	movl $24, %ecx\n"
	"	rep movsq\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	".size cap_call, .-cap_call\n");

/* Call cap_call with FN's prototype (through an object: GCC rejects casting the function). */
static void (*volatile cap_ptr)(void) = cap_call;
#define CAP(fn, ...) ((__typeof__(fn) *)cap_ptr)(__VA_ARGS__)

/*
 * The record the BPF side would write for the call just captured, as table entry NAME: the
 * argument words, out, and the deref copied from the pointer argument (or the stack).
 */
static void rec_captured(struct rec *r, const char *name, __s64 ret, __u64 out)
{
	const struct ucall_spec *s = spec_of(name);

	rec_init(r, name, 77, 1000, 10, ret);
	if (!s)
		return;
	memcpy(r->u.args, cap_regs, sizeof(cap_regs));
	memcpy(r->u.args + 6, cap_stack, 6 * sizeof(__u64));
	r->u.out = out;
	if (s->copy_mode == BS_DEREF_STRING) {
		strncpy(r->deref, (const char *)r->u.args[s->copy_arg - 1], sizeof(r->deref) - 1);
		rec_deref(r, r->deref, BS_UCALL_DEREF_STRING);
	} else if (s->copy_mode == BS_DEREF_STRUCT) {
		const char *src = s->copy_arg == BS_DEREF_ARG_STACK
					  ? (const char *)cap_stack
					  : (const char *)r->u.args[s->copy_arg - 1];

		rec_deref(r, src + s->copy_off8 * 8, BS_UCALL_DEREF_STRUCT);
	}
}

/* Structs the copies read past: keep 192 readable bytes after them. */
#define ROOMY(type, var)                                                                           \
	union {                                                                                    \
		type s;                                                                            \
		char room[sizeof(type) + 256];                                                     \
	} var = {}

static void test_abi_runtime(void)
{
	struct trace_model *m = trace_model__new();
	ROOMY(cudaLaunchConfig_t, cfg);
	ROOMY(struct cudaMemcpy3DParms, p3);
	ROOMY(struct cudaMemcpy3DPeerParms, pp);
	struct cudaPitchedPtr pitched = { (void *)0xe0, 512, 256, 8 };
	struct cudaChannelFormatDesc desc = {};
	cudaGraphExec_t exec;
	cudaArray_t arr;
	struct event ev;
	struct rec r;
	size_t pitch;
	void *p;

	CAP(cudaLaunchKernel, (void *)0x401000, (dim3){ 4, 2, 1 }, (dim3){ 256, 1, 1 },
	    (void **)0xaaaa, 128, (cudaStream_t)0x5000);
	rec_captured(&r, "cudaLaunchKernel", 0, 0);
	/* The words the brief's ABI note promises: dim3 packs x | y << 32, then z. */
	ASSERT_EQ(r.u.args[1], 4 | 2ull << 32, "grid word 1");
	ASSERT_EQ((__u32)r.u.args[2], 1, "grid word 2");
	ASSERT_EQ(r.u.args[6], 128, "sharedMem is stack word 0");
	decode(&r, m, &ev);
	ASSERT_STREQ(ev.name, "cudaLaunchKernel", "name");
	ASSERT_STR(&ev, "kernel", "0x401000");
	ASSERT_U64(&ev, "grid_x", 4);
	ASSERT_U64(&ev, "grid_y", 2);
	ASSERT_U64(&ev, "grid_z", 1);
	ASSERT_U64(&ev, "block_x", 256);
	ASSERT_U64(&ev, "block_y", 1);
	ASSERT_U64(&ev, "block_z", 1);
	ASSERT_U64(&ev, "shared_bytes", 128);
	ASSERT_HEX(&ev, "stream", 0x5000);
	ASSERT_EQ(ev.nargs, 10, "ret + 9 launch args");

	cfg.s.gridDim = (dim3){ 3, 5, 7 };
	cfg.s.blockDim = (dim3){ 32, 4, 2 };
	cfg.s.dynamicSmemBytes = 4096;
	cfg.s.stream = (cudaStream_t)0x6000;
	CAP(cudaLaunchKernelExC, &cfg.s, (void *)0x402000, (void **)0);
	rec_captured(&r, "cudaLaunchKernelExC", 0, 0);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kernel", "0x402000");
	ASSERT_U64(&ev, "grid_x", 3);
	ASSERT_U64(&ev, "grid_y", 5);
	ASSERT_U64(&ev, "grid_z", 7);
	ASSERT_U64(&ev, "block_x", 32);
	ASSERT_U64(&ev, "block_y", 4);
	ASSERT_U64(&ev, "block_z", 2);
	ASSERT_U64(&ev, "shared_bytes", 4096);
	ASSERT_HEX(&ev, "stream", 0x6000);

	CAP(cudaLaunchHostFunc, (cudaStream_t)0x6100, (cudaHostFn_t)0x403000, (void *)1);
	rec_captured(&r, "cudaLaunchHostFunc", 0, 0);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "func", "0x403000");
	ASSERT_HEX(&ev, "stream", 0x6100);

	CAP(cudaMemcpy2DToArrayAsync, (cudaArray_t)0xa1, 1, 2, (void *)0xb1, 100, 64, 8,
	    cudaMemcpyHostToDevice, (cudaStream_t)0x7000);
	rec_captured(&r, "cudaMemcpy2DToArrayAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xa1);
	ASSERT_HEX(&ev, "src", 0xb1);
	ASSERT_U64(&ev, "bytes", 512);
	ASSERT_STR(&ev, "kind", "HtoD");
	ASSERT_HEX(&ev, "stream", 0x7000);
	ASSERT_EQ(ev.nargs, 6, "ret dst src bytes kind stream");

	CAP(cudaMemcpy2DArrayToArray, (cudaArray_t)0xa2, 1, 2, (cudaArray_const_t)0xb2, 3, 4, 16, 4,
	    cudaMemcpyDeviceToDevice);
	rec_captured(&r, "cudaMemcpy2DArrayToArray", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xa2);
	ASSERT_HEX(&ev, "src", 0xb2);
	ASSERT_U64(&ev, "bytes", 64);
	ASSERT_STR(&ev, "kind", "DtoD");

	CAP(cudaMemcpy2DFromArrayAsync, (void *)0xa3, 640, (cudaArray_const_t)0xb3, 1, 2, 32, 5,
	    cudaMemcpyDeviceToHost, (cudaStream_t)0x7100);
	rec_captured(&r, "cudaMemcpy2DFromArrayAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xa3);
	ASSERT_HEX(&ev, "src", 0xb3);
	ASSERT_U64(&ev, "bytes", 160);
	ASSERT_STR(&ev, "kind", "DtoH");
	ASSERT_HEX(&ev, "stream", 0x7100);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* deprecated, still exported */
	CAP(cudaMemcpyFromArrayAsync, (void *)0xa4, (cudaArray_const_t)0xb4, 1, 2, 99,
	    cudaMemcpyDefault, (cudaStream_t)0x7200);
#pragma GCC diagnostic pop
	rec_captured(&r, "cudaMemcpyFromArrayAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xa4);
	ASSERT_HEX(&ev, "src", 0xb4);
	ASSERT_U64(&ev, "bytes", 99);
	ASSERT_STR(&ev, "kind", "default");
	ASSERT_HEX(&ev, "stream", 0x7200);

	CAP(cudaMemcpyToSymbolAsync, (void *)0x404000, (void *)0xb5, 48, 8, cudaMemcpyHostToDevice,
	    (cudaStream_t)0x7300);
	rec_captured(&r, "cudaMemcpyToSymbolAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0x404000);
	ASSERT_HEX(&ev, "src", 0xb5);
	ASSERT_U64(&ev, "bytes", 48);
	ASSERT_STR(&ev, "kind", "HtoD");
	ASSERT_HEX(&ev, "stream", 0x7300);

	CAP(cudaMemcpyPeerAsync, (void *)0xa6, 1, (void *)0xb6, 0, 1000, (cudaStream_t)0x7400);
	rec_captured(&r, "cudaMemcpyPeerAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xa6);
	ASSERT_S64(&ev, "dst_device", 1);
	ASSERT_HEX(&ev, "src", 0xb6);
	ASSERT_S64(&ev, "src_device", 0);
	ASSERT_U64(&ev, "bytes", 1000);
	ASSERT_STR(&ev, "kind", "PtoP");
	ASSERT_HEX(&ev, "stream", 0x7400);

	/* An array source wins over the (unused) pitched pointer. */
	p3.s.srcArray = (cudaArray_t)0xc0;
	p3.s.srcPtr.ptr = (void *)0xc1;
	p3.s.dstPtr.ptr = (void *)0xd0;
	p3.s.extent = (struct cudaExtent){ 16, 4, 2 };
	p3.s.kind = cudaMemcpyDeviceToHost;
	CAP(cudaMemcpy3DAsync, &p3.s, (cudaStream_t)0x7500);
	rec_captured(&r, "cudaMemcpy3DAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "src", 0xc0);
	ASSERT_HEX(&ev, "dst", 0xd0);
	ASSERT_U64(&ev, "bytes", 128);
	ASSERT_STR(&ev, "kind", "DtoH");
	ASSERT_HEX(&ev, "stream", 0x7500);
	ASSERT_EQ(ev.nargs, 6, "3D: ret dst src bytes kind stream");

	pp.s.srcPtr.ptr = (void *)0xc2;
	pp.s.srcDevice = 3;
	pp.s.dstPtr.ptr = (void *)0xd2;
	pp.s.dstDevice = 2;
	pp.s.extent = (struct cudaExtent){ 8, 8, 8 };
	CAP(cudaMemcpy3DPeer, &pp.s);
	rec_captured(&r, "cudaMemcpy3DPeer", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "src", 0xc2);
	ASSERT_S64(&ev, "src_device", 3);
	ASSERT_HEX(&ev, "dst", 0xd2);
	ASSERT_S64(&ev, "dst_device", 2);
	ASSERT_U64(&ev, "bytes", 512);
	ASSERT_STR(&ev, "kind", "PtoP");

	/* By-value cudaPitchedPtr and cudaExtent go to the stack; value and stream to rdi, rsi. */
	CAP(cudaMemset3DAsync, pitched, -1, (struct cudaExtent){ 256, 8, 3 }, (cudaStream_t)0x7600);
	rec_captured(&r, "cudaMemset3DAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xe0);
	ASSERT_S64(&ev, "value", -1);
	ASSERT_U64(&ev, "bytes", 256 * 8 * 3);
	ASSERT_HEX(&ev, "stream", 0x7600);

	CAP(cudaMalloc3D, &pitched, (struct cudaExtent){ 100, 10, 5 });
	rec_captured(&r, "cudaMalloc3D", 0, 0xf000);
	decode(&r, m, &ev);
	ASSERT_U64(&ev, "bytes", 5000);
	ASSERT_HEX(&ev, "ptr", 0xf000);

	CAP(cudaMalloc3DArray, &arr, &desc, (struct cudaExtent){ 7, 8, 9 }, 2);
	rec_captured(&r, "cudaMalloc3DArray", 0, 0xf100);
	decode(&r, m, &ev);
	ASSERT_U64(&ev, "width", 7);
	ASSERT_U64(&ev, "height", 8);
	ASSERT_U64(&ev, "depth", 9);
	ASSERT_U64(&ev, "flags", 2);
	ASSERT_HEX(&ev, "ptr", 0xf100);

	CAP(cudaMallocPitch, &p, &pitch, 300, 20);
	rec_captured(&r, "cudaMallocPitch", 2, 0xf200);
	decode(&r, m, &ev);
	ASSERT_U64(&ev, "bytes", 6000);
	ASSERT_NO_ARG(&ev, "ptr"); /* failed: out is not a pointer */
	ASSERT_STR(&ev, "error", "cudaErrorMemoryAllocation");

	CAP(cudaGraphInstantiate, &exec, (cudaGraph_t)0x8000, 1);
	rec_captured(&r, "cudaGraphInstantiate", 0, 0x8100);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "graph", 0x8000);
	ASSERT_HEX(&ev, "graph_exec", 0x8100);
	ASSERT_U64(&ev, "flags", 1);

	CAP(cudaStreamBeginCaptureToGraph, (cudaStream_t)0x7700, (cudaGraph_t)0x8200, NULL, NULL, 0,
	    cudaStreamCaptureModeRelaxed);
	rec_captured(&r, "cudaStreamBeginCaptureToGraph", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "stream", 0x7700);
	ASSERT_HEX(&ev, "graph", 0x8200);
	ASSERT_U64(&ev, "mode", cudaStreamCaptureModeRelaxed);

	CAP(cudaMemcpyBatchAsync, NULL, NULL, NULL, 5, NULL, NULL, 1, (cudaStream_t)0x7800);
	rec_captured(&r, "cudaMemcpyBatchAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_U64(&ev, "count", 5);
	ASSERT_HEX(&ev, "stream", 0x7800);
	ASSERT_STR(&ev, "kind", "batch");
	ASSERT_NO_ARG(&ev, "bytes");
	trace_model__free(m);
}

static void test_abi_driver(void)
{
	struct trace_model *m = trace_model__new();
	ROOMY(CUlaunchConfig, cfg);
	ROOMY(CUDA_MEMCPY2D, c2);
	ROOMY(CUDA_MEMCPY3D, c3);
	ROOMY(CUDA_MEMCPY3D_PEER, cp);
	CUdeviceptr dptr;
	CUfunction f;
	struct event ev;
	struct rec r;
	size_t pitch;

	CAP(cuLaunchKernel, (CUfunction)0x9000, 10, 20, 30, 64, 2, 1, 8192, (CUstream)0x5100, NULL,
	    NULL);
	rec_captured(&r, "cuLaunchKernel", 34, 0);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kernel", "0x9000");
	ASSERT_U64(&ev, "grid_x", 10);
	ASSERT_U64(&ev, "grid_y", 20);
	ASSERT_U64(&ev, "grid_z", 30);
	ASSERT_U64(&ev, "block_x", 64);
	ASSERT_U64(&ev, "block_y", 2);
	ASSERT_U64(&ev, "block_z", 1);
	ASSERT_U64(&ev, "shared_bytes", 8192);
	ASSERT_HEX(&ev, "stream", 0x5100);
	ASSERT_S64(&ev, "ret", 34);
	ASSERT_STR(&ev, "error", "CUDA_ERROR_STUB_LIBRARY");

	cfg.s.gridDimX = 9;
	cfg.s.gridDimY = 8;
	cfg.s.gridDimZ = 7;
	cfg.s.blockDimX = 6;
	cfg.s.blockDimY = 5;
	cfg.s.blockDimZ = 4;
	cfg.s.sharedMemBytes = 3;
	cfg.s.hStream = (CUstream)0x5200;
	CAP(cuLaunchKernelEx, &cfg.s, (CUfunction)0x9100, NULL, NULL);
	rec_captured(&r, "cuLaunchKernelEx", 0, 0);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kernel", "0x9100");
	ASSERT_U64(&ev, "grid_x", 9);
	ASSERT_U64(&ev, "grid_y", 8);
	ASSERT_U64(&ev, "grid_z", 7);
	ASSERT_U64(&ev, "block_x", 6);
	ASSERT_U64(&ev, "block_y", 5);
	ASSERT_U64(&ev, "block_z", 4);
	ASSERT_U64(&ev, "shared_bytes", 3);
	ASSERT_HEX(&ev, "stream", 0x5200);

	CAP(cuLaunchHostFunc, (CUstream)0x5300, (CUhostFn)0x405000, NULL);
	rec_captured(&r, "cuLaunchHostFunc", 0, 0);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "func", "0x405000");
	ASSERT_HEX(&ev, "stream", 0x5300);

	/* Host to array: an array is device memory; src shows the host pointer. */
	c2.s.srcMemoryType = CU_MEMORYTYPE_HOST;
	c2.s.srcHost = (void *)0x1111;
	c2.s.srcDevice = 0x1112;
	c2.s.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c2.s.dstArray = (CUarray)0x2222;
	c2.s.dstDevice = 0x2223;
	c2.s.WidthInBytes = 128;
	c2.s.Height = 3;
	CAP(cuMemcpy2DAsync, &c2.s, (CUstream)0x5400);
	rec_captured(&r, "cuMemcpy2DAsync_v2", 0, 0);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kind", "HtoD");
	ASSERT_HEX(&ev, "src", 0x1111);
	ASSERT_HEX(&ev, "dst", 0x2222);
	ASSERT_U64(&ev, "bytes", 384);
	ASSERT_HEX(&ev, "stream", 0x5400);
	ASSERT_EQ(ev.nargs, 6, "2D: ret dst src bytes kind stream");

	c3.s.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c3.s.srcDevice = 0x3333;
	c3.s.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	c3.s.dstDevice = 0x4444;
	c3.s.WidthInBytes = 10;
	c3.s.Height = 10;
	c3.s.Depth = 10;
	CAP(cuMemcpy3D, &c3.s);
	rec_captured(&r, "cuMemcpy3D_v2", 0, 0);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kind", "default");
	ASSERT_HEX(&ev, "src", 0x3333);
	ASSERT_HEX(&ev, "dst", 0x4444);
	ASSERT_U64(&ev, "bytes", 1000);

	cp.s.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.s.srcDevice = 0x5555;
	cp.s.srcContext = (CUcontext)0x66;
	cp.s.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.s.dstDevice = 0x7777;
	cp.s.dstContext = (CUcontext)0x88;
	cp.s.WidthInBytes = 4;
	cp.s.Height = 2;
	cp.s.Depth = 1;
	CAP(cuMemcpy3DPeerAsync, &cp.s, (CUstream)0x5500);
	rec_captured(&r, "cuMemcpy3DPeerAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kind", "PtoP");
	ASSERT_HEX(&ev, "src", 0x5555);
	ASSERT_HEX(&ev, "src_ctx", 0x66);
	ASSERT_HEX(&ev, "dst", 0x7777);
	ASSERT_HEX(&ev, "dst_ctx", 0x88);
	ASSERT_U64(&ev, "bytes", 8);
	ASSERT_HEX(&ev, "stream", 0x5500);

	CAP(cuMemcpyAtoHAsync, (void *)0xaa, (CUarray)0xbb, 16, 4096, (CUstream)0x5600);
	rec_captured(&r, "cuMemcpyAtoHAsync_v2", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xaa);
	ASSERT_HEX(&ev, "src", 0xbb);
	ASSERT_U64(&ev, "bytes", 4096);
	ASSERT_STR(&ev, "kind", "DtoH");
	ASSERT_HEX(&ev, "stream", 0x5600);

	CAP(cuMemcpyPeerAsync, 0xd1, (CUcontext)0x11, 0xd2, (CUcontext)0x12, 777, (CUstream)0x5700);
	rec_captured(&r, "cuMemcpyPeerAsync", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xd1);
	ASSERT_HEX(&ev, "dst_ctx", 0x11);
	ASSERT_HEX(&ev, "src", 0xd2);
	ASSERT_HEX(&ev, "src_ctx", 0x12);
	ASSERT_U64(&ev, "bytes", 777);
	ASSERT_STR(&ev, "kind", "PtoP");

	/* Width counts 16-bit elements. */
	CAP(cuMemsetD2D16Async, 0xdd00, 256, 0xbeef, 100, 7, (CUstream)0x5800);
	rec_captured(&r, "cuMemsetD2D16Async", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "dst", 0xdd00);
	ASSERT_U64(&ev, "value", 0xbeef);
	ASSERT_U64(&ev, "bytes", 1400);
	ASSERT_HEX(&ev, "stream", 0x5800);
	ASSERT_EQ(ev.nargs, 5, "memset: ret dst bytes value stream");

	CAP(cuMemsetD32, 0xdd10, 0xffffffff, 10);
	rec_captured(&r, "cuMemsetD32_v2", 0, 0);
	decode(&r, m, &ev);
	ASSERT_U64(&ev, "value", 0xffffffff);
	ASSERT_U64(&ev, "bytes", 40);

	CAP(cuMemAllocPitch, &dptr, &pitch, 256, 4, 4);
	rec_captured(&r, "cuMemAllocPitch_v2", 0, 0xe000);
	decode(&r, m, &ev);
	ASSERT_U64(&ev, "bytes", 1024);
	ASSERT_HEX(&ev, "ptr", 0xe000);

	CAP(cuModuleGetFunction, &f, (CUmodule)0x9900, "_Z4gemmPfS_");
	rec_captured(&r, "cuModuleGetFunction", 0, 0x9200);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "name", "_Z4gemmPfS_");
	ASSERT_HEX(&ev, "handle", 0x9200);
	ASSERT_HEX(&ev, "module", 0x9900);

	CAP(cuKernelGetFunction, &f, (CUkernel)0x9300);
	rec_captured(&r, "cuKernelGetFunction", 0, 0x9400);
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "name", "0x9300");
	ASSERT_HEX(&ev, "handle", 0x9400);

	CAP(cuStreamWaitEvent, (CUstream)0x5900, (CUevent)0x6600, 1);
	rec_captured(&r, "cuStreamWaitEvent", 0, 0);
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "stream", 0x5900);
	ASSERT_HEX(&ev, "event", 0x6600);
	ASSERT_U64(&ev, "flags", 1);

	CAP(cuMemcpy3DBatchAsync, 3, NULL, 0, (CUstream)0x5a00);
	rec_captured(&r, "cuMemcpy3DBatchAsync_v2", 0, 0);
	decode(&r, m, &ev);
	ASSERT_U64(&ev, "count", 3);
	ASSERT_HEX(&ev, "stream", 0x5a00);
	trace_model__free(m);
}
#else
static void test_abi_runtime(void)
{
	UNIT_SKIP("no CUDA headers in " CUDA_INC);
}

static void test_abi_driver(void)
{
	UNIT_SKIP("no CUDA headers in " CUDA_INC);
}
#endif

int main(void)
{
	RUN_TEST(test_abi_runtime);
	RUN_TEST(test_abi_driver);
	return UNIT_EXIT();
}
