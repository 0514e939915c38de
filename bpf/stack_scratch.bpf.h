/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the stack code of stack.bpf.h shares: the per-CPU scratch buffer a stack is built in
 * (with the native and the Python walks' state), the maps of Python processes and code
 * objects, and the reads of user memory both walks make.
 */
#ifndef BPFSIGHT_STACK_SCRATCH_BPF_H
#define BPFSIGHT_STACK_SCRATCH_BPF_H

#include "common.bpf.h"
#include "unwind_maps.h"

#define STACK_WORDS (BS_STACK_TOP_WORDS + BS_STACK_MAX_FRAMES + 4 * BS_PY_MAX_FRAMES)
#define STACK_HDR   128 /* bytes of a frame (and of a code object) read in one copy */
/*
 * 3.11+ frames lie one after another in the thread's data stack, a caller below its callee:
 * one copy of the STACK_WIN bytes that end at a frame's header holds the frames it called
 * from too, so a walk pays one read per window, not one per frame.
 */
#define STACK_WIN  8192
#define STACK_PAGE 4096
/* Bytes of a thread state read in one copy: its next, its frame and its tid lie there. */
#define STACK_TS 256

/*
 * What a CPU's last walk leaves for its next one (a CPU's walks do not overlap: the scratch
 * buffer holds one stack):
 * - floor: where thread TID's first window began (usually its data stack's first frame).
 *   TID's next first window begins there: it copies the frames, not STACK_WIN bytes, and
 *   never starts below the data stack's first chunk, where the copy would fault and be made
 *   again from the frame's page.
 * - ids[0..n): the code object each frame of the walk ran and its identity, for process PID
 *   (registration GEN), good while FREES (its bs_py_cfg.code_frees) has not moved: the
 *   code_dealloc probe counts a free before the memory can be reused, so the same address
 *   is the same object. A stack taken again where the last one was then makes no py_codes
 *   lookup.
 * - tstate: the thread state of thread TS_TID (started at TS_START: a tid is reused only by
 *   another thread) of process TS_PID (registration TS_GEN). TS_TID's next stack reads it
 *   first (stack_cached_tstate), before the interpreter's list of thread states.
 * What these save: bench/RESULTS.md, "What the stack walk's choices save".
 */
struct stack_cache {
	__u32 tid;
	__u32 pid, gen;
	__u32 n;
	__u64 frees;
	__u64 floor;
	__u64 tstate;
	__u64 ts_start;
	__u32 ts_tid, ts_pid;
	__u32 ts_gen, ts_pad;
};

struct stack_id_ent {
	__u64 code;
	struct bs_py_code_id id;
};

/*
 * The native walk's state (stack_unwind), in the scratch buffer like stack_py_walk's. Its
 * frames are read from copies of whole pages of the user stack (s->win): one copy for the
 * frames of a page, where the kernel's own walk (bpf_get_stack) reads every word alone and
 * follows the last frame pointer of a module without frame pointers wherever it points, to
 * a fault as often as not.
 */
struct stack_fp_walk {
	__u64 ip, sp, bp; /* the frame at hand: its instruction (or return address), registers */
	__u64 hi;	  /* frames lie above the first stack pointer and below hi */
	__u64 win_lo;	  /* s->win holds the user memory from win_lo on, win_len bytes */
	__u32 win_len;	  /* 0: none yet */
	__u32 n;	  /* words written to s->w */
	__u32 max;	  /* words wanted */
	__u32 exact;	  /* ip is the instruction itself (the first frame, a signal's), not a
			   * return address (whose call is the byte before) */
	__u32 end;	  /* how the walk ended: BS_STACK_END_* (stack_records.h) */
	__u32 map;	  /* the unw_procs mapping the last frame was in (tried first) */
	__u32 lo, top;	  /* a binary search's bounds (stack_unw_map, stack_unw_row) */
	__u32 kept;	  /* max is the frames the family keeps, not the most a stack holds */
	__u64 tramp;	  /* the uretprobe trampoline, while calls with a uretprobe are pending */
	__u64 ri; /* the pending return_instance of the next trampoline met (kernel memory) */
};

/*
 * A Python walk's state. It lives in the per-CPU scratch buffer, not on the BPF stack: the
 * verifier tracks no values in map memory, so the frame callback's state is the same at every
 * round of bpf_loop (two pointers) and is checked once or twice, not once per frame count and
 * branch taken (Linux 6.7+ checks a callback as if called any number of times).
 */
struct stack_py_walk {
	__u64 fr;
	__u32 n;       /* words of addresses before the frames */
	__u32 k;       /* frames written */
	__u32 max;     /* frames wanted (0: BS_PY_MAX_FRAMES) */
	__u32 win_len; /* bytes of s->win copied from win_lo (0: none yet) */
	__u64 win_lo;
	__u64 last_code; /* the previous frame's code object and its two identity words */
	__u64 last_name, last_file;
	__u32 pid;
	__u32 own;   /* the current thread's frames: its code objects cannot be freed meanwhile */
	__u32 alone; /* the last frame was read alone, outside the window */
	__u32 first; /* the window is the walk's first */
	__u64 floor; /* where the first window may begin (0: STACK_WIN before its end) */
	__u64 low;   /* the lowest frame the first window held */
	__u32 ids;   /* 1: s->ids holds this walk's identities (its own frames, code_cache) */
	__u32 fresh; /* a code object's identity was read from it: none of the caches knew it */
};

/* bpf_loop's argument for a Python walk: the process's layout and the scratch buffer. */
struct stack_py_arg {
	const struct bs_py_cfg *c;
	struct stack_scratch *s;
};

struct stack_scratch {
	struct bs_hdr h; /* the raw record's header, then its 16 bytes of counts */
	__u32 nips, flags, npy, type;
	__u64 w[STACK_WORDS];
	/* Not sent: a frame's and a code object's first bytes, read in one copy each. */
	__u8 fr[STACK_HDR], co[STACK_HDR];
	__u8 win[STACK_WIN]; /* user memory: pages of the stack, then data-stack frames */
	__u8 tsb[STACK_TS];  /* a thread state's first bytes */
	struct stack_cache cache;
	struct stack_id_ent ids[BS_PY_MAX_FRAMES]; /* stack_cache's */
	struct stack_py_walk walk;
	struct stack_fp_walk fpw;
	__u64 woken; /* when this CPU last woke the recorder for a stack */
	__u32 busy;  /* a program of this CPU is building a stack in here (stack_scratch_take) */
	__u32 owed;  /* a stack that had to wake the recorder did not (within STACK_WAKE_NS) */
};

/* A stack is bigger than the BPF stack allows: built here, copied out whole. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_scratch);
} stack_scratch SEC(".maps");

/* Unwind tables (bpf/unwind_maps.h): every file's rows, and each process's mappings. Shared. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BS_UNW_ROWS / 2);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct bs_unw_pair);
} unw_rows SEC(".maps");

/* The rows found last, by file and address (bpf/unwind_maps.h). Shared. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BS_UNW_CACHE);
	__type(key, __u32);
	__type(value, struct bs_unw_cache_ent);
} unw_cache SEC(".maps");

#include "unwind_procs.bpf.h"

/* Python processes: pid -> how to read their frames. One map, shared by every object. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bs_py_cfg);
} py_procs SEC(".maps");

/* Code objects' identities while they live (records.h, bs_py_code_key). Shared. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BS_PY_CODES);
	__type(key, struct bs_py_code_key);
	__type(value, struct bs_py_code_id);
} py_codes SEC(".maps");

/*
 * The scratch buffer of this CPU for one stack, or NULL. A program that interrupts another
 * (a cpu sample, from the timer interrupt, in the middle of a system call's tp_btf program
 * on the same CPU: the kernel keeps these apart only from kprobe and uprobe programs) would
 * overwrite the stack being built there: it takes none instead, and the loss is counted
 * (BS_LOSS_STACK). stack_scratch_put gives the buffer back. Only an interrupt can come
 * between the test and the set, and it gives the buffer back before it returns.
 */
static __always_inline struct stack_scratch *stack_scratch_take(void)
{
	__u32 zero = 0;
	struct stack_scratch *s = bpf_map_lookup_elem(&stack_scratch, &zero);

	if (!s)
		return NULL;
	if (*(volatile __u32 *)&s->busy) {
		bs_count_loss(BS_LOSS_STACK);
		return NULL;
	}
	*(volatile __u32 *)&s->busy = 1;
	asm volatile("" ::: "memory");
	return s;
}

static __always_inline void stack_scratch_put(struct stack_scratch *s)
{
	asm volatile("" ::: "memory");
	*(volatile __u32 *)&s->busy = 0;
}

static __always_inline __u64 stack_read_u64(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (const void *)addr);
	return v;
}

/* The u64 at byte OFF of BUF of SIZE bytes (a copy of user memory), 0 past its end. */
static __always_inline __u64 buf_u64(const __u8 *buf, __u32 off, __u32 size)
{
	if (off > size - 8)
		return 0;
	return *(const __u64 *)(buf + off);
}

#endif /* BPFSIGHT_STACK_SCRATCH_BPF_H */
