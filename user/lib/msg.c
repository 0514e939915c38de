// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight's messages on stderr (msg.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "msg.h"
#include "utf8.h"

static const char *cmd_name;

void msg__set_cmd(const char *cmd)
{
	cmd_name = cmd;
}

const char *msg__cmd(void)
{
	return cmd_name ? cmd_name : "bpfsight";
}

/*
 * One locked write: threads' messages (the recorder's, a stop thread's) never interleave.
 * Messages name what traced processes chose (comms, paths, symbols): their control characters
 * and invalid UTF-8 are shown as '?' (utf8.h), line ends kept.
 */
static void say(const char *kind, const char *fmt, va_list ap)
{
	char *text = NULL, *line, *nl;

	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	flockfile(stderr);
	if (cmd_name)
		fprintf(stderr, "bpfsight %s: %s", cmd_name, kind);
	else
		fprintf(stderr, "bpfsight: %s", kind);
	for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		utf8__put_printable(stderr, line);
		if (nl)
			fputc('\n', stderr);
	}
	if (!text)
		fputs("(out of memory for a message)\n", stderr);
	funlockfile(stderr);
	free(text);
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
