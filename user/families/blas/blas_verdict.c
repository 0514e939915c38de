// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * blas's rule for stats' verdict (verdict.h): the thread that spent the most time in CPU
 * GEMMs, how much of its life that was, at what GFLOP/s, and in which BLAS. A CPU GEMM runs
 * inside its call, so that time was the thread's on a CPU. It holds when the GEMMs ran on the
 * reference BLAS and took at least REFERENCE_SHARE of the thread's time: netlib's Fortran is
 * unoptimized (no blocking for the caches, no SIMD kernels, one thread), and installing
 * OpenBLAS, BLIS or MKL is the fix, with no change to the job. Elsewhere it is said, not held:
 * where the CPU time went is the cpu family's to weigh.
 */
#include <stdio.h>
#include "blas.h"
#include "hmap.h"
#include "human.h"
#include "verdict.h"

#define REFERENCE_SHARE 0.20

struct gemm_time {
	__u64 ns, flops, count;
};

static void *blas_new(void)
{
	return hmap__new(sizeof(struct gemm_time));
}

static void blas_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_ucall *u = (const void *)rec;
	struct gemm_time *t;
	struct blas_gemm g;

	(void)m;
	if (rec->type != BS_REC_BLAS_CALL || rec->size < sizeof(*u) || u->depth)
		return;
	blas_gemm__parse(rec, &g);
	if (!g.api || !g.flops)
		return;
	t = hmap__get(st, (struct hkey){ rec->pid, rec->tid }, 1);
	if (!t)
		return;
	t->ns += u->dur;
	t->flops += g.flops;
	t->count++;
}

struct busiest {
	struct hkey key;
	const struct gemm_time *t;
};

/* The thread with the most GEMM time (the lowest ids on a tie: the same answer each run). */
static void find_busiest(const struct hmap *m, struct busiest *b)
{
	const struct gemm_time *t;
	struct hkey k;
	size_t it = 0;

	while ((t = hmap__next(m, &it, &k)))
		if (!b->t || t->ns > b->t->ns ||
		    (t->ns == b->t->ns &&
		     (k.a < b->key.a || (k.a == b->key.a && k.b < b->key.b)))) {
			b->key = k;
			b->t = t;
		}
}

static void blas_claims(void *st, struct verdict *v)
{
	struct busiest b = { 0 };
	const char *lib, *impl;
	char who[160], d1[32], impl_text[160];
	double share, gflops;
	__u64 life;

	find_busiest(st, &b);
	if (!b.t || !b.t->ns)
		return;
	life = verdict__life(v, (__u32)b.key.a, (__u32)b.key.b);
	if (!life)
		return;
	share = (double)b.t->ns / (double)life;
	gflops = (double)b.t->flops / (double)b.t->ns;
	lib = blas__library(verdict__model(v), (__u32)b.key.a);
	impl = blas__impl(lib);
	if (lib && *impl)
		snprintf(impl_text, sizeof(impl_text), "%s%s (%s)", impl,
			 blas__is_reference(lib) ? " BLAS" : "", human__base(lib));
	else
		snprintf(impl_text, sizeof(impl_text), "%s",
			 lib ? human__base(lib) : "a BLAS the trace does not name");
	verdict__thread(v, (__u32)b.key.a, (__u32)b.key.b, who, sizeof(who));
	verdict__claim(v, VERDICT_CPU, blas__is_reference(lib) && share >= REFERENCE_SHARE,
		       share > 1 ? 1 : share, "blas_gemm_sum",
		       "%s spent %s in %llu CPU GEMMs at %.1f GFLOP/s, on the %s", who,
		       human__ns((double)b.t->ns, d1, sizeof(d1)), (unsigned long long)b.t->count,
		       gflops, impl_text);
	if (blas__is_reference(lib))
		verdict__detail(v, -1, "",
				"netlib's reference BLAS is unoptimized: OpenBLAS, BLIS or MKL run "
				"the same GEMMs many times faster, with no change to the job "
				"(Debian: apt install libopenblas0-pthread; update-alternatives "
				"--config libblas.so.3-x86_64-linux-gnu)");
}

static void blas_free(void *st)
{
	hmap__free(st);
}

const struct family_verdict blas_verdict = {
	.new = blas_new,
	.add = blas_add,
	.claims = blas_claims,
	.free = blas_free,
};
