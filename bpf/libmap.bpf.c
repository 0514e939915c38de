// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * When new code appears in a traced process: exec (sched_process_exec) and every change of
 * the dynamic linker's link map (a uprobe on ld.so's _dl_debug_state, the hook debuggers
 * use: called after the libraries of a new process are mapped and around every dlopen and
 * dlclose). User space then looks for probe sites in the files it has not examined yet, at
 * once, instead of polling /proc/PID/maps. (This kernel has no kprobes or fentry, so mmap
 * itself cannot be hooked; both events here are rare.) Loaded only when a uprobe family
 * (cuda, nccl) records.
 *
 * In launch mode the process is also stopped (SIGSTOP, taken on its way back to user space)
 * until user space has attached the probes of the new code and sent SIGCONT: the first call
 * into a freshly loaded libcudart is traced like every other.
 */
#include "common.bpf.h"

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
	if (stop && stop_on_new_code && !bpf_send_signal(SIGSTOP_NR))
		r->flags |= BS_MAP_EXEC_STOPPED;
	/* Wake user space now: the new code is about to run (a stopped process waits for
	 * us). Forced: the default wakes the consumer only if it has read everything before,
	 * and records before this one go out without wakeups. */
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

static __always_inline void on_exec(struct linux_binprm *bprm)
{
	struct file_key key;
	struct inode *inode;

	if (!bs_is_target(bpf_get_current_pid_tgid() >> 32))
		return;
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
	if (!stop_on_new_code && bpf_map_lookup_elem(&known_files, &key))
		return;
	report(BS_MAP_EXEC_EXEC, key.dev, key.ino, BPF_CORE_READ(bprm, filename), !skip_exec_stop);
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
	if (bs_is_target(bpf_get_current_pid_tgid() >> 32))
		report(BS_MAP_EXEC_DLOPEN, 0, 0, NULL, 1);
	return 0;
}
