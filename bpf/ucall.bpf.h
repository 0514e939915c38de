/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Generic entry/return uprobes for API families (cuda, nccl): one pair of programs serves
 * every probed function; the probe's bpf_cookie (records.h, BS_UCOOKIE) says which function
 * it is and what to capture. A family's .bpf.c defines UCALL_REC_TYPE and includes this.
 *
 * Entry pushes a frame (time, cookie, 6 register + 6 stack argument words) on a per-thread
 * stack in task storage: no hash insert/delete per call, and nesting (a driver call inside a
 * runtime call) is kept as depth. Return pops it and emits one bs_ucall record, copying
 * pointees (config structs, names) and the out value only then, when they hold their final
 * values. Entry probes sit where rsp still points at the return address (probe_site.h), so
 * the stack arguments are at 8(%rsp) on entry and at 0(%rsp) after the return.
 */
#ifndef BPFSIGHT_UCALL_BPF_H
#define BPFSIGHT_UCALL_BPF_H

#include "common.bpf.h"

#ifndef UCALL_REC_TYPE
#error "define UCALL_REC_TYPE (BS_REC_*) before including ucall.bpf.h"
#endif

#define UCALL_MAX_DEPTH 8

/* libbpf 1.1's bpf_tracing.h stops at PARM5; uprobe families are x86-64 only for now. */
#if defined(__TARGET_ARCH_x86)
#define UCALL_PARM6(ctx) ((ctx)->r9)
#else
#error "ucall.bpf.h: only x86-64 argument registers are described"
#endif

struct ucall_frame {
	__u64 ts;
	__u64 cookie;
	__u64 args[BS_UCALL_NARGS];
};

struct ucall_thread {
	__u32 depth; /* may exceed UCALL_MAX_DEPTH: deeper frames are counted, not kept */
	__u32 _pad;
	struct ucall_frame f[UCALL_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ucall_thread);
} ucall_stack SEC(".maps");

SEC("uprobe")
int ucall_entry(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ucall_thread *t;
	struct ucall_frame *f;
	__u32 d;

	/* Storage exists only for threads of traced processes: the target check (a hash
	 * lookup) runs once per thread, not on every call, and never on return. */
	t = bpf_task_storage_get(&ucall_stack, bpf_get_current_task_btf(), 0, 0);
	if (!t) {
		if (!bs_is_target(tgid))
			return 0;
		t = bpf_task_storage_get(&ucall_stack, bpf_get_current_task_btf(), 0,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!t) {
			bs_count_loss(BS_LOSS_TASK_MAP);
			return 0;
		}
	}
	d = t->depth++;
	if (d >= UCALL_MAX_DEPTH) {
		bs_count_loss(BS_LOSS_TASK_MAP);
		return 0;
	}
	f = &t->f[d];
	f->cookie = bpf_get_attach_cookie(ctx);
	f->args[0] = PT_REGS_PARM1(ctx);
	f->args[1] = PT_REGS_PARM2(ctx);
	f->args[2] = PT_REGS_PARM3(ctx);
	f->args[3] = PT_REGS_PARM4(ctx);
	f->args[4] = PT_REGS_PARM5(ctx);
	f->args[5] = UCALL_PARM6(ctx);
	/* 7th.. argument words, above the return address, for functions that have them (a
	 * user-memory copy is a good part of the cost). A fault leaves zeros. */
	if (f->cookie & BS_UCOOKIE_STACK)
		bpf_probe_read_user(&f->args[6], 6 * sizeof(__u64), (void *)(PT_REGS_SP(ctx) + 8));
	else
		__builtin_memset(&f->args[6], 0, 6 * sizeof(__u64));
	f->ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline void ucall_fill(struct bs_ucall *r, const struct ucall_frame *f,
				       struct pt_regs *ctx, __u64 now, __u32 depth)
{
	__u64 cookie = f->cookie;
	__u32 out = BS_UCOOKIE_OUT_ARG(cookie);

	r->dur = now - f->ts;
	r->ret = PT_REGS_RC(ctx);
	r->fn = BS_UCOOKIE_FN(cookie);
	r->depth = depth;
	r->out = 0;
	__builtin_memcpy(r->args, f->args, sizeof(r->args));
	if (out >= 1 && out <= BS_UCALL_NARGS)
		bpf_probe_read_user(&r->out, sizeof(r->out), (void *)f->args[out - 1]);
}

/* Where a deref reads from: an argument's pointee, or the stack-argument area. */
static __always_inline const void *ucall_deref_src(const struct ucall_frame *f, __u64 sp)
{
	__u32 arg = BS_UCOOKIE_DEREF_ARG(f->cookie);
	__u64 base;

	if (arg == BS_DEREF_ARG_STACK)
		base = sp; /* after ret: the caller's outgoing arguments */
	else if (arg >= 1 && arg <= BS_UCALL_NARGS)
		base = f->args[arg - 1];
	else
		return 0;
	return (const void *)(base + BS_UCOOKIE_DEREF_OFF(f->cookie));
}

SEC("uretprobe")
int ucall_return(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	/* Read into a scalar up front: the verifier rejects a load through a ctx pointer the
	 * compiler would otherwise select between ctx and a map value. */
	__u64 sp = PT_REGS_SP(ctx);
	__u32 tgid = id >> 32, tid = (__u32)id, d, mode;
	struct ucall_thread *t;
	struct ucall_frame *f;
	struct bs_ucall *r;
	const void *src;

	barrier_var(sp);
	t = bpf_task_storage_get(&ucall_stack, bpf_get_current_task_btf(), 0, 0);
	if (!t || t->depth == 0)
		return 0; /* not traced, or the call began before its probe was attached */
	d = --t->depth;
	if (d >= UCALL_MAX_DEPTH)
		return 0; /* counted as lost at entry */
	f = &t->f[d];
	mode = BS_UCOOKIE_MODE(f->cookie);
	src = ucall_deref_src(f, sp);
	if (mode == BS_DEREF_STRUCT && src) {
		r = bs_reserve(UCALL_REC_TYPE, sizeof(*r) + BS_UCALL_DEREF_STRUCT, tgid, tid, f->ts);
		if (!r)
			return 0;
		ucall_fill(r, f, ctx, now, d);
		r->deref_len = BS_UCALL_DEREF_STRUCT;
		/* A small struct near the end of a mapping faults the full copy: take less. */
		if (bpf_probe_read_user(r + 1, BS_UCALL_DEREF_STRUCT, src) &&
		    bpf_probe_read_user(r + 1, 128, src) && bpf_probe_read_user(r + 1, 64, src))
			__builtin_memset(r + 1, 0, BS_UCALL_DEREF_STRUCT);
	} else if (mode == BS_DEREF_STRING && src) {
		r = bs_reserve(UCALL_REC_TYPE, sizeof(*r) + BS_UCALL_DEREF_STRING, tgid, tid, f->ts);
		if (!r)
			return 0;
		ucall_fill(r, f, ctx, now, d);
		r->deref_len = BS_UCALL_DEREF_STRING;
		if (bpf_probe_read_user_str(r + 1, BS_UCALL_DEREF_STRING, src) < 0)
			*(char *)(r + 1) = 0;
	} else {
		r = bs_reserve(UCALL_REC_TYPE, sizeof(*r), tgid, tid, f->ts);
		if (!r)
			return 0;
		ucall_fill(r, f, ctx, now, d);
		r->deref_len = 0;
	}
	bs_submit(r);
	return 0;
}

#endif /* BPFSIGHT_UCALL_BPF_H */
