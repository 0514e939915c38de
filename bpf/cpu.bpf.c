// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu: timer samples of traced threads. A software cpu-clock perf event per CPU runs this
 * program SAMPLE_RATE times a second on whatever runs there; a sample of a traced thread
 * carries its stack as stack.bpf.h reads it (user addresses by frame pointers, Python frames
 * when it holds the GIL). The recorder symbolizes and interns the stacks while the process
 * lives (user/families/cpu/cpu.c, stack_svc.c): nothing is symbolized in here.
 *
 * A sample of kernel code also says whether it was in a page fault (BS_CPU_FAULT): its kernel
 * stack passes through the fault handler, exc_page_fault (the C handler both the IDT and the
 * FRED entries call), whose [start, end) user space finds in /proc/kallsyms. Only the samples
 * of traced threads in kernel code pay for the kernel stack: bench/RESULTS.md has its cost.
 */
#include "stack.bpf.h"
#include "cpu_records.h"
#include "task_regs.bpf.h"

/* The page-fault handler's code, [fault_lo, fault_hi); 0: not known, nothing is told apart. */
const volatile __u64 fault_lo = 0;
const volatile __u64 fault_hi = 0;

/* perf's own default depth (kernel.perf_event_max_stack): a fault's stack is ~10-20 frames. */
#define KSTACK_DEPTH 127

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[KSTACK_DEPTH]);
} cpu_kstack SEC(".maps");

/* BS_CPU_FAULT when the kernel code the sample CTX interrupted runs for a page fault. */
static __always_inline __u32 in_page_fault(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0;
	__u64 *ips;
	long n;

	if (!fault_lo || !sample_in_kernel(ctx))
		return 0;
	ips = bpf_map_lookup_elem(&cpu_kstack, &zero);
	if (!ips)
		return 0;
	n = bpf_get_stack(ctx, ips, KSTACK_DEPTH * sizeof(__u64), 0);
	if (n <= 0)
		return 0;
	n = (__u64)n / sizeof(__u64);
	for (int i = 0; i < KSTACK_DEPTH && i < n; i++)
		if (ips[i] - fault_lo < fault_hi - fault_lo)
			return BS_CPU_FAULT;
	return 0;
}

/*
 * The system call a sample of kernel code ran for, in the flags (BS_CPU_SYSCALL_NR): the number
 * the thread entered the kernel with, from its user registers; none for a page fault's or an
 * interrupt's entry (-1 there). What splits a thread's time on a CPU inside a system call (an
 * fsync's own work) from its code's, in the ledger, with osrt's blocked mode seeing the sleeps.
 */
static __always_inline __u32 in_syscall(struct bpf_perf_event_data *ctx, __u32 kflags)
{
	struct pt_regs *regs;
	long nr;

	if ((kflags & BS_CPU_FAULT) || !sample_in_kernel(ctx))
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return 0;
	nr = BS_REGS_SYSCALL(regs);
	return nr >= 0 && nr < 0xfffe ? (__u32)(nr + 1) << BS_CPU_SYSCALL_SHIFT : 0;
}

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, kflags;

	if (bs_is_target(pid) && tid) {
		kflags = in_page_fault(ctx);
		stack_sample(ctx, pid, tid, BS_REC_CPU_SAMPLE_RAW, bs_wakeup_flags(),
			     kflags | in_syscall(ctx, kflags));
	}
	return 0;
}
