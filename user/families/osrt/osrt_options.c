// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The osrt family's option: --osrt-threshold (record and monitor, their own defaults). */
#include <stdio.h>
#include <string.h>
#include "osrt.h"
#include "parse.h"
#include "msg.h"
#include "record_ctx.h"

/*
 * record keeps every call of at least 1 us as a record (syscalls shorter than that are mostly
 * the vDSO's misses); monitor only makes histograms, and the in-kernel count is cheaper.
 */
#define RECORD_THRESHOLD_NS  1000ull
#define MONITOR_THRESHOLD_NS 100000ull

void osrt_opts_init(void *opts, const char *cmd)
{
	((struct osrt_opts *)opts)->threshold_ns =
		strcmp(cmd, "monitor") ? RECORD_THRESHOLD_NS : MONITOR_THRESHOLD_NS;
}

static int parse_threshold(void *opts, const char *arg, const char *cmd)
{
	if (parse_threshold_ns(arg, &((struct osrt_opts *)opts)->threshold_ns))
		return msg__fail("bad --osrt-threshold '%s': use e.g. 0, 500ns, 1us "
				 "or 2ms",
				 arg);
	return 0;
}

void osrt_opts_describe(const void *opts, char *buf, size_t len)
{
	snprintf(buf, len, " osrt_threshold_ns=%llu",
		 (unsigned long long)((const struct osrt_opts *)opts)->threshold_ns);
}

const struct family_option osrt_options[] = {
	{ "osrt-threshold", "DUR",
	  "syscalls shorter than DUR are counted in the kernel, not recorded one by one: the "
	  "histograms' first bucket in monitor (default: record 1us, monitor and top 100us; 0 "
	  "records all)",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, parse_threshold },
	{ 0 },
};

const struct osrt_opts *osrt_opts(const struct record_opts *o)
{
	return record_opts__family(o, &family_osrt);
}
