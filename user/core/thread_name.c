// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Python's name or the OS's for a thread (thread_name.h). */
#include <ctype.h>
#include <string.h>
#include "records.h"
#include "thread_name.h"

int thread_name__made_up(const char *s)
{
	const char *p;

	if (!strcmp(s, "MainThread"))
		return 1;
	if (!strncmp(s, "Thread-", 7))
		p = s + 7;
	else if (!strncmp(s, "Dummy-", 6))
		p = s + 6;
	else
		return 0;
	if (!isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	return !*p || (p[0] == ' ' && p[1] == '(' && p[strlen(p) - 1] == ')');
}

/* Is COMM the file name of PATH (up to its first space) as comm keeps it? */
static int is_file_name(const char *comm, const char *path)
{
	const char *end = path + strcspn(path, " "), *base = end;
	size_t n = strlen(comm), len;

	while (base > path && base[-1] != '/')
		base--;
	len = end - base;
	return n && len >= n && !strncmp(base, comm, n) && (len == n || n == BS_COMM_LEN - 1);
}

const char *thread_name__pick(const char *py, const char *comm, const char *cmdline,
			      const char *exe)
{
	if (!py || !*py)
		return comm;
	if (!comm || !*comm || !thread_name__made_up(py) || (!cmdline && !exe))
		return py;
	if ((cmdline && is_file_name(comm, cmdline)) || (exe && is_file_name(comm, exe)))
		return py;
	return comm;
}
