// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The gil family's option: --gil-mode (record and monitor). */
#include <string.h>
#include "gil.h"
#include "family_record.h"
#include "msg.h"
#include "record_ctx.h"

static int parse_mode(void *opts, const char *arg, const char *cmd)
{
	struct gil_opts *g = opts;

	if (!strcmp(arg, "default"))
		g->full = 0;
	else if (!strcmp(arg, "full"))
		g->full = 1;
	else
		return msg__fail("bad --gil-mode '%s': use default or full", arg);
	return 0;
}

const struct family_option gil_options[] = {
	{ "gil-mode", "MODE",
	  "default: probe only the GIL's contended path (waits; costs nothing while "
	  "uncontended); full: also every take_gil/drop_gil for exact hold times: 3 probe hits "
	  "per GIL release/acquire, a loop that releases the GIL often runs several times slower "
	  "(bench/RESULTS.md); CPU-bound contention is unaffected",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, parse_mode },
	{ 0 },
};
