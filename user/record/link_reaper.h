/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Destroying many perf-event uprobe links at once (kernels without uprobe_multi, < 6.6).
 * The kernel tears each one down under a global mutex with its own grace periods
 * (synchronize_rcu_tasks_trace under bpf_event_mutex when the program is detached,
 * synchronize_srcu + synchronize_rcu under event_mutex when the uprobe event is freed): one
 * after another whoever closes them, ~0.1 s each on the benchmark VM, half a minute and more
 * for the few hundred links of `-t cuda`. Threads do not help (the mutexes serialize them).
 *
 * So the wait is handed to a detached process: it inherits the links' files, the recorder
 * closes its own copies (instant: the files stay referenced) and goes on, and the process
 * drops the last references as it exits, in the background. Until it is done the probes
 * stay installed: a probed call pays the uprobe trap and a program that finds the recording
 * gone (its ring buffer unread) for those seconds more. `ps` shows it as bpfsight-detach.
 */
#ifndef BPFSIGHT_LINK_REAPER_H
#define BPFSIGHT_LINK_REAPER_H

struct bpf_link;

/* bpf_link__destroy every one of the N LINKS, in order; from REAPER_MIN on, the wait in the
 * background. */
void link_reaper__destroy(struct bpf_link **links, unsigned int n);
/*
 * A recording's stop: every link and perf event this process holds now is handed to a
 * detached process, so that closing them here is instant whatever the kernel's unregistering
 * takes (with uprobe_multi too: its teardown waits for grace periods and for the probed
 * processes' mmap locks, seconds when dozens of traced threads share the cores). Their
 * programs must write nothing by then (the `control` map's stop bit, common.bpf.h). Until
 * link_reaper__let_go (or this process's exit) closes its gate, link_reaper__destroy forks
 * no other. Returns the gate, or -1 where there is none (BPFSIGHT_DETACH_INLINE, fork failed):
 * then the links are closed here, with the wait.
 */
int link_reaper__hold_all(void);
/* Our links are closed: the holder drops them; waits up to WAIT_MS for it to be done. */
void link_reaper__let_go(unsigned int wait_ms);
/*
 * Wait (at most LIMIT_MS) until no bpfsight-detach process holds a perf event (a per-site
 * uprobe's; bpf links alone take no mutex an attach needs), saying so once on
 * stderr. Attaching perf-event uprobes takes the mutex their teardown holds: a recording
 * started meanwhile would attach a probe per teardown step, and in -p/-a mode miss the calls
 * made while it does. Returns how many were still running when it gave up (0: none).
 */
int link_reaper__wait_others(unsigned int limit_ms);

#endif /* BPFSIGHT_LINK_REAPER_H */
