// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpfsight's messages on stderr (msg.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fd_write.h"
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
 * One write(2) per message: threads' messages (the recorder's, a stop thread's) and a launched
 * child's before its exec ("cannot run ...") never interleave, even byte by byte (stderr is
 * unbuffered: a message put piece by piece was many writes, and CI once read the child's and
 * the recorder's lines mixed letter by letter). Messages name what traced processes chose
 * (comms, paths, symbols): their control characters and invalid UTF-8 are shown as '?'
 * (utf8.h), line ends kept.
 */
static void say(const char *kind, const char *fmt, va_list ap)
{
	char *text = NULL, *line, *nl, *out = NULL;
	size_t len = 0;
	FILE *f;

	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	f = open_memstream(&out, &len);
	if (!f) {
		f = stderr;
		flockfile(f);
	}
	if (cmd_name)
		fprintf(f, "bpfsight %s: %s", cmd_name, kind);
	else
		fprintf(f, "bpfsight: %s", kind);
	for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		utf8__put_printable(f, line);
		if (nl)
			fputc('\n', f);
	}
	if (!text)
		fputs("(out of memory for a message)\n", f);
	if (f == stderr) {
		funlockfile(f);
	} else if (!fclose(f) && out) {
		flockfile(stderr);
		fflush(stderr);
		fd__write_all(fileno(stderr), out, len);
		funlockfile(stderr);
	}
	free(out);
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

int msg__fail(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pr_err("%s\n", buf);
	return 1;
}
