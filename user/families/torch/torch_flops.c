// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* torch.profiler's FLOPs of an op (torch_flops.h). */
#include <stdlib.h>
#include <string.h>
#include "torch_flops.h"

#define MAX_INPUTS 16 /* conv2d has 7: inputs past these are not needed */
#define MAX_DIMS   8

/* One input: a list of integers, or not one (a tensor's shape, or a concrete int list). */
struct ints {
	int n; /* -1: not a list of integers */
	__s64 v[MAX_DIMS];
};

static const char *skip_ws(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

/* "[4, 8]" at P into OUT; the character after it, or NULL when P is not such a list. */
static const char *parse_ints(const char *p, struct ints *out)
{
	char *end;

	out->n = 0;
	p = skip_ws(p);
	if (*p++ != '[')
		return NULL;
	for (p = skip_ws(p); *p != ']'; p = skip_ws(p)) {
		long long v = strtoll(p, &end, 10);

		if (end == p)
			return NULL;
		if (out->n < MAX_DIMS)
			out->v[out->n] = v;
		out->n++;
		p = skip_ws(end);
		if (*p == ',')
			p++;
		else if (*p != ']')
			return NULL;
	}
	if (out->n > MAX_DIMS)
		out->n = -1; /* more dimensions than any formula reads: not one of its inputs */
	return p + 1;
}

/* SHAPES' lists into V[MAX_INPUTS]: the number of inputs, -1 when malformed. */
static int parse_shapes(const char *s, struct ints *v)
{
	int n = 0;

	s = skip_ws(s);
	if (*s++ != '[')
		return -1;
	for (s = skip_ws(s); *s && *s != ']'; s = skip_ws(s)) {
		struct ints tmp;

		if (!(s = parse_ints(s, n < MAX_INPUTS ? &v[n] : &tmp)))
			return -1;
		n++;
		s = skip_ws(s);
		if (*s == ',')
			s++;
	}
	return n < MAX_INPUTS ? n : MAX_INPUTS;
}

/*
 * CONCRETE's strings ('["", "[2, 2]", "1"]') into V: an int list as it is, an int as a list
 * of one (n = 1, flagged by SCALAR), anything else n = -1. The number of inputs, or -1.
 */
static int parse_concrete(const char *s, struct ints *v, int *scalar)
{
	int n = 0;

	s = skip_ws(s);
	if (*s++ != '[')
		return -1;
	for (s = skip_ws(s); *s == '"'; s = skip_ws(s)) {
		const char *q = strchr(s + 1, '"');
		struct ints tmp, *o = n < MAX_INPUTS ? &v[n] : &tmp;
		char *end;

		if (!q)
			return -1;
		o->n = -1;
		if (n < MAX_INPUTS)
			scalar[n] = 0;
		if (s[1] == '[') {
			const char *after = parse_ints(s + 1, o);

			if (!after || after != q)
				o->n = -1;
		} else if (q > s + 1) {
			o->v[0] = strtoll(s + 1, &end, 10);
			if (end == q) {
				o->n = 1;
				if (n < MAX_INPUTS)
					scalar[n] = 1;
			}
		}
		n++;
		s = skip_ws(q + 1);
		if (*s == ',')
			s++;
	}
	return n < MAX_INPUTS ? n : MAX_INPUTS;
}

static __u64 product(const struct ints *d)
{
	__u64 f = 1;

	for (int i = 0; i < d->n; i++)
		f *= (__u64)d->v[i];
	return f;
}

/* torch's conv2d: 4-d input and weight, 2 strides (not 0), 2 paddings, 2 dilations, groups. */
static __u64 conv2d(const struct ints *in, int n, const struct ints *c, int nc, const int *scalar)
{
	const struct ints *x = &in[0], *w = &in[1], *st = &c[3], *pad = &c[4], *dil = &c[5];
	__s64 oh, ow, groups;

	if (n < 7 || nc < 7 || x->n != 4 || w->n != 4 || st->n != 2 || pad->n != 2 || dil->n != 2 ||
	    scalar[3] || scalar[4] || scalar[5] || !scalar[6] || !(groups = c[6].v[0]) ||
	    !st->v[0] || !st->v[1])
		return 0;
	oh = (x->v[2] + 2 * pad->v[0] - dil->v[0] * (w->v[2] - 1) - 1) / st->v[0] + 1;
	ow = (x->v[3] + 2 * pad->v[1] - dil->v[1] * (w->v[3] - 1) - 1) / st->v[1] + 1;
	return 2ull * (__u64)x->v[0] * (__u64)oh * (__u64)ow * (__u64)w->v[2] * (__u64)w->v[3] *
	       (__u64)x->v[1] * (__u64)w->v[0] / (__u64)groups;
}

/* torch's gemm count: mat1's elements over its last dimension (and BATCH's first), times mat2's. */
static __u64 gemm(const struct ints *a, const struct ints *b, int batched)
{
	__u64 f;

	if (a->n <= 0 || b->n < 0 || !a->v[a->n - 1] || (batched && !a->v[0]))
		return 0;
	f = product(a) / (__u64)a->v[a->n - 1];
	if (batched)
		f /= (__u64)a->v[0];
	return f * product(b) * 2;
}

static const char *const counted[] = {
	"aten::conv2d",	 "aten::mm",  "aten::addmm", "aten::bmm",
	"aten::baddbmm", "aten::mul", "aten::add",
};

int torch_flops__counted(const char *name)
{
	for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++)
		if (!strcmp(name, counted[i]))
			return 1;
	return 0;
}

__u64 torch_flops__of(const char *name, const char *shapes, const char *concrete)
{
	struct ints in[MAX_INPUTS], c[MAX_INPUTS];
	int n, nc = 0, scalar[MAX_INPUTS] = { 0 };
	int mm = !strcmp(name, "aten::mm"), bmm = !strcmp(name, "aten::bmm");
	int addmm = !strcmp(name, "aten::addmm"), baddbmm = !strcmp(name, "aten::baddbmm");

	if (!shapes || !torch_flops__counted(name) || (n = parse_shapes(shapes, in)) < 1)
		return 0;
	if (!strcmp(name, "aten::conv2d")) {
		if (!concrete || (nc = parse_concrete(concrete, c, scalar)) < 0)
			return 0;
		return conv2d(in, n, c, nc, scalar);
	}
	if (mm || bmm) /* (mat1, mat2) */
		return n >= 2 ? gemm(&in[0], &in[1], bmm) : 0;
	if (addmm || baddbmm) /* (self, mat1, mat2) */
		return n >= 3 ? gemm(&in[1], &in[2], baddbmm) : 0;
	return in[0].n >= 0 ? product(&in[0]) : 0; /* mul, add: the first input's elements */
}
