// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The cpu family's option: --sample-rate (record, and top for its function view). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cpu.h"
#include "family_record.h"
#include "msg.h"
#include "record_ctx.h"

/* 99, not 100: samples do not fall in step with work that runs every 10 ms (perf's habit). */
#define DEFAULT_HZ 99

void cpu_opts_init(void *opts, const char *cmd)
{
	((struct cpu_opts *)opts)->hz = DEFAULT_HZ;
}

static int parse_rate(void *opts, const char *arg, const char *cmd)
{
	unsigned long hz;
	char *end;

	errno = 0;
	hz = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || hz < 1 || hz > 10000)
		return msg__fail("bad --sample-rate '%s': samples per second, 1 to "
				 "10000 (default %d)",
				 arg, DEFAULT_HZ);
	((struct cpu_opts *)opts)->hz = hz;
	return 0;
}

/* export --format pprof reads sample_rate= back from the trace's header. */
void cpu_opts_describe(const void *opts, char *buf, size_t len)
{
	snprintf(buf, len, " sample_rate=%u", ((const struct cpu_opts *)opts)->hz);
}

const struct family_option cpu_options[] = {
	{ "sample-rate", "HZ",
	  "cpu: samples per second of each CPU (default 99, 1 to 10000); the cpu family is "
	  "recorded only when -t names it (top: with -p or --functions too, its function view)",
	  FAMILY_OPT_RECORD | FAMILY_OPT_TOP, parse_rate },
	{ 0 },
};
