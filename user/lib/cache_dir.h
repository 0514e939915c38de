/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where bpfsight keeps what it learns across recordings: /var/cache/bpfsight (root's, 0700),
 * BPFSIGHT_CACHE_DIR=DIR instead (trusted only from bpfsight's own user: env.h), and nothing
 * with BPFSIGHT_NO_CACHE=1. The scan cache (scan_cache.h) keeps a file there, the unwind
 * tables (unwind_store.h) a folder.
 */
#ifndef BPFSIGHT_CACHE_DIR_H
#define BPFSIGHT_CACHE_DIR_H

#include <stddef.h>

/* The cache's folder into BUF (LEN bytes); NULL when the caches are off. */
const char *cache_dir__path(char *buf, size_t len);

#endif /* BPFSIGHT_CACHE_DIR_H */
