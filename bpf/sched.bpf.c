// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sched: one record per off-CPU interval of a traced thread, carrying the state it left in
 * (blocked vs preempted), when it became runnable again and who woke it, and the length of
 * the run slice that preceded it. One record per context switch, never two.
 *
 * A thread's state lives in BPF task storage (the _btf programs), found from the
 * task_struct the tracepoint hands over, and the slot's existence says the thread is traced:
 * the target check (a hash lookup) runs when a thread without one is switched out, not on
 * every switch and wakeup. With a hash keyed by tid, a switch of two traced threads cost
 * four hash lookups (the target check and the state, of each) and probe reads of pid and
 * tgid, several times what task storage costs (bench/RESULTS.md, "Figures the code's
 * comments cite"). Kernels without BTF (the _raw programs) cannot use task storage, so they
 * keep the hash, cleaned up when a thread exits.
 *
 * --stacks=sched (below, "held" intervals): a long blocked interval's record waits in the
 * thread's slot for the stack read when the thread returns from the system call it blocked in
 * (at its sys_exit), or, where the kernel has bpf_task_work (6.18), when it returns to user
 * space (a task work its switch-in schedules: no program at every system call's exit).
 *
 * sched_switch hands over prev_state only since Linux 5.18 (commit fa2c3254d7cf,
 * "sched/tracing: Don't re-read p->state when emitting sched_switch event"); a program that
 * reads a 4th argument is refused before that. The *_taskstate_* programs read the state
 * from the task instead, through CO-RE, as the tracepoint itself did before 5.18; user
 * space loads one kind (user/families/sched/sched.c, kernel_features.h).
 */
#include "stack.bpf.h"
#include "sched_records.h"
#include "task_now.bpf.h"
#include "task_regs.bpf.h"

#define TASK_RUNNING_STATE 0
#define TASK_STOPPED_BITS  0xc /* __TASK_STOPPED | __TASK_TRACED: a stop after the syscall */

/* --stacks=sched: blocked intervals of at least this carry the thread's stack; ~0 = none. */
const volatile __u64 sched_stack_ns = ~0ull;

struct thread_sched {
	__u64 in_ts;   /* last switch-in (0 = not seen since tracing began) */
	__u64 out_ts;  /* last switch-out (0 = on CPU) */
	__u64 wake_ts; /* became runnable (preemption: = out_ts) */
	__u32 state;
	__u32 waker_tid;
	__u32 nheld; /* --stacks=sched: intervals held (task storage only: thread_sched_btf) */
	__u32 _pad;
	__u64 switches; /* the kernel's count (nvcsw + nivcsw) at the last switch-out seen */
};

/*
 * --stacks=sched. A stack at every switch-out would cost every switch; an interval's length
 * is known only at its switch-in, where the thread is not current and its user stack cannot
 * be read. So a long blocked interval's record is held, with the user registers of the
 * kernel entry it blocked in (the system call's: ip, sp, number), until the thread returns
 * from that entry: at its sys_exit the thread is current and its user stack is exactly
 * where it blocked; the stack is sent, then the held records, in their order. An entry that
 * is not a system call (a page fault) has no sys_exit: the next switch-out from another
 * entry, or the thread's exit, writes the held records without a stack. Held records keep
 * the thread's records in time order, so a short interval behind a held one is held too.
 */
#define HELD_MAX 4 /* a power of 2 */

struct held_interval {
	__u64 out_ts, dur, runnable_ns, oncpu_ns;
	__u32 state, waker_tid;
	__u32 cpu;   /* where it ended (its record's hdr.cpu) */
	__u32 stack; /* 1: long enough for a stack */
};

struct offcpu_held {
	__u64 ip, sp, nr; /* the user registers of the kernel entry the intervals were in */
	struct held_interval iv[HELD_MAX];
};

/*
 * The task storage value: the held intervals live in the thread's one slot, made at its first
 * switch-out, and cost no second lookup. A second slot, made when a first interval is held,
 * failed now and then in tests on a loaded machine (task storage may refuse to allocate in
 * sched_switch while that CPU is busy with another task's storage), and that interval lost
 * its stack.
 */
struct thread_sched_btf {
	struct thread_sched s;
	struct offcpu_held held;
};

static __always_inline struct offcpu_held *held_of(struct thread_sched *ts)
{
	return &((struct thread_sched_btf *)ts)->held;
}

/*
 * Whether the thread running on each CPU holds intervals, so that sys_exit, which every
 * system call on the machine runs with --stacks=sched, returns after one read of global
 * memory instead of a task storage lookup (~100 ns here). sched_switch sets it for the thread
 * it switches in, writing only a change; a cache line per CPU, so CPUs do not share lines.
 */
#define HELD_CPUS   1024
#define HELD_STRIDE 8 /* u64s: a 64-byte line per CPU */

__u64 held_on_cpu[HELD_CPUS * HELD_STRIDE];

static __always_inline __u64 *held_here(void)
{
	return &held_on_cpu[(bpf_get_smp_processor_id() & (HELD_CPUS - 1)) * HELD_STRIDE];
}

static __always_inline void held_mark(__u64 held)
{
	__u64 *c = held_here();

	if (*c != held)
		*c = held;
}

/*
 * --stacks=sched with bpf_task_work (the sched_switch_tw_btf program): a long block's
 * switch-in schedules a task work that runs when the thread returns to user space, where it
 * is current and its user registers are where it blocked (the system call's return, or a
 * page fault's: those get their stack too). Only the threads that blocked long pay, never
 * every system call of the machine as the sys_exit program does (~0.27x a syscall-heavy
 * loop's step, bench/RESULTS.md, "Off-CPU stacks"). A task work lives in a hash or array
 * value (task storage cannot hold one): one per thread, deleted when it exits, which
 * cancels a work still pending.
 */
/*
 * The kfunc bpf_task_work_schedule_resume_impl, called as a helper of a made-up id that user
 * space rewrites into the kfunc's call when it loads this program (kfeature__call_kfunc,
 * user/record/kernel_features.h, says why not an extern): sched would not load at all before
 * 6.18.
 */
static long (*task_work_schedule_resume)(struct task_struct *task, struct bpf_task_work *tw,
					 void *map, bpf_task_work_callback_t callback,
					 void *aux) = (void *)BS_SCHED_TASK_WORK_CALL;

struct held_work {
	struct bpf_task_work tw;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct held_work);
} held_work SEC(".maps");

/* sched_switch_tw_btf is the switch program loaded (user space sets it with the program). */
const volatile bool held_by_task_work = false;

/* task -> its state (tp_btf programs). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_sched_btf);
} thread_sched_task SEC(".maps");

/* tid -> its state (raw_tp programs, for kernels without BTF). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct thread_sched);
} thread_sched SEC(".maps");

/*
 * Loss is never silent, even where the kernel does not call us: under load a switch now and
 * then reaches no sched program (docs/USAGE.md, sched). The kernel counts every switch of a
 * thread (nvcsw + nivcsw, already counting this one), so a jump of more than one since the
 * last switch-out seen is switch-outs missed; a switch-out while the last one's switch-in is
 * still pending (out_ts set) is a switch-in missed. Both are counted as sched_missed.
 */
static __always_inline void count_missed(struct thread_sched *ts, __u64 switches)
{
	if (ts->out_ts)
		bs_count_loss(BS_LOSS_SCHED);
	if (ts->switches && switches > ts->switches + 1)
		bs_count_losses(BS_LOSS_SCHED, switches - ts->switches - 1);
	ts->switches = switches;
}

static __always_inline void switch_out(struct thread_sched *ts, __u32 state, __u64 now)
{
	ts->out_ts = now;
	ts->state = state;
	ts->wake_ts = state == TASK_RUNNING_STATE ? now : 0;
	ts->waker_tid = 0;
}

/* An interval's record, written now (FINAL: by the stop's iterator, past the gate). */
static __always_inline void offcpu_write(const struct held_interval *iv, __u32 pid, __u32 tid,
					 int final)
{
	struct bs_offcpu *r =
		final ? bs_reserve_final(BS_REC_OFFCPU, sizeof(*r), pid, tid, iv->out_ts)
		      : bs_reserve(BS_REC_OFFCPU, sizeof(*r), pid, tid, iv->out_ts);

	if (!r)
		return;
	r->h.cpu = iv->cpu;
	r->dur = iv->dur;
	r->runnable_ns = iv->runnable_ns;
	r->oncpu_ns = iv->oncpu_ns;
	r->state = iv->state;
	r->waker_tid = iv->waker_tid;
	bs_submit(r);
}

/*
 * What a thread's schedstat adds as it gets its CPU now beyond IV's wait from its wakeup
 * (bs_clock_skew): its runqueue's CLOCK, updated as this schedule began, less its queue stamp
 * QUEUED is what sched_info_arrive adds to run_delay. A wakeup not seen says nothing. Read by
 * the callers: loads of the tp_btf program's trusted task cost ~1 ns, probe reads ~100.
 */
#define CLOCK_SKEW_MIN_NS 1000000ull
/* SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE: the fair class, whose entity names its runqueue */
#define FAIR_POLICY(p) ((p) == 0 || (p) == 3 || (p) == 5)
/* The fields the check reads: a kernel without group scheduling has no se.cfs_rq (no check). */
#define CLOCK_SKEW_FIELDS(t)                                                                       \
	(bpf_core_field_exists((t)->sched_info.last_queued) &&                                     \
	 bpf_core_field_exists((t)->se.cfs_rq) && bpf_core_field_exists(struct cfs_rq, rq))

static __always_inline void clock_skew(const struct held_interval *iv, __u64 queued, __u64 clock,
				       __u32 pid, __u32 tid)
{
	struct bs_clock_skew *r;
	__u64 kernel;

	if (!iv->runnable_ns || !queued || clock <= queued)
		return;
	kernel = clock - queued;
	if (kernel < iv->runnable_ns + CLOCK_SKEW_MIN_NS)
		return;
	r = bs_reserve(BS_REC_CLOCK_SKEW, sizeof(*r), pid, tid, iv->out_ts + iv->dur);
	if (!r)
		return;
	r->h.cpu = iv->cpu;
	r->extra_ns = kernel - iv->runnable_ns;
	r->kernel_ns = kernel;
	bs_submit(r);
}

/* The interval that ends now, into IV; 0 when the thread was not seen going off the CPU. */
static __always_inline int switch_in(struct thread_sched *ts, __u64 now, struct held_interval *iv)
{
	__u64 out_ts, in_ts;

	out_ts = ts->out_ts;
	in_ts = ts->in_ts;
	ts->in_ts = now;
	ts->out_ts = 0;
	if (!out_ts)
		return 0;
	iv->out_ts = out_ts;
	iv->dur = now - out_ts;
	/* A blocked thread whose wakeup we missed is counted as blocked throughout. */
	iv->runnable_ns = ts->wake_ts ? now - ts->wake_ts : 0;
	iv->oncpu_ns = in_ts ? out_ts - in_ts : 0;
	iv->state = ts->state;
	iv->waker_tid = ts->waker_tid;
	iv->cpu = bpf_get_smp_processor_id();
	iv->stack = 0;
	return 1;
}

#define HELD_FINAL 2 /* held_flush's WITH_STACK from the stop's iterator: no stack, ungated */

/*
 * The held intervals of a thread of PID, in order, each after the current thread's stack
 * when WITH_STACK is 1 (sys_exit of the entry they blocked in: the thread is current) and it
 * was long enough; then none is held.
 */
static __always_inline void held_flush(struct thread_sched *ts, struct offcpu_held *h, __u32 pid,
				       __u32 tid, int with_stack)
{
	struct stack_scratch *s = NULL;
	__u32 n = ts->nheld, size = 0, want = 0;
	__u64 flags = 0;

	ts->nheld = 0;
	if (with_stack == 1)
		for (__u32 i = 0; i < HELD_MAX && i < n; i++)
			want |= h->iv[i].stack;
	/*
	 * One stack for every interval that wants one, read before the loop: read inside it,
	 * the verifier checked the walk once for each interval (~35 ms each).
	 */
	if (want && (s = stack_scratch_take())) {
		s->flags = 0;
		size = stack_read(s, pid, tid, 1, BS_STACK_MAX_FRAMES);
		s->type = BS_REC_OFFCPU;
		flags = stack_wakeup(s);
	}
	for (__u32 i = 0; i < HELD_MAX && i < n; i++) {
		if (s && h->iv[i].stack)
			stack_send(s, size, BS_REC_STACK_RAW, pid, tid, h->iv[i].out_ts, flags);
		offcpu_write(&h->iv[i], pid, tid, with_stack == HELD_FINAL);
	}
	if (s)
		stack_scratch_put(s);
}

/*
 * The interval IV of NEXT ended (switch-in): written now, or held for its stack when it is a
 * long block, or when others are held before it.
 */
static __always_inline void held_schedule(struct task_struct *t);

static __always_inline void offcpu_end(struct thread_sched *ts, struct task_struct *next,
				       struct held_interval *iv, bool tw)
{
	__u32 pid = next->tgid, tid = next->pid, i;
	struct offcpu_held *h;
	struct pt_regs *regs;

	iv->stack = sched_stack_ns != ~0ull && iv->dur >= sched_stack_ns && iv->state &&
		    !(iv->state & TASK_STOPPED_BITS);
	if (!iv->stack && !ts->nheld) {
		offcpu_write(iv, pid, tid, 0);
		return;
	}
	h = held_of(ts);
	if (ts->nheld >= HELD_MAX)
		held_flush(ts, h, pid, tid, 0);
	i = ts->nheld;
	if (!i) {
		regs = (struct pt_regs *)bpf_task_pt_regs(next);
		h->ip = PT_REGS_IP(regs);
		h->sp = PT_REGS_SP(regs);
		h->nr = BS_REGS_SYSCALL(regs);
	}
	/* i < HELD_MAX (flushed above); the mask is for the verifier, which cannot know it. */
	h->iv[i & (HELD_MAX - 1)] = *iv;
	ts->nheld = i + 1;
	if (tw && iv->stack)
		held_schedule(next);
}

/* REGS, a thread's user registers, are still those of the entry its held intervals blocked in. */
static __always_inline int held_in_entry(struct offcpu_held *h, struct pt_regs *regs)
{
	return h->ip == PT_REGS_IP(regs) && h->sp == PT_REGS_SP(regs) &&
	       h->nr == BS_REGS_SYSCALL(regs);
}

/* Held intervals of PREV, going off the CPU again: still in the entry they blocked in? */
static __always_inline void held_check(struct thread_sched *ts, struct task_struct *prev)
{
	struct offcpu_held *h = held_of(ts);
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

	if (held_in_entry(h, regs))
		return;
	/* It returned to user space from an entry without a sys_exit (a page fault). */
	held_flush(ts, h, prev->tgid, prev->pid, 0);
}

static __always_inline void wakeup(struct thread_sched *ts)
{
	/* Only a sleeping thread's first wakeup counts; preempted threads were runnable. */
	if (!ts->out_ts || ts->wake_ts)
		return;
	ts->wake_ts = bpf_ktime_get_ns();
	/*
	 * sched_waking runs in the waker's context, before a wakeup of a thread whose CPU is idle
	 * is queued to that CPU (sched_wakeup then runs there, in its idle task: no waker).
	 */
	ts->waker_tid = (__u32)bpf_get_current_pid_tgid();
}

/* tp_btf + task storage: prev, next and p are the kernel's own task pointers. */
static __always_inline struct thread_sched *task_state(struct task_struct *t, bool create)
{
	struct thread_sched *ts = bpf_task_storage_get(&thread_sched_task, t, 0, 0);

	if (ts && bs_is_own_helper(t->tgid))
		return NULL;
	/* pid 0 is the idle task of each CPU, not a thread anyone traces. */
	if (ts || !create || !t->pid || !bs_is_target(t->tgid))
		return ts;
	ts = bpf_task_storage_get(&thread_sched_task, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts)
		bs_count_loss(BS_LOSS_TASK_MAP);
	return ts;
}

static __always_inline void on_switch_btf(bool preempt, struct task_struct *prev,
					  struct task_struct *next, __u32 prev_state, bool tw)
{
	__u64 now = bpf_ktime_get_ns();
	struct held_interval iv;
	struct thread_sched *ts;

	if (bs_ended())
		return; /* frozen at the stop: see sched_stop_iter_btf */
	ts = task_state(prev, true);
	if (ts) {
		count_missed(ts, prev->nvcsw + prev->nivcsw);
		if (sched_stack_ns != ~0ull && ts->nheld)
			held_check(ts, prev);
		switch_out(ts, preempt ? TASK_RUNNING_STATE : prev_state, now);
	}
	/* First sight of a traced thread at switch-in: its off-CPU interval began before
	 * tracing; its slot is made when it is switched out. */
	ts = task_state(next, false);
	if (ts && switch_in(ts, now, &iv)) {
		/* the fair class's threads: another's entity is not on this CPU's runqueue */
		if (iv.runnable_ns && CLOCK_SKEW_FIELDS(next) && FAIR_POLICY(next->policy)) {
			struct cfs_rq *q = next->se.cfs_rq;
			struct rq *rq = q ? q->rq : NULL;

			clock_skew(&iv, next->sched_info.last_queued, rq ? rq->clock : 0,
				   next->tgid, next->pid);
		}
		offcpu_end(ts, next, &iv, tw);
	}
	if (sched_stack_ns != ~0ull && !tw)
		held_mark(ts && ts->nheld);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch_btf(preempt, prev, next, prev_state, false);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_taskstate_btf, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	on_switch_btf(preempt, prev, next, task_state_now(prev), false);
	return 0;
}

/*
 * The task work (held_by_task_work): the thread returns to user space; its held intervals,
 * each with the stack it blocked at when its registers are still those it blocked with. After
 * the stop, the stop's iterator writes them.
 */
static int held_resume(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct thread_sched *ts;
	struct offcpu_held *h;

	if (bs_stopped())
		return 0;
	ts = bpf_task_storage_get(&thread_sched_task, t, 0, 0);
	if (!ts || !ts->nheld)
		return 0;
	h = held_of(ts);
	held_flush(ts, h, t->tgid, t->pid, held_in_entry(h, (struct pt_regs *)bpf_task_pt_regs(t)));
	return 0;
}

static __always_inline void held_schedule(struct task_struct *t)
{
	struct held_work *w, none = {};
	__u32 tid = t->pid;

	w = bpf_map_lookup_elem(&held_work, &tid);
	if (!w) {
		bpf_map_update_elem(&held_work, &tid, &none, BPF_NOEXIST);
		w = bpf_map_lookup_elem(&held_work, &tid);
	}
	/* Without one, the intervals wait for the thread's next switch-out, written there
	 * without a stack, as a page fault's are on the sys_exit path. */
	if (!w) {
		bs_count_loss(BS_LOSS_TASK_MAP);
		return;
	}
	/* -EBUSY: one is pending already, and it writes every held interval. */
	task_work_schedule_resume(t, &w->tw, &held_work, held_resume, NULL);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_tw_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch_btf(preempt, prev, next, prev_state, true);
	return 0;
}

/* --stacks=sched: the thread returns from a system call; held intervals blocked in it? */
SEC("tp_btf/sys_exit")
int BPF_PROG(sched_sys_exit_btf, struct pt_regs *regs, long ret)
{
	struct task_struct *t;
	struct thread_sched *ts;
	struct offcpu_held *h;

	if (!*held_here() || bs_ended()) /* after the stop, its iterator writes them */
		return 0;
	held_mark(0);
	t = bpf_get_current_task_btf();
	ts = bpf_task_storage_get(&thread_sched_task, t, 0, 0);
	if (!ts || !ts->nheld)
		return 0;
	h = held_of(ts);
	held_flush(ts, h, t->tgid, t->pid, held_in_entry(h, regs));
	return 0;
}

/*
 * A thread exits, running this itself before its last switch: the intervals it holds
 * (--stacks=sched: blocked outside a system call), then its last run slice, which no switch-in
 * will write, as the record of its last switch-out: no time off its CPU, state BS_SCHED_DEAD.
 * Without it the last slice of every thread that exits was lost: all the CPU of a thread that
 * lives a slice (a ThreadingHTTPServer's request thread).
 */
static __always_inline void last_slice(struct thread_sched *ts, __u32 pid, __u32 tid)
{
	struct held_interval iv = {};
	__u64 now = bpf_ktime_get_ns();

	if (!ts->in_ts || ts->out_ts || now < ts->in_ts)
		return;
	iv.out_ts = now;
	iv.oncpu_ns = now - ts->in_ts;
	iv.state = BS_SCHED_DEAD;
	iv.cpu = bpf_get_smp_processor_id();
	/* Its exit may still block (and run again) before its last switch: that slice begins
	 * now, as one written by a switch-in would have. */
	ts->in_ts = now;
	offcpu_write(&iv, pid, tid, 0);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_exit_btf, struct task_struct *p)
{
	struct thread_sched *ts = bpf_task_storage_get(&thread_sched_task, p, 0, 0);

	if (!ts)
		return 0;
	/* After the stop its held intervals (all ended before it) are final records. */
	if (ts->nheld)
		held_flush(ts, held_of(ts), p->tgid, p->pid, bs_ended() ? HELD_FINAL : 0);
	if (held_by_task_work) {
		__u32 tid = p->pid;

		bpf_map_delete_elem(&held_work, &tid); /* cancels one still pending */
	}
	last_slice(ts, p->tgid, p->pid);
	return 0;
}

/*
 * A new thread of a traced process gets its slot before it first runs (the tracepoint fires
 * ahead of wake_up_new_task), so its first run slice counts from its first switch-in. Made at
 * its first switch-out, as other slots are, it lost that slice: most of the CPU of a thread
 * that lives a slice or two (a ThreadingHTTPServer's request threads). New processes keep the
 * target check at their first switch-out (they join the targets from proc's fork program,
 * which may run after this one).
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	if (child->tgid != parent->tgid || !bs_is_target(child->tgid) ||
	    bs_is_own_helper(child->tgid))
		return 0;
	if (!bpf_task_storage_get(&thread_sched_task, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE))
		bs_count_loss(BS_LOSS_TASK_MAP);
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking_btf, struct task_struct *p)
{
	struct thread_sched *ts = bs_ended() ? NULL : task_state(p, false);

	if (ts)
		wakeup(ts);
	return 0;
}

/*
 * The recording's start (-p; user/families/sched/sched.c runs it once the switch programs
 * are live): each target thread off its CPU now gets the slot its switch-out would have made,
 * from when it went off (task_off_cpu_ns, as the start's snapshot reads it), so its switch-in
 * writes that whole interval, begun before the start (readers count its part inside); one on
 * its CPU gets its run slice from now. Without it, the first interval of a thread asleep at
 * the attach was never written (a thread blocked in a read for the whole recording had none).
 * A slot the switch programs made meanwhile is theirs.
 */
SEC("iter/task")
int sched_start_iter_btf(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct thread_sched *ts;
	__u64 now, off;

	if (!t || !(ts = task_slot_new(&thread_sched_task, t)) || ts->in_ts || ts->out_ts)
		return 0; /* none, or made by a switch between the two lookups */
	now = bpf_ktime_get_ns();
	ts->switches = t->nvcsw + t->nivcsw;
	if (t->on_cpu) {
		ts->in_ts = now;
		return 0;
	}
	off = task_off_cpu_ns(t);
	switch_out(ts, task_state_now(t), off < now ? now - off : now);
	return 0;
}

/* The stop's iterator writes the intervals still open at this time (the recording's end, user
 * space sets it; 0: none). */
__u64 sched_stop_ns = 0;

/*
 * When the recording stops, once the programs that hold and write intervals are detached (no
 * thread writes its own meanwhile): every thread's held intervals (--stacks=sched), then, with
 * sched_stop_ns, the interval of each thread still off its CPU, from its switch-out to then,
 * which its switch-in would have written. Without them, a thread that blocked outside a system
 * call and then ran without one or a switch until the end kept its held records, and a thread
 * asleep at the end had no record of its last sleep. The switch and wakeup programs do nothing
 * once the recording has ended (BS_CTL_ENDED; through --start-at's gate they keep each slot
 * live, so the start finds it true), so each slot is as the stop found it: before, a thread woken
 * between the stop and the detach lost its last sleep (its switch-in's record refused, its
 * slot emptied), and an interval begun after the stop was held, then written here, past the
 * recording's end (a DataLoader's threads, 1-2% of the window under load).
 */
SEC("iter/task")
int sched_stop_iter_btf(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct thread_sched *ts;
	struct held_interval iv;

	if (!t)
		return 0;
	ts = bpf_task_storage_get(&thread_sched_task, t, 0, 0);
	if (!ts)
		return 0;
	if (ts->nheld)
		held_flush(ts, held_of(ts), t->tgid, t->pid, HELD_FINAL);
	if (!sched_stop_ns || !ts->out_ts || ts->out_ts >= sched_stop_ns ||
	    !switch_in(ts, sched_stop_ns, &iv))
		return 0;
	/* the CPU it last ran on, as its switch-in's record would say: not the iterator's (the
	 * recorder's), which the ledger would count among the job's CPUs */
	iv.cpu = BPF_CORE_READ(t, thread_info.cpu);
	offcpu_write(&iv, t->tgid, t->pid, 1);
	return 0;
}

/* raw_tp + hash: the same semantics without BTF. */
static __always_inline struct thread_sched *hash_state(struct task_struct *t, bool create)
{
	__u32 tid = BPF_CORE_READ(t, pid);
	struct thread_sched *ts, init = {};

	if (!tid || !bs_is_target(BPF_CORE_READ(t, tgid)))
		return NULL;
	ts = bpf_map_lookup_elem(&thread_sched, &tid);
	if (ts || !create)
		return ts;
	if (bpf_map_update_elem(&thread_sched, &tid, &init, BPF_NOEXIST)) {
		bs_count_loss(BS_LOSS_TASK_MAP);
		return NULL;
	}
	return bpf_map_lookup_elem(&thread_sched, &tid);
}

static __always_inline void on_switch_raw(bool preempt, struct task_struct *prev,
					  struct task_struct *next, __u32 prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct held_interval iv;
	struct thread_sched *ts;

	if (bs_ended())
		return; /* frozen at the stop, as on_switch_btf */
	ts = hash_state(prev, true);
	if (ts) {
		count_missed(ts, BPF_CORE_READ(prev, nvcsw) + BPF_CORE_READ(prev, nivcsw));
		switch_out(ts, preempt ? TASK_RUNNING_STATE : prev_state, now);
	}
	/* No stacks here: held intervals need task storage. */
	ts = hash_state(next, false);
	if (ts && switch_in(ts, now, &iv)) {
		__u64 clock, clock_task;

		if (iv.runnable_ns && CLOCK_SKEW_FIELDS(next) &&
		    FAIR_POLICY(BPF_CORE_READ(next, policy)) &&
		    !task_rq_clocks(next, &clock, &clock_task))
			clock_skew(&iv, BPF_CORE_READ(next, sched_info.last_queued), clock,
				   BPF_CORE_READ(next, tgid), BPF_CORE_READ(next, pid));
		offcpu_write(&iv, BPF_CORE_READ(next, tgid), BPF_CORE_READ(next, pid), 0);
	}
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch_raw(preempt, prev, next, prev_state);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_taskstate_raw, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	on_switch_raw(preempt, prev, next, task_state_now(prev));
	return 0;
}

SEC("raw_tp/sched_waking")
int BPF_PROG(sched_waking_raw, struct task_struct *p)
{
	struct thread_sched *ts = bs_ended() ? NULL : hash_state(p, false);

	if (ts)
		wakeup(ts);
	return 0;
}

/* Its last run slice; and a hash entry would outlive its thread (task storage is freed with
 * the task). */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_task_exit_raw, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);
	struct thread_sched *ts = bpf_map_lookup_elem(&thread_sched, &tid);

	if (ts)
		last_slice(ts, BPF_CORE_READ(p, tgid), tid);
	bpf_map_delete_elem(&thread_sched, &tid);
	return 0;
}
