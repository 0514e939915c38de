// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A cupti-shim batch checked whole before anything in it is used (shim_batch_check.h). */
#include "shim_batch_check.h"
#include <stddef.h>
#include "records.h"
#include "torch_records.h"

static __u32 min_size(__u16 type)
{
	switch (type) {
	case BS_REC_STRING:
		return sizeof(struct bs_string);
	case BS_REC_SHIM_STATUS:
		return sizeof(struct bs_shim_status);
	case BS_REC_GPU_KERNEL:
		return sizeof(struct bs_gpu_kernel);
	case BS_REC_GPU_MEMCPY:
		return sizeof(struct bs_gpu_memcpy);
	case BS_REC_GPU_MEMSET:
		return sizeof(struct bs_gpu_memset);
	case BS_REC_GPU_API:
		return sizeof(struct bs_gpu_api);
	case BS_REC_NVTX_RANGE:
		return sizeof(struct bs_nvtx_range);
	case BS_REC_NVTX_MARK:
		return sizeof(struct bs_nvtx_mark);
	case BS_REC_NVTX_NAME:
		return sizeof(struct bs_nvtx_name);
	case BS_REC_NVTX_BEGIN:
		return sizeof(struct bs_nvtx_begin);
	case BS_REC_TORCH_OP:
		return sizeof(struct bs_torch_op);
	}
	return 0; /* not a type a shim sends */
}

const char *shim_batch__check(const struct bs_shim_batch_hdr *bh, __u32 len)
{
	const __u8 *p = (const __u8 *)(bh + 1), *end = p + len;
	__u32 n = 0;

	while (p < end) {
		const struct bs_hdr *h = (const void *)p;
		__u32 min;

		if (end - p < (long)sizeof(*h))
			return "a record header is cut";
		min = min_size(h->type);
		if (!min)
			return "a record of a type a shim does not send";
		if (h->size < min || h->size % 8 || h->size > end - p)
			return "a record size is wrong";
		if (h->type == BS_REC_STRING &&
		    ((const struct bs_string *)h)->len > h->size - sizeof(struct bs_string))
			return "a string is longer than its record";
		p += h->size;
		n++;
	}
	if (n != bh->nrec)
		return "the record count is wrong";
	return NULL;
}
