/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every family's BPF object shares. The maps below are defined in each object so each
 * can be loaded on its own (a family that fails to load does not take the others down), but
 * user space creates them once and every family reuses them by fd before load
 * (record_ctx__prepare, bpf_map__reuse_fd): one ring buffer, one target set (and -a's set of
 * excluded processes), one loss table, one control array (its flags, bpfsight's own helper
 * process). Configuration is const volatile rodata set between open and load
 * (RECORD_CTX_SET_COMMON_RODATA: trace_all, have_excluded, self_pid, wakeup_bytes,
 * record_room; per family options such as threshold_ns). Each tracepoint program exists
 * twice, *_btf (tp_btf: typed arguments, cheapest) and *_raw (raw_tp: kernels without BTF);
 * record_ctx__prepare keeps one.
 *
 * Room in the ring: an event's record is refused (counted ringbuf_full) once the ring holds
 * record_room bytes. The last sixteenth is left to the records of processes' lives
 * (bs_reserve_life) and, with the gpu or nvtx family (then at least four whole batches, at
 * most half), to the cupti-shim's batches, so a flood of events is lost before them
 * (tests/e2e/test_shim_flood.py). Should a life record be refused all the same, the loss in
 * the recording's own block makes the uprobe manager look at every traced process's maps
 * again (uprobe_mgr__rescan_all): no process is left unprobed for good.
 *
 * Map lifetimes: every map keyed by a process or thread is emptied when it exits, so process
 * churn cannot fill it (and a recycled pid or tid inherits nothing):
 *   targets, excluded (tgid)       proc.bpf.c, at the exit of the last thread
 *   sys_start_task, thread_sched_task, gil_thr (task storage)
 *                                  by the kernel with the task (thread_sched_task also holds,
 *                                  with --stacks=sched, the off-CPU records waiting for their
 *                                  stack: written at the thread's exit, and by a task
 *                                  iterator when the recording stops)
 *   sys_start, thread_sched (tid; the no-BTF fallback)
 *                                  their family's sched_process_exit program
 *   sys_agg ((pid, tid, nr, gen))  the exit marks the thread in sys_dead; osrt.c writes its
 *                                  final totals (BS_AGG_FINAL) and deletes its keys and the
 *                                  mark at the next flush (every second, and every cap / 8
 *                                  thread exits); gen (low bits of the thread's start time)
 *                                  keeps a recycled tid's keys apart; idle keys are evicted
 *                                  when the map is 3/4 full
 *   gil_procs, gil_live (tgid)     gil.bpf.c, at the process's exit and exec
 *   gil_tasks (tid; LRU)           gil.bpf.c, at the thread's exit
 *   gil_agg, gil_blame             gil.c, on the exit record
 *   shim_gaps (tgid)               user space, when the process exits (after its holes are
 *                                  settled); LRU, so bounded anyway
 *   known_files ((dev, inode))     never: one per executable examined, not per process
 *   launched, linked (tgid)        libmap.bpf.c, at the exit of the last thread
 *   unw_procs (tgid)               proc.bpf.c at the exec (and copied to a child at the
 *                                  fork), the stack service (user/stacks/stack_unwind.c) on
 *                                  the exit record; unw_rows: never (one table per file, its
 *                                  size the cap: bpf/unwind_maps.h); unw_cache: never (an
 *                                  array: a row found is written over its slot)
 * User space follows the same rule: what the recorder keeps per process (the shim channel's
 * strings, sequence window, launch join, namespace tid map and links; --inject's notes; the
 * cuda family's kernel names; the uprobe manager's maps, 2 s later) is freed at the process's
 * exit record, with a sweep for exit records lost to a full ring (docs/GPU.md, "Memory").
 */
#ifndef BPFSIGHT_COMMON_BPF_H
#define BPFSIGHT_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "records.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Records from every family, in one stream. Size set by user space before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

/* Traced processes (tgid -> 1), unless trace_all. Children are added on fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

/*
 * -a's processes left out (tgid -> 1; --exclude-pid, --exclude-comm): no event of theirs is
 * recorded and no probe placed in them. Filled by user space at the start, by proc.bpf.c as
 * they fork and exec (bpf/exclude.bpf.h); read only where have_excluded says there are any.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} excluded SEC(".maps");

/* Lost events per family and cause (BS_LOST_KEY); per-CPU so counting needs no atomics. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BS_LOST_KEYS);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/*
 * The recording's switches, set by user space while programs run (BS_CTL_*, records.h):
 * when it stops, new records are refused first, so what is left in the ring is bounded.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BS_CTL_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
} control SEC(".maps");

const volatile __u32 trace_all = 0; /* -a: every process but ourselves */
/* -a with --exclude-pid or --exclude-comm: every process but ourselves and the excluded */
const volatile __u32 have_excluded = 0;
const volatile __u32 self_pid = 0; /* bpfsight's tgid: tracing it would feed back */
/* Wake the consumer only once this much is waiting: a wakeup per record costs more than
 * the record (user space also drains on a short timer). */
const volatile __u64 wakeup_bytes = 1 << 20;
/*
 * Bytes of the ring an event's record may take it to; the rest is the cupti-shim's batches'
 * (shim.bpf.c) and the process life records' (bs_reserve_life), so that a flood of events
 * fills the ring before it can keep them out: a batch carries hundreds of GPU records and the
 * names (STRING records, sent once) that its process's later batches use, and a new
 * process's exec or dlopen is what gets its code probed and its shim linked. Set by user
 * space (record_ctx__record_room).
 */
const volatile __u64 record_room = ~0ull;
/*
 * The family whose losses this object counts: its index in the registry (BS_LOST_KEY, set by
 * user space, RECORD_CTX_SET_COMMON_RODATA); the services' objects count the recording's own.
 */
const volatile __u32 bs_loss_family = 0;

/*
 * -a's helper process of bpfsight's own (BS_CTL_OWN_PID). Its pid is known only after its
 * fork, so a thread slot a family made for it before then (osrt's, sched's) is no licence
 * to go on tracing it: those check this on the slot's path too.
 */
static __always_inline bool bs_is_own_helper(__u32 tgid)
{
	__u32 own = BS_CTL_OWN_PID, *o;

	if (!trace_all)
		return false;
	/* An array's lookup: the verifier makes it a load. */
	o = bpf_map_lookup_elem(&control, &own);
	return o && *o == tgid;
}

static __always_inline bool bs_is_target(__u32 tgid)
{
	if (tgid == self_pid || tgid == 0)
		return false;
	if (trace_all)
		return !bs_is_own_helper(tgid) &&
		       !(have_excluded && bpf_map_lookup_elem(&excluded, &tgid));
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/* 1 once the recording stops: events from then on are past its end, not lost. */
static __always_inline bool bs_stopped(void)
{
	__u32 zero = 0, *c = bpf_map_lookup_elem(&control, &zero);

	return c && (*c & BS_CTL_STOPPED);
}

/* 1 once the recording has ended (BS_CTL_ENDED), not while --start-at's gate holds it. */
static __always_inline bool bs_ended(void)
{
	__u32 zero = 0, *c = bpf_map_lookup_elem(&control, &zero);

	return c && (*c & BS_CTL_ENDED);
}

/* CAUSE is a constant everywhere: the key folds at compile time. */
static __always_inline void bs_count_losses(__u32 cause, __u64 n)
{
	__u32 key = BS_LOST_KEY(bs_loss_family, cause);
	__u64 *v;

	/* Past the stop an event is after the recording's end, not lost; what the stop's own
	 * final records (bs_reserve_final) cannot get into the ring still is. */
	if (cause != BS_LOSS_RINGBUF_FULL && bs_stopped())
		return;
	v = bpf_map_lookup_elem(&lost, &key);
	if (v)
		*v += n;
}

static __always_inline void bs_count_loss(__u32 cause)
{
	bs_count_losses(cause, 1);
}

/*
 * Reserve a record and fill its header, even once the recording stops (for what user space
 * asks BPF to write at its end); counts a loss when the ring buffer is full.
 */
static __always_inline void *bs_reserve_final(__u16 type, __u32 size, __u32 pid, __u32 tid,
					      __u64 ts)
{
	struct bs_hdr *h = bpf_ringbuf_reserve(&events, size, 0);

	if (!h) {
		bs_count_loss(BS_LOSS_RINGBUF_FULL);
		return NULL;
	}
	h->type = type;
	h->size = size;
	h->cpu = bpf_get_smp_processor_id();
	h->pid = pid;
	h->tid = tid;
	h->ts = ts;
	return h;
}

/* A record of an event: none once the recording stops. */
static __always_inline void *bs_reserve(__u16 type, __u32 size, __u32 pid, __u32 tid, __u64 ts)
{
	if (bs_stopped())
		return NULL;
	if (record_room != ~0ull &&
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + size > record_room) {
		bs_count_loss(BS_LOSS_RINGBUF_FULL);
		return NULL;
	}
	return bs_reserve_final(type, size, pid, tid, ts);
}

/*
 * A record of a process's life (fork, exec, exit, comm, a new executable mapping): none once
 * the recording stops, but past record_room too. They are rare, and user space needs each
 * one to follow and probe the process: a flood of events must not keep them out.
 */
static __always_inline void *bs_reserve_life(__u16 type, __u32 size, __u32 pid, __u32 tid, __u64 ts)
{
	if (bs_stopped())
		return NULL;
	return bs_reserve_final(type, size, pid, tid, ts);
}

/* The flags of a record's submit or output: wake the consumer once wakeup_bytes wait. */
static __always_inline __u64 bs_wakeup_flags(void)
{
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void bs_submit(void *rec)
{
	bpf_ringbuf_submit(rec, bs_wakeup_flags());
}

#endif /* BPFSIGHT_COMMON_BPF_H */
