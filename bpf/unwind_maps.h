/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The maps the native walk reads unwind tables from (bpf/stack_native.bpf.h), filled by the
 * stack service (user/stacks/unwind_load.c), shared by every BPF object of a recording as
 * py_procs is (docs/STACKS.md, "Unwind tables"):
 * - unw_rows: every loaded file's rows (bpf/unwind_table.h), one file after another, each
 *   sorted by pc; an ARRAY (its lookups are inlined: a binary search costs no helper call),
 *   BPF_F_MMAPABLE so user space writes a file's rows with one memcpy. Its size is the cap
 *   on the tables' memory: rows are never removed (a file's table serves every process that
 *   maps it, and later ones), and a file that does not fit is said and left to frame
 *   pointers.
 * - unw_procs: per process (tgid), its executable mappings of files with a table, sorted by
 *   start: where each is, its load bias and its file's rows. Copied to a forked child and
 *   removed at an exec by BPF itself (bpf/proc.bpf.c: the child's first stacks and the new
 *   program's never wait for user space), removed at the exit by user space. A process
 *   absent here is walked by frame pointers alone, as before tables.
 */
#ifndef BPFSIGHT_UNWIND_MAPS_H
#define BPFSIGHT_UNWIND_MAPS_H

#include "unwind_table.h"
#include "stack_records.h"

/*
 * Rows in unw_rows: 128 MiB, allocated when a recording with stacks starts (every file a
 * process maps gets a table: Debian's torch job maps 314 files, 67 MiB of rows, libtorch_cpu's
 * alone 1.4 million; BPFSIGHT_MAP_ENTRIES=unw_rows=N: N pairs of rows).
 */
#define BS_UNW_ROWS ((128u << 20) / sizeof(struct bs_unw_pair) * 2)
/*
 * Mappings with a table per process: every executable file mapping gets one (Debian's torch
 * maps 314 files). The array is a power of two (its index masked); BS_UNW_MAP_SEARCH halvings
 * find one among BS_UNW_MAPS - 1 (11 rounds made the verifier pass a million instructions in
 * sched's system-call exit, and their count there moves by chance: 8 rounds 211k, 10 149k).
 */
#define BS_UNW_MAPS	  1024
#define BS_UNW_MAPS_USED  (BS_UNW_MAPS - 1)
#define BS_UNW_MAP_SEARCH 10
#define BS_UNW_PROCS	  4096 /* processes in unw_procs */
/* A file's rows searched in at most this many halvings: bigger tables are not loaded. */
#define BS_UNW_SEARCH	24
#define BS_UNW_MAX_ROWS (1u << BS_UNW_SEARCH)

/*
 * An unw_rows element: two rows. An array's elements are 8-byte aligned (a lone 12-byte row
 * would take 16), so row i is element i / 2's r[i % 2] and the rows lie one after another,
 * 12 bytes each, in the array user space maps.
 */
struct bs_unw_pair {
	struct bs_unwind_row r[2];
};

struct bs_unw_map {
	__u64 start, end; /* the mapping's runtime addresses [start, end) */
	__u64 bias;	  /* runtime address - ELF virtual address (the rows' pc) */
	__u32 row0;	  /* its file's first row in unw_rows */
	__u32 nrows;	  /* and how many (<= BS_UNW_MAX_ROWS) */
};

/*
 * unw_cache: the row the native walk found for a file's address, by a hash of the two: a
 * binary search of libtorch_cpu's 1.4 million rows takes 21 steps, and when stacks come
 * seldom (a sampled allocation's, every millisecond or so) most of them miss the caches and
 * the TLB; a job's stacks repeat the same return addresses, found here in one line. Shared
 * by every CPU and object: an entry is written in three stores, so a reader takes it only
 * when its check is the hash of the rest (bs_unw_cache_check): one written half by one CPU
 * and half by another, for two addresses, fails it, and the walk searches the table as
 * without a cache. Never stale: a file's rows never change while the map lives.
 */
#define BS_UNW_CACHE_BITS 16
#define BS_UNW_CACHE	  (1u << BS_UNW_CACHE_BITS)

struct bs_unw_cache_ent {
	__u32 pc;   /* the frame's ELF address */
	__u32 file; /* its file's first row in unw_rows + 1 (0: empty) */
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 kind;
	__u8 _pad;
	__u32 check;
};

static inline __attribute__((always_inline)) __u32 bs_unw_cache_slot(__u32 pc, __u32 file)
{
	return (pc * 0x9e3779b1u ^ file * 0x85ebca6bu) >> (32 - BS_UNW_CACHE_BITS);
}

static inline __attribute__((always_inline)) __u32
bs_unw_cache_check(__u32 pc, __u32 file, __s32 cfa_off, __s16 rbp_off, __u8 kind)
{
	__u32 h = pc * 0xcc9e2d51u ^ file * 0x1b873593u ^ (__u32)cfa_off * 0xe6546b64u ^
		  ((__u32)(__u16)rbp_off << 8 | kind) * 0x85ebca6bu;

	return (h ^ h >> 15) | 1; /* never 0: an empty entry's */
}

/* E's row for file FILE's address PC into *OUT: 0, or -1 when E holds another or is torn. */
static inline __attribute__((always_inline)) int
bs_unw_cache_get(const struct bs_unw_cache_ent *e, __u32 pc, __u32 file, struct bs_unwind_row *out)
{
	if (e->pc != pc || e->file != file)
		return -1;
	out->cfa_off = e->cfa_off;
	out->rbp_off = e->rbp_off;
	out->kind = e->kind;
	return e->check == bs_unw_cache_check(pc, file, out->cfa_off, out->rbp_off, out->kind) ? 0
											       : -1;
}

/* R, the row of file FILE's address PC, into E (readers skip it until it is whole). */
static inline __attribute__((always_inline)) void
bs_unw_cache_put(struct bs_unw_cache_ent *e, __u32 pc, __u32 file, const struct bs_unwind_row *r)
{
	e->check = 0;
	asm volatile("" ::: "memory");
	e->pc = pc;
	e->file = file;
	e->cfa_off = r->cfa_off;
	e->rbp_off = r->rbp_off;
	e->kind = r->kind;
	asm volatile("" ::: "memory");
	e->check = bs_unw_cache_check(pc, file, r->cfa_off, r->rbp_off, r->kind);
}

struct bs_unw_proc {
	__u32 n; /* mappings in m, sorted by start, not overlapping */
	__u32 _pad;
	struct bs_unw_map m[BS_UNW_MAPS];
};

/* struct ucontext_t at a signal frame's rsp (__restore_rt): uc_mcontext's rbp, rsp, rip. */
#define BS_UC_RBP 0x78
#define BS_UC_RSP 0xa0
#define BS_UC_RIP 0xa8

#define BS_UNW_STEP_CFA	   -1 /* the caller's frame is at *CFA (bs_unw_cfa) */
#define BS_UNW_STEP_SIGNAL -2 /* the interrupted registers are in the ucontext at rsp */
/* CFA = *(rbp + cfa_off), the caller's rbp = *(rbp + rbp_off) (GCC's stack realignment) */
#define BS_UNW_STEP_DEREF -3

/*
 * Whether C can be a caller's frame (its CFA) above a frame at SP: above it, below HI (on
 * this stack) and 8-byte aligned; else the table does not describe this code (or rbp was not
 * what the row says), and nothing is followed.
 */
static inline __attribute__((always_inline)) int bs_unw_cfa_ok(__u64 c, __u64 sp, __u64 hi)
{
	return c > sp && c < hi && !(c & 7);
}

/*
 * What row R says of the frame at IP with registers SP and BP, for both walks (BPF's and
 * `bpfsight stacks`' of sleeping threads in user space): BS_UNW_STEP_CFA with *CFA set (the
 * return address is at CFA - 8, the caller's rbp at CFA + rbp_off when rbp_off, its rsp is
 * the CFA), BS_UNW_STEP_DEREF (the CFA and rbp read from the frame: bs_unw_cfa_ok then),
 * BS_UNW_STEP_SIGNAL, or how the walk ends there (BS_STACK_END_WHOLE, or a stop:
 * BS_CUT_* + 1).
 */
static inline __attribute__((always_inline)) int
bs_unw_cfa(const struct bs_unwind_row *r, __u64 ip, __u64 sp, __u64 bp, __u64 hi, __u64 *cfa)
{
	__u64 c;

	switch (r->kind) {
	case BS_UNW_CFA_RSP:
		c = sp + r->cfa_off;
		break;
	case BS_UNW_CFA_RBP:
		c = bp + r->cfa_off;
		break;
	case BS_UNW_PLT:
		c = sp + ((__s64)(ip & 15) >= r->cfa_off ? 16 : 8);
		break;
	case BS_UNW_CFA_RBP_DEREF:
		/* rbp points into this frame: on the stack, or the row is not for this code. */
		return bp >= sp && bp < hi && !(bp & 7) ? BS_UNW_STEP_DEREF : BS_CUT_BAD_CFA + 1;
	case BS_UNW_SIGNAL:
		return BS_UNW_STEP_SIGNAL;
	case BS_UNW_END:
		return BS_STACK_END_WHOLE;
	case BS_UNW_STOP_NONE:
		return BS_CUT_NO_FDE + 1;
	case BS_UNW_STOP_EXPR:
		return BS_CUT_EXPR + 1;
	default:
		return BS_CUT_BAD_FDE + 1;
	}
	if (!bs_unw_cfa_ok(c, sp, hi))
		return BS_CUT_BAD_CFA + 1;
	*cfa = c;
	return BS_UNW_STEP_CFA;
}

_Static_assert(sizeof(struct bs_unw_map) == 32, "part of the BPF maps' layout");
_Static_assert(sizeof(struct bs_unw_pair) == 24, "rows lie 12 bytes apart in unw_rows");
_Static_assert(sizeof(struct bs_unw_cache_ent) == 20, "part of the BPF maps' layout");

#endif /* BPFSIGHT_UNWIND_MAPS_H */
