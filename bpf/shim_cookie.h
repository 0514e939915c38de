/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bpf_cookie of the probes bpf/shim.bpf.c serves (the cupti-shim's bpfsight:* USDT sites):
 * which probe it is and how to fetch the batch probe's two arguments, as the site's note
 * describes them (user/uprobe/usdt_notes.c parses the note, user/shim_channel/shim_link.c encodes
 * it here).
 *
 *   bits  0-3   probe   SHIM_PROBE_*
 *   bits  4-33  arg 0   (buf)   30-bit argument spec, below
 *   bits 34-63  arg 1   (bytes)
 *
 * Argument spec (30 bits):
 *   bits  0-1   kind    SHIM_ARG_REG / _MEM / _CONST (0 = absent)
 *   bits  2-6   reg     struct pt_regs slot (byte offset / 8)
 *   bits  7-8   size    log2 of the size in bytes (1, 2, 4, 8)
 *   bit   9     signed
 *   bits 10-29  val     MEM: displacement, CONST: the value (20-bit two's complement)
 */
#ifndef BPFSIGHT_SHIM_COOKIE_H
#define BPFSIGHT_SHIM_COOKIE_H

/* Which site: BPF acts on the batch probe alone; the others matter by their semaphores. */
#define SHIM_PROBE_BATCH   1
#define SHIM_PROBE_CONTROL 2 /* a family's control site (struct family_shim.sites) */
#define SHIM_PROBE_DRAIN   3 /* flush now: attached at a recording's end */
#define SHIM_PROBE_JOIN	   4 /* a tracer joining a session already on (BS_SHIM_EV_JOIN) */

#define SHIM_ARG_REG   1
#define SHIM_ARG_MEM   2
#define SHIM_ARG_CONST 3

#define SHIM_ARG_VAL_MIN (-(1 << 19))
#define SHIM_ARG_VAL_MAX ((1 << 19) - 1)

#define SHIM_ARG(kind, reg, log2size, is_signed, val)                                              \
	((__u64)(kind) | (__u64)(reg) << 2 | (__u64)(log2size) << 7 | (__u64)(is_signed) << 9 |    \
	 ((__u64)(val)&0xfffff) << 10)
#define SHIM_COOKIE(probe, arg0, arg1) ((__u64)(probe) | (__u64)(arg0) << 4 | (__u64)(arg1) << 34)

#define SHIM_COOKIE_PROBE(c)  ((__u32)(c)&0xf)
#define SHIM_COOKIE_ARG(c, i) ((__u32)(((c) >> ((i) ? 34 : 4)) & 0x3fffffff))
#define SHIM_ARG_KIND(a)      ((a)&0x3)
#define SHIM_ARG_REG_SLOT(a)  (((a) >> 2) & 0x1f)
#define SHIM_ARG_LOG2SIZE(a)  (((a) >> 7) & 0x3)
#define SHIM_ARG_SIGNED(a)    (((a) >> 9) & 0x1)
#define SHIM_ARG_VAL(a)	      (((__s32)((a) << 2)) >> 12) /* sign-extend bits 10-29 */

#endif /* BPFSIGHT_SHIM_COOKIE_H */
