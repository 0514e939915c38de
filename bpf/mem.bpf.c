// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem: where a job's memory goes, without touching the job.
 *
 * Tensors (uprobes, user/families/mem/mem_probes.c finds the sites in every libc10 and
 * libc10_cuda a traced process maps):
 *   - CPU: c10::ProfiledCPUMemoryReporter::New(ptr, nbytes) / Delete(ptr), which PyTorch's
 *     default CPU allocator calls on every allocation and free, profiler or not; OutOfMemory
 *     (nbytes) when alloc_cpu failed. Storages in shared memory or mapped from a file
 *     (at::MapAllocator: the batches a DataLoader's workers send) are reported by
 *     reportMemoryUsageToProfiler, below, with the CPU as their device.
 *   - GPU: c10::reportMemoryUsageToProfiler(ptr, size, allocated, reserved, device), which
 *     the CUDA caching allocator calls on every malloc and free (it looks for a profiler
 *     inside): the block's size and the device's totals; reportOutOfMemoryToProfiler(size,
 *     allocated, reserved, device) before it raises OutOfMemoryError. Where the allocator
 *     also has its USDT probe pytorch:malloc (torch 2.2+), it adds the block's stream and
 *     requested size in a record of its own (it fires after the report).
 * Resident memory (the kmem:rss_stat tracepoint, which the kernel fires in the thread whose
 * page fault or unmap moved one of the process's counters): a record when the process's RSS
 * moved by rss_step since its last; and a sample each time it moved by grow_step since the
 * last sample, growth or shrink, charged to the thread whose fault or unmap took it there,
 * with its stack: what each line left behind, as memory_profiler and Scalene show it.
 */
#include "stack.bpf.h"
#include "usdt_arg.bpf.h"
#include "mem_records.h"

/* --stacks=mem:SIZE: allocations of at least SIZE bytes (and growth samples) carry stacks. */
const volatile __u64 mem_stack_bytes = ~0ull;
/*
 * --mem-sample-rate: the smaller allocations carry a stack by sampled bytes, on average one
 * every mem_sample_rate bytes (0: none), as tcmalloc, Go's heap profile and jemalloc sample:
 * an allocation of B bytes is taken with probability 1 - exp(-B / rate), so readers count it
 * as B / that probability (mem_log.h). mem_log2_frac[i] = log2(1 + (i + 0.5) / 256) in 16.16
 * fixed point, filled by user space: the exponential draw below needs a logarithm, and BPF
 * has no floating point.
 */
const volatile __u64 mem_sample_rate = 0;
const volatile __u32 mem_log2_frac[256];
/*
 * Set by user space once the running targets' interpreters were looked for (attached with
 * -p, the first scan probes PyTorch's allocator before): stacks taken before would have no
 * Python frames, so allocations take none until then (BS_MEM_EARLY).
 */
__u32 mem_stacks_live = 0;
/*
 * --mem-native-frames: the native frames a memory stack keeps, innermost first (the
 * allocator's callers up to the op that allocated; the Python frames follow whole). An OOM's
 * stack is whole.
 */
const volatile __u32 mem_native_frames = BS_STACK_MAX_FRAMES;
const volatile __u64 rss_step = 1 << 20;
const volatile __u64 grow_step = 1 << 20;

#define PAGE_SHIFT_X86 12
#define DEV_TYPE_CPU   0 /* c10::DeviceType::CPU */
#define DEV_TYPE_CUDA  1 /* c10::DeviceType::CUDA */

struct mem_proc {
	__u64 rss_written; /* the RSS of the process's last RSS record */
	__u64 grow_base;   /* its RSS at its last growth or shrink sample */
};

/* tgid -> its RSS bookkeeping; deleted at the process's exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct mem_proc);
} mem_procs SEC(".maps");

/*
 * The counters this CPU saw last, of the last mm whose counter moved here: a percpu
 * counter's shared count, the one read here and in /proc, moves once per batch of pages a
 * CPU folds into it (32 or more), so most page faults find the value their CPU saw last and
 * stop there, at the program's first test, before anything else is read.
 */
struct mem_seen {
	__u64 mm;
	__s64 count[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mem_seen);
} mem_last SEC(".maps");

/*
 * Each CPU's byte countdown to its next sampled allocation: an exponential draw, so the
 * chance an allocation of B bytes reaches 0 is 1 - exp(-B / rate) whatever came before it on
 * this CPU (the draw is memoryless), and a sampled one draws a new countdown. Per CPU, not
 * per thread: a program on a uprobe stays on its CPU, and the chance is the same for any
 * thread's allocation.
 */
struct mem_countdown {
	__s64 left;
	__u64 armed; /* left holds a draw */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mem_countdown);
} mem_sampler SEC(".maps");

#define LN2_16 45426 /* ln(2) in 16.16 fixed point */

/*
 * rate * -ln(U) for U uniform in (0, 1]: -log2(U) from the top bit of a random word and the
 * table's log2 of its next 8 bits, then times ln(2) and the rate, all in fixed point.
 */
static __always_inline __s64 countdown_draw(void)
{
	__u32 u = bpf_get_prandom_u32() | 1, m = u, msb = 0;
	__u64 nlog2, nln;

	if (m >> 16) {
		m >>= 16;
		msb += 16;
	}
	if (m >> 8) {
		m >>= 8;
		msb += 8;
	}
	if (m >> 4) {
		m >>= 4;
		msb += 4;
	}
	if (m >> 2) {
		m >>= 2;
		msb += 2;
	}
	if (m >> 1)
		msb += 1;
	/* u = 2^msb * (1 + f): f's top 8 bits index the table */
	nlog2 = ((__u64)(32 - msb) << 16) - mem_log2_frac[((__u64)u << (31 - msb) >> 23) & 0xff];
	nln = (nlog2 * LN2_16) >> 16;
	return (__s64)((nln * mem_sample_rate) >> 16) + 1;
}

/* Whether this allocation of BYTES is sampled (--mem-sample-rate). */
static __always_inline int sample_alloc(__u64 bytes)
{
	__u32 zero = 0;
	struct mem_countdown *c = bpf_map_lookup_elem(&mem_sampler, &zero);

	if (!c)
		return 0;
	if (!c->armed) {
		c->left = countdown_draw();
		c->armed = 1;
	}
	c->left -= (__s64)bytes;
	if (c->left > 0)
		return 0;
	c->left = countdown_draw();
	return 1;
}

/* How to read the arguments of one USDT site (the cookie of its probe is its index). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct bs_usdt_site);
} mem_usdt_sites SEC(".maps");

static __always_inline void emit_alloc(__u32 pid, __u32 tid, __u64 addr, __u64 bytes, __s16 dev,
				       __u8 source, __u8 flags, __u64 allocated, __u64 reserved)
{
	__u64 ts = bpf_ktime_get_ns();
	struct bs_mem_alloc *r;
	__u32 rate = 0;
	int take = 0;

	if (!(flags & BS_MEM_FREE) && mem_stack_bytes != ~0ull) {
		if (!mem_stacks_live) {
			flags |= BS_MEM_EARLY;
			rate = mem_sample_rate; /* readers count it under "(before stacks)" */
		} else if (bytes >= mem_stack_bytes) {
			take = 1;
		} else if (mem_sample_rate) {
			rate = mem_sample_rate;
			if (sample_alloc(bytes)) {
				take = 1;
				flags |= BS_MEM_SAMPLED;
			}
		}
	}
	/* One call site: the verifier checks a stack walk once per copy (~35 ms each). */
	if (take)
		stack_emit_keep(BS_REC_MEM_ALLOC, pid, tid, ts, 1, 0, mem_native_frames);
	r = bs_reserve(BS_REC_MEM_ALLOC, sizeof(*r), pid, tid, ts);
	if (!r)
		return;
	r->addr = addr;
	r->bytes = bytes;
	r->allocated = allocated;
	r->reserved = reserved;
	r->device = dev;
	r->source = source;
	r->flags = flags;
	/* Every allocation says the rate it was sampled at: one without a stack is counted by
	 * the sampled ones, not as "(no stack)". */
	r->sample_rate = rate;
	bs_submit(r);
}

static __always_inline void emit_oom(__u32 pid, __u32 tid, __u64 bytes, __s16 dev, __u8 source,
				     __u64 allocated, __u64 reserved)
{
	__u64 ts = bpf_ktime_get_ns();
	struct bs_mem_oom *r;

	/* An OOM always says where: what the job was doing when memory ran out. */
	if (mem_stack_bytes != ~0ull)
		stack_emit(BS_REC_MEM_OOM, pid, tid, ts, 1);
	r = bs_reserve(BS_REC_MEM_OOM, sizeof(*r), pid, tid, ts);
	if (!r)
		return;
	r->bytes = bytes;
	r->allocated = allocated;
	r->reserved = reserved;
	r->device = dev;
	r->source = source;
	__builtin_memset(r->_pad, 0, sizeof(r->_pad));
	bs_submit(r);
}

/*
 * c10::Device passed by value: two int8s in one register word, the type in the low byte
 * and the index in the next. 0 for a CUDA device's index, else -1 (not a CUDA device).
 */
static __always_inline int cuda_index(__u64 word, __s16 *index)
{
	if ((__u8)word != DEV_TYPE_CUDA)
		return -1;
	*index = (__s8)(word >> 8);
	return 0;
}

/*
 * An allocation or a free reported to c10; which function's (the probe's cookie, as
 * BS_MEM_SRC_*) tells its arguments apart. One program for both, so that the verifier checks
 * its stack walk once:
 * - BS_MEM_SRC_CPU: c10::ProfiledCPUMemoryReporter::New(this, void *ptr, size_t nbytes);
 * - BS_MEM_SRC_REPORT: c10::reportMemoryUsageToProfiler(void *ptr, int64_t alloc_size,
 *   size_t total_allocated, size_t total_reserved, c10::Device device): the CUDA caching
 *   allocator's every malloc (size > 0) and free (size < 0). On the CPU: at::MapAllocator's
 *   maps and unmaps, whose total_allocated is 0 (1.13 to 2.11: (ptr, size, 0, size) and (ptr,
 *   -size, 0, 0)); and ProfiledCPUMemoryReporter's own while torch.profiler records memory,
 *   New's and Delete's seen there already, whose total_allocated is the reporter's running
 *   total: left out here but when a Delete took that total to 0, which readers know as the
 *   free its thread's Delete record just wrote (mem_live.h).
 */
SEC("uprobe")
int BPF_KPROBE(mem_alloc, __u64 a0, __u64 a1, __u64 a2, __u64 a3, __u64 dev)
{
	__u64 id = bpf_get_current_pid_tgid(), ptr = a1, bytes = a2, allocated = 0, reserved = 0;
	__u8 flags = 0, source = BS_MEM_SRC_CPU;
	__s16 index = BS_MEM_DEV_CPU;

	if (bpf_get_attach_cookie(ctx) == BS_MEM_SRC_REPORT) {
		__s64 size = (__s64)a1;

		if ((__u8)dev == DEV_TYPE_CPU) {
			if (a2)
				return 0;
		} else if (cuda_index(dev, &index)) {
			return 0;
		} else {
			flags = BS_MEM_TOTALS;
			allocated = a2;
			reserved = a3;
		}
		if (size < 0)
			flags |= BS_MEM_FREE;
		ptr = a0;
		bytes = size < 0 ? -size : size;
		source = BS_MEM_SRC_REPORT;
	}
	/* New returns at once for 0 bytes; its Delete never reaches the reporter either. */
	if (!bytes || !bs_is_target(id >> 32))
		return 0;
	emit_alloc(id >> 32, (__u32)id, ptr, bytes, index, source, flags, allocated, reserved);
	return 0;
}

/* c10::ProfiledCPUMemoryReporter::Delete(this, void *ptr) */
SEC("uprobe")
int BPF_KPROBE(mem_cpu_delete, void *self, void *ptr)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (!ptr || !bs_is_target(id >> 32))
		return 0;
	emit_alloc(id >> 32, (__u32)id, (__u64)ptr, 0, BS_MEM_DEV_CPU, BS_MEM_SRC_CPU, BS_MEM_FREE,
		   0, 0);
	return 0;
}

/*
 * An allocation refused, one program for both functions as mem_alloc:
 * - BS_MEM_SRC_CPU: c10::ProfiledCPUMemoryReporter::OutOfMemory(this, size_t nbytes);
 * - BS_MEM_SRC_REPORT: c10::reportOutOfMemoryToProfiler(int64_t alloc_size, size_t
 *   total_allocated, size_t total_reserved, c10::Device device), a CUDA device's.
 */
SEC("uprobe")
int BPF_KPROBE(mem_oom, __u64 a0, __u64 a1, __u64 a2, __u64 dev)
{
	__u64 id = bpf_get_current_pid_tgid(), bytes = a1, allocated = 0, reserved = 0;
	__u8 source = BS_MEM_SRC_CPU;
	__s16 index = BS_MEM_DEV_CPU;

	if (bpf_get_attach_cookie(ctx) == BS_MEM_SRC_REPORT) {
		if (cuda_index(dev, &index))
			return 0;
		bytes = a0;
		allocated = a1;
		reserved = a2;
		source = BS_MEM_SRC_REPORT;
	}
	if (bs_is_target(id >> 32))
		emit_oom(id >> 32, (__u32)id, bytes, index, source, allocated, reserved);
	return 0;
}

/*
 * pytorch:malloc(ptr, device, size, stream), the CUDA caching allocator's USDT probe, where
 * allocate() returns: the block's stream and requested size, after the report probe wrote
 * its allocation.
 */
SEC("uprobe")
int mem_usdt_malloc(struct pt_regs *ctx)
{
	__u32 key = bpf_get_attach_cookie(ctx);
	const struct bs_usdt_site *site = bpf_map_lookup_elem(&mem_usdt_sites, &key);
	__u64 id = bpf_get_current_pid_tgid(), ptr, dev, size, stream;
	struct bs_mem_stream *r;

	if (!site || !bs_is_target(id >> 32))
		return 0;
	if (usdt_fetch(ctx, site->arg[0], &ptr) || usdt_fetch(ctx, site->arg[1], &dev) ||
	    usdt_fetch(ctx, site->arg[2], &size) || usdt_fetch(ctx, site->arg[3], &stream))
		return 0;
	r = bs_reserve(BS_REC_MEM_STREAM, sizeof(*r), id >> 32, (__u32)id, bpf_ktime_get_ns());
	if (!r)
		return 0;
	r->addr = ptr;
	r->stream = stream;
	r->requested = size;
	r->device = (__s16)dev;
	__builtin_memset(r->_pad, 0, sizeof(r->_pad));
	bs_submit(r);
	return 0;
}

/* mm's counters, in pages, as the kernel's get_mm_counter() reads them. */
struct mm_rss_stat___pre62 {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___pre62 {
	struct mm_rss_stat___pre62 rss_stat;
} __attribute__((preserve_access_index));

#define MM_FILEPAGES_  0
#define MM_ANONPAGES_  1
#define MM_SHMEMPAGES_ 3

/*
 * Linux 6.2 made the counters percpu_counters (f1a7941243c1): their shared count, the
 * value /proc shows; before, atomics. A page fault runs this: tp_btf's mm is the kernel's
 * own pointer, read with plain loads (BTF); raw_tp's with probe reads, and 6.1's atomics too
 * (its verifier refuses a BTF load through atomic_long_t's typedef: "not a struct").
 */
#define MM_PAGES(mm, m, load)                                                                      \
	(bpf_core_field_exists(((struct mm_struct___pre62 *)0)->rss_stat.count)                    \
		 ? LOAD_CORE(((struct mm_struct___pre62 *)(mm))->rss_stat.count[m].counter)        \
		 : load((mm)->rss_stat[m].count))
#define LOAD_BTF(x) (x)
#define LOAD_CORE(x)                                                                               \
	({                                                                                         \
		__s64 ___v = 0;                                                                    \
		bpf_core_read(&___v, sizeof(___v), &(x));                                          \
		___v;                                                                              \
	})

static __always_inline __u64 pages_bytes(__s64 v)
{
	return v > 0 ? (__u64)v << PAGE_SHIFT_X86 : 0;
}

/*
 * Counter MEMBER of MM, by a constant offset (the verifier wants one for a BTF pointer);
 * MM_NOT_RSS for MM_SWAPENTS, which is no part of the RSS.
 */
#define MM_NOT_RSS ((__s64)(1ull << 63))
#define MM_MEMBER(mm, member, load)                                                                \
	((member) == MM_FILEPAGES_    ? MM_PAGES(mm, MM_FILEPAGES_, load)                          \
	 : (member) == MM_ANONPAGES_  ? MM_PAGES(mm, MM_ANONPAGES_, load)                          \
	 : (member) == MM_SHMEMPAGES_ ? MM_PAGES(mm, MM_SHMEMPAGES_, load)                         \
				      : MM_NOT_RSS)

/*
 * Whether counter MEMBER of MM, now V, moved since this CPU last looked (most page faults:
 * no, and the program ends here).
 */
static __always_inline int rss_moved(struct mm_struct *mm, int member, __s64 v)
{
	struct mem_seen *seen;
	__u32 zero = 0;

	if (v == MM_NOT_RSS)
		return 0;
	seen = bpf_map_lookup_elem(&mem_last, &zero);
	if (!seen)
		return 1;
	if (seen->mm == (__u64)mm) {
		if (seen->count[member & 3] == v)
			return 0;
	} else {
		seen->mm = (__u64)mm;
		seen->count[0] = seen->count[1] = seen->count[2] = seen->count[3] = -1;
	}
	seen->count[member & 3] = v;
	return 1;
}

/* Process PID's counters moved (its thread TID's fault or unmap): records, samples. */
static __always_inline int on_rss(__u32 pid, __u32 tid, __s64 file, __s64 anon, __s64 shmem)
{
	__u64 rss, old, fb = pages_bytes(file), ab = pages_bytes(anon), sb = pages_bytes(shmem);
	struct mem_proc *p, init = {};

	rss = fb + ab + sb;
	p = bpf_map_lookup_elem(&mem_procs, &pid);
	if (!p) {
		init.grow_base = rss;
		bpf_map_update_elem(&mem_procs, &pid, &init, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&mem_procs, &pid);
		if (!p)
			return 0;
	}
	old = p->rss_written;
	if ((rss > old ? rss - old : old - rss) >= rss_step &&
	    __sync_val_compare_and_swap(&p->rss_written, old, rss) == old) {
		struct bs_mem_rss *r =
			bs_reserve(BS_REC_MEM_RSS, sizeof(*r), pid, tid, bpf_ktime_get_ns());

		if (r) {
			r->rss = rss;
			r->anon = ab;
			r->file = fb;
			r->shmem = sb;
			bs_submit(r);
		}
	}
	/*
	 * A sample each grow_step the RSS moved since the last one, up (page faults) or down
	 * (unmaps), charged to the thread that moved it: readers net them per line, as
	 * memory_profiler's increments do, so a temporary freed where it was made nets nothing.
	 */
	old = p->grow_base;
	if ((rss > old ? rss - old : old - rss) >= grow_step &&
	    __sync_val_compare_and_swap(&p->grow_base, old, rss) == old) {
		__u16 type = rss > old ? BS_REC_MEM_GROW : BS_REC_MEM_SHRINK;
		__u64 ts = bpf_ktime_get_ns();
		struct bs_mem_grow *g;

		if (mem_stack_bytes != ~0ull)
			stack_emit_keep(type, pid, tid, ts, 1, 0, mem_native_frames);
		g = bs_reserve(type, sizeof(*g), pid, tid, ts);
		if (g) {
			g->bytes = rss > old ? rss - old : old - rss;
			g->rss = rss;
			bs_submit(g);
		}
	}
	return 0;
}

/*
 * Every process's page faults come here: first whether the counter moved at all (a load
 * from the mm the fault just wrote), then the target test, then only the process's own
 * threads (the tracepoint's curr: its mm is theirs).
 */
SEC("tp_btf/rss_stat")
int BPF_PROG(mem_rss_btf, struct mm_struct *mm, int member)
{
	__u64 id;

	if (!rss_moved(mm, member, MM_MEMBER(mm, member, LOAD_BTF)))
		return 0;
	id = bpf_get_current_pid_tgid();
	if (!bs_is_target(id >> 32) || bpf_get_current_task_btf()->mm != mm)
		return 0;
	return on_rss(id >> 32, (__u32)id, MM_PAGES(mm, MM_FILEPAGES_, LOAD_BTF),
		      MM_PAGES(mm, MM_ANONPAGES_, LOAD_BTF),
		      MM_PAGES(mm, MM_SHMEMPAGES_, LOAD_BTF));
}

SEC("raw_tp/rss_stat")
int BPF_PROG(mem_rss_raw, struct mm_struct *mm, int member)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 id;

	if (!rss_moved(mm, member, MM_MEMBER(mm, member, LOAD_CORE)))
		return 0;
	id = bpf_get_current_pid_tgid();
	if (!bs_is_target(id >> 32) || BPF_CORE_READ(t, mm) != mm)
		return 0;
	return on_rss(id >> 32, (__u32)id, MM_PAGES(mm, MM_FILEPAGES_, LOAD_CORE),
		      MM_PAGES(mm, MM_ANONPAGES_, LOAD_CORE),
		      MM_PAGES(mm, MM_SHMEMPAGES_, LOAD_CORE));
}

/* A recycled pid must not inherit the bookkeeping. */
static __always_inline int on_exit(struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);

	if (BPF_CORE_READ(p, signal, live.counter) == 0)
		bpf_map_delete_elem(&mem_procs, &pid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(mem_exit_btf, struct task_struct *p)
{
	return on_exit(p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(mem_exit_raw, struct task_struct *p)
{
	return on_exit(p);
}
