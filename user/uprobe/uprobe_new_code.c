// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * New code in traced processes, as the records tell the uprobe manager (uprobe_mgr_priv.h):
 * a fork inherits its parent's maps and gets its own probes (launch mode: held until then),
 * an exec is scanned at once, a dlopen (MAP_EXEC) is queued for the next housekeeping tick,
 * or, in launch mode, where BPF stopped the process (SIGSTOP), scanned at once and the
 * process let go (SIGCONT); an exit closes the process's probes.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "array.h"
#include "kdev.h"
#include "record_ctx.h"
#include "hmap.h"
#include "uprobe_mgr_priv.h"
#include "msg.h"
#include "libmap.skel.h"

#define STOP_WAIT_MS 200 /* for a process BPF stopped to reach the stopped state */

static void queue(struct uprobe_mgr *m, pid_t pid)
{
	for (__u32 i = 0; i < m->npending; i++)
		if (m->pending[i] == pid || m->pending[i] == 0)
			return;
	if (m->npending == MAX_PENDING) {
		/* Degrade to rescanning every process, never to forgetting one. */
		m->pending[MAX_PENDING - 1] = 0;
		return;
	}
	m->pending[m->npending++] = pid;
}

/* 1 once thread TID shows the stopped state (its mmap is then complete). */
static int wait_stopped(pid_t pid, pid_t tid)
{
	struct timespec ms = { 0, 1000000 };
	char fn[64], buf[512], *p;

	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/stat", pid, tid);
	for (int i = 0; i < STOP_WAIT_MS; i++) {
		FILE *f = fopen(fn, "re");
		size_t n;

		if (!f)
			return 0;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')'); /* the comm may hold spaces and parentheses */
		if (p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't'))
			return 1;
		nanosleep(&ms, NULL);
	}
	return 0;
}

/* A forked child has its parent's mappings: symbolization works even if it exits at once. */
static void inherit_maps(struct uprobe_mgr *m, pid_t parent, pid_t child)
{
	struct pid_maps **slot = hmap__get(m->pids, (struct hkey){ (__u64)parent, 0 }, 0);
	struct pid_mapping *v;

	if (!slot || !*slot || !(*slot)->n)
		return;
	v = malloc((*slot)->n * sizeof(*v));
	if (!v)
		return;
	memcpy(v, (*slot)->v, (*slot)->n * sizeof(*v));
	uprobe_mgr__set_maps(m, child, v, (*slot)->n); /* may move *slot: not used after */
	slot = hmap__get(m->pids, (struct hkey){ (__u64)child, 0 }, 0);
	for (__u32 i = 0; slot && *slot && i < (*slot)->n; i++)
		uprobe_mgr__notify_mapped(m, child, &(*slot)->v[i], (*slot)->v[i].obj->path);
}

/*
 * A program that exited before its maps could be read (a few ms is enough): its file is
 * still examined, by the name it was started with, so that its next run in this recording,
 * and (through the scan cache) in later ones, is traced from the first call. A relative
 * name is not resolved: the process's working directory is gone with it.
 */
static void exec_file_examine(struct uprobe_mgr *m, const struct bs_map_exec *x)
{
	const char *path = (const char *)(x + 1);
	size_t room = x->h.size - sizeof(*x);
	struct uprobe_obj **slot = hmap__get(m->objs, (struct hkey){ x->dev, x->ino }, 0);
	struct stat st;

	if ((slot && *slot && (*slot)->examined) || x->h.size <= sizeof(*x) ||
	    !memchr(path, 0, room) || path[0] != '/')
		return;
	if (stat(path, &st) || kdev_of(st.st_dev) != x->dev || st.st_ino != x->ino)
		return; /* replaced since: not the file that ran */
	uprobe_mgr__prescan(m, path);
}

/* -v: how late the probes of a new program were live (docs/CUDA.md quotes it). */
static void verbose_exec_scanned(const struct bs_hdr *rec, __u64 scan_start)
{
	char fn[64], exe[PATH_MAX];
	__u64 now = mono_now_ns(), late = now - rec->ts;
	ssize_t n;

	snprintf(fn, sizeof(fn), "/proc/%d/exe", rec->pid);
	n = readlink(fn, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	pr_info("pid %d (%s): new program scanned and probed %.2f ms "
		"after its exec (the scan: %.2f ms)\n",
		rec->pid, n > 0 ? exe : "exited", late / 1e6, (now - scan_start) / 1e6);
}

/* The last thread of PID exited: its maps go after the grace (uprobe_mgr__poll). */
static void exited(struct uprobe_mgr *m, pid_t pid, __u64 ts)
{
	struct pid_maps **slot = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 0);

	if (!slot || !*slot)
		return;
	if (array__grow((void **)&m->exited, m->nexited, &m->exited_cap, sizeof(*m->exited)))
		return; /* kept until the recording ends */
	(*slot)->exited_ns = ts ? ts : 1;
	m->exited[m->nexited++] = pid;
}

/* Free the maps of processes whose grace is over (not those whose pid came back since). */
static void forget_exited(struct uprobe_mgr *m, __u64 now)
{
	__u32 i = 0;

	for (; i < m->nexited; i++) {
		struct hkey k = { (__u64)m->exited[i], 0 };
		struct pid_maps **slot = hmap__get(m->pids, k, 0), *pm = slot ? *slot : NULL;

		if (pm && pm->exited_ns && pm->exited_ns + MAPS_GRACE_NS > now)
			break; /* this one and the later ones still wait */
		if (!pm || !pm->exited_ns)
			continue; /* gone already, or the pid is alive again */
		free(pm->v);
		free(pm);
		hmap__del(m->pids, k);
	}
	memmove(m->exited, m->exited + i, (m->nexited - i) * sizeof(*m->exited));
	m->nexited -= i;
}

/* Whether PID is launch mode's command or one of its processes (libmap's `launched`). */
static int launched(struct uprobe_mgr *m, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u8 v;

	return m->libmap && m->libmap->rodata->stop_on_new_code &&
	       !bpf_map_lookup_elem(bpf_map__fd(m->libmap->maps.launched), &key, &v);
}

/* Whether the manager knows PID's maps (a scan, or its parent's at its fork). */
static int has_maps(struct uprobe_mgr *m, pid_t pid)
{
	struct pid_maps **slot = hmap__get(m->pids, (struct hkey){ (__u64)pid, 0 }, 0);

	return slot && *slot && (*slot)->n && !(*slot)->exited_ns;
}

/*
 * A new process CHILD of PARENT: its parent's maps (or its own, when its parent's are not
 * known), and its own probes on them: it has its parent's int3s but none of its links.
 */
static void forked(struct uprobe_mgr *m, pid_t parent, pid_t child)
{
	if (has_maps(m, child))
		; /* told already (the FORK record and launch mode's hold both say it) */
	else if (has_maps(m, parent))
		inherit_maps(m, parent, child);
	else
		uprobe_mgr__scan_pid(m, child);
	uprobe_mgr__link_pid(m, child, 0);
}

const __u16 uprobe_mgr__observes[] = { BS_REC_EXIT, BS_REC_FORK, BS_REC_EXEC, BS_REC_MAP_EXEC, 0 };

void uprobe_mgr__observe(struct uprobe_mgr *m, const struct bs_hdr *rec)
{
	const struct bs_map_exec *x = (const void *)rec;

	if (rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit)) {
		if (((const struct bs_exit *)rec)->group_dead) {
			exited(m, rec->pid, rec->ts);
			uprobe_mgr__unlink_pid(m, rec->pid, 0);
		}
		return;
	}
	if (rec->type == BS_REC_FORK && rec->size >= sizeof(struct bs_fork)) {
		const struct bs_fork *f = (const void *)rec;

		if (f->child_pid == f->child_tid && f->child_pid != rec->pid)
			forked(m, rec->pid, f->child_pid);
		return;
	}
	if (rec->type == BS_REC_EXEC && rec->size >= sizeof(struct bs_exec) && m->scoped) {
		/*
		 * A thread but the leader exec'd: the kernel made it the leader, and a link
		 * made with the pid holds the old leader, whose memory it filtered on: the
		 * process's links are made again.
		 */
		if (((const struct bs_exec *)rec)->old_tid != rec->pid)
			uprobe_mgr__unlink_pid(m, rec->pid, 0);
		/*
		 * Its links followed it into its new program, but a program examined before (so
		 * not reported, -p) may bring files it had no link on: its own code (a static
		 * runtime), ld.so after a static program. Launch mode's exec is held and scanned
		 * (its MAP_EXEC).
		 */
		if (!launched(m, rec->pid))
			uprobe_mgr__scan_pid(m, rec->pid);
		return;
	}
	if (rec->type != BS_REC_MAP_EXEC || rec->size < sizeof(*x))
		return;
	if (x->flags & BS_MAP_EXEC_FORK) {
		/* Launch mode: the child waits, before its first instruction, for its probes. */
		if (!(x->flags & BS_MAP_EXEC_STOPPED) && m->scoped) {
			__u64 late =
				mono_now_ns() - rec->ts; /* it runs meanwhile: said at the end */

			m->late_forks++;
			if (late < (1ull << 62) && late > m->late_max_ns)
				m->late_max_ns = late;
		}
		forked(m, (pid_t)x->ino, rec->pid);
		if (x->flags & BS_MAP_EXEC_STOPPED)
			kill(rec->pid, SIGCONT);
		return;
	}
	if (x->flags & BS_MAP_EXEC_EXCLUDED) {
		/* -a: its new program is excluded: its probes out of its memory before it runs. */
		uprobe_mgr__unlink_pid(m, rec->pid, 1);
		if (x->flags & BS_MAP_EXEC_STOPPED)
			kill(rec->pid, SIGCONT);
		return;
	}
	if (x->flags & BS_MAP_EXEC_STOPPED) {
		/* Probe the new code now, then let the process go: it waits for us. */
		wait_stopped(rec->pid, rec->tid);
		uprobe_mgr__scan_pid(m, rec->pid);
		kill(rec->pid, SIGCONT);
	} else if (x->flags & BS_MAP_EXEC_EXEC) {
		/*
		 * A new program runs meanwhile (-p, -a): probe it before the ring's other
		 * records, not after the drain. -v says how late its probes were live.
		 */
		__u64 t0 = mono_now_ns();

		uprobe_mgr__scan_pid(m, rec->pid);
		exec_file_examine(m, x);
		if (m->ctx->opts->verbose)
			verbose_exec_scanned(rec, t0);
	} else {
		queue(m, rec->pid);
	}
}

void uprobe_mgr__rescan_all(struct uprobe_mgr *m)
{
	__u32 key, next;
	int err;

	if (!m)
		return;
	if (m->ctx->opts->system_wide) {
		queue(m, 0);
		return;
	}
	/* The traced processes only: listeners attach to whatever process they are told of. */
	for (err = bpf_map_get_next_key(m->ctx->targets_fd, NULL, &next); !err;
	     err = bpf_map_get_next_key(m->ctx->targets_fd, &key, &next)) {
		queue(m, (pid_t)next);
		key = next;
	}
}

#define SWEEP_NS 1000000000ull /* how often links of ended processes are looked for */

int uprobe_mgr__poll(struct uprobe_mgr *m)
{
	__u64 now = mono_now_ns();

	if (m->nexited)
		forget_exited(m, now);
	if (m->scoped && !m->closed && now - m->swept_ns >= SWEEP_NS) {
		m->swept_ns = now;
		uprobe_mgr__sweep_links(m);
	}
	for (__u32 i = 0; i < m->npending; i++) {
		if (m->pending[i])
			uprobe_mgr__scan_pid(m, m->pending[i]); /* a process that is gone is fine */
		else
			uprobe_mgr__scan(m, 0);
	}
	m->npending = 0;
	return 0;
}
