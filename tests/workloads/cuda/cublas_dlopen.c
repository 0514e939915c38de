// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Starts without cuBLAS, then dlopen()s CUDA 13's libcublas.so.13 (which loads
 * libcublasLt.so.13) and calls cublasCreate_v2 N times: the runtime calls cuBLAS makes
 * through the CUDA runtime linked statically into it (no symbols) are what the test traces.
 * Without a GPU, each cublasCreate_v2 initializes the context with cudaFree(NULL), which
 * fails (the stub libcuda: cudaErrorStubLibrary), and returns CUBLAS_STATUS_NOT_INITIALIZED.
 *
 *   cublas_dlopen [--lib PATH] N
 *
 * Output: "pid P", then "create P RET" (the first call's return code).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*create_fn)(void **handle);

int main(int argc, char **argv)
{
	const char *lib = "/usr/local/cuda/lib64/libcublas.so.13";
	create_fn create;
	void *h, *handle;
	int n, ret = 0;

	if (argc == 4 && !strcmp(argv[1], "--lib"))
		lib = argv[2];
	else if (argc != 2) {
		fprintf(stderr, "usage: %s [--lib PATH] N\n", argv[0]);
		return 2;
	}
	n = atoi(argv[argc - 1]);
	printf("pid %d\n", getpid());
	fflush(stdout);
	h = dlopen(lib, RTLD_NOW);
	create = h ? (create_fn)dlsym(h, "cublasCreate_v2") : NULL;
	if (!create) {
		fprintf(stderr, "cublas_dlopen: no cublasCreate_v2 in %s: %s\n", lib, dlerror());
		return 1;
	}
	for (int i = 0; i < n; i++) {
		handle = NULL;
		int r = create(&handle);

		if (!i)
			ret = r;
	}
	printf("create %d %d\n", getpid(), ret);
	return 0;
}
