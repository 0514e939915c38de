/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * unw_procs (bpf/unwind_maps.h): each process's mappings of files with an unwind table, read
 * by the native walk (stack_native.bpf.h) and kept by bpf/proc.bpf.c across a fork (the
 * child's) and an exec (gone). One map, shared by every object of a recording.
 */
#ifndef BPFSIGHT_UNWIND_PROCS_BPF_H
#define BPFSIGHT_UNWIND_PROCS_BPF_H

#include "unwind_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BS_UNW_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bs_unw_proc);
} unw_procs SEC(".maps");

#endif /* BPFSIGHT_UNWIND_PROCS_BPF_H */
