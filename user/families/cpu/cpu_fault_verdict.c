// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fault-bound (cpu_fault.h): per process, the CPU samples taken in a page fault (BS_CPU_FAULT)
 * and in the calls that map and unmap memory (a kernel sample whose user stack is in brk,
 * munmap, madvise, mmap or mremap), of all its samples: what a job whose allocator hands its
 * blocks back to the kernel pays to fault them in again. glibc does so for a block above its
 * mmap threshold (mapped, unmapped at its free) and for its heap's free top above its trim
 * threshold (systrim, heap_trim); the user stacks of the unmapping samples say which. The mem
 * family's records, when recorded, size it: the resident memory given back and grown again
 * (MEM_SHRINK, MEM_GROW), the CPU tensors above glibc's default threshold and the largest
 * (MEM_ALLOC), the peak RSS; from them the thresholds to try.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu_fault.h"
#include "cpu_records.h"
#include "hmap.h"
#include "human.h"
#include "mem_records.h"
#include "table.h"
#include "trace_model.h"
#include "verdict.h"

/*
 * The claim holds from this share of the process's samples in faults and memory calls, and
 * from FAULT_HOLD_SAMPLES of them (0.5 s at the default 99 Hz): a share of n samples is known
 * to within sqrt(p(1 - p) / n), 4 points at 10% of 50. It is said, not holding, from the
 * FAULT_SAY_* ones.
 */
#define FAULT_HOLD_SHARE   0.10
#define FAULT_HOLD_SAMPLES 50
#define FAULT_SAY_SHARE	   0.05
#define FAULT_SAY_SAMPLES  20
/*
 * With the mem family recorded, memory given back must be at least this share of the memory
 * faulted in: a job that only grows (loading its data, its first steps) faults by need, and no
 * allocator setting saves that.
 */
#define FAULT_CHURN_SHARE 0.5
/* glibc's default M_MMAP_THRESHOLD: blocks from here on are those it may map and unmap. */
#define GLIBC_MMAP_MIN (128ull << 10)
/* User frames looked at for the memory call and for glibc's function that made it. */
#define FAULT_FRAMES 8

struct fault_proc {
	__u64 samples, fault, calls; /* all its samples, in a page fault, in a memory call */
	__u64 trim, unmap;	     /* memory calls from glibc's heap trim, from a block's free */
	__u64 first, last;	     /* its first and last mem record: the span of the rates */
	__u64 grown, given;	     /* resident bytes faulted in and given back (mem) */
	__u64 big, largest;	     /* CPU blocks of at least GLIBC_MMAP_MIN, the largest */
	__u64 peak_rss;
	__u64 mem; /* the mem family's records of it */
};

struct fault_rules {
	struct hmap *procs; /* (pid, 0) -> struct fault_proc */
};

void *cpu_fault__new(void)
{
	struct fault_rules *st = calloc(1, sizeof(*st));

	if (st && !(st->procs = hmap__new(sizeof(struct fault_proc)))) {
		free(st);
		return NULL;
	}
	return st;
}

void cpu_fault__free(void *vst)
{
	struct fault_rules *st = vst;

	if (!st)
		return;
	hmap__free(st->procs);
	free(st);
}

/* NAME, without a compiler's suffix ("systrim.constprop.0"), is WANT. */
static int named(const char *name, const char *want)
{
	size_t n = strlen(want);

	return name && !strncmp(name, want, n) && (!name[n] || name[n] == '.');
}

/* A native frame's function is one of NAMES (a NULL-ended list). */
static int frame_in(const struct bs_frame *f, const struct trace_model *m, const char *const *names)
{
	const char *name;

	if (f->kind != BS_FRAME_NATIVE || !f->func_id)
		return 0;
	name = trace_model__string(m, f->func_id);
	for (; *names; names++)
		if (named(name, *names) ||
		    (name && name[0] == '_' && name[1] == '_' && named(name + 2, *names)))
			return 1;
	return 0;
}

static const char *const memory_calls[] = { "brk",  "sbrk",   "munmap", "madvise",
					    "mmap", "mmap64", "mremap", NULL };
static const char *const heap_trims[] = { "systrim", "heap_trim", "shrink_heap", NULL };
static const char *const block_frees[] = { "munmap_chunk", NULL };

/* A kernel sample not in a fault: in a memory call when its innermost frames are one. */
static void add_call(struct fault_proc *p, const struct bs_cpu_sample *s,
		     const struct trace_model *m)
{
	const struct trace_stack *st = trace_model__stack(m, s->stack_id);
	int n, i, call = 0;

	if (!st)
		return;
	n = st->nframes < FAULT_FRAMES ? st->nframes : FAULT_FRAMES;
	/* The call's wrapper is the first frame; sbrk calls brk: the second. */
	for (i = 0; i < n && i < 2 && !call; i++)
		call = frame_in(&st->frames[i], m, memory_calls);
	if (!call)
		return;
	p->calls++;
	for (i = 0; i < n; i++) {
		if (frame_in(&st->frames[i], m, heap_trims)) {
			p->trim++;
			break;
		}
		if (frame_in(&st->frames[i], m, block_frees)) {
			p->unmap++;
			break;
		}
	}
}

static struct fault_proc *proc_of(struct fault_rules *st, __u32 pid)
{
	return hmap__get(st->procs, (struct hkey){ pid, 0 }, 1);
}

/* A mem record of P at TS: the mem family wrote of it, from FIRST to LAST. */
static void mem_seen(struct fault_proc *p, __u64 ts)
{
	if (!p->mem++ || ts < p->first)
		p->first = ts;
	if (ts > p->last)
		p->last = ts;
}

void cpu_fault__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_cpu_sample *s = (const void *)rec;
	const struct bs_mem_alloc *a = (const void *)rec;
	const struct bs_mem_grow *g = (const void *)rec;
	const struct bs_mem_rss *r = (const void *)rec;
	struct fault_proc *p;

	switch (rec->type) {
	case BS_REC_CPU_SAMPLE:
		if (rec->size < sizeof(*s) || !(p = proc_of(vst, rec->pid)))
			return;
		p->samples++;
		if (s->flags & BS_CPU_FAULT)
			p->fault++;
		else if (s->flags & BS_CPU_KERNEL)
			add_call(p, s, m);
		return;
	case BS_REC_MEM_ALLOC:
		if (rec->size < sizeof(*a) || a->device != BS_MEM_DEV_CPU ||
		    a->flags & BS_MEM_FREE || a->bytes < GLIBC_MMAP_MIN ||
		    !(p = proc_of(vst, rec->pid)))
			return;
		mem_seen(p, rec->ts);
		p->big++;
		if (a->bytes > p->largest)
			p->largest = a->bytes;
		return;
	case BS_REC_MEM_GROW:
	case BS_REC_MEM_SHRINK:
		if (rec->size < sizeof(*g) || !(p = proc_of(vst, rec->pid)))
			return;
		mem_seen(p, rec->ts);
		*(rec->type == BS_REC_MEM_GROW ? &p->grown : &p->given) += g->bytes;
		if (g->rss > p->peak_rss)
			p->peak_rss = g->rss;
		return;
	case BS_REC_MEM_RSS:
		if (rec->size < sizeof(*r) || !(p = proc_of(vst, rec->pid)))
			return;
		mem_seen(p, rec->ts);
		if (r->rss > p->peak_rss)
			p->peak_rss = r->rss;
		return;
	}
}

/*
 * A server's answer (stats --from, cpu_sql.c's cpu_fault_procs): per process what ADD
 * counts of every record, one row each, columns by ADD's names.
 */
int cpu_fault__load(void *vst, const char *name, const struct table *t)
{
	static const char *const cols[] = { "pid",   "samples", "fault",    "calls",   "trim",
					    "unmap", "first",	"last",	    "grown",   "given",
					    "big",   "largest", "peak_rss", "mem_rows" };
	int c[sizeof(cols) / sizeof(cols[0])];
	struct fault_proc *p;

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		if ((c[i] = table__col(t, cols[i])) < 0)
			return -EINVAL;
	for (int r = 0; r < table__nrows(t); r++) {
		if (!(p = proc_of(vst, (__u32)table__get_u64(t, r, c[0]))))
			return -ENOMEM;
		*p = (struct fault_proc){
			.samples = table__get_u64(t, r, c[1]),
			.fault = table__get_u64(t, r, c[2]),
			.calls = table__get_u64(t, r, c[3]),
			.trim = table__get_u64(t, r, c[4]),
			.unmap = table__get_u64(t, r, c[5]),
			.first = (__u64)table__get_s64(t, r, c[6]),
			.last = (__u64)table__get_s64(t, r, c[7]),
			.grown = table__get_u64(t, r, c[8]),
			.given = table__get_u64(t, r, c[9]),
			.big = table__get_u64(t, r, c[10]),
			.largest = table__get_u64(t, r, c[11]),
			.peak_rss = table__get_u64(t, r, c[12]),
			.mem = table__get_u64(t, r, c[13]),
		};
	}
	return 0;
}

/* The smallest power of two above N (glibc maps a block of the threshold's size itself). */
static __u64 pow2_above(__u64 n)
{
	__u64 p = 1;

	while (p <= n && p < (1ull << 62))
		p <<= 1;
	return p;
}

/* The process's share of samples in faults and memory calls, and whether it may hold. */
static double share_of(const struct fault_proc *p)
{
	return p->samples ? (double)(p->fault + p->calls) / p->samples : 0;
}

/* What glibc did that the unmapping samples show, and the blocks behind it (mem). */
static void detail_allocator(struct verdict *v, const struct fault_proc *p, double secs)
{
	char largest[32];
	const char *how = p->trim >= p->unmap && p->trim ? "trimmed its heap's free top (systrim)"
			  : p->unmap			 ? "unmapped freed blocks (munmap_chunk)"
							 : "gave memory back";

	if (!p->mem) {
		verdict__detail(
			v, -1, "cpu_sum",
			"glibc %s and the next allocations faulted it in again; record -t mem "
			"to size the blocks and the thresholds",
			how);
		return;
	}
	verdict__detail(
		v, -1, "mem_sum",
		"glibc %s and the next allocations faulted it in again: %.0f CPU blocks/s "
		"of >= 128 KiB (the largest %s); glibc maps a block above its mmap threshold "
		"(128 KiB, raised to the largest block freed, up to 32 MiB) and trims its "
		"heap's free top above twice that",
		how, p->big / secs, human__bytes((double)p->largest, largest, sizeof(largest)));
}

/* "; it gave back and faulted in again 230 MiB/s (59k pages/s)" into BUF (mem's bytes). */
static const char *churn_of(const struct fault_proc *p, double secs, char *buf, size_t len)
{
	char again[32], grown[32];
	__u64 both = p->given < p->grown ? p->given : p->grown;

	if (!p->mem)
		snprintf(buf, len, "%s", "");
	else if (p->given >= FAULT_CHURN_SHARE * p->grown)
		snprintf(buf, len, "; it gave back and faulted in again %s/s (%.0f pages/s)",
			 human__bytes(both / secs, again, sizeof(again)), both / secs / 4096);
	else
		snprintf(buf, len, "; it faulted in %s/s but gave back only %s/s: it grew",
			 human__bytes(p->grown / secs, grown, sizeof(grown)),
			 human__bytes(p->given / secs, again, sizeof(again)));
	return buf;
}

void cpu_fault__claims(void *vst, struct verdict *v)
{
	const struct trace_model *m = verdict__model(v);
	const struct fault_proc *p, *best = NULL;
	struct fault_rules *st = vst;
	char who[160], churn[160], fix[160];
	const char *name;
	__u32 pid, bpid = 0;
	struct hkey key;
	size_t it = 0;
	double share, secs;
	int holds;

	while ((p = hmap__next(st->procs, &it, &key))) {
		pid = (__u32)key.a;
		if (p->fault + p->calls < FAULT_SAY_SAMPLES || share_of(p) < FAULT_SAY_SHARE)
			continue;
		/* The most samples in faults; ties to the lower pid: the same trace, one verdict. */
		if (!best || p->fault + p->calls > best->fault + best->calls ||
		    (p->fault + p->calls == best->fault + best->calls && pid < bpid)) {
			best = p;
			bpid = pid;
		}
	}
	if (!(p = best))
		return;
	share = share_of(p);
	secs = p->last > p->first ? (p->last - p->first) / 1e9 : 1;
	holds = share >= FAULT_HOLD_SHARE && p->fault + p->calls >= FAULT_HOLD_SAMPLES &&
		(!p->mem || p->given >= FAULT_CHURN_SHARE * p->grown);
	name = trace_model__process_name(m, bpid);
	snprintf(who, sizeof(who), "%s (pid %u)", name && *name ? name : "process", bpid);
	if (p->mem && p->largest)
		snprintf(fix, sizeof(fix),
			 "try MALLOC_MMAP_THRESHOLD_=%llu MALLOC_TRIM_THRESHOLD_=%llu, or jemalloc "
			 "or tcmalloc",
			 (unsigned long long)pow2_above(p->largest),
			 (unsigned long long)pow2_above(p->peak_rss));
	else
		snprintf(fix, sizeof(fix),
			 "try MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ "
			 "above its largest blocks, or jemalloc or tcmalloc");
	verdict__claim(v, VERDICT_FAULT, holds, share, "cpu_sum",
		       "%s spent %.1f%% of its CPU in page faults (%.1f%%) and in calls that map "
		       "and unmap memory (%.1f%%)%s: %s",
		       who, share * 100, 100.0 * p->fault / p->samples,
		       100.0 * p->calls / p->samples, churn_of(p, secs, churn, sizeof(churn)), fix);
	detail_allocator(v, p, secs);
}
