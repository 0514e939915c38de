// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libnvtx_second.so: NVTX calls from a second shared object. nvtx3 is header-only, so this
 * DSO has its own NVTX instance, which loads and initializes the injection on its own first
 * call (InitializeInjectionNvtx2 runs once per instance). Used by nvtx_ranges --second-dso:
 * push A "second-dso", mark A "second-dso-mark", pop.
 */
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) void nvtx_second_work(int i)
{
	nvtxRangePushA("second-dso");
	nvtxMarkA("second-dso-mark");
	nvtxRangePop();
}
