// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Decode side of blas: a GEMM call read through its spec, and the event it shows. */
#include <stdio.h>
#include <string.h>
#include "blas.h"

void blas_gemm__parse(const struct bs_hdr *rec, struct blas_gemm *g)
{
	const struct bs_ucall *r = (const void *)rec;
	__u64 v[BLAS_K_NR] = { 0 };

	memset(g, 0, sizeof(*g));
	g->api = ucall_table__api(&blas_table, r->fn);
	if (!g->api)
		return;
	ucall_record__values(&blas_table, rec, 1, v, &g->have);
	/* A '^' value is 4 bytes: an int (sign-extended by its type) or a char (u8). */
	for (int k = 0; k < BLAS_K_NR; k++)
		g->v[k] = (__s64)v[k];
	if ((g->have & (1ull << BLAS_K_M | 1ull << BLAS_K_N | 1ull << BLAS_K_K)) ==
		    (1ull << BLAS_K_M | 1ull << BLAS_K_N | 1ull << BLAS_K_K) &&
	    g->v[BLAS_K_M] > 0 && g->v[BLAS_K_N] > 0 && g->v[BLAS_K_K] > 0) {
		g->flops =
			2 * (__u64)g->v[BLAS_K_M] * (__u64)g->v[BLAS_K_N] * (__u64)g->v[BLAS_K_K];
		if (g->api->group == BLAS_GRP_C || g->api->group == BLAS_GRP_Z)
			g->flops *= 4;
	}
}

char blas__trans_char(__s64 t)
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
	static const int sizes[] = { BLAS_K_M,	 BLAS_K_N,   BLAS_K_K,
				     BLAS_K_LDA, BLAS_K_LDB, BLAS_K_LDC };
	struct blas_gemm g;
	char trans[3];

	ev->stack = trace_model__event_stack(m, rec); /* --stacks=blas */
	blas_gemm__parse(rec, &g);
	ucall_table__name_event(&blas_table, r->fn, ev);
	ev->dur = r->dur;
	if (!g.api)
		return 1;
	if (g.have & (1ull << BLAS_K_ORDER))
		event__arg_str(ev, "order", g.v[BLAS_K_ORDER] == 101 ? "row" : "col");
	trans[0] = blas__trans_char(g.v[BLAS_K_TRANSA]);
	trans[1] = blas__trans_char(g.v[BLAS_K_TRANSB]);
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
	{ BS_REC_BLAS_CALL, sizeof(struct bs_ucall), "blas_api", decode_blas_call, &call_style,
	  .span = 1 },
	{ 0 },
};
