// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mem family in the exports (export_model.h; docs/EXPORT.md, "Memory").
 *
 * Allocations, frees, OOMs, resident memory and its growth are instants on their threads, by
 * their style, with their sizes and stacks in their arguments. Beside them, per process,
 * counters in bytes, a value where it changes:
 *   "DEVICE allocated"  per device (cpu, cuda:N): the CUDA caching allocator's own total after
 *                       each allocation and free where its reports give it
 *                       (torch.cuda.memory_allocated()), else the bytes live by the records
 *                       (mem_live.h: CPU tensors);
 *   "cuda:N reserved"   what the caching allocator holds from CUDA (memory_reserved());
 *   "RSS"               the process's resident memory, from its mem_rss records.
 *
 * The profiler's view is torch.profiler(profile_memory=True)'s, so that TensorBoard's memory
 * view and HTA read ours like theirs: an allocation or free is Kineto's "[memory]" instant, cat
 * "cpu_instant_event", args "Device Type" (0 CPU, 1 CUDA), "Device Id" (-1 for the CPU), "Addr"
 * (the pointer, in decimal), "Bytes" (negative for a free), "Total Allocated", "Total Reserved"
 * (the caching allocator's totals after it; for CPU tensors, the bytes live by the records and
 * 0), and its "Call stack" when it has one; an OOM is Kineto's "[OutOfMemory]", with the same
 * keys but "Addr"; its counters ("memory") per process, every sample: "DEVICE memory"
 * {"allocated", and "reserved" on a GPU} after each allocation and free, "RSS" {"bytes"} for
 * each mem_rss, which is not an instant there.
 *
 * Tables (nsys has none for tensors: its CUDA_GPU_MEMORY_USAGE_EVENTS are cudaMalloc's), one row
 * per record, as dump shows it:
 *   BPFSIGHT_MEM_ALLOCS  allocations and frees: a free's size and allocation time from its
 *                        allocation (mem_live.h, as every view counts it), the device's live
 *                        bytes after it, the allocator's totals where its reports give them,
 *                        a GPU block's stream where the USDT probe gives it (torch 2.2+: its
 *                        MEM_STREAM comes just after its block's allocation), what an
 *                        allocation counts for at its line (mem_alloc__weight)
 *   BPFSIGHT_MEM_RSS     the process's resident memory when it moved by --mem-step
 *   BPFSIGHT_MEM_GROWTH  resident memory samples (a shrink's bytes negative), with the stack
 *                        that moved it
 *   BPFSIGHT_MEM_OOM     allocations refused for want of memory
 * Memory: a counter's last value per process and device (bpfsight's own view).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "export_model.h"
#include "hmap.h"
#include "mem.h"
#include "mem_live.h"
#include "mem_walk.h"

static const struct ex_column allocs_cols[] = {
	EXC_INT_NN("ts"),	EXC_INT_NN("globalTid"), EXC_TEXT_NN("device"),
	EXC_INT_NN("isFree"),	EXC_INT_NN("address"),	 EXC_INT_NN("bytes"),
	EXC_INT("liveBytes"),	EXC_INT("allocated"),	 EXC_INT("reserved"),
	EXC_INT("stream"),	EXC_TEXT_NN("source"),	 EXC_INT("allocTs"),
	EXC_INT("callchainId"), EXC_REAL("weight"),	 { 0 },
};
static const struct ex_index allocs_idx[] = {
	{ "ts", "ts" },
	{ "globalTid", "globalTid" },
	{ "address", "address" },
	{ 0 },
};
static const struct ex_table mem_allocs = {
	"BPFSIGHT_MEM_ALLOCS",
	allocs_cols,
	.indexes = allocs_idx,
};
static const struct ex_amend mem_stream = { &mem_allocs, "stream", "address, globalTid, isFree" };

static const struct ex_column rss_cols[] = {
	EXC_INT_NN("ts"),
	EXC_INT_NN("globalTid"),
	EXC_INT_NN("rss"),
	EXC_INT_NN("anon"),
	EXC_INT_NN("file"),
	EXC_INT_NN("shmem"),
	{ 0 },
};
static const struct ex_index rss_idx[] = { { "ts", "ts" }, { 0 } };
static const struct ex_table mem_rss = { "BPFSIGHT_MEM_RSS", rss_cols, .indexes = rss_idx };

static const struct ex_column growth_cols[] = {
	EXC_INT_NN("ts"),  EXC_INT_NN("globalTid"), EXC_INT_NN("bytes"),
	EXC_INT_NN("rss"), EXC_INT("callchainId"),  { 0 },
};
static const struct ex_table mem_growth = { "BPFSIGHT_MEM_GROWTH", growth_cols };

static const struct ex_column oom_cols[] = {
	EXC_INT_NN("ts"),      EXC_INT_NN("globalTid"), EXC_TEXT_NN("device"),
	EXC_INT_NN("bytes"),   EXC_INT("allocated"),	EXC_INT("reserved"),
	EXC_TEXT_NN("source"), EXC_INT("callchainId"),	{ 0 },
};
static const struct ex_table mem_oom = { "BPFSIGHT_MEM_OOM", oom_cols };

static const struct ex_table *const mem_tables[] = {
	&mem_allocs, &mem_rss, &mem_growth, &mem_oom, NULL,
};

#define KINETO_CPU  0 /* c10::DeviceType::CPU */
#define KINETO_CUDA 1 /* c10::DeviceType::CUDA */

enum mem_ctr { CTR_ALLOCATED, CTR_RESERVED, CTR_RSS };

struct mem_ctr_last {
	__u8 seen;
	__u64 last;
};

static int mem_open(struct ex_sink *s, void **st)
{
	if (!ex_wants(s, EX_OWN))
		return 0;
	*st = hmap__new(sizeof(struct mem_ctr_last)); /* {pid, device << 8 | counter} */
	return *st ? 0 : -ENOMEM;
}

static void mem_free(void *st)
{
	hmap__free(st);
}

static void ctr_describe(enum mem_ctr which, __s16 device, char *name, size_t nlen, char *desc,
			 size_t dlen)
{
	char dev[16];

	mem_device_name(device, dev, sizeof(dev));
	switch (which) {
	case CTR_ALLOCATED:
		snprintf(name, nlen, "%s allocated", dev);
		if (device == BS_MEM_DEV_CPU)
			snprintf(
				desc, dlen,
				"Bytes of PyTorch CPU tensors live in this process: its allocations "
				"less its frees since the recording began (mem family).");
		else
			snprintf(desc, dlen,
				 "Bytes the CUDA caching allocator had allocated on %s for this "
				 "process after each allocation and free, as its reports say "
				 "(torch.cuda.memory_allocated(); mem family).",
				 dev);
		break;
	case CTR_RESERVED:
		snprintf(name, nlen, "%s reserved", dev);
		snprintf(
			desc, dlen,
			"Bytes the CUDA caching allocator held from CUDA on %s for this process: "
			"what is allocated and its cache (torch.cuda.memory_reserved(); mem family).",
			dev);
		break;
	case CTR_RSS:
		snprintf(name, nlen, "RSS");
		snprintf(desc, dlen,
			 "Resident memory of the process (anonymous, file and shared-memory pages, "
			 "VmRSS), recorded where it moved by --mem-step (mem family).");
		break;
	}
}

/* bpfsight's own counter WHICH of PID's DEVICE at TS: V, written when it changed. */
static int ctr_set(struct ex_sink *s, struct hmap *last, __u32 pid, __s16 device,
		   enum mem_ctr which, __u64 ts, __u64 v)
{
	struct hkey k = { pid, (__u64)(__u16)device << 8 | which };
	struct mem_ctr_last *c = last ? hmap__get(last, k, 1) : NULL;
	char name[48], desc[256];

	if (!last)
		return 0;
	if (!c)
		return -ENOMEM;
	if (c->seen && c->last == v)
		return 0;
	c->seen = 1;
	c->last = v;
	ctr_describe(which, device, name, sizeof(name), desc, sizeof(desc));
	return ex_count1(s,
			 &(struct ex_counter){ .on = { .kind = EX_PROCESS, .pid = pid },
					       .name = name,
					       .desc = desc,
					       .unit = EX_UNIT_BYTES,
					       .views = EX_OWN,
					       .key = k.b },
			 ts, "bytes", EX_V_INT(v));
}

/* The profiler's "DEVICE memory" counter of PID after a call: allocated, and reserved. */
static int kineto_counter(struct ex_sink *s, __u32 pid, __u64 ts, __s16 device, __u64 allocated,
			  const __u64 *reserved)
{
	char dev[16], name[32];
	struct ex_value v[] = {
		{ "allocated", EX_UINT, .u = allocated },
		{ "reserved", EX_UINT, .u = reserved ? *reserved : 0 },
	};

	snprintf(name, sizeof(name), "%s memory", mem_device_name(device, dev, sizeof(dev)));
	return ex_count(s,
			&(struct ex_counter){ .on = { .kind = EX_PROCESS, .pid = pid },
					      .name = name,
					      .cat = "memory",
					      .views = EX_PROFILER },
			ts, v, reserved ? 2 : 1);
}

/* Kineto's "[memory]" or "[OutOfMemory]" instant: the keys ARGS of it, then its stack. */
static int kineto_instant(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev,
			  const char *name, const struct ex_value *args, __u32 n)
{
	struct ex_profiler prof = {
		.name = name, .cat = "cpu_instant_event", .extra = args, .nextra = n
	};

	return ex_event(
		s, &(struct ex_event){ .rec = rec, .ev = ev, .shape = EX_INSTANT, .prof = &prof });
}

static struct ex_value key_int(const char *key, __s64 v)
{
	return (struct ex_value){ key, EX_INT, .i = v };
}

static struct ex_value key_uint(const char *key, __u64 v)
{
	return (struct ex_value){ key, EX_UINT, .u = v };
}

static int mem_alloc(struct ex_sink *s, struct hmap *last, const struct bs_hdr *rec,
		     const struct event *ev)
{
	const struct bs_mem_alloc *r = (const void *)rec;
	const struct mem_walk *w = mem_walk__of(s->model, rec);
	__u64 bytes = w ? w->last_bytes : r->bytes, live = w ? w->last_live : 0;
	int totals = r->flags & BS_MEM_TOTALS, err = 0;
	__u64 allocated = totals ? r->allocated : live, reserved = totals ? r->reserved : 0;
	int is_free = !!(r->flags & BS_MEM_FREE);
	struct ex_value kineto[] = {
		key_int("Device Type", r->device == BS_MEM_DEV_CPU ? KINETO_CPU : KINETO_CUDA),
		key_int("Device Id", r->device),
		key_int("Addr", (__s64)r->addr),
		key_int("Bytes", is_free ? -(__s64)bytes : (__s64)bytes),
		key_uint("Total Allocated", allocated),
		key_uint("Total Reserved", reserved),
	};

	if (ex_wants(s, EX_TABLES))
		err = ex_row(
			s, &mem_allocs, EX_ROW_ADD,
			(struct ex_value[]){
				EX_V_INT(rec->ts), EX_V_INT(ex_gtid(rec->pid, rec->tid)),
				ex_v_arg(ev, "device"), EX_V_INT(is_free), EX_V_UINT(r->addr),
				EX_V_UINT(bytes), ex_v_arg(ev, "live"), ex_v_arg(ev, "allocated"),
				ex_v_arg(ev, "reserved"), EX_V_NULL /* the stream: MEM_STREAM's */,
				ex_v_arg(ev, "source"),
				EX_V_INT_IF(w && is_free && w->last_alloc_ts, w->last_alloc_ts),
				EX_V_STACK(ev->stack) /* --stacks=mem */,
				is_free ? EX_V_NULL : EX_V_REAL(mem_alloc__weight(r)) },
			NULL);
	if (!err)
		err = kineto_instant(s, rec, ev, "[memory]", kineto, 6);
	if (!err && (totals || w))
		err = kineto_counter(s, rec->pid, rec->ts, r->device, allocated,
				     totals ? &reserved : NULL);
	if (!err && (totals || w))
		err = ctr_set(s, last, rec->pid, r->device, CTR_ALLOCATED, rec->ts,
			      totals ? r->allocated : w->last_live);
	if (!err && totals)
		err = ctr_set(s, last, rec->pid, r->device, CTR_RESERVED, rec->ts, r->reserved);
	return err;
}

static int mem_oom_of(struct ex_sink *s, struct hmap *last, const struct bs_hdr *rec,
		      const struct event *ev)
{
	const struct bs_mem_oom *o = (const void *)rec;
	int gpu = o->device != BS_MEM_DEV_CPU, err = 0;
	struct ex_value kineto[] = {
		key_int("Device Type", gpu ? KINETO_CUDA : KINETO_CPU),
		key_int("Device Id", o->device),
		key_uint("Bytes", o->bytes),
		key_uint("Total Allocated", o->allocated),
		key_uint("Total Reserved", o->reserved),
	};

	if (ex_wants(s, EX_TABLES))
		err = ex_row(s, &mem_oom, EX_ROW_ADD,
			     (struct ex_value[]){
				     EX_V_INT(rec->ts), EX_V_INT(ex_gtid(rec->pid, rec->tid)),
				     ex_v_arg(ev, "device"), ex_v_arg(ev, "bytes"),
				     ex_v_arg(ev, "allocated"), ex_v_arg(ev, "reserved"),
				     ex_v_arg(ev, "source"), EX_V_STACK(ev->stack) },
			     NULL);
	if (!err)
		err = kineto_instant(s, rec, ev, "[OutOfMemory]", kineto, 5);
	/* The totals when it failed: the allocator may have emptied its cache first. */
	if (!err && gpu)
		err = kineto_counter(s, rec->pid, rec->ts, o->device, o->allocated, &o->reserved);
	if (!err && gpu)
		err = ctr_set(s, last, rec->pid, o->device, CTR_ALLOCATED, rec->ts, o->allocated);
	if (!err && gpu)
		err = ctr_set(s, last, rec->pid, o->device, CTR_RESERVED, rec->ts, o->reserved);
	return err;
}

static int mem_rss_of(struct ex_sink *s, struct hmap *last, const struct bs_hdr *rec,
		      const struct event *ev)
{
	const struct bs_mem_rss *rss = (const void *)rec;
	int err = ex_row(s, &mem_rss, EX_ROW_ADD,
			 (struct ex_value[]){ EX_V_INT(rec->ts),
					      EX_V_INT(ex_gtid(rec->pid, rec->tid)),
					      EX_V_UINT(rss->rss), EX_V_UINT(rss->anon),
					      EX_V_UINT(rss->file), EX_V_UINT(rss->shmem) },
			 NULL);

	/* An instant in bpfsight's own view only: the profiler's has its counter. */
	if (!err)
		err = ex_event(s, &(struct ex_event){ .rec = rec, .ev = ev, .views = EX_OWN });
	if (!err)
		err = ex_count1(s,
				&(struct ex_counter){ .on = { .kind = EX_PROCESS, .pid = rec->pid },
						      .name = "RSS",
						      .cat = "memory",
						      .views = EX_PROFILER },
				rec->ts, "bytes", EX_V_UINT(rss->rss));
	if (!err)
		err = ctr_set(s, last, rec->pid, 0, CTR_RSS, rec->ts, rss->rss);
	return err;
}

static int mem_record(struct ex_sink *s, void *st, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_mem_stream *m = (const void *)rec;
	const struct bs_mem_grow *g = (const void *)rec;
	int err;

	if (!ev)
		return 0;
	switch (rec->type) {
	case BS_REC_MEM_ALLOC:
		err = mem_alloc(s, st, rec, ev);
		break;
	case BS_REC_MEM_OOM:
		err = mem_oom_of(s, st, rec, ev);
		break;
	case BS_REC_MEM_RSS:
		err = mem_rss_of(s, st, rec, ev);
		break;
	case BS_REC_MEM_STREAM:
		return ex_amend_last(s, &mem_stream,
				     (struct ex_value[]){ EX_V_UINT(m->stream), EX_V_UINT(m->addr),
							  EX_V_INT(ex_gtid(rec->pid, rec->tid)),
							  EX_V_INT(0) });
	case BS_REC_MEM_GROW:
	case BS_REC_MEM_SHRINK: /* a shrink's bytes negative: SUM(bytes) is the net growth */
		return ex_row(s, &mem_growth, EX_ROW_ADD,
			      (struct ex_value[]){
				      EX_V_INT(rec->ts), EX_V_INT(ex_gtid(rec->pid, rec->tid)),
				      EX_V_INT(rec->type == BS_REC_MEM_GROW ? (__s64)g->bytes
									    : -(__s64)g->bytes),
				      ex_v_arg(ev, "rss"), EX_V_STACK(ev->stack) },
			      NULL);
	default:
		return 0;
	}
	return err ? err : 1;
}

/* Its own formats: a PyTorch memory snapshot, a pprof heap profile, flame graphs of memory. */
static const struct exporter *const mem_exporters[] = { &export_memory_snapshot, &export_pprof_heap,
							&export_memory_flamegraph,
							&export_memory_flamegraph_leaks, NULL };

const struct family_export mem_export = {
	.tables = mem_tables,
	.exporters = mem_exporters,
	.open = mem_open,
	.free = mem_free,
	.record = mem_record,
	.rows = &mem_rows, /* mem_rows.c: what mem_leaks in the server reads */
};
