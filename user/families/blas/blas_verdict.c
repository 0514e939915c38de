// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * blas's rule for stats' verdict (verdict.h): the thread that spent the most time in CPU
 * GEMMs, how much of its life that was, at what GFLOP/s, and in which BLAS. A CPU GEMM runs
 * inside its call, so that time was the thread's on a CPU. It holds when the GEMMs ran on the
 * reference BLAS and took at least REFERENCE_SHARE of the thread's time: netlib's Fortran is
 * unoptimized (no blocking for the caches, no SIMD kernels, one thread), and installing
 * OpenBLAS, BLIS or MKL is the fix, with no change to the job. Elsewhere it is said, not held:
 * where the CPU time went is the cpu family's to weigh.
 *
 * From a server (stats --from) the same sums per thread come as a table (blas_sql.c's
 * blas_thread_gemms), each with its process's library (its threads' names' rows say it).
 */
#include <stdio.h>
#include <stdlib.h>
#include "blas.h"
#include "hmap.h"
#include "human.h"
#include "json.h"
#include "table.h"
#include "trace_model.h"
#include "verdict.h"

#define REFERENCE_SHARE 0.20

struct gemm_time {
	__u64 ns, flops, count;
};

struct blas_rule {
	struct hmap *threads;	  /* (pid, tid) -> gemm_time: a pass's sums */
	const struct table *from; /* the server's (blas_thread_gemms), or NULL */
};

static void *blas_new(void)
{
	struct blas_rule *st = calloc(1, sizeof(*st));

	if (st && !(st->threads = hmap__new(sizeof(struct gemm_time)))) {
		free(st);
		st = NULL;
	}
	return st;
}

static void blas_add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct blas_rule *st = vst;
	const struct bs_ucall *u = (const void *)rec;
	struct gemm_time *t;
	struct blas_gemm g;

	(void)m;
	if (rec->type != BS_REC_BLAS_CALL || rec->size < sizeof(*u) || u->depth)
		return;
	blas_gemm__parse(rec, &g);
	if (!g.api || !g.flops)
		return;
	t = hmap__get(st->threads, (struct hkey){ rec->pid, rec->tid }, 1);
	if (!t)
		return;
	t->ns += u->dur;
	t->flops += g.flops;
	t->count++;
}

struct busiest {
	struct hkey key;
	struct gemm_time t;
	const char *lib; /* the server's: its process's library */
	int found;
};

/* GEMM time T of thread K, the busiest so far (the lowest ids on a tie: the same answer each
 * run)? */
static int busier(const struct busiest *b, struct hkey k, const struct gemm_time *t)
{
	return !b->found || t->ns > b->t.ns ||
	       (t->ns == b->t.ns && (k.a < b->key.a || (k.a == b->key.a && k.b < b->key.b)));
}

/* The thread with the most GEMM time, of a pass's sums or the server's. */
static void find_busiest(const struct blas_rule *st, struct busiest *b)
{
	const struct table *f = st->from;
	const struct gemm_time *t;
	struct hkey k;
	size_t it = 0;

	while (!f && (t = hmap__next(st->threads, &it, &k)))
		if (busier(b, k, t))
			*b = (struct busiest){ .key = k, .t = *t, .found = 1 };
	for (int r = 0; f && r < table__nrows(f); r++) {
		struct gemm_time g = { table__get_u64(f, r, table__col(f, "ns")),
				       table__get_u64(f, r, table__col(f, "flops")),
				       table__get_u64(f, r, table__col(f, "count")) };

		k = (struct hkey){ (__u32)table__get_u64(f, r, table__col(f, "pid")),
				   (__u32)table__get_u64(f, r, table__col(f, "tid")) };
		if (busier(b, k, &g))
			*b = (struct busiest){ .key = k,
					       .t = g,
					       .lib = table__get_str(f, r,
								     table__col(f, "library")),
					       .found = 1 };
	}
}

static void blas_claims(void *vst, struct verdict *v)
{
	const struct blas_rule *st = vst;
	struct busiest b = { 0 };
	const char *lib, *impl;
	char who[160], d1[32], impl_text[160];
	double share, gflops;
	__u64 life;

	find_busiest(st, &b);
	if (!b.found || !b.t.ns)
		return;
	life = verdict__life(v, (__u32)b.key.a, (__u32)b.key.b);
	if (!life)
		return;
	share = (double)b.t.ns / (double)life;
	gflops = (double)b.t.flops / (double)b.t.ns;
	lib = st->from ? b.lib : blas__library(verdict__model(v), (__u32)b.key.a);
	impl = blas__impl(lib);
	if (lib && *impl)
		snprintf(impl_text, sizeof(impl_text), "%s%s (%s)", impl,
			 blas__is_reference(lib) ? " BLAS" : "", human__base(lib));
	else
		snprintf(impl_text, sizeof(impl_text), "%s",
			 lib ? human__base(lib) : "a BLAS the trace does not name");
	verdict__thread(v, (__u32)b.key.a, (__u32)b.key.b, who, sizeof(who));
	verdict__claim(v, VERDICT_BLAS, blas__is_reference(lib) && share >= REFERENCE_SHARE,
		       share > 1 ? 1 : share, "blas_gemm_sum",
		       "%s spent %s in %llu CPU GEMMs at %.1f GFLOP/s, on the %s", who,
		       human__ns((double)b.t.ns, d1, sizeof(d1)), (unsigned long long)b.t.count,
		       gflops, impl_text);
	if (blas__is_reference(lib))
		verdict__detail(v, -1, "",
				"netlib's reference BLAS is unoptimized: OpenBLAS, BLIS or MKL run "
				"the same GEMMs many times faster, with no change to the job "
				"(Debian: apt install libopenblas0-pthread; update-alternatives "
				"--config libblas.so.3-x86_64-linux-gnu)");
}

static void blas_free(void *vst)
{
	struct blas_rule *st = vst;

	if (st)
		hmap__free(st->threads);
	free(st);
}

/* The server's sums, kept for the claims. */
static int blas_load(void *vst, const char *name, const struct table *t)
{
	(void)name;
	((struct blas_rule *)vst)->from = t;
	return 0;
}

const struct family_verdict blas_verdict = {
	.new = blas_new,
	.add = blas_add,
	.claims = blas_claims,
	.free = blas_free,
	.reads = "blas_thread_gemms",
	.load = blas_load,
};
