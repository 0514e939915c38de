// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The mem family's options: --mem-step (record and monitor), --mem-sample-rate (record). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mem.h"
#include "family_record.h"
#include "parse.h"
#include "msg.h"
#include "record_ctx.h"

void mem_opts_init(void *opts, const char *cmd)
{
	((struct mem_opts *)opts)->step = MEM_STEP_DEFAULT_BYTES;
	((struct mem_opts *)opts)->sample_rate = MEM_SAMPLE_DEFAULT_BYTES;
	((struct mem_opts *)opts)->native_frames = MEM_NATIVE_FRAMES_DEFAULT;
}

void mem_opts_describe(const void *opts, char *buf, size_t len)
{
	const struct mem_opts *o = opts;

	snprintf(buf, len, " mem_step=%llu mem_sample_rate=%llu mem_native_frames=%u",
		 (unsigned long long)o->step, (unsigned long long)o->sample_rate, o->native_frames);
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

static int parse_sample_rate(void *opts, const char *arg, const char *cmd)
{
	__u64 v = 0;

	if (strcmp(arg, "none") && (parse_size(arg, &v) || !v || v > MEM_SAMPLE_MAX_BYTES))
		return msg__fail("bad --mem-sample-rate '%s': use a size from 1 to 1G, e.g. "
				 "512K, or none",
				 arg);
	((struct mem_opts *)opts)->sample_rate = v;
	return 0;
}

static int parse_native_frames(void *opts, const char *arg, const char *cmd)
{
	unsigned long v = BS_STACK_MAX_FRAMES;
	char *end = NULL;

	if (strcmp(arg, "all") &&
	    (!*arg || (v = strtoul(arg, &end, 10), *end) || !v || v > BS_STACK_MAX_FRAMES))
		return msg__fail("bad --mem-native-frames '%s': use a count from 1 to %d, or all",
				 arg, BS_STACK_MAX_FRAMES);
	((struct mem_opts *)opts)->native_frames = (__u32)v;
	return 0;
}

const struct family_option mem_options[] = {
	{ "mem-step", "SIZE",
	  "a process's resident memory is recorded each time it moves by SIZE, and each SIZE of "
	  "growth is a sample charged to the stack of the thread whose page fault made it "
	  "(default 1M; smaller: finer lines, more records)",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, parse_step },
	{ "mem-sample-rate", "SIZE",
	  "allocations under --stacks=mem's size carry a stack by sampled bytes, one per SIZE "
	  "allocated on average, each counted for the bytes it stands for, so every line's "
	  "bytes are estimated whatever its blocks' size (default 512K; smaller: closer "
	  "estimates, more stacks; none: only blocks of at least --stacks=mem's size)",
	  FAMILY_OPT_RECORD, parse_sample_rate },
	{ "mem-native-frames", "N",
	  "a memory stack keeps its N innermost native frames, the allocator's callers up to the "
	  "op that allocated, then its Python frames whole (default 16; all: every native frame, "
	  "the interpreter's between the Python ones too: about three times the frames; 1: the "
	  "allocator's own frame)",
	  FAMILY_OPT_RECORD, parse_native_frames },
	{ 0 },
};
