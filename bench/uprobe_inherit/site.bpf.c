// SPDX-License-Identifier: GPL-2.0
/*
 * Calls per process and per site, where one tracefs event holds many sites and so one link
 * (one cookie): the site is found from the probed address, as (inode, offset in the file),
 * which is the same in every process, a child at its first instruction included.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

struct site_key {
	__u32 tgid;
	__u32 cookie;
	__u64 ino;
	__u64 off; /* the probed address, then its offset in the file */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct site_key);
	__type(value, __u64);
} sites SEC(".maps");

static long on_vma(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct site_key *k = data;

	k->off = k->off - vma->vm_start + (vma->vm_pgoff << 12);
	k->ino = vma->vm_file ? BPF_CORE_READ(vma, vm_file, f_inode, i_ino) : 0;
	return 0;
}

SEC("uprobe")
int site(struct pt_regs *ctx)
{
	struct site_key k = {
		.tgid = bpf_get_current_pid_tgid() >> 32,
		.cookie = (__u32)bpf_get_attach_cookie(ctx),
		.off = bpf_get_func_ip(ctx),
	};
	__u64 one = 1, *v;

	if (bpf_find_vma(bpf_get_current_task_btf(), k.off, on_vma, &k, 0))
		k.ino = 1; /* no mapping there: says so in the output */
	v = bpf_map_lookup_elem(&sites, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&sites, &k, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
