// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu: timer samples of traced threads. A software cpu-clock perf event per CPU runs this
 * program SAMPLE_RATE times a second on whatever runs there; a sample of a traced thread
 * carries its stack as stack.bpf.h reads it (user addresses by frame pointers, Python frames
 * when it holds the GIL). The recorder symbolizes and interns the stacks while the process
 * lives (user/families/cpu/cpu.c, stack_svc.c): nothing is symbolized in here.
 */
#include "stack.bpf.h"
#include "cpu_records.h"

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, size;
	struct stack_scratch *s;

	if (!bs_is_target(pid) || !tid)
		return 0;
	s = stack_scratch_take();
	if (!s)
		return 0;
	/* Kernel mode: the user stack is where the thread entered the kernel. The context
	 * is read in whole words only (cs shares its word with padding). */
	s->flags = (*(volatile __u64 *)((void *)ctx +
					__builtin_offsetof(struct bpf_perf_event_data, regs.cs)) &
		    3)
			   ? 0
			   : BS_CPU_KERNEL;
	/*
	 * The words on top of its user stack go first: where the innermost function has
	 * no frame of its own (its first instructions, its `ret`, a fast path without one), the
	 * frame-pointer walk skips its caller, whose return address is one of them; the recorder
	 * decides from the code (native_frames__return_slot). In kernel mode, the user stack is
	 * where the thread entered the kernel: stack_unwind reads the registers saved there.
	 */
	size = stack_read(s, pid, tid, 1);
	s->type = 0;
	stack_send(s, size, BS_REC_CPU_SAMPLE_RAW, pid, tid, bpf_ktime_get_ns(), bs_wakeup_flags());
	stack_scratch_put(s);
	return 0;
}
