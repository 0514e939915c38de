// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * top's RANK and ROLE columns: what a process is to the job, where it is known. RANK is the
 * rank its environment gives it (RANK, else LOCAL_RANK: torchrun's, mpirun's; a DataLoader
 * worker inherits its trainer's), read from /proc as top first sees the process and from the
 * PROC_SNAP records the recording's reads write (a replay's only source). ROLE is its part in
 * a pool a family found (trace_model__join_pool): "worker 1 of 4213", the trainer's DataLoader
 * worker 1, read from its stack by top -p's refreshes, and "trainer" for the pool's owner. Each
 * column is shown in a frame only when a process there has one.
 */
#include <stdio.h>
#include <string.h>
#include "proc_meta.h"
#include "snap_records.h"
#include "top_priv.h"
#include "trace_model.h"

const struct top_column top_rank_column = {
	"rank", "RANK", "RANK (else LOCAL_RANK) in the process's environment", TOP_TAG, 0, 4,
};

/* 19: "worker 12 of 4194304" */
const struct top_column top_role_column = {
	"role",	 "ROLE", "its part in the job: worker N of PID (a DataLoader's), trainer",
	TOP_TAG, 0,	 19,
};

void top_role__born(struct top *t, struct top_thread *th)
{
	th->rank = th->tid || t->replay ? -1 : proc_meta__env_rank((pid_t)th->pid);
}

void top_role__snap(struct top *t, const struct bs_hdr *h)
{
	const struct bs_proc_snap *s = (const void *)h;
	struct top_thread *th;
	__s32 rank;

	if (h->size < sizeof(*s))
		return;
	rank = s->env_rank >= 0 ? s->env_rank : s->env_local_rank;
	if (rank >= 0 && (th = top__thread(t, h->pid, 0)))
		th->rank = rank;
}

/* "worker 1 of 4213" for a pool's member (the last word of what it is), the owner's part. */
static const char *role_text(struct top *t, __u32 pid)
{
	__u32 owner = 0, n = 0;
	const char *what = trace_model__pool(t->model, pid, &owner, &n), *word;
	char buf[64];

	if (!what || !owner)
		return what; /* an owner's ("trainer"), or none */
	word = strrchr(what, ' ');
	snprintf(buf, sizeof(buf), "%s %u of %u", word ? word + 1 : what, n, owner);
	return top__intern(t, buf);
}

void top_role__cells(struct top *t, const struct top_thread *th, struct top_row *r)
{
	char buf[16];

	if (th->tid)
		return;
	if (th->rank >= 0) {
		snprintf(buf, sizeof(buf), "%d", th->rank);
		r->label[t->rank_col] = top__intern(t, buf);
		r->val[t->rank_col] = (double)(1 << 30) - th->rank; /* sorted: rank 0 first */
	}
	r->label[t->role_col] = role_text(t, th->pid);
}
