// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The gpu family's events in the Chrome export, as Kineto (torch.profiler) writes them, so
 * Holistic Trace Analysis reads them:
 *   - kernels, copies and memsets: "ph":"X" of cat "kernel", "gpu_memcpy", "gpu_memset" on
 *     pid = device, tid = stream (named "GPU N" and "stream S"), with dump's args plus Kineto's
 *     "correlation", "registers per thread", "shared memory", "memory bandwidth (GB/s)"; copies
 *     and memsets under Kineto's names ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)":
 *     HTA tells memory work from compute by them), not nsys's that dump, SQLite and stats keep;
 *   - one event per launching call, as Kineto writes one runtime event per call: the cuda_api
 *     event when one was matched to CUPTI's API record of the call (the API record is then
 *     not written), else the API record itself. It carries the same "correlation" as its GPU
 *     work, and an "ac2g" flow goes from it ("ph":"s") to its GPU work ("ph":"f", "bp":"e")
 *     (the flow of a cuda_api event is this family's flow hook, drawn with the event).
 * The NVTX ranges projected onto these streams (gpu_user_annotation) are the nvtx family's
 * (export_chrome_nvtx.c).
 *
 * Kineto's correlation is CUPTI's id, which both sides know. Here the launching call is
 * written before its GPU work is read (the export streams), and CUPTI's id is not in the
 * call's record: both sides carry instead the id made from what they share, the launching
 * thread and the call's entry time (gpu_flow_id: 53 bits, exact in JSON). An operation whose
 * launching call is not known keeps CUPTI's id as its correlation (Kineto's, never 0), so every
 * GPU event has one. CUPTI's own id is the GPU event's "cupti_correlation".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "export_chrome.h"
#include "gpu_decode.h"
#include "gpu.h"
#include "hmap.h"

static const char *gpu_cat(__u16 type)
{
	switch (type) {
	case BS_REC_GPU_KERNEL:
		return "kernel";
	case BS_REC_GPU_MEMCPY:
		return "gpu_memcpy";
	default:
		return "gpu_memset";
	}
}

/* CUpti_ActivityMemoryKind 0..7 as Kineto names them (its memoryKindString). */
static const char *kineto_mem_kind(__u32 kind)
{
	static const char *const names[] = {
		"Unknown", "Pageable", "Pinned",	"Device",
		"Array",   "Managed",  "Device Static", "Managed Static",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "Unrecognized";
}

/*
 * Kineto's name of a copy or memset ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)")
 * into BUF; NULL for a kernel or a record too short.
 */
static const char *kineto_name(const struct bs_hdr *rec, char *buf, size_t len)
{
	const struct bs_gpu_memcpy *c = (const void *)rec;
	const struct bs_gpu_memset *s = (const void *)rec;
	const char *kind;

	if (rec->type == BS_REC_GPU_MEMCPY && rec->size >= sizeof(*c)) {
		kind = gpu_copy_kind_name(c->copy_kind);
		snprintf(buf, len, "Memcpy %s (%s -> %s)",
			 strcmp(kind, "unknown") ? kind : "<unknown>", kineto_mem_kind(c->src_kind),
			 kineto_mem_kind(c->dst_kind));
		return buf;
	}
	if (rec->type == BS_REC_GPU_MEMSET && rec->size >= sizeof(*s)) {
		snprintf(buf, len, "Memset (%s)", kineto_mem_kind(s->mem_kind));
		return buf;
	}
	return NULL;
}

/* A launching call (cuda family) starts a flow to its GPU work. */
static __u64 gpu_launch_flow(const struct bs_hdr *rec)
{
	const char *name;

	return gpu_is_launching_call(rec, &name) ? gpu_flow_id(rec->pid, rec->tid, rec->ts) : 0;
}

/* The state: {device, stream} -> u8, the GPU "threads" drawn on. */
static int gpu_open(struct chrome *c, const struct trace_meta *meta, void **st)
{
	*st = hmap__new(1);
	return *st ? 0 : -ENOMEM;
}

static void gpu_free(void *st)
{
	hmap__free(st);
}

/*
 * E (a copy of the event: its string args still point into the original, alive meanwhile)
 * with its "correlation", CUPTI's, called "cupti_correlation": Kineto's key is the flow's.
 */
static void cupti_correlation(struct event *e)
{
	for (__u32 i = 0; i < e->nargs && i < EVENT_MAX_ARGS; i++)
		if (!strcmp(e->args[i].key, "correlation"))
			e->args[i].key = "cupti_correlation";
}

static void key_u64(struct chrome *c, int *nonempty, const char *key, __u64 v)
{
	fprintf(c->f, "%s\"%s\":%llu", *nonempty ? "," : "", key, (unsigned long long)v);
	*nonempty = 1;
}

/* A kernel, copy or memset on its device and stream, and the end of its launch's flow. */
static int chrome_gpu_op(struct chrome *c, struct hmap *streams, const struct bs_hdr *rec,
			 const struct event *ev)
{
	const struct bs_gpu_kernel *k = (const void *)rec;
	const char *name;
	struct gpu_op op;
	struct event e;
	__u64 flow = 0, ext;
	char buf[64];
	int nonempty;

	if (!gpu_op__read(rec, &op))
		return 0;
	if (op.call_ts && op.flags & (BS_GPU_CALL_CUDA | BS_GPU_CALL_API))
		flow = gpu_flow_id(op.pid, op.tid, op.call_ts);
	if (!hmap__get(streams, (struct hkey){ op.device, op.stream }, 1))
		return -ENOMEM;
	name = kineto_name(rec, buf, sizeof(buf));
	chrome_complete(c, gpu_cat(op.type), name ? name : ev->name, op.device, op.stream, op.ts,
			op.dur);
	e = *ev;
	cupti_correlation(&e);
	nonempty = chrome_args_open(c, &e);
	if (nonempty < 0)
		return nonempty;
	/* Unlinked: CUPTI's id, as Kineto's, where no launching event can claim it. */
	key_u64(c, &nonempty, "correlation", flow ? flow : op.correlation);
	if (flow && (ext = chrome_external_id(c, op.pid, op.tid, op.call_ts)))
		key_u64(c, &nonempty, "External id", ext); /* the op that launched it */
	if (op.type == BS_REC_GPU_KERNEL) {
		key_u64(c, &nonempty, "registers per thread", k->registers);
		key_u64(c, &nonempty, "shared memory", (__u64)k->shmem_dynamic + k->shmem_static);
	} else if (op.dur) {
		/* bytes per ns are GB/s */
		fprintf(c->f, "%s\"memory bandwidth (GB/s)\":%.6f", nonempty ? "," : "",
			(double)op.bytes / op.dur);
	}
	fputs("}}", c->f);
	if (flow)
		chrome_flow(c, 'f', flow, op.device, op.stream, op.ts);
	return 1;
}

/*
 * CUPTI's record of a launching call, on its thread, when no cuda_api event was matched to it:
 * it is then the call's one event, and starts the flow. A matched one is left out (the
 * cuda_api event stands for the call, with the same correlation), as Kineto writes one
 * runtime event per call.
 */
static int chrome_gpu_api(struct chrome *c, const struct bs_hdr *rec, const struct event *ev)
{
	const struct bs_gpu_api *a = (const void *)rec;
	__u64 flow = gpu_flow_id(rec->pid, rec->tid, rec->ts), ext;
	struct event e = *ev;
	int nonempty;

	if (rec->size < sizeof(*a))
		return 0;
	if (a->flags & BS_GPU_CALL_CUDA)
		return 1;
	chrome_complete(c, a->domain == 1 ? "cuda_driver" : "cuda_runtime", ev->name, ev->pid,
			ev->tid, ev->ts, ev->dur);
	cupti_correlation(&e);
	nonempty = chrome_args_open(c, &e);
	if (nonempty < 0)
		return nonempty;
	key_u64(c, &nonempty, "correlation", flow);
	if ((ext = chrome_external_id(c, ev->pid, ev->tid, ev->ts)))
		key_u64(c, &nonempty, "External id", ext);
	fputs("}}", c->f);
	chrome_flow(c, 's', flow, ev->pid, ev->tid, ev->ts);
	return 1;
}

static int gpu_draw(struct chrome *c, void *st, const struct bs_hdr *rec, const struct event *ev,
		    const struct trace_model *m)
{
	switch (rec->type) {
	case BS_REC_GPU_KERNEL:
	case BS_REC_GPU_MEMCPY:
	case BS_REC_GPU_MEMSET:
		return chrome_gpu_op(c, st, rec, ev);
	case BS_REC_GPU_API:
		return chrome_gpu_api(c, rec, ev);
	default:
		return 0; /* shim status: an instant by its style */
	}
}

/* "GPU N" and "stream S" names of the GPU events' pid and tid. */
static void gpu_names(struct chrome *c, void *st)
{
	struct hmap *devices = hmap__new(1);
	struct hkey key;
	char name[32];
	size_t it = 0;

	while (hmap__next(st, &it, &key)) {
		/* Once per device (without memory, once per stream: still valid, only longer). */
		if (!devices || !hmap__get(devices, (struct hkey){ key.a, 0 }, 0)) {
			if (devices)
				hmap__get(devices, (struct hkey){ key.a, 0 }, 1);
			snprintf(name, sizeof(name), "GPU %llu", (unsigned long long)key.a);
			chrome_meta_event(c, "process_name", key.a, 0, name, 0);
			/* After every process in the viewer, as Kineto orders devices. */
			chrome_meta_event(c, "process_sort_index", key.a, 0, NULL,
					  (1ull << 32) + key.a);
		}
		snprintf(name, sizeof(name), "stream %llu", (unsigned long long)key.b);
		chrome_meta_event(c, "thread_name", key.a, key.b, name, 0);
		chrome_meta_event(c, "thread_sort_index", key.a, key.b, NULL, key.b);
	}
	hmap__free(devices);
}

const struct chrome_family gpu_chrome = {
	.open = gpu_open,
	.free = gpu_free,
	.draw = gpu_draw,
	.flow = gpu_launch_flow,
	.names = gpu_names,
};
