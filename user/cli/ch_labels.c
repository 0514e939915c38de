// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The labels of ClickHouse rows: ch_labels.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ch_labels.h"
#include "content_id.h"
#include "msg.h"

int ch_labels__option(struct export_opts *l, int job, const char *arg)
{
	char *end;
	long v;

	if (job) {
		/* the job is a URL's path in `--from clickhouse://HOST:PORT/JOB` */
		if (!*arg || strpbrk(arg, "/?#%\t\n\\'")) {
			pr_err("bad job name '%s': no '/', '?', '#', '%%', quotes or blanks\n",
			       arg);
			return -EINVAL;
		}
		l->job = arg;
		return 0;
	}
	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < -1 || v > INT_MAX) {
		pr_err("bad rank '%s': a number, 0 and up (-1: unknown)\n", arg);
		return -EINVAL;
	}
	l->rank = (__s32)v;
	return 0;
}

int ch_labels__for_file(struct export_opts *l, const char *file)
{
	static char id[CONTENT_ID_LEN], job[256];
	const char *base = strrchr(file, '/');
	size_t n;
	int err;

	err = content_id__file(file, id);
	if (err) {
		pr_err("cannot read %s: %s\n", file, strerror(-err));
		return err;
	}
	l->file = file;
	l->file_id = id;
	if (l->job && l->job != job)
		return 0;
	base = base ? base + 1 : file;
	n = strlen(base);
	if (n > 4 && !strcmp(base + n - 4, ".bst"))
		n -= 4;
	snprintf(job, sizeof(job), "%.*s", (int)n, base);
	l->job = job;
	return ch_labels__option(l, 1, job);
}
