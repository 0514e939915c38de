// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The nvtx family in the exports (export_model.h; docs/EXPORT.md, "GPU and NVTX").
 *
 * Push/pop ranges and marks go on a named track of their thread, "NVTX" (or "NVTX: DOMAIN"),
 * as nsys draws them, so that they never break the nesting of the thread's calls; start/end
 * ranges (any concurrency, across threads) on such a track of their process, its slices may
 * overlap. Names and categories are instants by their styles. In the profiler's view, as Kineto
 * writes them: push/pop ranges "X" of cat "user_annotation" on their thread, start/end ranges
 * an async pair ("b" on the starting thread, "e" on the ending one, "id2" the range id).
 *
 * In traces of both gpu and nvtx, the profiler's view also projects each range onto the streams
 * that ran the GPU work its thread launched inside it (nvtx_proj.c, nvtx_gpu_proj_sum's
 * projection): "X" of cat "gpu_user_annotation" per (range, device, stream), from the first
 * operation's start to the last one's end, 1 ns wider on each side as Kineto draws them (so
 * they enclose their kernels in the viewers). Drawn at the end: the projection needs every range
 * and operation, the one memory use of the exports that grows with events.
 *
 * Tables: nsys's NVTX_EVENTS, with nsys's columns in nsys's order, and ENUM_NSYS_EVENT_TYPE, the
 * event types it uses (nsys's values): one row per range and mark, per name given to a thread
 * or a category, and per domain the first time a process uses it (NvtxDomainCreate). Memory:
 * the set of domains per process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export_model.h"
#include "hmap.h"
#include "nvtx.h"
#include "nvtx_decode.h"
#include "nvtx_proj.h"

/* nsys's ENUM_NSYS_EVENT_TYPE values for NVTX. */
#define NVTX_T_CATEGORY	     33
#define NVTX_T_MARK	     34
#define NVTX_T_THREAD	     39
#define NVTX_T_PUSHPOP	     59
#define NVTX_T_STARTEND	     60
#define NVTX_T_DOMAIN_CREATE 75

static const struct ex_column types_cols[] = {
	{ "id", EX_COL_INTEGER, EX_COL_NOT_NULL | EX_COL_KEY },
	EXC_TEXT("name"),
	EXC_TEXT("label"),
	{ 0 },
};
static const struct ex_table nvtx_types = { "ENUM_NSYS_EVENT_TYPE", types_cols };

/* NVTX_EVENTS' columns, by their index in it. */
enum nvtx_col {
	C_START,
	C_END,
	C_TYPE,
	C_RANGE,
	C_CATEGORY,
	C_COLOR,
	C_TEXT,
	C_TID,
	C_END_TID,
	C_TEXT_ID,
	C_DOMAIN,
	C_U64,
	C_I64,
	C_DOUBLE,
	C_U32,
	C_I32,
	C_FLOAT,
	C_NCOLS = 20,
};

static const struct ex_column events_cols[] = {
	EXC_INT_NN("start"),
	EXC_INT("end"),
	EXC_REF_NN("eventType", "ENUM_NSYS_EVENT_TYPE(id)"),
	EXC_INT("rangeId"),
	EXC_INT("category"),
	EXC_INT("color"),
	EXC_TEXT("text"),
	EXC_INT("globalTid"),
	EXC_INT("endGlobalTid"),
	EXC_REF("textId", EX_STRING_IDS),
	EXC_INT("domainId"),
	EXC_INT("uint64Value"),
	EXC_INT("int64Value"),
	EXC_REAL("doubleValue"),
	EXC_INT("uint32Value"),
	EXC_INT("int32Value"),
	EXC_REAL("floatValue"),
	EXC_INT("jsonTextId"),
	EXC_TEXT("jsonText"),
	EXC_TEXT("binaryData"),
	{ 0 },
};
static const struct ex_index events_idx[] = {
	{ "start", "start" },
	{ "globalTid", "globalTid" },
	{ 0 },
};
static const struct ex_table nvtx_events = { "NVTX_EVENTS", events_cols, .indexes = events_idx };

static const struct ex_table *const nvtx_tables[] = { &nvtx_types, &nvtx_events, NULL };

struct nvtx_export {
	struct nvtx_proj *proj; /* the profiler's view of traces that recorded the GPU too */
	struct hmap *domains;	/* tables: {pid, domain id} -> u8: NvtxDomainCreate written */
};

static void nvtx_free(void *st)
{
	struct nvtx_export *n = st;

	nvtx_proj__free(n->proj);
	hmap__free(n->domains);
	free(n);
}

static int nvtx_open(struct ex_sink *s, void **st)
{
	static const struct {
		int id;
		const char *name;
	} types[] = {
		{ NVTX_T_CATEGORY, "NvtxCategory" },
		{ NVTX_T_MARK, "NvtxMark" },
		{ NVTX_T_THREAD, "NvtxThread" },
		{ NVTX_T_PUSHPOP, "NvtxPushPopRange" },
		{ NVTX_T_STARTEND, "NvtxStartEndRange" },
		{ NVTX_T_DOMAIN_CREATE, "NvtxDomainCreate" },
	};
	struct nvtx_export *n = calloc(1, sizeof(*n));
	int err = 0;

	if (!n)
		return -ENOMEM;
	*st = n;
	if (ex_wants(s, EX_PROFILER) && ex_recorded(s->meta, "gpu") &&
	    ex_recorded(s->meta, "nvtx") && !(n->proj = nvtx_proj__new()))
		return -ENOMEM;
	if (!ex_wants(s, EX_TABLES))
		return 0;
	n->domains = hmap__new(1);
	if (!n->domains)
		return -ENOMEM;
	for (size_t i = 0; !err && i < sizeof(types) / sizeof(types[0]); i++)
		err = ex_row(s, &nvtx_types, EX_ROW_ADD,
			     (struct ex_value[]){ EX_V_INT(types[i].id), EX_V_TEXT(types[i].name),
						  EX_V_TEXT(types[i].name) },
			     NULL);
	return err;
}

/* Ranges and GPU operations (the gpu family's records) as they come, to join at the end. */
static int nvtx_observe(struct ex_sink *s, void *st, const struct bs_hdr *rec)
{
	struct nvtx_export *n = st;

	return n->proj ? nvtx_proj__add(n->proj, rec, s->model) : 0;
}

static const char *nvtx_track_name(const struct trace_model *m, __u32 domain_id, char *buf,
				   size_t len)
{
	const char *domain = nvtx_domain_name(m, domain_id);

	if (!*domain)
		return "NVTX";
	snprintf(buf, len, "NVTX: %s", domain);
	return buf;
}

/* A range or a mark on its NVTX track, each view's way. */
static int nvtx_event(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	static const struct ex_profiler annotation = { .cat = "user_annotation", .args = NULL };
	const struct bs_nvtx_range *r = (const void *)rec;
	const struct bs_nvtx_mark *k = (const void *)rec;
	int range = rec->type == BS_REC_NVTX_RANGE;
	struct ex_profiler prof = annotation;
	char name[160];
	struct ex_event e = {
		.rec = rec,
		.ev = ev,
		.on = { .kind = EX_THREAD_SUB,
			.pid = ev->pid,
			.tid = ev->tid,
			.key = range ? r->domain_id : k->domain_id,
			.name = nvtx_track_name(s->model, range ? r->domain_id : k->domain_id, name,
						sizeof(name)),
			.desc = "NVTX push/pop ranges and marks of this thread (nvtx family)." },
		.prof = &prof,
	};

	if (!range) {
		e.prof = NULL; /* a mark: an instant by its style */
	} else if (r->flags & BS_NVTX_PUSHPOP) {
		e.shape = EX_SLICE;
		prof.args = ev;
	} else {
		e.shape = EX_ASYNC;
		e.on.kind = EX_PROCESS_SUB;
		e.on.desc = "NVTX start/end ranges of this process (nvtx family): they may overlap "
			    "and cross threads.";
		e.end_tid = r->end_tid;
		e.async_id = r->range_id;
	}
	return ex_event(s, &e);
}

/* Operations of one range, grouped by (device, stream) to project it stream by stream. */
struct nvtx_projecting {
	struct ex_sink *s;
	struct nvtx_proj_op *ops;
	size_t cap;
};

static int stream_cmp(const void *x, const void *y)
{
	const struct nvtx_proj_op *a = x, *b = y;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return (a->stream > b->stream) - (a->stream < b->stream);
}

/* Kineto's gpu_user_annotation events of range R: one per stream its operations ran on. */
static int nvtx_annotation(void *arg, const struct nvtx_proj_range *r,
			   const struct nvtx_proj_op *ops, size_t n)
{
	struct nvtx_projecting *p = arg;
	struct ex_profiler prof = { .name = r->text, .cat = "gpu_user_annotation" };
	int err = 0;

	if (n > p->cap) {
		struct nvtx_proj_op *v = realloc(p->ops, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->ops = v;
		p->cap = n;
	}
	memcpy(p->ops, ops, n * sizeof(*ops));
	qsort(p->ops, n, sizeof(*p->ops), stream_cmp);
	for (size_t i = 0, j; !err && i < n; i = j) {
		__u64 first = p->ops[i].ts, last = p->ops[i].ts + p->ops[i].dur;

		for (j = i + 1; j < n && !stream_cmp(&p->ops[i], &p->ops[j]); j++) {
			first = p->ops[j].ts < first ? p->ops[j].ts : first;
			if (p->ops[j].ts + p->ops[j].dur > last)
				last = p->ops[j].ts + p->ops[j].dur;
		}
		/* 1 ns earlier and later, as Kineto writes them: the viewers then nest the
		 * kernels that start or end with the range inside it. */
		first -= first ? 1 : 0;
		err = ex_event(p->s, &(struct ex_event){
					     .ts = first,
					     .dur = last + 1 - first,
					     .on = { .kind = EX_GPU_STREAM,
						     .pid = r->pid,
						     .device = p->ops[i].device,
						     .stream = p->ops[i].stream },
					     .shape = EX_SLICE,
					     .views = EX_PROFILER,
					     .prof = &prof,
				     });
	}
	return err;
}

/* The domain's NvtxDomainCreate row, the first time a process uses it. */
static int nvtx_domain(struct ex_sink *s, struct nvtx_export *n, const struct bs_hdr *rec,
		       __u32 domain_id)
{
	struct hkey key = { rec->pid, domain_id };
	struct ex_value v[C_NCOLS] = { 0 };

	if (!domain_id || hmap__get(n->domains, key, 0))
		return 0;
	if (!hmap__get(n->domains, key, 1))
		return -ENOMEM;
	v[C_START] = EX_V_INT(rec->ts);
	v[C_TYPE] = EX_V_INT(NVTX_T_DOMAIN_CREATE);
	v[C_TEXT] = EX_V_TEXT(nvtx_domain_name(s->model, domain_id));
	v[C_TID] = EX_V_INT(ex_gtid(rec->pid, rec->tid));
	v[C_DOMAIN] = EX_V_INT(domain_id);
	return ex_row(s, &nvtx_events, EX_ROW_ADD, v, NULL);
}

/* The column of the payload's type (dump's "payload" arg has its value), 0: none. */
static enum nvtx_col nvtx_payload_col(__u16 flags)
{
	switch (flags & BS_NVTX_PAYLOAD_MASK) {
	case BS_NVTX_PAYLOAD_U64:
		return C_U64;
	case BS_NVTX_PAYLOAD_I64:
		return C_I64;
	case BS_NVTX_PAYLOAD_F64:
		return C_DOUBLE;
	case BS_NVTX_PAYLOAD_U32:
		return C_U32;
	case BS_NVTX_PAYLOAD_I32:
		return C_I32;
	case BS_NVTX_PAYLOAD_F32:
		return C_FLOAT;
	default:
		return 0;
	}
}

/*
 * A range's or a mark's row. An open range (recording stopped first) has no end: NULL. The
 * message inline (text) or, for a registered string, by StringIds (textId), as nsys.
 */
static int nvtx_event_row(struct ex_sink *s, struct nvtx_export *n, const struct bs_hdr *rec,
			  const struct event *ev)
{
	const struct bs_nvtx_range *r = (const void *)rec;
	const struct bs_nvtx_mark *k = (const void *)rec;
	int range = rec->type == BS_REC_NVTX_RANGE;
	__u32 domain = range ? r->domain_id : k->domain_id;
	__u16 flags = range ? r->flags : k->flags;
	struct ex_value v[C_NCOLS] = { 0 };
	int err = nvtx_domain(s, n, rec, domain);

	if (err)
		return err;
	v[C_START] = EX_V_INT(rec->ts);
	if (range && !(flags & BS_NVTX_OPEN))
		v[C_END] = EX_V_INT(rec->ts + r->dur);
	v[C_TYPE] = EX_V_INT(!range		       ? NVTX_T_MARK
			     : flags & BS_NVTX_PUSHPOP ? NVTX_T_PUSHPOP
						       : NVTX_T_STARTEND);
	if (range && !(flags & BS_NVTX_PUSHPOP))
		v[C_RANGE] = EX_V_UINT(r->range_id);
	v[C_CATEGORY] = EX_V_INT(range ? r->category : k->category);
	if (flags & BS_NVTX_COLOR)
		v[C_COLOR] = EX_V_INT(range ? r->color : k->color);
	if (flags & BS_NVTX_REGISTERED)
		v[C_TEXT_ID] = EX_V_STRING(ev->name);
	else
		v[C_TEXT] = EX_V_TEXT(ev->name);
	v[C_TID] = EX_V_INT(ex_gtid(rec->pid, rec->tid));
	if (range)
		v[C_END_TID] = EX_V_INT(ex_gtid(rec->pid, r->end_tid));
	v[C_DOMAIN] = EX_V_INT(domain);
	if (nvtx_payload_col(flags))
		v[nvtx_payload_col(flags)] = ex_v_arg(ev, "payload");
	return ex_row(s, &nvtx_events, EX_ROW_ADD, v, NULL);
}

/* nvtxNameOsThread and nvtxNameCategory, as nsys keeps them. */
static int nvtx_name_row(struct ex_sink *s, struct nvtx_export *n, const struct bs_hdr *rec,
			 const struct event *ev)
{
	const struct bs_nvtx_name *nm = (const void *)rec;
	struct ex_value v[C_NCOLS] = { 0 };
	int thread = nm->kind == BS_NVTX_NAME_THREAD, err;

	if (!thread && nm->kind != BS_NVTX_NAME_CATEGORY)
		return 0;
	err = nvtx_domain(s, n, rec, nm->domain_id);
	if (err)
		return err;
	v[C_START] = EX_V_INT(rec->ts);
	v[C_TYPE] = EX_V_INT(thread ? NVTX_T_THREAD : NVTX_T_CATEGORY);
	if (!thread)
		v[C_CATEGORY] = EX_V_UINT(nm->key);
	v[C_TID] = EX_V_INT(ex_gtid(rec->pid, thread ? (__u32)nm->key : rec->tid));
	v[C_TEXT] = EX_V_TEXT(ev->name);
	v[C_DOMAIN] = EX_V_INT(nm->domain_id);
	return ex_row(s, &nvtx_events, EX_ROW_ADD, v, NULL);
}

static int nvtx_record(struct ex_sink *s, void *st, const struct bs_hdr *rec,
		       const struct event *ev)
{
	struct nvtx_export *n = st;
	int err = 0, timed;

	if (!ev)
		return 0;
	timed = (rec->type == BS_REC_NVTX_RANGE && rec->size >= sizeof(struct bs_nvtx_range)) ||
		(rec->type == BS_REC_NVTX_MARK && rec->size >= sizeof(struct bs_nvtx_mark));
	if (n->domains && (rec->type == BS_REC_NVTX_RANGE || rec->type == BS_REC_NVTX_MARK))
		err = nvtx_event_row(s, n, rec, ev);
	else if (n->domains && rec->type == BS_REC_NVTX_NAME)
		err = nvtx_name_row(s, n, rec, ev);
	if (err || !timed)
		return err;
	err = nvtx_event(s, rec, ev);
	return err ? err : 1;
}

/* The projection's gpu_user_annotation events, once every record was seen. */
static int nvtx_finish(struct ex_sink *s, void *st)
{
	struct nvtx_export *n = st;
	struct nvtx_projecting p = { s, NULL, 0 };
	int err;

	if (!n->proj)
		return 0;
	err = nvtx_proj__join(n->proj, nvtx_annotation, &p);
	free(p.ops);
	return err;
}

const struct family_export nvtx_export = {
	.tables = nvtx_tables,
	.open = nvtx_open,
	.free = nvtx_free,
	.observe = nvtx_observe,
	.record = nvtx_record,
	.finish = nvtx_finish,
};
