/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A file's content id: what `bpfsight ship` keys its ledger by, so that a file shipped twice,
 * under any name, adds nothing. Two FNV-1a hashes (64-bit, different offsets) and the size:
 * not a cryptographic digest, an identity among one fleet's trace files.
 */
#ifndef BPFSIGHT_CONTENT_ID_H
#define BPFSIGHT_CONTENT_ID_H

#include <stddef.h>

#define CONTENT_ID_LEN 48 /* 16 + 16 hex digits, '-', the size in hex, NUL */

/* PATH's content id into BUF (CONTENT_ID_LEN bytes): 0 or a negative errno. */
int content_id__file(const char *path, char *buf);

#endif /* BPFSIGHT_CONTENT_ID_H */
