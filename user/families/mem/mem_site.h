/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where mem's reports say memory was taken: a record's site is the line of the job's own
 * code in its stack (frame_sum__own_site: the innermost Python frame outside the standard
 * library and the installed packages, torch's included), with the library's frame that did
 * the work beside it (via: conv.py:459); a stack without a frame of the job's own has its
 * innermost Python frame, else its innermost native frame, as its site. With --group-by
 * stack:N the site also has the stack's first N Python frames (torch_op_sum's stack:N). Site
 * 0 is a record without a stack (--stacks=none). Sites are numbered as first met and looked
 * up by stack id, so a report pays a hash lookup per record.
 */
#ifndef BPFSIGHT_MEM_SITE_H
#define BPFSIGHT_MEM_SITE_H

#include <linux/types.h>
#include "records.h"
#include "report.h"
#include "table.h"

struct mem_sites;
struct trace_model;

/*
 * The stack id of an allocation made before the recording took stacks (BS_MEM_EARLY: while it
 * attached), and its site: "(before stacks)".
 */
#define MEM_SITE_STACK_EARLY 0xffffffffu
#define MEM_SITE_EARLY	     1
#define MEM_BEFORE_STACKS    "(before stacks)"

/* Sites by line, and by the first STACK_N Python frames too when STACK_N is not 0. */
struct mem_sites *mem_sites__new(unsigned stack_n);
void mem_sites__free(struct mem_sites *s);
/* The site of the stack whose id is STACK (0: none); 0 for none, or when out of memory. */
__u32 mem_sites__of(struct mem_sites *s, const struct trace_model *m, __u32 stack);
/* REC's stack id (its STACK_REF's, --stacks=mem), 0 when it has none. */
__u32 mem_sites__stack_of(const struct trace_model *m, const struct bs_hdr *rec);
/* SITE's frame in the job's own code (the model's), NULL for site 0. */
const struct bs_frame *mem_sites__frame(const struct mem_sites *s, __u32 site);
/* --group-by's N of ASK for mem's reports: N of stack:N, else 0. */
unsigned mem_sites__stack_n(const struct report_ask *ask);

/*
 * The site columns of a report: func, file and line of the frame in the job's own code,
 * via_func, via_file and via_line of the library's frame beside it (unset when there is
 * none): the entries AT + MEM_SITE_* of its struct table_col array (table.h), filled by
 * mem_site__set given the same AT. Fenced from clang-format, which indents a macro's
 * initializers after the first.
 */
enum {
	MEM_SITE_FUNC,
	MEM_SITE_FILE,
	MEM_SITE_LINE,
	MEM_SITE_VIA_FUNC,
	MEM_SITE_VIA_FILE,
	MEM_SITE_VIA_LINE,
	MEM_SITE_NCOLS
};
// clang-format off
#define MEM_SITE_COLS(at)                                                                          \
	[(at) + MEM_SITE_FUNC] = { "func", "Function", TABLE_STR },                                \
	[(at) + MEM_SITE_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },                    \
	[(at) + MEM_SITE_LINE] = { "line", "Line", TABLE_U64 },                                    \
	[(at) + MEM_SITE_VIA_FUNC] = { "via_func", "Via", TABLE_STR, TABLE_COL_MINOR },            \
	[(at) + MEM_SITE_VIA_FILE] = { "via_file", "Via File", TABLE_STR,                          \
				       TABLE_COL_PATH | TABLE_COL_MINOR },                         \
	[(at) + MEM_SITE_VIA_LINE] = { "via_line", "Via Line", TABLE_U64, TABLE_COL_MINOR }
/* The stack column of --group-by stack:N: a report's last, added only then. */
#define MEM_SITE_STACK_COL { "stack", "Stack", TABLE_STR }
// clang-format on

/*
 * Fill them for SITE in T's current row; NONE is site 0's function. 1 for site 0, 2 for
 * MEM_SITE_EARLY (MEM_BEFORE_STACKS), else 0.
 */
int mem_site__set(struct table *t, int at, const struct mem_sites *s, __u32 site,
		  const struct trace_model *m, const char *none);
/* The stack column (COL) of SITE with --group-by stack:N; nothing without. */
void mem_site__set_stack(struct table *t, int col, const struct mem_sites *s, __u32 site);

/* The pid, process and device columns of a report's rows, as the site columns. */
enum { MEM_WHO_PID, MEM_WHO_PROCESS, MEM_WHO_DEVICE, MEM_WHO_NCOLS };
// clang-format off
#define MEM_WHO_COLS(at)                                                                           \
	[(at) + MEM_WHO_PID] = { "pid", "PID", TABLE_U64 },                                        \
	[(at) + MEM_WHO_PROCESS] = { "process", "Process", TABLE_STR, TABLE_COL_MINOR },           \
	[(at) + MEM_WHO_DEVICE] = { "device", "Device", TABLE_STR }
// clang-format on

void mem_who__set(struct table *t, int at, const struct trace_model *m, __u32 pid, __s16 device);

/* The group_by a mem report takes (struct report.group_by). */
extern const char *const mem_site_groups[];

#endif /* BPFSIGHT_MEM_SITE_H */
