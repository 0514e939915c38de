/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * zlib's crc32(), the same value, folded 64 bytes at a time with carry-less multiplies
 * (PCLMULQDQ) where the CPU has them: zlib's table-driven loop is several times slower, and
 * the unwind tables' store checks every entry it reads (a torch job: 67 MiB of rows at each
 * start; bench/RESULTS.md). Elsewhere, and for what is left under 16 bytes, zlib's.
 */
#ifndef BPFSIGHT_CRC32_FAST_H
#define BPFSIGHT_CRC32_FAST_H

#include <stddef.h>

/* crc32(CRC, BUF, LEN) as zlib computes it (CRC 0 to start). */
unsigned int crc32_fast(unsigned int crc, const void *buf, size_t len);

#endif /* BPFSIGHT_CRC32_FAST_H */
