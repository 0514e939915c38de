// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Namespace thread ids -> BPF's (see shim_tids.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shim_tids.h"
#include "hmap.h"

#define NS_UNKNOWN 0
#define NS_SAME	   1 /* our namespace: ids are BPF's */
#define NS_BELOW   2 /* a namespace below ours: translate */

/* ids: (ns id, 0) -> BPF's id; (BPF's id, 1) -> ns id (the thread was looked up) */
struct ns_proc {
	__u32 state;
	__u64 rescan_at;
	struct hmap *ids;
};

struct shim_tids {
	struct hmap *procs;	  /* (pid, 0) -> struct ns_proc */
	__u32 last_pid, last_tid; /* the last thread seen calling, already handled */
	__u64 unknown;
};

struct shim_tids *shim_tids__new(void)
{
	struct shim_tids *t = calloc(1, sizeof(*t));

	if (t && !(t->procs = hmap__new(sizeof(struct ns_proc)))) {
		free(t);
		return NULL;
	}
	return t;
}

void shim_tids__free(struct shim_tids *t)
{
	struct ns_proc *p;
	size_t it = 0;

	if (!t)
		return;
	while ((p = hmap__next(t->procs, &it, NULL)))
		hmap__free(p->ids);
	hmap__free(t->procs);
	free(t);
}

/*
 * The NSpid line of PATH: the id at our level in *OURS, the innermost in *INNER; the number
 * of levels, 0 when unreadable (gone, or a kernel without NSpid: nothing to translate).
 */
static int nspid(const char *path, __u32 *ours, __u32 *inner)
{
	char line[256];
	int levels = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (;;) {
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			if (!levels++)
				*ours = v;
			*inner = v;
			p = end;
		}
		break;
	}
	fclose(f);
	return levels;
}

/* PID's entry, its namespace judged on creation; NULL when out of memory. */
static struct ns_proc *proc_of(struct shim_tids *t, __u32 pid)
{
	struct ns_proc *p = hmap__get(t->procs, (struct hkey){ pid, 0 }, 1);
	char path[64];
	__u32 ours = 0, inner = 0;

	if (!p || p->state != NS_UNKNOWN)
		return p;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	p->state = nspid(path, &ours, &inner) > 1 ? NS_BELOW : NS_SAME;
	if (p->state == NS_BELOW && !(p->ids = hmap__new(sizeof(__u32))))
		p->state = NS_SAME; /* out of memory: ids go untranslated (counted) */
	return p;
}

int shim_tids__namespaced(struct shim_tids *t, __u32 pid)
{
	struct ns_proc *p = proc_of(t, pid);

	return p && p->state == NS_BELOW;
}

/* Keep the pair (BPF's TID, its namespace id INNER) both ways: 0, or -1 out of memory. */
static int keep(struct ns_proc *p, __u32 tid, __u32 inner)
{
	__u32 *v;

	if (hmap__count(p->ids) >= 2 * SHIM_TIDS_MAX_THREADS) {
		/* Thread churn in a long-lived process: start over (live threads are found again). */
		hmap__free(p->ids);
		if (!(p->ids = hmap__new(sizeof(__u32)))) {
			p->state = NS_SAME;
			return -1;
		}
	}
	if ((v = hmap__get(p->ids, (struct hkey){ tid, 1 }, 1)))
		*v = inner;
	if ((v = hmap__get(p->ids, (struct hkey){ inner, 0 }, 1)))
		*v = tid;
	return 0;
}

/* Learn the thread /proc/PID/task/TID (BPF's TID): 0, or -1 when it is gone. */
static int learn(struct ns_proc *p, __u32 pid, __u32 tid)
{
	char path[96];
	__u32 ours = 0, inner = 0;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/status", pid, tid);
	if (nspid(path, &ours, &inner) < 2 || ours != tid)
		return -1;
	return keep(p, tid, inner);
}

void shim_tids__told(struct shim_tids *t, __u32 pid, __u32 tid, __u32 nstid)
{
	struct ns_proc *p = hmap__get(t->procs, (struct hkey){ pid, 0 }, 1);

	if (!p)
		return;
	if (p->state != NS_BELOW) { /* BPF knows better than a /proc read that came too late */
		hmap__free(p->ids);
		if (!(p->ids = hmap__new(sizeof(__u32)))) {
			p->state = NS_SAME;
			return;
		}
		p->state = NS_BELOW;
	}
	keep(p, tid, nstid);
}

void shim_tids__seen(struct shim_tids *t, __u32 pid, __u32 tid)
{
	struct ns_proc *p;

	/* A thread's calls come in runs: one lookup per run. */
	if (pid == t->last_pid && tid == t->last_tid)
		return;
	p = proc_of(t, pid);
	if (!p)
		return;
	t->last_pid = pid;
	t->last_tid = tid;
	if (p->state == NS_BELOW && !hmap__get(p->ids, (struct hkey){ tid, 1 }, 0))
		learn(p, pid, tid);
}

static void rescan(struct ns_proc *p, __u32 pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		__u32 tid = strtoul(d->d_name, NULL, 10);

		/* Every thread, known ones too: a tid reused in the process has a new id. */
		if (tid)
			learn(p, pid, tid);
	}
	closedir(dir);
}

__u32 shim_tids__host(struct shim_tids *t, __u32 pid, __u32 nstid, __u64 now)
{
	struct ns_proc *p = proc_of(t, pid);
	__u32 *v;

	if (!nstid || !p || p->state != NS_BELOW)
		return nstid;
	v = hmap__get(p->ids, (struct hkey){ nstid, 0 }, 0);
	if (!v && now >= p->rescan_at) {
		p->rescan_at = now + SHIM_TIDS_RESCAN_NS;
		rescan(p, pid);
		v = hmap__get(p->ids, (struct hkey){ nstid, 0 }, 0);
	}
	if (v)
		return *v;
	t->unknown++;
	return nstid;
}

void shim_tids__proc_exit(struct shim_tids *t, __u32 pid)
{
	struct ns_proc *p = hmap__get(t->procs, (struct hkey){ pid, 0 }, 0);

	if (t->last_pid == pid)
		t->last_pid = t->last_tid = 0;
	if (!p)
		return;
	hmap__free(p->ids);
	hmap__del(t->procs, (struct hkey){ pid, 0 });
}

__u64 shim_tids__procs(const struct shim_tids *t)
{
	return hmap__count(t->procs);
}

__u64 shim_tids__unknown(const struct shim_tids *t)
{
	return t->unknown;
}
