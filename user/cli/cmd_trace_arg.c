// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The reading commands' one positional argument, the trace FILE: one check, one wording. */
#include "commands.h"

const char *cmd__trace_arg(const char *cmd, int argc, char **argv, void (*usage)(FILE *f))
{
	if (optind == argc - 1)
		return argv[optind];
	fprintf(stderr, "bpfsight %s: %s\n", cmd,
		optind >= argc ? "which trace? give one FILE" : "one FILE at a time");
	usage(stderr);
	return NULL;
}
