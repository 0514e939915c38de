/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where mem's reports say memory was taken: a record's site is the innermost Python frame of
 * its stack (file, line, function), else its innermost native frame; site 0 is a record
 * without a stack (an allocation under --stacks=mem's size, or --stacks=none). Sites are
 * numbered as first met and looked up by stack id, so a report pays a hash lookup per record.
 */
#ifndef BPFSIGHT_MEM_SITE_H
#define BPFSIGHT_MEM_SITE_H

#include <linux/types.h>
#include "records.h"
#include "table.h"

struct mem_sites;
struct trace_model;

struct mem_sites *mem_sites__new(void);
void mem_sites__free(struct mem_sites *s);
/* REC's site (its STACK_REF's stack, --stacks=mem), 0 when it has none or out of memory. */
__u32 mem_sites__of(struct mem_sites *s, const struct trace_model *m, const struct bs_hdr *rec);
/* SITE's frame (the model's), NULL for site 0. */
const struct bs_frame *mem_sites__frame(const struct mem_sites *s, __u32 site);

/*
 * The site columns of a report, func, file and line: the entries AT + MEM_SITE_* of its
 * struct table_col array (table.h), filled by mem_site__set given the same AT. Fenced from
 * clang-format, which indents a macro's initializers after the first.
 */
enum { MEM_SITE_FUNC, MEM_SITE_FILE, MEM_SITE_LINE, MEM_SITE_NCOLS };
// clang-format off
#define MEM_SITE_COLS(at)                                                                          \
	[(at) + MEM_SITE_FUNC] = { "func", "Function", TABLE_STR },                                \
	[(at) + MEM_SITE_FILE] = { "file", "File", TABLE_STR, TABLE_COL_PATH },                    \
	[(at) + MEM_SITE_LINE] = { "line", "Line", TABLE_U64 }
// clang-format on

/* Fill them for SITE in T's current row; NONE is site 0's function. 1 for site 0, else 0. */
int mem_site__set(struct table *t, int at, const struct mem_sites *s, __u32 site,
		  const struct trace_model *m, const char *none);

/* The pid, process and device columns of a report's rows, as the site columns. */
enum { MEM_WHO_PID, MEM_WHO_PROCESS, MEM_WHO_DEVICE, MEM_WHO_NCOLS };
// clang-format off
#define MEM_WHO_COLS(at)                                                                           \
	[(at) + MEM_WHO_PID] = { "pid", "PID", TABLE_U64 },                                        \
	[(at) + MEM_WHO_PROCESS] = { "process", "Process", TABLE_STR, TABLE_COL_MINOR },           \
	[(at) + MEM_WHO_DEVICE] = { "device", "Device", TABLE_STR }
// clang-format on

void mem_who__set(struct table *t, int at, const struct trace_model *m, __u32 pid, __s16 device);

#endif /* BPFSIGHT_MEM_SITE_H */
