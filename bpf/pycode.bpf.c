// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The end of a code object in a Python process whose stacks are read: a uprobe on its type's
 * tp_dealloc (code_dealloc, found through PyCode_Type: user/python/py_code_free.c) removes the
 * object's identity from py_codes before its memory can be reused, so a walk that finds an
 * entry there (bpf/stack_python.bpf.h) names the object that lives at that address now. Loaded
 * with the stack service; the probe fires in every process that maps the interpreter file,
 * and costs those outside py_procs one lookup.
 */
#include "stack.bpf.h"

SEC("uprobe")
int py_code_free(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct bs_py_cfg *c = bpf_map_lookup_elem(&py_procs, &pid);
	struct bs_py_code_key key;

	if (!c || !c->code_cache)
		return 0;
	key.pid = pid;
	key.gen = c->code_gen;
	key.code = PT_REGS_PARM1(ctx);
	/* Before the memory can be reused: walks stop trusting the identities they keep. */
	__sync_fetch_and_add(&c->code_frees, 1);
	bpf_map_delete_elem(&py_codes, &key);
	return 0;
}
