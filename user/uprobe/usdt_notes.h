/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * USDT probes of one ELF file: the .note.stapsdt notes <sys/sdt.h> emits (provider, name,
 * probe address, semaphore address, argument specs), with the addresses corrected for
 * .stapsdt.base (prelink moves sections, the note keeps the link-time base) and turned into
 * the file offsets uprobes take (probe offset, ref_ctr_offset of the semaphore), and the
 * argument specs parsed ("8@%rdi", "-4@-20(%rbp)", "8@$5"). x86-64 register names only.
 */
#ifndef BPFSIGHT_USDT_NOTES_H
#define BPFSIGHT_USDT_NOTES_H

#include <linux/types.h>

#define USDT_MAX_ARGS 12 /* what sys/sdt.h can emit */

enum usdt_arg_kind {
	USDT_ARG_REG = 1, /* the value of a register */
	USDT_ARG_MEM,	  /* the SIZE bytes at register + off */
	USDT_ARG_CONST,	  /* an immediate */
};

struct usdt_arg {
	__u8 kind; /* enum usdt_arg_kind */
	__u8 size; /* 1, 2, 4 or 8 bytes */
	__u8 is_signed;
	__u8 reg; /* struct pt_regs slot: byte offset / 8 (REG, MEM) */
	__u32 _pad;
	__s64 val; /* MEM: displacement; CONST: the value */
};

struct usdt_note {
	const char *provider, *name, *args; /* valid until usdt_notes__free */
	__u64 pc, sema;		/* ELF virtual addresses, .stapsdt.base-corrected (sema 0 = none) */
	__u64 pc_off, sema_off; /* file offsets: the uprobe's offset and its ref_ctr_offset */
	__u32 nargs;
	int args_err; /* 0, or -ENOTSUP when a spec could not be parsed (args[] incomplete) */
	struct usdt_arg arg[USDT_MAX_ARGS];
};

struct usdt_notes;

/*
 * Read PATH's USDT notes (a /proc/self/fd/N or /proc/PID/map_files path works). Returns NULL
 * with errno: ENOEXEC when PATH is no complete ELF file, ENOMEM, or open()'s errno. A file
 * without notes gives an empty set. Notes whose addresses fall in no PT_LOAD segment are
 * skipped (a stripped or damaged file).
 */
struct usdt_notes *usdt_notes__open(const char *path);
void usdt_notes__free(struct usdt_notes *n);
__u32 usdt_notes__count(const struct usdt_notes *n);
const struct usdt_note *usdt_notes__get(const struct usdt_notes *n, __u32 i);
/* 1 when the file has at least one probe of PROVIDER. */
int usdt_notes__has_provider(const struct usdt_notes *n, const char *provider);

/* Parse one argument spec ("-8@%rax", "4@16(%rsp)", "8@$0x10"). 0 or -ENOTSUP/-EINVAL. */
int usdt_arg__parse(const char *spec, struct usdt_arg *out);
/* ARG as BPF fetches it (bpf/usdt_arg.h's 30-bit spec); 0 when it cannot be encoded. */
__u32 usdt_arg__spec(const struct usdt_arg *a);
/* Parse the space-separated specs of a note into ARG[]; returns the count or -errno. */
int usdt_args__parse(const char *specs, struct usdt_arg *arg, __u32 max);

#endif /* BPFSIGHT_USDT_NOTES_H */
