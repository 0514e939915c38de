// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of blas: a GEMM call read through its spec, and the event it shows. */
#include <stdio.h>
#include <string.h>
#include "blas.h"

void blas_gemm__parse(const struct bs_hdr *rec, struct blas_gemm *g)
{
	const struct bs_ucall *r = (const void *)rec;
	const struct ucall_spec *s;
	struct ucall_spec tmp;
	__u64 v;

	memset(g, 0, sizeof(*g));
	g->api = ucall_table__api(&blas_table, r->fn);
	if (!g->api)
		return;
	s = ucall_table__spec(&blas_table, r->fn, &tmp);
	for (int i = 0; i < s->nfields; i++) {
		const struct ucall_field *f = &s->f[i];

		if (!ucall_field__value(rec, s, f, &v))
			continue;
		/* A '^' value is 4 bytes: an int (sign-extended) or a char (its low byte). */
		g->v[f->key] = f->type == UCALL_T_U8 ? (__s64)(v & 0xff) : (__s64)(__s32)v;
		g->have |= 1ull << f->key;
	}
	if ((g->have & (1ull << K_M | 1ull << K_N | 1ull << K_K)) ==
		    (1ull << K_M | 1ull << K_N | 1ull << K_K) &&
	    g->v[K_M] > 0 && g->v[K_N] > 0 && g->v[K_K] > 0) {
		g->flops = 2 * (__u64)g->v[K_M] * (__u64)g->v[K_N] * (__u64)g->v[K_K];
		if (g->api->group == BLAS_GRP_C || g->api->group == BLAS_GRP_Z)
			g->flops *= 4;
	}
}

/* 'N', 'T' or 'C' from a Fortran character (either case) or a CBLAS_TRANSPOSE. */
static char trans_char(__s64 t)
{
	switch (t) {
	case 'N':
	case 'n':
	case 111:
		return 'N';
	case 'T':
	case 't':
	case 112:
		return 'T';
	case 'C':
	case 'c':
	case 113:
		return 'C';
	default:
		return '?';
	}
}

static const char *const dtypes[] = { "f32", "f64", "c64", "c128" };

static int decode_blas_call(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_ucall *r = (const void *)rec;
	static const int sizes[] = { K_M, K_N, K_K, K_LDA, K_LDB, K_LDC };
	struct blas_gemm g;
	char trans[3];

	ev->stack = trace_model__event_stack(m, rec); /* --stacks=blas */
	blas_gemm__parse(rec, &g);
	if (g.api) {
		ev->name = g.api->name;
	} else {
		snprintf(ev->namebuf, sizeof(ev->namebuf), "blas_fn_%u", r->fn);
		ev->name = ev->namebuf;
	}
	ev->dur = r->dur;
	if (!g.api)
		return 1;
	if (g.have & (1ull << K_ORDER))
		event__arg_str(ev, "order", g.v[K_ORDER] == 101 ? "row" : "col");
	trans[0] = trans_char(g.v[K_TRANSA]);
	trans[1] = trans_char(g.v[K_TRANSB]);
	trans[2] = 0;
	event__arg_strn(ev, "trans", trans, sizeof(trans));
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (g.have & (1ull << sizes[i]))
			event__arg_s64(ev, blas_keys[sizes[i]].name, g.v[sizes[i]]);
	event__arg_str(ev, "dtype", dtypes[g.api->group & 3]);
	if (g.flops)
		event__arg_u64(ev, "flops", g.flops);
	if (r->depth)
		event__arg_u64(ev, "depth", r->depth);
	return 1;
}

/* A CPU call that computes: on the thread's track, as torch.profiler shows CPU ops. */
static const struct export_style call_style = { .cat = "blas", .ph = 'X', .on_thread = 1 };

const struct rec_decoder blas_decoders[] = {
	{ BS_REC_BLAS_CALL, sizeof(struct bs_ucall), "blas_api", decode_blas_call, &call_style },
	{ 0 },
};
