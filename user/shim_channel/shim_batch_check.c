// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A cupti-shim batch checked whole before anything in it is used (shim_batch_check.h). */
#include "shim_batch_check.h"
#include <stddef.h>
#include "records.h"

const char *shim_batch__check(const struct bs_shim_batch_hdr *bh, __u32 len,
			      const __u16 min_size[BS_REC_TYPE_MAX])
{
	const __u8 *p = (const __u8 *)(bh + 1), *end = p + len;
	__u32 n = 0;

	while (p < end) {
		const struct bs_hdr *h = (const void *)p;
		__u32 min;

		if (end - p < (long)sizeof(*h))
			return "a record header is cut";
		min = h->type < BS_REC_TYPE_MAX ? min_size[h->type] : 0;
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
