// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of cudnn: calls read through their specs, the walk that keeps each process's
 * backend descriptors (their types and the descriptors set into them), what an execute ran,
 * and the event a call shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cudnn.h"

static const struct {
	__s32 v;
	const char *name;
} statuses[] = {
	{ 0, "CUDNN_STATUS_SUCCESS" },
	{ 1001, "CUDNN_STATUS_NOT_INITIALIZED" },
	{ 1002, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH" },
	{ 1008, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED" },
	{ 2000, "CUDNN_STATUS_BAD_PARAM" },
	{ 2002, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER" },
	{ 2004, "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED" },
	{ 2005, "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND" },
	{ 2008, "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH" },
	{ 2010, "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE" },
	{ 2012, "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE" },
	{ 3000, "CUDNN_STATUS_NOT_SUPPORTED" },
	{ 3001, "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN" },
	{ 3002, "CUDNN_STATUS_NOT_SUPPORTED_SHAPE" },
	{ 3003, "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE" },
	{ 3007, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH" },
	{ 4000, "CUDNN_STATUS_INTERNAL_ERROR" },
	{ 5000, "CUDNN_STATUS_EXECUTION_FAILED" },
};

/* cudnnBackendDescriptorType_t (cudnn_graph.h), without CUDNN_BACKEND_ and _DESCRIPTOR. */
static const char *const desc_types[] = {
	"POINTWISE",
	"CONVOLUTION",
	"ENGINE",
	"ENGINECFG",
	"ENGINEHEUR",
	"EXECUTION_PLAN",
	"INTERMEDIATE_INFO",
	"KNOB_CHOICE",
	"KNOB_INFO",
	"LAYOUT_INFO",
	"OPERATION_CONVOLUTION_FORWARD",
	"OPERATION_CONVOLUTION_BACKWARD_FILTER",
	"OPERATION_CONVOLUTION_BACKWARD_DATA",
	"OPERATION_POINTWISE",
	"OPERATION_GEN_STATS",
	"OPERATIONGRAPH",
	"VARIANT_PACK",
	"TENSOR",
	"MATMUL",
	"OPERATION_MATMUL",
	"OPERATION_BN_FINALIZE_STATISTICS",
	"REDUCTION",
	"OPERATION_REDUCTION",
	"OPERATION_BN_BWD_WEIGHTS",
	"RESAMPLE",
	"OPERATION_RESAMPLE_FWD",
	"OPERATION_RESAMPLE_BWD",
	"OPERATION_CONCAT",
	"OPERATION_SIGNAL",
	"OPERATION_NORM_FORWARD",
	"OPERATION_NORM_BACKWARD",
	"OPERATION_RESHAPE",
	"RNG",
	"OPERATION_RNG",
	"KERNEL_CACHE",
	"OPERATION_PAGED_CACHE_LOAD",
	"OPERATION_BLOCK_SCALE_QUANTIZE",
	"OPERATION_BLOCK_SCALE_DEQUANTIZE",
	"DEVICEPROP",
	"OPERATION_EXPAND_BAND_MATRIX",
	"OPERATION_CONTRACT_BAND_MATRIX",
	"OPERATION_SDPA_FWD",
	"OPERATION_MOE_GROUPED_MATMUL",
	"OPERATION_SDPA_BWD",
};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

const char *cudnn__status_name(__s32 s)
{
	for (unsigned i = 0; i < NELEMS(statuses); i++)
		if (statuses[i].v == s)
			return statuses[i].name;
	return NULL;
}

const char *cudnn__desc_type_name(__s32 t)
{
	return t >= 0 && (__u32)t < NELEMS(desc_types) ? desc_types[t] : NULL;
}

void cudnn_call__parse(const struct bs_hdr *rec, struct cudnn_call *c)
{
	const struct bs_ucall *r = (const void *)rec;

	memset(c, 0, sizeof(*c));
	c->r = r;
	c->api = ucall_table__api(&cudnn_table, r->fn);
	c->ret = (__s32)r->ret;
	if (r->deref_len && rec->size >= sizeof(*r) + (__u32)r->deref_len) {
		c->elems = (const __u8 *)(r + 1);
		c->elems_len = r->deref_len;
	}
	ucall_record__values(&cudnn_table, rec, c->ret == CUDNN_STATUS_SUCCESS, c->v, &c->have);
}

/* cudnnBackendAttributeName_t and cudnnBackendAttributeType_t values (cudnn_graph.h). */
enum {
	ATTR_ENGINEHEUR_OPERATION_GRAPH = 201,
	ATTR_ENGINEHEUR_RESULTS = 202,
	ATTR_ENGINECFG_ENGINE = 300,
	ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401,
	ATTR_OPERATIONGRAPH_OPS = 801,
	ATTR_TENSOR_DIMENSIONS = 902,
	ATTR_ENGINE_OPERATION_GRAPH = 1300,
	ATTR_OPERATION_MATMUL_ADESC = 1520,
	ATTR_OPERATION_MATMUL_BDESC = 1521,
	/* A convolution's filter and output: forward W, Y; backward data W, DY; filter DW, DY. */
	ATTR_CONV_FWD_W = 703,
	ATTR_CONV_FWD_Y = 705,
	ATTR_CONV_BWD_DATA_W = 709,
	ATTR_CONV_BWD_DATA_DY = 711,
	ATTR_CONV_BWD_FILTER_DW = 715,
	ATTR_CONV_BWD_FILTER_DY = 717,
};
enum { TYPE_INT64 = 3, TYPE_BACKEND_DESCRIPTOR = 15 };
enum {
	DESC_ENGINECFG = 3,
	DESC_OPERATION_CONVOLUTION_FORWARD = 10,
	DESC_OPERATION_CONVOLUTION_BACKWARD_FILTER = 11,
	DESC_OPERATION_CONVOLUTION_BACKWARD_DATA = 12,
	DESC_OPERATION_MATMUL = 19,
};

#define MAX_DIMS 8

/* What the walk keeps of one backend descriptor. */
struct cudnn_desc {
	__s32 type;
	__u32 nops, ndims;
	/*
	 * plan: its engine config; config: its engine, or the heuristics whose results it holds;
	 * engine, heuristics: its graph
	 */
	__u64 link;
	__u32 tid;	   /* the thread that made it */
	__u8 unfilled_cfg; /* an engine config made and not yet filled by heuristics' results */
	/*
	 * A graph's: what it runs, read when it was finalized, while its operations and tensors
	 * live (cuDNN's frontends destroy them before executing); a plan's: its graph's, taken
	 * when its engine config was set (the config, its engine or heuristics go early too).
	 */
	__u8 has_sum;
	struct cudnn_exec sum;
	__u64 ops[CUDNN_GRAPH_OPS];
	__u64 a, b; /* a matmul operation's A and B tensors; a convolution's filter and output */
	__s64 dims[MAX_DIMS];
	__s32 groups; /* a legacy convolution's; 0: not set (1) */
};

void *cudnn_walk__new(void)
{
	struct cudnn_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->procs = hmap__new(sizeof(struct hmap *));
	if (!w->procs) {
		free(w);
		return NULL;
	}
	return w;
}

void cudnn_walk__free(void *vw)
{
	struct cudnn_walk *w = vw;
	struct hmap **descs;
	size_t it = 0;

	if (!w)
		return;
	while ((descs = hmap__next(w->procs, &it, NULL)))
		hmap__free(*descs);
	hmap__free(w->procs);
	free(w);
}

size_t cudnn_walk__count(const struct cudnn_walk *w)
{
	struct hmap **descs;
	size_t it = 0, n = 0;

	while (w && (descs = hmap__next(w->procs, &it, NULL)))
		n += hmap__count(*descs);
	return n;
}

/* PID's descriptors, made the first time with CREATE; NULL when none (or out of memory). */
static struct hmap *descs_of(const struct cudnn_walk *w, __u32 pid, int create)
{
	struct hmap **descs = hmap__get(w->procs, (struct hkey){ pid, 0 }, create);

	if (create && descs && !*descs)
		*descs = hmap__new(sizeof(struct cudnn_desc));
	return descs ? *descs : NULL;
}

/* PID exited or exec'd: its descriptors go. */
static void walk__forget(struct cudnn_walk *w, __u32 pid)
{
	struct hmap *descs = descs_of(w, pid, 0);

	hmap__free(descs);
	hmap__del(w->procs, (struct hkey){ pid, 0 });
}

static __u64 elem(const struct cudnn_call *c, __u32 i)
{
	__u64 v = 0;

	if ((i + 1) * 8 <= c->elems_len)
		memcpy(&v, c->elems + i * 8, sizeof(v)); /* descriptors and int64s: 8 bytes */
	return v;
}

static void walk__set_attr(struct cudnn_desc *d, const struct cudnn_call *c)
{
	__u64 n = c->v[CUDNN_K_COUNT];

	if (!c->elems || !n)
		return;
	if (c->v[CUDNN_K_ATYPE] == TYPE_INT64 && c->v[CUDNN_K_ATTR] == ATTR_TENSOR_DIMENSIONS) {
		d->ndims = n < MAX_DIMS ? (__u32)n : MAX_DIMS;
		for (__u32 i = 0; i < d->ndims; i++)
			d->dims[i] = (__s64)elem(c, i);
		return;
	}
	if (c->v[CUDNN_K_ATYPE] != TYPE_BACKEND_DESCRIPTOR)
		return;
	switch (c->v[CUDNN_K_ATTR]) {
	case ATTR_ENGINECFG_ENGINE:
		d->unfilled_cfg = 0;
		/* fall through */
	case ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
	case ATTR_ENGINE_OPERATION_GRAPH:
	case ATTR_ENGINEHEUR_OPERATION_GRAPH:
		d->link = elem(c, 0);
		break;
	case ATTR_OPERATIONGRAPH_OPS:
		d->nops = n < CUDNN_GRAPH_OPS ? (__u32)n : CUDNN_GRAPH_OPS;
		for (__u32 i = 0; i < d->nops; i++)
			d->ops[i] = elem(c, i);
		break;
	case ATTR_OPERATION_MATMUL_ADESC:
	case ATTR_CONV_FWD_W:
	case ATTR_CONV_BWD_DATA_W:
	case ATTR_CONV_BWD_FILTER_DW:
		d->a = elem(c, 0);
		break;
	case ATTR_OPERATION_MATMUL_BDESC:
	case ATTR_CONV_FWD_Y:
	case ATTR_CONV_BWD_DATA_DY:
	case ATTR_CONV_BWD_FILTER_DY:
		d->b = elem(c, 0);
		break;
	}
}

static struct cudnn_desc *desc_of(const struct cudnn_walk *w, __u32 pid, __u64 desc)
{
	struct hmap *descs = desc ? descs_of(w, pid, 0) : NULL;

	return descs ? hmap__get(descs, (struct hkey){ desc, 0 }, 0) : NULL;
}

static __u64 numel(const struct cudnn_desc *t)
{
	__u64 n = 1;

	for (__u32 i = 0; i < t->ndims; i++)
		n *= t->dims[i] > 0 ? (__u64)t->dims[i] : 0;
	return n;
}

/*
 * An operation's FLOPs from its tensors, 0 when unknown. A matmul: A [..., m, k], B [..., k, n],
 * the batch A's leading dimensions; its shape goes to E when it is the graph's first. A
 * convolution (any direction): 2 numel(y) numel(w) / k, w being k x c/groups x r x s.
 */
static __u64 exec__op_flops(const struct cudnn_walk *w, __u32 pid, const struct cudnn_desc *op,
			    struct cudnn_exec *e)
{
	const struct cudnn_desc *a = desc_of(w, pid, op->a), *b = desc_of(w, pid, op->b);
	__u64 batch = 1, m, n, k;

	if (!a || !b || a->ndims < 2 || b->ndims < 2)
		return 0;
	if (op->type != DESC_OPERATION_MATMUL)
		return a->dims[0] > 0 ? 2 * numel(b) * (numel(a) / (__u64)a->dims[0]) : 0;
	for (__u32 i = 0; i + 2 < a->ndims; i++)
		batch *= (__u64)a->dims[i];
	m = (__u64)a->dims[a->ndims - 2];
	k = (__u64)a->dims[a->ndims - 1];
	n = (__u64)b->dims[b->ndims - 1];
	if (!e->m) {
		e->batch = batch;
		e->m = m;
		e->n = n;
		e->k = k;
	}
	return 2 * batch * m * n * k;
}

/*
 * Heuristics HEUR's results read by thread TID: the engine configs it made for them, since the
 * last such read, are filled with them (cuDNN's frontends make the configs, then ask for the
 * results into them: the pointers filled are not in the record), and so belong to HEUR's graph.
 */
static void walk__heur_results(struct hmap *descs, __u64 heur, __u32 tid)
{
	const struct cudnn_desc *h = hmap__get(descs, (struct hkey){ heur, 0 }, 0);
	struct cudnn_desc *d;
	size_t it = 0;

	while ((d = hmap__next(descs, &it, NULL)))
		if (d->unfilled_cfg && d->tid == tid) {
			d->unfilled_cfg = 0;
			d->link = heur;
			d->has_sum = h && h->has_sum;
			if (d->has_sum)
				d->sum = h->sum;
		}
}

/* What graph G runs: its operations' types, FLOPs and first matmul, from their descriptors. */
static void graph__summary(const struct cudnn_walk *w, __u32 pid, const struct cudnn_desc *g,
			   struct cudnn_exec *e)
{
	memset(e, 0, sizeof(*e));
	e->nops = g->nops;
	for (__u32 i = 0; i < g->nops; i++) {
		const struct cudnn_desc *op = desc_of(w, pid, g->ops[i]);

		e->op_types[i] = op ? op->type : -1;
		if (op && (op->type == DESC_OPERATION_MATMUL ||
			   op->type == DESC_OPERATION_CONVOLUTION_FORWARD ||
			   op->type == DESC_OPERATION_CONVOLUTION_BACKWARD_FILTER ||
			   op->type == DESC_OPERATION_CONVOLUTION_BACKWARD_DATA))
			e->flops += exec__op_flops(w, pid, op, e);
	}
}

/*
 * The graph a plan runs: its engine config, that config's engine (or the heuristics that gave
 * it), their operation graph. NULL when a link was not seen.
 */
static const struct cudnn_desc *plan__graph(const struct cudnn_walk *w, __u32 pid,
					    const struct cudnn_desc *plan)
{
	const struct cudnn_desc *d = plan;

	for (int hop = 0; d && hop < 3; hop++)
		d = desc_of(w, pid, d->link);
	return d;
}

/*
 * D was linked to the descriptor it names (a plan to its config, a config to its engine, an
 * engine or heuristics to its graph): what that one runs is D's too, taken now, while it lives
 * (cuDNN's frontends destroy graphs, heuristics and configs before executing the plan).
 */
static void link__take_summary(const struct cudnn_walk *w, __u32 pid, struct cudnn_desc *d)
{
	const struct cudnn_desc *to = desc_of(w, pid, d->link);

	d->has_sum = to && to->has_sum;
	if (d->has_sum)
		d->sum = to->sum;
}

/* An execution of a plan: what its graph runs, kept with the plan, else read now. */
static void walk__exec(const struct cudnn_walk *w, const struct cudnn_call *c, __u32 pid,
		       struct cudnn_exec *e)
{
	const struct cudnn_desc *plan = desc_of(w, pid, c->v[CUDNN_K_PLAN]), *g;

	if (plan && plan->has_sum) {
		*e = plan->sum;
		return;
	}
	g = plan ? plan__graph(w, pid, plan) : NULL;
	if (g)
		graph__summary(w, pid, g, e);
}

/* A legacy 4-d tensor's or filter's dimensions, a convolution's groups. */
static void walk__set_shape(struct cudnn_desc *d, const struct cudnn_call *c)
{
	static const int dims[] = { CUDNN_K_N, CUDNN_K_C, CUDNN_K_H, CUDNN_K_W };

	if (c->have & (1ull << CUDNN_K_GROUPS))
		d->groups = (__s32)c->v[CUDNN_K_GROUPS];
	if (!(c->have & (1ull << CUDNN_K_W)))
		return;
	d->ndims = 4;
	for (int i = 0; i < 4; i++)
		d->dims[i] = (__s32)c->v[dims[i]];
}

/* The shape of a 4-d descriptor, 0 when unknown. */
static int conv__dims(const struct cudnn_walk *w, __u32 pid, __u64 desc, __s32 *out, __u64 *numel)
{
	const struct cudnn_desc *d = desc_of(w, pid, desc);

	if (!d || d->ndims != 4)
		return 0;
	*numel = 1;
	for (int i = 0; i < 4; i++) {
		out[i] = (__s32)d->dims[i];
		*numel *= d->dims[i] > 0 ? (__u64)d->dims[i] : 0;
	}
	return 1;
}

/* FLOPs of any of the three: 2 x numel(y) x (c / groups) x r x s = 2 numel(y) numel(w) / k. */
static int walk__conv(const struct cudnn_walk *w, const struct cudnn_call *c, __u32 pid,
		      struct cudnn_conv *cv)
{
	const struct cudnn_desc *conv = desc_of(w, pid, c->v[CUDNN_K_CONV]);
	__u64 nx, nw, ny;
	int kx, kw, ky;

	memset(cv, 0, sizeof(*cv));
	kx = conv__dims(w, pid, c->v[CUDNN_K_XDESC], cv->x, &nx);
	kw = conv__dims(w, pid, c->v[CUDNN_K_WDESC], cv->w, &nw);
	ky = conv__dims(w, pid, c->v[CUDNN_K_YDESC], cv->y, &ny);
	cv->groups = conv && conv->groups > 0 ? conv->groups : 1;
	if (kw && ky && cv->w[0] > 0)
		cv->flops = 2 * ny * (nw / (__u64)cv->w[0]);
	return kx || kw || ky;
}

/* DESC was finalized: a graph's summary is read now, while its operations and tensors live. */
static void walk__finalize(struct cudnn_walk *w, __u32 pid, __u64 desc)
{
	struct hmap *descs = descs_of(w, pid, 0);
	struct cudnn_desc *d = descs ? hmap__get(descs, (struct hkey){ desc, 0 }, 0) : NULL;
	struct cudnn_exec e;

	if (!d || !d->nops)
		return;
	graph__summary(w, pid, d, &e);
	d->sum = e;
	d->has_sum = 1;
}

/* A SetAttribute that links its descriptor to another (walk__set_attr's link cases). */
static int walk__is_link(const struct cudnn_call *c)
{
	switch (c->v[CUDNN_K_ATTR]) {
	case ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
	case ATTR_ENGINECFG_ENGINE:
	case ATTR_ENGINE_OPERATION_GRAPH:
	case ATTR_ENGINEHEUR_OPERATION_GRAPH:
		return c->v[CUDNN_K_ATYPE] == TYPE_BACKEND_DESCRIPTOR;
	}
	return 0;
}

void cudnn_walk__observe(void *vw, const struct bs_hdr *rec)
{
	struct cudnn_walk *w = vw;
	struct cudnn_desc *d = NULL;
	struct cudnn_call c;
	struct hmap *descs;
	__u16 fl;

	if (!w || !rec)
		return;
	if ((rec->type == BS_REC_EXIT && rec->size >= sizeof(struct bs_exit) &&
	     ((const struct bs_exit *)rec)->group_dead) ||
	    rec->type == BS_REC_EXEC) {
		walk__forget(w, rec->pid);
		return;
	}
	if (rec->type != BS_REC_CUDNN_CALL || rec->size < sizeof(struct bs_ucall))
		return;
	cudnn_call__parse(rec, &c);
	w->have_last = 1;
	w->last_ts = rec->ts;
	w->last_pid = rec->pid;
	w->last_tid = rec->tid;
	memset(&w->last, 0, sizeof(w->last));
	w->last_is_conv = 0;
	if (!c.api)
		return;
	fl = c.api->flags;
	if (fl & CUDNN_F_EXECUTE)
		walk__exec(w, &c, rec->pid, &w->last);
	if (fl & CUDNN_F_CONV)
		w->last_is_conv = walk__conv(w, &c, rec->pid, &w->last_conv);
	if (c.ret != CUDNN_STATUS_SUCCESS || !c.v[CUDNN_K_DESC])
		return;
	if (fl & CUDNN_F_DESTROY) {
		if ((descs = descs_of(w, rec->pid, 0)))
			hmap__del(descs, (struct hkey){ c.v[CUDNN_K_DESC], 0 });
		return;
	}
	if (fl & CUDNN_F_GET_ATTR) {
		if (c.v[CUDNN_K_ATTR] == ATTR_ENGINEHEUR_RESULTS &&
		    (descs = descs_of(w, rec->pid, 0)))
			walk__heur_results(descs, c.v[CUDNN_K_DESC], rec->tid);
		return;
	}
	if (fl & CUDNN_F_FINALIZE) {
		walk__finalize(w, rec->pid, c.v[CUDNN_K_DESC]);
		return;
	}
	if (!(fl & (CUDNN_F_CREATE | CUDNN_F_SET_ATTR | CUDNN_F_SET_SHAPE)))
		return;
	if ((descs = descs_of(w, rec->pid, 1)))
		d = hmap__get(descs, (struct hkey){ c.v[CUDNN_K_DESC], 0 }, 1);
	if (!d) {
		w->err = -ENOMEM;
		return;
	}
	if (fl & CUDNN_F_CREATE) {
		memset(d, 0, sizeof(*d));
		d->type = (__s32)c.v[CUDNN_K_TYPE];
		d->tid = rec->tid;
		d->unfilled_cfg = d->type == DESC_ENGINECFG;
	} else if (fl & CUDNN_F_SET_SHAPE) {
		walk__set_shape(d, &c);
	} else {
		walk__set_attr(d, &c);
		if (walk__is_link(&c))
			link__take_summary(w, rec->pid, d);
	}
}

static int walk__is_last(const struct cudnn_walk *w, const struct bs_hdr *rec)
{
	return w && w->have_last && w->last_ts == rec->ts && w->last_pid == rec->pid &&
	       w->last_tid == rec->tid;
}

int cudnn__exec(const struct cudnn_walk *w, const struct bs_hdr *rec, struct cudnn_exec *e)
{
	if (!walk__is_last(w, rec))
		return 0;
	*e = w->last;
	return 1;
}

int cudnn__conv(const struct cudnn_walk *w, const struct bs_hdr *rec, struct cudnn_conv *c)
{
	if (!walk__is_last(w, rec) || !w->last_is_conv)
		return 0;
	*c = w->last_conv;
	return 1;
}

/* Decoder. */

static void arg_named(struct event *ev, const char *key, const char *name, __s64 v)
{
	if (name)
		event__arg_str(ev, key, name);
	else
		event__arg_s64(ev, key, v);
}

static void decode_exec(struct event *ev, const struct cudnn_exec *e)
{
	char buf[sizeof(ev->strbuf)];
	size_t used = 0;
	int n;

	buf[0] = 0;
	for (__u32 i = 0; i < e->nops; i++) {
		const char *t = cudnn__desc_type_name(e->op_types[i]);

		if (t && !strncmp(t, "OPERATION_", 10))
			t += 10;
		n = snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? "," : "", t ? t : "?");
		if (n < 0 || (size_t)n >= sizeof(buf) - used) {
			buf[used] = 0; /* whole names only */
			break;
		}
		used += n;
	}
	event__arg_strn(ev, "ops", buf, sizeof(buf));
	if (e->m) {
		event__arg_u64(ev, "batch", e->batch);
		event__arg_u64(ev, "m", e->m);
		event__arg_u64(ev, "n", e->n);
		event__arg_u64(ev, "k", e->k);
	}
	if (e->flops)
		event__arg_u64(ev, "flops", e->flops);
}

/* "8x3x224x224", or nothing when unknown (all zero). */
static void arg_dims(struct event *ev, const char *key, const __s32 *d)
{
	char buf[64];

	if (!d[0] && !d[1] && !d[2] && !d[3])
		return;
	snprintf(buf, sizeof(buf), "%dx%dx%dx%d", d[0], d[1], d[2], d[3]);
	event__arg_strn(ev, key, buf, sizeof(buf));
}

static void decode_conv(struct event *ev, const struct cudnn_conv *c)
{
	arg_dims(ev, "x", c->x);
	arg_dims(ev, "w", c->w);
	arg_dims(ev, "y", c->y);
	event__arg_s64(ev, "groups", c->groups);
	if (c->flops)
		event__arg_u64(ev, "flops", c->flops);
}

static int decode_cudnn_call(const struct bs_hdr *rec, const struct trace_model *m,
			     struct event *ev)
{
	const struct cudnn_walk *w = trace_model__walk(m, &family_cudnn);
	struct cudnn_conv cv;
	struct cudnn_exec e;
	struct cudnn_call c;

	ev->stack = trace_model__event_stack(m, rec); /* --stacks=cudnn */
	cudnn_call__parse(rec, &c);
	ucall_table__name_event(&cudnn_table, c.r->fn, ev);
	ev->dur = c.r->dur;
	arg_named(ev, "status", cudnn__status_name(c.ret), c.ret);
	for (int k = 0; k < CUDNN_K_NR; k++) {
		if (!(c.have & (1ull << k)) || k == CUDNN_K_ELEMS)
			continue;
		if (k == CUDNN_K_TYPE)
			arg_named(ev, "type", cudnn__desc_type_name((__s32)c.v[k]), (__s32)c.v[k]);
		else if (cudnn_keys[k].type == UCALL_T_S32)
			event__arg_s64(ev, cudnn_keys[k].name, (__s32)c.v[k]);
		else if (k == CUDNN_K_COUNT || k == CUDNN_K_BYTES)
			event__arg_s64(ev, cudnn_keys[k].name, (__s64)c.v[k]);
		else
			event__arg_hex(ev, cudnn_keys[k].name, c.v[k]);
	}
	if (cudnn__exec(w, rec, &e) && e.nops)
		decode_exec(ev, &e);
	if (cudnn__conv(w, rec, &cv))
		decode_conv(ev, &cv);
	if (c.r->depth)
		event__arg_u64(ev, "depth", c.r->depth);
	return 1;
}

/* nsys shows cuDNN calls on a row of their thread: their own category, on the thread. */
static const struct export_style call_style = { .cat = "cudnn", .ph = 'X', .on_thread = 1 };

const struct rec_decoder cudnn_decoders[] = {
	{ BS_REC_CUDNN_CALL, sizeof(struct bs_ucall), "cudnn_api", decode_cudnn_call, &call_style,
	  .span = 1 },
	{ 0 },
};
