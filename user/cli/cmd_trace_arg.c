// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The reading commands' one positional argument, the trace FILE: one check, one wording; the
 * command line a written file's header keeps; and whether the file to write may be written.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "commands.h"
#include "msg.h"

const char *cmd__trace_arg(const char *cmd, int argc, char **argv, void (*usage)(FILE *f))
{
	if (optind == argc - 1)
		return argv[optind];
	pr_info("%s\n", optind >= argc ? "which trace? give one FILE" : "one FILE at a time");
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

int cmd__check_output(const char *cmd, const char *out, const char *const *in, __u32 nin, int force)
{
	struct stat st, so;

	for (__u32 i = 0; i < nin; i++) {
		if (!stat(in[i], &st) && !stat(out, &so) && st.st_dev == so.st_dev &&
		    st.st_ino == so.st_ino) {
			pr_err("%s is one of the files to %s: choose another -o\n", out, cmd);
			return 1;
		}
	}
	if (lstat(out, &st))
		return 0;
	if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)) {
		pr_err("%s is %s: choose another -o\n", out,
		       S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file");
		return 1;
	}
	if (!force) {
		pr_err("%s exists: use --force to replace it\n", out);
		return 1;
	}
	return 0;
}
