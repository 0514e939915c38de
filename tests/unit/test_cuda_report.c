// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda family, decode side: the API table against the real libraries and headers, the decoder
 * against argument words produced by the compiler from CUDA 13's own prototypes, and the four
 * reports against numbers computed by hand from a trace written with the real trace writer.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include "commands.h"
#include "cuda.h"
#include "cuda_errors.h"
#include "event.h"
#include "stats.h"
#include "table.h"
#include "trace_model.h"
#include "trace_writer.h"
#include "unit.h"

#define CUDA_INC "/usr/local/cuda/include/"
#define CUDART	 "/usr/local/cuda/lib64/libcudart.so.13"
#define LIBCUDA	 "/usr/local/cuda/lib64/stubs/libcuda.so"

/* The CUDA headers are only needed here; "cuda.h" alone would be bpfsight's own. */
#if __has_include("/usr/local/cuda/include/cuda.h") &&                                             \
		  __has_include("/usr/local/cuda/include/cuda_runtime_api.h")
#define HAVE_CUDA_HEADERS 1
#include "/usr/local/cuda/include/cuda.h"
#include "/usr/local/cuda/include/cuda_runtime_api.h"
#endif

static char tmp_dir[64];

static int fn_of(const char *name)
{
	for (__u32 i = 0; i < cuda_table.napis; i++)
		if (!strcmp(cuda_table.apis[i].name, name))
			return i;
	return -1;
}

/* A call record with room for the largest deref. */
struct rec {
	struct bs_ucall u;
	char deref[BS_UCALL_DEREF_STRING];
};

static void rec_init(struct rec *r, const char *name, __u32 pid, __u64 ts, __u64 dur, __s64 ret)
{
	int fn = fn_of(name);

	memset(r, 0, sizeof(*r));
	if (fn < 0)
		unit_fail("%s is not in cuda_table", name);
	r->u.h.type = BS_REC_CUDA_CALL;
	r->u.h.size = sizeof(r->u);
	r->u.h.pid = pid;
	r->u.h.tid = pid;
	r->u.h.ts = ts;
	r->u.fn = fn < 0 ? 0xfff : fn;
	r->u.dur = dur;
	r->u.ret = ret;
}

static void rec_deref(struct rec *r, const void *p, __u16 len)
{
	memcpy(r->deref, p, len);
	r->u.deref_len = len;
	r->u.h.size = sizeof(r->u) + len;
}

static const struct event_arg *ev_arg(const struct event *ev, const char *key)
{
	for (__u32 i = 0; i < ev->nargs; i++)
		if (!strcmp(ev->args[i].key, key))
			return &ev->args[i];
	return NULL;
}

#define ASSERT_ARG(ev, key, k, field, val)                                                         \
	({                                                                                         \
		const struct event_arg *___arg = ev_arg(ev, key);                                  \
		ASSERT_TRUE(___arg, "arg " key " present") &&                                      \
			ASSERT_EQ(___arg->kind, k, "arg " key " kind") &&                          \
			ASSERT_EQ(___arg->field, val, "arg " key);                                 \
	})
#define ASSERT_U64(ev, key, val) ASSERT_ARG(ev, key, EVENT_ARG_U64, u, val)
#define ASSERT_S64(ev, key, val) ASSERT_ARG(ev, key, EVENT_ARG_S64, s, val)
#define ASSERT_HEX(ev, key, val) ASSERT_ARG(ev, key, EVENT_ARG_HEX, u, val)
#define ASSERT_STR(ev, key, val)                                                                   \
	({                                                                                         \
		const struct event_arg *___arg = ev_arg(ev, key);                                  \
		ASSERT_TRUE(___arg && ___arg->kind == EVENT_ARG_STR, "arg " key " is a string") && \
			ASSERT_STREQ(___arg->str, val, "arg " key);                                \
	})
#define ASSERT_NO_ARG(ev, key) ASSERT_TRUE(!ev_arg(ev, key), "no arg " key)

static int decode(struct rec *r, const struct trace_model *m, struct event *ev)
{
	event__init(ev, &r->u.h, cuda_decoders[0].kind);
	return cuda_decoders[0].decode(&r->u.h, m, ev);
}

/* ---- The table. ---- */

static void test_table_check(void)
{
	char err[256] = "";
	int rt = 0, drv = 0;

	ASSERT_TRUE(cuda_table.napis > 0, "table has entries");
	ASSERT_EQ(cuda_table.rec_type, BS_REC_CUDA_CALL, "record type");
	ASSERT_STREQ(cuda_table.family, "cuda", "family");
	if (ucall_table__check(&cuda_table, err, sizeof(err)))
		unit_fail("ucall_table__check: %s", err);
	for (__u32 i = 0; i < cuda_table.napis; i++)
		cuda_table.apis[i].flags &CUDA_F_DRIVER ? drv++ : rt++;
	printf("# cuda_table: %u functions, %d runtime, %d driver\n", cuda_table.napis, rt, drv);
}

/* cuda's own check (cuda_api.c), after the grammar (test_ucall_spec.c), catches its cases. */
static void test_table_check_catches(void)
{
	struct ucall_api bad[2] = {
		{ .name = "cudaMalloc", .group = CUDA_GRP_ALLOC, .args = "*ptr bytes" },
	};
	static struct ucall_spec *compiled; /* not cuda_table's */
	struct ucall_table t = cuda_table;
	char err[256];

	t.apis = bad;
	t.napis = 1;
	t.compiled = &compiled;
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), 0, "good entry");
	bad[0].args = "*ptr *bytes";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "two out fields");
	ASSERT_STREQ(err, "cudaMalloc: '*bytes': two out fields", "two out fields message");
	bad[0].args = "*ptr bytes";
	bad[0].flags = CUDA_F_DRIVER;
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "driver flag on cuda*");
	ASSERT_STREQ(err, "cudaMalloc: CUDA_F_DRIVER does not match the name", "driver message");
	bad[0].flags = 0;
	bad[0].args = "*ptr bytez";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "unknown key");
	ASSERT_STREQ(err, "cudaMalloc: 'bytez': unknown key 'bytez'", "unknown key message");
	bad[0].args = "*ptr bytes@8";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "@ without a copy");
	bad[0].args = "*ptr";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "allocation without a size");
	ASSERT_STREQ(err, "cudaMalloc: an allocation needs a size", "size message");
	bad[0].args = "*ptr bytes";
	bad[1] = bad[0];
	t.napis = 2;
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "duplicate");
	ASSERT_TRUE(strstr(err, "twice"), "duplicate message");
	bad[1] = (struct ucall_api){ .name = "cuLaunchKernel",
				     .group = CUDA_GRP_LAUNCH,
				     .flags = CUDA_F_DRIVER,
				     .args = "kernel:fn grid_x grid_y grid_z block_x block_y "
					     "block_z shared_bytes stream" };
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), 0, "launch");
	bad[1].args = "kernel:fn grid_x grid_y grid_z block_x block_y block_z stream";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "launch without shared_bytes");
	ASSERT_STREQ(err,
		     "cuLaunchKernel: a launch needs kernel, grid, block, shared_bytes and stream",
		     "launch message");
	bad[1] = (struct ucall_api){ .name = "cuModuleGetFunction",
				     .group = CUDA_GRP_MODULE,
				     .flags = CUDA_F_DRIVER | CUDA_F_NAMES_OUT,
				     .args = "*handle module &name:str" };
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), 0, "naming call");
	bad[1].args = "*handle module - name:fn";
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "NAMES_OUT without a string");
	ASSERT_STREQ(err,
		     "cuModuleGetFunction: CUDA_F_NAMES_OUT needs *handle and &name:str, and back",
		     "NAMES_OUT message");
}

/* Defined symbols of LIB (nm -D), as one "\nname\n" string for strstr. */
static char *nm_symbols(const char *lib)
{
	char cmd[256], line[512], *all = NULL;
	size_t len = 0;
	FILE *p, *out;

	snprintf(cmd, sizeof(cmd), "nm -D --defined-only %s 2>/dev/null", lib);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	out = open_memstream(&all, &len);
	fputc('\n', out);
	while (fgets(line, sizeof(line), p)) {
		char addr[64], type[8], name[400];

		/* "0000000000074370 T cudaLaunchKernel@@libcudart.so.13" */
		if (sscanf(line, "%63s %7s %399s", addr, type, name) != 3)
			continue;
		name[strcspn(name, "@")] = 0;
		fprintf(out, "%s\n", name);
	}
	fclose(out);
	if (pclose(p) != 0 || len < 100) {
		free(all);
		return NULL;
	}
	return all;
}

static void test_table_symbols_exist(void)
{
	char *rt = NULL, *drv = NULL, want[160];
	int missing = 0;

	if (access(CUDART, R_OK) || access(LIBCUDA, R_OK)) {
		UNIT_SKIP("no CUDA 13 libraries here (" CUDART ")");
		return;
	}
	rt = nm_symbols(CUDART);
	drv = nm_symbols(LIBCUDA);
	if (!ASSERT_TRUE(rt && drv, "nm -D of libcudart and libcuda"))
		goto out;
	for (__u32 i = 0; i < cuda_table.napis; i++) {
		const struct ucall_api *a = &cuda_table.apis[i];

		snprintf(want, sizeof(want), "\n%s\n", a->name);
		if (!strstr(a->flags & CUDA_F_DRIVER ? drv : rt, want)) {
			unit_fail("%s is not exported by %s", a->name,
				  a->flags & CUDA_F_DRIVER ? LIBCUDA : CUDART);
			missing++;
		}
	}
	ASSERT_EQ(missing, 0, "symbols missing");
out:
	free(rt);
	free(drv);
}

/* ---- The args strings against CUDA 13's struct layouts. ---- */

/* The spec of table entry NAME, compiled. */
static const struct ucall_spec *spec_of(const char *name)
{
	static struct ucall_spec tmp;
	int fn = fn_of(name);

	return fn < 0 ? NULL : ucall_table__spec(&cuda_table, fn, &tmp);
}

/* The offset in the copied struct of the NTH KEY@ field of NAME's spec, and its size. */
static long deref_off(const char *name, const char *key, int nth, int *size)
{
	const struct ucall_spec *s = spec_of(name);

	for (int i = 0; s && i < s->nfields; i++) {
		const struct ucall_field *f = &s->f[i];

		if (f->src == UCALL_SRC_AT && !strcmp(cuda_table.keys[f->key].name, key) &&
		    nth-- == 0) {
			*size = ucall_type_size[f->type];
			return f->off;
		}
	}
	return -1;
}

static void check_off(const char *name, const char *key, int nth, size_t off, size_t size)
{
	int got_size = 0;
	long got = deref_off(name, key, nth, &got_size);

	if (got != (long)off || got_size != (int)size)
		unit_fail("%s: %s #%d reads %d bytes at %ld, the header says %zu at %zu", name, key,
			  nth, got_size, got, size, off);
}

#define ASSERT_OFF(name, key, nth, type, member)                                                   \
	check_off(name, key, nth, offsetof(type, member), sizeof(((type *)0)->member))

static void test_table_layouts(void)
{
#ifdef HAVE_CUDA_HEADERS
	static const char *const rt3d[] = { "cudaMemcpy3D", "cudaMemcpy3DAsync_ptsz" };
	static const char *const drv2d[] = { "cuMemcpy2D_v2", "cuMemcpy2DUnaligned_v2_ptds",
					     "cuMemcpy2DAsync_v2" };
	static const char *const drv3d[] = { "cuMemcpy3D_v2", "cuMemcpy3DAsync_v2_ptsz",
					     "cuMemcpy3DPeer", "cuMemcpy3DPeerAsync_ptsz" };

	for (int i = 0; i < 2; i++) {
		const char *n = i ? "cudaLaunchKernelExC_ptsz" : "cudaLaunchKernelExC";

		ASSERT_OFF(n, "grid", 0, cudaLaunchConfig_t, gridDim);
		ASSERT_OFF(n, "block", 0, cudaLaunchConfig_t, blockDim);
		ASSERT_OFF(n, "shared_bytes", 0, cudaLaunchConfig_t, dynamicSmemBytes);
		ASSERT_OFF(n, "stream", 0, cudaLaunchConfig_t, stream);
		n = i ? "cuLaunchKernelEx_ptsz" : "cuLaunchKernelEx";
		/* grid:dim3 reads gridDimX, Y, Z: three u32s in a row (checked below). */
		check_off(n, "grid", 0, offsetof(CUlaunchConfig, gridDimX), 12);
		check_off(n, "block", 0, offsetof(CUlaunchConfig, blockDimX), 12);
		ASSERT_OFF(n, "shared_bytes", 0, CUlaunchConfig, sharedMemBytes);
		ASSERT_OFF(n, "stream", 0, CUlaunchConfig, hStream);
	}
	ASSERT_EQ(offsetof(CUlaunchConfig, gridDimY), offsetof(CUlaunchConfig, gridDimX) + 4,
		  "CUlaunchConfig gridDimY follows X");
	ASSERT_EQ(offsetof(CUlaunchConfig, gridDimZ), offsetof(CUlaunchConfig, gridDimX) + 8,
		  "CUlaunchConfig gridDimZ follows Y");
	ASSERT_EQ(offsetof(CUlaunchConfig, blockDimY), offsetof(CUlaunchConfig, blockDimX) + 4,
		  "CUlaunchConfig blockDimY follows X");
	ASSERT_EQ(offsetof(CUlaunchConfig, blockDimZ), offsetof(CUlaunchConfig, blockDimX) + 8,
		  "CUlaunchConfig blockDimZ follows Y");
	ASSERT_EQ(sizeof(((CUlaunchConfig *)0)->gridDimX), 4, "CUlaunchConfig dims are u32");
	for (int i = 0; i < 2; i++) {
		ASSERT_OFF(rt3d[i], "src_arr", 0, struct cudaMemcpy3DParms, srcArray);
		ASSERT_OFF(rt3d[i], "src", 0, struct cudaMemcpy3DParms, srcPtr.ptr);
		ASSERT_OFF(rt3d[i], "dst_arr", 0, struct cudaMemcpy3DParms, dstArray);
		ASSERT_OFF(rt3d[i], "dst", 0, struct cudaMemcpy3DParms, dstPtr.ptr);
		ASSERT_OFF(rt3d[i], "bytes", 0, struct cudaMemcpy3DParms, extent.width);
		ASSERT_OFF(rt3d[i], "bytes", 1, struct cudaMemcpy3DParms, extent.height);
		ASSERT_OFF(rt3d[i], "bytes", 2, struct cudaMemcpy3DParms, extent.depth);
		ASSERT_OFF(rt3d[i], "kind", 0, struct cudaMemcpy3DParms, kind);
	}
	for (int i = 0; i < 2; i++) {
		const char *n = i ? "cudaMemcpy3DPeerAsync" : "cudaMemcpy3DPeer_ptds";

		ASSERT_OFF(n, "src_arr", 0, struct cudaMemcpy3DPeerParms, srcArray);
		ASSERT_OFF(n, "src", 0, struct cudaMemcpy3DPeerParms, srcPtr.ptr);
		ASSERT_OFF(n, "src_device", 0, struct cudaMemcpy3DPeerParms, srcDevice);
		ASSERT_OFF(n, "dst_arr", 0, struct cudaMemcpy3DPeerParms, dstArray);
		ASSERT_OFF(n, "dst", 0, struct cudaMemcpy3DPeerParms, dstPtr.ptr);
		ASSERT_OFF(n, "dst_device", 0, struct cudaMemcpy3DPeerParms, dstDevice);
		ASSERT_OFF(n, "bytes", 0, struct cudaMemcpy3DPeerParms, extent.width);
		ASSERT_OFF(n, "bytes", 1, struct cudaMemcpy3DPeerParms, extent.height);
		ASSERT_OFF(n, "bytes", 2, struct cudaMemcpy3DPeerParms, extent.depth);
	}
	for (int i = 0; i < 3; i++) {
		ASSERT_OFF(drv2d[i], "src_mt", 0, CUDA_MEMCPY2D, srcMemoryType);
		ASSERT_OFF(drv2d[i], "src_host", 0, CUDA_MEMCPY2D, srcHost);
		ASSERT_OFF(drv2d[i], "src", 0, CUDA_MEMCPY2D, srcDevice);
		ASSERT_OFF(drv2d[i], "src_arr", 0, CUDA_MEMCPY2D, srcArray);
		ASSERT_OFF(drv2d[i], "dst_mt", 0, CUDA_MEMCPY2D, dstMemoryType);
		ASSERT_OFF(drv2d[i], "dst_host", 0, CUDA_MEMCPY2D, dstHost);
		ASSERT_OFF(drv2d[i], "dst", 0, CUDA_MEMCPY2D, dstDevice);
		ASSERT_OFF(drv2d[i], "dst_arr", 0, CUDA_MEMCPY2D, dstArray);
		ASSERT_OFF(drv2d[i], "bytes", 0, CUDA_MEMCPY2D, WidthInBytes);
		ASSERT_OFF(drv2d[i], "bytes", 1, CUDA_MEMCPY2D, Height);
	}
	for (int i = 0; i < 4; i++) {
		ASSERT_OFF(drv3d[i], "src_mt", 0, CUDA_MEMCPY3D, srcMemoryType);
		ASSERT_OFF(drv3d[i], "src_host", 0, CUDA_MEMCPY3D, srcHost);
		ASSERT_OFF(drv3d[i], "src", 0, CUDA_MEMCPY3D, srcDevice);
		ASSERT_OFF(drv3d[i], "src_arr", 0, CUDA_MEMCPY3D, srcArray);
		ASSERT_OFF(drv3d[i], "dst_mt", 0, CUDA_MEMCPY3D, dstMemoryType);
		ASSERT_OFF(drv3d[i], "dst_host", 0, CUDA_MEMCPY3D, dstHost);
		ASSERT_OFF(drv3d[i], "dst", 0, CUDA_MEMCPY3D, dstDevice);
		ASSERT_OFF(drv3d[i], "dst_arr", 0, CUDA_MEMCPY3D, dstArray);
		ASSERT_OFF(drv3d[i], "bytes", 0, CUDA_MEMCPY3D, WidthInBytes);
		ASSERT_OFF(drv3d[i], "bytes", 1, CUDA_MEMCPY3D, Height);
		ASSERT_OFF(drv3d[i], "bytes", 2, CUDA_MEMCPY3D, Depth);
		/* The copy starts at +32 and holds 192 bytes: Depth must be inside it. */
		ASSERT_TRUE(offsetof(CUDA_MEMCPY3D, Depth) + 8 <=
				    spec_of(drv3d[i])->copy_off8 * 8u + BS_UCALL_DEREF_STRUCT,
			    "CUDA_MEMCPY3D.Depth inside the copy");
	}
	/* The peer struct shares CUDA_MEMCPY3D's layout where the table reads both. */
	ASSERT_OFF("cuMemcpy3DPeer", "src_ctx", 0, CUDA_MEMCPY3D_PEER, srcContext);
	ASSERT_OFF("cuMemcpy3DPeer", "dst_ctx", 0, CUDA_MEMCPY3D_PEER, dstContext);
	ASSERT_OFF("cuMemcpy3DPeer", "bytes", 2, CUDA_MEMCPY3D_PEER, Depth);
	ASSERT_OFF("cuMemcpy3DPeer", "dst_arr", 0, CUDA_MEMCPY3D_PEER, dstArray);
	ASSERT_EQ(sizeof(dim3), 12, "dim3 is 12 bytes: two words by value");
	ASSERT_EQ(sizeof(struct cudaPitchedPtr), 32, "cudaPitchedPtr goes on the stack");
	ASSERT_EQ(sizeof(struct cudaExtent), 24, "cudaExtent goes on the stack");
	ASSERT_EQ(cudaMemcpyHostToHost, 0, "HtoH");
	ASSERT_EQ(cudaMemcpyHostToDevice, 1, "HtoD");
	ASSERT_EQ(cudaMemcpyDeviceToHost, 2, "DtoH");
	ASSERT_EQ(cudaMemcpyDeviceToDevice, 3, "DtoD");
	ASSERT_EQ(cudaMemcpyDefault, 4, "default");
	ASSERT_EQ(CU_MEMORYTYPE_HOST, 1, "CU_MEMORYTYPE_HOST");
	ASSERT_EQ(CU_MEMORYTYPE_DEVICE, 2, "CU_MEMORYTYPE_DEVICE");
	ASSERT_EQ(CU_MEMORYTYPE_ARRAY, 3, "CU_MEMORYTYPE_ARRAY");
	ASSERT_EQ(CU_MEMORYTYPE_UNIFIED, 4, "CU_MEMORYTYPE_UNIFIED");
#else
	UNIT_SKIP("no CUDA headers in " CUDA_INC);
#endif
}

/* ---- Error names against cudaGetErrorName and cuda.h. ---- */

static void test_error_names(void)
{
	const char *(*get_name)(int);
	char line[512], name[128];
	void *h;
	int code, n = 0;
	FILE *f;

	ASSERT_STREQ(cuda_error_name(35), "cudaErrorInsufficientDriver", "35");
	ASSERT_STREQ(cuda_result_name(34), "CUDA_ERROR_STUB_LIBRARY", "34");
	ASSERT_TRUE(!cuda_error_name(12345) && !cuda_result_name(-1), "unknown codes");
	h = dlopen(CUDART, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		UNIT_SKIP("no CUDA runtime: %s", dlerror());
		return;
	}
	get_name = (const char *(*)(int))dlsym(h, "cudaGetErrorName");
	if (ASSERT_TRUE(get_name, "cudaGetErrorName")) {
		for (code = 0; code <= 10001; code++) {
			const char *want = get_name(code), *got = cuda_error_name(code);

			if (!strcmp(want, "unrecognized error code"))
				want = NULL;
			if ((!want != !got) || (want && strcmp(want, got))) {
				unit_fail("cudaError %d: cudart says %s, table says %s", code,
					  want ? want : "(none)", got ? got : "(none)");
				break;
			}
			n += !!want;
		}
		ASSERT_TRUE(n > 100, "cudart names many codes");
	}
	dlclose(h);

	/* CUresult: every "CUDA_ERROR_X = N," of cuda.h (the stub libcuda names nothing). */
	f = fopen(CUDA_INC "cuda.h", "r");
	if (!ASSERT_TRUE(f, "open cuda.h"))
		return;
	n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " CUDA_%127[A-Z0-9_] = %d", name, &code) != 2)
			continue;
		if (strncmp(name, "ERROR_", 6) && strcmp(name, "SUCCESS"))
			continue;
		if (!cuda_result_name(code) || strcmp(cuda_result_name(code) + 5, name)) {
			unit_fail("CUresult %d: cuda.h says CUDA_%s, table says %s", code, name,
				  cuda_result_name(code) ? cuda_result_name(code) : "(none)");
			break;
		}
		n++;
	}
	fclose(f);
	ASSERT_TRUE(n > 90, "cuda.h names many CUresults");
}

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

/* ---- Hand-built records: names, errors, depth, truncation. ---- */

static void observe_string(struct trace_model *m, __u32 pid, __u32 id, const char *s)
{
	struct {
		struct bs_string s;
		char text[120];
	} str = {};

	str.s.h.type = BS_REC_STRING;
	str.s.h.size = sizeof(str.s) + ((strlen(s) + 7) & ~7ul);
	str.s.h.pid = pid;
	str.s.id = id;
	str.s.len = strlen(s);
	memcpy(str.text, s, strlen(s));
	trace_model__observe(m, &str.s.h);
}

static void observe_symbol(struct trace_model *m, __u32 pid, __u64 addr, __u32 id)
{
	struct bs_symbol sym = {};

	sym.h.type = BS_REC_SYMBOL;
	sym.h.size = sizeof(sym);
	sym.h.pid = pid;
	sym.addr = addr;
	sym.name_id = id;
	sym.kind = BS_SYM_HOST_FUNC;
	trace_model__observe(m, &sym.h);
}

static void launch_words(struct rec *r, __u64 func, __u32 gx, __u32 gy, __u32 gz, __u32 bx,
			 __u32 by, __u32 bz, __u64 shmem, __u64 stream)
{
	/* cudaLaunchKernel(func, dim3 grid, dim3 block, args, sharedMem, stream) */
	r->u.args[0] = func;
	r->u.args[1] = gx | (__u64)gy << 32;
	r->u.args[2] = gz;
	r->u.args[3] = bx | (__u64)by << 32;
	r->u.args[4] = bz;
	r->u.args[5] = 0x7ffd0000; /* void **args */
	r->u.args[6] = shmem;
	r->u.args[7] = stream;
}

static void test_decode_records(void)
{
	struct trace_model *m = trace_model__new();
	struct event ev;
	struct rec r;

	observe_string(m, 42, 1, "vecAdd(float*, float*, int)");
	observe_symbol(m, 42, 0x401000, 1);

	rec_init(&r, "cudaLaunchKernel", 42, 5000, 700, 0);
	launch_words(&r, 0x401000, 4, 2, 1, 256, 1, 1, 0, 0);
	ASSERT_EQ(decode(&r, m, &ev), 1, "decodes");
	ASSERT_STREQ(ev.kind, "cuda_api", "kind");
	ASSERT_STREQ(ev.name, "cudaLaunchKernel", "name");
	ASSERT_EQ(ev.ts, 5000, "ts");
	ASSERT_EQ(ev.dur, 700, "dur");
	ASSERT_EQ(ev.pid, 42, "pid");
	ASSERT_STR(&ev, "kernel", "vecAdd(float*, float*, int)");
	ASSERT_U64(&ev, "grid_x", 4);
	ASSERT_U64(&ev, "grid_y", 2);
	ASSERT_U64(&ev, "block_x", 256);
	ASSERT_U64(&ev, "shared_bytes", 0);
	ASSERT_HEX(&ev, "stream", 0);
	ASSERT_S64(&ev, "ret", 0);
	ASSERT_NO_ARG(&ev, "error");
	ASSERT_NO_ARG(&ev, "depth");

	/* Another process: the symbol belongs to pid 42 only. Upper rax bits are not the code. */
	r.u.h.pid = 43;
	r.u.ret = 0xdead000000000023ll;
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kernel", "0x401000");
	ASSERT_S64(&ev, "ret", 35);
	ASSERT_STR(&ev, "error", "cudaErrorInsufficientDriver");

	rec_init(&r, "cuMemAlloc_v2", 42, 5100, 80, 2);
	r.u.depth = 1;
	r.u.args[0] = 0x7ffd1000;
	r.u.args[1] = 1 << 20;
	r.u.out = 0x7f0000000000;
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "error", "CUDA_ERROR_OUT_OF_MEMORY");
	ASSERT_U64(&ev, "depth", 1);
	ASSERT_U64(&ev, "bytes", 1 << 20);
	ASSERT_NO_ARG(&ev, "ptr");
	r.u.ret = 0;
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "ptr", 0x7f0000000000);
	ASSERT_NO_ARG(&ev, "error");
	ASSERT_EQ(ev.nargs, 4, "ret depth bytes ptr");

	rec_init(&r, "cudaFreeAsync_ptsz", 42, 5200, 5, 0);
	r.u.args[0] = 0x7f0000000000;
	r.u.args[1] = 0x5000;
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "ptr", 0x7f0000000000);
	ASSERT_HEX(&ev, "stream", 0x5000);

	rec_init(&r, "cudaEventSynchronize", 42, 5300, 5, 0);
	r.u.args[0] = 0xe1;
	decode(&r, m, &ev);
	ASSERT_HEX(&ev, "event", 0xe1);
	ASSERT_EQ(ev.nargs, 2, "ret event");

	/* A cudaMemcpyKind out of range is no direction at all. */
	rec_init(&r, "cudaMemcpy", 42, 5400, 5, 0);
	r.u.args[2] = 10;
	r.u.args[3] = 5;
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kind", "unknown");
	ASSERT_U64(&ev, "bytes", 10);

	/* A record that claims a deref it does not hold: the deref is ignored. */
	rec_init(&r, "cuMemcpy2D_v2", 42, 5500, 5, 0);
	r.u.deref_len = BS_UCALL_DEREF_STRUCT;
	decode(&r, m, &ev);
	ASSERT_STR(&ev, "kind", "unknown");
	ASSERT_NO_ARG(&ev, "bytes");
	ASSERT_NO_ARG(&ev, "src");

	/* A name that fills the whole string copy without a NUL is cut, not overrun. */
	rec_init(&r, "cuLibraryGetKernel", 42, 5600, 5, 0);
	memset(r.deref, 'k', sizeof(r.deref));
	rec_deref(&r, r.deref, BS_UCALL_DEREF_STRING);
	decode(&r, m, &ev);
	ASSERT_EQ(strlen(ev_arg(&ev, "name")->str), sizeof(ev.strbuf) - 1, "name cut at strbuf");

	/* A function a newer table knows. */
	rec_init(&r, "cudaMalloc", 42, 5700, 5, 1);
	r.u.fn = 4000;
	decode(&r, m, &ev);
	ASSERT_STREQ(ev.name, "cuda_fn_4000", "unknown fn");
	ASSERT_STR(&ev, "error", "error_1");
	ASSERT_EQ(ev.nargs, 2, "ret error");

	/* Through the family registry: a record shorter than bs_ucall is refused. */
	rec_init(&r, "cudaMalloc", 42, 5800, 5, 0);
	if (family__decoder(BS_REC_CUDA_CALL)) {
		ASSERT_EQ(family__decode(&r.u.h, m, &ev), 1, "registered decoder");
		r.u.h.size = sizeof(r.u) - 8;
		ASSERT_EQ(family__decode(&r.u.h, m, &ev), -EINVAL, "short record refused");
	}
	trace_model__free(m);
}

/* Decoders run on untrusted records: any bytes, any claimed deref_len, any fn. */
static void test_decode_garbage(void)
{
	struct trace_model *m = trace_model__new();
	const struct report *const *rp;
	unsigned int seed = 1;
	void *st[8] = {};
	struct event ev;
	struct rec r;
	int n = 0;
	/* Three call sites for cuda_callsites: stacks of one Python frame on lines 1-3. */
	struct {
		struct bs_stack h;
		struct bs_frame f;
	} stk = {};
	struct bs_stack_ref ref = {};

	for (__u32 id = 1; id <= 3; id++) {
		stk.h.h = (struct bs_hdr){ .type = BS_REC_STACK, .size = sizeof(stk) };
		stk.h.id = id;
		stk.h.nframes = 1;
		stk.f = (struct bs_frame){ .kind = BS_FRAME_PYTHON, .line = id };
		trace_model__observe(m, &stk.h.h);
	}
	for (rp = cuda_reports; *rp; rp++, n++)
		st[n] = (*rp)->new ();
	for (int i = 0; i < 20000; i++) {
		unsigned char *p = (unsigned char *)&r;

		for (size_t b = 0; b < sizeof(r); b++)
			p[b] = rand_r(&seed);
		r.u.h.type = BS_REC_CUDA_CALL;
		r.u.h.size = sizeof(r.u) + (rand_r(&seed) % (BS_UCALL_DEREF_STRING / 8 + 1)) * 8;
		r.u.fn = rand_r(&seed) % (cuda_table.napis + 8);
		if (i & 1)
			r.u.deref_len = i & 2 ? BS_UCALL_DEREF_STRUCT : BS_UCALL_DEREF_STRING;
		if (i & 4)
			r.u.depth = 0; /* what the reports count */
		if (!(i & 8)) {	       /* the call carries one of the three stacks */
			ref.h = (struct bs_hdr){ .type = BS_REC_STACK_REF,
						 .size = sizeof(ref),
						 .tid = r.u.h.tid,
						 .ts = r.u.h.ts };
			ref.stack_id = 1 + i % 3;
			ref.event_type = BS_REC_CUDA_CALL;
			trace_model__observe(m, &ref.h);
		}
		if (!ASSERT_EQ(decode(&r, m, &ev), 1, "decodes"))
			break;
		ASSERT_TRUE(ev.nargs <= EVENT_MAX_ARGS && ev.strbuf_used <= sizeof(ev.strbuf),
			    "bounded");
		for (int k = 0; k < n; k++)
			cuda_reports[k]->add(st[k], &r.u.h, m);
	}
	for (int k = 0; k < n; k++) {
		struct table *t = table__new(cuda_reports[k]->name);

		ASSERT_EQ(cuda_reports[k]->emit(st[k], m, t), 0, "emit");
		if (table__nrows(t) < 3) /* the reports did count something */
			unit_fail("%s: only %d rows from garbage", cuda_reports[k]->name,
				  table__nrows(t));
		table__free(t);
		cuda_reports[k]->free(st[k]);
	}
	trace_model__free(m);
}

/* ---- Reports over a written trace. ---- */

static struct trace_writer *open_trace(const char *path)
{
	struct trace_meta meta = {
		.hostname = "unit",
		.kernel = "6.18",
		.cmdline = "bpfsight record (unit test)",
		.families = "cuda",
		.target = "system-wide",
		.tool_version = "test",
		.start = { .mono_ns = 1000, .realtime_ns = 1700000000123456789ull },
	};
	int err = 0;

	return trace_writer__open(path, &meta, TRACE_WRITER_FORCE, &err);
}

static __u64 put_ts = 10000;

static void put(struct trace_writer *w, struct rec *r)
{
	r->u.h.ts = put_ts += 100000;
	trace_writer__append(w, &r->u.h);
}

static void put_launch(struct trace_writer *w, const char *name, __u16 depth, __u64 dur, __s64 ret,
		       __u64 func, __u32 gx, __u32 bx, __u64 shmem)
{
	struct rec r;

	rec_init(&r, name, 100, 0, dur, ret);
	r.u.depth = depth;
	if (name[2] == 'd') { /* cudaLaunchKernel */
		launch_words(&r, func, gx, 1, 1, bx, 1, 1, shmem, 0);
	} else { /* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, ...) */
		__u64 w[] = { func, gx, 1, 1, bx, 1, 1, shmem, 0 };

		memcpy(r.u.args, w, sizeof(w));
	}
	put(w, &r);
}

static void put_copy(struct trace_writer *w, const char *name, __u16 depth, __u64 dur, __u64 bytes,
		     int kind)
{
	struct rec r;

	rec_init(&r, name, 100, 0, dur, 0);
	r.u.depth = depth;
	r.u.args[0] = 0xd000; /* dst */
	r.u.args[1] = name[2] == 'd' && strstr(name, "Memset") ? 0 : 0x5000;
	r.u.args[2] = bytes;
	r.u.args[3] = kind;
	put(w, &r);
}

static int write_cuda_trace(const char *path)
{
	struct trace_writer *w = open_trace(path);
	struct {
		struct bs_string s;
		char text[32];
	} str = {};
	struct bs_symbol sym = {};
	struct rec r;

	if (!w)
		return -EIO;
	str.s.h = (struct bs_hdr){ .type = BS_REC_STRING, .size = sizeof(str), .pid = 100 };
	str.s.id = 1;
	str.s.len = 6;
	memcpy(str.text, "vecAdd", 6);
	trace_writer__append(w, &str.s.h);
	str.s.id = 2;
	str.s.len = 4;
	memset(str.text, 0, sizeof(str.text));
	memcpy(str.text, "gemm", 4);
	trace_writer__append(w, &str.s.h);
	sym.h = (struct bs_hdr){ .type = BS_REC_SYMBOL, .size = sizeof(sym), .pid = 100 };
	sym.addr = 0x401000;
	sym.name_id = 1;
	sym.kind = BS_SYM_HOST_FUNC;
	trace_writer__append(w, &sym.h);
	sym.addr = 0x9000;
	sym.name_id = 2;
	sym.kind = BS_SYM_HANDLE;
	trace_writer__append(w, &sym.h);

	/* vecAdd 4x1x1 / 256x1x1: three launches, each running the driver's launch inside. */
	put_launch(w, "cudaLaunchKernel", 0, 100, 0, 0x401000, 4, 256, 0);
	put_launch(w, "cuLaunchKernel", 1, 40, 0, 0x9000, 4, 256, 0);
	put_launch(w, "cudaLaunchKernel", 0, 200, 0, 0x401000, 4, 256, 0);
	put_launch(w, "cudaLaunchKernel", 0, 300, 0, 0x401000, 4, 256, 0);
	/* vecAdd with another grid; a failing launch still counts as a launch call. */
	put_launch(w, "cudaLaunchKernel", 0, 400, 35, 0x401000, 8, 256, 0);
	/* gemm through the driver directly, 1024 bytes of shared memory, and an unnamed one. */
	put_launch(w, "cuLaunchKernel_ptsz", 0, 10, 0, 0x9000, 1, 128, 1024);
	put_launch(w, "cuLaunchKernel", 0, 30, 0, 0x9000, 1, 128, 1024);
	put_launch(w, "cuLaunchKernel", 0, 20, 0, 0xabc0, 2, 32, 0);
	/* Copies: four HtoD (even count: median of the middle two), one DtoH, a nested one. */
	put_copy(w, "cudaMemcpy", 0, 1000, 100, 1);
	put_copy(w, "cudaMemcpy", 0, 2000, 200, 1);
	put_copy(w, "cudaMemcpy", 0, 10000, 400, 1);
	put_copy(w, "cudaMemcpy", 0, 3000, 300, 1);
	put_copy(w, "cuMemcpyHtoD_v2", 1, 900, 300, 0);
	put_copy(w, "cudaMemcpy", 0, 500, 64, 2);
	/* Memsets: cudaMemset(dst, value, count) and cuMemsetD32_v2(dst, ui, N): 4 * N bytes. */
	put_copy(w, "cudaMemset", 0, 50, 256, 0);
	put_copy(w, "cuMemsetD32_v2", 0, 70, 10, 0);
	/* Errors: two failed cudaMalloc, each with its failed driver allocation inside. */
	for (int i = 0; i < 2; i++) {
		rec_init(&r, "cudaMalloc", 100, 0, 60, 2);
		r.u.args[1] = 1ull << 40;
		put(w, &r);
		rec_init(&r, "cuMemAlloc_v2", 100, 0, 30, 2);
		r.u.depth = 1;
		put(w, &r);
	}
	/* A function of a newer table. */
	rec_init(&r, "cudaMalloc", 100, 0, 5, 0);
	r.u.fn = 4000;
	put(w, &r);
	return trace_writer__close(w, &(struct trace_clocks){ .mono_ns = put_ts + 1000 });
}

static int row_of(const struct table *t, const char *name)
{
	int c = table__col(t, "name");

	for (int i = 0; i < table__nrows(t); i++)
		if (!strcmp(table__get_str(t, i, c), name))
			return i;
	return -1;
}

#define U64_AT(t, row, col) table__get_u64(t, row, table__col(t, col))
#define DBL_AT(t, row, col) table__get_double(t, row, table__col(t, col))
#define STR_AT(t, row, col) table__get_str(t, row, table__col(t, col))

static void test_reports(void)
{
	const struct table *t;
	struct stats *s = NULL;
	char path[128];
	int status, i;
	/* Depth-0 time: launches 100+200+300+400 + 10+30+20, copies 16000 + 500,
	 * memsets 50+70, mallocs 2 * 60, fn 4000: 5. */
	const double grand = 1000 + 60 + 16500 + 120 + 120 + 5;

	snprintf(path, sizeof(path), "%s/cuda.bst", tmp_dir);
	if (!ASSERT_EQ(write_cuda_trace(path), 0, "write trace"))
		return;
	s = stats__collect(path, "cuda_api_sum,cuda_launch_sum,cuda_memcpy_sum,cuda_err_sum",
			   &status);
	if (!ASSERT_TRUE(s, "collect") || !ASSERT_EQ(status, EXIT_READ_OK, "status"))
		goto out;

	/* cuda_api_sum: nested calls (cuLaunchKernel x1, cuMemcpyHtoD_v2, cuMemAlloc_v2) are out. */
	t = stats__table(s, "cuda_api_sum");
	if (!ASSERT_TRUE(t, "cuda_api_sum"))
		goto out;
	ASSERT_EQ(table__nrows(t), 8, "api rows");
	ASSERT_STREQ(STR_AT(t, 0, "name"), "cudaMemcpy", "sorted by total: cudaMemcpy first");
	ASSERT_EQ(U64_AT(t, 0, "count"), 5, "cudaMemcpy count");
	ASSERT_EQ(U64_AT(t, 0, "total_ns"), 16500, "cudaMemcpy total");
	ASSERT_NEAR(DBL_AT(t, 0, "avg_ns"), 3300, 1e-9, "cudaMemcpy avg");
	ASSERT_NEAR(DBL_AT(t, 0, "med_ns"), 2000, 1e-9,
		    "cudaMemcpy med (500 1000 2000 3000 10000)");
	ASSERT_EQ(U64_AT(t, 0, "min_ns"), 500, "cudaMemcpy min");
	ASSERT_EQ(U64_AT(t, 0, "max_ns"), 10000, "cudaMemcpy max");
	/* population: mean 3300, squared deviations 7.84e6 5.29e6 1.69e6 0.09e6 44.89e6 */
	ASSERT_NEAR(DBL_AT(t, 0, "stddev_ns"), sqrt(59.8e6 / 5), 1e-6, "cudaMemcpy stddev");
	ASSERT_NEAR(DBL_AT(t, 0, "time_pct"), 16500 * 100.0 / grand, 1e-9, "cudaMemcpy pct");
	i = row_of(t, "cudaLaunchKernel");
	if (ASSERT_TRUE(i == 1, "cudaLaunchKernel second")) {
		ASSERT_EQ(U64_AT(t, i, "count"), 4, "launch count");
		ASSERT_EQ(U64_AT(t, i, "total_ns"), 1000, "launch total");
		ASSERT_NEAR(DBL_AT(t, i, "med_ns"), 250, 1e-9, "even count median (200+300)/2");
		ASSERT_NEAR(DBL_AT(t, i, "stddev_ns"), sqrt(50000 / 4.0), 1e-9, "launch stddev");
	}
	i = row_of(t, "cuLaunchKernel");
	if (ASSERT_TRUE(i >= 0, "cuLaunchKernel row")) {
		ASSERT_EQ(U64_AT(t, i, "count"), 2, "depth-0 cuLaunchKernel only");
		ASSERT_EQ(U64_AT(t, i, "total_ns"), 50, "cuLaunchKernel total");
	}
	ASSERT_EQ(row_of(t, "cuMemcpyHtoD_v2"), -1, "nested copy not counted");
	ASSERT_EQ(row_of(t, "cuMemAlloc_v2"), -1, "nested alloc not counted");
	ASSERT_TRUE(row_of(t, "cuda_fn_4000") >= 0, "unknown fn row");
	ASSERT_EQ(U64_AT(t, row_of(t, "cudaMalloc"), "count"), 2, "cudaMalloc count");

	/* cuda_launch_sum: by name and shape, most launches first. */
	t = stats__table(s, "cuda_launch_sum");
	if (!ASSERT_TRUE(t, "cuda_launch_sum") || !ASSERT_EQ(table__nrows(t), 4, "launch rows"))
		goto out;
	ASSERT_STREQ(STR_AT(t, 0, "name"), "vecAdd", "row 0");
	ASSERT_EQ(U64_AT(t, 0, "count"), 3, "row 0 count");
	ASSERT_STREQ(STR_AT(t, 0, "grid"), "4x1x1", "row 0 grid");
	ASSERT_STREQ(STR_AT(t, 0, "block"), "256x1x1", "row 0 block");
	ASSERT_EQ(U64_AT(t, 0, "shared_bytes"), 0, "row 0 shared");
	ASSERT_EQ(U64_AT(t, 0, "total_ns"), 600, "row 0 total");
	ASSERT_STREQ(STR_AT(t, 1, "name"), "gemm",
		     "row 1: gemm, from cuLaunchKernel and its _ptsz");
	ASSERT_EQ(U64_AT(t, 1, "count"), 2, "row 1 count");
	ASSERT_STREQ(STR_AT(t, 1, "grid"), "1x1x1", "row 1 grid");
	ASSERT_STREQ(STR_AT(t, 1, "block"), "128x1x1", "row 1 block");
	ASSERT_EQ(U64_AT(t, 1, "shared_bytes"), 1024, "row 1 shared");
	ASSERT_EQ(U64_AT(t, 1, "total_ns"), 40, "row 1 total");
	ASSERT_STREQ(STR_AT(t, 2, "name"), "vecAdd", "row 2: one launch, 400 ns");
	ASSERT_STREQ(STR_AT(t, 2, "grid"), "8x1x1", "row 2 grid");
	ASSERT_EQ(U64_AT(t, 2, "total_ns"), 400, "row 2 total");
	ASSERT_STREQ(STR_AT(t, 3, "name"), "0xabc0", "row 3: unnamed handle");
	ASSERT_STREQ(STR_AT(t, 3, "grid"), "2x1x1", "row 3 grid");

	/* cuda_memcpy_sum */
	t = stats__table(s, "cuda_memcpy_sum");
	if (!ASSERT_TRUE(t, "cuda_memcpy_sum") || !ASSERT_EQ(table__nrows(t), 3, "memcpy rows"))
		goto out;
	ASSERT_STREQ(STR_AT(t, 0, "name"), "HtoD", "HtoD first");
	ASSERT_EQ(U64_AT(t, 0, "count"), 4, "HtoD count (nested excluded)");
	ASSERT_EQ(U64_AT(t, 0, "bytes"), 1000, "HtoD bytes");
	ASSERT_EQ(U64_AT(t, 0, "total_ns"), 16000, "HtoD total");
	ASSERT_NEAR(DBL_AT(t, 0, "avg_ns"), 4000, 1e-9, "HtoD avg");
	ASSERT_EQ(U64_AT(t, 0, "min_ns"), 1000, "HtoD min");
	ASSERT_EQ(U64_AT(t, 0, "max_ns"), 10000, "HtoD max");
	ASSERT_STREQ(STR_AT(t, 1, "name"), "DtoH", "DtoH");
	ASSERT_EQ(U64_AT(t, 1, "bytes"), 64, "DtoH bytes");
	ASSERT_EQ(U64_AT(t, 1, "count"), 1, "DtoH count");
	ASSERT_STREQ(STR_AT(t, 2, "name"), "memset", "memset row");
	ASSERT_EQ(U64_AT(t, 2, "count"), 2, "memset count");
	ASSERT_EQ(U64_AT(t, 2, "bytes"), 256 + 40, "memset bytes");
	ASSERT_EQ(U64_AT(t, 2, "min_ns"), 50, "memset min");
	ASSERT_EQ(U64_AT(t, 2, "max_ns"), 70, "memset max");
	ASSERT_NEAR(DBL_AT(t, 2, "avg_ns"), 60, 1e-9, "memset avg");

	/* cuda_err_sum: nested driver errors count, with the driver's names. */
	t = stats__table(s, "cuda_err_sum");
	if (!ASSERT_TRUE(t, "cuda_err_sum") || !ASSERT_EQ(table__nrows(t), 3, "err rows"))
		goto out;
	ASSERT_STREQ(STR_AT(t, 0, "name"), "cuMemAlloc_v2", "count 2, by name");
	ASSERT_EQ(table__get_s64(t, 0, table__col(t, "code")), 2, "code");
	ASSERT_STREQ(STR_AT(t, 0, "error"), "CUDA_ERROR_OUT_OF_MEMORY", "driver name");
	ASSERT_EQ(U64_AT(t, 0, "count"), 2, "count");
	ASSERT_STREQ(STR_AT(t, 1, "name"), "cudaMalloc", "cudaMalloc");
	ASSERT_STREQ(STR_AT(t, 1, "error"), "cudaErrorMemoryAllocation", "runtime name");
	ASSERT_EQ(U64_AT(t, 1, "count"), 2, "cudaMalloc count");
	ASSERT_STREQ(STR_AT(t, 2, "name"), "cudaLaunchKernel", "launch error");
	ASSERT_STREQ(STR_AT(t, 2, "error"), "cudaErrorInsufficientDriver", "35");
	ASSERT_EQ(U64_AT(t, 2, "count"), 1, "launch error count");
out:
	stats__free(s);
	unlink(path);
}

/* What `stats --format csv` prints: the columns users script against. */
static void test_report_columns(void)
{
	static const char want[] = "# cuda_launch_sum\n"
				   "count,total_ns,grid,block,shared_bytes,name\n"
				   "3,600,4x1x1,256x1x1,0,vecAdd\n"
				   "2,40,1x1x1,128x1x1,1024,gemm\n"
				   "1,400,8x1x1,256x1x1,0,vecAdd\n"
				   "1,20,2x1x1,32x1x1,0,0xabc0\n"
				   "\n"
				   "# cuda_memcpy_sum\n"
				   "total_ns,count,bytes,avg_ns,min_ns,max_ns,name\n"
				   "16000,4,1000,4000.0,1000,10000,HtoD\n"
				   "500,1,64,500.0,500,500,DtoH\n"
				   "120,2,296,60.0,50,70,memset\n"
				   "\n"
				   "# cuda_err_sum\n"
				   "count,code,error,name\n"
				   "2,2,CUDA_ERROR_OUT_OF_MEMORY,cuMemAlloc_v2\n"
				   "2,2,cudaErrorMemoryAllocation,cudaMalloc\n"
				   "1,35,cudaErrorInsufficientDriver,cudaLaunchKernel\n";
	char path[128], *buf = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cols.bst", tmp_dir);
	if (!ASSERT_EQ(write_cuda_trace(path), 0, "write trace"))
		return;
	f = open_memstream(&buf, &len);
	ASSERT_EQ(stats__run(path, "cuda_launch_sum,cuda_memcpy_sum,cuda_err_sum", STATS_FORMAT_CSV,
			     f),
		  EXIT_READ_OK, "csv status");
	fclose(f);
	/* Compared by hand: the expected text is longer than unit.h's message buffer. */
	if (strcmp(buf ? buf : "", want))
		unit_fail("csv differs from the expected text; got:\n%.400s", buf ? buf : "(null)");
	free(buf);
	unlink(path);
}

/* The entry probe copies stack words only for functions that have more than 6. */
static void test_cookie_stack_words(void)
{
	/* func, grid (2 words), block (2 words), args, shared memory, stream: 8 words. */
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cudaLaunchKernel")) & BS_UCOOKIE_STACK,
		  BS_UCOOKIE_STACK, "cudaLaunchKernel has stack words");
	/* f, 3 grid, 3 block, shared, stream, params, extra: 11 words. */
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cuLaunchKernel")) & BS_UCOOKIE_STACK,
		  BS_UCOOKIE_STACK, "cuLaunchKernel has stack words");
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cudaMalloc")) & BS_UCOOKIE_STACK, 0,
		  "cudaMalloc has none");
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cudaMemcpyAsync")) & BS_UCOOKIE_STACK, 0,
		  "cudaMemcpyAsync: 5 words");
	ASSERT_EQ(ucall_api__cookie(&cuda_table, fn_of("cudaMemcpy2DAsync")) & BS_UCOOKIE_STACK,
		  BS_UCOOKIE_STACK, "cudaMemcpy2DAsync: 8 words");
}

int main(void)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/bpfsight-unit-XXXXXX");
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_cookie_stack_words);
	RUN_TEST(test_table_check);
	RUN_TEST(test_table_check_catches);
	RUN_TEST(test_table_symbols_exist);
	RUN_TEST(test_table_layouts);
	RUN_TEST(test_error_names);
	RUN_TEST(test_abi_runtime);
	RUN_TEST(test_abi_driver);
	RUN_TEST(test_decode_records);
	RUN_TEST(test_decode_garbage);
	RUN_TEST(test_reports);
	RUN_TEST(test_report_columns);
	rmdir(tmp_dir);
	return UNIT_EXIT();
}
