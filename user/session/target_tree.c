// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* -p's existing child processes (target_tree.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "msg.h"
#include "proc_meta.h"
#include "record_ctx.h"
#include "target_tree.h"

struct proc_link {
	pid_t pid, ppid;
};

/* Every process's parent, from /proc/PID/stat: N entries into *LINKS; 0 or -errno. */
static int read_links(struct proc_link **links, size_t *n)
{
	DIR *d = opendir("/proc");
	size_t cap = 0;
	struct dirent *e;

	*links = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char path[64], buf[1024], *end;
		long pid = strtol(e->d_name, &end, 10);
		__u64 start;
		__u32 ppid;
		char state;
		FILE *f;
		size_t len;

		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		f = fopen(path, "re");
		if (!f)
			continue; /* gone meanwhile */
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = 0;
		if (proc_meta__parse_stat(buf, &ppid, &start, &state) || state == 'Z')
			continue;
		if (array__grow((void **)links, *n, &cap, sizeof(**links))) {
			closedir(d);
			free(*links);
			*links = NULL;
			return -ENOMEM;
		}
		(*links)[(*n)++] = (struct proc_link){ (pid_t)pid, (pid_t)ppid };
	}
	closedir(d);
	return 0;
}

static int listed(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return 1;
	return 0;
}

int target_tree__descendants(const pid_t *roots, __u32 nroots, pid_t *out, __u32 max)
{
	size_t n, cap = 0, nfound = 0, lo = 0, hi = 0;
	struct proc_link *links;
	pid_t *found = NULL;
	int err = read_links(&links, &n), first = 1;

	if (err)
		return err;
	/* Level by level: the roots' children, then theirs (found[lo..hi): the last level). */
	for (;;) {
		size_t level_start = nfound;

		for (size_t i = 0; i < n; i++) {
			pid_t parent = links[i].ppid, pid = links[i].pid;

			if (!(first ? listed(roots, nroots, parent)
				    : listed(found + lo, hi - lo, parent)) ||
			    listed(roots, nroots, pid) || listed(found, nfound, pid))
				continue;
			if (array__grow((void **)&found, nfound, &cap, sizeof(*found))) {
				free(found);
				free(links);
				return -ENOMEM;
			}
			found[nfound++] = pid;
		}
		if (nfound == level_start)
			break;
		first = 0;
		lo = level_start;
		hi = nfound;
	}
	for (size_t i = 0; i < nfound && i < max; i++)
		out[i] = found[i];
	free(found);
	free(links);
	return (int)nfound;
}

int target_tree__take_children(struct record_opts *o)
{
	__u32 room = RECORD_MAX_PIDS - o->npids, added = 0;
	pid_t kids[RECORD_MAX_PIDS];
	int n;

	if (!o->npids)
		return 0;
	n = target_tree__descendants(o->pids, o->npids, kids, room);
	if (n < 0) {
		pr_warn("cannot read /proc for the child processes of -p: %s; only those forked "
			"from now on are traced\n",
			strerror(-n));
		return 0;
	}
	for (int i = 0; i < n && (__u32)i < room; i++) {
		/* The start time tells it from a later process given its recycled pid. */
		if (proc_meta__start(kids[i], &o->pid_start[o->npids]) ||
		    proc_meta__parent(kids[i], &o->pid_parent[o->npids], o->pid_comm[o->npids]))
			continue; /* exited meanwhile */
		o->pids[o->npids++] = kids[i];
		added++;
	}
	if ((__u32)n > room)
		pr_warn("%u child processes of -p are not traced: at most %d processes are given "
			"to -p (use -a, or name fewer)\n",
			(__u32)n - room, RECORD_MAX_PIDS);
	o->nchildren += added;
	return (int)added;
}
