// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* -o's %-escapes (output_name.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "msg.h"
#include "output_name.h"

int output_name__wants_pid(const char *pattern)
{
	for (const char *c = pattern; (c = strchr(c, '%')); c += 2) {
		if (c[1] == 'p')
			return 1;
		if (!c[1])
			break;
	}
	return 0;
}

/* One pass: %n as N (0: left as "%n"). 0, or 1 after saying what is wrong. */
static int expand(const char *pattern, pid_t pid, unsigned n, char *out, size_t len)
{
	char host[256], name[128];
	const char *add, *end;
	size_t used = 0, k;

	for (const char *c = pattern; *c; c++) {
		char num[24];

		if (*c != '%') {
			snprintf(num, sizeof(num), "%c", *c);
			add = num;
		} else if (c[1] == '%') {
			add = "%";
			c++;
		} else if (c[1] == 'h') {
			if (gethostname(host, sizeof(host)))
				snprintf(host, sizeof(host), "localhost");
			host[sizeof(host) - 1] = 0;
			add = host;
			c++;
		} else if (c[1] == 'p') {
			snprintf(num, sizeof(num), pid > 0 ? "%d" : "%%p", (int)pid);
			add = num;
			c++;
		} else if (c[1] == 'n') {
			snprintf(num, sizeof(num), n ? "%u" : "%%n", n);
			add = num;
			c++;
		} else if (c[1] == 'q' && c[2] == '{' && (end = strchr(c + 3, '}')) &&
			   (size_t)(end - c - 3) < sizeof(name)) {
			snprintf(name, sizeof(name), "%.*s", (int)(end - c - 3), c + 3);
			add = getenv(name) ?: "";
			c = end;
		} else {
			return msg__fail("-o %s: unknown escape '%%%c' (nsys's: %%h host, %%p pid, "
					 "%%q{VAR} environment variable, %%n first free number, "
					 "%%%% a '%%')",
					 pattern, c[1] ? c[1] : ' ');
		}
		k = strlen(add);
		if (used + k >= len)
			return msg__fail("-o %s: the expanded name is too long", pattern);
		memcpy(out + used, add, k);
		used += k;
	}
	out[used] = 0;
	return 0;
}

int output_name__expand(const char *pattern, pid_t pid, char *out, size_t len)
{
	if (!strstr(pattern, "%n"))
		return expand(pattern, pid, 0, out, len);
	/* nsys's %n: the least positive integer whose name no file has. */
	for (unsigned n = 1; n < 1000000; n++) {
		if (expand(pattern, pid, n, out, len))
			return 1;
		if (access(out, F_OK))
			return 0;
	}
	return msg__fail("-o %s: every name up to a million is taken", pattern);
}
