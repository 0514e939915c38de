/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A process's identity in monitor's series, the job and role labels: what stays the same when
 * a job is restarted (its pid does not). Read from /proc as the monitor first sees a process
 * and after each exec (metrics.c asks through metrics_opts.ident).
 */
#ifndef BPFSIGHT_METRICS_IDENT_H
#define BPFSIGHT_METRICS_IDENT_H

#include <linux/types.h>

#define M_JOB_LEN  128
#define M_ROLE_LEN 40

struct metrics_ident {
	char job[M_JOB_LEN];   /* the job's name: the same for every process of one job */
	char role[M_ROLE_LEN]; /* its part in it: "main", "rank 1" ("worker N": metrics.c's) */
};

/*
 * PID's identity: the job is ENV_NAME's value in its environment when given and set, else
 * TORCHELASTIC_RUN_ID, else MASTER_ADDR:MASTER_PORT, else its command line (at most
 * M_JOB_LEN - 1 bytes); the role is "rank N" from RANK (else LOCAL_RANK), else "main".
 * 0, or -ESRCH when the process is gone (nothing of it could be read).
 */
int metrics_ident__read(__u32 pid, const char *env_name, struct metrics_ident *id);

#endif /* BPFSIGHT_METRICS_IDENT_H */
