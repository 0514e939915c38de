/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which files held CUDA/NCCL code in earlier recordings, kept across recordings
 * (/var/cache/bpfsight/code-files), so that `-a` probes them when it starts: a short-lived
 * program seen once before (a static-cudart binary) is then traced from its first call,
 * instead of racing the scan its exec triggers.
 *
 * The cache only says where to look: each file is examined again (symbols, probe sites) as
 * any other, and an entry whose file changed (device, inode, size, mtime) is dropped. A
 * corrupt cache is ignored and rewritten. BPFSIGHT_CACHE_DIR moves it (tests);
 * BPFSIGHT_NO_CACHE=1 turns it off.
 */
#ifndef BPFSIGHT_SCAN_CACHE_H
#define BPFSIGHT_SCAN_CACHE_H

#include <linux/types.h>

struct scan_cache;

/* Read the cache (an empty one when there is none, or it is off or unreadable). */
struct scan_cache *scan_cache__load(void);
/* Call FN for every entry whose file is unchanged: its path, to be examined. */
void scan_cache__for_each(const struct scan_cache *c, void (*fn)(void *arg, const char *path),
			  void *arg);
/* PATH (device DEV, inode INO as the kernel shows them) holds probe sites: keep it. */
void scan_cache__add(struct scan_cache *c, const char *path, __u64 dev, __u64 ino);
/* Write it back atomically (0700 directory, 0600 file) if it changed; 0 or -errno. */
int scan_cache__save(struct scan_cache *c);
void scan_cache__free(struct scan_cache *c);

#endif /* BPFSIGHT_SCAN_CACHE_H */
