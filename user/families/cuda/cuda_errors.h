/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Names of CUDA return codes, so that traces decode on machines without CUDA: the runtime's
 * cudaError_t (cudaErrorInsufficientDriver) and the driver's CUresult (CUDA_ERROR_STUB_LIBRARY).
 */
#ifndef BPFSIGHT_CUDA_ERRORS_H
#define BPFSIGHT_CUDA_ERRORS_H

#include <linux/types.h>

/* The enumerator's name, or NULL for a code CUDA 13's headers do not define. */
const char *cuda_error_name(__s32 code);  /* cudaError_t */
const char *cuda_result_name(__s32 code); /* CUresult */

#endif /* BPFSIGHT_CUDA_ERRORS_H */
