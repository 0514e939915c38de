/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unwind tables kept across recordings (docs/STACKS.md, "The tables' cache"): a file's rows,
 * once built, are written to CACHE/unwind/BUILD_ID.rows (cache_dir.h: /var/cache/bpfsight,
 * root's), so the next recording of a job reads them instead of building them again
 * (libtorch_cpu's is built in a few hundred ms, read in a few). The store is untrusted on
 * read: an entry is used only when it is a regular file the recorder's user owns that no one
 * else may write, in a folder of the same kind, whose header, size, build id, ELF size and
 * checksums all agree and whose rows are sorted; anything else (corrupt, foreign-owned,
 * written by another version of the builder) is refused and the table built and written
 * again. Bounded: past UNWIND_STORE_MAX bytes the entries used longest ago go (a hit touches
 * its entry). A file without a build id is never kept (nothing names it for sure).
 *
 * Used by the builder's thread (unwind_builder.c) and `bpfsight stacks`: every call is on
 * its own (no state), so a thread left behind on a hung file system holds nothing here.
 */
#ifndef BPFSIGHT_UNWIND_STORE_H
#define BPFSIGHT_UNWIND_STORE_H

#include <linux/types.h>
#include <stddef.h>
#include "unwind_build.h"

#define UNWIND_STORE_MAX (512ull << 20) /* bytes of entries kept */
/*
 * The rows' meaning and the builder's rules: an entry of another version is stale (built
 * again). Raised whenever a change to the builder gives any file other rows.
 */
#define UNWIND_STORE_VERSION 1

/* How a table was had (unwind_store__table's *HOW). */
enum unwind_store_how {
	UNWIND_STORE_BUILT = 0,	  /* built (no entry, a stale one, or the store is off) */
	UNWIND_STORE_READ = 1,	  /* read from its entry */
	UNWIND_STORE_REFUSED = 2, /* its entry was refused (corrupt, not ours): built again */
};

/* The store's folder into BUF (LEN bytes): CACHE/unwind; NULL when the caches are off. */
const char *unwind_store__dir(char *buf, size_t len);
/*
 * The table of the ELF file at PATH (ROOT as for unwind_table__build): read from DIR's entry
 * for its build id when a sound one is there, else built and written there (DIR NULL: built,
 * nothing kept). *HOW says which; WHY (LEN bytes) why an entry was refused. 0, or
 * unwind_table__build's errors.
 */
int unwind_store__table(const char *dir, const char *path, const char *root,
			struct unwind_table *out, int *how, char *why, size_t len);
/*
 * DIR's entry for build id ID of a file of ELF_SIZE bytes: 0 with OUT filled, -ENOENT (none),
 * -ESTALE (another version's, or another file's that claims the id), or -EBADMSG / -EPERM
 * (corrupt, not ours: WHY says what) when refused.
 */
int unwind_store__read(const char *dir, const char *id, __u64 elf_size, struct unwind_table *out,
		       char *why, size_t len);
/* T (of a file of ELF_SIZE bytes) kept in DIR, the store then trimmed to its bound. 0 or -errno. */
int unwind_store__write(const char *dir, const struct unwind_table *t, __u64 elf_size);
/*
 * As unwind_store__table, the store left untrimmed: *WROTE says whether an entry was written,
 * for unwind_store__trim once a batch of tables is done. A trim reads the size and age of
 * every entry; after each of a job's ~300 tables it was a tenth of a first recording's CPU
 * (bench/RESULTS.md). The store is over its bound by at most the batch meanwhile.
 */
int unwind_store__table_untrimmed(const char *dir, const char *path, const char *root,
				  struct unwind_table *out, int *how, char *why, size_t len,
				  int *wrote);
/* DIR back under UNWIND_STORE_MAX: the entries used longest ago removed. */
void unwind_store__trim(const char *dir);

#endif /* BPFSIGHT_UNWIND_STORE_H */
