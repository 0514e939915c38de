/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bpf_cookie of the probes bpf/shim.bpf.c serves (the cupti-shim's bpfsight:* USDT sites):
 * which probe it is and how to fetch the batch probe's two arguments, as the site's note
 * describes them (user/uprobe/usdt_notes.c parses the note, user/shim_channel/shim_link.c encodes
 * it here).
 *
 *   bits  0-3   probe   SHIM_PROBE_*
 *   bits  4-33  arg 0   (batch: buf; a stack site: the event's ts)   30-bit argument spec
 *   bits 34-63  arg 1   (batch: bytes; a stack site: its duration)   (usdt_arg.h)
 *
 * Each argument spec is usdt_arg.h's (30 bits).
 */
#ifndef BPFSIGHT_SHIM_COOKIE_H
#define BPFSIGHT_SHIM_COOKIE_H

#include "usdt_arg.h"

/* Which site: BPF acts on the batch and stack probes; the others matter by their semaphores. */
#define SHIM_PROBE_BATCH   1
#define SHIM_PROBE_CONTROL 2 /* a family's control site (struct family_shim.sites) */
#define SHIM_PROBE_DRAIN   3 /* flush now: attached at a recording's end */
#define SHIM_PROBE_JOIN	   4 /* a tracer joining a session already on (BS_SHIM_EV_JOIN) */
/*
 * A family's stack site (struct shim_site.stack_type: --stacks=FAMILY): SHIM_PROBE_STACK + K
 * for the K-th stack site of the registry. BPF reads the thread's stack there and sends it as
 * the STACK_RAW of the event of shim_stack_type[K] at (ts, the thread), when its duration is
 * at least shim_stack_ns[K] (bpf/shim.bpf.c's rodata, set by the channel).
 */
#define SHIM_PROBE_STACK 8
#define SHIM_STACK_SITES 8 /* probes 8..15 */

#define SHIM_COOKIE(probe, arg0, arg1) ((__u64)(probe) | (__u64)(arg0) << 4 | (__u64)(arg1) << 34)

#define SHIM_COOKIE_PROBE(c)  ((__u32)(c)&0xf)
#define SHIM_COOKIE_ARG(c, i) ((__u32)(((c) >> ((i) ? 34 : 4)) & 0x3fffffff))

#endif /* BPFSIGHT_SHIM_COOKIE_H */
