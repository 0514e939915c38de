/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A batch comes from the traced process's memory: every record's type, size and string
 * length is checked before the unpacker reads one (shim_unpack.c).
 */
#ifndef BPFSIGHT_SHIM_BATCH_CHECK_H
#define BPFSIGHT_SHIM_BATCH_CHECK_H

#include <linux/types.h>
#include "shim_records.h"

/* NULL when the records of BH (LEN bytes after it) are all well-formed, else why not. */
const char *shim_batch__check(const struct bs_shim_batch_hdr *bh, __u32 len);

#endif /* BPFSIGHT_SHIM_BATCH_CHECK_H */
