/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The entries of an .eh_frame or .debug_frame section (DWARF 5 section 6.4, the LSB's
 * .eh_frame): its CIEs parsed once each, its FDEs as the pc ranges they cover and the
 * instructions that describe them (run by cfi_rows.c). Every length, offset and pointer is
 * checked against the section; the section comes from a file a traced process controls.
 */
#ifndef BPFSIGHT_EH_FRAME_H
#define BPFSIGHT_EH_FRAME_H

#include <linux/types.h>
#include <stddef.h>
#include "cfi_cursor.h"

struct hmap;

/* DW_EH_PE_*: how .eh_frame stores a pointer (low nibble: format; high: what it is from). */
#define EH_PE_OMIT     0xff
#define EH_PE_ABSPTR   0x00
#define EH_PE_ULEB128  0x01
#define EH_PE_UDATA2   0x02
#define EH_PE_UDATA4   0x03
#define EH_PE_UDATA8   0x04
#define EH_PE_SLEB128  0x09
#define EH_PE_SDATA2   0x0a
#define EH_PE_SDATA4   0x0b
#define EH_PE_SDATA8   0x0c
#define EH_PE_PCREL    0x10
#define EH_PE_DATAREL  0x30
#define EH_PE_INDIRECT 0x80

/* One section as it is loaded. */
struct eh_section {
	const __u8 *data;
	size_t len;
	__u64 vaddr;	 /* ELF address of data[0] (DW_EH_PE_pcrel's base) */
	__u64 datarel;	 /* DW_EH_PE_datarel's base (.got); 0: datarel pointers are refused */
	int debug_frame; /* .debug_frame's format (CIE ids, absolute addresses) */
};

struct eh_cie {
	__u64 code_align;
	__s64 data_align;
	__u64 ra_reg;
	const __u8 *insns, *insns_end; /* its initial instructions */
	__u8 fde_enc;		       /* DW_EH_PE_* of its FDEs' pc fields */
	__u8 augz;		       /* 'z': its FDEs have augmentation data to skip */
	__u8 signal;		       /* 'S': its FDEs describe signal frames */
	__u8 addr_size;		       /* .debug_frame: bytes of an address */
};

struct eh_fde {
	__u64 pc, end; /* [pc, end): ELF addresses */
	const __u8 *insns, *insns_end;
	__u32 cie; /* index in struct eh_frame.cies */
	__u8 cut;  /* the entry ran past the section: its range is known, its rules are not */
	__u8 src;  /* which section, for the caller (eh_frame__walk's SRC) */
};

/* A section's (or several sections') FDEs and the CIEs they point at. */
struct eh_frame {
	struct eh_cie *cies;
	size_t ncies, cies_cap;
	struct eh_fde *fdes;
	size_t nfdes, fdes_cap;
	struct hmap *by_off; /* CIE index + 1 (~0u: refused) by offset, in the section walked */
	__u32 refused; /* CIEs or FDEs left out: an encoding refused, a bad CIE, a bad pc range */
	__u32 cut;     /* sections whose walk stopped at a malformed entry */
};

/*
 * Walk section S and append its FDEs to EF (tagged SRC), keeping only those whose [pc, end)
 * KEEP accepts (NULL: all below 4 GiB). A malformed entry ends the walk: the entries before
 * it are kept, an FDE it cuts short is kept with `cut` set. 0, or -ENOMEM.
 */
int eh_frame__walk(const struct eh_section *s, __u8 src,
		   int (*keep)(__u64 pc, __u64 end, void *arg), void *arg, struct eh_frame *ef);
/*
 * Read a pointer of encoding ENC at C (SEC's bytes): 0 with *OUT, -EINVAL when the bytes are
 * bad, -EOPNOTSUPP for an encoding refused (indirect, textrel, funcrel, aligned, datarel
 * without a base).
 */
int eh_frame__pointer(struct cfi_cursor *c, __u8 enc, const struct eh_section *s, __u64 *out);
void eh_frame__free(struct eh_frame *ef);

#endif /* BPFSIGHT_EH_FRAME_H */
