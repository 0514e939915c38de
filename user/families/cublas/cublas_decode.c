// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of cublas: API-call records read through their compiled argument specs (the
 * grammar is ucall_spec.h's, the keys cublas_api.c's), the walk that keeps each process's
 * handle streams and cuBLASLt descriptors, the GEMM a call ran and the event it shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cublas_decode.h"

static const char *const status_names[] = {
	[0] = "CUBLAS_STATUS_SUCCESS",		 [1] = "CUBLAS_STATUS_NOT_INITIALIZED",
	[3] = "CUBLAS_STATUS_ALLOC_FAILED",	 [7] = "CUBLAS_STATUS_INVALID_VALUE",
	[8] = "CUBLAS_STATUS_ARCH_MISMATCH",	 [11] = "CUBLAS_STATUS_MAPPING_ERROR",
	[13] = "CUBLAS_STATUS_EXECUTION_FAILED", [14] = "CUBLAS_STATUS_INTERNAL_ERROR",
	[15] = "CUBLAS_STATUS_NOT_SUPPORTED",	 [16] = "CUBLAS_STATUS_LICENSE_ERROR",
};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

const char *cublas__status_name(__s32 s)
{
	return s >= 0 && (__u32)s < NELEMS(status_names) ? status_names[s] : NULL;
}

int cublas__type_complex(__s32 t)
{
	const char *n = cublas__type_name(t);

	return n && !strncmp(n, "CUDA_C_", 7);
}

const char *cublas__type_short(__s32 t)
{
	static const char *const shorts[] = {
		"f32",	"f64",	  "f16",    "i8",      "c32",	 "c64",	   "c16",    "ci8",  "u8",
		"cu8",	"i32",	  "ci32",   "u32",     "cu32",	 "bf16",   "cbf16",  "i4",   "ci4",
		"u4",	"cu4",	  "i16",    "ci16",    "u16",	 "cu16",   "i64",    "ci64", "u64",
		"cu64", "f8e4m3", "f8e5m2", "f8ue8m0", "f6e2m3", "f6e3m2", "f4e2m1",
	};

	return t >= 0 && (__u32)t < NELEMS(shorts) ? shorts[t] : "?";
}

void cublas_call__parse(const struct bs_hdr *rec, struct cublas_call *c)
{
	const struct bs_ucall *r = (const void *)rec;

	memset(c, 0, sizeof(*c));
	c->r = r;
	c->api = ucall_table__api(&cublas_table, r->fn);
	c->ret = (__s32)r->ret;
	ucall_record__values(&cublas_table, rec, c->ret == CUBLAS_STATUS_SUCCESS, c->v, &c->have);
}

/* What the walk keeps of a cuBLASLt matrix layout and matmul descriptor. */
struct cublas_layout {
	__s32 type;
	__s32 batch;
	__u64 rows, cols, ld;
};

struct cublas_desc {
	__s32 compute, scale;
	__s32 transa, transb;
};

/* cublasLtMatrixLayoutAttribute_t and cublasLtMatmulDescAttributes_t values (cublasLt.h). */
enum { LAYOUT_TYPE = 0, LAYOUT_ROWS = 2, LAYOUT_COLS = 3, LAYOUT_LD = 4, LAYOUT_BATCH = 5 };
enum { DESC_COMPUTE = 0, DESC_SCALE = 1, DESC_TRANSA = 3, DESC_TRANSB = 4 };

void *cublas_walk__new(void)
{
	struct cublas_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->streams = hmap__new(sizeof(__u64));
	w->layouts = hmap__new(sizeof(struct cublas_layout));
	w->descs = hmap__new(sizeof(struct cublas_desc));
	if (!w->streams || !w->layouts || !w->descs) {
		cublas_walk__free(w);
		return NULL;
	}
	return w;
}

void cublas_walk__free(void *vw)
{
	struct cublas_walk *w = vw;

	if (!w)
		return;
	hmap__free(w->streams);
	hmap__free(w->layouts);
	hmap__free(w->descs);
	free(w);
}

/* An attribute's value: SIZE bytes of it (a 4-byte enum or int32_t, or 8 bytes). */
static __u64 attr_value(const struct cublas_call *c)
{
	__u64 v = c->v[K_VALUE];

	return c->v[K_SIZE] == 4 ? (__u64)(__s64)(__s32)v : v;
}

static void *walk__get(struct cublas_walk *w, struct hmap *m, __u32 pid, __u64 ptr, int create)
{
	void *v = ptr ? hmap__get(m, (struct hkey){ pid, ptr }, create) : NULL;

	if (!v && create && ptr)
		w->err = -ENOMEM;
	return v;
}

static void walk__layout(struct cublas_walk *w, const struct cublas_call *c, __u32 pid)
{
	__u16 fl = c->api->flags;
	struct cublas_layout *l;

	if (fl & CUBLAS_F_LAYOUT_DESTROY) {
		if (c->v[K_LAYOUT])
			hmap__del(w->layouts, (struct hkey){ pid, c->v[K_LAYOUT] });
		return;
	}
	l = walk__get(w, w->layouts, pid, c->v[K_LAYOUT], 1);
	if (!l)
		return;
	if (fl & CUBLAS_F_LAYOUT_CREATE) {
		l->type = (__s32)c->v[K_TYPE];
		l->rows = c->v[K_ROWS];
		l->cols = c->v[K_COLS];
		l->ld = c->v[K_LD];
		l->batch = 1;
		return;
	}
	switch ((__s32)c->v[K_ATTR]) {
	case LAYOUT_TYPE:
		l->type = (__s32)attr_value(c);
		break;
	case LAYOUT_ROWS:
		l->rows = attr_value(c);
		break;
	case LAYOUT_COLS:
		l->cols = attr_value(c);
		break;
	case LAYOUT_LD:
		l->ld = attr_value(c);
		break;
	case LAYOUT_BATCH:
		l->batch = (__s32)attr_value(c);
		break;
	}
}

static void walk__desc(struct cublas_walk *w, const struct cublas_call *c, __u32 pid)
{
	__u16 fl = c->api->flags;
	struct cublas_desc *d;

	if (fl & CUBLAS_F_DESC_DESTROY) {
		if (c->v[K_DESC])
			hmap__del(w->descs, (struct hkey){ pid, c->v[K_DESC] });
		return;
	}
	d = walk__get(w, w->descs, pid, c->v[K_DESC], 1);
	if (!d)
		return;
	if (fl & CUBLAS_F_DESC_CREATE) {
		memset(d, 0, sizeof(*d));
		d->compute = (__s32)c->v[K_COMPUTE];
		d->scale = (__s32)c->v[K_SCALE];
		return;
	}
	switch ((__s32)c->v[K_ATTR]) {
	case DESC_COMPUTE:
		d->compute = (__s32)attr_value(c);
		break;
	case DESC_SCALE:
		d->scale = (__s32)attr_value(c);
		break;
	case DESC_TRANSA:
		d->transa = (__s32)attr_value(c);
		break;
	case DESC_TRANSB:
		d->transb = (__s32)attr_value(c);
		break;
	}
}

/*
 * The sizes are C ints (int64_t for the _64 entry points), read sign-extended: a negative one
 * is over 2^63 as unsigned and wrapped the product into nonsense FLOPs. Each must be positive
 * as a signed value, and the product fit in 64 bits; else the GEMM's FLOPs are not known (0).
 */
static __u64 gemm_flops(const struct cublas_gemm *g)
{
	const __u64 dims[] = { g->m, g->n, g->k, g->batch };
	unsigned __int128 f = cublas__type_complex(g->atype) ? 8 : 2;

	for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
		if ((__s64)dims[i] <= 0)
			return 0;
		f *= dims[i];
		if (f > ~0ull)
			return 0;
	}
	return (__u64)f;
}

/* A cuBLAS GEMM entry point's own arguments. */
static void gemm_from_call(const struct cublas_call *c, struct cublas_gemm *g)
{
	g->transa = (__s32)c->v[K_TRANSA];
	g->transb = (__s32)c->v[K_TRANSB];
	g->m = c->v[K_M];
	g->n = c->v[K_N];
	g->k = c->v[K_K];
	g->lda = c->v[K_LDA];
	g->ldb = c->v[K_LDB];
	g->ldc = c->v[K_LDC];
	g->batch = cublas_call__has(c, K_BATCH) ? c->v[K_BATCH] : 1;
	g->atype = (__s32)c->v[K_ATYPE];
	g->btype = (__s32)c->v[K_BTYPE];
	g->ctype = (__s32)c->v[K_CTYPE];
	g->compute = (__s32)c->v[K_COMPUTE];
	g->has_shape = !(c->api->flags & CUBLAS_F_GROUPED);
}

/* A cublasLtMatmul from its descriptors: D is m x n, op(A) m x k. */
static int gemm_from_lt(const struct cublas_walk *w, const struct cublas_call *c, __u32 pid,
			struct cublas_gemm *g)
{
	const struct cublas_layout *a, *b, *cl, *d;
	const struct cublas_desc *desc;

	if (!w)
		return 0;
	desc = walk__get((struct cublas_walk *)w, w->descs, pid, c->v[K_DESC], 0);
	a = walk__get((struct cublas_walk *)w, w->layouts, pid, c->v[K_ADESC], 0);
	b = walk__get((struct cublas_walk *)w, w->layouts, pid, c->v[K_BDESC], 0);
	cl = walk__get((struct cublas_walk *)w, w->layouts, pid, c->v[K_CDESC], 0);
	d = walk__get((struct cublas_walk *)w, w->layouts, pid, c->v[K_DDESC], 0);
	if (!d)
		d = cl; /* Ddesc NULL: D is C, in place */
	if (!desc || !a || !b || !d)
		return 0;
	g->transa = desc->transa;
	g->transb = desc->transb;
	g->m = d->rows;
	g->n = d->cols;
	g->k = desc->transa == CUBLAS_OP_N ? a->cols : a->rows;
	g->lda = a->ld;
	g->ldb = b->ld;
	g->ldc = d->ld;
	g->batch = d->batch > 0 ? (__u64)d->batch : 1;
	g->atype = a->type;
	g->btype = b->type;
	g->ctype = d->type;
	g->compute = desc->compute;
	g->has_shape = 1;
	return 1;
}

static int gemm_of(const struct cublas_walk *w, const struct cublas_call *c, __u32 pid,
		   struct cublas_gemm *g)
{
	const __u64 *stream;

	memset(g, 0, sizeof(*g));
	g->atype = g->btype = g->ctype = g->compute = -1;
	g->ret = c->ret;
	if (!c->api)
		return 0;
	if (c->api->group == CUBLAS_GRP_GEMM)
		gemm_from_call(c, g);
	else if (c->api->group != CUBLAS_GRP_LT_MATMUL || !gemm_from_lt(w, c, pid, g))
		return 0;
	/*
	 * The status first: a call cuBLAS refused did no math, whatever its sizes say (a negative
	 * one is a reason to refuse it), so it has no FLOPs to enter TFLOP/s or MFU.
	 */
	if (g->has_shape && g->ret == CUBLAS_STATUS_SUCCESS)
		g->flops = gemm_flops(g);
	if (cublas_call__has(c, K_STREAM)) {
		g->stream = c->v[K_STREAM];
		g->have_stream = 1;
	} else if (w && c->v[K_HANDLE]) {
		stream = hmap__get(w->streams, (struct hkey){ pid, c->v[K_HANDLE] }, 0);
		g->have_stream = 1; /* a handle without cublasSetStream: the default stream */
		g->stream = stream ? *stream : 0;
	}
	return 1;
}

void cublas_walk__observe(void *vw, const struct bs_hdr *rec)
{
	struct cublas_walk *w = vw;
	struct cublas_call c;
	__u64 *stream;
	__u16 fl;

	if (!w || !rec || rec->type != BS_REC_CUBLAS_CALL || rec->size < sizeof(struct bs_ucall))
		return;
	cublas_call__parse(rec, &c);
	w->have_last = 1;
	w->last_ts = rec->ts;
	w->last_pid = rec->pid;
	w->last_tid = rec->tid;
	w->last_is_gemm = gemm_of(w, &c, rec->pid, &w->last);
	if (!c.api || c.ret != CUBLAS_STATUS_SUCCESS)
		return;
	fl = c.api->flags;
	if ((fl & CUBLAS_F_SET_STREAM) && c.v[K_HANDLE]) {
		stream = hmap__get(w->streams, (struct hkey){ rec->pid, c.v[K_HANDLE] }, 1);
		if (stream)
			*stream = c.v[K_STREAM];
		else
			w->err = -ENOMEM;
	}
	if (fl & (CUBLAS_F_LAYOUT_CREATE | CUBLAS_F_LAYOUT_SET | CUBLAS_F_LAYOUT_DESTROY))
		walk__layout(w, &c, rec->pid);
	if (fl & (CUBLAS_F_DESC_CREATE | CUBLAS_F_DESC_SET | CUBLAS_F_DESC_DESTROY))
		walk__desc(w, &c, rec->pid);
}

int cublas__gemm(const struct cublas_walk *w, const struct bs_hdr *rec, struct cublas_gemm *g)
{
	struct cublas_call c;

	if (w && w->have_last && w->last_ts == rec->ts && w->last_pid == rec->pid &&
	    w->last_tid == rec->tid) {
		*g = w->last;
		return w->last_is_gemm;
	}
	cublas_call__parse(rec, &c);
	return gemm_of(NULL, &c, rec->pid, g);
}

/* Decoder. */

static void arg_name(struct event *ev, const char *key, const char *name, const char *prefix,
		     __s32 v)
{
	char buf[32];

	if (name) {
		event__arg_str(ev, key, name);
		return;
	}
	snprintf(buf, sizeof(buf), "%s%d", prefix, v);
	event__arg_strn(ev, key, buf, sizeof(buf));
}

static char trans_char(__s32 t)
{
	return t >= 0 && t < 3 ? "NTC"[t] : '?'; /* CUBLAS_OP_N, _T, _C (conjugate transpose) */
}

/* A GEMM's arguments: 15 at most, with the status 16 (EVENT_MAX_ARGS). */
static void decode_gemm(struct event *ev, const struct cublas_call *c, const struct cublas_gemm *g)
{
	char trans[3] = { trans_char(g->transa), trans_char(g->transb), 0 };

	event__arg_hex(ev, "handle", c->v[K_HANDLE]);
	if (g->have_stream)
		event__arg_hex(ev, "stream", g->stream);
	if (cublas_call__has(c, K_GROUPS)) {
		event__arg_s64(ev, "groups", (__s64)c->v[K_GROUPS]);
	} else {
		/* Signed, as the call passed them: a refused call's -5 is not 2^64 - 5. */
		event__arg_strn(ev, "trans", trans, sizeof(trans));
		event__arg_s64(ev, "m", (__s64)g->m);
		event__arg_s64(ev, "n", (__s64)g->n);
		event__arg_s64(ev, "k", (__s64)g->k);
		if (g->lda || g->ldb || g->ldc) {
			event__arg_s64(ev, "lda", (__s64)g->lda);
			event__arg_s64(ev, "ldb", (__s64)g->ldb);
			event__arg_s64(ev, "ldc", (__s64)g->ldc);
		}
		event__arg_s64(ev, "batch", (__s64)g->batch);
	}
	arg_name(ev, "a_type", cublas__type_name(g->atype), "cudaDataType_", g->atype);
	arg_name(ev, "b_type", cublas__type_name(g->btype), "cudaDataType_", g->btype);
	arg_name(ev, "c_type", cublas__type_name(g->ctype), "cudaDataType_", g->ctype);
	arg_name(ev, "compute_type", cublas__compute_name(g->compute), "cublasComputeType_",
		 g->compute);
	if (g->flops)
		event__arg_u64(ev, "flops", g->flops);
}

/* A handle, stream or descriptor: shown in hex. */
static int key_is_pointer(int k)
{
	switch (k) {
	case K_HANDLE:
	case K_STREAM:
	case K_LAYOUT:
	case K_DESC:
	case K_ADESC:
	case K_BDESC:
	case K_CDESC:
	case K_DDESC:
		return 1;
	default:
		return 0;
	}
}

/* Any other call: its fields in the spec's order. */
static void decode_fields(struct event *ev, const struct cublas_call *c)
{
	const struct ucall_spec *s;
	struct ucall_spec tmp;

	s = c->api ? ucall_table__spec(&cublas_table, c->r->fn, &tmp) : NULL;
	for (int i = 0; s && i < s->nfields; i++) {
		int k = s->f[i].key;
		const char *key = cublas_keys[k].name;
		__u64 v = c->v[k];

		if (!cublas_call__has(c, k) || event__arg(ev, key))
			continue;
		if (k == K_VALUE)
			v = attr_value(c);
		if (key_is_pointer(k))
			event__arg_hex(ev, key, v);
		else if (k == K_COMPUTE)
			arg_name(ev, key, cublas__compute_name((__s32)v), "cublasComputeType_",
				 (__s32)v);
		else if (cublas_keys[k].values)
			arg_name(ev, key, cublas__type_name((__s32)v), "cudaDataType_", (__s32)v);
		else if (cublas_keys[k].type == UCALL_T_S32 || k == K_LD || k == K_VALUE)
			event__arg_s64(ev, key, (__s64)v);
		else
			event__arg_u64(ev, key, v);
	}
}

static int decode_cublas_call(const struct bs_hdr *rec, const struct trace_model *m,
			      struct event *ev)
{
	const struct cublas_walk *w = trace_model__walk(m, &family_cublas);
	const __u64 *stream;
	struct cublas_call c;
	struct cublas_gemm g;

	ev->stack = trace_model__event_stack(m, rec); /* --stacks=cublas */
	cublas_call__parse(rec, &c);
	ucall_table__name_event(&cublas_table, c.r->fn, ev);
	ev->dur = c.r->dur;
	arg_name(ev, "status", cublas__status_name(c.ret), "cublasStatus_", c.ret);
	if (cublas__gemm(w, rec, &g)) {
		decode_gemm(ev, &c, &g);
	} else {
		decode_fields(ev, &c);
		/* A handle's calls go to its stream: the last cublasSetStream_v2's seen. */
		if (w && c.v[K_HANDLE] && !cublas_call__has(&c, K_STREAM) &&
		    (stream = hmap__get(w->streams, (struct hkey){ rec->pid, c.v[K_HANDLE] }, 0)))
			event__arg_hex(ev, "stream", *stream);
	}
	if (c.r->depth)
		event__arg_u64(ev, "depth", c.r->depth);
	return 1;
}

/*
 * Kineto has no category for cuBLAS calls (nsys shows them on a "cuBLAS" row of the thread):
 * their own, on the thread's track, where they nest around the CUDA calls they make.
 */
static const struct export_style call_style = { .cat = "cublas", .ph = 'X', .on_thread = 1 };

const struct rec_decoder cublas_decoders[] = {
	{ BS_REC_CUBLAS_CALL, sizeof(struct bs_ucall), "cublas_api", decode_cublas_call,
	  &call_style, .span = 1 },
	{ 0 },
};
