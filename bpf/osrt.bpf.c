// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osrt: latency of every system call of the traced threads. A call at or above
 * threshold_ns becomes a record; a shorter one only bumps an in-kernel aggregate per
 * (thread, syscall), so counts stay exact at any rate while the file stays small.
 *
 * The entry time of the call in flight lives in BPF task storage (the _btf programs): a
 * slot attached to the task_struct, created on the thread's first traced call and freed by
 * the kernel with the task. A hash keyed by tid cost an insert on every sys_enter and a
 * delete on every sys_exit (two bucket locks and a free-list round trip: most of what the
 * programs took per call, bench/RESULTS.md, "Figures the code's comments cite"); the slot
 * costs a pointer walk. Kernels without BTF (the _raw programs) cannot use task storage,
 * so they keep the hash, cleaned up when a thread dies inside a call.
 *
 * Aggregates live as long as their thread: when a thread that has aggregates exits, its
 * identity goes into sys_dead, and user space (user/families/osrt/osrt.c) writes the thread's final totals
 * and deletes its keys and the mark. The key carries the thread's start time (gen), so a
 * recycled tid never adds to the keys of the thread that had it before.
 */
#include "stack.bpf.h"
#include "osrt_records.h"
#include "task_now.bpf.h"
#include "task_regs.bpf.h"

const volatile __u64 threshold_ns = 1000;
/* --stacks=osrt: calls of at least this (and recorded) carry the caller's stack; ~0 = none. */
const volatile __u64 osrt_stack_ns = ~0ull;
/* --osrt-mode blocked: osrt_switch_btf runs instead of sys_enter/sys_exit's programs. */
#define TASK_WAKING_STATE 0x200
const volatile __u32 blocked_mode = 0;

struct sys_start {
	__u64 ts; /* entry time of the call in flight; 0: none (returned, or never seen) */
	__u32 nr;
	__u32 gen;     /* low bits of the thread's start time (bs_syscall_agg_key.gen) */
	__u32 has_agg; /* task storage only: the thread has sys_agg keys (mark them on exit) */
	__u32 _pad;
	__u64 nvcsw; /* blocked mode: the kernel's count of its sleeps at the last one seen */
};

/* task -> the call in flight (tp_btf programs). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sys_start);
} sys_start_task SEC(".maps");

/* tid -> the call in flight (raw_tp programs, for kernels without BTF). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct sys_start);
} sys_start SEC(".maps");

/*
 * (pid, tid, nr, gen) -> the thread's short calls. Not preallocated: an insert happens once
 * per thread and syscall number, and memory follows the live threads, so user space can set a
 * cap sized to the machine.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct bs_syscall_agg_key);
	__type(value, struct bs_syscall_agg_val);
} sys_agg SEC(".maps");

/* (pid, tid, 0, gen) of threads that exited with keys in sys_agg; user space empties it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct bs_syscall_agg_key);
	__type(value, __u8);
} sys_dead SEC(".maps");

/* Returns 1 when it created the key (the thread's first short call of NR). */
static __always_inline int aggregate(__u32 pid, __u32 tid, __u32 gen, __u32 nr, __u64 dur)
{
	struct bs_syscall_agg_key key = { .pid = pid, .tid = tid, .nr = nr, .gen = gen };
	struct bs_syscall_agg_val *v, init;

	/* Only this thread updates its keys, so plain adds are race-free. */
	v = bpf_map_lookup_elem(&sys_agg, &key);
	if (v) {
		v->count++;
		v->total_ns += dur;
		if (dur < v->min_ns)
			v->min_ns = dur;
		if (dur > v->max_ns)
			v->max_ns = dur;
		return 0;
	}
	init.count = 1;
	init.total_ns = init.min_ns = init.max_ns = dur;
	if (bpf_map_update_elem(&sys_agg, &key, &init, BPF_NOEXIST)) {
		bs_count_loss(BS_LOSS_AGG_MAP);
		return 0;
	}
	return 1;
}

/*
 * A call of this thread that began at START returned now with RET. Returns 1 when a short
 * call created an aggregate key. MAY_STACK 0 (a constant) leaves the stack walk out of the
 * program: the switch program cannot use it, and the verifier need not walk it.
 */
static __always_inline int emit_from(__u64 pid_tgid, __u64 start, __u32 nr, __u32 gen, long ret,
				     __u32 flags, int may_stack)
{
	__u32 tid = (__u32)pid_tgid, pid = pid_tgid >> 32;
	__u64 dur = bpf_ktime_get_ns() - start;
	struct bs_syscall *r;

	if (dur < threshold_ns)
		return aggregate(pid, tid, gen, nr, dur);
	/* Before the call's record (STACK_REF): where user space made the call. */
	if (may_stack && osrt_stack_ns != ~0ull && dur >= osrt_stack_ns)
		stack_emit(BS_REC_SYSCALL, pid, tid, start, 1);
	r = bs_reserve(BS_REC_SYSCALL, sizeof(*r), pid, tid, start);
	if (!r)
		return 0;
	r->dur = dur;
	r->ret = ret;
	r->nr = nr;
	r->flags = flags;
	bs_submit(r);
	return 0;
}

/* A returned call (sys_exit): its stack with --stacks=osrt. */
static __always_inline int emit(__u64 pid_tgid, __u64 start, __u32 nr, __u32 gen, long ret,
				__u32 flags)
{
	return emit_from(pid_tgid, start, nr, gen, ret, flags, 1);
}

/* The thread P exited: user space writes its aggregates' final totals and deletes them. */
static __always_inline void mark_dead(struct task_struct *p, __u32 gen)
{
	struct bs_syscall_agg_key key = {
		.pid = BPF_CORE_READ(p, tgid),
		.tid = BPF_CORE_READ(p, pid),
		.gen = gen,
	};
	__u8 one = 1;

	/* Full (user space far behind): the keys stay until evicted as idle (user/families/osrt/osrt.c). */
	bpf_map_update_elem(&sys_dead, &key, &one, BPF_ANY);
}

/*
 * tp_btf + task storage. The target check runs only on a thread's first traced call: a slot
 * exists only for a thread of a traced process, a process stays traced until its last
 * thread exits, and a new process (a recycled pid too) is a new task without a slot.
 */
/* The uretprobe syscall is our return probes at work, not a call of the application. */
static __always_inline int probes_own(long id)
{
#ifdef __TARGET_ARCH_x86
	return id == BS_NR_URETPROBE_X86_64;
#else
	return 0;
#endif
}

static __always_inline int task_enter(long id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct sys_start *st;

	if (probes_own(id))
		return 0;
	st = bpf_task_storage_get(&sys_start_task, task, NULL, 0);
	if (st && bs_is_own_helper(task->tgid))
		return 0;
	if (!st) {
		if (!bs_is_target(bpf_get_current_pid_tgid() >> 32))
			return 0;
		st = bpf_task_storage_get(&sys_start_task, task, NULL,
					  BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st) {
			bs_count_loss(BS_LOSS_TASK_MAP);
			return 0;
		}
		st->gen = (__u32)task->start_time;
	}
	st->nr = id;
	st->ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int task_exit(long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct sys_start *st;
	__u64 start;

	/* No slot or no call in flight: not traced, or the call began before we attached. */
	st = bpf_task_storage_get(&sys_start_task, task, NULL, 0);
	if (!st || !st->ts)
		return 0;
	start = st->ts;
	st->ts = 0;
	/* The ids from the task the verifier already trusts: a load each, not a helper call. */
	if (emit((__u64)task->tgid << 32 | (__u32)task->pid, start, st->nr, st->gen, ret, 0))
		st->has_agg = 1;
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(osrt_enter_btf, struct pt_regs *regs, long id)
{
	return task_enter(id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(osrt_exit_btf, struct pt_regs *regs, long ret)
{
	return task_exit(ret);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(osrt_task_exit_btf, struct task_struct *p)
{
	struct sys_start *st = bpf_task_storage_get(&sys_start_task, p, NULL, 0);

	if (st && st->has_agg)
		mark_dead(p, st->gen);
	return 0;
}

/*
 * --osrt-mode blocked (user/families/osrt/osrt_options.c): no program on sys_enter or
 * sys_exit, which every system call of the machine pays once attached (bench/RESULTS.md,
 * "osrt modes"); the calls seen are those that block, from the context switches alone. A
 * target thread that goes to sleep inside a system call keeps the call's number (its user
 * registers' system call number; -1 in a page fault or an interrupt) and the time it left its CPU; its
 * next switch-in ends the block: a record at or above the threshold, else the aggregate. A
 * call that never sleeps is not seen; one that sleeps twice (a futex woken for nothing) is
 * two blocks. Writes no stack: the CPU's current task at a switch-in is the one leaving.
 */
static __always_inline void block_begin(struct task_struct *prev, __u32 state)
{
	struct sys_start *st;
	struct pt_regs *regs;
	long nr;

	if (!prev->mm || (prev->flags & 0x00200000)) /* PF_KTHREAD */
		return;
	/* Whose first: every other thread of the machine switching out stops here. */
	st = bpf_task_storage_get(&sys_start_task, prev, NULL, 0);
	if (st && bs_is_own_helper(prev->tgid))
		return;
	if (!st) {
		st = task_slot_new(&sys_start_task, prev);
		if (!st)
			return;
		st->gen = (__u32)prev->start_time;
	}
	/*
	 * Loss is never silent, even where the kernel calls no program (under load a switch now
	 * and then reaches none: docs/USAGE.md, sched): a sleep begun while the last one's
	 * switch-in is still pending, or more than one sleep since the last seen (nvcsw counts
	 * this one already), is a sleep not timed.
	 */
	if (st->ts)
		bs_count_loss(BS_LOSS_OSRT_MISSED);
	if (st->nvcsw && prev->nvcsw > st->nvcsw + 1)
		bs_count_losses(BS_LOSS_OSRT_MISSED, prev->nvcsw - st->nvcsw - 1);
	st->nvcsw = prev->nvcsw;
	st->ts = 0;
	/* The task's own state (before 5.18) read after its waker set it: a sleep, not timed. */
	if (state & TASK_WAKING_STATE)
		bs_count_loss(BS_LOSS_OSRT_MISSED);
	if (!(state & 3))
		return; /* stopped, parked, exiting: counted by nvcsw, not a sleep */
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	nr = regs ? BS_REGS_SYSCALL_CORE(regs) : -1;
	if (nr < 0 || probes_own(nr))
		return;
	st->nr = nr;
	st->ts = bpf_ktime_get_ns();
}

static __always_inline void block_end(struct task_struct *next)
{
	struct sys_start *st = bpf_task_storage_get(&sys_start_task, next, NULL, 0);
	__u64 start;

	if (!st || !st->ts)
		return;
	start = st->ts;
	st->ts = 0;
	if (emit_from((__u64)next->tgid << 32 | (__u32)next->pid, start, st->nr, st->gen, 0,
		      BS_SYSCALL_BLOCKED, 0))
		st->has_agg = 1;
}

/*
 * A switch the task made itself (not preempted: STATE not 0, the kernel counts it in nvcsw);
 * a sleep when STATE has TASK_INTERRUPTIBLE or TASK_UNINTERRUPTIBLE (and their kin).
 */
static __always_inline void on_switch(bool preempt, struct task_struct *prev,
				      struct task_struct *next, __u32 state)
{
	if (!preempt && state)
		block_begin(prev, state);
	block_end(next);
}

/*
 * prev_state (5.18+, commit fa2c3254d7cf): the state __schedule blocked the task with. The
 * task's own state read here may be TASK_WAKING already: a waker on another CPU (the timer
 * of a 1 ms nanosleep, a futex wake) can set it between the task's dequeue and this
 * tracepoint, and the block was then never seen (a few percent of a futex ping-pong's).
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(osrt_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(preempt, prev, next, prev_state);
	return 0;
}

/* Before 5.18 the tracepoint has no prev_state (sched.bpf.c): the task's state, as it read. */
SEC("tp_btf/sched_switch")
int BPF_PROG(osrt_switch_taskstate_btf, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	on_switch(preempt, prev, next, task_state_now(prev));
	return 0;
}

/*
 * The recording's start (-p; user/families/osrt/osrt.c runs it once the programs are live):
 * each target thread asleep in a system call now, with no call seen since the attach, gets
 * the entry its sys_enter would have made, from when it went off its CPU (task_off_cpu_ns: the
 * call began then or a little before), so its sys_exit writes that call, begun before the
 * start (readers count its part inside). Without it, a call entered before the attach was
 * never written (a thread blocked in a read for the whole recording had none).
 */
SEC("iter/task")
int osrt_start_iter_btf(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct sys_start *st;
	struct pt_regs *regs;
	__u32 state;
	__u64 now, off;
	long nr;

	if (!t || t->on_cpu || !t->mm || (t->flags & 0x00200000)) /* PF_KTHREAD */
		return 0;
	state = task_state_now(t);
	if (!state || (state & 0xc)) /* running or runnable; stopped or traced */
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	nr = regs ? BS_REGS_SYSCALL_CORE(regs) : -1;
	if (nr < 0 || probes_own(nr)) /* not in a system call (a page fault) */
		return 0;
	st = task_slot_new(&sys_start_task, t);
	if (!st || st->ts || st->gen)
		return 0; /* none, or made by a sys_enter between the two lookups */
	now = bpf_ktime_get_ns();
	off = task_off_cpu_ns(t);
	st->gen = (__u32)t->start_time;
	st->nr = nr;
	st->ts = off < now ? now - off : now;
	return 0;
}

/* The recording's end, for the stop's iterator (user space sets it before it runs). */
__u64 osrt_stop_ns = 0;
/* A flight-recorder dump's cut, for osrt_open_iter (user space sets it before each run). */
__u64 osrt_cut_ns = 0;

/*
 * Thread T's call in flight at NOW as the record its return would have written then, flagged
 * BS_SYSCALL_OPEN (no return value yet) into R: 0, or 1 when it has none to write. Calls
 * shorter than the threshold stay out, as they would have stayed out of the records.
 */
static __always_inline int open_call(struct task_struct *t, struct sys_start *st, __u64 now,
				     struct bs_syscall *r)
{
	if (!st || !st->ts || now < st->ts || now - st->ts < threshold_ns)
		return 1;
	r->dur = now - st->ts;
	r->ret = 0;
	r->nr = st->nr;
	r->flags = BS_SYSCALL_OPEN | (blocked_mode ? BS_SYSCALL_BLOCKED : 0);
	return 0;
}

/*
 * When the recording stops, its sys_enter and sys_exit detached: each call still in flight at
 * its end, as its record, into the ring; the call is forgotten.
 */
SEC("iter/task")
int osrt_stop_iter_btf(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct bs_syscall *r, c = {};
	struct sys_start *st;

	if (!t)
		return 0;
	st = bpf_task_storage_get(&sys_start_task, t, NULL, 0);
	if (open_call(t, st, osrt_stop_ns, &c))
		return 0;
	r = bs_reserve_final(BS_REC_SYSCALL, sizeof(*r), t->tgid, t->pid, st->ts);
	if (!r)
		return 0;
	r->dur = c.dur;
	r->ret = c.ret;
	r->nr = c.nr;
	r->flags = c.flags;
	st->ts = 0;
	bs_submit(r);
	return 0;
}

/*
 * A dump's cut (the recording goes on): each call in flight then, as its record so far, to
 * the iterator's reader, not to the ring; the call is written again at its return.
 */
SEC("iter/task")
int osrt_open_iter_btf(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct bs_syscall r = {};
	struct sys_start *st;

	if (!t || !bs_is_target(t->tgid))
		return 0;
	st = bpf_task_storage_get(&sys_start_task, t, NULL, 0);
	if (open_call(t, st, osrt_cut_ns, &r))
		return 0;
	r.h.type = BS_REC_SYSCALL;
	r.h.size = sizeof(r);
	r.h.pid = t->tgid;
	r.h.tid = t->pid;
	r.h.ts = st->ts;
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

/* raw_tp + hash: the same semantics without BTF. */
static __always_inline int hash_enter(long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct sys_start st;

	if (probes_own(id) || !bs_is_target(pid_tgid >> 32))
		return 0;
	st.ts = bpf_ktime_get_ns();
	st.nr = id;
	st.gen = (__u32)BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), start_time);
	st.has_agg = st._pad = 0;
	if (bpf_map_update_elem(&sys_start, &tid, &st, BPF_ANY))
		bs_count_loss(BS_LOSS_TASK_MAP);
	return 0;
}

static __always_inline int hash_exit(long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct sys_start *st;
	__u32 nr, gen;
	__u64 start;

	st = bpf_map_lookup_elem(&sys_start, &tid);
	if (!st)
		return 0;
	start = st->ts;
	nr = st->nr;
	gen = st->gen;
	bpf_map_delete_elem(&sys_start, &tid);
	emit(pid_tgid, start, nr, gen, ret, 0);
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(osrt_enter_raw, struct pt_regs *regs, long id)
{
	return hash_enter(id);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(osrt_exit_raw, struct pt_regs *regs, long ret)
{
	return hash_exit(ret);
}

/*
 * A thread that dies inside a call (exit_group, a fatal signal) never returns from it: its
 * hash entry would stay forever (task storage is freed with the task). Without a slot that
 * remembers whether the thread has aggregates, every exiting thread is marked (the target
 * check cannot be used: proc.bpf.c already removed a dead process from the targets).
 */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(osrt_task_exit_raw, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);

	bpf_map_delete_elem(&sys_start, &tid);
	mark_dead(p, (__u32)BPF_CORE_READ(p, start_time));
	return 0;
}
