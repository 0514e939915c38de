// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Where libcupti is. CUPTI is never linked (an NVTX-only process must not load it) but
 * dlopen()ed by InitializeInjection from, in order:
 *   1. the process, if something already loaded it (one CUPTI per process);
 *   2. $BPFSIGHT_CUPTI_PATH;
 *   3. next to the libcudart/libcuda the process loaded: the toolkit's lib64 (and its
 *      extras/CUPTI/lib64), pip's nvidia/cu13/lib (one directory for everything) and
 *      nvidia/cuda_runtime/lib -> nvidia/cuda_cupti/lib;
 *   4. $CUDA_HOME, /usr/local/cuda: lib64 and extras/CUPTI/lib64;
 *   5. the loader's search path (LD_LIBRARY_PATH, ld.so.cache).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

#define CUPTI_SONAME "libcupti.so.13"

/* Relative to the directory of a loaded libcudart/libcuda. */
static const char *const beside_cudart[] = {
	".",
	"../extras/CUPTI/lib64",
	"../../cuda_cupti/lib",
};

static const char *const beside_home[] = {
	"lib64",
	"extras/CUPTI/lib64",
	"lib",
};

static void *try_open(const char *dir, const char *rel)
{
	char path[4096];
	void *h;

	if (snprintf(path, sizeof(path), "%s/%s/%s", dir, rel, CUPTI_SONAME) >= (int)sizeof(path))
		return NULL;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h)
		shim_log("libcupti: %s", path);
	return h;
}

struct search {
	void *handle;
};

static bool is_cuda_lib(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libcudart.so", 12) || !strncmp(base, "libcuda.so", 10);
}

static int beside_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct search *s = arg;
	char dir[4096];
	char *slash;
	size_t i;

	if (!info->dlpi_name || !is_cuda_lib(info->dlpi_name))
		return 0;
	if (snprintf(dir, sizeof(dir), "%s", info->dlpi_name) >= (int)sizeof(dir))
		return 0;
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	for (i = 0; i < sizeof(beside_cudart) / sizeof(beside_cudart[0]); i++) {
		s->handle = try_open(dir, beside_cudart[i]);
		if (s->handle)
			return 1;
	}
	return 0;
}

static void *beside_home_dir(const char *home)
{
	void *h = NULL;
	size_t i;

	if (!home || !*home)
		return NULL;
	for (i = 0; !h && i < sizeof(beside_home) / sizeof(beside_home[0]); i++)
		h = try_open(home, beside_home[i]);
	return h;
}

void *shim_find__cupti(void)
{
	const char *env = secure_getenv("BPFSIGHT_CUPTI_PATH");
	struct search s = { NULL };
	void *h;

	h = dlopen(CUPTI_SONAME, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		return h;
	if (env && *env) {
		h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
		shim_log("BPFSIGHT_CUPTI_PATH=%s: %s", env, dlerror());
	}
	dl_iterate_phdr(beside_loaded, &s);
	if (s.handle)
		return s.handle;
	h = beside_home_dir(secure_getenv("CUDA_HOME"));
	if (!h)
		h = beside_home_dir("/usr/local/cuda");
	if (!h)
		h = dlopen(CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL);
	return h;
}
