// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The mem family's option: --mem-step (record and monitor). */
#include <stdio.h>
#include "mem.h"
#include "parse.h"
#include "msg.h"
#include "record_ctx.h"

void mem_opts_init(void *opts, const char *cmd)
{
	((struct mem_opts *)opts)->step = MEM_STEP_DEFAULT_BYTES;
}

void mem_opts_describe(const void *opts, char *buf, size_t len)
{
	snprintf(buf, len, " mem_step=%llu",
		 (unsigned long long)((const struct mem_opts *)opts)->step);
}

static int parse_step(void *opts, const char *arg, const char *cmd)
{
	__u64 v;

	if (parse_size(arg, &v) || v < 4096)
		return msg__fail("bad --mem-step '%s': use a size of 4K or more, e.g. "
				 "256K or 4M",
				 arg);
	((struct mem_opts *)opts)->step = v;
	return 0;
}

const struct family_option mem_options[] = {
	{ "mem-step", "SIZE",
	  "a process's resident memory is recorded each time it moves by SIZE, and each SIZE of "
	  "growth is a sample charged to the stack of the thread whose page fault made it "
	  "(default 1M; smaller: finer lines, more records)",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, parse_step },
	{ 0 },
};
