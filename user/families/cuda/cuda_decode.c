// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Decode side of cuda: an API-call record read through its compiled argument spec (the
 * grammar is ucall_spec.h's, the keys cuda_api.c's) into the values the event shows and the
 * reports count.
 */
#include <stdio.h>
#include <string.h>
#include "cuda_decode.h"
#include "cuda_errors.h"
#include "event.h"

enum cuda_show { SHOW_NUM, SHOW_HEX, SHOW_NAME, SHOW_KIND, SHOW_NONE };

/* How the event shows each key (the others feed derived values: SHOW_NONE), one a line. */
// clang-format off
static const __u8 shows[K_NR] = {
	[K_KERNEL] = SHOW_NAME,
	[K_FUNC] = SHOW_NAME,
	[K_NAME] = SHOW_NAME,
	[K_HANDLE] = SHOW_HEX,
	[K_GRID_X] = SHOW_NUM,
	[K_GRID_Y] = SHOW_NUM,
	[K_GRID_Z] = SHOW_NUM,
	[K_BLOCK_X] = SHOW_NUM,
	[K_BLOCK_Y] = SHOW_NUM,
	[K_BLOCK_Z] = SHOW_NUM,
	[K_SHARED_BYTES] = SHOW_NUM,
	[K_DST] = SHOW_HEX,
	[K_DST_DEVICE] = SHOW_NUM,
	[K_DST_CTX] = SHOW_HEX,
	[K_SRC] = SHOW_HEX,
	[K_SRC_DEVICE] = SHOW_NUM,
	[K_SRC_CTX] = SHOW_HEX,
	[K_BYTES] = SHOW_NUM,
	[K_VALUE] = SHOW_NUM,
	[K_KIND] = SHOW_KIND,
	[K_COUNT] = SHOW_NUM,
	[K_PTR] = SHOW_HEX,
	[K_WIDTH] = SHOW_NUM,
	[K_HEIGHT] = SHOW_NUM,
	[K_DEPTH] = SHOW_NUM,
	[K_ADDR] = SHOW_HEX,
	[K_POOL] = SHOW_HEX,
	[K_MODULE] = SHOW_HEX,
	[K_LIBRARY] = SHOW_HEX,
	[K_GRAPH] = SHOW_HEX,
	[K_GRAPH_EXEC] = SHOW_HEX,
	[K_MODE] = SHOW_NUM,
	[K_FLAGS] = SHOW_NUM,
	[K_CTX] = SHOW_HEX,
	[K_STREAM] = SHOW_HEX,
	[K_EVENT] = SHOW_HEX,
	[K_GRID] = SHOW_NONE,
	[K_BLOCK] = SHOW_NONE,
	[K_SRC_MT] = SHOW_NONE,
	[K_DST_MT] = SHOW_NONE,
	[K_SRC_HOST] = SHOW_NONE,
	[K_DST_HOST] = SHOW_NONE,
	[K_SRC_ARR] = SHOW_NONE,
	[K_DST_ARR] = SHOW_NONE,
};
// clang-format on

/* CUmemorytype */
#define MT_HOST	   1
#define MT_DEVICE  2
#define MT_ARRAY   3
#define MT_UNIFIED 4

static __u64 le_read(const __u8 *p, int n)
{
	__u64 v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static __u64 narrow(__u64 v, int type)
{
	switch (type) {
	case UCALL_T_U32:
		return (__u32)v;
	case UCALL_T_S32:
		return (__u64)(__s64)(__s32)v;
	case UCALL_T_U16:
		return (__u16)v;
	case UCALL_T_U8:
		return (__u8)v;
	default:
		return v;
	}
}

static void call_set(struct cuda_call *c, int key, __u64 v, int type)
{
	c->v[key] = v;
	c->have |= 1ull << key;
	if (type == UCALL_T_S32)
		c->is_signed |= 1ull << key;
}

/* Memory types to a direction: arrays are device memory, unified memory is cudaMemcpyDefault. */
static int kind_of_mt(__u64 src, __u64 dst)
{
	int s_dev, d_dev;

	if (src < MT_HOST || src > MT_UNIFIED || dst < MT_HOST || dst > MT_UNIFIED)
		return KIND_UNKNOWN;
	if (src == MT_UNIFIED || dst == MT_UNIFIED)
		return KIND_DEFAULT;
	s_dev = src != MT_HOST;
	d_dev = dst != MT_HOST;
	return s_dev ? (d_dev ? KIND_DTOD : KIND_DTOH) : (d_dev ? KIND_HTOD : KIND_HTOH);
}

/* The pointer shown for a side of a copy described by memory type, host, device, array. */
static void pick_side(struct cuda_call *c, int mt, int host, int dev, int arr)
{
	int from = dev;

	if (c->have & (1ull << mt)) {
		if (c->v[mt] == MT_HOST)
			from = host;
		else if (c->v[mt] == MT_ARRAY)
			from = arr;
	} else if (c->have & (1ull << arr) && c->v[arr]) {
		from = arr;
	}
	if (from != dev && c->have & (1ull << from))
		call_set(c, dev, c->v[from], UCALL_T_U64);
}

/* The key of dimension D (0..2) of a dim3 field. */
static int dim_key(int key, int d)
{
	return (key == K_GRID ? K_GRID_X : K_BLOCK_X) + d;
}

void cuda_call__read(const struct bs_hdr *rec, struct cuda_call *c)
{
	const struct bs_ucall *u = (const void *)rec;
	const __u8 *deref = NULL;
	__u64 bytes = 1, v = 0;
	const struct ucall_spec *s;
	struct ucall_spec tmp;
	int nbytes = 0, bytes_lost = 0;
	__u32 dlen = 0, base;

	memset(c, 0, sizeof(*c)); /* values never read are 0, as a report expects */
	c->api = ucall_table__api(&cuda_table, u->fn);
	c->code = (__s32)u->ret;
	c->kind = -1;
	if (!c->api)
		return;
	s = ucall_table__spec(&cuda_table, u->fn, &tmp);
	/* A copy the record does not hold (truncated, or none captured) reads as absent. */
	if (u->deref_len && rec->size >= sizeof(*u) + u->deref_len) {
		deref = (const __u8 *)(u + 1);
		dlen = u->deref_len;
	}
	base = s->copy_off8 * 8; /* where the copy starts in the copied object */
	for (int i = 0; i < s->nfields; i++) {
		const struct ucall_field *f = &s->f[i];
		int ok = 1;

		switch (f->src) {
		case UCALL_SRC_WORD:
			if (f->type == UCALL_T_DIM3) {
				call_set(c, dim_key(f->key, 0), (__u32)u->args[f->word],
					 UCALL_T_U64);
				call_set(c, dim_key(f->key, 1), u->args[f->word] >> 32,
					 UCALL_T_U64);
				call_set(c, dim_key(f->key, 2), (__u32)u->args[f->word + 1],
					 UCALL_T_U64);
				continue;
			}
			v = narrow(u->args[f->word], f->type);
			break;
		case UCALL_SRC_OUT:
			ok = c->code == 0; /* a failed call left nothing worth showing */
			v = u->out;
			break;
		case UCALL_SRC_CONST:
			v = f->konst;
			break;
		case UCALL_SRC_COPY: /* name:str */
			if (deref) {
				c->str = (const char *)deref;
				c->strn = dlen;
			}
			continue;
		default: /* UCALL_SRC_AT */
			if (!deref || f->off - base + ucall_type_size[f->type] > dlen) {
				ok = 0;
				break;
			}
			if (f->type == UCALL_T_DIM3) {
				for (int d = 0; d < 3; d++)
					call_set(c, dim_key(f->key, d),
						 le_read(deref + f->off - base + 4 * d, 4),
						 UCALL_T_U64);
				continue;
			}
			v = narrow(le_read(deref + f->off - base, ucall_type_size[f->type]),
				   f->type);
			break;
		}
		if (f->key == K_BYTES) {
			nbytes++;
			bytes_lost |= !ok;
			bytes *= v;
			continue;
		}
		if (!ok)
			continue;
		/* A kind word outside cudaMemcpyKind must not read as PtoP or batch. */
		if (f->key == K_KIND && f->src != UCALL_SRC_CONST && v > KIND_DEFAULT)
			v = KIND_UNKNOWN;
		call_set(c, f->key, v, f->type);
	}
	if (nbytes && !bytes_lost)
		call_set(c, K_BYTES, bytes, UCALL_T_U64);
	if (c->have & (1ull << K_KIND))
		c->kind = (int)c->v[K_KIND];
	else if (c->have & (1ull << K_SRC_MT) && c->have & (1ull << K_DST_MT))
		c->kind = kind_of_mt(c->v[K_SRC_MT], c->v[K_DST_MT]);
	else if (c->api->group == CUDA_GRP_MEMCPY)
		c->kind = KIND_UNKNOWN;
	if (c->kind >= 0)
		call_set(c, K_KIND, c->kind, UCALL_T_U64);
	pick_side(c, K_SRC_MT, K_SRC_HOST, K_SRC, K_SRC_ARR);
	pick_side(c, K_DST_MT, K_DST_HOST, K_DST, K_DST_ARR);
}

static const char *call_name(const struct bs_ucall *u, const struct cuda_call *c, char *buf,
			     size_t len)
{
	if (c->api)
		return c->api->name;
	snprintf(buf, len, "cuda_fn_%u", u->fn);
	return buf;
}

const char *cuda_func_name(const struct trace_model *m, __u32 pid, __u64 addr, char *buf,
			   size_t len)
{
	const char *name = trace_model__symbol(m, pid, addr);

	if (name)
		return name;
	snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	return buf;
}

static const char *code_name(const struct cuda_call *c)
{
	if (!c->api)
		return NULL;
	return c->api->flags & CUDA_F_DRIVER ? cuda_result_name(c->code) : cuda_error_name(c->code);
}

static int decode_call(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_ucall *u = (const void *)rec;
	struct cuda_call c;
	const char *err;
	char buf[32];

	cuda_call__read(rec, &c);
	ev->name = call_name(u, &c, ev->namebuf, sizeof(ev->namebuf));
	ev->dur = u->dur;
	ev->stack = trace_model__event_stack(m, rec); /* --stacks=cuda */
	if (u->depth & BS_UCALL_OPEN)
		event__arg_bool(ev, "in_flight", 1); /* a hang trigger's: dur so far, no ret */
	else
		event__arg_s64(ev, "ret", c.code);
	if (c.code && !(u->depth & BS_UCALL_OPEN)) {
		err = code_name(&c);
		if (err) {
			event__arg_str(ev, "error", err);
		} else {
			const char *prefix = !c.api			    ? "error_"
					     : c.api->flags & CUDA_F_DRIVER ? "CUresult_"
									    : "cudaError_";

			snprintf(buf, sizeof(buf), "%s%d", prefix, c.code);
			event__arg_strn(ev, "error", buf, sizeof(buf));
		}
	}
	if (BS_UCALL_DEPTH(u->depth))
		event__arg_u64(ev, "depth", BS_UCALL_DEPTH(u->depth));
	for (int k = 0; k < K_SHOWN_NR; k++) {
		const char *key = cuda_keys[k].name, *name;

		if (!(c.have & (1ull << k))) {
			/* The record outlives the event: point into it when the string ends there. */
			if (k == K_NAME && c.str && memchr(c.str, 0, c.strn))
				event__arg_str(ev, key, c.str);
			else if (k == K_NAME && c.str)
				event__arg_strn(ev, key, c.str, c.strn);
			continue;
		}
		switch (shows[k]) {
		case SHOW_NUM:
			if (c.is_signed & (1ull << k))
				event__arg_s64(ev, key, (__s64)c.v[k]);
			else
				event__arg_u64(ev, key, c.v[k]);
			break;
		case SHOW_HEX:
			event__arg_hex(ev, key, c.v[k]);
			break;
		case SHOW_KIND:
			event__arg_str(ev, key,
				       cuda_kind_names[c.v[k] < KIND_NR ? c.v[k] : KIND_NR - 1]);
			break;
		case SHOW_NAME:
			name = cuda_func_name(m, rec->pid, c.v[k], buf, sizeof(buf));
			if (name == buf)
				event__arg_strn(ev, key, buf, sizeof(buf));
			else
				event__arg_str(ev, key, name);
			break;
		default:
			break;
		}
	}
	return 1;
}

/*
 * "cuda_driver" for cu* calls (the Chrome export's cuda hook). A call made by an enclosing
 * traced call (depth > 0) lies inside it in time: on the thread's track.
 */
static const struct export_style call_style = { .cat = "cuda_runtime", .ph = 'X', .on_thread = 1 };

const struct rec_decoder cuda_decoders[] = {
	{ BS_REC_CUDA_CALL, sizeof(struct bs_ucall), "cuda_api", decode_call, &call_style,
	  .span = 1 },
	{ 0 },
};
