/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading side of the cuda family, shared by its API table (the keys its specs name), its
 * decoder (cuda_decode.c) and its reports (cuda_report.c): one call, read through its
 * compiled argument spec.
 */
#ifndef BPFSIGHT_CUDA_DECODE_H
#define BPFSIGHT_CUDA_DECODE_H

#include <stddef.h>
#include "cuda.h"

/*
 * The keys of cuda specs (cuda_keys, cuda_api.c, says what each may be). The shown keys come
 * first, in the order events list them; the others only feed derived values (bytes, kind,
 * the src/dst shown).
 */
enum cuda_key {
	K_KERNEL,
	K_FUNC,
	K_NAME,
	K_HANDLE,
	K_GRID_X,
	K_GRID_Y,
	K_GRID_Z,
	K_BLOCK_X,
	K_BLOCK_Y,
	K_BLOCK_Z,
	K_SHARED_BYTES,
	K_DST,
	K_DST_DEVICE,
	K_DST_CTX,
	K_SRC,
	K_SRC_DEVICE,
	K_SRC_CTX,
	K_BYTES,
	K_VALUE,
	K_KIND,
	K_COUNT,
	K_PTR,
	K_WIDTH,
	K_HEIGHT,
	K_DEPTH,
	K_ADDR,
	K_POOL,
	K_MODULE,
	K_LIBRARY,
	K_GRAPH,
	K_GRAPH_EXEC,
	K_MODE,
	K_FLAGS,
	K_CTX,
	K_STREAM,
	K_EVENT,
	K_SHOWN_NR,
	K_GRID = K_SHOWN_NR, /* dim3 */
	K_BLOCK,
	K_SRC_MT, /* CUmemorytype */
	K_DST_MT,
	K_SRC_HOST,
	K_DST_HOST,
	K_SRC_ARR,
	K_DST_ARR,
	K_NR,
};

extern const struct ucall_key cuda_keys[K_NR];

/* Memcpy directions; the first five are cudaMemcpyKind's values. */
enum cuda_kind {
	KIND_HTOH,
	KIND_HTOD,
	KIND_DTOH,
	KIND_DTOD,
	KIND_DEFAULT,
	KIND_PTOP,
	KIND_BATCH,
	KIND_UNKNOWN,
	KIND_NR,
};

/* "HtoH", ..., "unknown": the names kind=NAME may use (cuda_api.c). */
extern const char *const cuda_kind_names[KIND_NR];

/* One call, read through its spec. */
struct cuda_call {
	const struct ucall_api *api; /* NULL: fn unknown to this table */
	__s32 code;		     /* cudaError_t / CUresult */
	int kind;		     /* enum cuda_kind, -1 when not a copy */
	__u64 have;		     /* 1 << key of the values read */
	__u64 is_signed;
	__u64 v[K_NR];
	const char *str; /* name:str, not necessarily terminated */
	__u32 strn;
};

/* Read REC (a BS_REC_CUDA_CALL of at least sizeof(struct bs_ucall)) into C. */
void cuda_call__read(const struct bs_hdr *rec, struct cuda_call *c);

/* The name of a kernel, host function or handle in PID; BUF holds the hex fallback. */
const char *cuda_func_name(const struct trace_model *m, __u32 pid, __u64 addr, char *buf,
			   size_t len);

#endif /* BPFSIGHT_CUDA_DECODE_H */
