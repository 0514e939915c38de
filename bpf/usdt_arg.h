/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How BPF reads a USDT probe's argument, as its note describes it (user/uprobe/usdt_notes.c
 * parses the note; usdt_arg__spec encodes it here; bpf/usdt_arg.bpf.h fetches it): one
 * 30-bit spec per argument, so two fit beside a probe id in a bpf_cookie (shim_cookie.h) and
 * more go in a map value (struct bs_usdt_site).
 *
 *   bits  0-1   kind    BS_USDT_ARG_REG / _MEM / _CONST (0 = absent)
 *   bits  2-6   reg     struct pt_regs slot (byte offset / 8)
 *   bits  7-8   size    log2 of the size in bytes (1, 2, 4, 8)
 *   bit   9     signed
 *   bits 10-29  val     MEM: displacement, CONST: the value (20-bit two's complement)
 */
#ifndef BPFSIGHT_USDT_ARG_H
#define BPFSIGHT_USDT_ARG_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define BS_USDT_ARG_REG	  1
#define BS_USDT_ARG_MEM	  2
#define BS_USDT_ARG_CONST 3

#define BS_USDT_ARG_VAL_MIN (-(1 << 19))
#define BS_USDT_ARG_VAL_MAX ((1 << 19) - 1)

#define BS_USDT_ARG(kind, reg, log2size, is_signed, val)                                           \
	((__u64)(kind) | (__u64)(reg) << 2 | (__u64)(log2size) << 7 | (__u64)(is_signed) << 9 |    \
	 ((__u64)(val)&0xfffff) << 10)

#define BS_USDT_ARG_KIND(a)	((a)&0x3)
#define BS_USDT_ARG_REG_SLOT(a) (((a) >> 2) & 0x1f)
#define BS_USDT_ARG_LOG2SIZE(a) (((a) >> 7) & 0x3)
#define BS_USDT_ARG_SIGNED(a)	(((a) >> 9) & 0x1)
#define BS_USDT_ARG_VAL(a)	(((__s32)((a) << 2)) >> 12) /* sign-extend bits 10-29 */

#define BS_USDT_SITE_ARGS 4

/* The argument specs of one USDT site, for a program that reads more than a cookie holds. */
struct bs_usdt_site {
	__u32 arg[BS_USDT_SITE_ARGS];
};

#endif /* BPFSIGHT_USDT_ARG_H */
