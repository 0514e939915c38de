// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stacks in the Perfetto export: the trace's interned stacks (STACK records) as Perfetto's
 * interned callstacks, on the packet sequence's incremental state like the exporter's names,
 * so a stack is written once however many events and samples name it:
 *   function_names  a frame's function (stack_format.c's text: markers included)
 *   mapping_paths   the components of a module's or source file's path
 *   mappings        a native frame's module, a Python frame's source file (so the UI's flame
 *                   graph groups by module as Perfetto's own profilers do)
 *   source_paths    a Python frame's file, with its line_number on the frame
 *   frames          one per distinct (kind, function, file, line or address)
 *   callstacks      one per (stack, taken in the kernel): frames outermost first
 * Events with a stack name it by TrackEvent.callstack_iid (the UI's slice details show it,
 * and an area selection's flame graph sums it); CPU samples are PerfSample packets (pid, tid,
 * cpu, callstack), which the UI draws on the thread as its CPU profile.
 *
 * Each new stack's interned data goes into a packet of its own, just before the packet that
 * first names it. Memory: the distinct frames, stacks and strings, never events.
 */
#include <errno.h>
#include <string.h>
#include "export_perfetto.h"
#include "stack_format.h"
#include "trace_model.h"
#include "hmap.h"

#define PKT_PERF_SAMPLE 66

#define PS_CPU		 1
#define PS_PID		 2
#define PS_TID		 3
#define PS_CALLSTACK_IID 4
#define PS_CPU_MODE	 5
#define CPU_MODE_KERNEL	 1
#define CPU_MODE_USER	 2

#define ID_FUNCTION_NAMES     5
#define ID_FRAMES	      6
#define ID_CALLSTACKS	      7
#define ID_MAPPING_PATHS      17
#define ID_SOURCE_PATHS	      18
#define ID_MAPPINGS	      19
#define ID_ANNOTATION_STRINGS 29 /* debug_annotation_string_values */

#define MAPPING_IID	  1
#define MAPPING_PATH_IDS  7
#define FRAME_IID	  1
#define FRAME_FUNCTION	  2
#define FRAME_MAPPING	  3
#define FRAME_REL_PC	  4
#define FRAME_SOURCE_PATH 5
#define FRAME_LINE	  6
#define CALLSTACK_IID	  1
#define CALLSTACK_FRAMES  2

int pf_stacks__init(struct pf *pf)
{
	pf->funcs = string_pool__new();
	pf->paths = string_pool__new();
	pf->maps = string_pool__new();
	pf->srcs = string_pool__new();
	pf->annos = string_pool__new();
	pf->frames = hmap__new(sizeof(__u64));
	pf->stacks = hmap__new(sizeof(__u64));
	return pf->funcs && pf->paths && pf->maps && pf->srcs && pf->annos && pf->frames &&
			       pf->stacks
		       ? 0
		       : -ENOMEM;
}

void pf_stacks__free(struct pf *pf)
{
	string_pool__free(pf->funcs);
	string_pool__free(pf->paths);
	string_pool__free(pf->maps);
	string_pool__free(pf->srcs);
	string_pool__free(pf->annos);
	hmap__free(pf->frames);
	hmap__free(pf->stacks);
}

/* S's iid in POOL, written as InternedData field FIELD the first time. 0: no memory. */
static __u64 pf_stacks__string(struct pf *pf, struct string_pool *pool, __u32 field, const char *s)
{
	int is_new = 0;
	__u32 iid = string_pool__intern(pool, s, &is_new);

	if (iid && is_new) {
		pb__begin(&pf->pb, field);
		pb__uint(&pf->pb, INTERNED_IID, iid);
		pb__string(&pf->pb, INTERNED_NAME, s);
		pb__end(&pf->pb);
	}
	return iid;
}

/*
 * The mapping named PATH (a module, a source file, a marker's text), written the first time
 * with its path split at '/' as Perfetto's mappings are (the reader joins the parts).
 */
static __u64 pf_stacks__mapping(struct pf *pf, const char *path)
{
	__u64 parts[64];
	char part[256];
	int is_new = 0, n = 0;
	__u32 iid = string_pool__intern(pf->maps, path, &is_new);
	const char *p = path, *slash;

	if (!iid || !is_new)
		return iid;
	while (*p && n < (int)(sizeof(parts) / sizeof(parts[0]))) {
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		slash = strchr(p, '/');
		len = slash ? (size_t)(slash - p) : strlen(p);
		if (len >= sizeof(part))
			len = sizeof(part) - 1;
		memcpy(part, p, len);
		part[len] = 0;
		parts[n] = pf_stacks__string(pf, pf->paths, ID_MAPPING_PATHS, part);
		if (!parts[n])
			return 0;
		n++;
		p += slash ? (size_t)(slash - p) : strlen(p);
	}
	pb__begin(&pf->pb, ID_MAPPINGS);
	pb__uint(&pf->pb, MAPPING_IID, iid);
	for (int i = 0; i < n; i++)
		pb__uint(&pf->pb, MAPPING_PATH_IDS, parts[i]);
	pb__end(&pf->pb);
	return iid;
}

/* A frame's identity: what names it and where it is (the line in Python, else the address). */
static struct hkey frame_key(const struct bs_frame *f)
{
	__u64 k[2];

	stack_frame__key(f, k);
	return (struct hkey){ k[0], k[1] };
}

/* F's frame iid, its function, mapping and frame written the first time. 0: no memory. */
static __u64 pf_stacks__frame(struct pf *pf, const struct bs_frame *f, const struct trace_model *m)
{
	__u64 *iid = hmap__get(pf->frames, frame_key(f), 1);
	__u64 func, map, src = 0;
	const char *file;
	char buf[512];
	int named;

	if (!iid)
		return 0;
	if (*iid)
		return *iid;
	file = f->kind == STACK_FRAME_KERNEL ? "[kernel.kallsyms]" : stack_frame__file(f, m);
	func = pf_stacks__string(pf, pf->funcs, ID_FUNCTION_NAMES,
				 stack_frame__func(f, m, buf, sizeof(buf)));
	/* A Python frame whose code was never named (docs/STACKS.md) has no source file. */
	named = *file != 0;
	if (f->kind == BS_FRAME_PYTHON && named)
		src = pf_stacks__string(pf, pf->srcs, ID_SOURCE_PATHS, file);
	if (!named)
		file = "[unknown]";
	map = pf_stacks__mapping(pf, file);
	if (!func || !map || (f->kind == BS_FRAME_PYTHON && named && !src))
		return 0;
	*iid = hmap__count(pf->frames);
	pb__begin(&pf->pb, ID_FRAMES);
	pb__uint(&pf->pb, FRAME_IID, *iid);
	pb__uint(&pf->pb, FRAME_FUNCTION, func);
	pb__uint(&pf->pb, FRAME_MAPPING, map);
	/* Python: the line, so that two lines of one function stay two frames. */
	pb__uint(&pf->pb, FRAME_REL_PC, f->kind == BS_FRAME_PYTHON ? f->line : f->addr);
	if (src) {
		pb__uint(&pf->pb, FRAME_SOURCE_PATH, src);
		pb__uint(&pf->pb, FRAME_LINE, f->line);
	}
	pb__end(&pf->pb);
	return *iid;
}

int pf__callstack(struct pf *pf, const struct trace_stack *s, int kernel, __u64 ts,
		  const struct trace_model *m, __u64 *iid)
{
	__u64 *known, frames[BS_STACK_MAX_FRAMES + 2];
	__u32 n = 0;

	*iid = 0;
	if (!s && !kernel)
		return 0;
	known = hmap__get(pf->stacks, (struct hkey){ s ? s->id : 0, !!kernel }, 1);
	if (!known)
		return -ENOMEM;
	if (*known) {
		*iid = *known;
		return 0;
	}
	pf__packet_begin(pf, ts, SEQ_NEEDS_INCREMENTAL_STATE);
	pb__begin(&pf->pb, PKT_INTERNED_DATA);
	/* Perfetto's order: the outermost frame first. */
	if (s && (s->flags & BS_STACK_TRUNCATED))
		frames[n++] = pf_stacks__frame(pf, &stack_frame_truncated, m);
	for (__u32 i = s ? s->nframes : 0; i-- > 0 && n < BS_STACK_MAX_FRAMES + 1;)
		frames[n++] = pf_stacks__frame(pf, &s->frames[i], m);
	if (kernel)
		frames[n++] = pf_stacks__frame(pf, &stack_frame_kernel, m);
	for (__u32 i = 0; i < n; i++)
		if (!frames[i])
			return -ENOMEM;
	*known = *iid = hmap__count(pf->stacks);
	pb__begin(&pf->pb, ID_CALLSTACKS);
	pb__uint(&pf->pb, CALLSTACK_IID, *iid);
	for (__u32 i = 0; i < n; i++)
		pb__uint(&pf->pb, CALLSTACK_FRAMES, frames[i]);
	pb__end(&pf->pb);
	pb__end(&pf->pb);
	return pf__packet_end(pf);
}

int pf__sample(struct pf *pf, const struct bs_hdr *rec, const struct event *ev,
	       const struct trace_model *m)
{
	struct pb *pb = &pf->pb;
	__u64 iid;
	int err;

	/* The thread's track, so the process and thread are named where the samples show. */
	err = pf__thread_track(pf, ev, m, &iid);
	if (!err)
		err = pf__callstack(pf, ev->stack, ev->stack_in_kernel, ev->ts, m, &iid);
	if (err)
		return err;
	pf__packet_begin(pf, ev->ts, SEQ_NEEDS_INCREMENTAL_STATE);
	pb__begin(pb, PKT_PERF_SAMPLE);
	pb__uint(pb, PS_CPU, rec->cpu);
	pb__uint(pb, PS_PID, ev->pid);
	pb__uint(pb, PS_TID, ev->tid);
	if (iid)
		pb__uint(pb, PS_CALLSTACK_IID, iid);
	pb__uint(pb, PS_CPU_MODE, ev->stack_in_kernel ? CPU_MODE_KERNEL : CPU_MODE_USER);
	pb__end(pb);
	return pf__packet_end(pf);
}

int pf__stack_strings(struct pf *pf, const struct trace_stack *s, __u64 ts,
		      const struct trace_model *m, __u64 *iids)
{
	__u32 n = s->nframes + !!(s->flags & BS_STACK_TRUNCATED);
	int is_new, open = 0;
	char buf[1024];

	for (__u32 i = 0; i < n; i++) {
		const char *text = i < s->nframes
					   ? stack_frame__line(&s->frames[i], m, buf, sizeof(buf))
					   : "[truncated]";

		iids[i] = string_pool__intern(pf->annos, text, &is_new);
		if (!iids[i])
			return -ENOMEM;
		if (!is_new)
			continue;
		if (!open) {
			pf__packet_begin(pf, ts, SEQ_NEEDS_INCREMENTAL_STATE);
			pb__begin(&pf->pb, PKT_INTERNED_DATA);
			open = 1;
		}
		pb__begin(&pf->pb, ID_ANNOTATION_STRINGS);
		pb__uint(&pf->pb, INTERNED_IID, iids[i]);
		pb__string(&pf->pb, INTERNED_NAME, text);
		pb__end(&pf->pb);
	}
	if (!open)
		return 0;
	pb__end(&pf->pb);
	return pf__packet_end(pf);
}
