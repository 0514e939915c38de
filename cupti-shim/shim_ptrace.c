// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A shim loaded into a running process by `bpfsight record --inject` (user/shim_channel/shim_inject.c):
 * a thread of the process was made to call dlopen() on a copy whose name ends with
 * BS_SHIM_INJECT_SUFFIX. No CUDA or NVTX entry point will call us (the process did not name
 * us in CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH), so the constructor is the entry:
 * it sets PTRACE_INJECTED and starts the poller, and returns at once: the borrowed thread
 * is away from its own code until it does. Everything slow (loading CUPTI, tens of ms) is
 * the poller's: shim_ptrace__poll loads CUPTI once GPU activity is wanted and the process has
 * libcuda (CUPTI's activity API can be enabled after contexts exist; kernels launched from
 * then on are recorded). A copy that LD_PRELOAD names starts the same way (PRELOADED: a
 * CPU-only PyTorch job, where nothing else would). A copy loaded under any other name does
 * nothing here.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "shim_nvtx.h"
#include "shim_usdt.h"

static bool injected;
static bool cupti_tried;
static bool nvtx_tried;

static bool named_for_injection(const char *self)
{
	size_t n = strlen(BS_SHIM_INJECT_SUFFIX), len = strlen(self);

	return len > n && !strcmp(self + len - n, BS_SHIM_INJECT_SUFFIX);
}

/*
 * LD_PRELOAD names this file (record -t torch's launch mode, or a CPU-only job started so):
 * no CUDA or NVTX entry point may ever call us in a process without a GPU, so the
 * constructor starts the poller, as for an injected shim. The loader reads LD_PRELOAD
 * before any thread runs: reading it here races no setenv.
 */
static bool preloaded(const char *self)
{
	const char *list = getenv("LD_PRELOAD"), *p;
	size_t len = strlen(self);

	for (p = list; p && (p = strstr(p, self)); p += len)
		if ((p == list || p[-1] == ':' || p[-1] == ' ') &&
		    (!p[len] || p[len] == ':' || p[len] == ' '))
			return true;
	return false;
}

__attribute__((constructor)) static void shim_ptrace_ctor(void)
{
	Dl_info info;

	if (!dladdr((void *)shim_ptrace_ctor, &info) || !info.dli_fname)
		return;
	if (named_for_injection(info.dli_fname)) {
		injected = true;
		shim_core__enter(BS_SHIM_ST_PTRACE_INJECTED);
	} else if (preloaded(info.dli_fname)) {
		injected = true; /* CUPTI and late NVTX as for an injected one */
		shim_core__enter(BS_SHIM_ST_PRELOADED);
	}
}

/* Poller, ctl held: CUPTI as InitializeInjection would have set it up, once, when wanted. */
void shim_ptrace__poll(bool gpu_wanted)
{
	void *cuda;

	if (!injected || cupti_tried || !gpu_wanted ||
	    (shim_core__state() & BS_SHIM_ST_CUDA_INJECTED))
		return;
	/* Only a process that uses CUDA gets CUPTI; NOLOAD: never load libcuda ourselves. */
	cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!cuda) {
		/* Said once per session (shim_cupti__fail): why there are no GPU records yet. */
		shim_cupti__fail("no libcuda in the process (yet): CUPTI starts once it is loaded",
				 0);
		return;
	}
	dlclose(cuda);
	cupti_tried = true;
	shim_cupti__init();
}

/*
 * Poller, ctl not held (InitializeInjectionNvtx2 takes it): from when a tracer first wants
 * NVTX, the process's NVTX instances that can be reached (shim_nvtx_late.c), as they come.
 */
void shim_ptrace__nvtx(void)
{
	static unsigned int total;
	unsigned int n;
	bool first;

	if (!injected || (!nvtx_tried && (SHIM_SEM(nvtx) == 0 || SHIM_SEM(batch) == 0)))
		return;
	first = !nvtx_tried;
	nvtx_tried = true;
	n = shim_nvtx_late__inject(first);
	total += n;
	if (n)
		shim_log("NVTX instances instrumented late: %u", n);
	if (first && !total)
		shim_cupti__fail("nvtx: no initialized NVTX instance with symbols in the process "
				 "(yet): stripped libraries cannot be reached late",
				 0);
}
