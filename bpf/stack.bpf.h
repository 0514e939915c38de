/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks read in BPF, for any program that wants the current thread's (cpu samples, events
 * with --stacks), sent as records (STACK_RAW, or in the caller's own record):
 * - its user stack, unwound by frame pointers (stack_native.bpf.h);
 * - in a Python process, its Python frames (stack_python.bpf.h);
 * - both built in a per-CPU scratch buffer, addresses first, the Python frames right after
 *   them (stack_scratch.bpf.h).
 * Nothing is symbolized here.
 *
 * bpf_loop needs Linux 5.17: a program that includes this header keeps its stack code behind
 * a test of a const volatile (rodata) threshold against ~0 (off), which the verifier knows
 * and prunes, so with stacks off it loads where bpf_loop does not exist.
 *
 * - Native frames: a frame-pointer walk from the user registers (bpf_task_pt_regs), a
 *   bpf_loop over frames copied a page of the stack at a time, following a frame pointer
 *   only upward, within 16 MiB of the stack pointer. A pending uretprobe's trampoline is
 *   replaced by the return address the kernel keeps in utask->return_instances.
 * - The thread state, in a process described in the shared py_procs map: the GIL's last
 *   holder when the thread holds the GIL; else the one the CPU's last walk found for the
 *   thread (same tid, start time and process image), unless it has no frame; else the one
 *   with the thread's native id in the interpreter's list. From 3.12 the kept one is read
 *   first, and its own word says whether its thread holds the GIL (bs_py_cfg.ts_gil).
 * - Python frames: the _PyInterpreterFrame chain, a bpf_loop body; per frame its code
 *   object, its instruction and an identity of the code object. 3.11+ frames come from one
 *   8 KiB copy of the data stack ending at a frame; frame objects (<= 3.10) from one copy each.
 * - A code object's identity: the previous frame's when it runs the same code; else the one
 *   the CPU's last walk found at the same depth, while the process's bs_py_cfg.code_frees has
 *   not moved; else from the shared LRU map py_codes (pid, registration, code address); else
 *   one copy of the code object from its first line to its name and one of the name's hash,
 *   kept in py_codes when the thread's own frame holds the object. bpf/pycode.bpf.c, a
 *   uprobe on the interpreter's code_dealloc, removes a freed object's entry
 *   (user/python/py_code_free.c attaches it once per interpreter file).
 * - The verifier: the walks' state lives in the scratch buffer, not on the BPF stack. It
 *   tracks no values in map memory, so it checks a frame callback once, not once per frame
 *   count and branch (Linux 6.7+ checks a bpf_loop callback as if called any number of times).
 *
 * Who sends a stack: the cpu family, in its sample record; any family, as a ring-only
 * STACK_RAW tagged with the event it belongs to (stack_emit), just before the event's own
 * record (the sched family holds a long blocked interval's record until the thread returns
 * from the system call it blocked in, where its stack can be read: docs/STACKS.md); the gil
 * family also reads up to 8 of the holder's Python frames at each round of a wait
 * (stack_read_python).
 */
#ifndef BPFSIGHT_STACK_BPF_H
#define BPFSIGHT_STACK_BPF_H

#include "stack_native.bpf.h"
#include "stack_python.bpf.h"
#include "cpu_records.h"

#define STACK_WAKE_NS 5000000 /* a stack wakes the recorder at most every 5 ms per CPU */

/*
 * The flags of a stack's output: its Python frames are named from the process's memory,
 * which a short process may not keep for long, so a stack wakes the recorder, but not at
 * every event (a wakeup costs the traced thread far more than its stack: bench/RESULTS.md):
 * at most every STACK_WAKE_NS on a CPU, else as any record. A stack whose every Python frame
 * runs a code object the caches knew (py_codes, the last walk's) waits for the recorder's
 * next drain (20 ms at most) as any record: the stack that first met each object was sent
 * before it, and the recorder keeps a code object's name once read, so nothing is left to
 * read from the process; unless that first stack went without its wakeup (within
 * STACK_WAKE_NS of the last): the next stack of this CPU past it wakes the recorder for it,
 * as before. A training loop's stacks are all such after its first steps, and their
 * wakeups cost it about 3% of a step (bench/RESULTS.md, "Issue 51's goal").
 */
static __always_inline __u64 stack_wakeup(struct stack_scratch *s)
{
	__u64 now = bpf_ktime_get_ns();

	if (s->npy && !s->walk.fresh && !s->owed)
		return bs_wakeup_flags();
	if (now - s->woken < STACK_WAKE_NS) {
		s->owed = 1;
		return bs_wakeup_flags();
	}
	s->woken = now;
	s->owed = 0;
	return BPF_RB_FORCE_WAKEUP;
}

/* S's first SIZE bytes sent as a record of REC_TYPE of thread TID of PID at TS. */
static __always_inline void stack_send(struct stack_scratch *s, __u64 size, __u16 rec_type,
				       __u32 pid, __u32 tid, __u64 ts, __u64 flags)
{
	s->h.type = rec_type;
	s->h.size = size;
	s->h.cpu = bpf_get_smp_processor_id();
	s->h.pid = pid;
	s->h.tid = tid;
	s->h.ts = ts;
	if (bs_stopped())
		return;
	if (bpf_ringbuf_output(&events, s, size, flags))
		bs_count_loss(BS_LOSS_RINGBUF_FULL);
}

/*
 * The current thread's stack into S: its user addresses, then its Python frames when PID is
 * a Python process, from its thread state (the one this CPU's last walk found for the
 * thread, the GIL's holder or one of the interpreter's list, tried in the order that costs
 * the fewest copies). Sets s->nips, s->npy and BS_CPU_PYTHON/GIL/LEAF in s->flags (other
 * flags are the caller's); returns the record's size in bytes. TOP, KEEP: as stack_unwind's.
 * One function: with its Python part apart, clang's code verifies in more instructions.
 */
static __always_inline __u32 stack_read(struct stack_scratch *s, __u32 pid, __u32 tid, int top,
					__u32 keep)
{
	struct stack_py_walk *p = &s->walk;
	struct stack_py_arg a = { .s = s };
	const struct bs_py_cfg *c;
	__u64 ts, fr = 0, size, npy = 0;
	long n;

	n = stack_unwind(s, pid, top, keep);
	s->nips = n;
	s->npy = 0;
	c = bpf_map_lookup_elem(&py_procs, &pid);
	if (c) {
		/* The thread's start: a tid is reused only by another thread. */
		__u64 start = bpf_get_current_task_btf()->start_time;

		s->flags |= BS_CPU_PYTHON;
		if (c->ts_gil == BS_PY_NONE) {
			/* <= 3.11: only the GIL's state says whether the thread holds it. */
			ts = stack_gil_tstate(c, s, tid);
			if (ts) {
				s->flags |= BS_CPU_GIL;
				fr = stack_first_frame(c, s);
			} else {
				ts = stack_cached_tstate(c, s, pid, tid, start, &fr);
			}
		} else {
			/* 3.12+: the thread state says it too: one copy when it is known. */
			ts = stack_cached_tstate(c, s, pid, tid, start, &fr);
			if (!ts) {
				ts = stack_gil_tstate(c, s, tid);
				fr = ts ? stack_first_frame(c, s) : 0;
			}
		}
		if (!ts) {
			ts = stack_list_tstate(c, s, tid);
			fr = ts ? stack_first_frame(c, s) : 0;
		}
		/* s->tsb holds the thread state found. */
		if (ts && c->ts_gil != BS_PY_NONE && stack_ts_holds_gil(c, s))
			s->flags |= BS_CPU_GIL;
		if (ts) {
			struct stack_cache *ca = &s->cache;

			stack_keep_tstate(c, s, pid, tid, start, ts);
			__builtin_memset(p, 0, sizeof(*p));
			a.c = c;
			p->n = n;
			p->pid = pid;
			p->own = 1;
			if (ca->tid == tid)
				p->floor = ca->floor;
			if (c->code_cache) {
				/* Read before the frames: a code object freed after it changes it. */
				__u64 frees = *(volatile const __u64 *)&c->code_frees;

				if (ca->pid != pid || ca->gen != c->code_gen ||
				    ca->frees != frees) {
					ca->pid = pid;
					ca->gen = c->code_gen;
					ca->frees = frees;
					ca->n = 0;
				}
				p->ids = 1;
			}
			p->fr = fr;
			/* Entry frames are skipped, not counted: room for a few of them. */
			bpf_loop(BS_PY_MAX_FRAMES + 32, stack_py_frame, &a, 0);
			npy = p->k > BS_PY_MAX_FRAMES ? BS_PY_MAX_FRAMES : p->k;
			s->npy = npy;
			ca->tid = tid;
			ca->floor = p->low;
		}
	}
	/* From the locals, whose bounds the verifier knows (n <= 136, npy <= 64). */
	size = sizeof(s->h) + 16 + ((__u64)n + 4 * npy) * 8;
	return size > sizeof(*s) ? sizeof(*s) : size;
}

/*
 * S's first NPY Python frames (read by stack_read_python, or copied back there) as the
 * STACK_RAW of the event of TYPE of thread TID of PID at TS: no native frames (they would
 * be another thread's registers).
 */
static __always_inline void stack_emit_python(struct stack_scratch *s, __u32 npy, __u16 type,
					      __u32 pid, __u32 tid, __u64 ts)
{
	__u64 size;

	if (!npy)
		return;
	if (npy > BS_PY_MAX_FRAMES)
		npy = BS_PY_MAX_FRAMES;
	size = sizeof(s->h) + 16 + 4 * (__u64)npy * 8;
	if (size > sizeof(*s))
		size = sizeof(*s);
	s->nips = 0;
	s->npy = npy;
	s->flags = BS_CPU_PYTHON;
	s->type = type;
	stack_send(s, size, BS_REC_STACK_RAW, pid, tid, ts, stack_wakeup(s));
}

/*
 * Emit the current thread's stack for the event of TYPE it is about to write at TS. TOP: the
 * words on top of the user stack too (see stack_unwind): where a system call was made from
 * a function without a frame of its own (glibc's wrappers). FLAGS: the record's own
 * (BS_STACK_OWN). KEEP: the native frames wanted (stack_unwind).
 */
static __always_inline void stack_emit_keep(__u16 type, __u32 pid, __u32 tid, __u64 ts, int top,
					    __u32 flags, __u32 keep)
{
	struct stack_scratch *s = stack_scratch_take();
	__u32 size;

	if (!s)
		return;
	s->flags = flags;
	size = stack_read(s, pid, tid, top, keep);
	s->type = type;
	stack_send(s, size, BS_REC_STACK_RAW, pid, tid, ts, stack_wakeup(s));
	stack_scratch_put(s);
}

static __always_inline void stack_emit_flags(__u16 type, __u32 pid, __u32 tid, __u64 ts, int top,
					     __u32 flags)
{
	stack_emit_keep(type, pid, tid, ts, top, flags, BS_STACK_MAX_FRAMES);
}

static __always_inline void stack_emit(__u16 type, __u32 pid, __u32 tid, __u64 ts, int top)
{
	stack_emit_flags(type, pid, tid, ts, top, 0);
}

/* Whether the timer sample CTX interrupted kernel code (cs's ring: 0). */
static __always_inline int sample_in_kernel(struct bpf_perf_event_data *ctx)
{
	/* The context is read in whole words only (cs shares its word with padding). */
	return !(*(volatile __u64 *)((void *)ctx +
				     __builtin_offsetof(struct bpf_perf_event_data, regs.cs)) &
		 3);
}

/*
 * A timer sample of the current thread TID of PID (a perf-event program's CTX): its stack,
 * BS_CPU_KERNEL when it interrupted kernel code, and the caller's KFLAGS (what it knows of that
 * kernel code: BS_CPU_FAULT), sent as a REC_TYPE record with FLAGS (the
 * ring's wakeup). The words on top of its user stack go first: where the innermost function
 * has no frame of its own (its first instructions, its `ret`, a fast path without one), the
 * frame-pointer walk skips its caller, whose return address is one of them; the recorder
 * decides from the code (native_frames__return_slot). In kernel mode, the user stack is
 * where the thread entered the kernel: stack_unwind reads the registers saved there.
 */
static __always_inline void stack_sample(struct bpf_perf_event_data *ctx, __u32 pid, __u32 tid,
					 __u16 rec_type, __u64 flags, __u32 kflags)
{
	struct stack_scratch *s = stack_scratch_take();
	__u32 size;

	if (!s)
		return;
	s->flags = sample_in_kernel(ctx) ? BS_CPU_KERNEL | kflags : 0;
	size = stack_read(s, pid, tid, 1, BS_STACK_MAX_FRAMES);
	s->type = 0;
	stack_send(s, size, rec_type, pid, tid, bpf_ktime_get_ns(), flags);
	stack_scratch_put(s);
}

#endif /* BPFSIGHT_STACK_BPF_H */
