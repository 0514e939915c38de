/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Launch mode: CMD is forked first and held at a gate until every probe is attached and its
 * pid is in the target set, so not one of its events is missed; then it execs.
 */
#ifndef BPFSIGHT_LAUNCH_H
#define BPFSIGHT_LAUNCH_H

#include <sys/types.h>

struct launch {
	pid_t pid;
	int gate_fd; /* write end; closing it releases the child */
	int status;  /* wait status once reaped */
	int reaped;
};

/*
 * Fork CMD, held at the gate; with USER (a name, "" for a uid not in /etc/passwd), it runs as
 * UID and GID with USER's groups of /etc/group (set before it waits: CMD never runs with
 * more). Returns 0 or a negative errno.
 */
int launch__start(struct launch *l, char **cmd, const char *user, uid_t uid, gid_t gid);
/* Let CMD exec. */
void launch__go(struct launch *l);
/* Abort a held CMD (the child exits 127 without running it). */
void launch__abort(struct launch *l);
/* Non-blocking (or blocking) reap: 1 when CMD has exited. */
int launch__reap(struct launch *l, int block);
/* CMD's exit status as a shell reports it: code, or 128 + signal. */
int launch__exit_status(const struct launch *l);

#endif
