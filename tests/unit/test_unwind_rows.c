// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unwind-table builder (user/stacks/unwind_build.h) on sections written here byte by
 * byte, one case per rule: each call-frame instruction a compiler emits, the pointer
 * encodings, PLT and signal frames, what becomes a stop and why, and malformed input (an
 * opcode not known, a state stack run dry, a section cut inside an FDE, a CIE pointer that
 * leads nowhere). The tables of real files are compared with readelf -wF by
 * tests/e2e/test_unwind_table.py; the cache is checked here on real libraries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "eh_frame.h"
#include "unit.h"
#include "unwind_build.h"
#include "unwind_rows.h"

#define VADDR	0x2000 /* where the test sections are "loaded" */
#define DATAREL 0x9000

/* The instructions every CIE here starts with: CFA = rsp + 8, return address at CFA - 8. */
#define CIE_INSNS 0x0c, 0x07, 0x08, 0x90, 0x01

struct sec {
	__u8 b[2048];
	size_t n;
	int debug;
};

static void put(struct sec *s, const void *p, size_t n)
{
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void put_u32(struct sec *s, __u32 v)
{
	put(s, &v, 4);
}

/* Close the entry whose length field is at START: its length, padded with DW_CFA_nop. */
static void close_entry(struct sec *s, size_t start)
{
	__u32 len;

	while ((s->n - start) % 8)
		s->b[s->n++] = 0;
	len = (__u32)(s->n - start - 4);
	memcpy(s->b + start, &len, 4);
}

/* A CIE (code alignment 1, data alignment -8); its offset. */
static size_t cie(struct sec *s, const char *aug, __u8 fde_enc, __u8 ra, const __u8 *insns,
		  size_t ni)
{
	size_t start = s->n;
	__u8 head[] = { 1 }, align[] = { 1, 0x78 };

	put_u32(s, 0);
	put_u32(s, s->debug ? 0xffffffffu : 0);
	put(s, head, 1);
	put(s, aug, strlen(aug) + 1);
	put(s, align, 2);
	put(s, &ra, 1);
	if (aug[0] == 'z') {
		__u8 len = strchr(aug, 'R') ? 1 : 0;

		put(s, &len, 1);
		if (len)
			put(s, &fde_enc, 1);
	}
	put(s, insns, ni);
	close_entry(s, start);
	return start;
}

static size_t std_cie(struct sec *s, const char *aug, __u8 fde_enc)
{
	static const __u8 insns[] = { CIE_INSNS };

	return cie(s, aug, fde_enc, 16, insns, sizeof(insns));
}

/* An FDE of the CIE at CIE_OFF (its pc fields in ENC, an empty augmentation when AUGZ). */
static void fde(struct sec *s, size_t cie_off, __u8 enc, int augz, __u64 pc, __u32 range,
		const __u8 *insns, size_t ni)
{
	size_t start = s->n;
	__u64 field;

	put_u32(s, 0);
	put_u32(s, s->debug ? (__u32)cie_off : (__u32)(s->n - cie_off));
	field = VADDR + s->n;
	if (s->debug || (enc & 0x0f) == EH_PE_ABSPTR || (enc & 0x0f) == EH_PE_UDATA8) {
		__u64 v = pc - ((enc & 0x70) == EH_PE_DATAREL ? DATAREL : 0), r = range;

		put(s, &v, 8);
		put(s, &r, 8);
	} else {
		__u32 v = (__u32)(pc - ((enc & 0x70) == EH_PE_PCREL	? field
					: (enc & 0x70) == EH_PE_DATAREL ? DATAREL
									: 0));

		put_u32(s, v);
		put_u32(s, range);
	}
	if (augz) {
		__u8 z = 0;

		put(s, &z, 1);
	}
	put(s, insns, ni);
	close_entry(s, start);
}

#define PCREL (EH_PE_PCREL | EH_PE_SDATA4)

static void std_fde(struct sec *s, size_t cie_off, __u64 pc, __u32 range, const __u8 *insns,
		    size_t ni)
{
	fde(s, cie_off, PCREL, 1, pc, range, insns, ni);
}

static struct unwind_table table;

static int build(struct sec *s)
{
	struct eh_section es = { .data = s->b,
				 .len = s->n,
				 .vaddr = VADDR,
				 .datarel = DATAREL,
				 .debug_frame = s->debug };

	unwind_table__free(&table);
	memset(&table, 0, sizeof(table));
	return unwind_table__rows(&es, 1, NULL, NULL, &table);
}

/* The table is exactly ROWS (N of them). */
static bool rows_are(const struct bs_unwind_row *rows, size_t n)
{
	char what[96];
	__u32 i;

	if (!ASSERT_EQ(table.n, n, "rows"))
		return false;
	for (i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "row %u (pc %#x)", i, rows[i].pc);
		if (!ASSERT_EQ(table.rows[i].pc, rows[i].pc, what) ||
		    !ASSERT_EQ(table.rows[i].kind, rows[i].kind, what) ||
		    !ASSERT_EQ(table.rows[i].cfa_off, rows[i].cfa_off, what) ||
		    !ASSERT_EQ(table.rows[i].rbp_off, rows[i].rbp_off, what))
			return false;
	}
	return true;
}

#define ROW(pc, kind, cfa, rbp)                                                                    \
	{                                                                                          \
		pc, cfa, rbp, BS_UNW_##kind, 0                                                     \
	}
#define ROWS_ARE(...)                                                                              \
	({                                                                                         \
		static const struct bs_unwind_row ___r[] = { __VA_ARGS__ };                        \
		rows_are(___r, sizeof(___r) / sizeof(___r[0]));                                    \
	})

/* push %rbp; mov %rsp,%rbp; ... leave; ret */
static void test_frame_pointer_prologue(void)
{
	static const __u8 insns[] = {
		0x41,		  /* advance 1 */
		0x0e, 0x10,	  /* def_cfa_offset 16 */
		0x86, 0x02,	  /* rbp at cfa-16 */
		0x43,		  /* advance 3 */
		0x0d, 0x06,	  /* def_cfa_register rbp */
		0x02, 0x30,	  /* advance_loc1 0x30 */
		0x0c, 0x07, 0x08, /* def_cfa rsp+8 */
	};
	struct sec s = { 0 };
	size_t c = std_cie(&s, "zR", PCREL);

	std_fde(&s, c, 0x1000, 0x40, insns, sizeof(insns));
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1001, CFA_RSP, 16, -16),
		 ROW(0x1004, CFA_RBP, 16, -16), ROW(0x1034, CFA_RSP, 8, -16),
		 ROW(0x1040, STOP_NONE, 0, 0));
	ASSERT_EQ(table.stats.fdes, 1, "fdes");
	ASSERT_EQ(table.stats.cies, 1, "cies");
}

/* A tail of the function in the middle of it: its rules remembered and restored. */
static void test_remember_restore_and_merge(void)
{
	static const __u8 insns[] = {
		0x41, 0x0e, 0x10,	/* 1: rsp+16 */
		0x42, 0x0a, 0x0e, 0x08, /* 3: remember; rsp+8 (a ret) */
		0x41, 0x0b,		/* 4: restore: rsp+16 */
		0x44, 0x2e, 0x10,	/* 8: args_size 16: no change, no row */
		0x41, 0x08, 0x06,	/* 9: rbp same value: no change either */
		0x41, 0xc6,		/* 10: restore rbp: the same */
	};
	struct sec s = { 0 };
	size_t c = std_cie(&s, "zR", PCREL);

	std_fde(&s, c, 0x1000, 0x20, insns, sizeof(insns));
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1001, CFA_RSP, 16, 0),
		 ROW(0x1003, CFA_RSP, 8, 0), ROW(0x1004, CFA_RSP, 16, 0),
		 ROW(0x1020, STOP_NONE, 0, 0));
}

/* binutils' PLT FDEs: the lazy PLT (lit11), the IBT PLT (lit10); any other expression stops. */
static void test_plt_expressions(void)
{
	static const __u8 plt[] = { 0x0e, 0x10, 0x46, 0x0e, 0x18, 0x4a, 0x0f, 0x0b, 0x77, 0x08,
				    0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
	struct sec s = { 0 };
	size_t c = std_cie(&s, "zR", PCREL);
	__u8 ibt[sizeof(plt)], other[sizeof(plt)];

	memcpy(ibt, plt, sizeof(plt));
	ibt[14] = 0x3a; /* DW_OP_lit10 */
	memcpy(other, plt, sizeof(plt));
	other[9] = 0x10; /* rsp + 16: not the PLT's */
	std_fde(&s, c, 0x1000, 0x40, plt, sizeof(plt));
	std_fde(&s, c, 0x1040, 0x40, ibt, sizeof(ibt));
	std_fde(&s, c, 0x1080, 0x40, other, sizeof(other));
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 16, 0), ROW(0x1006, CFA_RSP, 24, 0), ROW(0x1010, PLT, 11, 0),
		 ROW(0x1040, CFA_RSP, 16, 0), ROW(0x1046, CFA_RSP, 24, 0), ROW(0x1050, PLT, 10, 0),
		 ROW(0x1080, CFA_RSP, 16, 0), ROW(0x1086, CFA_RSP, 24, 0),
		 ROW(0x1090, STOP_EXPR, 0, 0), ROW(0x10c0, STOP_NONE, 0, 0));
	ASSERT_EQ(table.stats.fdes_expr, 1, "FDEs with a stop");
}

/* __restore_rt ('S'), _start (the return address undefined), and what a row cannot hold. */
static void test_signal_end_and_stops(void)
{
	static const __u8 restore_rt[] = { 0x0f, 0x03, 0x77, 0xa0, 0x01 }; /* *(rsp+160), no 06 */
	static const __u8 start[] = { 0x07, 0x10 };			   /* undefined rip */
	static const __u8 cfa_r12[] = { 0x41, 0x0d, 0x0c };		   /* CFA = r12 + 8 */
	static const __u8 ra_moved[] = { 0x41, 0x90, 0x02 };		   /* ra at cfa-16 */
	static const __u8 rbp_in_reg[] = { 0x41, 0x09, 0x06, 0x03 };	   /* rbp in rbx */
	static const __u8 rbp_val[] = { 0x41, 0x14, 0x06, 0x01 };	   /* rbp = cfa+1 */
	static const __u8 none[] = { 0 };
	struct sec s = { 0 };
	size_t sig = std_cie(&s, "zRS", PCREL), c = std_cie(&s, "zR", PCREL), ra5;

	ra5 = cie(&s, "zR", PCREL, 5, (const __u8[]){ CIE_INSNS }, 5);
	std_fde(&s, sig, 0x0fff, 0x9, restore_rt, sizeof(restore_rt));
	std_fde(&s, c, 0x1010, 0x10, start, sizeof(start));
	std_fde(&s, c, 0x1020, 0x10, cfa_r12, sizeof(cfa_r12));
	std_fde(&s, c, 0x1030, 0x10, ra_moved, sizeof(ra_moved));
	std_fde(&s, c, 0x1040, 0x10, rbp_in_reg, sizeof(rbp_in_reg));
	std_fde(&s, c, 0x1050, 0x10, rbp_val, sizeof(rbp_val));
	std_fde(&s, ra5, 0x1060, 0x10, none, sizeof(none));
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x0fff, SIGNAL, 0, 0), ROW(0x1008, STOP_NONE, 0, 0), ROW(0x1010, END, 0, 0),
		 ROW(0x1020, CFA_RSP, 8, 0), ROW(0x1021, STOP_EXPR, 0, 0),
		 ROW(0x1030, CFA_RSP, 8, 0), ROW(0x1031, STOP_EXPR, 0, 0),
		 ROW(0x1040, CFA_RSP, 8, 0), ROW(0x1041, STOP_EXPR, 0, 0),
		 ROW(0x1050, CFA_RSP, 8, 0), ROW(0x1051, STOP_EXPR, 0, 0),
		 ROW(0x1070, STOP_NONE, 0, 0));
	ASSERT_EQ(table.stats.rows_signal, 1, "signal FDEs");
	ASSERT_EQ(table.stats.fdes_expr, 5, "FDEs with a stop (a return column not 16 included)");
}

/*
 * GCC's stack realignment (libtorch's AVX kernels): lea 8(%rsp),%r10; and $-32,%rsp;
 * pushq -8(%r10); push %rbp; mov %rsp,%rbp; push %r10: CFA = r10 (a stop), then rbp saved at
 * rbp + 0 and CFA = *(rbp - 8); the epilogue's CFA = rsp + 8 with that rbp rule left over
 * (a stop: rbp is no longer the frame's); an rbp-based CFA with it: an offset from the CFA.
 */
static void test_stack_realignment(void)
{
	static const __u8 insns[] = {
		0x45, 0x0c, 0x0a, 0x00,		    /* 5: CFA = r10 + 0 */
		0x4f, 0x10, 0x06, 0x02, 0x76, 0x00, /* 20: rbp at rbp + 0 */
		0x44, 0x0f, 0x03, 0x76, 0x78, 0x06, /* 24: CFA = *(rbp - 8) */
		0x0e, 0x30,		/* def_cfa_offset: an expression's CFA has none */
		0x02, 0x40, 0x0a,	/* 88: remember */
		0x0c, 0x07, 0x08,	/*     CFA = rsp + 8 */
		0x41, 0x0b,		/* 89: restore */
		0x42, 0x0c, 0x06, 0x10, /* 91: CFA = rbp + 16: rbp at CFA - 16 */
		0x41, 0x10, 0x06, 0x02, 0x76, 0x10, /* 92: rbp at rbp + 16: CFA + 0, no row */
	};
	struct sec s = { 0 };
	size_t c = std_cie(&s, "zR", PCREL);

	std_fde(&s, c, 0x1000, 0x80, insns, sizeof(insns));
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1005, STOP_EXPR, 0, 0),
		 ROW(0x1018, CFA_RBP_DEREF, -8, 0), ROW(0x1058, STOP_EXPR, 0, 0),
		 ROW(0x1059, CFA_RBP_DEREF, -8, 0), ROW(0x105b, CFA_RBP, 16, -16),
		 ROW(0x105c, STOP_EXPR, 0, 0), ROW(0x1080, STOP_NONE, 0, 0));
}

/* The FDE pointer encodings compilers emit, and those refused. */
static void test_pointer_encodings(void)
{
	static const __u8 insns[] = { 0x41, 0x0e, 0x10 };
	struct sec s = { 0 };
	size_t u4 = std_cie(&s, "zR", EH_PE_UDATA4), abs = std_cie(&s, "", 0),
	       dr = std_cie(&s, "zR", EH_PE_DATAREL | EH_PE_SDATA4),
	       ind = std_cie(&s, "zR", EH_PE_INDIRECT | PCREL),
	       text = std_cie(&s, "zR", 0x20 | EH_PE_SDATA4);

	fde(&s, u4, EH_PE_UDATA4, 1, 0x1000, 0x10, insns, sizeof(insns));
	fde(&s, abs, EH_PE_ABSPTR, 0, 0x1010, 0x10, insns, sizeof(insns));
	fde(&s, dr, EH_PE_DATAREL | EH_PE_SDATA4, 1, 0x1020, 0x10, insns, sizeof(insns));
	fde(&s, ind, EH_PE_INDIRECT | PCREL, 1, 0x1030, 0x10, insns, sizeof(insns));
	fde(&s, text, 0x20 | EH_PE_SDATA4, 1, 0x1040, 0x10, insns, sizeof(insns));
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1001, CFA_RSP, 16, 0),
		 ROW(0x1010, CFA_RSP, 8, 0), ROW(0x1011, CFA_RSP, 16, 0),
		 ROW(0x1020, CFA_RSP, 8, 0), ROW(0x1021, CFA_RSP, 16, 0),
		 ROW(0x1030, STOP_NONE, 0, 0));
	ASSERT_EQ(table.stats.fdes, 3, "FDEs read");
	ASSERT_EQ(table.stats.fdes_refused, 2, "FDEs refused (indirect, textrel)");
}

/* .debug_frame: CIE ids of all ones, CIE pointers from the section's start, 8-byte pcs. */
static void test_debug_frame(void)
{
	static const __u8 insns[] = { 0x44, 0x0e, 0x20, 0x86, 0x03 };
	struct sec s = { .debug = 1 };
	size_t c = std_cie(&s, "", 0);

	fde(&s, c, 0, 0, 0x1000, 0x10, insns, sizeof(insns));
	fde(&s, c, 0, 0, 0x1020, 0x10, insns, sizeof(insns));
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1004, CFA_RSP, 32, -24),
		 ROW(0x1010, STOP_NONE, 0, 0), ROW(0x1020, CFA_RSP, 8, 0),
		 ROW(0x1024, CFA_RSP, 32, -24), ROW(0x1030, STOP_NONE, 0, 0));
}

/* Bad instructions: the rows before the error stay, STOP_BAD from it; other FDEs untouched. */
static void test_bad_instructions(void)
{
	static const __u8 unknown[] = { 0x41, 0x0e, 0x10, 0x42, 0x3c, 0x0e, 0x18 };
	static const __u8 underflow[] = { 0x41, 0x0b };
	static const __u8 cut_operand[] = { 0x41, 0x0e, 0x10, 0x42, 0x0e, 0x80, 0x80 };
	static const __u8 in_cie[] = { CIE_INSNS, 0x41 };
	static const __u8 good[] = { 0x41, 0x0e, 0x10 };
	struct sec s = { 0 };
	size_t c = std_cie(&s, "zR", PCREL), bad_cie = cie(&s, "zR", PCREL, 16, in_cie, 6);

	std_fde(&s, c, 0x1000, 0x10, unknown, sizeof(unknown));
	std_fde(&s, c, 0x1010, 0x10, underflow, sizeof(underflow));
	std_fde(&s, c, 0x1020, 0x10, cut_operand, sizeof(cut_operand));
	std_fde(&s, bad_cie, 0x1030, 0x10, good, sizeof(good));
	std_fde(&s, c, 0x1040, 0x10, good, sizeof(good));
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1001, CFA_RSP, 16, 0),
		 ROW(0x1003, STOP_BAD, 0, 0), ROW(0x1010, CFA_RSP, 8, 0),
		 ROW(0x1011, STOP_BAD, 0, 0), ROW(0x1020, CFA_RSP, 8, 0),
		 ROW(0x1021, CFA_RSP, 16, 0), ROW(0x1023, STOP_BAD, 0, 0),
		 ROW(0x1040, CFA_RSP, 8, 0), ROW(0x1041, CFA_RSP, 16, 0),
		 ROW(0x1050, STOP_NONE, 0, 0));
	ASSERT_EQ(table.stats.fdes_bad, 4, "FDEs cut (an advance in a CIE spoils its FDEs)");
}

/* The section cut inside an FDE: earlier FDEs whole, the cut one STOP_BAD all through. */
static void test_cut_section(void)
{
	static const __u8 insns[] = { 0x41, 0x0e, 0x10, 0x42, 0x0e, 0x18, 0x43, 0x0e, 0x08 };
	struct sec s = { 0 };
	size_t c = std_cie(&s, "zR", PCREL), second;

	std_fde(&s, c, 0x1000, 0x10, insns, sizeof(insns));
	second = s.n;
	std_fde(&s, c, 0x1010, 0x10, insns, sizeof(insns));
	/* cut after the second FDE's first advance and def_cfa_offset (4+4+4+4+1 + 3 bytes) */
	s.n = second + 20;
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1001, CFA_RSP, 16, 0),
		 ROW(0x1003, CFA_RSP, 24, 0), ROW(0x1006, CFA_RSP, 8, 0),
		 ROW(0x1010, STOP_BAD, 0, 0), ROW(0x1020, STOP_NONE, 0, 0));
	ASSERT_EQ(table.stats.sections_cut, 1, "sections cut");
	/* cut inside its pc fields: the FDE is not there at all */
	s.n = second + 10;
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1001, CFA_RSP, 16, 0),
		 ROW(0x1003, CFA_RSP, 24, 0), ROW(0x1006, CFA_RSP, 8, 0),
		 ROW(0x1010, STOP_NONE, 0, 0));
}

/* FDEs that meet get no stop between them; a gap does; of two that overlap one is kept. */
static void test_gaps_overlaps_and_cie_pointers(void)
{
	static const __u8 insns[] = { 0x41, 0x0e, 0x10 };
	struct sec s = { 0 };
	size_t c = std_cie(&s, "zR", PCREL), at;

	std_fde(&s, c, 0x1010, 0x10, insns, sizeof(insns));
	std_fde(&s, c, 0x1000, 0x10, insns, sizeof(insns)); /* out of order: sorted */
	std_fde(&s, c, 0x1018, 0x10, insns, sizeof(insns)); /* overlaps 0x1010's */
	std_fde(&s, c, 0x1040, 0x10, insns, sizeof(insns));
	at = s.n;
	std_fde(&s, c, 0x1060, 0x10, insns, sizeof(insns));
	put_u32(&s, 0); /* .eh_frame's terminator: what follows is not read */
	std_fde(&s, c, 0x1080, 0x10, insns, sizeof(insns));
	/* the 0x1060 FDE's CIE pointer now leads to itself, an FDE */
	memcpy(s.b + at + 4, &(__u32){ 4 }, 4);
	ASSERT_EQ(build(&s), 0, "build");
	ROWS_ARE(ROW(0x1000, CFA_RSP, 8, 0), ROW(0x1001, CFA_RSP, 16, 0),
		 ROW(0x1010, CFA_RSP, 8, 0), ROW(0x1011, CFA_RSP, 16, 0),
		 ROW(0x1020, STOP_NONE, 0, 0), ROW(0x1040, CFA_RSP, 8, 0),
		 ROW(0x1041, CFA_RSP, 16, 0), ROW(0x1050, STOP_NONE, 0, 0));
	ASSERT_EQ(table.stats.fdes_refused, 2, "refused: the overlap, the bad CIE pointer");
	ASSERT_TRUE(unwind_table__find(&table, 0x0fff) == NULL, "before the first row: none");
	ASSERT_EQ(unwind_table__find(&table, 0x1000)->pc, 0x1000, "find at a row");
	ASSERT_EQ(unwind_table__find(&table, 0x1030)->kind, BS_UNW_STOP_NONE, "find in a gap");
	ASSERT_EQ(unwind_table__find(&table, 0x104f)->pc, 0x1041, "find inside a row");
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;
	int err = in < 0 || out < 0;

	while (!err && (n = read(in, buf, sizeof(buf))) > 0)
		err = write(out, buf, (size_t)n) != n;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return err ? -1 : 0;
}

static int append_byte(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND), err;

	if (fd < 0)
		return -1;
	err = write(fd, "", 1) != 1;
	close(fd);
	return err ? -1 : 0;
}

/* A library copied elsewhere is the same build id: one table; a text file: remembered. */
static void test_cache_by_build_id(void)
{
	static const char lib[] = "/usr/lib/x86_64-linux-gnu/libgomp.so.1";
	char dir[] = "/tmp/unwind-cache-XXXXXX", copy[64], text[64];
	struct unwind_cache *c = unwind_cache__new(0);
	struct unwind_cache_stats st;
	const struct unwind_table *a, *b;
	int err;

	if (access(lib, R_OK)) {
		UNIT_SKIP("no %s", lib);
		unwind_cache__free(c);
		return;
	}
	if (!ASSERT_TRUE(c && mkdtemp(dir), "cache, directory"))
		return;
	snprintf(copy, sizeof(copy), "%s/libgomp-copy.so", dir);
	snprintf(text, sizeof(text), "%s/text", dir);
	ASSERT_EQ(copy_file(lib, copy), 0, "copy");
	ASSERT_EQ(copy_file("/etc/hostname", text), 0, "copy");
	a = unwind_cache__get(c, lib, NULL, &err);
	ASSERT_TRUE(a && a->n > 1000, "libgomp's table");
	b = unwind_cache__get(c, copy, NULL, &err);
	ASSERT_TRUE(a == b, "its copy: the same table");
	ASSERT_TRUE(!unwind_cache__get(c, text, NULL, &err), "a text file: no table");
	ASSERT_EQ(err, -ENOEXEC, "its error");
	ASSERT_TRUE(!unwind_cache__get(c, text, NULL, &err) && err == -ENOEXEC, "again");
	ASSERT_TRUE(!unwind_cache__get(c, dir, NULL, &err), "a directory: no table");
	/* the same build id on a file of another size: not trusted to be the same code */
	ASSERT_TRUE(append_byte(copy) == 0, "grow the copy");
	b = unwind_cache__get(c, copy, NULL, &err);
	ASSERT_TRUE(b && b != a && b->n == a->n, "a file claiming its build id: built apart");
	unwind_cache__stats(c, &st);
	ASSERT_EQ(st.files, 2, "tables built");
	ASSERT_EQ(st.hits, 2, "answered from the cache");
	ASSERT_EQ(st.failed, 1, "files without one, remembered");
	ASSERT_EQ(st.bytes, (__u64)a->n * 12 * 2, "bytes");
	unwind_cache__free(c);
	c = unwind_cache__new(1000);
	ASSERT_TRUE(c && !unwind_cache__get(c, lib, NULL, &err) && err == -E2BIG,
		    "a table past the bound");
	unwind_cache__free(c);
	unlink(copy);
	unlink(text);
	rmdir(dir);
}

int main(void)
{
	RUN_TEST(test_frame_pointer_prologue);
	RUN_TEST(test_remember_restore_and_merge);
	RUN_TEST(test_plt_expressions);
	RUN_TEST(test_signal_end_and_stops);
	RUN_TEST(test_stack_realignment);
	RUN_TEST(test_pointer_encodings);
	RUN_TEST(test_debug_frame);
	RUN_TEST(test_bad_instructions);
	RUN_TEST(test_cut_section);
	RUN_TEST(test_gaps_overlaps_and_cie_pointers);
	RUN_TEST(test_cache_by_build_id);
	unwind_table__free(&table);
	return UNIT_EXIT();
}
