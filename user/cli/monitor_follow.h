/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `monitor -p` after its targets exit: the last interval served for --exit-grace, and with
 * --follow the job's next process (a restart) monitored in their place.
 */
#ifndef BPFSIGHT_MONITOR_FOLLOW_H
#define BPFSIGHT_MONITOR_FOLLOW_H

#include <linux/types.h>
#include "metrics_ident.h"
#include "record_ctx.h"

struct monitor_follow {
	const char *job_env; /* --job-label-env */
	__u64 grace_ns;	     /* --exit-grace */
	int follow;	     /* --follow */
	__u32 nids;
	struct metrics_ident ids[RECORD_MAX_PIDS]; /* the -p targets' job and role */
};

/* Before the first run: the identity of each of O's targets (what a restart will have). */
void monitor_follow__init(struct monitor_follow *mf, const struct record_opts *o);
/*
 * The targets of O exited: wait --exit-grace (the metrics are served meanwhile) for a stop
 * signal, or with --follow for processes of the targets' job and role, which become O's
 * targets. 1: record them; 0: stop (the grace ended, or a signal came).
 */
int monitor_follow__wait(struct monitor_follow *mf, struct record_opts *o);

#endif /* BPFSIGHT_MONITOR_FOLLOW_H */
