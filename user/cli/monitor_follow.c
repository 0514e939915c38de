// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What `monitor -p` does when its targets exit (monitor_follow.h). A scrape between the
 * targets' last events and the monitor's exit would otherwise never come: the monitor stays,
 * serving, for --exit-grace. With --follow it looks, every LOOK_NS, for a live process whose
 * job and role labels are a target's (the same command line, or the same job variable): a
 * restarted job, which it then records as it did the first (its series go on, metrics.c).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "monitor_follow.h"
#include "mono_clock.h"
#include "msg.h"
#include "proc_meta.h"
#include "recorder.h"

#define LOOK_NS 100000000ull /* 100 ms: a restart's first events come before its first scrape */

void monitor_follow__init(struct monitor_follow *mf, const struct record_opts *o)
{
	mf->nids = 0;
	for (__u32 i = 0; i < o->npids - o->nchildren && i < RECORD_MAX_PIDS; i++)
		if (!metrics_ident__read((__u32)o->pids[i], mf->job_env, &mf->ids[mf->nids]))
			mf->nids++;
}

static int is_target(const struct monitor_follow *mf, const struct metrics_ident *id)
{
	for (__u32 i = 0; i < mf->nids; i++)
		if (!strcmp(mf->ids[i].job, id->job) && !strcmp(mf->ids[i].role, id->role))
			return 1;
	return 0;
}

/* The live processes of the targets' job and role into O's targets: how many. */
static __u32 find_restart(const struct monitor_follow *mf, struct record_opts *o)
{
	struct metrics_ident id;
	struct dirent *d;
	DIR *dir = opendir("/proc");
	__u32 n = 0;
	char *end;
	long pid;

	while (dir && (d = readdir(dir)) && n < RECORD_MAX_PIDS) {
		pid = strtol(d->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid() || !proc_meta__alive((pid_t)pid) ||
		    metrics_ident__read((__u32)pid, mf->job_env, &id) || !is_target(mf, &id) ||
		    proc_meta__start((pid_t)pid, &o->pid_start[n]))
			continue;
		o->pids[n++] = (pid_t)pid;
	}
	if (dir)
		closedir(dir);
	return n;
}

int monitor_follow__wait(struct monitor_follow *mf, struct record_opts *o)
{
	__u64 end = mono_now_ns() + mf->grace_ns;
	struct timespec look = { 0, LOOK_NS };
	__u32 n;

	if (mf->grace_ns)
		pr_info("the targets exited: serving their last values for --exit-grace%s\n",
			mf->follow ? ", or until the job starts again (--follow)" : "");
	while (!recorder__stop_signalled() && mono_now_ns() < end) {
		if (mf->follow && (n = find_restart(mf, o))) {
			o->npids = n;
			o->nchildren = 0;
			pr_info("following the job's restart: pid %d%s\n", o->pids[0],
				n > 1 ? " and others" : "");
			return 1;
		}
		nanosleep(&look, NULL); /* a stop signal ends it early */
	}
	return 0;
}
