// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Perfetto export: a protobuf `Trace` (perfetto_trace.proto) streamed packet by packet, for
 * ui.perfetto.dev and trace_processor.
 *
 * Track layout (docs/EXPORT.md): a process track per pid, a thread track per (pid, tid) that
 * carries the thread's instants (fork, exec, exit, comm...), and under each thread one child
 * track per event kind that has durations ("syscalls", "off-CPU", ...): Perfetto nests the
 * slices of one track by time, and a thread's system calls and off-CPU intervals overlap, so
 * they cannot share one. Events of no thread (pid 0, tid 0: loss markers) go on a root track
 * per kind.
 *
 * Every event is written the moment it is read: a slice as a BEGIN packet at ts and an END
 * packet at ts + dur. Trace processor sorts packets by timestamp before it builds slices, so
 * file order does not matter; what must hold is that slices on one track nest, which the
 * per-kind tracks give. Names (event names, categories = kinds, argument keys) are interned
 * on one packet sequence, so each is written once. Memory is O(processes + threads x kinds +
 * distinct names), never O(events).
 *
 * Kinds whose style says on_thread (API calls: cuda, nccl) are the exception: they go on the
 * thread track itself, as the slices of a thread do in every Perfetto and Chrome trace. Calls
 * of one thread nest by time (a driver call made by the runtime, cudaLaunchKernel made inside
 * ncclAllReduce, ncclBroadcast inside ncclBcast), so they share a track and the UI draws each
 * call under its caller.
 *
 * Nothing here knows a family: a kind's track name, description and nesting are its decoder's
 * style (struct export_style; a kind without one gets a track named after itself), and what a
 * family shows beyond that is its description in the export model (export_model.h), drawn in
 * bpfsight's own view by export_perfetto_model.c: GPU work on per-device stream tracks, NVTX on
 * tracks of its own, flows from launching calls to their GPU work, the loss, GPU busy and GIL
 * contention counters.
 *
 * Stacks (export_perfetto_stack.c) are any event's: ev->stack becomes the event's interned
 * callstack, a GIL wait's holder_stack an annotation, and a kind whose style says `sample`
 * becomes PerfSample packets instead of instants.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "export_perfetto.h"
#include "stack_format.h"
#include "trace_model.h"
#include "hmap.h"

static int pf__write(struct pf *pf, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;
	int e;

	if (pf->gz) {
		while (len) {
			unsigned int part = len > (1u << 30) ? 1u << 30 : (unsigned int)len;

			if (gzwrite(pf->gz, p, part) != (int)part) {
				gzerror(pf->gz, &e);
				return e == Z_ERRNO && errno ? -errno : -EIO;
			}
			p += part;
			len -= part;
		}
		return 0;
	}
	while (len) {
		n = write(pf->fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static int pf__flush(struct pf *pf)
{
	int err = pb__err(&pf->pb);

	if (err)
		return err;
	err = pf__write(pf, pf->pb.buf, pf->pb.len);
	pb__reset(&pf->pb);
	return err;
}

int pf__packet_end(struct pf *pf)
{
	pb__end(&pf->pb);
	if (pb__err(&pf->pb))
		return pb__err(&pf->pb);
	return pf->pb.len >= PF_FLUSH_BYTES ? pf__flush(pf) : 0;
}

void pf__packet_begin(struct pf *pf, __u64 ts, __u32 flags)
{
	pb__begin(&pf->pb, TRACE_PACKET);
	pb__uint(&pf->pb, PKT_TIMESTAMP, ts);
	pb__uint(&pf->pb, PKT_SEQ_ID, PF_SEQ_ID);
	if (flags)
		pb__uint(&pf->pb, PKT_SEQUENCE_FLAGS, flags);
}

static void pf__clock(struct pb *pb, __u32 id, __u64 ts)
{
	pb__begin(pb, CLOCKS_CLOCK);
	pb__uint(pb, CLOCK_ID, id);
	pb__uint(pb, CLOCK_TIMESTAMP, ts);
	pb__end(pb);
}

/*
 * The clocks read together at start (and at the end): they let the UI show wall time and
 * line the trace up with others. MONOTONIC is the trace's own clock, so the UI's timestamps
 * are dump's. The first packet also clears the sequence's incremental state (interning) and
 * sets the default clock of every later packet.
 */
static int pf__clock_snapshot(struct pf *pf, const struct trace_clocks *c, int first)
{
	struct pb *pb = &pf->pb;

	pb__begin(pb, TRACE_PACKET);
	pb__uint(pb, PKT_SEQ_ID, PF_SEQ_ID);
	pb__begin(pb, PKT_CLOCK_SNAPSHOT);
	if (c && c->mono_ns) {
		pf__clock(pb, BUILTIN_CLOCK_MONOTONIC, c->mono_ns);
		pf__clock(pb, BUILTIN_CLOCK_BOOTTIME, c->boottime_ns);
		pf__clock(pb, BUILTIN_CLOCK_REALTIME, c->realtime_ns);
	}
	pb__uint(pb, CLOCKS_PRIMARY_CLOCK, BUILTIN_CLOCK_MONOTONIC);
	pb__end(pb);
	if (first) {
		pb__uint(pb, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
		pb__begin(pb, PKT_DEFAULTS);
		pb__uint(pb, DEFAULTS_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_MONOTONIC);
		pb__end(pb);
	}
	return pf__packet_end(pf);
}

static struct pf_kind *pf__kind(struct pf *pf, const char *kind, __u32 *idx)
{
	__u32 i;

	for (i = 0; i < pf->nkinds; i++)
		if (pf->kinds[i].kind == kind || !strcmp(pf->kinds[i].kind, kind))
			goto found;
	if (pf->nkinds == PF_MAX_KINDS)
		return NULL;
	pf->kinds[i].kind = kind;
	pf->kinds[i].style = family__kind_style(kind);
	pf->nkinds++;
found:
	*idx = i;
	return &pf->kinds[i];
}

static int pf__describe_process(struct pf *pf, __u64 ts, __u64 uuid, __u32 pid, const char *name,
				const char *cmdline)
{
	struct pb *pb = &pf->pb;

	pf__packet_begin(pf, ts, 0);
	pb__begin(pb, PKT_TRACK_DESCRIPTOR);
	pb__uint(pb, TD_UUID, uuid);
	pb__begin(pb, TD_PROCESS);
	pb__int(pb, PD_PID, (__s32)pid);
	/* The model keeps the command line space-joined; one element shows the same. */
	if (cmdline && *cmdline)
		pb__string(pb, PD_CMDLINE, cmdline);
	if (name && *name)
		pb__string(pb, PD_PROCESS_NAME, name);
	pb__end(pb);
	pb__end(pb);
	return pf__packet_end(pf);
}

static int pf__describe_thread(struct pf *pf, __u64 ts, __u64 uuid, __u64 parent, __u32 pid,
			       __u32 tid, const char *name)
{
	struct pb *pb = &pf->pb;

	pf__packet_begin(pf, ts, 0);
	pb__begin(pb, PKT_TRACK_DESCRIPTOR);
	pb__uint(pb, TD_UUID, uuid);
	pb__uint(pb, TD_PARENT_UUID, parent);
	pb__begin(pb, TD_THREAD);
	pb__int(pb, THD_PID, (__s32)pid);
	pb__int(pb, THD_TID, tid);
	if (name && *name)
		pb__string(pb, THD_THREAD_NAME, name);
	pb__end(pb);
	pb__end(pb);
	return pf__packet_end(pf);
}

int pf__describe_named(struct pf *pf, __u64 ts, __u64 uuid, __u64 parent, const char *name,
		       const char *desc)
{
	struct pb *pb = &pf->pb;

	pf__packet_begin(pf, ts, 0);
	pb__begin(pb, PKT_TRACK_DESCRIPTOR);
	pb__uint(pb, TD_UUID, uuid);
	if (parent)
		pb__uint(pb, TD_PARENT_UUID, parent);
	pb__string(pb, TD_NAME, name);
	if (desc)
		pb__string(pb, TD_DESCRIPTION, desc);
	pb__end(pb);
	return pf__packet_end(pf);
}

static int pf__describe_track(struct pf *pf, __u64 ts, __u64 uuid, __u64 parent,
			      const struct pf_kind *k)
{
	return pf__describe_named(pf, ts, uuid, parent,
				  k->style && k->style->track ? k->style->track : k->kind,
				  k->style ? k->style->desc : NULL);
}

/*
 * The process and thread tracks of EV, described the first time they are used and again
 * when the model learnt a new name (exec, prctl(PR_SET_NAME)). Returns the thread's uuid in
 * *uuid, or a negative errno.
 */
int pf__process_track(struct pf *pf, __u32 pid, __u64 ts, const struct trace_model *m, __u64 *uuid)
{
	const char *pname = trace_model__process_name(m, pid);
	const char *cmdline = trace_model__cmdline(m, pid);
	struct pf_proc *p;
	int err;

	p = hmap__get(pf->procs, (struct hkey){ .a = pid }, 1);
	if (!p)
		return -ENOMEM;
	/* A name the model forgot (exec clears the command line until the next snapshot)
	 * keeps the last one said: only news is described again. */
	if (!p->uuid || (pname && pname != p->name) || (cmdline && cmdline != p->cmdline)) {
		if (!p->uuid)
			p->uuid = pf->next_uuid++;
		if (pname)
			p->name = pname;
		if (cmdline)
			p->cmdline = cmdline;
		err = pf__describe_process(pf, ts, p->uuid, pid, p->name, p->cmdline);
		if (err)
			return err;
	}
	*uuid = p->uuid;
	return 0;
}

int pf__thread_track_at(struct pf *pf, __u32 pid, __u32 tid, __u64 ts, const struct trace_model *m,
			__u64 *uuid)
{
	const char *tname = trace_model__thread_name(m, tid);
	struct pf_thread *t;
	__u64 puuid;
	int err;

	if (!tname && tid == pid)
		tname = trace_model__process_name(m, pid);
	err = pf__process_track(pf, pid, ts, m, &puuid);
	if (err)
		return err;
	t = hmap__get(pf->threads, (struct hkey){ .a = (__u64)pid << 32 | tid }, 1);
	if (!t)
		return -ENOMEM;
	if (!t->uuid || (tname && t->name != tname)) {
		if (!t->uuid)
			t->uuid = pf->next_uuid++;
		if (tname)
			t->name = tname;
		err = pf__describe_thread(pf, ts, t->uuid, puuid, pid, tid, tname);
		if (err)
			return err;
	}
	*uuid = t->uuid;
	return 0;
}

int pf__thread_track(struct pf *pf, const struct event *ev, const struct trace_model *m,
		     __u64 *uuid)
{
	return pf__thread_track_at(pf, ev->pid, ev->tid, ev->ts, m, uuid);
}

/* Do EV's slices go on its thread's own track (export_style.on_thread)? */
static int pf__on_thread(struct pf *pf, const struct event *ev)
{
	const struct pf_kind *k;
	__u32 idx;

	k = pf__kind(pf, ev->kind ? ev->kind : "event", &idx);
	return k && k->style && k->style->on_thread;
}

/* The track of EV's kind under PARENT (a thread track, or 0 for a root track). */
static int pf__kind_track(struct pf *pf, const struct event *ev, __u64 parent, __u64 *uuid)
{
	struct pf_kind *k;
	__u64 *u;
	__u32 idx;

	k = pf__kind(pf, ev->kind ? ev->kind : "event", &idx);
	if (!k)
		return -E2BIG;
	u = hmap__get(
		pf->children,
		(struct hkey){ .a = parent ? (__u64)ev->pid << 32 | ev->tid : 0, .b = idx + 1 }, 1);
	if (!u)
		return -ENOMEM;
	if (!*u) {
		*u = pf->next_uuid++;
		*uuid = *u;
		return pf__describe_track(pf, ev->ts, *uuid, parent, k);
	}
	*uuid = *u;
	return 0;
}

/* The iid of S in POOL; a new one is queued for the packet's InternedData. 0 = no memory. */
static __u32 pf__intern(struct pf *pf, struct string_pool *pool, __u32 field, const char *s)
{
	int is_new = 0;
	__u32 iid = string_pool__intern(pool, s ? s : "", &is_new);

	if (iid && is_new && pf->nfresh < sizeof(pf->fresh) / sizeof(pf->fresh[0]))
		pf->fresh[pf->nfresh++] = (struct pf_intern){ field, iid, s ? s : "" };
	return iid;
}

static void pf__interned_data(struct pf *pf)
{
	struct pb *pb = &pf->pb;
	__u32 i;

	if (!pf->nfresh)
		return;
	pb__begin(pb, PKT_INTERNED_DATA);
	for (i = 0; i < pf->nfresh; i++) {
		pb__begin(pb, pf->fresh[i].field);
		pb__uint(pb, INTERNED_IID, pf->fresh[i].iid);
		pb__string(pb, INTERNED_NAME, pf->fresh[i].str);
		pb__end(pb);
	}
	pb__end(pb);
	pf->nfresh = 0;
}

static int pf__annotation(struct pf *pf, const struct event_arg *a)
{
	struct pb *pb = &pf->pb;
	__u32 iid = pf__intern(pf, pf->keys, ID_DEBUG_ANNOTATION_NAMES, a->key);
	char bit[16];

	if (!iid)
		return -ENOMEM;
	pb__begin(pb, TE_DEBUG_ANNOTATIONS);
	pb__uint(pb, DA_NAME_IID, iid);
	switch (a->kind) {
	case EVENT_ARG_U64:
		pb__uint(pb, DA_UINT_VALUE, a->u);
		break;
	case EVENT_ARG_S64:
		pb__int(pb, DA_INT_VALUE, a->s);
		break;
	case EVENT_ARG_HEX:
		/* The UI prints pointer values in hex, as dump does. */
		pb__uint(pb, DA_POINTER_VALUE, a->u);
		break;
	case EVENT_ARG_STR:
		pb__string(pb, DA_STRING_VALUE, a->str);
		break;
	case EVENT_ARG_BOOL:
		pb__uint(pb, DA_BOOL_VALUE, a->u);
		break;
	case EVENT_ARG_DOUBLE:
		pb__double(pb, DA_DOUBLE_VALUE, a->d);
		break;
	case EVENT_ARG_DIM3:
		/* Unnamed array elements: [x, y, z], as dump writes it. */
		for (int d = 0; d < 3; d++) {
			pb__begin(pb, DA_ARRAY_VALUES);
			pb__uint(pb, DA_UINT_VALUE, a->dim[d]);
			pb__end(pb);
		}
		break;
	case EVENT_ARG_FLAGS:
		for (__u32 b = 0; b < 32; b++) {
			if (!(a->flags.bits & (1u << b)))
				continue;
			pb__begin(pb, DA_ARRAY_VALUES);
			pb__string(pb, DA_STRING_VALUE,
				   event_flags__name(&a->flags, b, bit, sizeof(bit)));
			pb__end(pb);
		}
		break;
	}
	pb__end(pb);
	return 0;
}

/*
 * A GIL wait's holder stack: a TrackEvent has one callstack (the waiter's), so the holder's
 * frames go in an annotation, innermost first, one "FILE(LINE): FUNC" string each, interned
 * (IIDS: pf__stack_strings's).
 */
static int pf__holder_annotation(struct pf *pf, const struct trace_stack *s, const __u64 *iids)
{
	struct pb *pb = &pf->pb;
	__u32 iid = pf__intern(pf, pf->keys, ID_DEBUG_ANNOTATION_NAMES, "holder_stack");

	if (!iid)
		return -ENOMEM;
	pb__begin(pb, TE_DEBUG_ANNOTATIONS);
	pb__uint(pb, DA_NAME_IID, iid);
	for (__u32 i = 0; i < s->nframes + (__u32) !!(s->flags & BS_STACK_TRUNCATED); i++) {
		pb__begin(pb, DA_ARRAY_VALUES);
		pb__uint(pb, DA_STRING_IID, iids[i]);
		pb__end(pb);
	}
	pb__end(pb);
	return 0;
}

int pf__event_start(struct pf *pf, const struct event *ev, __u64 track, __u64 flow_out,
		    __u64 flow_in)
{
	struct pb *pb = &pf->pb;
	__u32 name_iid, cat_iid, i;
	__u64 stack_iid = 0, holder[BS_STACK_MAX_FRAMES + 1];
	const struct trace_stack *hs = pf->model ? ev->holder_stack : NULL;
	int err;

	/* Its stacks' interned data first, in packets of their own. */
	if (ev->stack && pf->model) {
		err = pf__callstack(pf, ev->stack, ev->stack_in_kernel, ev->ts, pf->model,
				    &stack_iid);
		if (err)
			return err;
	}
	if (hs && hs->nframes > BS_STACK_MAX_FRAMES)
		hs = NULL; /* the model keeps at most that many */
	if (hs && (err = pf__stack_strings(pf, hs, ev->ts, pf->model, holder)))
		return err;
	pf->nfresh = 0;
	name_iid = pf__intern(pf, pf->names, ID_EVENT_NAMES, ev->name);
	cat_iid = pf__intern(pf, pf->cats, ID_EVENT_CATEGORIES, ev->kind);
	if (!name_iid || !cat_iid)
		return -ENOMEM;
	pf__packet_begin(pf, ev->ts, SEQ_NEEDS_INCREMENTAL_STATE);
	pb__begin(pb, PKT_TRACK_EVENT);
	pb__uint(pb, TE_TYPE, ev->dur ? TE_TYPE_SLICE_BEGIN : TE_TYPE_INSTANT);
	pb__uint(pb, TE_TRACK_UUID, track);
	pb__uint(pb, TE_CATEGORY_IIDS, cat_iid);
	pb__uint(pb, TE_NAME_IID, name_iid);
	for (i = 0; i < ev->nargs && i < EVENT_MAX_ARGS; i++) {
		err = pf__annotation(pf, &ev->args[i]);
		if (err)
			return err;
	}
	if (hs) {
		err = pf__holder_annotation(pf, hs, holder);
		if (err)
			return err;
	}
	if (stack_iid)
		pb__uint(pb, TE_CALLSTACK_IID, stack_iid);
	if (flow_out)
		pb__fixed64(pb, TE_FLOW_IDS, flow_out);
	if (flow_in)
		pb__fixed64(pb, TE_TERMINATING_FLOWS, flow_in);
	pb__end(pb);
	/* After the event in the packet, before it in meaning: readers look fields up by id. */
	pf__interned_data(pf);
	return pf__packet_end(pf);
}

int pf__event_end(struct pf *pf, __u64 ts, __u64 track)
{
	struct pb *pb = &pf->pb;

	pf__packet_begin(pf, ts, 0);
	pb__begin(pb, PKT_TRACK_EVENT);
	pb__uint(pb, TE_TYPE, TE_TYPE_SLICE_END);
	pb__uint(pb, TE_TRACK_UUID, track);
	pb__end(pb);
	return pf__packet_end(pf);
}

int pf__counter(struct pf *pf, __u64 ts, __u64 track, __s64 v, const double *d)
{
	struct pb *pb = &pf->pb;

	pf__packet_begin(pf, ts, 0);
	pb__begin(pb, PKT_TRACK_EVENT);
	pb__uint(pb, TE_TYPE, TE_TYPE_COUNTER);
	pb__uint(pb, TE_TRACK_UUID, track);
	if (d)
		pb__double(pb, TE_DOUBLE_COUNTER, *d);
	else
		pb__int(pb, TE_COUNTER_VALUE, v);
	pb__end(pb);
	return pf__packet_end(pf);
}

int pf__describe_counter(struct pf *pf, __u64 ts, __u64 uuid, __u64 parent, const char *name,
			 const char *desc, __u32 unit)
{
	struct pb *pb = &pf->pb;

	pf__packet_begin(pf, ts, 0);
	pb__begin(pb, PKT_TRACK_DESCRIPTOR);
	pb__uint(pb, TD_UUID, uuid);
	if (parent)
		pb__uint(pb, TD_PARENT_UUID, parent);
	pb__string(pb, TD_NAME, name);
	pb__string(pb, TD_DESCRIPTION, desc);
	pb__begin(pb, TD_COUNTER);
	if (unit)
		pb__uint(pb, CD_UNIT, unit);
	pb__end(pb);
	pb__end(pb);
	return pf__packet_end(pf);
}

int pf__lanes_pick(struct pf *pf, struct pf_lanes *l, __u64 start, __u64 end, __u64 parent,
		   const char *name, const char *desc, __u64 *uuid)
{
	__u32 i;
	int err;

	for (i = 0; i < l->n && l->end[i] > start; i++)
		;
	if (i == l->n && l->n < PF_MAX_LANES) {
		l->uuid[i] = pf->next_uuid++;
		l->end[i] = 0;
		l->n++;
		err = pf__describe_named(pf, start, l->uuid[i], parent, name, desc);
		if (err)
			return err;
	} else if (i == l->n) {
		i = l->n - 1;
	}
	if (end > l->end[i])
		l->end[i] = end;
	*uuid = l->uuid[i];
	return 0;
}

static void pf__free(struct pf *pf)
{
	if (!pf)
		return;
	if (pf->gz)
		gzclose(pf->gz);
	else if (pf->fd >= 0)
		close(pf->fd);
	pb__free(&pf->pb);
	string_pool__free(pf->names);
	string_pool__free(pf->cats);
	string_pool__free(pf->keys);
	pf_stacks__free(pf);
	hmap__free(pf->procs);
	hmap__free(pf->threads);
	hmap__free(pf->children);
	ex_sink__fini(&pf->sink);
	pf_model__free(pf);
	free(pf);
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

static void *perfetto_open(const char *out, const struct trace_meta *meta,
			   const struct export_opts *opts, int *errp)
{
	struct pf *pf = calloc(1, sizeof(*pf));
	int err = -ENOMEM;

	if (!pf)
		goto fail;
	pf->fd = -1;
	pf->next_uuid = 1;
	if (pb__init(&pf->pb, 2 * PF_FLUSH_BYTES))
		goto fail;
	pf->names = string_pool__new();
	pf->cats = string_pool__new();
	pf->keys = string_pool__new();
	pf->procs = hmap__new(sizeof(struct pf_proc));
	pf->threads = hmap__new(sizeof(struct pf_thread));
	pf->children = hmap__new(sizeof(__u64));
	if (ex_sink__init(&pf->sink, &pf_sink_ops, meta, EX_OWN))
		goto fail;
	pf->nfam = pf->sink.nfam;
	if (!pf->names || !pf->cats || !pf->keys || !pf->procs || !pf->threads || !pf->children ||
	    pf_model__init(pf) || pf_stacks__init(pf))
		goto fail;
	for (int i = 0; i < pf->nfam; i++)
		if ((err = ex_sink__open_one(&pf->sink, i)))
			goto fail;
	err = -ENOMEM;
	/* cmd_export removed any old OUT; never write through a symlink planted meanwhile. */
	pf->fd = export__create(out);
	if (pf->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (has_suffix(out, ".gz")) {
		/* Level 1: most of the size gain at a fraction of the default level's time. */
		pf->gz = gzdopen(pf->fd, "wb1");
		if (!pf->gz)
			goto fail;
		pf->fd = -1; /* gzclose closes it */
		gzbuffer(pf->gz, 256 * 1024);
	}
	pf->start_mono = meta ? meta->start.mono_ns : 0;
	err = pf__clock_snapshot(pf, meta ? &meta->start : NULL, 1);
	if (err)
		goto fail;
	return pf;

fail:
	pf__free(pf);
	*errp = err;
	return NULL;
}

void pf__flows(struct pf *pf, const struct bs_hdr *rec, __u64 *out, __u64 *in)
{
	ex_flows(&pf->sink, rec, out, in);
}

int pf__draw(struct pf *pf, const struct bs_hdr *rec, const struct event *ev,
	     const struct trace_model *m)
{
	__u64 thread = 0, track, flow_out, flow_in;
	const struct pf_kind *k;
	__u32 kidx;
	int err = 0;

	k = pf__kind(pf, ev->kind ? ev->kind : "event", &kidx);
	if (k && k->style && k->style->sample && (ev->pid || ev->tid)) {
		/* A sample of a thread's stack: Perfetto's own sample packet, not a slice. */
		err = pf__sample(pf, rec, ev, m);
	} else {
		if (ev->pid || ev->tid) {
			err = pf__thread_track(pf, ev, m, &thread);
			if (err)
				return err;
		}
		/* Instants and API calls of a thread go on its own track; other intervals on
		 * their kind's. */
		if (thread && (!ev->dur || pf__on_thread(pf, ev)))
			track = thread;
		else if ((err = pf__kind_track(pf, ev, thread, &track)))
			return err;
		pf__flows(pf, rec, &flow_out, &flow_in);
		err = pf__event_start(pf, ev, track, flow_out, flow_in);
		if (!err && ev->dur)
			err = pf__event_end(pf, ev->ts + ev->dur, track);
	}
	return err;
}

static int perfetto_record(void *st, const struct bs_hdr *rec, const struct event *ev,
			   const struct trace_model *m)
{
	struct pf *pf = st;
	int err, fam;

	pf->model = m;
	pf->sink.model = m;
	err = ex_sink__observe(&pf->sink, rec);
	family__decoder_at(rec->type, &fam);
	if (!err)
		err = ex_sink__record(&pf->sink, fam, rec, ev);
	if (!err && ev)
		err = pf__draw(pf, rec, ev, m);
	return err < 0 ? err : 0;
}

static int perfetto_finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct pf *pf = st;
	int err = 0, e;

	pf->model = m;
	pf->sink.model = m;
	/* Last registered first, as teardown goes (the GPU's counters before the GIL's). */
	for (int i = pf->nfam - 1; !err && i >= 0; i--)
		err = ex_sink__finish_one(&pf->sink, i);
	if (!err && status && status->has_end)
		err = pf__clock_snapshot(pf, &status->end, 0);
	if (!err)
		err = pf__flush(pf);
	if (pf->gz) {
		e = gzclose(pf->gz);
		pf->gz = NULL;
		if (!err && e != Z_OK)
			err = e == Z_ERRNO && errno ? -errno : -EIO;
	} else if (pf->fd >= 0) {
		e = close(pf->fd);
		pf->fd = -1;
		if (!err && e)
			err = -errno;
	}
	pf__free(pf);
	return err;
}

static void perfetto_abort(void *st)
{
	pf__free(st);
}

const struct exporter export_perfetto = {
	.format = "perfetto",
	.desc = "Perfetto protobuf trace, for ui.perfetto.dev (.pftrace; .gz compresses)",
	.suffix = ".pftrace",
	.open = perfetto_open,
	.record = perfetto_record,
	.finish = perfetto_finish,
	.abort = perfetto_abort,
};
