// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The family registry: adding a family is one line here plus its own files (its recording,
 * decoders, reports and export hooks all hang off its struct family). Alone in its file so
 * that a test can build it again with one line more: -DFAMILIES_EXTRA=family_NAME, last
 * (tests/unit/test_family_toy.c, the toy shim family's test build).
 */
#include <stddef.h>
#include "family.h"
#include "proc.h"
#include "osrt.h"
#include "sched.h"
#include "gil.h"
#include "cuda.h"
#include "nccl.h"
#include "gpu.h"
#include "nvtx.h"
#include "cpu.h"
#include "torch.h"
#include "pyfunc.h"
#include "mem.h"
#include "cublas.h"
#include "blas.h"
#include "cudnn.h"
#include "gpumetrics.h"

#ifdef FAMILIES_EXTRA
extern const struct family FAMILIES_EXTRA;
#endif

/*
 * Families attach in this order. cpu comes before gil: the uprobe manager tells a listener
 * only of the files examined after it joined, and gil examines interpreters as it attaches.
 */
// clang-format off
const struct family *const families[] = {
	&family_proc, /* first: always on, names what the others record */
	&family_osrt, &family_sched, &family_cpu, &family_gil, &family_cuda, &family_nccl,
	&family_gpu, &family_nvtx, &family_torch, &family_pyfunc, &family_mem, &family_cublas,
	&family_blas, &family_cudnn,
	&family_gpumetrics,
#ifdef FAMILIES_EXTRA
	&FAMILIES_EXTRA,
#endif
	NULL,
};
// clang-format on
