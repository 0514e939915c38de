// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mem family in the Chrome export, as torch.profiler(profile_memory=True) writes its
 * memory into a Kineto trace (docs/EXPORT.md, "Memory"), so that TensorBoard's memory view
 * and HTA read ours like theirs:
 *   - an allocation or free is Kineto's "[memory]" instant on its thread, cat
 *     "cpu_instant_event", args "Device Type" (0 CPU, 1 CUDA), "Device Id" (-1 for the CPU),
 *     "Addr" (the pointer, in decimal), "Bytes" (negative for a free), "Total Allocated",
 *     "Total Reserved" (the caching allocator's totals after it; for CPU tensors, the bytes
 *     live by the records and 0), and its "Call stack" when it has one;
 *   - an OOM is Kineto's "[OutOfMemory]" instant, with the same keys but "Addr";
 *   - counters ("ph":"C", cat "memory") per process: "DEVICE memory" {"allocated", and
 *     "reserved" on a GPU} after each allocation and free, "RSS" {"bytes"} for each mem_rss.
 * Resident growth samples are instants by their style. Memory: nothing beyond the walk's.
 */
#include <stdio.h>
#include "export_chrome.h"
#include "mem.h"
#include "mem_walk.h"

#define KINETO_CPU  0 /* c10::DeviceType::CPU */
#define KINETO_CUDA 1 /* c10::DeviceType::CUDA */

/* Kineto's keys common to "[memory]" and "[OutOfMemory]", after ,"args":{ */
static void kineto_device(struct chrome *c, __s16 device)
{
	fprintf(c->f, "\"Device Type\":%d,\"Device Id\":%d",
		device == BS_MEM_DEV_CPU ? KINETO_CPU : KINETO_CUDA, device);
}

static void kineto_totals(struct chrome *c, __u64 allocated, __u64 reserved)
{
	fprintf(c->f, ",\"Total Allocated\":%llu,\"Total Reserved\":%llu",
		(unsigned long long)allocated, (unsigned long long)reserved);
}

/* An instant named NAME on EV's thread, its args left open after ,"args":{ */
static void kineto_instant(struct chrome *c, const struct event *ev, const char *name)
{
	chrome_begin(c, 'i', "cpu_instant_event", name, ev->pid, ev->tid);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ev->ts);
	fputs(",\"s\":\"t\",\"args\":{", c->f);
}

/* The process's counter of DEVICE after a call: allocated, and reserved when said. */
static void memory_counter(struct chrome *c, __u32 pid, __u64 ts, __s16 device, __u64 allocated,
			   const __u64 *reserved)
{
	char dev[16], name[32];

	snprintf(name, sizeof(name), "%s memory", mem_device_name(device, dev, sizeof(dev)));
	chrome_begin(c, 'C', "memory", name, pid, 0);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ts);
	fprintf(c->f, ",\"args\":{\"allocated\":%llu", (unsigned long long)allocated);
	if (reserved)
		fprintf(c->f, ",\"reserved\":%llu", (unsigned long long)*reserved);
	fputs("}}", c->f);
}

static int draw_alloc(struct chrome *c, const struct bs_hdr *rec, const struct event *ev,
		      const struct trace_model *m)
{
	const struct bs_mem_alloc *r = (const void *)rec;
	const struct mem_walk *w = mem_walk__of(m, rec);
	__u64 bytes = w ? w->last_bytes : r->bytes, live = w ? w->last_live : 0;
	int totals = r->flags & BS_MEM_TOTALS, err;
	__u64 allocated = totals ? r->allocated : live, reserved = totals ? r->reserved : 0;

	kineto_instant(c, ev, "[memory]");
	kineto_device(c, r->device);
	fprintf(c->f, ",\"Addr\":%lld,\"Bytes\":%lld", (long long)r->addr,
		r->flags & BS_MEM_FREE ? -(long long)bytes : (long long)bytes);
	kineto_totals(c, allocated, reserved);
	err = chrome_stack_args(c, ev, m, 1);
	fputs("}}", c->f);
	if (!err && (totals || w))
		memory_counter(c, rec->pid, rec->ts, r->device, allocated,
			       totals ? &reserved : NULL);
	return err;
}

static int draw_oom(struct chrome *c, const struct bs_hdr *rec, const struct event *ev,
		    const struct trace_model *m)
{
	const struct bs_mem_oom *o = (const void *)rec;
	int err;

	kineto_instant(c, ev, "[OutOfMemory]");
	kineto_device(c, o->device);
	fprintf(c->f, ",\"Bytes\":%llu", (unsigned long long)o->bytes);
	kineto_totals(c, o->allocated, o->reserved);
	err = chrome_stack_args(c, ev, m, 1);
	fputs("}}", c->f);
	if (!err && o->device != BS_MEM_DEV_CPU)
		memory_counter(c, rec->pid, rec->ts, o->device, o->allocated, &o->reserved);
	return err;
}

static int mem_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		    const struct trace_model *m)
{
	int err;

	switch (rec->type) {
	case BS_REC_MEM_ALLOC:
		err = draw_alloc(c, rec, ev, m);
		break;
	case BS_REC_MEM_OOM:
		err = draw_oom(c, rec, ev, m);
		break;
	case BS_REC_MEM_RSS:
		chrome_begin(c, 'C', "memory", "RSS", rec->pid, 0);
		fputs(",\"ts\":", c->f);
		chrome_us(c->f, rec->ts);
		fprintf(c->f, ",\"args\":{\"bytes\":%llu}}",
			(unsigned long long)((const struct bs_mem_rss *)rec)->rss);
		err = 0;
		break;
	default:
		return 0; /* growth samples: instants, by their style */
	}
	return err ? err : 1;
}

const struct chrome_family mem_chrome = {
	.draw = mem_draw,
};
