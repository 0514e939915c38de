/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Unwind tables built in user space (docs/STACKS.md, "Building the tables"): one ELF file's
 * .eh_frame (and the .debug_frame of the file or of its local debug file) turned into the
 * rows of bpf/unwind_table.h, for the native walk in BPF. The file is untrusted (a traced
 * process controls what it maps): it is opened with safe_open, every size and offset is
 * checked against its section, and an error ends the FDE it is in with a STOP_BAD row, never
 * a row read past it. Only x86-64 files get a table (-ENOEXEC otherwise).
 *
 * The rows are sorted by pc; consecutive rows that say the same thing are one row; each
 * FDE's end that another FDE does not start at gets a STOP_NONE row. The table is a plain
 * array the caller copies into its maps.
 */
#ifndef BPFSIGHT_UNWIND_BUILD_H
#define BPFSIGHT_UNWIND_BUILD_H

#include <linux/types.h>
#include <stddef.h>
#include "unwind_table.h"

#define UNWIND_BUILD_ID_LEN 129 /* hex of the longest build id kept, and its NUL */
/*
 * What one file may make the builder hold, whatever its bytes: a section (inflated) of
 * 256 MiB (libtorch_cpu's .eh_frame is 10 MiB), a table of 16 M rows, 192 MiB (its is 1.4 M).
 */
#define UNWIND_MAX_SECTION (256u << 20)
#define UNWIND_MAX_ROWS	   (1u << 24)

/* Where a table's rows came from (struct unwind_table.sources). */
#define UNWIND_SRC_EH_FRAME	0x1 /* the file's .eh_frame */
#define UNWIND_SRC_DEBUG_FRAME	0x2 /* the file's own .debug_frame */
#define UNWIND_SRC_DEBUG_FILE	0x4 /* the .debug_frame of its debug file (build id, debuglink) */
#define UNWIND_SRC_EH_FRAME_HDR 0x8 /* no section headers: .eh_frame found by .eh_frame_hdr */

/* What building one table met: figures for `info`, the end-of-run line and the tests. */
struct unwind_stats {
	__u32 cies;	    /* CIEs read */
	__u32 fdes;	    /* FDEs turned into rows */
	__u32 fdes_bad;	    /* FDEs cut at an error: their rows end in STOP_BAD */
	__u32 fdes_refused; /* FDEs or CIEs skipped whole (an encoding refused, a bad pc range) */
	__u32 fdes_expr;    /* FDEs with a row a table cannot hold (STOP_EXPR) */
	__u32 fdes_fp;	    /* FDEs whose function sets up a frame pointer (CFI_ROWS_FP) */
	__u32 fdes_framed;  /* FDEs of functions that make a frame (CFI_ROWS_FRAME), PLTs,
			     * outermost and signal frames apart (CFI_ROWS_SPECIAL) */
	__u32 rows_signal;  /* FDEs of signal frames ('S' augmentation): SIGNAL rows */
	__u32 sections_cut; /* sections whose walk stopped at a malformed entry: FDEs after it lost */
	__u64 section_bytes; /* of the sections read (inflated): held while the table is built */
	__u64 build_ns;	     /* wall time to build the table, reading the file included */
};

/* An executable PT_LOAD segment: where a mapping of the file puts its code. */
struct unwind_seg {
	__u64 off, vaddr, filesz;
};

#define UNWIND_MAX_SEGS 8

/* One ELF file's table. */
struct unwind_table {
	struct bs_unwind_row *rows; /* sorted by pc; owned by the table */
	__u32 n;		    /* rows */
	__u32 sources;		    /* UNWIND_SRC_* */
	__u32 nsegs;		    /* its executable segments (the first 8) */
	struct unwind_seg segs[UNWIND_MAX_SEGS];
	char build_id[UNWIND_BUILD_ID_LEN]; /* lower-case hex, "" when the file has none */
	struct unwind_stats stats;
};

/*
 * Build the table of the ELF file at PATH (a /proc/PID/map_files/... or /proc/PID/root/...
 * path is fine). ROOT prefixes the debug-file directories ("/proc/PID/root" for a process in
 * a container; NULL = ""). 0 with OUT filled (free it with unwind_table__free), or a negative
 * errno: -ENOEXEC for anything but a complete x86-64 ELF executable or shared object, -ENODATA
 * when the file has no .eh_frame nor .debug_frame, -EFBIG for a file whose addresses pass
 * 4 GiB (rows hold 32-bit pcs) or whose section passes UNWIND_MAX_SECTION, -E2BIG for a table
 * that would pass UNWIND_MAX_ROWS, -ENOMEM, or the open's error.
 */
int unwind_table__build(const char *path, const char *root, struct unwind_table *out);
/* The same from an open file descriptor (not closed); PATH only finds a debug file. */
int unwind_table__build_fd(int fd, const char *path, const char *root, struct unwind_table *out);
/* The build id of the ELF file FD (lower-case hex, "" when it has none) into OUT. 0 or -errno. */
int unwind_table__build_id(int fd, char *out, size_t len);
/*
 * The rows of one section's bytes (SEC, LEN, loaded at ELF address VADDR): DEBUG_FRAME says
 * .debug_frame's format, else .eh_frame's. For the fuzzer and the tests; the ELF paths above
 * call it. 0, -E2BIG or -ENOMEM; a malformed section gives rows, STOP_BAD and counts, not an
 * error.
 */
int unwind_table__from_section(const void *sec, size_t len, __u64 vaddr, int debug_frame,
			       struct unwind_table *out);
void unwind_table__free(struct unwind_table *t);

/*
 * Whether T's file was built with frame pointers: 99% of its functions that make a frame set
 * one up (PLTs, _start, signal trampolines and stubs that only jump apart: no compiler gives
 * them one). Such a file is walked by frame pointers as before tables (the walk costs what it
 * did, its rows take no BPF memory); a file with hand-written assembly among its functions
 * (glibc) keeps its table.
 */
static inline int unwind_table__frame_pointers(const struct unwind_table *t)
{
	return t->stats.fdes_framed &&
	       (__u64)t->stats.fdes_fp * 100 >= (__u64)t->stats.fdes_framed * 99;
}

/* Bytes the rows take (what a copy into a BPF map costs). */
static inline size_t unwind_table__bytes(const struct unwind_table *t)
{
	return (size_t)t->n * sizeof(struct bs_unwind_row);
}

/*
 * The load bias (runtime address - ELF address) of a mapping [START, END) from file offset
 * PGOFF of a file whose executable segments are SEGS (N): by the one it maps, 0; -ENOENT when
 * it maps none.
 */
int unwind_seg__bias(const struct unwind_seg *segs, __u32 n, __u64 start, __u64 end, __u64 pgoff,
		     __u64 *bias);

/* The row covering ELF address VADDR (the last one with pc <= VADDR), NULL when none does. */
const struct bs_unwind_row *unwind_table__find(const struct unwind_table *t, __u64 vaddr);

/*
 * The tables of one recording, each built once per build id (a file without one: once per
 * (device, inode, size, mtime)), shared by every process that maps the file. A failed build
 * is remembered too, so a file without tables is read once. Tables are never evicted: a
 * pointer returned stays valid until unwind_cache__free. Safe to call from several threads.
 */
struct unwind_cache;

/* MAX_BYTES bounds the rows kept (0: no bound); a build that would pass it is -E2BIG. */
struct unwind_cache *unwind_cache__new(size_t max_bytes);
void unwind_cache__free(struct unwind_cache *c);
/*
 * The table of the file at PATH (ROOT as for unwind_table__build), built on its first call.
 * NULL with *ERR set (unwind_table__build's errors, -E2BIG) when the file has no table.
 */
const struct unwind_table *unwind_cache__get(struct unwind_cache *c, const char *path,
					     const char *root, int *err);

struct unwind_cache_stats {
	__u32 files;	/* tables kept */
	__u32 failed;	/* files without a table (remembered) */
	__u32 hits;	/* calls answered from the cache */
	__u64 rows;	/* rows of all tables */
	__u64 bytes;	/* their size (rows * 12) */
	__u64 build_ns; /* time spent building */
};
void unwind_cache__stats(struct unwind_cache *c, struct unwind_cache_stats *out);

#endif /* BPFSIGHT_UNWIND_BUILD_H */
