// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* -a's excluded processes living at the start (exclude.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "array.h"
#include "exclude.h"
#include "record_ctx.h"
#include "target_tree.h"

/* Whether process PID's name (/proc/PID/comm) is one O excludes. */
static int comm_excluded(const struct record_opts *o, long pid)
{
	char path[64], comm[BS_COMM_LEN + 2] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return 0; /* gone meanwhile */
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	for (__u32 i = 0; i < o->nexclude_comms; i++)
		if (!strncmp(comm, o->exclude_comms[i], BS_COMM_LEN))
			return 1;
	return 0;
}

/* The --exclude-pid pids and the processes living now with an excluded name. */
static int roots(const struct record_opts *o, pid_t self, pid_t **v, size_t *n)
{
	size_t cap = 0;
	struct dirent *e;
	DIR *d;

	*v = NULL;
	*n = 0;
	for (__u32 i = 0; i < o->nexclude_pids; i++) {
		if (array__grow((void **)v, *n, &cap, sizeof(**v)))
			return -ENOMEM;
		(*v)[(*n)++] = o->exclude_pids[i];
	}
	if (!o->nexclude_comms)
		return 0;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self || !comm_excluded(o, pid))
			continue;
		if (array__grow((void **)v, *n, &cap, sizeof(**v))) {
			closedir(d);
			return -ENOMEM;
		}
		(*v)[(*n)++] = (pid_t)pid;
	}
	closedir(d);
	return 0;
}

static void mark(int fd, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;

	bpf_map_update_elem(fd, &key, &one, BPF_ANY);
}

int exclude__fill(struct record_ctx *ctx)
{
	pid_t *root, *below = NULL;
	size_t nroot;
	int n, err;

	if (!record_opts__excludes(ctx->opts) || ctx->excluded_fd < 0)
		return 0;
	err = roots(ctx->opts, ctx->self_pid, &root, &nroot);
	if (err) {
		free(root);
		return err;
	}
	for (size_t i = 0; i < nroot; i++)
		mark(ctx->excluded_fd, root[i]);
	/* Their descendants living now: counted first, then read. */
	n = nroot ? target_tree__descendants(root, (__u32)nroot, NULL, 0) : 0;
	if (n > 0 && (below = calloc((size_t)n, sizeof(*below))))
		n = target_tree__descendants(root, (__u32)nroot, below, (__u32)n);
	for (int i = 0; below && i < n; i++)
		if (below[i] != ctx->self_pid)
			mark(ctx->excluded_fd, below[i]);
	free(below);
	free(root);
	return n < 0 ? n : 0;
}
