// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight's messages on stderr (msg.h). */
#include <stdarg.h>
#include <stdio.h>
#include "msg.h"

static const char *cmd_name;

void msg__set_cmd(const char *cmd)
{
	cmd_name = cmd;
}

const char *msg__cmd(void)
{
	return cmd_name ? cmd_name : "bpfsight";
}

/* One locked write: threads' messages (the recorder's, a stop thread's) never interleave. */
static void say(const char *kind, const char *fmt, va_list ap)
{
	flockfile(stderr);
	if (cmd_name)
		fprintf(stderr, "bpfsight %s: %s", cmd_name, kind);
	else
		fprintf(stderr, "bpfsight: %s", kind);
	vfprintf(stderr, fmt, ap);
	funlockfile(stderr);
}

#define SAY(kind)                                                                                  \
	do {                                                                                       \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		say(kind, fmt, ap);                                                                \
		va_end(ap);                                                                        \
	} while (0)

void pr_err(const char *fmt, ...)
{
	SAY("");
}

void pr_warn(const char *fmt, ...)
{
	SAY("warning: ");
}

void pr_note(const char *fmt, ...)
{
	SAY("note: ");
}

void pr_info(const char *fmt, ...)
{
	SAY("");
}
