// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * When new code appears in a traced process: exec (sched_process_exec) and every change of
 * the dynamic linker's link map (a uprobe on ld.so's _dl_debug_state, the hook debuggers
 * use: called after the libraries of a new process are mapped and around every dlopen and
 * dlclose). User space then looks for probe sites in the files it has not examined yet, at
 * once, instead of polling /proc/PID/maps. (This kernel has no kprobes or fentry, so mmap
 * itself cannot be hooked; both events here are rare.) Loaded with the uprobe manager: a
 * uprobe family, stacks, the shim or the edges' snapshot (recorder_services.c's needs), so
 * in nearly every recording. The uprobe is placed, as every probe of the manager's, only in
 * the processes traced (a pid-filtered link per process, user/uprobe/uprobe_group.c), but
 * under -a without --exclude-*: a program beside the recording under Valgrind or QEMU never
 * reads its int3 (docs/USAGE.md, "What a recording touches").
 *
 * In launch mode the launched command's processes are also stopped (SIGSTOP, taken on their
 * way back to user space) until user space has attached the probes of the new code and sent
 * SIGCONT: the first call into a freshly loaded libcudart is traced like every other; and a
 * process one of them forks, before its first instruction, until its own probes are in (a
 * probe covers its process alone: fork_hold_btf). Only
 * those (`launched`: CMD and what it forks): a -p target's tree beside CMD (`-p 1 -- CMD`
 * takes in every process of the machine) or -a's other processes are not bpfsight's to
 * hold. Stopped, they also raced their own recorders: another recording that launched one of
 * them had it continued by this one's SIGCONT before its own probes were in (a launched
 * nccl_calls missed its first calls, test_nccl in a full make check), and a shell's job
 * control saw its children stop.
 */
#include "common.bpf.h"
#include "exclude.bpf.h"

#define SIGSTOP_NR 19

struct file_key {
	__u64 dev;
	__u64 ino;
};

/* Executables user space has examined: an exec of one of them is not reported again. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct file_key);
	__type(value, __u8);
} known_files SEC(".maps");

/*
 * Launch mode's command and its descendants (tgids): user space puts CMD's pid in before CMD
 * runs; a fork adds the child, the last thread's exit takes the process out (so a recycled pid
 * is never held). The processes a new-code stop may hold.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* a handful of processes, not 65536 made up front */
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} launched SEC(".maps");

/*
 * The processes the manager placed probes of their own in (tgid -> 1, user space: before it
 * places them; taken out at the last thread's exit here and by user space). A probe covers its
 * process alone: a fork of one (launch mode) or an exec of one into an excluded program (-a)
 * waits for user space.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} linked SEC(".maps");

const volatile __u32 stop_on_new_code = 0;
/*
 * Tests only (BPFSIGHT_TEST_NO_EXEC_STOP=1): an exec is not stopped, as when its signal could
 * not be sent; the dynamic linker's stops must then catch the libraries (uprobe_mgr__start).
 */
const volatile __u32 skip_exec_stop = 0;

/* An exec's record carries the program's file name after it (records.h). */
struct map_exec_path {
	struct bs_map_exec r;
	char path[BS_EXEC_PATH_LEN];
};

static __always_inline void report(__u32 flags, __u64 dev, __u64 ino, const char *path, int stop)
{
	__u64 id = bpf_get_current_pid_tgid();
	/* An exec's record has room for its path, read or not: FLAGS is each caller's constant,
	 * so the size is one (6.1's verifier does not tie a runtime one to the read below). */
	__u32 size = flags & BS_MAP_EXEC_EXEC ? sizeof(struct map_exec_path)
					      : sizeof(struct bs_map_exec);
	struct bs_map_exec *r;

	r = bs_reserve_life(BS_REC_MAP_EXEC, size, id >> 32, (__u32)id, bpf_ktime_get_ns());
	if (!r)
		return; /* never stop a process user space will not hear about */
	r->ino = ino;
	r->dev = dev;
	r->flags = flags;
	if ((flags & BS_MAP_EXEC_EXEC) &&
	    (!path || bpf_probe_read_kernel_str(((struct map_exec_path *)r)->path, BS_EXEC_PATH_LEN,
						path) < 0))
		((struct map_exec_path *)r)->path[0] = 0;
	if (stop && !bpf_send_signal(SIGSTOP_NR))
		r->flags |= BS_MAP_EXEC_STOPPED;
	/* Wake user space now: the new code is about to run (a stopped process waits for
	 * us). Forced: the default wakes the consumer only if it has read everything before,
	 * and records before this one go out without wakeups. */
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

/* Whether a new-code stop may hold process TGID: launch mode's command or its descendant. */
static __always_inline bool held(__u32 tgid)
{
	return stop_on_new_code && bpf_map_lookup_elem(&launched, &tgid);
}

static __always_inline void on_exec(struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct file_key key;
	struct inode *inode;
	bool hold;

	/*
	 * -a: a program --exclude-comm names runs with none of the recording's probes: those
	 * placed in the process before (its own, which its new program inherits) are taken out
	 * before it runs its first instruction.
	 */
	if (bs_exclude_at_exec(tgid)) {
		if (bpf_map_lookup_elem(&linked, &tgid))
			report(BS_MAP_EXEC_EXCLUDED, 0, 0, NULL, 1);
		return;
	}
	if (!bs_is_target(tgid))
		return;
	hold = held(tgid);
	inode = BPF_CORE_READ(bprm, file, f_inode);
	key.ino = BPF_CORE_READ(inode, i_ino);
	key.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	/*
	 * A known executable still loads libraries: ld.so's hook reports those. Not in launch
	 * mode, where the exec's stop is what lets user space look at the new program before
	 * it runs: a scan of the process in the middle of its exec (a housekeeping look, a
	 * stack's rescan) can make its executable known before this tracepoint, and without
	 * the stop a short program ran to its end unprobed (its libraries found too late).
	 */
	if (!hold && bpf_map_lookup_elem(&known_files, &key))
		return;
	report(BS_MAP_EXEC_EXEC, key.dev, key.ino, BPF_CORE_READ(bprm, filename),
	       hold && !skip_exec_stop);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	on_exec(bprm);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(exec_raw, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	on_exec(bprm);
	return 0;
}

/* Attached by user space to _dl_debug_state of every ld.so it finds. */
SEC("uprobe")
int dl_debug_state(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (bs_is_target(tgid))
		report(BS_MAP_EXEC_DLOPEN, 0, 0, NULL, held(tgid));
	return 0;
}

/* A process the command forks is the command's too: before the child first runs. */
static __always_inline void on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid), cpid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (stop_on_new_code && cpid == BPF_CORE_READ(child, pid) && cpid != ppid &&
	    bpf_map_lookup_elem(&launched, &ppid))
		bpf_map_update_elem(&launched, &cpid, &one, BPF_ANY);
}

/*
 * bpf_send_signal_task (6.13): a signal to a task other than the current one (the child, not
 * the parent that forks it). Called by a made-up helper id that user space rewrites into the
 * kfunc's call (kfeature__call_kfunc): fork_hold_btf is loaded only where the kernel has it.
 */
static long (*send_signal_task)(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) = (void *)BS_LIBMAP_SIGNAL_TASK_CALL;

/* Launch mode's forks are held (fork_hold_btf, loaded where the kernel can): set by user space. */
const volatile __u32 hold_forks = 0;

/* The record of CPID's fork by PPID, reserved (NULL when the ring refused it). */
static __always_inline struct bs_map_exec *fork_record(__u32 ppid, __u32 cpid)
{
	struct bs_map_exec *r;

	r = bs_reserve_life(BS_REC_MAP_EXEC, sizeof(*r), cpid, cpid, bpf_ktime_get_ns());
	if (!r)
		return NULL;
	r->ino = ppid;
	r->dev = 0;
	r->flags = BS_MAP_EXEC_FORK;
	return r;
}

/*
 * Launch mode: the child of a process that has probes of its own is held (SIGSTOP, pending
 * before it first runs: it stops on its way to its first instruction) until user space has
 * placed its own; the record says so (ino = the parent).
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_hold_btf, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = parent->tgid, cpid = child->tgid;
	struct bs_map_exec *r;

	if (!stop_on_new_code || cpid != (__u32)child->pid || cpid == ppid ||
	    !bpf_map_lookup_elem(&launched, &ppid) || !bpf_map_lookup_elem(&linked, &ppid))
		return 0;
	r = fork_record(ppid, cpid);
	if (!r)
		return 0; /* never hold a process user space will not hear about */
	if (!send_signal_task(child, SIGSTOP_NR, PIDTYPE_TGID, 0))
		r->flags |= BS_MAP_EXEC_STOPPED;
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * A child of a process that has probes of its own, not held (-p, -a with exclusions, launch
 * mode without bpf_send_signal_task): told at once (a forced wakeup; the FORK record waits for
 * the ring's others), so that its own probes come a wakeup and a few links after its fork.
 */
static __always_inline void fork_told(struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid), cpid = BPF_CORE_READ(child, tgid);
	struct bs_map_exec *r;

	if (cpid != BPF_CORE_READ(child, pid) || cpid == ppid ||
	    !bpf_map_lookup_elem(&linked, &ppid) ||
	    (hold_forks && bpf_map_lookup_elem(&launched, &ppid)))
		return;
	r = fork_record(ppid, cpid);
	if (r)
		bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_told_btf, struct task_struct *parent, struct task_struct *child)
{
	fork_told(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_told_raw, struct task_struct *parent, struct task_struct *child)
{
	fork_told(parent, child);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(launched_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(launched_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child);
	return 0;
}

/* The last thread gone (signal->live, as proc.bpf.c reads it): its pid may come back. */
static __always_inline void on_exit(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);

	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return;
	if (stop_on_new_code)
		bpf_map_delete_elem(&launched, &tgid);
	bpf_map_delete_elem(&linked, &tgid);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(launched_exit_btf, struct task_struct *p)
{
	on_exit(p);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(launched_exit_raw, struct task_struct *p)
{
	on_exit(p);
	return 0;
}
