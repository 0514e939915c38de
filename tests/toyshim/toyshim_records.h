/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The toy shim family's records (a test's: tests/toyshim/): what bpf/NAME_records.h holds for
 * a family whose records the cupti-shim writes. Shared by its module in the shim
 * (shim_toyshim.c) and its bpfsight side (toyshim.c).
 */
#ifndef BPFSIGHT_TOYSHIM_RECORDS_H
#define BPFSIGHT_TOYSHIM_RECORDS_H

#include "shim_records.h"

#define BS_REC_TOYSHIM_TICK 0xffc /* in the toy family's block (0xff0): no registry has both */

/* hdr.ts = the tick, hdr.tid = the thread that made it. */
struct bs_toyshim_tick {
	struct bs_hdr h;
	__u64 value;
	__u32 name_id; /* string: the tick's name */
	__u32 _pad;
};

/* Its bit of a STATUS record's state: the module makes ticks (shim_records.h's next free). */
#define BS_SHIM_ST_TOYSHIM_ON 0x400

BS_ASSERT_RECORD(bs_toyshim_tick, 40);

#endif /* BPFSIGHT_TOYSHIM_RECORDS_H */
