// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cuda family: its API table against the real libraries and headers (every function exists,
 * the args strings match CUDA 13's struct layouts, the error names cudaGetErrorName and
 * cuda.h give).
 */
#include "cuda_rec.h"

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
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "launch without its side");
	ASSERT_STREQ(err, "cuLaunchKernel: a launch is CUDA_F_RT_LAUNCH, a driver one _DRV_LAUNCH",
		     "side message");
	bad[1].flags = CUDA_F_DRIVER | CUDA_F_RT_LAUNCH;
	ASSERT_EQ(ucall_table__check(&t, err, sizeof(err)), -EINVAL, "driver launch as runtime");
	bad[1].flags = CUDA_F_DRIVER | CUDA_F_DRV_LAUNCH;
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

/*
 * One probe pair per launch: a runtime launch's cookie says its driver launch is its own work,
 * a driver launch's that it is not recorded inside one; no other function is either.
 */
static void test_launch_cookies(void)
{
	int wraps = 0, wrapped = 0;

	for (__u32 i = 0; i < cuda_table.napis; i++) {
		const char *n = cuda_table.apis[i].name;
		__u64 c = ucall_api__cookie(&cuda_table, i);
		int rt = !strncmp(n, "cudaLaunch", 10) || !strncmp(n, "cudaGraphLaunch", 15);
		int drv = !strncmp(n, "cuLaunch", 8) || !strncmp(n, "cuGraphLaunch", 13);

		ASSERT_EQ(!!(c & BS_UCOOKIE_WRAPS), rt, n);
		ASSERT_EQ(!!(c & BS_UCOOKIE_WRAPPED), drv, n);
		ASSERT_EQ(BS_UCOOKIE_FN(c), i, n);
		wraps += rt;
		wrapped += drv;
	}
	/* cudaLaunchKernel, CooperativeKernel, KernelExC, HostFunc, GraphLaunch, each _ptsz;
	 * the driver's the same. */
	ASSERT_EQ(wraps, 10, "runtime launches");
	ASSERT_EQ(wrapped, 10, "driver launches");
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

int main(void)
{
	RUN_TEST(test_table_check);
	RUN_TEST(test_table_check_catches);
	RUN_TEST(test_launch_cookies);
	RUN_TEST(test_table_symbols_exist);
	RUN_TEST(test_table_layouts);
	RUN_TEST(test_error_names);
	return UNIT_EXIT();
}
