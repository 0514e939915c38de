// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reading commands' one positional argument, the trace FILE: one check, one wording; and
 * the command line a written file's header keeps.
 */
#include <stdlib.h>
#include <string.h>
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

char *cmd__join_args(int argc, char **argv)
{
	size_t len = 1;
	char *s, *p;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = p = malloc(len);
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++)
		p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
	*p = 0;
	return s;
}
