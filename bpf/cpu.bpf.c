// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu: timer samples of traced threads. A software cpu-clock perf event per CPU runs this
 * program SAMPLE_RATE times a second on whatever runs there; a sample of a traced thread
 * carries its user-space stack, unwound by the kernel through frame pointers
 * (bpf_get_stack, BPF_F_USER_STACK), and, in a Python process whose interpreter user space
 * has described (py_procs), the Python frames of the thread holding the GIL when that is
 * the sampled thread: each frame's code object, instruction and the code object's name and
 * file pointers (checked by user space when it names the frame). The recorder symbolizes
 * and interns the stacks while the process lives (user/cpu.c, stack_intern.c, py_stack.c):
 * nothing is symbolized in here.
 */
#include "common.bpf.h"

#define SCRATCH_WORDS (BS_STACK_MAX_FRAMES + 4 * BS_PY_MAX_FRAMES)

struct cpu_scratch {
	struct bs_cpu_sample_raw r;
	__u64 w[SCRATCH_WORDS]; /* the addresses, then the Python frames right after them */
};

/* A sample is bigger than the BPF stack allows: built here, copied out whole. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_scratch);
} cpu_scratch SEC(".maps");

/* Python processes: pid -> how to read their frames (user space, user/py_stack.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct bs_py_cfg);
} py_procs SEC(".maps");

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)addr);
	return v;
}

/* The PyThreadState of TID when it holds its interpreter's GIL, else 0. */
static __always_inline __u64 gil_tstate(const struct bs_py_cfg *c, __u32 tid)
{
	__u64 ts, t;
	__s32 locked = 0;
	__u32 ptid = 0;

	bpf_probe_read_user(&locked, sizeof(locked), (const void *)c->locked);
	if (locked != 1)
		return 0;
	ts = read_u64(c->holder);
	if (!ts)
		return 0;
	t = read_u64(ts + c->tid_off);
	if (c->pthread_tid_off) {
		bpf_probe_read_user(&ptid, sizeof(ptid), (const void *)(t + c->pthread_tid_off));
		t = ptid;
	}
	return (__u32)t == tid ? ts : 0;
}

struct py_walk {
	const struct bs_py_cfg *c;
	struct cpu_scratch *s;
	__u64 fr;
	__u32 n; /* words of addresses before the frames */
	__u32 k; /* frames written */
};

/* One _PyInterpreterFrame (bpf_loop's body: the verifier checks it once). */
static long py_frame(__u32 i, void *arg)
{
	struct py_walk *p = arg;
	const struct bs_py_cfg *c = p->c;
	__u64 fr = p->fr, code, *w = p->s->w;
	__u64 at = (__u64)p->n + 4 * (__u64)p->k;
	__u8 owner = 0, entry = 0;

	if (!fr || p->k >= BS_PY_MAX_FRAMES)
		return 1;
	bpf_probe_read_user(&owner, 1, (const void *)(fr + c->fr_owner));
	p->fr = read_u64(fr + c->fr_prev);
	if (c->owner_cstack != BS_PY_NONE && owner == c->owner_cstack) {
		/* The eval loop's entry frame: the frame before it was the first it ran. */
		if (p->k && at >= 1 && at <= SCRATCH_WORDS)
			w[at - 1] |= BS_PY_FRAME_ENTRY;
		return 0;
	}
	if (at >= SCRATCH_WORDS - 3)
		return 1;
	code = read_u64(fr + c->fr_code);
	w[at] = code;
	w[at + 1] = read_u64(fr + c->fr_instr);
	w[at + 2] = 0;
	w[at + 3] = 0;
	if (code) {
		__u64 name = read_u64(code + c->co_name), file = read_u64(code + c->co_filename);
		__s32 first = 0;

		bpf_probe_read_user(&first, sizeof(first),
				    (const void *)(code + c->co_firstlineno));
		w[at + 2] = BS_PY_NAME_ID(name, name ? read_u64(name + BS_PY_STR_HASH) : 0);
		w[at + 3] = BS_PY_FILE_ID(file, first);
	}
	if (c->fr_entry != BS_PY_NONE) {
		bpf_probe_read_user(&entry, 1, (const void *)(fr + c->fr_entry));
		if (entry)
			w[at + 3] |= BS_PY_FRAME_ENTRY;
	}
	p->k++;
	return 0;
}

/* Python frames of TSTATE into the scratch from word N on; returns how many frames. */
static __always_inline __u32 py_frames(const struct bs_py_cfg *c, __u64 ts, struct cpu_scratch *s,
				       __u32 n)
{
	struct py_walk p = { .c = c, .s = s, .n = n };

	p.fr = read_u64(ts + c->ts_frame);
	if (c->cframe_frame != BS_PY_NONE)
		p.fr = p.fr ? read_u64(p.fr + c->cframe_frame) : 0;
	/* Entry frames are skipped, not counted: room for a few of them. */
	bpf_loop(BS_PY_MAX_FRAMES + 32, py_frame, &p, 0);
	return p.k;
}

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ts;
	__u32 zero = 0, pid = id >> 32, tid = (__u32)id, npy = 0;
	const struct bs_py_cfg *c;
	struct cpu_scratch *s;
	__u64 size;
	long n;

	if (!bs_is_target(pid) || !tid)
		return 0;
	s = bpf_map_lookup_elem(&cpu_scratch, &zero);
	if (!s)
		return 0;
	n = bpf_get_stack(ctx, s->w, BS_STACK_MAX_FRAMES * 8, BPF_F_USER_STACK);
	if (n < 0)
		n = 0;
	n /= 8;
	if (n > BS_STACK_MAX_FRAMES)
		n = BS_STACK_MAX_FRAMES;
	/* Kernel mode: the user stack is where the thread entered the kernel. The context
	 * is read in whole words only (cs shares its word with padding). */
	s->r.flags = (*(volatile __u64 *)((void *)ctx +
					  __builtin_offsetof(struct bpf_perf_event_data, regs.cs)) &
		      3)
			     ? 0
			     : BS_CPU_KERNEL;
	c = bpf_map_lookup_elem(&py_procs, &pid);
	if (c) {
		s->r.flags |= BS_CPU_PYTHON;
		ts = gil_tstate(c, tid);
		if (ts) {
			s->r.flags |= BS_CPU_GIL;
			npy = py_frames(c, ts, s, n);
		}
	}
	if (npy > BS_PY_MAX_FRAMES)
		npy = BS_PY_MAX_FRAMES;
	size = sizeof(s->r) + (n + 4 * npy) * 8;
	if (size > sizeof(*s))
		size = sizeof(*s);
	s->r.h.type = BS_REC_CPU_SAMPLE_RAW;
	s->r.h.size = size;
	s->r.h.cpu = bpf_get_smp_processor_id();
	s->r.h.pid = pid;
	s->r.h.tid = tid;
	s->r.h.ts = bpf_ktime_get_ns();
	s->r.nips = n;
	s->r.npy = npy;
	s->r._pad = 0;
	if (bpf_ringbuf_output(&events, s, size, bs_wakeup_flags()))
		bs_count_loss(BS_LOSS_RINGBUF_FULL);
	return 0;
}
