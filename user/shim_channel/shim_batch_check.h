/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A batch comes from the traced process's memory: every record's type, size and string
 * length is checked before the unpacker reads one (shim_unpack.c).
 */
#ifndef BPFSIGHT_SHIM_BATCH_CHECK_H
#define BPFSIGHT_SHIM_BATCH_CHECK_H

#include <linux/types.h>
#include "shim_records.h"

/*
 * NULL when the records of BH (LEN bytes after it) are all well-formed, else why not. MIN_SIZE
 * is the least size of each record type a shim may send, 0 for the others (a batch with one
 * is refused): shim_family__min_sizes.
 */
const char *shim_batch__check(const struct bs_shim_batch_hdr *bh, __u32 len,
			      const __u16 min_size[BS_REC_TYPE_MAX]);

#endif /* BPFSIGHT_SHIM_BATCH_CHECK_H */
